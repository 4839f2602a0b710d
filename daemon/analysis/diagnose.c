// SPDX-License-Identifier: BSD-2-Clause
/*
 * Diagnosis of the accept path: turns a listener's statistics into findings
 * an operator can act on. Each threshold is named and explained here; the
 * numbers quoted in a finding are the evidence.
 */
#include "diagnose.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "accept_pool.h"
#include "tail.h"
#include "units.h"

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

/*
 * The kind's advice, with note where it says "%s". Spliced, not used as a
 * printf format: the table's text stays plain text.
 */
static void advise(struct cs_finding *finding, const char *note)
{
	const char *advice = cs_finding_advice(finding->kind);
	const char *at = strstr(advice, "%s");
	if (!at)
		snprintf(finding->advice, sizeof(finding->advice), "%s", advice);
	else
		snprintf(finding->advice, sizeof(finding->advice), "%.*s%s%s", (int)(at - advice), advice,
			 note, at + 2);
}

/* A finding of kind, its text from fmt, its advice from the table; NULL when the list is full. */
__attribute__((format(printf, 4, 5)))
static struct cs_finding *add(struct findings *list, enum cs_finding_kind kind, uint16_t port,
			      const char *fmt, ...)
{
	if (list->count >= list->max)
		return NULL;
	struct cs_finding *finding = &list->items[list->count++];
	memset(finding, 0, sizeof(*finding));
	finding->kind = kind;
	finding->code = cs_finding_name(kind);
	finding->port = port;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(finding->text, sizeof(finding->text), fmt, ap);
	va_end(ap);
	advise(finding, "");
	return finding;
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

static void diagnose_backlog(const struct cs_listener_stats *l, const struct cs_report_meta *meta,
			     struct findings *list)
{
	uint64_t drops = cs_listener_drops_seen(l, meta);
	double full_share = share(l->backlog_full_samples, l->backlog_samples);
	if (drops == 0 && full_share < BACKLOG_FULL_SHARE_MIN)
		return;

	/* Evidence from local clients, where there were any. */
	char delayed[160] = "";
	if (l->handshakes_delayed_1s) {
		char max[32];
		cs_format_duration(max, sizeof(max), l->handshake_extra_ns->max);
		snprintf(delayed, sizeof(delayed),
			 "; %llu local connection(s) waited >= 1 s for SYN retransmits (max %s)",
			 (unsigned long long)l->handshakes_delayed_1s, max);
	}
	if (l->handshakes_failed) {
		size_t used = strlen(delayed);
		snprintf(delayed + used, sizeof(delayed) - used,
			 "; %llu local connection(s) never got in: their clients gave up while still retrying the SYN",
			 (unsigned long long)l->handshakes_failed);
	}
	struct cs_finding *f = add(list, CS_FINDING_BACKLOG_FULL, l->port,
		"backlog full %.0f%% of the time (limit %u) with %llu SYN(s) dropped%s",
		full_share * 100.0, l->backlog_limit, (unsigned long long)drops, delayed);
	if (f && meta->netstat.valid && meta->netstat.syncookies_sent)
		advise(f, "; SYN cookies were sent too");
}

/* The server stopped accepting at its connection limit: raising accept throughput changes nothing. */
static void diagnose_limit(const struct cs_listener_stats *l, const struct cs_limit_evidence *e,
			   struct findings *list)
{
	char p50[32], p99[32], plateau[32], blocked[48] = "";
	cs_format_duration(p50, sizeof(p50), cs_hist_percentile(l->accept_wait_ns, 50.0));
	cs_format_duration(p99, sizeof(p99), cs_hist_percentile(l->accept_wait_ns, 99.0));
	cs_format_duration(plateau, sizeof(plateau), e->plateau_ns);
	if (e->blocked_share >= 0)
		snprintf(blocked, sizeof(blocked), "blocked %.0f%%, on a CPU %.0f%%, ",
			 e->blocked_share * 100.0, e->on_cpu_share * 100.0);
	add(list, CS_FINDING_CONNECTION_LIMIT, l->port,
		"the server stopped accepting at its connection limit: with %u connection(s) open (held "
		"there %s) its acceptor %s (tid %u) did not call accept() and was blocked, not busy "
		"(%sin handlers %.0f%% of its time outside accept()); %.0f%% of the time connections "
		"queued for it ended right after a connection closed (%llu waits), freed by %llu idle close(s) by the server, %llu by "
		"clients, %llu other; accept wait p50 %s, p99 %s",
		e->open_connections, plateau, e->acceptor_comm, e->acceptor_tid, blocked,
		e->handler_share * 100.0, e->wait_share * 100.0, (unsigned long long)e->waits,
		(unsigned long long)e->freed_by[CS_FREED_BY_IDLE_CLOSE],
		(unsigned long long)e->freed_by[CS_FREED_BY_CLIENT],
		(unsigned long long)e->freed_by[CS_FREED_BY_OTHER], p50, p99);
}

/* "; between accepts: on a CPU 5%, in handlers 0%, sleeping or blocked 95%", when known. */
static const char *acceptor_state(const struct cs_engine *engine, const struct cs_worker_stats *worker)
{
	static _Thread_local char text[160];
	struct cs_acceptor_time time;
	cs_acceptor_time(engine, worker, &time);
	text[0] = '\0';
	if (time.cpu_known && time.outside_ns)
		snprintf(text, sizeof(text), "; outside accept() it was on a CPU %.0f%%, in handlers %.0f%%, "
			 "waiting for a CPU %.0f%%, sleeping or blocked %.0f%%",
			 share(time.on_cpu_ns, time.outside_ns) * 100.0,
			 share(time.handler_ns, time.outside_ns) * 100.0,
			 share(time.runq_ns, time.outside_ns) * 100.0,
			 share(time.blocked_ns, time.outside_ns) * 100.0);
	return text;
}

/* "on a CPU 5%, waiting for a CPU 1%, blocked in handlers 94%": what the pool's serving was. */
static const char *pool_state(const struct cs_accept_pool *pool)
{
	static _Thread_local char text[128];
	char cpu[32] = "";
	if (pool->on_cpu_share >= 0)
		snprintf(cpu, sizeof(cpu), "on a CPU %.0f%%, ", pool->on_cpu_share * 100.0);
	snprintf(text, sizeof(text), "%swaiting for a CPU %.0f%%, blocked off a CPU in handlers %.0f%%", cpu,
		 pool->runq_share * 100.0, pool->blocked_share * 100.0);
	return text;
}

/* "; queue non-empty in 81% of samples", when the listener was sampled. */
static const char *queue_seen(double nonempty_share)
{
	static _Thread_local char text[48];
	text[0] = '\0';
	if (nonempty_share >= 0)
		snprintf(text, sizeof(text), "; queue non-empty in %.0f%% of samples", nonempty_share * 100.0);
	return text;
}

/* "; 1 of 2 workers that accept and serve were busy serving ...": the pool was not what held them. */
static const char *pool_not_busy(const struct cs_accept_pool *pool)
{
	static _Thread_local char text[224];
	snprintf(text, sizeof(text), "; %u of %u workers that accept and serve their own connections were busy, "
		 "serving %.0f%% of their time away from accept(): something else held them (%s)",
		 pool->busy_workers, pool->workers, pool->busy_share * 100.0, pool_state(pool));
	return text;
}

/* Every worker that accepts was serving: connections wait for a free worker in the backlog. */
static void diagnose_pool_full(const struct cs_listener_stats *l, const struct cs_accept_pool *pool,
			       const char *p50, const char *p99, struct findings *list)
{
	add(list, CS_FINDING_ACCEPT_POOL_FULL, l->port,
		"connections waited in the accept queue for a free worker: %u of %u workers that accept "
		"and serve their own connections were busy, serving %.0f%% of their time away from accept()%s; "
		"accept wait p50 %s, p99 %s; their time away: %s",
		pool->busy_workers, pool->workers, pool->busy_share * 100.0, queue_seen(pool->queue_nonempty_share),
		p50, p99, pool_state(pool));
}

static void diagnose_acceptor(const struct cs_engine *engine, const struct cs_listener_stats *l,
			      struct findings *list)
{
	/* A limit has its own minimum (a few waits of seconds each are plenty). */
	struct cs_limit_evidence limit;
	cs_listener_limit(engine, l, &limit);
	if (limit.flagged) {
		diagnose_limit(l, &limit, list);
		return;
	}
	uint64_t matched = l->accept_wait_ns->count;
	if (l->accepts < ACCEPTS_MIN || matched == 0)
		return;
	uint64_t p99_ns = cs_hist_percentile(l->accept_wait_ns, 99.0);
	if (p99_ns < ACCEPT_WAIT_P99_MIN_NS)
		return;

	char p50[32], p99[32];
	cs_format_duration(p50, sizeof(p50), cs_hist_percentile(l->accept_wait_ns, 50.0));
	cs_format_duration(p99, sizeof(p99), p99_ns);
	/* Workers that accept and serve: they are away from accept() while they serve. */
	struct cs_accept_pool pool;
	bool pool_seen = cs_listener_accept_pool(engine, l, &pool);
	if (pool_seen && cs_accept_pool_saturated(&pool)) {
		diagnose_pool_full(l, &pool, p50, p99, list);
		return;
	}
	double busy = share(l->backlog_nonempty_samples, l->backlog_samples);
	double mean_left = (double)l->backlog_at_accept_sum / (double)l->accepts;
	const struct cs_worker_stats *busiest = cs_listener_busiest_worker(l);
	double busiest_share = busiest ? share(busiest->accepts, l->accepts) : 0.0;

	double acceptor_busy = busiest ? cs_worker_busy_share(busiest) : 0.0;
	if (busiest && busiest_share >= SINGLE_ACCEPTOR_SHARE && acceptor_busy >= ACCEPTOR_BUSY_SHARE &&
	    (busy >= QUEUE_BUSY_SHARE || mean_left >= 1.0)) {
		add(list, CS_FINDING_ACCEPT_THREAD_BOTTLENECK, l->port,
			"the accept thread is the bottleneck: %s (tid %u) took %.0f%% of %llu accepts, was busy "
			"outside accept() %.0f%% of the time, and left %.1f connections waiting per accept "
			"(queue non-empty in %.0f%% of samples); accept wait p50 %s, p99 %s; it came back "
			"to accept() on its own schedule, not when connections closed (not a connection "
			"limit)%s",
			busiest->comm, busiest->tid, busiest_share * 100.0, (unsigned long long)l->accepts,
			acceptor_busy * 100.0, mean_left, busy * 100.0, p50, p99, acceptor_state(engine, busiest));
		return;
	}
	add(list, CS_FINDING_ACCEPT_QUEUE_WAIT, l->port,
		"connections wait in the accept queue: p50 %s, p99 %s (queue non-empty %.0f%% of the time)%s",
		p50, p99, busy * 100.0, pool_seen ? pool_not_busy(&pool) : "");
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
	size_t threads = l->worker_count;   /* threads that called accept() */
	if (!unfair_seen(l))
		return;
	const struct cs_worker_stats *busiest = cs_listener_busiest_worker(l);
	double busiest_share = share(busiest->accepts, l->accepts);
	double fair = 1.0 / (double)threads;
	add(list, CS_FINDING_UNFAIR_ACCEPTS, l->port,
		"one worker took %.0f%% of accepts: %s (tid %u) took %llu of %llu across %zu threads "
		"(a fair share is %.0f%%)",
		busiest_share * 100.0, busiest->comm, busiest->tid,
		(unsigned long long)busiest->accepts, (unsigned long long)l->accepts, threads, fair * 100.0);
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
	add(list, CS_FINDING_ACCEPT_NEGLIGIBLE, l->port,
		"%s%s%s: accept waits are %.1f%% of the tail's time (%llu accepts, %llu EAGAIN), no cause of it",
		unfair ? "one worker took most accepts" : "", unfair && herd ? "; " : "",
		herd ? "accept() calls found the queue empty" : "", cs_tail_accept_share(tail) * 100.0,
		(unsigned long long)l->accepts, (unsigned long long)l->eagain);
}

static void diagnose_herd(const struct cs_listener_stats *l, struct findings *list)
{
	if (!herd_seen(l))
		return;
	add(list, CS_FINDING_THUNDERING_HERD, l->port,
		"%llu accept() calls found the queue empty (%.2f per accepted connection): "
		"workers were woken for connections another worker took",
		(unsigned long long)l->eagain, share(l->eagain, l->accepts ? l->accepts : 1));
}

size_t cs_diagnose_tail(const struct cs_engine *engine, const struct cs_report_meta *meta,
			const struct cs_tail *tail, struct cs_finding *findings, size_t max)
{
	struct findings list = { .items = findings, .max = max };

	if (meta->events_lost)
		add(&list, CS_FINDING_EVENTS_LOST, 0,
		    "%llu event(s) could not be recorded (ring buffer full): figures are a lower bound",
		    (unsigned long long)meta->events_lost);
	for (size_t i = 0; i < engine->listener_count; i++)
		diagnose_backlog(&engine->listeners[i], meta, &list);
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
	if (meta->netstat.valid && meta->netstat.syncookies_sent)
		add(&list, CS_FINDING_SYN_COOKIES, 0,
		    "the kernel sent %llu SYN cookie(s): the SYN queue overflowed, and clients may "
		    "believe they are connected while their data is dropped",
		    (unsigned long long)meta->netstat.syncookies_sent);
	return list.count;
}
