// SPDX-License-Identifier: BSD-2-Clause
#include "session_targets.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "container.h"
#include "netns.h"
#include "probes_pauses.h"
#include "session.h"

bool cs_watch_add_port(struct cs_watch *watch, uint32_t netns_ino, uint16_t port)
{
	for (size_t i = 0; i < *watch->port_count; i++)
		if (watch->ports[i] == port && watch->port_netns[i] == netns_ino)
			return false;
	if (*watch->port_count >= watch->port_max)
		return false;
	watch->port_netns[*watch->port_count] = netns_ino;
	watch->ports[(*watch->port_count)++] = port;
	if (watch->probes)
		cs_probes_add_endpoint(watch->probes, netns_ino, port);
	return true;
}

void cs_watch_pauses(struct cs_probes *probes, pid_t pid, bool quiet, bool verbose)
{
	char why[512];
	enum cs_pause_watch found = cs_probes_watch_pauses(probes, pid, why, sizeof(why));
	if (found == CS_PAUSES_NONE && !quiet)
		fprintf(stderr, "connscope: pid %d runs a JVM whose pauses cannot be followed (%s); "
			"runtime_pause is not measured for it\n", (int)pid, why);
	else if ((found == CS_PAUSES_USDT || found == CS_PAUSES_UPROBES) && verbose)
		fprintf(stderr, "connscope: pid %d: JVM pauses followed through %s\n", (int)pid,
			found == CS_PAUSES_USDT ? "HotSpot's USDT probes" : "uprobes on SafepointSynchronize::begin/end");
}

static bool watched(const struct cs_watch *watch, pid_t pid)
{
	for (size_t i = 0; i < *watch->pid_count; i++)
		if (watch->pids[i] == pid)
			return true;
	return false;
}

size_t cs_watch_add_matching(struct cs_watch *watch, const struct cs_target_match *match,
			     const struct cs_listen_socket *listeners, size_t listener_count)
{
	pid_t *pids = watch->match_pids;
	size_t count = 0, added = 0;
	if (!cs_target_match_any(match))
		return 0;
	/* Too many matches: the first match_pid_max pids are looked at; the next scan may see others. */
	cs_pids_matching(match, pids, watch->match_pid_max, &count);
	uint32_t self = cs_netns_self();
	for (size_t i = 0; i < count && *watch->pid_count < watch->pid_max; i++) {
		pid_t pid = pids[i];
		if (watched(watch, pid))
			continue;
		uint16_t ports[CS_MAX_TARGETS];
		size_t port_count = 0;
		uint32_t netns_ino = self;
		/* Only servers: a process that listens on nothing (a shell, a client) is left out. */
		if (cs_netns_of_pid(pid, &netns_ino) == 0 && netns_ino != self)
			cs_netns_pid_listen_ports(pid, ports, CS_MAX_TARGETS, &port_count, &netns_ino);
		else
			cs_proc_listen_ports(pid, listeners, listener_count, ports, CS_MAX_TARGETS, &port_count);
		if (port_count == 0)
			continue;
		watch->pids[(*watch->pid_count)++] = pid;
		if (watch->probes) {
			cs_probes_add_tgid(watch->probes, (uint32_t)pid);
			cs_watch_pauses(watch->probes, pid, watch->quiet, false);
		}
		char port_list[128] = "";
		size_t used = 0;
		for (size_t j = 0; j < port_count; j++) {
			cs_watch_add_port(watch, netns_ino, ports[j]);
			if (used < sizeof(port_list))
				used += (size_t)snprintf(port_list + used, sizeof(port_list) - used, "%s%u",
							 j ? "," : "", ports[j]);
		}
		added++;
		if (watch->probes && !watch->quiet) {
			char comm[CS_COMM_LEN] = "?";
			cs_proc_comm(pid, comm, sizeof(comm));
			fprintf(stderr, "connscope: now watching pid %d (%s) on port%s %s\n", (int)pid, comm,
				port_count > 1 ? "s" : "", port_list);
		}
	}
	return added;
}

size_t cs_watch_prune_namespaces(struct cs_watch *watch, uint32_t keep_ino)
{
	uint32_t self = cs_netns_self(), live[CS_MAX_NETNS];
	size_t live_count = 0, removed = 0;
	if (*watch->port_count < watch->port_max / 2 && cs_netns_kept_count() < CS_MAX_NETNS / 2)
		return 0;
	for (size_t i = 0; i < *watch->pid_count && live_count < CS_MAX_NETNS; i++) {
		uint32_t ino;
		if (cs_netns_of_pid(watch->pids[i], &ino) == 0)
			live[live_count++] = ino;
	}
	for (size_t i = 0; i < *watch->port_count;) {
		uint32_t ino = watch->port_netns[i];
		bool used = ino == self || ino == keep_ino;
		for (size_t j = 0; j < live_count && !used; j++)
			used = live[j] == ino;
		if (used) {
			i++;
			continue;
		}
		if (watch->probes)
			cs_probes_remove_endpoint(watch->probes, ino, watch->ports[i]);
		size_t last = --*watch->port_count;
		watch->ports[i] = watch->ports[last];
		watch->port_netns[i] = watch->port_netns[last];
		removed++;
		/* Its last port gone: the namespace's fds too. */
		bool more = false;
		for (size_t k = 0; k < *watch->port_count; k++)
			more |= watch->port_netns[k] == ino;
		if (!more)
			cs_netns_forget(ino);
	}
	return removed;
}

void cs_watch_clear(struct cs_watch *watch)
{
	if (watch->probes) {
		for (size_t i = 0; i < *watch->pid_count; i++)
			cs_probes_remove_tgid(watch->probes, (uint32_t)watch->pids[i]);
		for (size_t i = 0; i < *watch->port_count; i++)
			cs_probes_remove_endpoint(watch->probes, watch->port_netns[i], watch->ports[i]);
	}
	*watch->pid_count = 0;
	*watch->port_count = 0;
}

void cs_describe_match(const struct cs_target_match *match, char *out, size_t len)
{
	size_t used = 0;
	if (len)
		out[0] = '\0';
	for (size_t i = 0; i < match->name_count && used < len; i++)
		used += (size_t)snprintf(out + used, len - used, "%sname %s", used ? ", " : "", match->names[i]);
	for (size_t i = 0; i < match->cgroup_count && used < len; i++)
		used += (size_t)snprintf(out + used, len - used, "%scgroup %s", used ? ", " : "",
					 match->cgroups[i]);
}

void cs_target_labels_of(pid_t pid, uint32_t netns_ino, struct cs_target_labels *out)
{
	char path[64], text[4096];
	memset(out, 0, sizeof(*out));
	out->netns_ino = netns_ino;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t len = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (len <= 0)
		return;
	text[len] = '\0';
	if (cs_parse_proc_cgroup(text, out->cgroup, sizeof(out->cgroup)) == 0)
		cs_container_of_cgroup(out->cgroup, out->container, sizeof(out->container));
}
