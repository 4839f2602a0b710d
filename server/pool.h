/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --accept pool: the thread-pool architecture of Tomcat's NIO connector.
 * One thread (cs-acceptor) blocks in accept4() and registers each
 * connection with the poller's epoll set; one thread (cs-poller) waits in
 * epoll_wait() and queues every ready connection; --workers pool threads
 * (cs-pool-N) take connections off the queue, read the request, serve it
 * (a /block request blocks the pool thread) and hand the connection back
 * to the poller. When every pool thread is busy, ready requests wait in
 * the queue: pool saturation, reproduced on demand.
 *
 * --accept prefork: the same pool threads (cs-prefork-N) accept for
 * themselves, each serving one connection at a time, as gunicorn's sync
 * workers and Apache's prefork MPM do; with every thread serving, new
 * connections wait in the listen queue.
 */
#ifndef CS_POOL_H
#define CS_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct cs_pool_conn;

struct cs_pool {
	const struct cs_config *cfg;
	int listen_fd; /* blocking */
	int epoll_fd;  /* the poller's; connections are EPOLLONESHOT */
	int wake_fd;   /* eventfd: wakes the poller at shutdown */
	pthread_t acceptor, poller;
	pthread_t threads[CS_MAX_WORKERS];
	int thread_count; /* pool threads started */
	bool acceptor_started, poller_started;
	bool prefork; /* --accept prefork: the threads accept, no acceptor or poller */

	/* Ready connections, FIFO: the poller pushes, pool threads pop. */
	pthread_mutex_t lock;
	pthread_cond_t ready;
	int *queue;
	size_t queue_head, queue_len, queue_cap;

	struct cs_pool_conn **conns; /* by fd: a request's bytes across hand-offs */
	size_t conn_slots;

	_Atomic uint64_t accepted, requests, queued_max;
};

/* Starts the acceptor, the poller and the pool threads on listen_fd.
 * Returns 0, or -1 with a message in err (what started is stopped by
 * cs_pool_stop). */
int cs_pool_start(struct cs_pool *p, const struct cs_config *cfg, int listen_fd,
		  char *err, size_t err_len);
/* Stops and joins every thread and closes the connections; cs_stop_requested
 * must be set first. */
void cs_pool_stop(struct cs_pool *p);

#endif /* CS_POOL_H */
