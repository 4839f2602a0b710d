/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A worker: one thread (csw-N) with its own epoll loop, its connections,
 * its timer heap and its statistics. Nothing in it is shared with other
 * threads except the hand-off inbox (acceptor mode) and the wake eventfd.
 */
#ifndef CS_WORKER_H
#define CS_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "timer_heap.h"

/* What epoll_event.data.ptr points at; the first member of its owner. */
enum cs_handle_kind {
	CS_HANDLE_LISTENER,
	CS_HANDLE_WAKE,
	CS_HANDLE_CONN,
};

struct cs_handle {
	enum cs_handle_kind kind;
	int fd;
};

struct cs_conn;

struct cs_worker_stats {
	uint64_t accepted;        /* connections accepted by (or handed to) it */
	uint64_t accept_eagain;   /* woken for the listener, but another took it */
	uint64_t accept_errors;   /* EMFILE and the like */
	uint64_t requests;        /* responses sent in full */
	uint64_t bad_requests;    /* 400, 413, 501 */
	uint64_t header_timeouts; /* 408 */
	uint64_t idle_closes;     /* closed by --idle-timeout-ms */
	uint64_t resets;          /* the peer reset or vanished mid-connection */
};

struct cs_worker {
	int id;
	const struct cs_config *cfg;
	pthread_t thread;
	bool started;
	int epoll_fd;
	struct cs_handle wake;     /* eventfd: a hand-off or a stop request */
	struct cs_handle listener; /* fd -1 in acceptor mode */
	bool listener_armed;       /* in epoll now (not paused after EMFILE) */
	uint64_t accept_resume_ns; /* when a paused listener is re-armed */
	uint64_t now_ns;           /* cached per loop turn, refreshed after blocking */

	struct cs_timer_heap timers;
	struct cs_conn *live;       /* every open connection (doubly linked) */
	struct cs_conn *ready_head; /* connections that ran out of budget, FIFO */
	struct cs_conn *ready_tail;
	uint32_t ready_count;
	struct cs_conn *free_conns; /* recycled structs, to spare malloc */
	uint32_t free_count;

	char date[40]; /* "Date: ..." field, refreshed each second */
	uint64_t date_next_ns;

	/* Hand-off inbox, filled by the acceptor thread. */
	pthread_mutex_t inbox_lock;
	int *inbox;
	size_t inbox_head;
	size_t inbox_len;
	size_t inbox_cap;

	struct cs_worker_stats stats;
};

/* Set by main on SIGTERM/SIGINT; every loop checks it once per turn. */
extern atomic_bool cs_stop_requested;
/* Set to non-zero by a thread that hit a fatal error; main exits with it. */
extern atomic_int cs_exit_code;

/* Creates the epoll set and the eventfd and registers listen_fd (-1 for
 * none). Returns 0, or -1 with a message in err. */
int cs_worker_init(struct cs_worker *w, int id, const struct cs_config *cfg,
		   int listen_fd, char *err, size_t err_len);
int cs_worker_start(struct cs_worker *w, char *err, size_t err_len);
/* Wakes the worker's epoll_wait (to see cs_stop_requested). */
void cs_worker_wake(struct cs_worker *w);
/* Queues an accepted fd for the worker (acceptor thread). On failure the
 * caller still owns fd. Returns 0 or -ENOMEM. */
int cs_worker_hand_off(struct cs_worker *w, int fd);
void cs_worker_join(struct cs_worker *w);
/* Closes everything the worker still holds. */
void cs_worker_destroy(struct cs_worker *w);

/* Pauses before an accept call, for --accept-delay-us. */
void cs_accept_delay(const struct cs_config *cfg);
/* The back-off after EMFILE & co, as nginx's accept_mutex_delay. */
#define CS_ACCEPT_PAUSE_MS 100

/* Reports a failed accept. Returns true if the error means "out of fds or
 * memory", after which the caller backs off (CS_ACCEPT_PAUSE_MS) instead
 * of retrying. */
bool cs_accept_failed(int err, int worker_id);

/* Asks the whole process to stop with exit code 1 after a fatal error. */
void cs_fatal_stop(void);

#endif /* CS_WORKER_H */
