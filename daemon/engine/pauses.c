// SPDX-License-Identifier: BSD-2-Clause
/*
 * Runtime pauses: each CS_EV_RUNTIME_PAUSE record counted, summed by its
 * VM operation, and kept in a ring of the recent ones, which a request's
 * split reads (requests.c) and which remembers the slowest request each
 * overlapped, for the tail's evidence.
 */
#include "engine.h"
#include "engine_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int cs_pauses_init(struct cs_pause_stats *stats)
{
	stats->pause_ns = malloc(sizeof(*stats->pause_ns));
	stats->gc_ns = malloc(sizeof(*stats->gc_ns));
	stats->reach_ns = malloc(sizeof(*stats->reach_ns));
	stats->recent = calloc(CS_PAUSES_KEPT, sizeof(*stats->recent));
	if (!stats->pause_ns || !stats->gc_ns || !stats->reach_ns || !stats->recent)
		return -ENOMEM;
	cs_hist_init(stats->pause_ns);
	cs_hist_init(stats->gc_ns);
	cs_hist_init(stats->reach_ns);
	return 0;
}

void cs_pauses_free(struct cs_pause_stats *stats)
{
	free(stats->pause_ns);
	free(stats->gc_ns);
	free(stats->reach_ns);
	free(stats->recent);
}

const struct cs_pause *cs_pause_kept(const struct cs_pause_stats *stats, size_t i)
{
	size_t oldest = stats->recent_count < CS_PAUSES_KEPT ? 0 : stats->recent_next;
	return &stats->recent[(oldest + i) % CS_PAUSES_KEPT];
}

/* The operation named name (flags say whether it is), found or added; CS_PAUSE_OPS when full. */
static uint16_t op_index(struct cs_pause_stats *stats, const struct cs_ev_runtime_pause *ev)
{
	char name[CS_PAUSE_OP_NAME_LEN] = "";
	if (ev->flags & CS_PAUSE_OP_NAMED) {
		memcpy(name, ev->op_name, sizeof(name));
		name[sizeof(name) - 1] = '\0';
	}
	for (size_t i = 0; i < stats->op_count; i++)
		if (!strcmp(stats->ops[i].name, name))
			return (uint16_t)i;
	if (stats->op_count == CS_PAUSE_OPS)
		return CS_PAUSE_OPS;
	memcpy(stats->ops[stats->op_count].name, name, sizeof(name));
	return (uint16_t)stats->op_count++;
}

static void count_op(struct cs_pause_stats *stats, uint16_t op, uint64_t pause_ns, bool gc)
{
	if (op == CS_PAUSE_OPS) {
		stats->ops_unlisted++;
		return;
	}
	struct cs_pause_op *o = &stats->ops[op];
	o->pauses++;
	o->total_ns += pause_ns;
	o->gc |= gc;
	if (pause_ns > o->max_ns)
		o->max_ns = pause_ns;
}

/* A pause begins: open until its end's record; a process stops once at a time. */
static void pause_begun(struct cs_pause_stats *stats, const struct cs_ev_runtime_pause *ev)
{
	size_t slot = 0;
	while (slot < stats->open_count && stats->open[slot].tgid != ev->tgid)
		slot++;
	if (slot < stats->open_count) {
		stats->open_replaced++; /* the process's previous end was lost */
	} else if (stats->open_count < CS_PAUSES_OPEN) {
		stats->open_count++;
	} else {
		stats->open_replaced++; /* more JVMs stopped at once than kept: one is forgotten */
		slot = 0;
	}
	stats->open[slot] = (struct cs_pause){ .begin_ns = ev->begin_ns, .tgid = ev->tgid, .op = CS_PAUSE_OPS };
}

/* The open pause this end closes (what it was told meanwhile carried over), or none. */
static void pause_ended(struct cs_pause_stats *stats, struct cs_pause *pause)
{
	for (size_t i = 0; i < stats->open_count; i++) {
		if (stats->open[i].tgid != pause->tgid || stats->open[i].begin_ns != pause->begin_ns)
			continue;
		pause->requests = stats->open[i].requests;
		pause->worst_request_ns = stats->open[i].worst_request_ns;
		stats->open[i] = stats->open[--stats->open_count];
		return;
	}
}

int cs_on_runtime_pause(struct cs_engine *engine, const struct cs_ev_runtime_pause *ev)
{
	struct cs_pause_stats *stats = &engine->pauses;
	if (ev->begin_ns > ev->hdr.ts_ns || !ev->begin_ns)
		return -EINVAL;
	if (ev->flags & CS_PAUSE_BEGUN) {
		pause_begun(stats, ev);
		return 0;
	}
	struct cs_pause pause = {
		.begin_ns = ev->begin_ns,
		.end_ns = ev->hdr.ts_ns,
		.reached_ns = ev->reached_ns >= ev->begin_ns && ev->reached_ns <= ev->hdr.ts_ns ? ev->reached_ns : 0,
		.gc_ns = ev->gc_ns,
		.vm_runq_ns = ev->flags & CS_PAUSE_RUNQ ? ev->vm_runq_ns : 0,
		.gc_runq_ns = ev->flags & CS_PAUSE_RUNQ ? ev->gc_runq_ns : 0,
		.tgid = ev->tgid,
		.flags = ev->flags,
		.op = op_index(stats, ev),
	};
	pause_ended(stats, &pause);
	uint64_t length = cs_pause_ns(&pause), reach = cs_pause_reach_ns(&pause);
	bool gc = ev->flags & CS_PAUSE_GC;
	/* Waits inside the pause, and inside its collections: never longer than they. */
	if (pause.vm_runq_ns > length)
		pause.vm_runq_ns = length;
	if (pause.gc_runq_ns > pause.gc_ns)
		pause.gc_runq_ns = pause.gc_ns;
	stats->pauses++;
	stats->total_ns += length;
	if (length > stats->max_ns)
		stats->max_ns = length;
	cs_hist_record(stats->pause_ns, length);
	if (gc) {
		stats->gc_pauses++;
		stats->gc_full_pauses += (ev->flags & CS_PAUSE_GC_FULL) != 0;
		stats->collections += ev->gc_count;
		stats->gc_total_ns += ev->gc_ns;
		cs_hist_record(stats->gc_ns, ev->gc_ns);
	}
	if (reach) {
		stats->reached_pauses++;
		stats->reach_total_ns += reach;
		if (reach > stats->reach_max_ns)
			stats->reach_max_ns = reach;
		cs_hist_record(stats->reach_ns, reach);
	}
	stats->uprobe_pauses += (ev->flags & CS_PAUSE_UPROBE) != 0;
	if (ev->flags & CS_PAUSE_RUNQ) {
		stats->runq_pauses++;
		stats->runq_pause_total_ns += length;
		stats->vm_runq_total_ns += pause.vm_runq_ns;
	}
	count_op(stats, pause.op, length, gc);
	if (!stats->first_begin_ns || pause.begin_ns < stats->first_begin_ns)
		stats->first_begin_ns = pause.begin_ns;
	if (pause.end_ns > stats->last_end_ns)
		stats->last_end_ns = pause.end_ns;
	stats->forgotten += stats->recent_count == CS_PAUSES_KEPT;
	stats->recent[stats->recent_next] = pause;
	stats->recent_next = (stats->recent_next + 1) % CS_PAUSES_KEPT;
	if (stats->recent_count < CS_PAUSES_KEPT)
		stats->recent_count++;
	return 0;
}

/* An open pause (end_ns 0) has not ended: it covers everything after its begin. */
static uint64_t overlap(const struct cs_pause *pause, uint64_t from_ns, uint64_t to_ns)
{
	uint64_t a = pause->begin_ns > from_ns ? pause->begin_ns : from_ns;
	uint64_t b = pause->end_ns && pause->end_ns < to_ns ? pause->end_ns : to_ns;
	return b > a ? b - a : 0;
}

/*
 * Newest first: records come in the order the pauses ended, so the walk
 * stops at the first one (of any process) that ended long enough before
 * from_ns. A little slack keeps records from several CPUs a few
 * microseconds out of order.
 */
#define PAUSE_ORDER_SLACK_NS (10 * NS_PER_MS)

uint64_t cs_pause_overlap_ns(const struct cs_pause_stats *stats, uint32_t tgid, uint64_t from_ns, uint64_t to_ns)
{
	uint64_t total = 0;
	if (to_ns <= from_ns)
		return 0;
	for (size_t i = stats->recent_count; i-- > 0;) {
		const struct cs_pause *pause = cs_pause_kept(stats, i);
		if (pause->end_ns + PAUSE_ORDER_SLACK_NS < from_ns)
			break;
		if (pause->tgid == tgid)
			total += overlap(pause, from_ns, to_ns);
	}
	for (size_t i = 0; i < stats->open_count; i++)
		if (stats->open[i].tgid == tgid)
			total += overlap(&stats->open[i], from_ns, to_ns);
	return total;
}

static void note(struct cs_pause *pause, uint32_t tgid, uint64_t from_ns, uint64_t to_ns, uint64_t latency_ns)
{
	if (pause->tgid != tgid || !overlap(pause, from_ns, to_ns))
		return;
	pause->requests++;
	if (latency_ns > pause->worst_request_ns)
		pause->worst_request_ns = latency_ns;
}

static void note_request(struct cs_engine *engine, uint32_t tgid, uint64_t from_ns, uint64_t to_ns,
			    uint64_t latency_ns)
{
	struct cs_pause_stats *stats = &engine->pauses;
	for (size_t i = stats->recent_count; i-- > 0;) {
		struct cs_pause *pause = (struct cs_pause *)cs_pause_kept(stats, i);
		if (pause->end_ns + PAUSE_ORDER_SLACK_NS < from_ns)
			break;
		note(pause, tgid, from_ns, to_ns, latency_ns);
	}
	for (size_t i = 0; i < stats->open_count; i++)
		note(&stats->open[i], tgid, from_ns, to_ns, latency_ns);
}

/* Move up to ns of from's time to runtime_pause; returns what was moved. */
static uint64_t move_to_pause(struct cs_request_split *split, enum cs_cause from, uint64_t ns)
{
	uint64_t moved = ns < split->cause_ns[from] ? ns : split->cause_ns[from];
	split->cause_ns[from] -= moved;
	split->cause_ns[CS_CAUSE_RUNTIME_PAUSE] += moved;
	return moved;
}

/*
 * A stopped thread is blocked, not runnable: the overlap comes out of the
 * phase's own cause, never its run-queue time. A parked request's first
 * read to first send is split into handler, worker_pool and event_loop
 * by its hand-back, a request its loop turned from into handler and
 * event_loop: taken from them in that order.
 */
static void split_pauses(const struct cs_pause_stats *stats, const struct cs_phase_spans *spans,
		     struct cs_request_split *split)
{
	uint32_t tgid = spans->tgid;
	move_to_pause(split, CS_CAUSE_ACCEPT_QUEUE,
		      cs_pause_overlap_ns(stats, tgid, spans->accept_from_ns, spans->accept_to_ns));
	move_to_pause(split, spans->setup_cause, cs_pause_overlap_ns(stats, tgid, spans->tls_from_ns, spans->tls_to_ns));
	move_to_pause(split, spans->waited,
		      cs_pause_overlap_ns(stats, tgid, spans->pickup_from_ns, spans->first_read_ns));
	uint64_t left = cs_pause_overlap_ns(stats, tgid, spans->first_read_ns, spans->first_send_ns);
	left -= move_to_pause(split, CS_CAUSE_HANDLER, left);
	if (spans->handed_back || spans->loop_turned) {
		left -= move_to_pause(split, CS_CAUSE_WORKER_POOL, left);
		move_to_pause(split, CS_CAUSE_EVENT_LOOP, left);
	}
	move_to_pause(split, CS_CAUSE_SEND_DRAIN,
		      cs_pause_overlap_ns(stats, tgid, spans->first_send_ns, spans->drain_end_ns));
}

/* A JVM's pauses, where its process had any: what they overlapped of each phase (pauses.c). */
void cs_take_pauses(const struct cs_engine *engine, const struct cs_ev_request *req, struct cs_phase_spans *spans,
		    uint64_t pickup_from, uint64_t drain_end, enum cs_cause waited, struct cs_request_split *split)
{
	if (!engine->pauses.recent_count && !engine->pauses.open_count)
		return;
	spans->pickup_from_ns = pickup_from;
	spans->first_read_ns = req->first_read_ns;
	spans->first_send_ns = req->first_send_ns;
	spans->drain_end_ns = drain_end;
	spans->waited = waited;
	split_pauses(&engine->pauses, spans, split);
}

/* The pauses a request waited in remember it: the tail's evidence counts those that delayed the tail. */
void cs_note_pauses(struct cs_engine *engine, const struct cs_ev_request *req, const struct cs_request_split *split)
{
	if (!split->cause_ns[CS_CAUSE_RUNTIME_PAUSE])
		return;
	uint64_t end_ns = req->drain_end_ns > req->last_send_ns ? req->drain_end_ns : req->last_send_ns;
	note_request(engine, req->tgid, end_ns - split->total_ns, end_ns, split->total_ns);
}
