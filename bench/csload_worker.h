/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One csload worker: an epoll loop over its connection slots. Its state,
 * shared by the files that make it up: csload_net.c (the loop, the
 * worker's life), csload_slot.c (a slot's requests), csload_events.c
 * (what epoll and the timers report). Not for the rest of csload:
 * csload_net.h is.
 *
 * A slot is one client connection (or, with --no-keepalive, the place of
 * one: a new connection per request). A request's life:
 *
 *   due (intended_ns) -> [connect] -> send -> read until the response is
 *   complete -> record latency = done - intended.
 *
 * Closed loop: a slot issues its next request when the previous one is done
 * (+ --gap-ms). Open loop: requests fall due on a fixed schedule and each is
 * handed to the longest-idle slot; when no slot is idle, it waits, and the
 * wait is part of its latency (no coordinated omission).
 *
 * A slot has at most one timer (gap end, connect timeout or response
 * timeout), kept in an indexed heap; the heap's earliest deadline arms one
 * timerfd, so the loop wakes with nanosecond precision.
 */
#ifndef CSLOAD_WORKER_H
#define CSLOAD_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "csload_http.h"
#include "csload_net.h"
#include "csload_stats.h"
#include "csload_timer.h"

#define SCRATCH_SIZE 65536
#define CARRY_SIZE CSL_HTTP_MAX_HEADER
#define LOG_BUF_SIZE 65536

enum phase {
	PH_IDLE,       /* no request; connected or not. Open loop: in the idle queue */
	PH_GAP,        /* closed loop: waiting --gap-ms before the next request */
	PH_CONNECTING, /* request due, non-blocking connect in progress */
	PH_SENDING,    /* connected, request partly written */
	PH_WAITING,    /* request sent, reading the response */
	PH_RETIRED,    /* closed loop: no more requests for this slot */
};

struct slot {
	int fd; /* -1 when not connected */
	unsigned int id;
	enum phase phase;
	uint32_t events;     /* registered epoll interest, 0 if none */
	bool ever_connected; /* the next connect is a reconnect */
	bool got_byte;       /* a response byte arrived */
	uint16_t local_port;
	unsigned int path;
	size_t written;
	uint64_t intended_ns;
	uint64_t began_ns; /* the client actually started on the request */
	uint64_t connect_start_ns;
	uint64_t sent_ns;
	uint64_t sent_run_delay_ns; /* the thread's run_delay then (busy-poll) */
	struct csl_http_resp resp;
	char *carry; /* unconsumed bytes of a partial head or line */
	size_t carry_len;
};

struct csl_worker {
	struct csl_run *run;
	const struct csl_config *cfg;
	unsigned int index;
	unsigned int nslots;
	struct slot *slots;
	int epfd;
	int tfd;
	uint64_t tfd_armed; /* current timerfd deadline, 0 when disarmed */
	struct csl_timers timers;
	struct csl_stats stats;
	uint64_t rng;
	char scratch[SCRATCH_SIZE];

	unsigned int inflight;   /* slots with a request in progress */
	unsigned int retired;    /* closed loop: slots done */
	uint64_t spin_ns;        /* --spin-us */
	bool stopping;           /* no more requests will be issued */
	uint64_t stop_ns;        /* when issuing stopped */
	uint64_t drain_deadline; /* in-flight requests left then are unfinished */
	uint64_t last_done_ns;

	/* open loop */
	bool open;
	uint64_t quota;     /* requests for this worker; UINT64_MAX: time only */
	uint64_t next_k;    /* the next request of this worker's schedule */
	unsigned int *idle; /* FIFO ring of idle slot ids; closed loop: ready
				  * to issue their next request */
	unsigned int idle_head, idle_count;

	char *logbuf;
	size_t loglen;
	int schedstat_fd; /* /proc/thread-self/schedstat, busy-poll only; -1 */
};

static inline uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- csload_slot.c: a slot's requests */

/* Starts a request intended at `intended` on slot s: connects first if
 * it has no connection. */
void start_request(struct csl_worker *w, struct slot *s, uint64_t intended, uint64_t now);
/* Closed loop: the slot's next request, or its retirement. */
void closed_issue(struct csl_worker *w, struct slot *s, uint64_t now);
/* Closed loop: the slot sends no more requests. */
void retire(struct csl_worker *w, struct slot *s);
/* The queue of idle slots (open loop) or of slots ready to issue (closed). */
void idle_push(struct csl_worker *w, struct slot *s);
struct slot *idle_pop(struct csl_worker *w);
void close_conn(struct csl_worker *w, struct slot *s);
/* The request failed: counted, the connection dropped. Never retried. */
void fail_request(struct csl_worker *w, struct slot *s, enum csl_err kind, uint64_t now);
void connect_failed(struct csl_worker *w, struct slot *s, int err, enum csl_err kind,
		    uint64_t now);
void connected(struct csl_worker *w, struct slot *s, uint64_t now);
void try_send(struct csl_worker *w, struct slot *s);
/* The response is whole; extra: bytes after it that no request asked for. */
void complete_response(struct csl_worker *w, struct slot *s, uint64_t now, size_t extra);

/* ---- csload_events.c: what epoll and the timers report */

void on_event(struct csl_worker *w, struct slot *s, uint32_t ev);
/* Runs the slots' timers that are due by now. */
void run_timers(struct csl_worker *w, uint64_t now);

/* ---- csload_net.c */

/* Writes the --log lines buffered so far. */
void log_flush(struct csl_worker *w);

#endif /* CSLOAD_WORKER_H */
