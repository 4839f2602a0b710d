// SPDX-License-Identifier: BSD-2-Clause
/*
 * The conditions that shape the tail, each flagged or not with its
 * figures; accept_contention from the diagnosis's findings, by kind.
 */
#include "attrib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accept_pool.h"
#include "units.h"

#define TIME_WAIT_S 60 /* TCP_TIMEWAIT_LEN */
/* Non-persistent: fewer requests than this per connection. */
#define NON_PERSISTENT_RPC 2.0
#define REQUESTS_MIN 20
/* Idle timeouts: this many server idle closes make a pattern. */
#define IDLE_CLOSES_MIN 3
/* Closes within a twentieth of the mode's gap pile up there when they are a quarter of all... */
#define IDLE_PILE_WIDTH 20
#define IDLE_PILE_SHARE 0.25
/* ...otherwise they are spread over a schedule's period: the timeout is where they begin. */
#define IDLE_SPREAD_PERCENTILE 2.0
/* CPU saturation: a thread runnable-but-waiting this share of the run... */
#define RUNQ_SHARE_MIN 0.05
/*
 * ...or run_queue this large a share of the tail, backed by the threads'
 * own waits: in all, at least that share of the tail's time. A request
 * counts every wait of the thread that served it, so a few short waits
 * that land on tail requests (several at once behind one wait) can make a
 * fifth of a short tail while the threads waited a quarter of a percent
 * of the run: the tail says run_queue then, and the CPU is not saturated.
 */
#define RUNQ_TAIL_SHARE_MIN 0.2
/*
 * Pool saturation: requests waiting for a pool thread this large a share
 * of the tail, while the pool was busy (CS_POOL_BUSY_WHILE_WAITING_MIN).
 */
#define POOL_TAIL_SHARE_MIN 0.2

struct runq_scan {
	uint64_t total, top_ns, max_wait;
	bool max_is_mean; /* the largest is a thread's mean: a lower bound */
	uint32_t top_tid;
	char top_comm[CS_COMM_LEN];
};

static void scan_thread(uint64_t key, void *value, void *ctx)
{
	(void)key;
	const struct cs_thread_stats *t = value;
	struct runq_scan *scan = ctx;
	scan->total += t->runq_total_ns;
	if (t->runq_max_ns > scan->max_wait) {
		scan->max_wait = t->runq_max_ns;
		scan->max_is_mean = cs_runq_max_is_mean(t);
	}
	if (t->runq_total_ns > scan->top_ns) {
		scan->top_ns = t->runq_total_ns;
		scan->top_tid = t->tid;
		memcpy(scan->top_comm, t->comm, CS_COMM_LEN);
	}
}

/* connection_limit: the flagged listener, else the one closest to it. */
static void compute_connection_limit(const struct cs_engine *engine, struct cs_conditions *cond)
{
	struct cs_limit_evidence best = { .blocked_share = -1.0 };
	const struct cs_listener_stats *best_listener = NULL;
	for (size_t i = 0; i < engine->listener_count; i++) {
		const struct cs_listener_stats *l = &engine->listeners[i];
		struct cs_limit_evidence e;
		cs_listener_limit(engine, l, &e);
		if (!best_listener || (e.flagged && !best.flagged) ||
		    (e.flagged == best.flagged && e.waits > best.waits)) {
			best = e;
			best_listener = l;
		}
	}
	if (!best_listener)
		return;
	typeof(cond->connection_limit) *c = &cond->connection_limit;
	c->flagged = best.flagged;
	c->port = best_listener->port;
	c->open_connections = best.open_connections;
	c->plateau_s = (double)best.plateau_ns / 1e9;
	c->blocked_share = best.blocked_share;
	c->on_cpu_share = best.on_cpu_share;
	c->handler_share = best.handler_share;
	c->waits = best.waits;
	c->queued_waits = best.queued_waits;
	c->wait_share = best.wait_share;
	c->accept_wait_p99_us = (double)cs_hist_percentile(best_listener->accept_wait_ns, 99.0) / 1e3;
	c->freed_by_idle_close = best.freed_by[CS_FREED_BY_IDLE_CLOSE];
	c->freed_by_client = best.freed_by[CS_FREED_BY_CLIENT];
	c->freed_other = best.freed_by[CS_FREED_BY_OTHER];
	c->made_room = best.made_room;
	/* The acceptor's own hand-off pool, full, is no limit to raise: pool_saturation says it. */
	c->held_by_pool = cs_listener_held_by_handoff_pool(engine, best_listener, &best, NULL);
	c->flagged = c->flagged && !c->held_by_pool;
}

const char *const cs_pool_wait_cause_names[CS_POOL_WAIT_CAUSE_COUNT] = {
	[CS_POOL_WAIT_NONE] = "none",
	[CS_POOL_WAIT_POOL] = "pool",
	[CS_POOL_WAIT_RUN_QUEUE] = "run_queue",
	[CS_POOL_WAIT_NOT_KNOWN] = "not_known",
	[CS_POOL_WAIT_RUNTIME_PAUSE] = "runtime_pause",
};

/* The tail's share and mean wait per tail request of cause. */
static void tail_wait(const struct cs_tail *tail, enum cs_cause cause, double *share, double *mean_us)
{
	*share = *mean_us = 0;
	for (int c = 0; c < CS_CAUSE_COUNT; c++) {
		if (tail->causes[c].cause != cause)
			continue;
		*share = tail->causes[c].share;
		if (tail->requests)
			*mean_us = (double)tail->causes[c].ns / (double)tail->requests / 1e3;
	}
}

/* A hand-off pool: ready requests that waited for a free pool thread. */
static void handoff_pool(const struct cs_engine *engine, const struct cs_tail *tail, struct cs_conditions *cond)
{
	typeof(cond->pool_saturation) *c = &cond->pool_saturation;
	struct cs_pool_scan pool;
	cs_scan_pool(engine, &pool);
	c->kind = CS_POOL_HANDOFF;
	c->pool_threads = pool.threads;
	c->poller_tid = pool.poller_tid;
	memcpy(c->poller_comm, pool.poller_comm, CS_COMM_LEN);
	c->busy_share = cs_pool_busy_share(&pool);
	/*
	 * Busy while the tail's requests waited, not over the whole run: a
	 * pool saturated in bursts serves little of the run, and one whose
	 * threads a pause stopped may have served much of it.
	 */
	c->busy_while_waiting_share = cs_tail_pool_busy_share(tail);
	c->busy = c->busy_while_waiting_share >= CS_POOL_BUSY_WHILE_WAITING_MIN;
	c->wait_p99_us = (double)cs_hist_percentile(engine->requests.cause_ns[CS_CAUSE_WORKER_POOL], 99.0) / 1e3;
	tail_wait(tail, CS_CAUSE_WORKER_POOL, &c->tail_share, &c->tail_wait_mean_us);
}

/* The listener whose accepts an accept pool took most of, if any. */
static const struct cs_listener_stats *accept_pool_listener(const struct cs_engine *engine,
							    struct cs_accept_pool *best)
{
	const struct cs_listener_stats *found = NULL;
	for (size_t i = 0; i < engine->listener_count; i++) {
		struct cs_accept_pool pool;
		if (cs_listener_accept_pool(engine, &engine->listeners[i], &pool) &&
		    (!found || pool.accepts > best->accepts)) {
			*best = pool;
			found = &engine->listeners[i];
		}
	}
	return found;
}

/* An accept pool, when its wait leads the hand-off pool's: connections waited in its backlog. */
static void accept_pool(const struct cs_engine *engine, const struct cs_tail *tail, struct cs_conditions *cond)
{
	typeof(cond->pool_saturation) *c = &cond->pool_saturation;
	struct cs_accept_pool pool;
	const struct cs_listener_stats *l = accept_pool_listener(engine, &pool);
	double share, mean_us;
	tail_wait(tail, CS_CAUSE_ACCEPT_QUEUE, &share, &mean_us);
	if (!l || share <= c->tail_share)
		return;
	memset(c, 0, sizeof(*c));
	c->kind = CS_POOL_ACCEPT;
	c->server = pool.server;
	c->port = l->port;
	c->pool_threads = pool.workers;
	c->busy_threads = pool.busy_workers;
	c->busy = cs_accept_pool_saturated(&pool);
	c->busy_share = pool.busy_share;
	c->busy_while_waiting_share = -1.0; /* an accept pool's is its queue's: busy_threads */
	c->on_cpu_share = pool.on_cpu_share;
	c->runq_share = pool.runq_share;
	c->blocked_share = pool.blocked_share;
	c->queue_nonempty_share = pool.queue_nonempty_share;
	c->tail_share = share;
	c->tail_wait_mean_us = mean_us;
	c->wait_p99_us = (double)cs_hist_percentile(l->accept_wait_ns, 99.0) / 1e3;
}

/* The hand-off pool's server, from its poller's process name (accept: from its workers'). */
static void handoff_pool_server(struct cs_conditions *cond)
{
	typeof(cond->pool_saturation) *c = &cond->pool_saturation;
	if (c->kind == CS_POOL_HANDOFF)
		c->server = cs_pool_server_of(c->poller_comm);
}

/* The listener a full hand-off pool held (its poller accepts), the one with the longest accept waits. */
static const struct cs_listener_stats *handoff_held_listener(const struct cs_engine *engine)
{
	const struct cs_listener_stats *found = NULL;
	for (size_t i = 0; i < engine->listener_count; i++) {
		const struct cs_listener_stats *l = &engine->listeners[i];
		struct cs_limit_evidence limit;
		cs_listener_limit(engine, l, &limit);
		if (cs_listener_held_by_handoff_pool(engine, l, &limit, NULL) &&
		    (!found || l->accept_wait_ns->sum > found->accept_wait_ns->sum))
			found = l;
	}
	return found;
}

/*
 * A hand-off pool whose poller is its acceptor (Apache's event MPM
 * listener thread) stops accepting while none of its threads is free:
 * the accept queue's wait is the pool's, and so is any connection limit
 * it seemed to hold. Such a poller also closes the keep-alive connections
 * it holds rather than wait for a thread: those with a request already
 * waiting (not idle, no timeout's doing) are the pool's too. The pool was
 * seen full (cs_listener_held_by_handoff_pool): busy.
 */
static void handoff_pool_accepts(const struct cs_engine *engine, const struct cs_tail *tail,
				 struct cs_conditions *cond)
{
	typeof(cond->pool_saturation) *c = &cond->pool_saturation;
	const struct cs_listener_stats *held = c->kind == CS_POOL_HANDOFF ? handoff_held_listener(engine) : NULL;
	if (!held)
		return;
	double share, mean_us;
	tail_wait(tail, CS_CAUSE_ACCEPT_QUEUE, &share, &mean_us);
	c->accept_held = true;
	c->busy = true;
	c->port = held->port;
	c->accept_wait_p99_us = (double)cs_hist_percentile(held->accept_wait_ns, 99.0) / 1e3;
	c->tail_share += share;
	c->tail_wait_mean_us += mean_us;
	const struct cs_lifecycle_stats *life = &engine->lifecycle;
	c->dropped_closes = life->server_unread_closes;
	if (life->server_unread_closes)
		c->dropped_wait_mean_us =
			(double)life->unread_close_wait_ns / (double)life->server_unread_closes / 1e3;
}

/*
 * The idle closes of a full hand-off pool's poller. One that holds the
 * accept limit for its pool (accept_held: Apache's event MPM) also closes
 * the idle keep-alive connections it holds while no pool thread is free,
 * as soon as it runs: within about a request's serving time of their last
 * activity, when a worker frees. A timer that short would close
 * connections between a client's requests. So idle closes within the
 * handlers' p99, give or take a half for the closing thread's own delays,
 * are the pool's; idle_timeout is flagged only for as many closes beyond
 * that as it needs (a connection older than the attach, whose request
 * state was never followed, may be one), or a keep-alive race.
 */
#define POOL_IDLE_GAP_SLACK 1.5

static void idle_closes_of_the_pool(const struct cs_engine *engine, struct cs_conditions *cond)
{
	typeof(cond->pool_saturation) *pool = &cond->pool_saturation;
	typeof(cond->idle_timeout) *idle = &cond->idle_timeout;
	const struct cs_lifecycle_stats *life = &engine->lifecycle;
	/* Seen full, however few its requests (pool_saturation flags from REQUESTS_MIN). */
	if (!pool->accept_held || !idle->server_idle_closes)
		return;
	uint64_t handler_p99_ns = cs_hist_percentile(engine->requests.cause_ns[CS_CAUSE_HANDLER], 99.0);
	uint64_t bound_ns = (uint64_t)(POOL_IDLE_GAP_SLACK * (double)handler_p99_ns);
	uint64_t within = cs_hist_count_at_or_below(life->idle_gap_ns, bound_ns);
	if (!within)
		return;
	pool->idle_closes = within;
	pool->idle_gap_max_us = (double)cs_hist_percentile(life->idle_gap_ns, 100.0 * (double)within /
									   (double)life->idle_gap_ns->count) / 1e3;
	pool->handler_p99_us = (double)handler_p99_ns / 1e3;
	idle->pool_closes = within;
	idle->flagged = idle->server_idle_closes - within >= IDLE_CLOSES_MIN || idle->keepalive_race_resets > 0;
}

/*
 * pool_saturation: requests waited for a pool, a large part of the tail,
 * while its threads were busy serving. A wait for a pool whose threads
 * were not busy is not the pool's: a runtime pause stopped them, or the
 * run queue when the CPUs were saturated, else not known. After
 * cpu_saturation and runtime_pauses.
 */
static void pool_saturation(const struct cs_engine *engine, const struct cs_tail *tail, struct cs_conditions *cond)
{
	typeof(cond->pool_saturation) *c = &cond->pool_saturation;
	handoff_pool(engine, tail, cond);
	accept_pool(engine, tail, cond);
	handoff_pool_server(cond);
	handoff_pool_accepts(engine, tail, cond);
	bool waits = engine->requests.requests >= REQUESTS_MIN && c->tail_share >= POOL_TAIL_SHARE_MIN;
	c->flagged = waits && c->busy;
	if (!waits)
		c->wait_cause = CS_POOL_WAIT_NONE;
	else if (c->busy)
		c->wait_cause = CS_POOL_WAIT_POOL;
	else if (cond->runtime_pauses.flagged)
		c->wait_cause = CS_POOL_WAIT_RUNTIME_PAUSE;
	else
		c->wait_cause = cond->cpu_saturation.flagged ? CS_POOL_WAIT_RUN_QUEUE : CS_POOL_WAIT_NOT_KNOWN;
}

/*
 * The timeout a server's idle closes reveal. A server with a timer per
 * connection (nginx, csserver) closes at the timeout: the closes pile up
 * there, at the mode, which a few closes at other gaps do not move. A
 * server that looks for idle connections on a schedule of its own
 * (Tomcat's poller, about once a second) closes anywhere from the timeout
 * to the timeout plus its period: no pile, and the timeout is where the
 * closes begin, at their lowest gaps (the odd earlier close left out).
 */
static uint64_t inferred_idle_timeout_ns(const struct cs_hist *gaps)
{
	size_t best = 0;
	for (size_t b = 1; b < CS_HIST_BUCKETS; b++)
		if (gaps->buckets[b] > gaps->buckets[best])
			best = b;
	uint64_t low = cs_hist_bucket_lowest(best), high = cs_hist_bucket_highest(best);
	uint64_t mode = low + (high - low) / 2;
	uint64_t near = mode / IDLE_PILE_WIDTH;
	uint64_t piled = cs_hist_count_at_or_below(gaps, mode + near) -
			 cs_hist_count_at_or_below(gaps, mode - near - 1);
	if ((double)piled >= IDLE_PILE_SHARE * (double)gaps->count)
		return mode;
	return cs_hist_percentile(gaps, IDLE_SPREAD_PERCENTILE);
}

/* non_persistent: connection set-up paid by (nearly) every request. */
static void non_persistent(const struct cs_engine *engine, struct cs_conditions *cond)
{
	const struct cs_request_stats *req = &engine->requests;
	typeof(cond->non_persistent) *c = &cond->non_persistent;
	c->connections = req->first_on_connection;
	c->median_latency_us = (double)cs_hist_percentile(req->latency_ns, 50.0) / 1e3;
	if (req->requests) {
		c->setup_share = (double)req->first_on_connection / (double)req->requests;
		c->requests_per_connection =
			req->first_on_connection ? (double)req->requests / (double)req->first_on_connection : 0.0;
	}
	if (req->first_on_connection) {
		double connections = (double)req->first_on_connection;
		c->setup_cost_us = (double)req->setup_ns / connections / 1e3;
		c->setup_accept_us = (double)req->setup_accept_ns / connections / 1e3;
		c->setup_tcp_us = (double)req->setup_tcp_ns / connections / 1e3;
		c->setup_tls_us = (double)req->setup_tls_ns / connections / 1e3;
		c->setup_protocol_us = (double)req->setup_protocol_ns / connections / 1e3;
	}
	uint64_t total_ns = 0;
	for (size_t b = 0; b < CS_HIST_BUCKETS; b++)
		for (int cause = 0; cause < CS_CAUSE_COUNT; cause++)
			total_ns += req->bucket_cause_ns[b][cause];
	if (total_ns)
		c->setup_time_share = (double)req->setup_ns / (double)total_ns;
	/*
	 * Connections the server's idle timeout ended are that condition's
	 * doing, not the client's choice: do not blame keep-alive for them;
	 * nor for those it closed with a request waiting (a full pool's).
	 */
	const struct cs_lifecycle_stats *life = &engine->lifecycle;
	bool idle_closes_explain = (life->server_idle_closes + life->server_unread_closes) * 2 >= req->first_on_connection;
	c->flagged = req->requests >= REQUESTS_MIN && req->first_on_connection &&
		     c->requests_per_connection < NON_PERSISTENT_RPC && !idle_closes_explain;
}

/* idle_timeout: the server closes idle keep-alive connections. */
static void idle_timeout(const struct cs_lifecycle_stats *life, struct cs_conditions *cond)
{
	cond->idle_timeout.server_idle_closes = life->server_idle_closes;
	cond->idle_timeout.reconnects = life->reconnects;
	cond->idle_timeout.keepalive_race_resets = life->keepalive_race_resets;
	if (life->idle_gap_ns->count)
		cond->idle_timeout.inferred_timeout_ms = (double)inferred_idle_timeout_ns(life->idle_gap_ns) / 1e6;
	cond->idle_timeout.flagged = life->server_idle_closes >= IDLE_CLOSES_MIN || life->keepalive_race_resets > 0;
}

/* listen_overflow, and accept_contention's figures, over all listeners. */
static void listener_figures(const struct cs_engine *engine, const struct cs_report_meta *meta, struct cs_conditions *cond)
{
	for (size_t i = 0; i < engine->listener_count; i++) {
		const struct cs_listener_stats *l = &engine->listeners[i];
		cond->listen_overflow.drops += cs_listener_drops_seen(l, meta);
		cond->listen_overflow.ack_drops += cs_listener_ack_drops_seen(l, meta);
		cond->listen_overflow.delayed_connections += l->handshakes_delayed_1s;
		cond->listen_overflow.failed_connections += l->handshakes_failed;
		cond->accept_contention.eagain += l->eagain;
		const struct cs_worker_stats *w = cs_listener_busiest_worker(l);
		if (w && l->accepts) {
			double share = (double)w->accepts / (double)l->accepts;
			if (share > cond->accept_contention.busiest_worker_share)
				cond->accept_contention.busiest_worker_share = share;
		}
		double p99_us = (double)cs_hist_percentile(l->accept_wait_ns, 99.0) / 1e3;
		if (p99_us > cond->accept_contention.accept_wait_p99_us)
			cond->accept_contention.accept_wait_p99_us = p99_us;
	}
	cond->listen_overflow.flagged = cond->listen_overflow.drops > 0 || cond->listen_overflow.delayed_connections > 0;
}

/*
 * accept_contention: flagged by the diagnosis's accept findings, by kind.
 * The switch has no default, so a kind added to enum cs_finding_kind
 * without a decision here is a -Wswitch error.
 */
static void accept_contention(const struct cs_finding *findings, size_t count, struct cs_conditions *cond)
{
	typeof(cond->accept_contention) *c = &cond->accept_contention;
	for (size_t i = 0; i < count; i++) {
		switch (findings[i].kind) {
		case CS_FINDING_ACCEPT_THREAD_BOTTLENECK:
		case CS_FINDING_ACCEPT_QUEUE_WAIT:
			c->acceptor_bottleneck = true;
			break;
		case CS_FINDING_UNFAIR_ACCEPTS:
			c->unfair = true;
			break;
		case CS_FINDING_THUNDERING_HERD:
			c->thundering_herd = true;
			break;
		/* A full pool is pool_saturation's; a negligible spread nothing to change. */
		case CS_FINDING_ACCEPT_POOL_FULL:
		case CS_FINDING_HANDOFF_POOL_FULL:
		case CS_FINDING_ACCEPT_NEGLIGIBLE:
		case CS_FINDING_EVENTS_LOST:
		case CS_FINDING_BACKLOG_FULL:
		case CS_FINDING_QUEUED_UNSEEN: /* no accept of theirs seen: what held them is not known */
		case CS_FINDING_CONNECTION_LIMIT:
		case CS_FINDING_SYN_COOKIES:
		case CS_FINDING_KIND_COUNT:
			break;
		}
	}
	c->flagged = c->acceptor_bottleneck || c->unfair || c->thundering_herd;
}

/* cpu_saturation: server threads waiting for a CPU. */
static void cpu_saturation(const struct cs_engine *engine, const struct cs_report_meta *meta,
			   const struct cs_tail *tail, struct cs_conditions *cond)
{
	typeof(cond->cpu_saturation) *c = &cond->cpu_saturation;
	struct runq_scan scan = { 0 };
	cs_u64map_each(&engine->threads, scan_thread, &scan);
	c->runq_total_ns = scan.total;
	c->top_tid = scan.top_tid;
	memcpy(c->top_comm, scan.top_comm, CS_COMM_LEN);
	c->top_runq_ns = scan.top_ns;
	c->runq_max_ns = scan.max_wait;
	c->runq_max_is_mean = scan.max_is_mean;
	c->top_runq_share = meta->duration_s > 0 ? (double)scan.top_ns / (meta->duration_s * NS_PER_SEC) : 0.0;
	double runq_tail_share = 0;
	for (int i = 0; i < CS_CAUSE_COUNT; i++)
		if (tail->causes[i].cause == CS_CAUSE_RUN_QUEUE)
			runq_tail_share = tail->causes[i].share;
	bool waits_back_the_tail = (double)scan.total >= RUNQ_TAIL_SHARE_MIN * (double)tail->total_ns;
	c->flagged = c->top_runq_share >= RUNQ_SHARE_MIN ||
		     (engine->requests.requests >= REQUESTS_MIN && runq_tail_share >= RUNQ_TAIL_SHARE_MIN &&
		      waits_back_the_tail);
}

/* The lifecycle's figures: who closed, TIME_WAIT, resets, lifetimes. */
static void lifecycle(const struct cs_engine *engine, struct cs_conditions *cond)
{
	const struct cs_lifecycle_stats *life = &engine->lifecycle;
	cond->lifecycle.closed_by_server = life->closed_by[CS_CLOSED_BY_SERVER];
	cond->lifecycle.closed_by_client = life->closed_by[CS_CLOSED_BY_CLIENT];
	cond->lifecycle.aborted = life->closed_by[CS_CLOSED_BY_ABORT];
	cond->lifecycle.time_wait_created = life->time_wait_created;
	cond->lifecycle.resets_sent = life->resets_sent;
	cond->lifecycle.resets_received = life->resets_received;
	cond->lifecycle.lifetime_p50_ms = (double)cs_hist_percentile(life->lifetime_ns, 50.0) / 1e6;
	cond->lifecycle.lifetime_p99_ms = (double)cs_hist_percentile(life->lifetime_ns, 99.0) / 1e6;
	cond->lifecycle.lifetime_max_ms = (double)life->lifetime_ns->max / 1e6;
	/* TIME_WAIT lasts 60 s: count the server closes of the run's last 60 s. */
	uint64_t end_second = engine->totals.last_ts_ns / 1000000000ull;
	for (size_t i = 0; i < 64; i++) {
		uint64_t second = life->server_close_second[i];
		if (life->server_close_count[i] && second + TIME_WAIT_S > end_second)
			cond->lifecycle.time_wait_now += life->server_close_count[i];
	}
}

void cs_conditions_from(const struct cs_engine *engine, const struct cs_report_meta *meta,
			const struct cs_tail *tail, const struct cs_finding *findings, size_t finding_count,
			struct cs_conditions *cond)
{
	memset(cond, 0, sizeof(*cond));
	non_persistent(engine, cond);
	idle_timeout(&engine->lifecycle, cond);
	listener_figures(engine, meta, cond);
	compute_connection_limit(engine, cond);
	accept_contention(findings, finding_count, cond);
	cpu_saturation(engine, meta, tail, cond);
	cs_runtime_pauses_condition(engine, meta, tail, cond);
	cs_client_bound_condition(engine, cond);
	pool_saturation(engine, tail, cond);
	idle_closes_of_the_pool(engine, cond);
	lifecycle(engine, cond);
	cs_conditions_figures(cond);
}

/* No default: a condition added to the enum without its flag here is a -Wswitch error. */
bool cs_condition_flagged(const struct cs_conditions *cond, enum cs_condition condition)
{
	switch (condition) {
	case CS_COND_NON_PERSISTENT:
		return cond->non_persistent.flagged;
	case CS_COND_IDLE_TIMEOUT:
		return cond->idle_timeout.flagged;
	case CS_COND_LISTEN_OVERFLOW:
		return cond->listen_overflow.flagged;
	case CS_COND_ACCEPT_CONTENTION:
		return cond->accept_contention.flagged;
	case CS_COND_CONNECTION_LIMIT:
		return cond->connection_limit.flagged;
	case CS_COND_CPU_SATURATION:
		return cond->cpu_saturation.flagged;
	case CS_COND_POOL_SATURATION:
		return cond->pool_saturation.flagged;
	case CS_COND_RUNTIME_PAUSES:
		return cond->runtime_pauses.flagged;
	case CS_COND_CLIENT_BOUND:
		return cond->client_bound.flagged;
	case CS_CONDITION_COUNT:
		break;
	}
	return false;
}
