// SPDX-License-Identifier: BSD-2-Clause
#include "session.h"
#include "errmsg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jvm.h"
#include "netns.h"
#include "procfs.h"
#include "session_targets.h"

#define POLL_INTERVAL_MS 20
#define ALIVE_CHECK_NS 1000000000ull
/* Following: look for (new) target processes this often; faster while none runs. */
#define RESCAN_IDLE_NS 1000000000ull
#define RESCAN_BUSY_NS 10000000000ull

struct session {
	const struct cs_session_options *opts;
	struct cs_engine *engine;
	pid_t live[CS_MAX_TARGETS * 4];    /* target processes still running */
	size_t live_count;
	uint16_t ports[CS_MAX_TARGETS];    /* target ports */
	uint32_t port_netns[CS_MAX_TARGETS]; /* each one's network namespace (inode) */
	size_t port_count;
	uint32_t port_opts_netns;          /* where --port's listeners are: --netns, or ours */
	uint64_t records;
};

/* The session's processes and ports, for session_targets.c. */
static struct cs_watch session_watch(struct session *s, struct cs_probes *probes)
{
	return (struct cs_watch){
		.pids = s->live, .pid_count = &s->live_count, .pid_max = sizeof(s->live) / sizeof(s->live[0]),
		.ports = s->ports, .port_netns = s->port_netns, .port_count = &s->port_count,
		.port_max = CS_MAX_TARGETS,
		.probes = probes, .quiet = s->opts->quiet,
	};
}

/*
 * The labels of the first target (static: the live meta points here for
 * the daemon's whole run); looked at again when targets change.
 */
static struct cs_target_labels labels;

static void update_labels(struct session *s, struct cs_report_meta *meta)
{
	uint32_t netns_ino = s->port_count ? s->port_netns[0] : s->port_opts_netns;
	if (s->live_count)
		cs_target_labels_of(s->live[0], netns_ino, &labels);
	else
		labels.netns_ino = netns_ino;
	meta->labels = &labels;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void live_add(struct session *s, pid_t pid)
{
	for (size_t i = 0; i < s->live_count; i++)
		if (s->live[i] == pid)
			return;
	if (s->live_count < sizeof(s->live) / sizeof(s->live[0]))
		s->live[s->live_count++] = pid;
}

static void live_remove(struct session *s, pid_t pid)
{
	for (size_t i = 0; i < s->live_count; i++)
		if (s->live[i] == pid) {
			s->live[i] = s->live[--s->live_count];
			return;
		}
}

/* Ring-buffer callback: decode, dispatch, nothing else. */
static int on_record(void *ctx, const void *record, size_t len)
{
	struct session *s = ctx;
	s->records++;
	cs_engine_feed(s->engine, record, len);
	if (s->opts->tee)
		s->opts->tee(s->opts->tee_ctx, record, len);
	const struct cs_event_header *hdr = record;
	if (len >= sizeof(struct cs_ev_proc) &&
	    (hdr->type == CS_EV_PROC_FORK || hdr->type == CS_EV_PROC_EXIT)) {
		const struct cs_ev_proc *proc = record;
		if (hdr->type == CS_EV_PROC_FORK)
			live_add(s, (pid_t)proc->pid);
		else
			live_remove(s, (pid_t)proc->pid);
	}
	return 0;
}

/* Drop processes that died without us seeing their exit record. */
static void prune_dead(struct session *s)
{
	for (size_t i = 0; i < s->live_count;) {
		if (cs_proc_alive(s->live[i]))
			s->live[i] = s->live[--s->live_count];
		else
			i++;
	}
}

/*
 * Resolve --pid and --port into target processes and ports, checking that
 * each exists and listens. Fills s->live, ports[] and the description.
 */
static int resolve_targets(const struct cs_session_options *opts, struct session *s,
			   uint16_t *ports, size_t *port_count, struct cs_session_result *result,
			   char *errmsg, size_t errlen)
{
	static struct cs_listen_socket listeners[CS_MAX_LISTENERS];
	size_t listener_count = 0;
	s->port_opts_netns = cs_netns_self();
	int err = opts->netns[0] ? cs_netns_resolve(opts->netns, &s->port_opts_netns) : 0;
	if (err)
		return cs_fail(errmsg, errlen, "--netns %s: not a network namespace (%s): give a pid, a "
			    "/proc/PID/ns/net or a name 'ip netns list' shows", opts->netns, strerror(-err));
	err = cs_netns_list_listeners(s->port_opts_netns, listeners, CS_MAX_LISTENERS, &listener_count);
	if (err && err != -ENOSPC)
		return cs_fail(errmsg, errlen, "cannot list listening sockets (sock_diag): %s", strerror(-err));
	struct cs_watch watch = session_watch(s, NULL);

	*port_count = 0;
	for (size_t i = 0; i < opts->pid_count; i++) {
		pid_t pid = opts->pids[i];
		if (cs_proc_alive(pid))
			return cs_fail(errmsg, errlen, "no such process: pid %d (check the pid with 'ps -p %d')",
				    (int)pid, (int)pid);
		pid_t tgid = pid;
		if (cs_proc_tgid(pid, &tgid) == 0 && tgid != pid)
			return cs_fail(errmsg, errlen, "pid %d is a thread of process %d: use --pid %d",
				    (int)pid, (int)tgid, (int)tgid);
		uint16_t found[CS_MAX_TARGETS];
		size_t n = 0;
		uint32_t netns_ino = 0;
		/* In the process's own network namespace: a container's listeners are not in ours. */
		err = cs_netns_pid_listen_ports(pid, found, CS_MAX_TARGETS, &n, &netns_ino);
		if (err == -EACCES || err == -EPERM)
			return cs_fail(errmsg, errlen, "cannot read /proc/%d/fd: %s (run as root, or grant "
				    "CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH)", (int)pid, strerror(-err));
		if (err && err != -ENOSPC)
			return cs_fail(errmsg, errlen, "cannot read the sockets of pid %d: %s", (int)pid, strerror(-err));
		if (n == 0)
			return cs_fail(errmsg, errlen, "pid %d has no listening TCP socket: attach to the server "
				    "process that calls listen(), or use --port", (int)pid);
		live_add(s, pid);
		for (size_t j = 0; j < n; j++)
			cs_watch_add_port(&watch, netns_ino, found[j]);
	}
	for (size_t i = 0; i < opts->port_count; i++) {
		pid_t pids[CS_MAX_TARGETS];
		size_t n = 0;
		cs_pids_on_port(opts->ports[i], listeners, listener_count, pids, CS_MAX_TARGETS, &n);
		if (n == 0 && !opts->follow && opts->netns[0])
			return cs_fail(errmsg, errlen, "nobody listens on TCP port %u in network namespace %s",
				    opts->ports[i], opts->netns);
		if (n == 0 && !opts->follow)
			return cs_fail(errmsg, errlen, "nobody listens on TCP port %u (check with 'ss -ltnp "
				    "sport = :%u')", opts->ports[i], opts->ports[i]);
		for (size_t j = 0; j < n; j++)
			live_add(s, pids[j]);
		cs_watch_add_port(&watch, s->port_opts_netns, opts->ports[i]);
	}
	/* --name, --cgroup: the processes that listen, with their ports */
	if (s->port_opts_netns != cs_netns_self())
		cs_list_listeners(listeners, CS_MAX_LISTENERS, &listener_count);
	if (cs_watch_add_matching(&watch, &opts->match, listeners, listener_count) == 0 &&
	    cs_target_match_any(&opts->match) && !opts->follow) {
		if (opts->match.cgroup_count && !cs_cgroup2_mount())
			return cs_fail(errmsg, errlen, "no cgroup v2 hierarchy is mounted (see /proc/self/mountinfo)");
		for (size_t i = 0; i < opts->match.cgroup_count; i++)
			if (!cs_cgroup_exists(opts->match.cgroups[i]))
				return cs_fail(errmsg, errlen, "no cgroup %s in the cgroup v2 hierarchy at %s (a "
					    "process's is the '0::' line of /proc/PID/cgroup)", opts->match.cgroups[i],
					    cs_cgroup2_mount());
		char what[256];
		cs_describe_match(&opts->match, what, sizeof(what));
		return cs_fail(errmsg, errlen, "no process matching %s listens on a TCP port (check with 'ss -ltnp')",
			    what);
	}

	/* "pid 1234 (nginx) ports 80,443" */
	char comm[32] = "?";
	size_t used = 0;
	if (s->live_count == 0 && *port_count == 0) {
		char what[200];
		cs_describe_match(&opts->match, what, sizeof(what));
		snprintf(result->target, sizeof(result->target), "(waiting for %s)", what);
		return 0;
	}
	if (s->live_count == 0) {
		used = (size_t)snprintf(result->target, sizeof(result->target), "(waiting) port%s ",
					*port_count > 1 ? "s" : "");
		goto ports;
	}
	cs_proc_comm(s->live[0], comm, sizeof(comm));
	used = (size_t)snprintf(result->target, sizeof(result->target), "%s %d",
				s->live_count > 1 ? "pids" : "pid", (int)s->live[0]);
	for (size_t i = 1; i < s->live_count && used < sizeof(result->target); i++)
		used += (size_t)snprintf(result->target + used, sizeof(result->target) - used, ",%d",
					 (int)s->live[i]);
	if (used < sizeof(result->target))
		used += (size_t)snprintf(result->target + used, sizeof(result->target) - used, " (%s) port%s ",
					 comm, *port_count > 1 ? "s" : "");
ports:
	for (size_t i = 0; i < *port_count && used < sizeof(result->target); i++)
		used += (size_t)snprintf(result->target + used, sizeof(result->target) - used, "%s%u",
					 i ? "," : "", ports[i]);
	return 0;
}

/*
 * Following: processes now holding the target ports (a restarted server, a
 * second instance) become targets too. Returns how many were added.
 */
static size_t rescan_ports(const struct cs_session_options *opts, struct session *s,
			   struct cs_probes *probes)
{
	static struct cs_listen_socket listeners[CS_MAX_LISTENERS];
	size_t listener_count = 0, added = 0;
	int err = cs_netns_list_listeners(s->port_opts_netns, listeners, CS_MAX_LISTENERS, &listener_count);
	if (err && err != -ENOSPC)
		return 0;
	for (size_t i = 0; i < opts->port_count; i++) {
		pid_t pids[CS_MAX_TARGETS];
		size_t n = 0;
		cs_pids_on_port(opts->ports[i], listeners, listener_count, pids, CS_MAX_TARGETS, &n);
		for (size_t j = 0; j < n; j++) {
			size_t before = s->live_count;
			live_add(s, pids[j]);
			if (s->live_count == before)
				continue;
			cs_probes_add_tgid(probes, (uint32_t)pids[j]);
			added++;
			if (!opts->quiet)
				fprintf(stderr, "connscope: now watching pid %d on port %u\n", (int)pids[j],
					opts->ports[i]);
		}
	}
	struct cs_watch watch = session_watch(s, probes);
	if (s->port_opts_netns != cs_netns_self())
		cs_list_listeners(listeners, CS_MAX_LISTENERS, &listener_count);
	return added + cs_watch_add_matching(&watch, &opts->match, listeners, listener_count);
}

static bool same_targets(const struct cs_session_options *a, const struct cs_session_options *b)
{
	return a->pid_count == b->pid_count && a->port_count == b->port_count &&
	       !memcmp(a->pids, b->pids, a->pid_count * sizeof(a->pids[0])) &&
	       !memcmp(a->ports, b->ports, a->port_count * sizeof(a->ports[0])) &&
	       cs_target_match_equal(&a->match, &b->match) && !strcmp(a->netns, b->netns);
}

/*
 * SIGHUP with a reload callback: new options. Changed targets replace the
 * old ones: every target process and port is forgotten, then the new ones
 * are looked for (the rescan that follows finds the processes behind ports,
 * names and cgroups).
 */
static void reload_targets(struct cs_session_options *current, struct session *s, struct cs_probes *probes)
{
	static struct cs_session_options next;
	next = *current;
	if (current->reload(current->hooks_ctx, &next))
		return;
	current->sample_hz = next.sample_hz;
	if (same_targets(current, &next))
		return;
	struct cs_watch watch = session_watch(s, probes);
	cs_watch_clear(&watch);
	memcpy(current->pids, next.pids, sizeof(next.pids));
	current->pid_count = next.pid_count;
	memcpy(current->ports, next.ports, sizeof(next.ports));
	current->port_count = next.port_count;
	current->match = next.match;
	memcpy(current->netns, next.netns, sizeof(next.netns));
	s->port_opts_netns = cs_netns_self();
	if (current->netns[0] && cs_netns_resolve(current->netns, &s->port_opts_netns)) {
		fprintf(stderr, "connscope: --netns %s is not a network namespace: its ports are left out\n",
			current->netns);
		current->port_count = 0;
	}

	for (size_t i = 0; i < current->pid_count; i++) {
		uint16_t found[CS_MAX_TARGETS];
		size_t n = 0;
		uint32_t netns_ino = 0;
		if (cs_proc_alive(current->pids[i]) == 0)
			cs_netns_pid_listen_ports(current->pids[i], found, CS_MAX_TARGETS, &n, &netns_ino);
		if (n == 0) {
			fprintf(stderr, "connscope: pid %d is not running or listens on no TCP port: left out\n",
				(int)current->pids[i]);
			continue;
		}
		live_add(s, current->pids[i]);
		cs_probes_add_tgid(probes, (uint32_t)current->pids[i]);
		for (size_t j = 0; j < n; j++)
			cs_watch_add_port(&watch, netns_ino, found[j]);
	}
	for (size_t i = 0; i < current->port_count; i++)
		cs_watch_add_port(&watch, s->port_opts_netns, current->ports[i]);
	if (!current->quiet)
		fprintf(stderr, "connscope: targets reloaded\n");
}

static void lock_engine(const struct cs_session_options *opts)
{
	if (opts->engine_lock)
		pthread_mutex_lock(opts->engine_lock);
}

static void unlock_engine(const struct cs_session_options *opts)
{
	if (opts->engine_lock)
		pthread_mutex_unlock(opts->engine_lock);
}

/* The figures only the probes know, for a report or a scrape mid-run. */
static void update_meta(struct cs_probes *probes, struct session *s, uint64_t start_ns,
			struct cs_report_meta *meta)
{
	uint64_t counters[CS_CTR_MAX] = {};
	cs_probes_counters(probes, counters);
	meta->duration_s = (double)(now_ns() - start_ns) / 1e9;
	meta->events_lost = counters[CS_CTR_LOST];
	meta->probe_runs_skipped = cs_probes_skipped_runs(probes, NULL);
	/* A socket's storage not created is an in-kernel table insert that failed too. */
	meta->table_full = counters[CS_CTR_TABLE_FULL] + counters[CS_CTR_SOCKET_STORAGE];
	meta->records_read = s->records;
	update_labels(s, meta);
}

/* A record from user space after the loop: a JVM may take seconds to answer, unlocked. */
static int on_record_locked(void *ctx, const void *record, size_t len)
{
	struct session *s = ctx;
	lock_engine(s->opts);
	int err = on_record(ctx, record, len);
	unlock_engine(s->opts);
	return err;
}

int cs_session_run(const struct cs_session_options *opts, struct cs_engine *engine,
		   struct cs_session_result *result, char *errmsg, size_t errlen)
{
	/* A copy: a reload changes the targets and sample rate. */
	static struct cs_session_options current;
	current = *opts;
	opts = &current;
	struct session s = { .opts = opts, .engine = engine };
	struct cs_probes probes = {};
	uint16_t *ports = s.ports;
	int ret = -1;

	memset(result, 0, sizeof(*result));
	result->meta.target = result->target;
	cs_run_stamp_now(&result->meta.stamp);
	if (opts->live_meta)
		opts->live_meta->stamp = result->meta.stamp;

	/* 1. find the targets before loading anything */
	if (cs_probes_preflight(errmsg, errlen) ||
	    resolve_targets(opts, &s, ports, &s.port_count, result, errmsg, errlen))
		return -1;
	/* The counters of the (first) target's network namespace: each has its own. */
	uint32_t counters_netns = s.port_count ? s.port_netns[0] : s.port_opts_netns;
	struct cs_tcp_counters counters_before = {}, counters_after = {};
	bool have_counters = cs_netns_tcp_counters(counters_netns, &counters_before) == 0;
	update_labels(&s, &result->meta);
	if (opts->live_meta) {
		lock_engine(opts);
		opts->live_meta->labels = &labels;
		unlock_engine(opts);
	}

	/* 2. load and attach, then tell the probes what to watch */
	if (cs_probes_start(&probes, &opts->probe, on_record, &s, errmsg, errlen))
		goto out;
	for (size_t i = 0; i < s.live_count; i++)
		if (cs_probes_add_tgid(&probes, (uint32_t)s.live[i])) {
			cs_fail(errmsg, errlen, "cannot add pid %d to the target map", (int)s.live[i]);
			goto out;
		}
	for (size_t i = 0; i < s.port_count; i++)
		if (cs_probes_add_endpoint(&probes, s.port_netns[i], ports[i])) {
			cs_fail(errmsg, errlen, "cannot add port %u to the target map", ports[i]);
			goto out;
		}

	if (opts->on_attached && opts->on_attached(opts->on_attached_ctx, &probes, errmsg, errlen))
		goto out;

	/* 3. a first walk of the listeners sets each one's drop baseline */
	uint64_t start_ns = now_ns();
	int err = cs_probes_walk_listeners(&probes, start_ns);
	if (err) {
		cs_fail(errmsg, errlen, "cannot walk TCP sockets (iter/tcp): %s", strerror(-err));
		goto out;
	}
	if (opts->attached && opts->attached(opts->hooks_ctx, errmsg, errlen))
		goto out;
	if (!opts->quiet)
		fprintf(stderr, "connscope: attached to %s; %s\n", result->target,
			opts->duration_s > 0 ? "collecting" : "collecting until Ctrl-C");

	/* 4. the loop: poll the ring, sample listeners at sample_hz, watch targets */
	uint64_t end_ns = opts->duration_s > 0 ? start_ns + (uint64_t)(opts->duration_s * 1e9) : 0;
	uint64_t sample_every_ns = 1000000000ull / (opts->sample_hz ? opts->sample_hz : 10);
	uint64_t next_sample_ns = start_ns + sample_every_ns, next_alive_ns = start_ns + ALIVE_CHECK_NS;
	uint64_t last_rescan_ns = start_ns;
	bool targets_running = s.live_count > 0;
	size_t live_after_rescan = s.live_count;
	for (;;) {
		lock_engine(opts);
		err = cs_probes_poll(&probes, POLL_INTERVAL_MS);
		unlock_engine(opts);
		if (err < 0 && err != -EINTR) {
			cs_fail(errmsg, errlen, "reading the ring buffer failed: %s", strerror(-err));
			goto out;
		}
		uint64_t now = now_ns();
		if (now >= next_sample_ns) {
			lock_engine(opts);
			cs_probes_sample_listeners(&probes, now);
			unlock_engine(opts);
			next_sample_ns += sample_every_ns;
			if (next_sample_ns < now) /* we fell behind: do not burst */
				next_sample_ns = now + sample_every_ns;
		}
		if (now >= next_alive_ns) {
			lock_engine(opts);
			cs_probes_sample_threads(&probes, now);
			if (opts->live_meta)
				update_meta(&probes, &s, start_ns, opts->live_meta);
			unlock_engine(opts);
			prune_dead(&s);
			next_alive_ns = now + ALIVE_CHECK_NS;
		}
		/* Look again soon while no target runs or since one exited (a restart), rarely otherwise. */
		uint64_t rescan_every_ns = s.live_count && s.live_count >= live_after_rescan ? RESCAN_BUSY_NS
											       : RESCAN_IDLE_NS;
		if (opts->follow && (now - last_rescan_ns >= rescan_every_ns || (opts->rescan && *opts->rescan))) {
			bool asked = opts->rescan && *opts->rescan;
			if (asked)
				*opts->rescan = 0;
			if (asked && opts->reload) {
				reload_targets(&current, &s, &probes);
				sample_every_ns = 1000000000ull / (opts->sample_hz ? opts->sample_hz : 10);
			}
			struct cs_watch watch = session_watch(&s, &probes);
			size_t gone = cs_watch_prune_namespaces(&watch, s.port_opts_netns);
			if (gone && !opts->quiet)
				fprintf(stderr, "connscope: forgot %zu port(s) of network namespaces no target "
					"lives in any more\n", gone);
			if (rescan_ports(opts, &s, &probes) && opts->live_meta) {
				/* A new target: its labels now, not at the next second. */
				lock_engine(opts);
				update_labels(&s, opts->live_meta);
				unlock_engine(opts);
			}
			live_after_rescan = s.live_count;
			last_rescan_ns = now;
		}
		/* Following: say once each time the last target goes, and keep going. */
		if (opts->follow && s.live_count == 0 && targets_running && !opts->quiet) {
			fprintf(stderr, "connscope: no target process is running any more; keeping what was seen "
				"(%llu records) and watching for a process to listen on the target port(s) again\n",
				(unsigned long long)s.records);
		}
		targets_running = s.live_count > 0;
		if (s.live_count == 0 && !opts->follow) {
			result->target_exited = true;
			if (!opts->quiet)
				fprintf(stderr, "connscope: the target exited; reporting what was seen\n");
			break;
		}
		if ((opts->stop && *opts->stop) || (end_ns && now >= end_ns))
			break;
	}

	/*
	 * 5. detach the probes and read all they emitted (what the last poll
	 * left, and what came before the detach); one last listener and thread
	 * sample; kernel counters
	 */
	lock_engine(opts);
	err = cs_probes_detach_and_drain(&probes);
	unlock_engine(opts);
	if (err < 0) {
		cs_fail(errmsg, errlen, "reading the ring buffer failed: %s", strerror(-err));
		goto out;
	}
	if (!result->target_exited)
		cs_probes_sample_listeners(&probes, now_ns());
	cs_probes_sample_threads(&probes, now_ns());
	/* What only a JVM knows, once the run is over: its threads' names. */
	if (!opts->no_jvm)
		cs_jvm_collect(s.live, s.live_count, opts->quiet, on_record_locked, &s, now_ns());
	lock_engine(opts); /* the labels are the live meta's too */
	update_meta(&probes, &s, start_ns, &result->meta);
	unlock_engine(opts);
	if (have_counters && cs_netns_tcp_counters(counters_netns, &counters_after) == 0) {
		result->meta.netstat.valid = true;
		result->meta.netstat.listen_overflows = counters_after.listen_overflows - counters_before.listen_overflows;
		result->meta.netstat.listen_drops = counters_after.listen_drops - counters_before.listen_drops;
		result->meta.netstat.syncookies_sent = counters_after.syncookies_sent - counters_before.syncookies_sent;
	}
	ret = 0;
out:
	if (opts->probe.verbose) {
		uint64_t counters[CS_CTR_MAX] = {};
		cs_probes_counters(&probes, counters);
		uint64_t skipped = cs_probes_skipped_runs(&probes, stderr);
		fprintf(stderr, "connscope: %" PRIu64 " socket walks, %" PRIu64 " listener samples skipped, "
			"%" PRIu64 " threads untracked, per-packet probe attached %" PRIu64 " time(s)%s, "
			"%" PRIu64 " records read at the end, %" PRIu64 " probe runs skipped by the kernel, "
			"%" PRIu64 " closes seen late\n",
			probes.listener_walks, probes.listener_samples_skipped, probes.threads_untracked,
			probes.xmit_attaches, probes.xmit_failed ? " (attaching it failed)" : "",
			probes.records_after_detach, skipped, counters[CS_CTR_CLOSE_LATE]);
	}
	cs_probes_stop(&probes);
	return ret;
}
