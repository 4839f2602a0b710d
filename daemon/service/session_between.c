// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscoped --between-windows counters: between tracing windows no probe
 * runs for a connection or a packet, so nothing of the gap is counted
 * port by port. The kernel counts it anyway, per network namespace: its
 * TCP counters are read at each window's close and at the next one's
 * start, and what they rose by in between is the gap's. They count every
 * port and process of the namespace, the target's clients' own
 * connections too: every output says so.
 */
#include <string.h>

#include "netns.h"
#include "session_internal.h"
#include "trace_windows.h"
#include "units.h"

/* At the start, while connscoped may still enter a namespace: its counters' files, kept open. */
void cs_session_between_start(struct session *s, uint32_t netns_ino)
{
	struct session_between *b = &s->between;
	memset(b, 0, sizeof(*b));
	b->counter_fds[0] = b->counter_fds[1] = -1;
	b->on = s->opts.probe.between_counters && !cs_trace_schedule_is_always(&s->opts.trace);
	b->netns_ino = netns_ino;
	if (b->on && cs_netns_tcp_counters_open(netns_ino, b->counter_fds))
		b->read_failed = true;
}

void cs_session_between_end(struct session *s)
{
	cs_tcp_counters_close(s->between.counter_fds);
}

void cs_session_between_gap_begins(void *session)
{
	struct session *s = session;
	struct session_between *b = &s->between;
	uint64_t now_ns = cs_monotonic_ns();
	if (!b->on || b->in_gap)
		return;
	if (cs_tcp_counters_read(b->counter_fds, &b->at_gap_start)) {
		b->read_failed = true;
		return; /* this gap is not counted: the figures say they are incomplete */
	}
	b->in_gap = true;
	b->gap_start_ns = now_ns;
}

void cs_session_between_gap_ends(void *session)
{
	struct session *s = session;
	struct session_between *b = &s->between;
	uint64_t now_ns = cs_monotonic_ns();
	if (!b->on || !b->in_gap)
		return;
	struct cs_tcp_counters now;
	b->in_gap = false;
	if (cs_tcp_counters_read(b->counter_fds, &now)) {
		b->read_failed = true;
		return;
	}
	cs_between_add(&b->ended, &b->at_gap_start, &now, now_ns - b->gap_start_ns);
}

void cs_session_between_meta(struct session *s, uint64_t now_ns, struct cs_trace_meta *trace)
{
	struct session_between *b = &s->between;
	trace->counters_between = b->on;
	if (!b->on)
		return;
	trace->between = b->ended;
	trace->between.netns_ino = b->netns_ino;
	trace->between.valid = !b->read_failed;
	struct cs_tcp_counters now;
	if (!b->in_gap)
		return;
	if (cs_tcp_counters_read(b->counter_fds, &now))
		trace->between.valid = false;
	else
		cs_between_add(&trace->between, &b->at_gap_start, &now, now_ns - b->gap_start_ns);
}
