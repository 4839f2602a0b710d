// SPDX-License-Identifier: BSD-2-Clause
/*
 * Accept pools (accept_pool.h): which accepting threads serve what they
 * accept, how busy serving they were, and the server they belong to.
 */
#include "accept_pool.h"

#include <string.h>

#include "tail.h"

/*
 * A worker busy serving at least this share of its time away from
 * accept() is "busy": a gunicorn sync worker held by a 40 ms handler
 * serves nearly all of it; one stopped by a JVM pause serves ~0.
 */
#define WORKER_BUSY_SHARE_MIN 0.5

static double fraction(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

static uint64_t at_most(uint64_t value, uint64_t cap)
{
	return value < cap ? value : cap;
}

/*
 * A thread that serves what it accepts, one connection at a time: it read
 * requests, blocking (no thread of its process polls), and took none from
 * a poll of its own or another's. An event loop that accepts serves many
 * connections at once, and a trace without the epoll path's records
 * cannot tell one from the other: neither is taken for a pool worker.
 */
static bool serves_what_it_accepts(const struct cs_thread_stats *t)
{
	if (!t || !t->requests || t->handed_requests * 2 >= t->requests)
		return false;
	unsigned roles = cs_thread_roles(t);
	return (roles & CS_ROLE_WORKER) && !(roles & (CS_ROLE_POLLER | CS_ROLE_EVENT_LOOP));
}

/* The server a pool process belongs to, by its name: the advice speaks its settings. */
enum cs_pool_server cs_pool_server_of(const char *comm)
{
	static const struct {
		const char *prefix;
		enum cs_pool_server server;
	} names[] = {
		{ "gunicorn", CS_POOL_SERVER_GUNICORN }, { "apache2", CS_POOL_SERVER_APACHE },
		{ "httpd", CS_POOL_SERVER_APACHE },      { "php-fpm", CS_POOL_SERVER_PHP_FPM },
		{ "uwsgi", CS_POOL_SERVER_UWSGI },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strncmp(comm, names[i].prefix, strlen(names[i].prefix)))
			return names[i].server;
	return CS_POOL_SERVER_OTHER;
}

/* The test cs_listener_accept_pool applies to each of a listener's accepting threads. */
bool cs_accept_pool_worker(const struct cs_engine *engine, const struct cs_worker_stats *w)
{
	return w->accepts && serves_what_it_accepts(cs_u64map_get(&engine->threads, w->tid));
}

struct serving_sums {
	uint64_t on_cpu_ns, runq_ns, blocked_ns;
	bool cpu_known;
};

/* One worker's time away from accept(), and what its serving was. */
static void add_worker(const struct cs_engine *engine, const struct cs_worker_stats *w,
		       const struct cs_thread_stats *t, struct cs_accept_pool *pool, struct serving_sums *sums)
{
	struct cs_acceptor_time time;
	cs_acceptor_time(engine, w, &time);
	uint64_t serving = at_most(t->serving_ns, time.outside_ns);
	pool->workers++;
	pool->accepts += w->accepts;
	pool->away_ns += time.outside_ns;
	pool->serving_ns += serving;
	if (fraction(serving, time.outside_ns) >= WORKER_BUSY_SHARE_MIN)
		pool->busy_workers++;
	uint64_t on_cpu = at_most(t->cpu_ns, time.outside_ns);
	uint64_t handler = at_most(cs_thread_in_handlers_ns(t), time.outside_ns);
	sums->cpu_known |= t->cpu_sampled_ns != 0;
	sums->on_cpu_ns += on_cpu;
	sums->runq_ns += at_most(t->runq_total_ns, time.outside_ns);
	/* A handler's time on a CPU is counted there already: the rest was off a CPU. */
	sums->blocked_ns += handler > on_cpu ? handler - on_cpu : 0;
	if (pool->server == CS_POOL_SERVER_OTHER)
		pool->server = cs_pool_server_of(w->comm);
}

bool cs_listener_accept_pool(const struct cs_engine *engine, const struct cs_listener_stats *l,
			     struct cs_accept_pool *pool)
{
	memset(pool, 0, sizeof(*pool));
	pool->server = CS_POOL_SERVER_OTHER;
	struct serving_sums sums = { 0 };
	for (size_t i = 0; i < l->worker_count; i++) {
		const struct cs_worker_stats *w = &l->workers[i];
		const struct cs_thread_stats *t = cs_u64map_get(&engine->threads, w->tid);
		if (w->accepts && serves_what_it_accepts(t))
			add_worker(engine, w, t, pool, &sums);
	}
	if (!pool->workers || pool->accepts * 2 <= l->accepts)
		return false;
	pool->busy_share = fraction(pool->serving_ns, pool->away_ns);
	pool->on_cpu_share = sums.cpu_known ? fraction(sums.on_cpu_ns, pool->away_ns) : -1.0;
	pool->runq_share = fraction(sums.runq_ns, pool->away_ns);
	pool->blocked_share = fraction(sums.blocked_ns, pool->away_ns);
	pool->queue_nonempty_share =
		l->backlog_samples ? fraction(l->backlog_nonempty_samples, l->backlog_samples) : -1.0;
	return true;
}

bool cs_accept_pool_saturated(const struct cs_accept_pool *pool)
{
	return pool->workers && pool->busy_workers == pool->workers;
}

/*
 * A hand-off pool is full when its threads served at least this share of
 * the time they served in (first read to last send): Apache's event MPM
 * workers held by a 40 ms handler serve ~99 % of it; a pool that sits
 * idle while an acceptor waits at a real limit serves little of it.
 */
#define HANDOFF_FULL_SHARE_MIN 0.5
/*
 * The acceptor waited, not worked, away from accept(): as a connection
 * limit's acceptor (limit.c's thresholds). One busy in handlers or on a
 * CPU is slow at accepting, which accept_contention says.
 */
#define ACCEPTOR_BLOCKED_SHARE_MIN 0.5
#define ACCEPTOR_HANDLER_SHARE_MAX 0.2
/* Accept-queue waits above 1 ms at p99 are visible in client tails. */
#define HELD_WAIT_P99_MIN_NS 1000000ull

bool cs_listener_held_by_handoff_pool(const struct cs_engine *engine, const struct cs_listener_stats *l,
				      const struct cs_limit_evidence *limit, struct cs_handoff_limit *pool)
{
	struct cs_pool_scan scan;
	if (!limit->acceptor_tid || cs_hist_percentile(l->accept_wait_ns, 99.0) < HELD_WAIT_P99_MIN_NS)
		return false;
	bool waited = limit->handler_share <= ACCEPTOR_HANDLER_SHARE_MAX &&
		      (limit->blocked_share < 0 || limit->blocked_share >= ACCEPTOR_BLOCKED_SHARE_MIN);
	if (!waited)
		return false;
	cs_scan_pool(engine, &scan);
	double busy = cs_pool_busy_share(&scan);
	if (!scan.threads || scan.poller_tid != limit->acceptor_tid || busy < HANDOFF_FULL_SHARE_MIN)
		return false;
	if (pool)
		*pool = (struct cs_handoff_limit){
			.pool_threads = scan.threads, .busy_share = busy,
			.server = cs_pool_server_of(limit->acceptor_comm),
		};
	return true;
}
