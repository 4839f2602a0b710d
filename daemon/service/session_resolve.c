// SPDX-License-Identifier: BSD-2-Clause
/*
 * Which processes and ports a session watches: --pid, --port, --name and
 * --cgroup resolved at the start (each checked: it exists and listens),
 * found again while following, and replaced by a reload.
 */
#include "session_internal.h"
#include "errmsg.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "netns.h"
#include "procfs.h"

struct cs_watch cs_session_watch(struct session *s, struct cs_probes *probes)
{
	return (struct cs_watch){
		.pids = s->live, .pid_count = &s->live_count, .pid_max = sizeof(s->live) / sizeof(s->live[0]),
		.ports = s->ports, .port_netns = s->port_netns, .port_count = &s->port_count,
		.port_max = CS_MAX_TARGETS,
		.match_pids = s->match_pids, .match_pid_max = SESSION_MATCH_PIDS,
		.probes = probes, .quiet = s->opts.quiet,
	};
}

void cs_session_live_add(struct session *s, pid_t pid)
{
	for (size_t i = 0; i < s->live_count; i++)
		if (s->live[i] == pid)
			return;
	if (s->live_count < sizeof(s->live) / sizeof(s->live[0]))
		s->live[s->live_count++] = pid;
}

/* --netns, then the listeners there, for --port. */
static int list_port_listeners(struct session *s, size_t *listener_count)
{
	const struct cs_session_options *opts = &s->opts;
	s->port_opts_netns = cs_netns_self();
	int err = opts->netns[0] ? cs_netns_resolve(opts->netns, &s->port_opts_netns) : 0;
	if (err)
		return cs_fail(s->errmsg, s->errlen, "--netns %s: not a network namespace (%s): give a pid, a "
			    "/proc/PID/ns/net or a name 'ip netns list' shows", opts->netns, strerror(-err));
	err = cs_netns_list_listeners(s->port_opts_netns, s->listeners, CS_MAX_LISTENERS, listener_count);
	if (err && err != -ENOSPC)
		return cs_fail(s->errmsg, s->errlen, "cannot list listening sockets (sock_diag): %s", strerror(-err));
	return 0;
}

/* --pid: a running process (not a thread) that listens; its ports in its own namespace. */
static int resolve_pid(struct session *s, struct cs_watch *watch, pid_t pid)
{
	if (cs_proc_alive(pid))
		return cs_fail(s->errmsg, s->errlen, "no such process: pid %d (check the pid with 'ps -p %d')",
			    (int)pid, (int)pid);
	pid_t tgid = pid;
	if (cs_proc_tgid(pid, &tgid) == 0 && tgid != pid)
		return cs_fail(s->errmsg, s->errlen, "pid %d is a thread of process %d: use --pid %d",
			    (int)pid, (int)tgid, (int)tgid);
	uint16_t found[CS_MAX_TARGETS];
	size_t n = 0;
	uint32_t netns_ino = 0;
	/* In the process's own network namespace: a container's listeners are not in ours. */
	int err = cs_netns_pid_listen_ports(pid, found, CS_MAX_TARGETS, &n, &netns_ino);
	if (err == -EACCES || err == -EPERM)
		return cs_fail(s->errmsg, s->errlen, "cannot read /proc/%d/fd: %s (run as root, or grant "
			    "CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH)", (int)pid, strerror(-err));
	if (err && err != -ENOSPC)
		return cs_fail(s->errmsg, s->errlen, "cannot read the sockets of pid %d: %s", (int)pid,
			    strerror(-err));
	if (n == 0)
		return cs_fail(s->errmsg, s->errlen, "pid %d has no listening TCP socket: attach to the server "
			    "process that calls listen(), or use --port", (int)pid);
	cs_session_live_add(s, pid);
	for (size_t j = 0; j < n; j++)
		cs_watch_add_port(watch, netns_ino, found[j]);
	return 0;
}

/* --port: whoever listens on it (nobody yet is fine while following). */
static int resolve_port(struct session *s, struct cs_watch *watch, uint16_t port, size_t listener_count)
{
	const struct cs_session_options *opts = &s->opts;
	pid_t pids[CS_MAX_TARGETS];
	size_t n = 0;
	cs_pids_on_port(port, s->listeners, listener_count, pids, CS_MAX_TARGETS, &n);
	if (n == 0 && !opts->follow && opts->netns[0])
		return cs_fail(s->errmsg, s->errlen, "nobody listens on TCP port %u in network namespace %s",
			    port, opts->netns);
	if (n == 0 && !opts->follow)
		return cs_fail(s->errmsg, s->errlen, "nobody listens on TCP port %u (check with 'ss -ltnp "
			    "sport = :%u')", port, port);
	for (size_t j = 0; j < n; j++)
		cs_session_live_add(s, pids[j]);
	cs_watch_add_port(watch, s->port_opts_netns, port);
	return 0;
}

/* --name and --cgroup matched no process that listens: say why. */
static int no_match(struct session *s)
{
	const struct cs_target_match *match = &s->opts.match;
	if (match->cgroup_count && !cs_cgroup2_mount())
		return cs_fail(s->errmsg, s->errlen, "no cgroup v2 hierarchy is mounted (see /proc/self/mountinfo)");
	for (size_t i = 0; i < match->cgroup_count; i++)
		if (!cs_cgroup_exists(match->cgroups[i]))
			return cs_fail(s->errmsg, s->errlen, "no cgroup %s in the cgroup v2 hierarchy at %s (a "
				    "process's is the '0::' line of /proc/PID/cgroup)", match->cgroups[i],
				    cs_cgroup2_mount());
	char what[256];
	cs_describe_match(match, what, sizeof(what));
	return cs_fail(s->errmsg, s->errlen, "no process matching %s listens on a TCP port (check with 'ss -ltnp')",
		    what);
}

/* "pid 1234" or "pids 1234,1240", then " (nginx) port(s) ". Returns the length written. */
static size_t describe_pids(const struct session *s, char *out, size_t size)
{
	char comm[32] = "?";
	cs_proc_comm(s->live[0], comm, sizeof(comm));
	size_t used = (size_t)snprintf(out, size, "%s %d", s->live_count > 1 ? "pids" : "pid", (int)s->live[0]);
	for (size_t i = 1; i < s->live_count && used < size; i++)
		used += (size_t)snprintf(out + used, size - used, ",%d", (int)s->live[i]);
	if (used < size)
		used += (size_t)snprintf(out + used, size - used, " (%s) port%s ", comm,
					 s->port_count > 1 ? "s" : "");
	return used;
}

/* "pid 1234 (nginx) ports 80,443"; "(waiting ...)" while no target runs. */
static void describe_targets(struct session *s)
{
	char *out = s->result->target;
	size_t size = sizeof(s->result->target), used;
	if (s->live_count == 0 && s->port_count == 0) {
		char what[200];
		cs_describe_match(&s->opts.match, what, sizeof(what));
		snprintf(out, size, "(waiting for %s)", what);
		return;
	}
	if (s->live_count == 0)
		used = (size_t)snprintf(out, size, "(waiting) port%s ", s->port_count > 1 ? "s" : "");
	else
		used = describe_pids(s, out, size);
	for (size_t i = 0; i < s->port_count && used < size; i++)
		used += (size_t)snprintf(out + used, size - used, "%s%u", i ? "," : "", s->ports[i]);
}

int cs_session_resolve(struct session *s)
{
	const struct cs_session_options *opts = &s->opts;
	size_t listener_count = 0;
	if (list_port_listeners(s, &listener_count))
		return -1;
	struct cs_watch watch = cs_session_watch(s, NULL);
	s->port_count = 0;
	for (size_t i = 0; i < opts->pid_count; i++)
		if (resolve_pid(s, &watch, opts->pids[i]))
			return -1;
	for (size_t i = 0; i < opts->port_count; i++)
		if (resolve_port(s, &watch, opts->ports[i], listener_count))
			return -1;
	/* --name, --cgroup: the processes that listen, with their ports */
	if (s->port_opts_netns != cs_netns_self())
		cs_list_listeners(s->listeners, CS_MAX_LISTENERS, &listener_count);
	if (cs_watch_add_matching(&watch, &opts->match, s->listeners, listener_count) == 0 &&
	    cs_target_match_any(&opts->match) && !opts->follow)
		return no_match(s);
	describe_targets(s);
	return 0;
}

size_t cs_session_rescan(struct session *s)
{
	const struct cs_session_options *opts = &s->opts;
	size_t listener_count = 0, added = 0;
	int err = cs_netns_list_listeners(s->port_opts_netns, s->listeners, CS_MAX_LISTENERS, &listener_count);
	if (err && err != -ENOSPC)
		return 0;
	for (size_t i = 0; i < opts->port_count; i++) {
		pid_t pids[CS_MAX_TARGETS];
		size_t n = 0;
		cs_pids_on_port(opts->ports[i], s->listeners, listener_count, pids, CS_MAX_TARGETS, &n);
		for (size_t j = 0; j < n; j++) {
			size_t before = s->live_count;
			cs_session_live_add(s, pids[j]);
			if (s->live_count == before)
				continue;
			cs_probes_add_tgid(&s->probes, (uint32_t)pids[j]);
			cs_watch_pauses(&s->probes, pids[j], s->opts.quiet, false);
			added++;
			if (!opts->quiet)
				fprintf(stderr, "connscope: now watching pid %d on port %u\n", (int)pids[j],
					opts->ports[i]);
		}
	}
	struct cs_watch watch = cs_session_watch(s, &s->probes);
	if (s->port_opts_netns != cs_netns_self())
		cs_list_listeners(s->listeners, CS_MAX_LISTENERS, &listener_count);
	return added + cs_watch_add_matching(&watch, &opts->match, s->listeners, listener_count);
}

static bool same_targets(const struct cs_session_options *a, const struct cs_session_options *b)
{
	return a->pid_count == b->pid_count && a->port_count == b->port_count &&
	       !memcmp(a->pids, b->pids, a->pid_count * sizeof(a->pids[0])) &&
	       !memcmp(a->ports, b->ports, a->port_count * sizeof(a->ports[0])) &&
	       cs_target_match_equal(&a->match, &b->match) && !strcmp(a->netns, b->netns);
}

/* The reloaded --pid targets that run and listen, with their ports; the others are told and left out. */
static void readd_pids(struct session *s, struct cs_watch *watch)
{
	const struct cs_session_options *opts = &s->opts;
	for (size_t i = 0; i < opts->pid_count; i++) {
		uint16_t found[CS_MAX_TARGETS];
		size_t n = 0;
		uint32_t netns_ino = 0;
		if (cs_proc_alive(opts->pids[i]) == 0)
			cs_netns_pid_listen_ports(opts->pids[i], found, CS_MAX_TARGETS, &n, &netns_ino);
		if (n == 0) {
			fprintf(stderr, "connscope: pid %d is not running or listens on no TCP port: left out\n",
				(int)opts->pids[i]);
			continue;
		}
		cs_session_live_add(s, opts->pids[i]);
		cs_probes_add_tgid(&s->probes, (uint32_t)opts->pids[i]);
		cs_watch_pauses(&s->probes, opts->pids[i], s->opts.quiet, false);
		for (size_t j = 0; j < n; j++)
			cs_watch_add_port(watch, netns_ino, found[j]);
	}
}

void cs_session_reload(struct session *s)
{
	struct cs_session_options *current = &s->opts, *next = &s->next;
	*next = *current;
	if (current->reload(current->hooks_ctx, next))
		return;
	current->sample_hz = next->sample_hz;
	current->trace = next->trace;
	cs_trace_windows_reschedule(&s->windows, &next->trace);
	if (same_targets(current, next))
		return;
	/* Every target process and port is forgotten, then the new ones are looked for. */
	struct cs_watch watch = cs_session_watch(s, &s->probes);
	cs_watch_clear(&watch);
	memcpy(current->pids, next->pids, sizeof(next->pids));
	current->pid_count = next->pid_count;
	memcpy(current->ports, next->ports, sizeof(next->ports));
	current->port_count = next->port_count;
	current->match = next->match;
	memcpy(current->netns, next->netns, sizeof(next->netns));
	s->port_opts_netns = cs_netns_self();
	if (current->netns[0] && cs_netns_resolve(current->netns, &s->port_opts_netns)) {
		fprintf(stderr, "connscope: --netns %s is not a network namespace: its ports are left out\n",
			current->netns);
		current->port_count = 0;
	}
	readd_pids(s, &watch);
	for (size_t i = 0; i < current->port_count; i++)
		cs_watch_add_port(&watch, s->port_opts_netns, current->ports[i]);
	if (!current->quiet)
		fprintf(stderr, "connscope: targets reloaded\n");
}
