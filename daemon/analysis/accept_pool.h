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

#endif /* CS_ACCEPT_POOL_H */
