/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Pools whose queue is the listen backlog: threads or processes that each
 * accept a connection and serve it before they accept again (gunicorn's
 * sync workers, Apache's prefork MPM, uWSGI, PHP-FPM, csserver --accept
 * prefork). Such a thread is away from accept() while it serves, so a
 * connection waits in the queue exactly when every one of them is away:
 * serving (the pool is saturated) or held by something else. Pure:
 * computed from the engine's listeners and threads.
 */
#ifndef CS_ACCEPT_POOL_H
#define CS_ACCEPT_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "kinds.h"

struct cs_accept_pool {
	uint32_t workers;        /* accepting threads that serve what they accept */
	uint32_t busy_workers;   /* of which served most of their time away from accept() */
	uint64_t accepts;        /* the workers' accepts: a pool listener when most of its accepts */
	uint64_t away_ns;        /* the workers' time outside accept(), summed */
	uint64_t serving_ns;     /* of which serving requests (first read to last send) */
	/* What the serving was, over away_ns: shares (0 when away_ns is). */
	double busy_share;       /* serving_ns / away_ns */
	double on_cpu_share;     /* -1: CPU time not sampled */
	double runq_share;       /* waiting for a CPU */
	double blocked_share;    /* in handlers, off a CPU (sleeping, waiting on I/O) */
	double queue_nonempty_share; /* the listener's backlog samples that found it non-empty; -1: none */
	enum cs_pool_server server;  /* told from the workers' process name */
};

/*
 * The accept pool of listener l: false when no accepting thread serves
 * what it accepts, or such threads took at most half of its accepts.
 */
bool cs_listener_accept_pool(const struct cs_engine *engine, const struct cs_listener_stats *l,
			     struct cs_accept_pool *pool);

/* Worker w of a listener is one of its accept pool's (if it has one): it serves what it accepts. */
bool cs_accept_pool_worker(const struct cs_engine *engine, const struct cs_worker_stats *w);

/* Every worker of the pool served most of its time away from accept(). */
bool cs_accept_pool_saturated(const struct cs_accept_pool *pool);

/* The server a pool's process belongs to, from its name ("apache2", "gunicorn: worker"). */
enum cs_pool_server cs_pool_server_of(const char *comm);

/*
 * A listener held by the acceptor's own hand-off pool, full: the thread
 * that accepts also polls and hands ready connections to a pool (Apache's
 * event MPM: each child's listener thread), and stops accepting while
 * none of the pool's threads is free. Connections waited in its accept
 * queue (p99 at least 1 ms) while the acceptor waited, not worked, away
 * from accept(), the acceptor is the pool's poller, and the pool's
 * threads served most of the time they served in: the wait was for a
 * pool thread, and a connection limit it seemed to hold (waits that end
 * with closes) was the pool's. With the pool idle, or an acceptor that
 * hands nothing on (nginx, Tomcat's Acceptor), a limit stays a limit.
 * limit: the listener's (cs_listener_limit), for its acceptor.
 */
struct cs_handoff_limit {
	uint32_t pool_threads;   /* the threads the acceptor handed ready requests to */
	double busy_share;       /* their serving time over the time they served */
	enum cs_pool_server server; /* told from the acceptor's process name */
};
bool cs_listener_held_by_handoff_pool(const struct cs_engine *engine, const struct cs_listener_stats *l,
				      const struct cs_limit_evidence *limit, struct cs_handoff_limit *pool);

#endif /* CS_ACCEPT_POOL_H */
