// SPDX-License-Identifier: BSD-2-Clause
/*
 * Was the pool busy while a request waited for it? A request handed to a
 * pool waits until a pool thread takes it. When the pool is full, the
 * thread that takes it was serving other requests until then; when it is
 * not (its threads stopped by a runtime pause, kept off a CPU, or never
 * told), that thread was idle for the wait. So the wait's overlap with the
 * taking thread's own served spans is the part of it a busy pool caused:
 * per request, from the taker's last CS_SERVED_RECENT spans, and with no
 * picture of the whole pool at once. A wait longer than those spans reach
 * back (a full pool's waits are many of its requests long) counts busy at
 * the share they show over the part they reach: the spans before are gone,
 * not idle.
 * A taker that also polls for the pool and hands out what it polled
 * (Jetty's threads take turns as the selector) is the pool's while it
 * polls: its time not serving counts as busy too, since the probes keep
 * no poll's span to tell its polls from its idle moments.
 */
#include "engine_internal.h"

void cs_note_served(struct cs_thread_stats *thread, uint64_t from_ns, uint64_t to_ns)
{
	if (to_ns <= from_ns)
		return;
	thread->served_recent[thread->served_next] = (struct cs_served_span){ .from_ns = from_ns, .to_ns = to_ns };
	thread->served_next = (thread->served_next + 1) % CS_SERVED_RECENT;
}

/*
 * The union of the thread's recent served spans within [from, to]: a
 * carrier's spans overlap (its virtual threads interleave), so each
 * instant counts once.
 */
static uint64_t served_within(const struct cs_thread_stats *thread, uint64_t from, uint64_t to)
{
	/* Zeroed for cppcheck, which cannot tell the sort reads only what it wrote. */
	struct cs_served_span clipped[CS_SERVED_RECENT] = { 0 };
	size_t n = 0;
	for (size_t i = 0; i < CS_SERVED_RECENT; i++) {
		struct cs_served_span s = thread->served_recent[i];
		if (s.from_ns < from)
			s.from_ns = from;
		if (s.to_ns > to)
			s.to_ns = to;
		if (s.to_ns <= s.from_ns)
			continue;
		/* Insertion by start: at most CS_SERVED_RECENT of them. */
		size_t j = n++;
		for (; j > 0 && clipped[j - 1].from_ns > s.from_ns; j--)
			clipped[j] = clipped[j - 1];
		clipped[j] = s;
	}
	uint64_t busy = 0, covered_to = from;
	for (size_t i = 0; i < n; i++) {
		uint64_t start = clipped[i].from_ns > covered_to ? clipped[i].from_ns : covered_to;
		if (clipped[i].to_ns > start) {
			busy += clipped[i].to_ns - start;
			covered_to = clipped[i].to_ns;
		}
	}
	return busy;
}

/* Where the thread's recent spans begin when they are all in use; 0: they reach back to its start. */
static uint64_t spans_reach_from(const struct cs_thread_stats *thread)
{
	uint64_t oldest = UINT64_MAX;
	for (size_t i = 0; i < CS_SERVED_RECENT; i++) {
		if (!thread->served_recent[i].to_ns)
			return 0;
		if (thread->served_recent[i].from_ns < oldest)
			oldest = thread->served_recent[i].from_ns;
	}
	return oldest;
}

/* The taker's served time over [from, to], scaled to the whole span where its spans reach only part of it. */
static uint64_t busy_over(const struct cs_thread_stats *thread, uint64_t from, uint64_t to)
{
	uint64_t reach = spans_reach_from(thread);
	if (reach <= from)
		return served_within(thread, from, to);
	if (reach >= to)
		return 0;
	double share = (double)served_within(thread, reach, to) / (double)(to - reach);
	return (uint64_t)(share * (double)(to - from));
}

uint64_t cs_pool_wait_busy_ns(const struct cs_engine *engine, const struct cs_ev_request *req,
			      const struct cs_handback *hb, uint64_t pickup_from, const struct cs_request_split *split)
{
	uint64_t waited = split->cause_ns[CS_CAUSE_WORKER_POOL];
	if (!waited)
		return 0;
	uint32_t taker = hb ? hb->worker_tid : req->reader_tid;
	uint64_t from = hb ? req->first_read_ns : pickup_from;
	uint64_t to = hb ? hb->handler_start_ns : req->first_read_ns;
	const struct cs_thread_stats *thread = cs_u64map_get(&engine->threads, taker);
	if (thread && thread->handed_out)
		return waited;
	uint64_t busy = thread && to > from ? busy_over(thread, from, to) : 0;
	/* Of the worker_pool time alone: run-queue time and pauses left it for their causes. */
	return busy < waited ? busy : waited;
}
