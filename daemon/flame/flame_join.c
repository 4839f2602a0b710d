// SPDX-License-Identifier: BSD-2-Clause
/* The flamegraph join (see flame_join.h): pure code. */
#include "flame_join.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *const cs_flame_phase_names[CS_FLAME_PHASE_COUNT] = {
	[CS_FLAME_NONE] = "",
	[CS_FLAME_ON_CPU] = "on-cpu",
	[CS_FLAME_OFF_CPU] = "off-cpu",
	[CS_FLAME_RUNNABLE] = "runnable",
	[CS_FLAME_UNSAMPLED] = "not sampled",
	[CS_FLAME_STOPPED] = "[stopped by the JVM: safepoint]",
};

/* What one cause of one request gets, before scaling to the cause's time. */
struct contrib {
	enum cs_flame_phase phase;
	uint32_t stack;
	uint64_t weight_ns;
};

struct contribs {
	struct contrib *items;
	size_t count, cap;
	uint64_t sum_ns;
	bool failed;       /* out of memory: what could not be kept counts as not sampled */
};

static void contrib_add(struct contribs *list, enum cs_flame_phase phase, uint32_t stack, uint64_t weight_ns)
{
	if (!weight_ns || list->failed)
		return;
	if (list->count == list->cap) {
		size_t cap = list->cap ? 2 * list->cap : 64;
		struct contrib *items = realloc(list->items, cap * sizeof(*items));
		if (!items) {
			list->failed = true;
			return;
		}
		list->items = items;
		list->cap = cap;
	}
	list->items[list->count++] = (struct contrib){ .phase = phase, .stack = stack, .weight_ns = weight_ns };
	list->sum_ns += weight_ns;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct cs_flame_sample *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

static int cmp_off_cpu(const void *a, const void *b)
{
	const struct cs_flame_off_cpu *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->off_ns < y->off_ns ? -1 : x->off_ns > y->off_ns;
}

/* First sample at or after (tid, ts_ns). */
static size_t first_sample(const struct cs_flame_input *in, uint32_t tid, uint64_t ts_ns)
{
	size_t lo = 0, hi = in->sample_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct cs_flame_sample *s = &in->samples[mid];
		if (s->tid < tid || (s->tid == tid && s->ts_ns < ts_ns))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* First interval of tid switched out at or after off_ns. */
static size_t first_off_cpu(const struct cs_flame_input *in, uint32_t tid, uint64_t off_ns)
{
	size_t lo = 0, hi = in->off_cpu_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct cs_flame_off_cpu *o = &in->off_cpu[mid];
		if (o->tid < tid || (o->tid == tid && o->off_ns < off_ns))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint64_t overlap(uint64_t a_from, uint64_t a_to, uint64_t b_from, uint64_t b_to)
{
	uint64_t from = a_from > b_from ? a_from : b_from;
	uint64_t to = a_to < b_to ? a_to : b_to;
	return to > from ? to - from : 0;
}

static void collect_samples(const struct cs_flame_input *in, uint32_t tid, uint64_t from, uint64_t to,
			    struct contribs *list, struct cs_flame_stats *stats)
{
	for (size_t i = first_sample(in, tid, from); i < in->sample_count; i++) {
		const struct cs_flame_sample *s = &in->samples[i];
		if (s->tid != tid || s->ts_ns >= to)
			break;
		contrib_add(list, CS_FLAME_ON_CPU, s->stack, in->sample_period_ns);
		stats->samples_joined++;
	}
}

/*
 * Off-CPU intervals of tid overlapping [from, to): their blocked part
 * (want == CS_FLAME_OFF_CPU) or their runnable part (CS_FLAME_RUNNABLE).
 */
static void collect_off_cpu(const struct cs_flame_input *in, uint32_t tid, uint64_t from, uint64_t to,
			    enum cs_flame_phase want, struct contribs *list, struct cs_flame_stats *stats)
{
	size_t i = first_off_cpu(in, tid, from);
	/* Intervals that began before the window may reach into it. */
	while (i > 0 && in->off_cpu[i - 1].tid == tid && in->off_cpu[i - 1].on_ns > from)
		i--;
	for (; i < in->off_cpu_count; i++) {
		const struct cs_flame_off_cpu *o = &in->off_cpu[i];
		if (o->tid != tid || o->off_ns >= to)
			break;
		if (o->on_ns <= o->off_ns)
			continue; /* malformed: nothing to weigh */
		uint64_t wake = o->wake_ns;
		if (!wake || wake > o->on_ns)
			wake = o->on_ns;
		if (wake < o->off_ns)
			wake = o->off_ns;
		uint64_t ns = want == CS_FLAME_RUNNABLE ? overlap(wake, o->on_ns, from, to)
							: overlap(o->off_ns, wake, from, to);
		if (ns) {
			contrib_add(list, want, o->stack, ns);
			stats->intervals_joined++;
		}
	}
}

static void emit_one(const struct cs_flame_request *r, enum cs_cause cause, enum cs_flame_phase phase,
		     uint32_t stack, uint64_t weight_ns, cs_flame_emit_fn emit, void *ctx,
		     struct cs_flame_stats *stats)
{
	if (!weight_ns)
		return;
	struct cs_flame_path path = {
		.tgid = r->tgid, .port = r->port, .cause = cause, .phase = phase, .stack = stack,
	};
	emit(ctx, &path, weight_ns);
	stats->total_ns += weight_ns;
	if (phase == CS_FLAME_ON_CPU || phase == CS_FLAME_OFF_CPU || phase == CS_FLAME_RUNNABLE)
		stats->sampled_ns += weight_ns;
}

/*
 * A cause's time, filled with what was collected: scaled down when the
 * collected weights exceed it (cumulative rounding keeps the sum exact),
 * the rest not sampled.
 */
static void emit_cause(const struct cs_flame_request *r, enum cs_cause cause, struct contribs *list,
		       cs_flame_emit_fn emit, void *ctx, struct cs_flame_stats *stats)
{
	uint64_t budget = r->split.cause_ns[cause];
	if (!budget)
		return;
	if (list->sum_ns > budget) {
		unsigned __int128 cum = 0;
		uint64_t done = 0;
		for (size_t i = 0; i < list->count; i++) {
			cum += list->items[i].weight_ns;
			uint64_t upto = (uint64_t)(cum * budget / list->sum_ns);
			emit_one(r, cause, list->items[i].phase, list->items[i].stack, upto - done, emit, ctx, stats);
			done = upto;
		}
		return;
	}
	for (size_t i = 0; i < list->count; i++)
		emit_one(r, cause, list->items[i].phase, list->items[i].stack, list->items[i].weight_ns, emit,
			 ctx, stats);
	emit_one(r, cause, CS_FLAME_UNSAMPLED, CS_FLAME_NO_STACK, budget - list->sum_ns, emit, ctx, stats);
}

static void reset(struct contribs *list)
{
	list->count = 0;
	list->sum_ns = 0;
}

int cs_flame_join(struct cs_flame_input *in, cs_flame_emit_fn emit, void *ctx, struct cs_flame_stats *stats)
{
	struct contribs list = {};
	memset(stats, 0, sizeof(*stats));
	if (in->sample_count)
		qsort(in->samples, in->sample_count, sizeof(*in->samples), cmp_sample);
	if (in->off_cpu_count)
		qsort(in->off_cpu, in->off_cpu_count, sizeof(*in->off_cpu), cmp_off_cpu);

	for (size_t i = 0; i < in->request_count; i++) {
		const struct cs_flame_request *r = &in->requests[i];
		stats->requests++;

		/*
		 * No thread to look at: the time alone. worker_pool's request sat
		 * in a queue while the pool's threads served others: their stacks
		 * are those requests' handler time. A TLS handshake's exchanges are
		 * not followed by thread.
		 */
		static const enum cs_cause plain[] = {
			CS_CAUSE_ACCEPT_QUEUE, CS_CAUSE_LISTEN_OVERFLOW, CS_CAUSE_WORKER_POOL, CS_CAUSE_SEND_DRAIN,
			CS_CAUSE_TLS_HANDSHAKE,
		};
		for (size_t c = 0; c < sizeof(plain) / sizeof(plain[0]); c++)
			emit_one(r, plain[c], CS_FLAME_NONE, CS_FLAME_NO_STACK, r->split.cause_ns[plain[c]], emit,
				 ctx, stats);
		/*
		 * A pause is its own frame beside the code that ran: the stopped
		 * threads' stacks (the safepoint's wait) say nothing the frame does not.
		 */
		emit_one(r, CS_CAUSE_RUNTIME_PAUSE, CS_FLAME_STOPPED, CS_FLAME_NO_STACK,
			 r->split.cause_ns[CS_CAUSE_RUNTIME_PAUSE], emit, ctx, stats);

		/* event_loop: the reader, from data ready to its first read. */
		reset(&list);
		collect_samples(in, r->reader_tid, r->pickup_ns, r->first_read_ns, &list, stats);
		collect_off_cpu(in, r->reader_tid, r->pickup_ns, r->first_read_ns, CS_FLAME_OFF_CPU, &list, stats);
		emit_cause(r, CS_CAUSE_EVENT_LOOP, &list, emit, ctx, stats);

		/* handler: the reader, from its first read to the first send. */
		reset(&list);
		collect_samples(in, r->reader_tid, r->first_read_ns, r->first_send_ns, &list, stats);
		collect_off_cpu(in, r->reader_tid, r->first_read_ns, r->first_send_ns, CS_FLAME_OFF_CPU, &list, stats);
		emit_cause(r, CS_CAUSE_HANDLER, &list, emit, ctx, stats);

		/* run_queue: the reader until the first send, the sender after. */
		reset(&list);
		collect_off_cpu(in, r->reader_tid, r->pickup_ns, r->first_send_ns, CS_FLAME_RUNNABLE, &list, stats);
		collect_off_cpu(in, r->sender_tid, r->first_send_ns, r->drain_end_ns, CS_FLAME_RUNNABLE, &list, stats);
		emit_cause(r, CS_CAUSE_RUN_QUEUE, &list, emit, ctx, stats);
	}
	bool failed = list.failed;
	free(list.items);
	return failed ? -ENOMEM : 0;
}
