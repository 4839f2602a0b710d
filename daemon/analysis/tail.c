// SPDX-License-Identifier: BSD-2-Clause
/*
 * The tail's attribution: its causes ranked by their share of the tail's
 * time, each with the figures of its evidence from the slowest requests
 * kept (their words: daemon/render/words.c).
 */
#include "tail.h"

#include <stdlib.h>
#include <string.h>

#include "diagnose.h"
#include "runtime_pauses.h"
#include "upstream_tail.h"

/* Below this share of the tail's time the accept path is no bottleneck. */
#define ACCEPT_TAIL_SHARE_MIN 0.05

static const char *thread_comm(const struct cs_engine *engine, uint32_t tid)
{
	const struct cs_thread_stats *thread = cs_u64map_get(&engine->threads, tid);
	return thread && thread->comm[0] ? thread->comm : "?";
}

/* The thread with the most time in cause among the tail's exemplars. */
static uint32_t top_thread(const struct cs_engine *engine, uint64_t threshold_ns, enum cs_cause cause,
			   uint64_t *ns_out, uint64_t *requests_out)
{
	struct { uint32_t tid; uint64_t ns, requests; } seen[64];
	size_t n = 0;
	for (size_t i = 0; i < engine->requests.exemplar_count; i++) {
		const struct cs_exemplar *e = &engine->requests.exemplars[i];
		if (e->split.total_ns < threshold_ns || !e->split.cause_ns[cause])
			continue;
		uint32_t tid = cause == CS_CAUSE_SEND_DRAIN ? e->sender_tid : e->reader_tid;
		size_t j = 0;
		while (j < n && seen[j].tid != tid)
			j++;
		if (j == n) {
			if (n == 64)
				continue;
			seen[n++] = (typeof(seen[0])){ .tid = tid };
		}
		/* A pipeline's commands are each a tail request of the exchange's times. */
		seen[j].ns += e->split.cause_ns[cause] * e->commands;
		seen[j].requests += e->commands;
	}
	size_t best = 0;
	for (size_t j = 1; j < n; j++)
		if (seen[j].ns > seen[best].ns)
			best = j;
	*ns_out = n ? seen[best].ns : 0;
	*requests_out = n ? seen[best].requests : 0;
	return n ? seen[best].tid : 0;
}

static void scan_pool_thread(uint64_t key, void *value, void *ctx)
{
	(void)key;
	const struct cs_thread_stats *t = value;
	struct cs_pool_scan *pool = ctx;
	if (t->handed_requests || t->executed) {
		pool->threads++;
		pool->carriers += cs_thread_is_carrier(t);
		pool->serving_ns += t->serving_ns;
		if (t->last_send_ns > t->first_read_ns)
			pool->serving_span_ns += t->last_send_ns - t->first_read_ns;
	}
	if (t->handed_out + t->parked_out > pool->poller_handed_out) {
		pool->poller_handed_out = t->handed_out + t->parked_out;
		pool->poller_tid = t->tid;
		memcpy(pool->poller_comm, t->comm, CS_COMM_LEN);
	}
}

void cs_scan_pool(const struct cs_engine *engine, struct cs_pool_scan *pool)
{
	memset(pool, 0, sizeof(*pool));
	cs_u64map_each(&engine->threads, scan_pool_thread, pool);
}

/*
 * While the pool served (each thread from its first read to its last
 * send): idle time before and after the load is no measure of the pool.
 */
double cs_pool_busy_share(const struct cs_pool_scan *pool)
{
	if (!pool->serving_span_ns)
		return 0.0;
	double share = (double)pool->serving_ns / (double)pool->serving_span_ns;
	return share > 1.0 ? 1.0 : share;
}

/*
 * Was the carrier blocked (pinned) or running while it held the virtual
 * threads it served? Measured request by request where the probes read
 * its CPU time over each handler: the virtual threads behind a hold wait
 * about as long as it lasts, so each handler counts by its length, and
 * many short handlers on the CPU do not outweigh the few long ones that
 * blocked. From a trace without those figures, the thread's totals: its
 * CPU time and its waits for a CPU count its polls too, so the blocked
 * time is a lower bound, and a loaded machine's waits hide it.
 */
static bool carrier_pinned(const struct cs_thread_stats *t, uint64_t *blocked_ns, uint64_t *served_ns)
{
	*blocked_ns = *served_ns = 0;
	if (!t)
		return false;
	if (t->handlers_measured) {
		*blocked_ns = t->handler_blocked_ns;
		*served_ns = t->handler_blocked_ns + t->handler_cpu_ns;
		return t->handler_blocked_ns && t->handler_blocked_weight >= t->handler_cpu_weight;
	}
	uint64_t ran = t->cpu_ns + t->runq_total_ns; /* on a CPU, or waiting for one: not blocked */
	*served_ns = t->serving_ns;
	*blocked_ns = t->cpu_sampled_ns && ran < t->serving_ns ? t->serving_ns - ran : 0;
	return t->serving_ns && *blocked_ns * 2 >= t->serving_ns;
}

/*
 * Waiting for a carrier, in Loom's words. A carrier on its CPU ran
 * virtual threads that do not yield (they are not preempted); one off it
 * was blocked holding its virtual thread: pinned (file I/O and native
 * frames pin on every JDK, synchronized before JDK 24).
 */
static void carrier_evidence(struct cs_tail_cause *c, const struct cs_thread_stats *t, uint32_t tid,
			     uint32_t carriers, double busy_share)
{
	uint64_t blocked_ns, served_ns;
	bool pinned = carrier_pinned(t, &blocked_ns, &served_ns);
	struct cs_figures *f = &c->evidence;
	cs_figures_flag(f, "virtual_threads", true);
	cs_figures_ns(f, "tail_wait", c->ns);
	cs_figures_count(f, "carriers", carriers);
	cs_figures_name(f, "carrier_name", t ? t->runtime_name : NULL);
	cs_figures_count(f, "carrier_tid", tid);
	cs_figures_flag(f, "pinned", pinned);
	double blocked_weight = t ? t->handler_blocked_weight : 0.0, cpu_weight = t ? t->handler_cpu_weight : 0.0;
	double weights = blocked_weight + cpu_weight;
	if (pinned) {
		cs_figures_ns(f, "carrier_blocked", blocked_ns);
		cs_figures_ns(f, "carrier_served", served_ns);
		if (weights > 0.0)
			cs_figures_share(f, "carrier_blocked_share_by_length", blocked_weight / weights);
	} else {
		cs_figures_share(f, "carrier_busy_share", busy_share);
		if (weights > 0.0)
			cs_figures_share(f, "carrier_on_cpu_share_by_length", cpu_weight / weights);
	}
}

/* The busiest carrier's share of the time it served (first read to last send). */
static double thread_busy_share(const struct cs_thread_stats *t)
{
	uint64_t span = t && t->last_send_ns > t->first_read_ns ? t->last_send_ns - t->first_read_ns : 0;
	double share = span ? (double)t->serving_ns / (double)span : 0.0;
	return share > 1.0 ? 1.0 : share;
}

static uint64_t tail_ns_of(const struct cs_tail *tail, enum cs_cause cause)
{
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		if (tail->causes[c].cause == cause)
			return tail->causes[c].ns;
	return 0;
}

static void pool_evidence(const struct cs_engine *engine, const struct cs_tail *tail, struct cs_tail_cause *c)
{
	struct cs_pool_scan pool;
	cs_scan_pool(engine, &pool);
	if (pool.carriers && pool.carriers == pool.threads) {
		uint64_t ns, requests;
		uint32_t tid = top_thread(engine, tail->threshold_ns, c->cause, &ns, &requests);
		carrier_evidence(c, cs_u64map_get(&engine->threads, tid), tid, pool.carriers, cs_pool_busy_share(&pool));
		return;
	}
	cs_figures_comm(&c->evidence, "poller_comm", pool.poller_comm);
	cs_figures_count(&c->evidence, "poller_tid", pool.poller_tid);
	cs_figures_ns(&c->evidence, "tail_wait", c->ns);
	cs_figures_count(&c->evidence, "pool_threads", pool.threads);
	cs_figures_share(&c->evidence, "busy_share", cs_pool_busy_share(&pool));
	double busy_while_waiting = cs_tail_pool_busy_share(tail);
	if (busy_while_waiting >= 0) {
		cs_figures_share(&c->evidence, "busy_while_waiting_share", busy_while_waiting);
		cs_figures_flag(&c->evidence, "busy_while_waiting",
				busy_while_waiting >= CS_POOL_BUSY_WHILE_WAITING_MIN);
		/* What else the tail shows held an idle pool's threads: named from a tenth of the wait. */
		cs_figures_flag(&c->evidence, "paused", tail_ns_of(tail, CS_CAUSE_RUNTIME_PAUSE) * 10 >= c->ns);
		cs_figures_flag(&c->evidence, "cpu_waits", tail_ns_of(tail, CS_CAUSE_RUN_QUEUE) * 10 >= c->ns);
	}
}

static int compare_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * The busiest listener speaks for the accept path. Its drops are those the
 * kernel's own counters allow when the run has them (meta), as the
 * listen_overflow condition and the findings count them.
 */
static void accept_evidence(const struct cs_engine *engine, const struct cs_report_meta *meta,
			    struct cs_tail_cause *c)
{
	const struct cs_listener_stats *l = NULL;
	struct cs_figures *f = &c->evidence;
	for (size_t i = 0; i < engine->listener_count; i++)
		if (!l || engine->listeners[i].accepts > l->accepts)
			l = &engine->listeners[i];
	if (!l)
		return;
	cs_figures_count(f, "port", l->port);
	if (c->cause == CS_CAUSE_ACCEPT_QUEUE) {
		const struct cs_worker_stats *w = cs_listener_busiest_worker(l);
		cs_figures_ns(f, "accept_wait_p99", cs_hist_percentile(l->accept_wait_ns, 99.0));
		cs_figures_count(f, "backlog_max", l->backlog_max);
		cs_figures_count(f, "backlog_limit", l->backlog_limit);
		cs_figures_comm(f, "worker_comm", w ? w->comm : NULL);
		cs_figures_count(f, "worker_tid", w ? w->tid : 0);
		cs_figures_share(f, "worker_accept_share",
				 w && l->accepts ? (double)w->accepts / (double)l->accepts : 0.0);
	} else {
		uint64_t drops = meta ? cs_listener_drops_seen(l, meta) : cs_listener_drops(l);
		uint64_t ack_drops = l->ack_overflows < drops ? l->ack_overflows : drops;
		cs_figures_count(f, "drops", drops);
		cs_figures_count(f, "syn_drops", drops - ack_drops);
		cs_figures_count(f, "ack_drops", ack_drops);
		cs_figures_count(f, "handshakes_delayed_1s", l->handshakes_delayed_1s);
		cs_figures_ns(f, "handshake_extra_max", l->handshake_extra_ns->max);
	}
}

static bool is_carrier_tid(const struct cs_engine *engine, uint32_t tid)
{
	const struct cs_thread_stats *t = cs_u64map_get(&engine->threads, tid);
	return t && cs_thread_is_carrier(t);
}

static void count_carrier(uint64_t key, void *value, void *ctx)
{
	(void)key;
	*(uint32_t *)ctx += cs_thread_is_carrier(value);
}

static uint32_t carriers_of(const struct cs_engine *engine)
{
	uint32_t count = 0;
	cs_u64map_each(&engine->threads, count_carrier, &count);
	return count;
}

/*
 * Of the loop's tail time on tid, what came after the requests' reads: the
 * loop ran the requests it read after them before it wrote their answers.
 */
static uint64_t loop_after_read_ns(const struct cs_engine *engine, uint64_t threshold_ns, uint32_t tid)
{
	uint64_t ns = 0;
	for (size_t i = 0; i < engine->requests.exemplar_count; i++) {
		const struct cs_exemplar *e = &engine->requests.exemplars[i];
		if (e->split.total_ns < threshold_ns || e->reader_tid != tid)
			continue;
		uint64_t loop_ns = e->split.cause_ns[CS_CAUSE_EVENT_LOOP];
		ns += (e->split.loop_after_read_ns < loop_ns ? e->split.loop_after_read_ns : loop_ns) * e->commands;
	}
	return ns;
}

/* The thread with the most of the cause's time among the tail's exemplars. */
static void thread_evidence(const struct cs_engine *engine, const struct cs_tail *tail, struct cs_tail_cause *c)
{
	struct cs_figures *f = &c->evidence;
	uint64_t ns, requests;
	uint32_t tid = top_thread(engine, tail->threshold_ns, c->cause, &ns, &requests);
	if (!tid)
		return;
	cs_figures_comm(f, "thread_comm", thread_comm(engine, tid));
	cs_figures_count(f, "thread_tid", tid);
	cs_figures_ns(f, "thread_time", ns);
	cs_figures_count(f, "tail_requests", requests);
	if (c->cause == CS_CAUSE_RUN_QUEUE) {
		const struct cs_thread_stats *t = cs_u64map_get(&engine->threads, tid);
		cs_figures_ns(f, "runq_max", t ? t->runq_max_ns : 0);
		cs_figures_flag(f, "runq_max_mean", t && cs_runq_max_is_mean(t));
	} else if (c->cause == CS_CAUSE_EVENT_LOOP && is_carrier_tid(engine, tid)) {
		const struct cs_thread_stats *t = cs_u64map_get(&engine->threads, tid);
		carrier_evidence(c, t, tid, carriers_of(engine), thread_busy_share(t));
	} else if (c->cause == CS_CAUSE_EVENT_LOOP) {
		uint64_t after_read_ns = loop_after_read_ns(engine, tail->threshold_ns, tid);
		if (after_read_ns) /* a loop that runs each request to completion as it reads it has none */
			cs_figures_ns(f, "after_read_time", after_read_ns);
	}
}

/* The tail's responses: their sizes, full send buffers, and what sat in the send queue. */
static void drain_evidence(const struct cs_engine *engine, const struct cs_tail *tail, struct cs_tail_cause *c)
{
	uint32_t sizes[CS_EXEMPLARS];
	size_t n = 0;
	uint64_t eagain = 0, held = 0;
	for (size_t i = 0; i < engine->requests.exemplar_count; i++) {
		const struct cs_exemplar *e = &engine->requests.exemplars[i];
		if (e->split.total_ns < tail->threshold_ns)
			continue;
		sizes[n++] = e->bytes_out;
		eagain += e->send_eagain;
		held += (e->flags & CS_REQ_HELD_BACK) != 0;
	}
	if (!n)
		return;
	qsort(sizes, n, sizeof(sizes[0]), compare_u32);
	struct cs_figures *f = &c->evidence;
	cs_figures_count(f, "responses", n);
	cs_figures_count(f, "median_bytes", sizes[n / 2]);
	cs_figures_count(f, "largest_bytes", sizes[n - 1]);
	cs_figures_count(f, "send_eagain", eagain);
	cs_figures_count(f, "held_back", held);
	/* Most of them held back: Nagle's algorithm, or a closed window. */
	cs_figures_flag(f, "mostly_held_back", held * 2 >= n);
}

/*
 * The runtime's pauses that overlapped tail requests: how many, how long,
 * what they were (collections, other VM operations by name), and the time
 * to stop every thread where the probes tell it: a long one is a thread
 * that would not stop, not the collector.
 */
static void pause_evidence(const struct cs_engine *engine, const struct cs_tail *tail, struct cs_tail_cause *c)
{
	struct cs_pause_scan scan;
	cs_scan_pauses(engine, tail->threshold_ns, &scan);
	struct cs_figures *f = &c->evidence;
	cs_figures_count(f, "pauses", scan.pauses);
	cs_figures_ns(f, "pause_p50", scan.p50_ns);
	cs_figures_ns(f, "pause_max", scan.max_ns);
	cs_figures_flag(f, "named", scan.named);
	if (!scan.named)
		return;
	cs_figures_count(f, "gc_pauses", scan.gc_pauses);
	if (scan.top_gc_op[0])
		cs_figures_name(f, "gc_operation", scan.top_gc_op);
	cs_figures_count(f, "other_pauses", scan.other_pauses);
	if (scan.other_pauses)
		cs_figures_name(f, "other_operation", scan.top_other_op[0] ? scan.top_other_op : "not named");
	cs_figures_ns(f, "time_to_safepoint_p50", scan.reach_p50_ns);
	cs_figures_ns(f, "time_to_safepoint_max", scan.reach_max_ns);
}

static void evidence(const struct cs_engine *engine, const struct cs_report_meta *meta, const struct cs_tail *tail,
		     struct cs_tail_cause *c)
{
	switch (c->cause) {
	case CS_CAUSE_ACCEPT_QUEUE:
	case CS_CAUSE_LISTEN_OVERFLOW:
		accept_evidence(engine, meta, c);
		break;
	case CS_CAUSE_RUN_QUEUE:
	case CS_CAUSE_EVENT_LOOP:
	case CS_CAUSE_HANDLER:
		thread_evidence(engine, tail, c);
		break;
	case CS_CAUSE_WORKER_POOL:
		pool_evidence(engine, tail, c);
		break;
	case CS_CAUSE_SEND_DRAIN:
		drain_evidence(engine, tail, c);
		break;
	case CS_CAUSE_RUNTIME_PAUSE:
		pause_evidence(engine, tail, c);
		break;
	case CS_CAUSE_UPSTREAM:
		cs_upstream_evidence(engine, tail, c);
		break;
	default:
		break;
	}
}

void cs_tail_sum(const struct cs_hist *latency, const uint64_t (*bucket_cause_ns)[CS_CAUSE_COUNT],
		 const uint64_t (*bucket_dominant)[CS_CAUSE_COUNT], double percentile, struct cs_tail *tail)
{
	memset(tail, 0, sizeof(*tail));
	tail->percentile = percentile;
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		tail->causes[c].cause = (enum cs_cause)c;
	if (latency->count == 0)
		return;

	/* The tail: every bucket from the one holding the percentile up. */
	size_t first = cs_hist_bucket_index(cs_hist_percentile(latency, percentile));
	tail->threshold_ns = cs_hist_bucket_lowest(first);
	for (size_t b = first; b < CS_HIST_BUCKETS; b++) {
		if (!latency->buckets[b])
			continue;
		tail->requests += latency->buckets[b];
		for (int c = 0; c < CS_CAUSE_COUNT; c++) {
			tail->causes[c].ns += bucket_cause_ns[b][c];
			tail->causes[c].requests += bucket_dominant ? bucket_dominant[b][c] : 0;
		}
	}
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		tail->total_ns += tail->causes[c].ns;
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		tail->causes[c].share = tail->total_ns ? (double)tail->causes[c].ns / (double)tail->total_ns : 0.0;

	/* Largest share first (insertion sort, stable: a tie keeps enum cs_cause's order). */
	for (int i = 1; i < CS_CAUSE_COUNT; i++)
		for (int j = i; j > 0 && tail->causes[j].share > tail->causes[j - 1].share; j--) {
			struct cs_tail_cause t = tail->causes[j];
			tail->causes[j] = tail->causes[j - 1];
			tail->causes[j - 1] = t;
		}
}

/* The tail's buckets' pool_busy_ns: cs_tail_sum's buckets, from the threshold's up. */
static uint64_t tail_pool_busy_ns(const struct cs_request_stats *stats, const struct cs_tail *tail)
{
	uint64_t busy = 0;
	if (!tail->requests)
		return 0;
	for (size_t b = cs_hist_bucket_index(tail->threshold_ns); b < CS_HIST_BUCKETS; b++)
		if (stats->latency_ns->buckets[b])
			busy += stats->bucket_pool_busy_ns[b];
	return busy;
}

double cs_tail_pool_busy_share(const struct cs_tail *tail)
{
	uint64_t waited = tail_ns_of(tail, CS_CAUSE_WORKER_POOL);
	return waited ? (double)tail->pool_busy_ns / (double)waited : -1.0;
}

static void compute_tail(const struct cs_engine *engine, const struct cs_report_meta *meta, double percentile,
			 struct cs_tail *tail)
{
	const struct cs_request_stats *stats = &engine->requests;
	cs_tail_sum(stats->latency_ns, (const uint64_t (*)[CS_CAUSE_COUNT])stats->bucket_cause_ns,
		    (const uint64_t (*)[CS_CAUSE_COUNT])stats->bucket_dominant, percentile, tail);
	tail->pool_busy_ns = tail_pool_busy_ns(stats, tail);
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		if (tail->causes[c].ns)
			evidence(engine, meta, tail, &tail->causes[c]);
}

void cs_compute_tail(const struct cs_engine *engine, double percentile, struct cs_tail *tail)
{
	compute_tail(engine, NULL, percentile, tail);
}

void cs_compute_run_tail(const struct cs_engine *engine, const struct cs_report_meta *meta, struct cs_tail *tail)
{
	compute_tail(engine, meta, cs_tail_percentile(meta), tail);
}

double cs_tail_accept_share(const struct cs_tail *tail)
{
	double accept_share = 0;
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		if (tail->causes[c].cause == CS_CAUSE_ACCEPT_QUEUE || tail->causes[c].cause == CS_CAUSE_LISTEN_OVERFLOW)
			accept_share += tail->causes[c].share;
	return accept_share;
}

bool cs_tail_accept_path_negligible(const struct cs_tail *tail)
{
	if (!tail->requests || !tail->total_ns)
		return false;
	return cs_tail_accept_share(tail) < ACCEPT_TAIL_SHARE_MIN;
}

bool cs_accept_path_negligible(const struct cs_engine *engine, const struct cs_report_meta *meta)
{
	struct cs_tail tail;
	cs_compute_run_tail(engine, meta, &tail);
	return cs_tail_accept_path_negligible(&tail);
}

double cs_tail_percentile(const struct cs_report_meta *meta)
{
	return meta->tail_percentile > 0 ? meta->tail_percentile : 99.0;
}
