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

/* weight_ns / threads: an instant that threads serving then share. */
static void contrib_add(struct contribs *list, enum cs_flame_phase phase, uint32_t stack, uint64_t weight_ns,
			uint32_t threads)
{
	weight_ns /= threads;
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

static int cmp_serving(const void *a, const void *b)
{
	const struct cs_flame_serving *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->from_ns < y->from_ns ? -1 : x->from_ns > y->from_ns;
}

static int cmp_pool_thread(const void *a, const void *b)
{
	const struct cs_flame_pool_thread *x = a, *y = b;
	if (x->cause != y->cause)
		return x->cause < y->cause ? -1 : 1;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The first element of the sorted array base not below key. */
static size_t lower_bound(const void *base, size_t count, size_t size, const void *key,
			  int (*cmp)(const void *, const void *))
{
	size_t lo = 0, hi = count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cmp((const char *)base + mid * size, key) < 0)
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

/* On-CPU samples of tid in [from, to), each a period shared by threads. */
static void collect_samples(const struct cs_flame_input *in, uint32_t tid, uint64_t from, uint64_t to,
			    uint32_t threads, struct contribs *list, struct cs_flame_stats *stats)
{
	struct cs_flame_sample key = { .ts_ns = from, .tid = tid };
	for (size_t i = lower_bound(in->samples, in->sample_count, sizeof(key), &key, cmp_sample);
	     i < in->sample_count; i++) {
		const struct cs_flame_sample *s = &in->samples[i];
		if (s->tid != tid || s->ts_ns >= to)
			break;
		contrib_add(list, CS_FLAME_ON_CPU, s->stack, in->sample_period_ns, threads);
		stats->samples_joined++;
	}
}

/*
 * Off-CPU intervals of tid overlapping [from, to): their blocked part
 * (want == CS_FLAME_OFF_CPU) or their runnable part (CS_FLAME_RUNNABLE).
 */
static void collect_off_cpu(const struct cs_flame_input *in, uint32_t tid, uint64_t from, uint64_t to,
			    enum cs_flame_phase want, uint32_t threads, struct contribs *list,
			    struct cs_flame_stats *stats)
{
	struct cs_flame_off_cpu key = { .off_ns = from, .tid = tid };
	size_t i = lower_bound(in->off_cpu, in->off_cpu_count, sizeof(key), &key, cmp_off_cpu);
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
			contrib_add(list, want, o->stack, ns, threads);
			stats->intervals_joined++;
		}
	}
}

/* Where one request's paths go, and the totals they add to. */
struct emitter {
	const struct cs_flame_request *r;
	cs_flame_emit_fn emit;
	void *ctx;
	struct cs_flame_stats *stats;
};

static void emit_one(struct emitter *out, enum cs_cause cause, bool pool, enum cs_flame_phase phase,
		     uint32_t stack, uint64_t weight_ns)
{
	if (!weight_ns)
		return;
	struct cs_flame_path path = {
		.tgid = out->r->tgid, .port = out->r->port, .cause = cause, .phase = phase, .stack = stack,
		.pool = pool,
	};
	out->emit(out->ctx, &path, weight_ns);
	out->stats->total_ns += weight_ns;
	if (phase == CS_FLAME_ON_CPU || phase == CS_FLAME_OFF_CPU || phase == CS_FLAME_RUNNABLE) {
		out->stats->sampled_ns += weight_ns;
		if (pool)
			out->stats->pool_sampled_ns += weight_ns;
	}
}

/*
 * budget_ns, filled with what was collected: each weight becomes weight *
 * budget / scale, scale being the time the weights were collected over, or
 * their sum where it is more (sampling is statistical: they are scaled
 * down then); cumulative rounding keeps the sum exact. What they leave is
 * not sampled.
 */
static void emit_scaled(struct emitter *out, enum cs_cause cause, bool pool, const struct contribs *list,
			uint64_t budget_ns, uint64_t scale_ns)
{
	if (!budget_ns)
		return;
	if (scale_ns < list->sum_ns)
		scale_ns = list->sum_ns;
	unsigned __int128 cum = 0;
	uint64_t done = 0;
	for (size_t i = 0; i < list->count; i++) {
		cum += list->items[i].weight_ns;
		uint64_t upto = (uint64_t)(cum * budget_ns / scale_ns);
		emit_one(out, cause, pool, list->items[i].phase, list->items[i].stack, upto - done);
		done = upto;
	}
	emit_one(out, cause, pool, CS_FLAME_UNSAMPLED, CS_FLAME_NO_STACK, budget_ns - done);
}

/* A cause of the request's own threads: collected over the cause's time itself. */
static void emit_cause(struct emitter *out, enum cs_cause cause, const struct contribs *list)
{
	uint64_t budget = out->r->split.cause_ns[cause];
	emit_scaled(out, cause, false, list, budget, budget);
}

static void reset(struct contribs *list)
{
	list->count = 0;
	list->sum_ns = 0;
}

/* ---- a pool's wait: what the pool's threads did meanwhile ------------------------ */

/* A pool thread's serving, clipped to the wait. */
struct pool_item {
	uint64_t from_ns, to_ns;
	uint32_t tid;
};

/* One wait's working arrays, kept from request to request. */
struct pool_scratch {
	struct pool_item *items;
	size_t item_count, item_cap;
	uint64_t *bounds;        /* every item's ends, sorted, once each: the segments' ends */
	int32_t *serving;        /* per segment [bounds[k], bounds[k + 1]): the items covering it */
	size_t bound_count, bound_cap;
	bool failed;
};

static bool add_item(struct pool_scratch *p, uint32_t tid, uint64_t from, uint64_t to)
{
	if (p->item_count == p->item_cap) {
		size_t cap = p->item_cap ? 2 * p->item_cap : 64;
		struct pool_item *items = realloc(p->items, cap * sizeof(*items));
		if (!items)
			return false;
		p->items = items;
		p->item_cap = cap;
	}
	p->items[p->item_count++] = (struct pool_item){ .from_ns = from, .to_ns = to, .tid = tid };
	return true;
}

/* What tid served within [from, to), as items. */
static bool add_serving(const struct cs_flame_input *in, uint32_t tid, uint64_t from, uint64_t to,
			struct pool_scratch *p)
{
	struct cs_flame_serving key = { .from_ns = from, .tid = tid };
	size_t i = lower_bound(in->serving, in->serving_count, sizeof(key), &key, cmp_serving);
	/* A request it began serving before the wait may reach into it. */
	while (i > 0 && in->serving[i - 1].tid == tid && in->serving[i - 1].to_ns > from)
		i--;
	for (; i < in->serving_count && in->serving[i].tid == tid && in->serving[i].from_ns < to; i++) {
		const struct cs_flame_serving *s = &in->serving[i];
		uint64_t a = s->from_ns > from ? s->from_ns : from, b = s->to_ns < to ? s->to_ns : to;
		if (b > a && !add_item(p, tid, a, b))
			return false;
	}
	return true;
}

static size_t bound_index(const struct pool_scratch *p, uint64_t ts_ns)
{
	return lower_bound(p->bounds, p->bound_count, sizeof(ts_ns), &ts_ns, cmp_u64);
}

/*
 * The segments the items' ends cut the wait into, with how many items
 * cover each; returns the time covered by at least one.
 */
static uint64_t cut_segments(struct pool_scratch *p)
{
	size_t need = 2 * p->item_count;
	if (need > p->bound_cap) {
		uint64_t *bounds = realloc(p->bounds, need * sizeof(*bounds));
		int32_t *serving = bounds ? realloc(p->serving, need * sizeof(*serving)) : NULL;
		if (bounds)
			p->bounds = bounds;
		if (!serving) {
			p->failed = true;
			return 0;
		}
		p->serving = serving;
		p->bound_cap = need;
	}
	for (size_t i = 0; i < p->item_count; i++) {
		p->bounds[2 * i] = p->items[i].from_ns;
		p->bounds[2 * i + 1] = p->items[i].to_ns;
	}
	qsort(p->bounds, need, sizeof(*p->bounds), cmp_u64);
	p->bound_count = 0;
	for (size_t i = 0; i < need; i++)
		if (!p->bound_count || p->bounds[p->bound_count - 1] != p->bounds[i])
			p->bounds[p->bound_count++] = p->bounds[i];
	/* Each item +1 where it begins, -1 where it ends; the running sum is the count. */
	memset(p->serving, 0, p->bound_count * sizeof(*p->serving));
	for (size_t i = 0; i < p->item_count; i++) {
		p->serving[bound_index(p, p->items[i].from_ns)]++;
		p->serving[bound_index(p, p->items[i].to_ns)]--;
	}
	uint64_t covered_ns = 0;
	for (size_t k = 0; k + 1 < p->bound_count; k++) {
		if (k)
			p->serving[k] += p->serving[k - 1];
		if (p->serving[k] > 0)
			covered_ns += p->bounds[k + 1] - p->bounds[k];
	}
	return covered_ns;
}

/* Each item's thread's stacks, segment by segment, shared with the others serving then. */
static void collect_pool(const struct cs_flame_input *in, const struct pool_scratch *p, struct contribs *list,
			 struct cs_flame_stats *stats)
{
	static const enum cs_flame_phase off_cpu_parts[] = { CS_FLAME_OFF_CPU, CS_FLAME_RUNNABLE };
	for (size_t i = 0; i < p->item_count; i++) {
		const struct pool_item *item = &p->items[i];
		for (size_t k = bound_index(p, item->from_ns); k + 1 < p->bound_count && p->bounds[k] < item->to_ns;
		     k++) {
			uint64_t from = p->bounds[k], to = p->bounds[k + 1];
			uint32_t threads = (uint32_t)p->serving[k]; /* at least this item */
			collect_samples(in, item->tid, from, to, threads, list, stats);
			for (size_t part = 0; part < 2; part++)
				collect_off_cpu(in, item->tid, from, to, off_cpu_parts[part], threads, list, stats);
		}
	}
}

/* The pool's threads of a wait, for the request's process (worker_pool) or listener (accept_queue). */
static size_t first_pool_thread(const struct cs_flame_input *in, enum cs_cause cause, uint32_t key)
{
	struct cs_flame_pool_thread probe = { .cause = cause, .key = key, .tid = 0 };
	return lower_bound(in->pool_threads, in->pool_thread_count, sizeof(probe), &probe, cmp_pool_thread);
}

/*
 * A pool's wait [from, to): the cause's time, shared among the pool's
 * threads that served then in proportion to the instants they served
 * (scaled from the wait's length to the cause's time, which the run
 * queue and pauses took their part of); the instants with no pool thread
 * serving keep the bare cause.
 */
static void join_pool_wait(const struct cs_flame_input *in, struct emitter *out, enum cs_cause cause,
			   uint64_t from, uint64_t to, struct contribs *list, struct pool_scratch *p)
{
	uint64_t budget = out->r->split.cause_ns[cause];
	uint64_t pool_budget = 0;
	if (budget && to > from) {
		uint32_t key = cause == CS_CAUSE_WORKER_POOL ? out->r->tgid : out->r->port;
		p->item_count = 0;
		for (size_t i = first_pool_thread(in, cause, key); i < in->pool_thread_count &&
		     in->pool_threads[i].cause == cause && in->pool_threads[i].key == key; i++)
			p->failed |= !add_serving(in, in->pool_threads[i].tid, from, to, p);
		uint64_t covered_ns = p->failed || !p->item_count ? 0 : cut_segments(p);
		if (covered_ns) {
			reset(list);
			collect_pool(in, p, list, out->stats);
			pool_budget = (uint64_t)((unsigned __int128)budget * covered_ns / (to - from));
			emit_scaled(out, cause, true, list, pool_budget, covered_ns);
		}
	}
	emit_one(out, cause, false, CS_FLAME_NONE, CS_FLAME_NO_STACK, budget - pool_budget);
}

static void sort_input(struct cs_flame_input *in)
{
	if (in->sample_count)
		qsort(in->samples, in->sample_count, sizeof(*in->samples), cmp_sample);
	if (in->off_cpu_count)
		qsort(in->off_cpu, in->off_cpu_count, sizeof(*in->off_cpu), cmp_off_cpu);
	if (in->serving_count)
		qsort(in->serving, in->serving_count, sizeof(*in->serving), cmp_serving);
	if (in->pool_thread_count)
		qsort(in->pool_threads, in->pool_thread_count, sizeof(*in->pool_threads), cmp_pool_thread);
}

/* The request's own threads: event_loop, handler and run_queue. */
static void join_own_threads(const struct cs_flame_input *in, struct emitter *out, struct contribs *list)
{
	const struct cs_flame_request *r = out->r;
	struct cs_flame_stats *stats = out->stats;

	/* event_loop: the reader, from data ready to its first read. */
	reset(list);
	collect_samples(in, r->reader_tid, r->pickup_ns, r->first_read_ns, 1, list, stats);
	collect_off_cpu(in, r->reader_tid, r->pickup_ns, r->first_read_ns, CS_FLAME_OFF_CPU, 1, list, stats);
	emit_cause(out, CS_CAUSE_EVENT_LOOP, list);

	/* handler: the reader, from its first read to the first send. */
	reset(list);
	collect_samples(in, r->reader_tid, r->first_read_ns, r->first_send_ns, 1, list, stats);
	collect_off_cpu(in, r->reader_tid, r->first_read_ns, r->first_send_ns, CS_FLAME_OFF_CPU, 1, list, stats);
	emit_cause(out, CS_CAUSE_HANDLER, list);

	/* run_queue: the reader until the first send, the sender after. */
	reset(list);
	collect_off_cpu(in, r->reader_tid, r->pickup_ns, r->first_send_ns, CS_FLAME_RUNNABLE, 1, list, stats);
	collect_off_cpu(in, r->sender_tid, r->first_send_ns, r->drain_end_ns, CS_FLAME_RUNNABLE, 1, list, stats);
	emit_cause(out, CS_CAUSE_RUN_QUEUE, list);
}

int cs_flame_join(struct cs_flame_input *in, cs_flame_emit_fn emit, void *ctx, struct cs_flame_stats *stats)
{
	struct contribs list = {};
	struct pool_scratch pool = {};
	memset(stats, 0, sizeof(*stats));
	sort_input(in);

	for (size_t i = 0; i < in->request_count; i++) {
		struct emitter out = { .r = &in->requests[i], .emit = emit, .ctx = ctx, .stats = stats };
		const struct cs_flame_request *r = out.r;
		stats->requests++;

		/* No thread to look at: the time alone. Set-up exchanges (TLS, a protocol's) are not followed by thread. */
		static const enum cs_cause plain[] = {
			CS_CAUSE_LISTEN_OVERFLOW, CS_CAUSE_SEND_DRAIN, CS_CAUSE_TLS_HANDSHAKE, CS_CAUSE_PROTOCOL_SETUP,
		};
		for (size_t c = 0; c < sizeof(plain) / sizeof(plain[0]); c++)
			emit_one(&out, plain[c], false, CS_FLAME_NONE, CS_FLAME_NO_STACK, r->split.cause_ns[plain[c]]);
		/*
		 * A pause is its own frame beside the code that ran: the stopped
		 * threads' stacks (the safepoint's wait) say nothing the frame does not.
		 */
		emit_one(&out, CS_CAUSE_RUNTIME_PAUSE, false, CS_FLAME_STOPPED, CS_FLAME_NO_STACK,
			 r->split.cause_ns[CS_CAUSE_RUNTIME_PAUSE]);
		/* Waits for a pool: what its threads did meanwhile (bare outside a pool). */
		join_pool_wait(in, &out, CS_CAUSE_WORKER_POOL, r->pool_from_ns, r->pool_to_ns, &list, &pool);
		join_pool_wait(in, &out, CS_CAUSE_ACCEPT_QUEUE, r->accept_from_ns, r->accept_to_ns, &list, &pool);
		join_own_threads(in, &out, &list);
	}
	bool failed = list.failed || pool.failed;
	free(list.items);
	free(pool.items);
	free(pool.bounds);
	free(pool.serving);
	return failed ? -ENOMEM : 0;
}
