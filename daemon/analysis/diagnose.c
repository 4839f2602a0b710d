// SPDX-License-Identifier: BSD-2-Clause
/*
 * Diagnosis of the accept path: turns a listener's statistics into findings
 * an operator can act on. Each threshold is named and explained here; a
 * finding's figures are its evidence (their words: daemon/render/words.c).
 */
#include "diagnose.h"

#include <string.h>

#include "accept_pool.h"
#include "tail.h"

/* A queue full in at least 1 % of samples is worth a line even without drops. */
#define BACKLOG_FULL_SHARE_MIN 0.01
/* Accept-queue waits above 1 ms at p99 are visible in client tails. */
#define ACCEPT_WAIT_P99_MIN_NS 1000000ull
/* Below this many accepts, shares and percentiles say little. */
#define ACCEPTS_MIN 20
/* One thread taking this share of accepts is "the" accepting thread. */
#define SINGLE_ACCEPTOR_SHARE 0.9
/* The queue non-empty in this share of samples means the acceptor lags. */
#define QUEUE_BUSY_SHARE 0.5
/* An accept thread busy outside accept() this share of the time cannot keep up. */
#define ACCEPTOR_BUSY_SHARE 0.8
/* Unfair spread: the busiest worker takes at least this many times its fair share... */
#define UNFAIR_FACTOR 1.5
/* ...and at least this share in absolute terms. */
#define UNFAIR_SHARE_MIN 0.6
/* Thundering herd: wasted accept() calls per accepted connection. */
#define HERD_EAGAIN_PER_ACCEPT 0.25
#define HERD_EAGAIN_MIN 10
/* ...with at least this many threads calling accept(): one thread's EAGAIN ends its own drain. */
#define HERD_THREADS_MIN 2

struct findings {
	struct cs_finding *items;
	size_t count, max;
};

/* A finding of kind, its figures to fill; NULL when the list is full (the caller adds nothing). */
static struct cs_figures *add(struct findings *list, enum cs_finding_kind kind, uint16_t port)
{
	if (list->count >= list->max)
		return NULL;
	struct cs_finding *finding = &list->items[list->count++];
	memset(finding, 0, sizeof(*finding));
	finding->kind = kind;
	finding->code = cs_finding_name(kind);
	finding->port = port;
	return &finding->figures;
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

uint64_t cs_listener_drops_seen(const struct cs_listener_stats *l, const struct cs_report_meta *meta)
{
	uint64_t drops = cs_listener_drops(l);
	if (meta->netstat.valid && drops > meta->netstat.listen_overflows)
		return meta->netstat.listen_overflows;
	return drops;
}

uint64_t cs_listener_ack_drops_seen(const struct cs_listener_stats *l, const struct cs_report_meta *meta)
{
	uint64_t drops = cs_listener_drops_seen(l, meta);
	return l->ack_overflows < drops ? l->ack_overflows : drops;
}

static void diagnose_backlog(const struct cs_listener_stats *l, const struct cs_report_meta *meta,
			     struct findings *list)
{
	uint64_t drops = cs_listener_drops_seen(l, meta);
	double full_share = share(l->backlog_full_samples, l->backlog_samples);
	if (drops == 0 && full_share < BACKLOG_FULL_SHARE_MIN)
		return;
	struct cs_figures *f = add(list, CS_FINDING_BACKLOG_FULL, l->port);
	if (!f)
		return;
	cs_figures_share(f, "backlog_full_share", full_share);
	cs_figures_count(f, "backlog_limit", l->backlog_limit);
	cs_figures_count(f, "drops", drops);
	uint64_t ack_drops = cs_listener_ack_drops_seen(l, meta);
	cs_figures_count(f, "syn_drops", drops - ack_drops);
	cs_figures_count(f, "ack_drops", ack_drops);
	/* Evidence from local clients, where there were any. */
	cs_figures_count(f, "handshakes_delayed_1s", l->handshakes_delayed_1s);
	cs_figures_ns(f, "handshake_extra_max", l->handshake_extra_ns->max);
	cs_figures_count(f, "handshakes_failed", l->handshakes_failed);
	if (meta->netstat.valid)
		cs_figures_count(f, "syncookies_sent", meta->netstat.syncookies_sent);
}

/*
 * Connections queued through the whole run, never accepted while watched
 * (an attach to a server already holding them): their requests are in no
 * figure, the tail's least of all, so they are said whatever the tail
 * shows. A hand-off pool's threads, where there is one, are their first
 * suspect: an acceptor that is also the pool's poller stops accepting
 * while none is free (Apache's event MPM).
 */
static void diagnose_queued_unseen(const struct cs_engine *engine, const struct cs_listener_stats *l,
				   struct findings *list)
{
	uint64_t for_ns;
	uint64_t queued = cs_listener_queued_through(l, &for_ns);
	if (!queued)
		return;
	struct cs_figures *f = add(list, CS_FINDING_QUEUED_UNSEEN, l->port);
	if (!f)
		return;
	cs_figures_count(f, "queued", queued);
	cs_figures_ns(f, "queued_for", for_ns);
	cs_figures_count(f, "accepts", l->accepts);
	struct cs_pool_scan pool;
	cs_scan_pool(engine, &pool);
	if (pool.threads) {
		cs_figures_count(f, "pool_threads", pool.threads);
		cs_figures_share(f, "pool_busy_share", cs_pool_busy_share(&pool));
	}
}

/* The listener's accept wait at p50 and p99. */
static void accept_wait(struct cs_figures *f, const struct cs_listener_stats *l)
{
	cs_figures_ns(f, "accept_wait_p50", cs_hist_percentile(l->accept_wait_ns, 50.0));
	cs_figures_ns(f, "accept_wait_p99", cs_hist_percentile(l->accept_wait_ns, 99.0));
}

/* The server stopped accepting at its connection limit: raising accept throughput changes nothing. */
static void diagnose_limit(const struct cs_listener_stats *l, const struct cs_limit_evidence *e,
			   struct findings *list)
{
	struct cs_figures *f = add(list, CS_FINDING_CONNECTION_LIMIT, l->port);
	if (!f)
		return;
	cs_figures_count(f, "open_connections", e->open_connections);
	cs_figures_ns(f, "plateau", e->plateau_ns);
	cs_figures_comm(f, "acceptor_comm", e->acceptor_comm);
	cs_figures_count(f, "acceptor_tid", e->acceptor_tid);
	/* Known only where the trace has the acceptor's CPU time. */
	if (e->blocked_share >= 0) {
		cs_figures_share(f, "blocked_share", e->blocked_share);
		cs_figures_share(f, "on_cpu_share", e->on_cpu_share);
	}
	cs_figures_share(f, "handler_share", e->handler_share);
	cs_figures_share(f, "wait_share", e->wait_share);
	cs_figures_count(f, "waits", e->waits);
	cs_figures_count(f, "freed_by_idle_close", e->freed_by[CS_FREED_BY_IDLE_CLOSE]);
	cs_figures_count(f, "freed_by_client", e->freed_by[CS_FREED_BY_CLIENT]);
	cs_figures_count(f, "freed_other", e->freed_by[CS_FREED_BY_OTHER]);
	accept_wait(f, l);
}

/* Where the acceptor's time outside accept() went, when the trace has its CPU time. */
static void acceptor_state(struct cs_figures *f, const struct cs_engine *engine,
			   const struct cs_worker_stats *worker)
{
	struct cs_acceptor_time time;
	cs_acceptor_time(engine, worker, &time);
	if (!time.cpu_known || !time.outside_ns)
		return;
	cs_figures_share(f, "on_cpu_share", share(time.on_cpu_ns, time.outside_ns));
	cs_figures_share(f, "handler_share", share(time.handler_ns, time.outside_ns));
	cs_figures_share(f, "runq_share", share(time.runq_ns, time.outside_ns));
	cs_figures_share(f, "blocked_share", share(time.blocked_ns, time.outside_ns));
}

/* The accept pool's workers, and what their serving was (on_cpu_share only where sampled). */
static void pool_state(struct cs_figures *f, const struct cs_accept_pool *pool)
{
	cs_figures_count(f, "busy_workers", pool->busy_workers);
	cs_figures_count(f, "workers", pool->workers);
	cs_figures_share(f, "busy_share", pool->busy_share);
	if (pool->on_cpu_share >= 0)
		cs_figures_share(f, "on_cpu_share", pool->on_cpu_share);
	cs_figures_share(f, "runq_share", pool->runq_share);
	cs_figures_share(f, "blocked_share", pool->blocked_share);
}

/* Every worker that accepts was serving: connections wait for a free worker in the backlog. */
static void diagnose_pool_full(const struct cs_listener_stats *l, const struct cs_accept_pool *pool,
			       struct findings *list)
{
	struct cs_figures *f = add(list, CS_FINDING_ACCEPT_POOL_FULL, l->port);
	if (!f)
		return;
	pool_state(f, pool);
	if (pool->queue_nonempty_share >= 0)
		cs_figures_share(f, "queue_nonempty_share", pool->queue_nonempty_share);
	accept_wait(f, l);
}

/*
 * The acceptor stopped accepting while none of the pool threads it hands
 * connections to was free: connections waited in the accept queue for a
 * pool thread, not for a connection limit to be raised.
 */
static void diagnose_handoff_full(const struct cs_listener_stats *l, const struct cs_limit_evidence *e,
				  const struct cs_handoff_limit *pool, struct findings *list)
{
	struct cs_figures *f = add(list, CS_FINDING_HANDOFF_POOL_FULL, l->port);
	if (!f)
		return;
	cs_figures_comm(f, "acceptor_comm", e->acceptor_comm);
	cs_figures_count(f, "acceptor_tid", e->acceptor_tid);
	cs_figures_count(f, "pool_threads", pool->pool_threads);
	cs_figures_share(f, "busy_share", pool->busy_share);
	cs_figures_count(f, "waits", e->waits);
	if (e->waits)
		cs_figures_share(f, "wait_share", e->wait_share);
	accept_wait(f, l);
}

static void bottleneck(const struct cs_engine *engine, const struct cs_listener_stats *l,
		       const struct cs_worker_stats *busiest, double queue_busy, double mean_left, struct findings *list)
{
	struct cs_figures *f = add(list, CS_FINDING_ACCEPT_THREAD_BOTTLENECK, l->port);
	if (!f)
		return;
	cs_figures_comm(f, "acceptor_comm", busiest->comm);
	cs_figures_count(f, "acceptor_tid", busiest->tid);
	cs_figures_share(f, "accept_share", share(busiest->accepts, l->accepts));
	cs_figures_count(f, "accepts", l->accepts);
	cs_figures_share(f, "busy_share", cs_worker_busy_share(busiest));
	cs_figures_ratio(f, "waiting_per_accept", mean_left);
	cs_figures_share(f, "queue_nonempty_share", queue_busy);
	accept_wait(f, l);
	acceptor_state(f, engine, busiest);
}

static void diagnose_acceptor(const struct cs_engine *engine, const struct cs_listener_stats *l,
			      struct findings *list)
{
	/* A limit has its own minimum (a few waits of seconds each are plenty). */
	struct cs_limit_evidence limit;
	struct cs_handoff_limit handoff;
	cs_listener_limit(engine, l, &limit);
	if (cs_listener_held_by_handoff_pool(engine, l, &limit, &handoff)) {
		diagnose_handoff_full(l, &limit, &handoff, list);
		return;
	}
	if (limit.flagged) {
		diagnose_limit(l, &limit, list);
		return;
	}
	uint64_t matched = l->accept_wait_ns->count;
	if (l->accepts < ACCEPTS_MIN || matched == 0)
		return;
	if (cs_hist_percentile(l->accept_wait_ns, 99.0) < ACCEPT_WAIT_P99_MIN_NS)
		return;

	/* Workers that accept and serve: they are away from accept() while they serve. */
	struct cs_accept_pool pool;
	bool pool_seen = cs_listener_accept_pool(engine, l, &pool);
	if (pool_seen && cs_accept_pool_saturated(&pool)) {
		diagnose_pool_full(l, &pool, list);
		return;
	}
	double busy = share(l->backlog_nonempty_samples, l->backlog_samples);
	double mean_left = (double)l->backlog_at_accept_sum / (double)l->accepts;
	const struct cs_worker_stats *busiest = cs_listener_busiest_worker(l);
	double busiest_share = busiest ? share(busiest->accepts, l->accepts) : 0.0;

	double acceptor_busy = busiest ? cs_worker_busy_share(busiest) : 0.0;
	if (busiest && busiest_share >= SINGLE_ACCEPTOR_SHARE && acceptor_busy >= ACCEPTOR_BUSY_SHARE &&
	    (busy >= QUEUE_BUSY_SHARE || mean_left >= 1.0)) {
		bottleneck(engine, l, busiest, busy, mean_left, list);
		return;
	}
	struct cs_figures *f = add(list, CS_FINDING_ACCEPT_QUEUE_WAIT, l->port);
	if (!f)
		return;
	accept_wait(f, l);
	cs_figures_share(f, "queue_nonempty_share", busy);
	/* The pool was not what held them: its workers, for the reader to see. */
	if (pool_seen)
		pool_state(f, &pool);
}

/*
 * A herd wakes several threads for one connection: EAGAINs on a listener
 * only one thread accepts from end that thread's own drains (Go's accept
 * loop accepts until EAGAIN, then parks).
 */
static bool herd_seen(const struct cs_listener_stats *l)
{
	return l->worker_count >= HERD_THREADS_MIN && l->eagain >= HERD_EAGAIN_MIN &&
	       (double)l->eagain >= HERD_EAGAIN_PER_ACCEPT * (double)l->accepts;
}

static bool unfair_seen(const struct cs_listener_stats *l)
{
	const struct cs_worker_stats *busiest = cs_listener_busiest_worker(l);
	if (l->worker_count < 2 || l->accepts < ACCEPTS_MIN || !busiest)
		return false;
	double busiest_share = share(busiest->accepts, l->accepts);
	double fair = 1.0 / (double)l->worker_count;
	return busiest_share >= UNFAIR_FACTOR * fair && busiest_share >= UNFAIR_SHARE_MIN;
}

static void diagnose_fairness(const struct cs_listener_stats *l, struct findings *list)
{
	if (!unfair_seen(l))
		return;
	const struct cs_worker_stats *busiest = cs_listener_busiest_worker(l);
	struct cs_figures *f = add(list, CS_FINDING_UNFAIR_ACCEPTS, l->port);
	if (!f)
		return;
	cs_figures_share(f, "worker_share", share(busiest->accepts, l->accepts));
	cs_figures_comm(f, "worker_comm", busiest->comm);
	cs_figures_count(f, "worker_tid", busiest->tid);
	cs_figures_count(f, "worker_accepts", busiest->accepts);
	cs_figures_count(f, "accepts", l->accepts);
	cs_figures_count(f, "threads", l->worker_count); /* threads that called accept() */
	cs_figures_share(f, "fair_share", 1.0 / (double)l->worker_count);
}

/*
 * An unfair spread or a herd whose accept waits are a negligible part
 * of the tail: said once, and flagged as nothing to change.
 */
static void diagnose_negligible(const struct cs_listener_stats *l, const struct cs_tail *tail,
				struct findings *list)
{
	bool herd = herd_seen(l), unfair = unfair_seen(l);
	if (!herd && !unfair)
		return;
	struct cs_figures *f = add(list, CS_FINDING_ACCEPT_NEGLIGIBLE, l->port);
	if (!f)
		return;
	cs_figures_flag(f, "unfair", unfair);
	cs_figures_flag(f, "thundering_herd", herd);
	cs_figures_share(f, "tail_accept_share", cs_tail_accept_share(tail));
	cs_figures_count(f, "accepts", l->accepts);
	cs_figures_count(f, "eagain", l->eagain);
}

static void diagnose_herd(const struct cs_listener_stats *l, struct findings *list)
{
	if (!herd_seen(l))
		return;
	struct cs_figures *f = add(list, CS_FINDING_THUNDERING_HERD, l->port);
	if (!f)
		return;
	cs_figures_count(f, "eagain", l->eagain);
	cs_figures_ratio(f, "eagain_per_accept", share(l->eagain, l->accepts ? l->accepts : 1));
}

size_t cs_diagnose_tail(const struct cs_engine *engine, const struct cs_report_meta *meta,
			const struct cs_tail *tail, struct cs_finding *findings, size_t max)
{
	struct findings list = { .items = findings, .max = max };

	struct cs_figures *f;
	if (meta->events_lost && (f = add(&list, CS_FINDING_EVENTS_LOST, 0)))
		cs_figures_count(f, "events_lost", meta->events_lost);
	for (size_t i = 0; i < engine->listener_count; i++) {
		diagnose_backlog(&engine->listeners[i], meta, &list);
		diagnose_queued_unseen(engine, &engine->listeners[i], &list);
	}
	/* Slow accepts are named only where the tail feels them. */
	bool accepts_matter = !cs_tail_accept_path_negligible(tail);
	for (size_t i = 0; accepts_matter && i < engine->listener_count; i++)
		diagnose_acceptor(engine, &engine->listeners[i], &list);
	for (size_t i = 0; accepts_matter && i < engine->listener_count; i++)
		diagnose_fairness(&engine->listeners[i], &list);
	for (size_t i = 0; accepts_matter && i < engine->listener_count; i++)
		diagnose_herd(&engine->listeners[i], &list);
	for (size_t i = 0; !accepts_matter && i < engine->listener_count; i++)
		diagnose_negligible(&engine->listeners[i], tail, &list);
	if (meta->netstat.valid && meta->netstat.syncookies_sent && (f = add(&list, CS_FINDING_SYN_COOKIES, 0)))
		cs_figures_count(f, "syncookies_sent", meta->netstat.syncookies_sent);
	return list.count;
}
