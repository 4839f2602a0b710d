// SPDX-License-Identifier: BSD-2-Clause
/*
 * The tail's attribution: its causes ranked by their share of the tail's
 * time, each with evidence from the slowest requests kept.
 */
#include "tail.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_pauses.h"
#include "units.h"

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
		seen[j].ns += e->split.cause_ns[cause];
		seen[j].requests++;
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
 * Waiting for a carrier, in Loom's words. A carrier mostly on its CPU
 * ran virtual threads that do not yield (they are not preempted); one
 * mostly off it while it served was blocked holding its virtual thread:
 * pinned (file I/O and native frames pin on every JDK, synchronized
 * before JDK 24). Its CPU time and its waits for a CPU count its polls
 * too: the blocked time is a lower bound.
 */
static void carrier_evidence(struct cs_tail_cause *c, const struct cs_thread_stats *t, uint32_t tid,
			     uint32_t carriers, double busy_share)
{
	char waited[32], blocked[32], served[32];
	const char *name = t && t->runtime_name[0] ? t->runtime_name : "?";
	uint64_t serving = t ? t->serving_ns : 0;
	uint64_t ran = t ? t->cpu_ns + t->runq_total_ns : 0; /* on a CPU, or waiting for one: not blocked */
	uint64_t blocked_ns = t && t->cpu_sampled_ns && ran < serving ? serving - ran : 0;
	cs_format_duration(waited, sizeof(waited), c->ns);
	if (serving && blocked_ns * 2 >= serving) {
		cs_format_duration(blocked, sizeof(blocked), blocked_ns);
		cs_format_duration(served, sizeof(served), serving);
		snprintf(c->evidence, sizeof(c->evidence), "virtual threads waited %s in all for one of %u carrier(s) (%s, "
			 "tid %u); pinned: the carrier was blocked off its CPU %s of the %s it served, holding its virtual "
			 "thread (file I/O, native frames; synchronized before JDK 24): move that work off virtual "
			 "threads, or raise jdk.virtualThreadScheduler.maxPoolSize", waited, carriers, name, tid, blocked,
			 served);
		return;
	}
	snprintf(c->evidence, sizeof(c->evidence), "virtual threads waited %s in all for one of %u carrier(s) (%s, tid %u), "
		 "busy %.0f%% of the time they served: a virtual thread that runs on the CPU is not preempted; run "
		 "CPU-bound work on a platform thread pool, or raise jdk.virtualThreadScheduler.parallelism",
		 waited, carriers, name, tid, 100.0 * busy_share);
}

/* The busiest carrier's share of the time it served (first read to last send). */
static double thread_busy_share(const struct cs_thread_stats *t)
{
	uint64_t span = t && t->last_send_ns > t->first_read_ns ? t->last_send_ns - t->first_read_ns : 0;
	double share = span ? (double)t->serving_ns / (double)span : 0.0;
	return share > 1.0 ? 1.0 : share;
}

static void pool_evidence(const struct cs_engine *engine, const struct cs_tail *tail, struct cs_tail_cause *c)
{
	struct cs_pool_scan pool;
	char waited[32];
	cs_scan_pool(engine, &pool);
	if (pool.carriers && pool.carriers == pool.threads) {
		uint64_t ns, requests;
		uint32_t tid = top_thread(engine, tail->threshold_ns, c->cause, &ns, &requests);
		const struct cs_thread_stats *t = cs_u64map_get(&engine->threads, tid);
		carrier_evidence(c, t, tid, pool.carriers, cs_pool_busy_share(&pool));
		return;
	}
	cs_format_duration(waited, sizeof(waited), c->ns);
	snprintf(c->evidence, sizeof(c->evidence), "%s (tid %u) polled and handed the ready requests on; tail requests "
		 "waited %s in all for one of %u pool thread(s), busy %.0f%% of the time they served",
		 pool.poller_comm[0] ? pool.poller_comm : "?", pool.poller_tid, waited, pool.threads,
		 100.0 * cs_pool_busy_share(&pool));
}

static int compare_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* The busiest listener speaks for the accept path. */
static void accept_evidence(const struct cs_engine *engine, struct cs_tail_cause *c)
{
	const struct cs_listener_stats *l = NULL;
	char wait[32];
	for (size_t i = 0; i < engine->listener_count; i++)
		if (!l || engine->listeners[i].accepts > l->accepts)
			l = &engine->listeners[i];
	if (!l)
		return;
	if (c->cause == CS_CAUSE_ACCEPT_QUEUE) {
		const struct cs_worker_stats *w = cs_listener_busiest_worker(l);
		cs_format_duration(wait, sizeof(wait), cs_hist_percentile(l->accept_wait_ns, 99.0));
		snprintf(c->evidence, sizeof(c->evidence),
			 "listener :%u accept wait p99 %s, backlog max %u of %u; %s (tid %u) took %.0f%% of accepts",
			 l->port, wait, l->backlog_max, l->backlog_limit, w ? w->comm : "?", w ? w->tid : 0,
			 w && l->accepts ? 100.0 * (double)w->accepts / (double)l->accepts : 0.0);
	} else {
		cs_format_duration(wait, sizeof(wait), l->handshake_extra_ns->max);
		snprintf(c->evidence, sizeof(c->evidence),
			 "listener :%u dropped %llu SYN(s); %llu connection(s) delayed >= 1 s (max %s)",
			 l->port, (unsigned long long)cs_listener_drops(l),
			 (unsigned long long)l->handshakes_delayed_1s, wait);
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

/* The thread with the most of the cause's time among the tail's exemplars. */
static void thread_evidence(const struct cs_engine *engine, const struct cs_tail *tail, struct cs_tail_cause *c)
{
	char *out = c->evidence;
	size_t len = sizeof(c->evidence);
	char a[32], b[32];
	uint64_t ns, requests;
	uint32_t tid = top_thread(engine, tail->threshold_ns, c->cause, &ns, &requests);
	if (!tid)
		return;
	cs_format_duration(a, sizeof(a), ns);
	if (c->cause == CS_CAUSE_RUN_QUEUE) {
		const struct cs_thread_stats *t = cs_u64map_get(&engine->threads, tid);
		cs_format_duration(b, sizeof(b), t ? t->runq_max_ns : 0);
		snprintf(out, len, "%s (tid %u) was runnable but not running for %s of %llu tail request(s); its longest wait for a CPU %s",
			 thread_comm(engine, tid), tid, a, (unsigned long long)requests, b);
	} else if (c->cause == CS_CAUSE_EVENT_LOOP && is_carrier_tid(engine, tid)) {
		const struct cs_thread_stats *t = cs_u64map_get(&engine->threads, tid);
		carrier_evidence(c, t, tid, carriers_of(engine), thread_busy_share(t));
	} else if (c->cause == CS_CAUSE_EVENT_LOOP) {
		snprintf(out, len, "on %s (tid %u): %llu tail request(s) waited %s in all with data ready while the loop was busy elsewhere",
			 thread_comm(engine, tid), tid, (unsigned long long)requests, a);
	} else {
		snprintf(out, len, "%s (tid %u) spent %s handling %llu tail request(s)",
			 thread_comm(engine, tid), tid, a, (unsigned long long)requests);
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
	if (held * 2 >= n)
		snprintf(c->evidence, sizeof(c->evidence),
			 "%llu of %zu tail responses (median %u bytes) sat in the send queue after the server's last write: "
			 "Nagle's algorithm waiting for the client's delayed ACK, or a closed window; set TCP_NODELAY, "
			 "or write each response in one call", (unsigned long long)held, n, sizes[n / 2]);
	else
		snprintf(c->evidence, sizeof(c->evidence),
			 "tail responses: median %u bytes, largest %u; %llu send(s) found the buffer full; %llu held back in the send queue",
			 sizes[n / 2], sizes[n - 1], (unsigned long long)eagain, (unsigned long long)held);
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
	char p50[32], max[32], reach_p50[32], reach_max[32], other[80] = "";
	cs_scan_pauses(engine, tail->threshold_ns, &scan);
	cs_format_duration(p50, sizeof(p50), scan.p50_ns);
	cs_format_duration(max, sizeof(max), scan.max_ns);
	if (!scan.named) {
		snprintf(c->evidence, sizeof(c->evidence), "%llu JVM safepoint(s) overlapped the tail's requests: p50 %s, "
			 "max %s (what they were is not told: uprobes, not HotSpot's USDT probes)",
			 (unsigned long long)scan.pauses, p50, max);
		return;
	}
	if (scan.other_pauses)
		snprintf(other, sizeof(other), " (%s)", scan.top_other_op[0] ? scan.top_other_op : "not named");
	cs_format_duration(reach_p50, sizeof(reach_p50), scan.reach_p50_ns);
	cs_format_duration(reach_max, sizeof(reach_max), scan.reach_max_ns);
	snprintf(c->evidence, sizeof(c->evidence), "%llu JVM pause(s) overlapped the tail's requests: p50 %s, max %s; "
		 "%llu collection(s)%s%s%s, %llu other VM operation(s)%s; time to safepoint p50 %s, max %s",
		 (unsigned long long)scan.pauses, p50, max, (unsigned long long)scan.gc_pauses,
		 scan.top_gc_op[0] ? " (" : "", scan.top_gc_op, scan.top_gc_op[0] ? ")" : "",
		 (unsigned long long)scan.other_pauses, other, reach_p50, reach_max);
}

static void evidence(const struct cs_engine *engine, const struct cs_tail *tail, struct cs_tail_cause *c)
{
	switch (c->cause) {
	case CS_CAUSE_ACCEPT_QUEUE:
	case CS_CAUSE_LISTEN_OVERFLOW:
		accept_evidence(engine, c);
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

void cs_compute_tail(const struct cs_engine *engine, double percentile, struct cs_tail *tail)
{
	const struct cs_request_stats *stats = &engine->requests;
	cs_tail_sum(stats->latency_ns, (const uint64_t (*)[CS_CAUSE_COUNT])stats->bucket_cause_ns,
		    (const uint64_t (*)[CS_CAUSE_COUNT])stats->bucket_dominant, percentile, tail);
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		if (tail->causes[c].ns)
			evidence(engine, tail, &tail->causes[c]);
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
	cs_compute_tail(engine, cs_tail_percentile(meta), &tail);
	return cs_tail_accept_path_negligible(&tail);
}

double cs_tail_percentile(const struct cs_report_meta *meta)
{
	return meta->tail_percentile > 0 ? meta->tail_percentile : 99.0;
}
