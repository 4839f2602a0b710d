/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One run's state, shared by session.c (start, loop, end) and
 * session_resolve.c (which processes and ports are the targets, at the
 * start and as they come and go); not for the session's users.
 */
#ifndef CS_SESSION_INTERNAL_H
#define CS_SESSION_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "procfs.h"
#include "session.h"
#include "session_targets.h"

/*
 * --between-windows counters: between two tracing windows no probe runs
 * for each connection; the kernel's counters of the first target's
 * network namespace, read at each edge, count that gap instead.
 */
struct session_between {
	bool on;
	bool in_gap;                       /* no window open: a gap under way */
	bool read_failed;                  /* some edge's counters could not be read */
	uint32_t netns_ino;
	int counter_fds[2];                /* its netstat and snmp, opened there (cs_netns_tcp_counters_open) */
	uint64_t gap_start_ns;
	struct cs_tcp_counters at_gap_start;
	struct cs_between_counts ended;    /* the gaps that ended */
};

/* Process names and cgroups can match more processes than are targets: room to look at them all. */
#define SESSION_MATCH_PIDS 4096

struct session {
	struct cs_session_options opts;    /* a copy: a reload changes the targets and sample rate */
	struct cs_session_options next;    /* what a reload proposes */
	struct cs_engine *engine;
	struct cs_session_result *result;
	char *errmsg;
	size_t errlen;
	struct cs_probes probes;
	pid_t live[CS_MAX_TARGETS * 4];    /* target processes still running */
	size_t live_count;
	uint16_t ports[CS_MAX_TARGETS];    /* target ports */
	uint32_t port_netns[CS_MAX_TARGETS]; /* each one's network namespace (inode) */
	size_t port_count;
	uint32_t port_opts_netns;          /* where --port's listeners are: --netns, or ours */
	uint64_t records;
	struct cs_trace_windows windows;   /* when the per-request probes are attached */
	struct session_between between;
	/* Room for the lookups, too large for a stack: */
	struct cs_listen_socket listeners[CS_MAX_LISTENERS];
	pid_t match_pids[SESSION_MATCH_PIDS];
};

/* The session's processes and ports, for session_targets.c (probes: NULL before they start). */
struct cs_watch cs_session_watch(struct session *s, struct cs_probes *probes);

void cs_session_live_add(struct session *s, pid_t pid);

/*
 * Resolve --pid, --port, --name and --cgroup into target processes and
 * ports, checking that each exists and listens; describe them in the
 * result's target. Returns 0, or -1 with the message in s->errmsg.
 */
int cs_session_resolve(struct session *s);

/*
 * Following: processes now holding the target ports or matching the names
 * and cgroups (a restarted server, a second instance) become targets too.
 * Returns how many were added.
 */
size_t cs_session_rescan(struct session *s);

/*
 * SIGHUP with a reload callback: new options. Changed targets replace the
 * old ones (the rescan that follows finds the processes behind ports,
 * names and cgroups).
 */
void cs_session_reload(struct session *s);

/* session_between.c: the gaps, counted on when options ask for it. */
void cs_session_between_start(struct session *s, uint32_t netns_ino);
void cs_session_between_end(struct session *s);
/*
 * A window's close, its lifecycle probes gone: a gap begins. A window's
 * open, before they come: the gap ends (cs_window_edge_fn, on a session).
 */
void cs_session_between_gap_begins(void *session);
void cs_session_between_gap_ends(void *session);
/* The gaps so far into trace (the one under way read at now_ns). */
void cs_session_between_meta(struct session *s, uint64_t now_ns, struct cs_trace_meta *trace);

#endif /* CS_SESSION_INTERNAL_H */
