/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One HTTP/1.1 connection: all of its state in one struct, driven by
 * edge-triggered epoll events and by its one timer.
 *
 *   READING ──request──> WRITING ──done, keep-alive──> READING
 *      │  └──/sleep────> SLEEPING ──timer──> WRITING
 *      └──error (400/408/413/501)──> WRITING ──done──> LINGERING or closed
 *
 * The socket is registered once for EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET and
 * never modified: can_read/can_write remember the last edge until a
 * read/write says EAGAIN, so a state that does not read right now (a
 * sleeping request) does not make the loop spin the way level-triggered
 * EPOLLIN would.
 */
#ifndef CS_CONN_H
#define CS_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "timer_heap.h"
#include "worker.h"

/* Status line, fields and small bodies; large bodies are not copied. */
#define CS_CONN_OUT_BYTES 512

enum cs_conn_state {
	CS_CONN_READING,   /* waiting for (the rest of) a request header */
	CS_CONN_SLEEPING,  /* /sleep: the timer will start the response */
	CS_CONN_WRITING,   /* a response is in flight */
	CS_CONN_LINGERING, /* write side shut after the last response; reading
			    * and dropping what the client still sends, so that
			    * our close() does not turn into an RST that could
			    * destroy that response at the client */
};

struct cs_conn {
	struct cs_handle handle; /* first: epoll's data.ptr points here */
	struct cs_worker *worker;
	enum cs_conn_state state;
	struct cs_timer timer; /* the one deadline of the current state */
	struct cs_conn *live_prev, *live_next;
	struct cs_conn *ready_prev, *ready_next;
	bool ready_queued;

	bool can_read;    /* an EPOLLIN edge since the last EAGAIN */
	bool can_write;   /* an EPOLLOUT edge since the last EAGAIN */
	bool peer_eof;    /* read() returned 0 */
	bool close_after; /* close once the current response is out */
	bool failed;      /* the current response is an error */
	bool head_only;   /* HEAD: fields only, no body */
	bool split_write; /* /split: the body in a write of its own */

	uint32_t requests_served;
	uint64_t header_start_ns; /* connect, or first byte of this request */
	uint64_t idle_since_ns;   /* last response finished */
	uint64_t wake_ns;         /* SLEEPING: when to answer */
	uint32_t sleep_ms;
	uint64_t progress_ns; /* WRITING: last byte sent */
	uint64_t linger_until_ns;

	/* Request side: bytes read but not consumed yet. */
	uint64_t body_to_discard; /* request body bytes still to skip */
	uint32_t parsed_len;      /* the parser's last_len */
	uint32_t in_len;
	uint32_t in_cap;

	/* Response side: out[] then body_len bytes of the static pattern. */
	uint32_t out_len;
	uint32_t out_off;
	uint64_t body_len;
	uint64_t body_off;
	char out[CS_CONN_OUT_BYTES];

	char in[]; /* in_cap (--max-header-bytes) bytes */
};

static inline struct cs_conn *cs_conn_of_timer(struct cs_timer *timer)
{
	return (struct cs_conn *)((char *)timer - offsetof(struct cs_conn, timer));
}

/* Takes an accepted, non-blocking fd. On failure the fd is closed. */
void cs_conn_open(struct cs_worker *w, int fd);

void cs_conn_on_event(struct cs_conn *c, uint32_t events);
void cs_conn_on_timer(struct cs_conn *c);
/* Runs the state machine until it must wait for the socket or a timer. */
void cs_conn_drive(struct cs_conn *c);
/* Closes at once, without a response (shutdown, peer gone). */
void cs_conn_close(struct cs_conn *c);

/* ---- for the handlers: set up the response to the current request ---- */

/* A short text body (copied into out[]). */
void cs_conn_respond_text(struct cs_conn *c, int status, const char *text);
/* A body of n bytes taken from the static pattern buffer. */
void cs_conn_respond_pattern(struct cs_conn *c, uint64_t n);
/* Answer only after ms milliseconds, without blocking the loop. */
void cs_conn_respond_later(struct cs_conn *c, uint32_t ms);
/* An error response after which the connection is closed. */
void cs_conn_fail(struct cs_conn *c, int status);

/* ---- for the worker ---- */

/* Drives the connections deferred in the previous turn. */
void cs_conn_run_ready(struct cs_worker *w);
/* Closes every connection (shutdown) and frees the recycled structs. */
void cs_conn_close_all(struct cs_worker *w);

/* Fills the static body pattern; once, before the workers start. */
void cs_conn_init_pattern(void);

#endif /* CS_CONN_H */
