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
 *   due (intended_ns) -> [connect [-> TLS handshake]] -> send -> read until
 *   the response is complete -> record latency = done - intended.
 *
 * With --tls every read and write of a connection goes through its SSL
 * (csload_tls.c: conn_read(), conn_write()), and the response parser is
 * fed the decrypted bytes.
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
#include <sys/types.h>

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
	PH_HANDSHAKE,  /* --tls: connected, TLS handshake in progress */
	PH_SENDING,    /* connected, request partly written */
	PH_WAITING,    /* request sent, reading the response */
	PH_RETIRED,    /* closed loop: no more requests for this slot */
};

struct ssl_st; /* OpenSSL's SSL */

struct slot {
	int fd;                /* -1 when not connected */
	struct ssl_st *ssl;    /* --tls: the connection's TLS, NULL without one */
	bool tls_fatal;        /* a fatal TLS error: no close_notify at the close */
	uint32_t again_events; /* what the last conn_read/conn_write that could
				* not go on waits for: EPOLLIN or EPOLLOUT */
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
	uint64_t handshake_start_ns; /* --tls: the TCP connect's end */
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
/* Sets the slot's epoll interest (EPOLLIN, EPOLLOUT). 0 or -errno. */
int watch(struct csl_worker *w, struct slot *s, uint32_t events);
/* The request failed: counted, the connection dropped. Never retried. */
void fail_request(struct csl_worker *w, struct slot *s, enum csl_err kind, uint64_t now);
void connect_failed(struct csl_worker *w, struct slot *s, int err, enum csl_err kind,
		    uint64_t now);
void connected(struct csl_worker *w, struct slot *s, uint64_t now);
void try_send(struct csl_worker *w, struct slot *s);
/* The response is whole; extra: bytes after it that no request asked for. */
void complete_response(struct csl_worker *w, struct slot *s, uint64_t now, size_t extra);

/* ---- csload_tls.c: a connection's bytes, plain or TLS */

/*
 * read() and send() on the slot's connection, through its SSL with --tls:
 * bytes (> 0), 0 at the end of the stream (the peer's close_notify or
 * FIN), or -1 with errno: EAGAIN when it must wait (s->again_events says
 * for what), ECONNRESET or EPIPE, EPROTO for a TLS error.
 */
ssize_t conn_read(struct slot *s, void *buf, size_t len);
ssize_t conn_write(struct slot *s, const void *buf, size_t len);
/* --tls: the TCP connect is done at `now`; starts the slot's handshake,
 * then its request once the handshake is done. */
void tls_start(struct csl_worker *w, struct slot *s, uint64_t now);
/* PH_HANDSHAKE: the socket is ready, the handshake goes on. */
void tls_handshake_step(struct csl_worker *w, struct slot *s);
/* The handshake failed (why: OpenSSL's reason, or "timed out"): counted
 * as a tls_handshake_errors request error; when no handshake ever
 * completed and every connection has tried, the run stops. */
void tls_handshake_failed(struct csl_worker *w, struct slot *s, const char *why, uint64_t now);
/* Sends close_notify (counted) unless a TLS error was fatal or the
 * handshake unfinished, and frees the SSL. */
void tls_close(struct csl_worker *w, struct slot *s);

/* ---- csload_events.c: what epoll and the timers report */

void on_event(struct csl_worker *w, struct slot *s, uint32_t ev);
/* Runs the slots' timers that are due by now. */
void run_timers(struct csl_worker *w, uint64_t now);

/* ---- csload_net.c */

/* Writes the --log lines buffered so far. */
void log_flush(struct csl_worker *w);

#endif /* CSLOAD_WORKER_H */
