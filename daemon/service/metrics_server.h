/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A minimal HTTP endpoint for Prometheus: GET (or HEAD) /metrics and
 * nothing else, on loopback unless told otherwise, in a thread of its own.
 *
 * One epoll loop serves every connection at once, so no client waits on
 * another: a scrape is answered while hundreds of idle, half-sent or
 * slow-reading connections are held. Each connection has a deadline for
 * what it owes (a request whole, an answer taken, the next request on a
 * kept-alive connection); at the cap the oldest idle connection makes
 * room. Anything but a well-formed GET /metrics gets 400/404/405/431 as
 * soon as the bytes show it, and a close. The engine's lock is held only
 * while rendering into memory, never while a client is waited on.
 */
#ifndef CS_METRICS_SERVER_H
#define CS_METRICS_SERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "run_meta.h"

struct cs_metrics_conn;

struct cs_metrics_server {
	int listen_fd;
	int epoll_fd;
	pthread_t thread;
	bool running;
	volatile int stop;
	pthread_mutex_t *engine_lock;      /* held while rendering, never while a client is waited on */
	const struct cs_engine *engine;
	const struct cs_report_meta *meta;
	const char *target;
	struct cs_metrics_conn **conns;    /* conns_max slots, the first conn_count in use */
	size_t conn_count, conns_max;
	uint64_t accept_paused_until_ns;   /* out of descriptors with none to free: accept again then */
	/* the metrics thread's only; read after it stops */
	uint64_t scrapes;
	uint64_t rejected;                 /* malformed, oversized or other requests */
	uint64_t evicted;                  /* closed at the cap to make room, the oldest idle first */
	uint64_t timed_out;                /* closed at a deadline */
};

/* Bind and start serving; on failure a one-line message in errmsg. */
int cs_metrics_server_start(struct cs_metrics_server *server, const char *address,
			    pthread_mutex_t *engine_lock, const struct cs_engine *engine,
			    const struct cs_report_meta *meta, const char *target,
			    char *errmsg, size_t errlen);

/* Stop the thread (within LOOP_WAKE_MS), close every connection and the socket. */
void cs_metrics_server_stop(struct cs_metrics_server *server);

#endif /* CS_METRICS_SERVER_H */
