// SPDX-License-Identifier: BSD-2-Clause
/*
 * A connection's state machine (conn.h draws it): reading and parsing
 * requests, timers, lingering, open and close. The responses, formatted
 * and written, are conn_response.c's.
 */
#include "conn.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "conn_internal.h"
#include "conn_limit.h"
#include "handlers.h"
#include "http_parse.h"
#include "log.h"

#define DRIVE_BUDGET 64              /* steps per wake-up before others get a turn */
#define STALL_TIMEOUT_MS 60000       /* a response with no progress, without --idle-timeout-ms */
#define DISCARD_MAX_BYTES (1u << 20) /* bigger request bodies: close, don't skip */
#define FREE_CONNS_MAX 1024          /* recycled structs kept per worker */

static _Atomic uint64_t alloc_warned_ns, timer_warned_ns, close_warned_ns, nodelay_warned_ns;

/* ---- the worker's lists: live, ready, free ---- */

static void live_insert(struct cs_worker *w, struct cs_conn *c)
{
	c->live_prev = NULL;
	c->live_next = w->live;
	if (w->live)
		w->live->live_prev = c;
	w->live = c;
}

static void live_remove(struct cs_worker *w, struct cs_conn *c)
{
	if (c->live_prev)
		c->live_prev->live_next = c->live_next;
	else
		w->live = c->live_next;
	if (c->live_next)
		c->live_next->live_prev = c->live_prev;
}

static void ready_append(struct cs_worker *w, struct cs_conn *c)
{
	if (c->ready_queued)
		return;
	c->ready_queued = true;
	c->ready_next = NULL;
	c->ready_prev = w->ready_tail;
	if (w->ready_tail)
		w->ready_tail->ready_next = c;
	else
		w->ready_head = c;
	w->ready_tail = c;
	w->ready_count++;
}

static void ready_remove(struct cs_worker *w, struct cs_conn *c)
{
	if (!c->ready_queued)
		return;
	c->ready_queued = false;
	if (c->ready_prev)
		c->ready_prev->ready_next = c->ready_next;
	else
		w->ready_head = c->ready_next;
	if (c->ready_next)
		c->ready_next->ready_prev = c->ready_prev;
	else
		w->ready_tail = c->ready_prev;
	w->ready_count--;
}

static struct cs_conn *conn_alloc(struct cs_worker *w)
{
	struct cs_conn *c = w->free_conns;

	if (c) {
		w->free_conns = c->live_next;
		w->free_count--;
		return c;
	}
	return malloc(sizeof(*c) + w->cfg->max_header_bytes);
}

static void conn_free(struct cs_worker *w, struct cs_conn *c)
{
	if (w->free_count >= FREE_CONNS_MAX) {
		free(c);
		return;
	}
	c->live_next = w->free_conns;
	w->free_conns = c;
	w->free_count++;
}

/* ---- timers ---- */

/* Keep-alive connection between requests, nothing pending. */
static bool conn_is_idle(const struct cs_conn *c)
{
	return c->requests_served > 0 && c->in_len == 0 && c->body_to_discard == 0;
}

/* The deadline of the current state, or 0 for none. */
static uint64_t conn_deadline_ns(const struct cs_conn *c)
{
	const struct cs_config *cfg = c->worker->cfg;

	switch (c->state) {
	case CS_CONN_READING:
		if (conn_is_idle(c))
			return cfg->idle_timeout_ms ? conn_ms_after(c->idle_since_ns, cfg->idle_timeout_ms) : 0;
		return cfg->header_timeout_ms ? conn_ms_after(c->header_start_ns, cfg->header_timeout_ms) : 0;
	case CS_CONN_SLEEPING:
		return c->wake_ns;
	case CS_CONN_WRITING:
		return conn_ms_after(c->progress_ns,
				     cfg->idle_timeout_ms ? cfg->idle_timeout_ms : STALL_TIMEOUT_MS);
	case CS_CONN_LINGERING:
		return c->linger_until_ns;
	}
	return 0;
}

/* Moves c's timer to its state's deadline. Returns STEP_CLOSED if the
 * heap could not grow: a connection without its timer could hang forever. */
static enum step conn_update_timer(struct cs_conn *c)
{
	struct cs_worker *w = c->worker;
	uint64_t deadline_ns = conn_deadline_ns(c);

	if (deadline_ns == 0) {
		cs_timer_heap_remove(&w->timers, &c->timer);
		return STEP_WAIT;
	}
	if (cs_timer_queued(&c->timer) && c->timer.deadline_ns == deadline_ns)
		return STEP_WAIT;
	if (cs_timer_heap_set(&w->timers, &c->timer, deadline_ns) != 0) {
		if (cs_log_ratelimit(&timer_warned_ns, w->now_ns, CS_NS_PER_S))
			cs_log_warn("worker %d: out of memory for timers: closing connections", w->id);
		cs_conn_close(c);
		return STEP_CLOSED;
	}
	return STEP_WAIT;
}

/* ---- reading ---- */

static void conn_consume(struct cs_conn *c, uint32_t n)
{
	/* Pipelined leftovers are short, so moving them is cheaper than a
	 * ring buffer's split reads. */
	memmove(c->in, c->in + n, c->in_len - n);
	c->in_len -= n;
	c->parsed_len = 0;
}

static void conn_on_request(struct cs_conn *c, const struct cs_http_request *req)
{
	const struct cs_config *cfg = c->worker->cfg;
	struct cs_http_framing framing;

	c->close_after = false;
	c->failed = false;
	c->head_only = false;
	c->split_write = false;
	if (cs_http_request_framing(req, &framing) != 0) {
		cs_conn_fail(c, 400);
		return;
	}
	/* Chunked bodies would need decoding just to find where the next
	 * request starts; a GET/HEAD server has no use for them. */
	if (framing.has_transfer_encoding) {
		cs_conn_fail(c, 501);
		return;
	}
	c->close_after = !cfg->keepalive || !framing.keep_alive ||
			 framing.content_length > DISCARD_MAX_BYTES;
	c->body_to_discard = framing.content_length;
	cs_handle_request(c, req);
}

/* Parses what is buffered: a request, an error, or "need more". */
static enum step conn_parse(struct cs_conn *c)
{
	struct cs_http_request req;
	int r = cs_http_parse_request(c->in, c->in_len, c->parsed_len, &req);

	if (r > 0) {
		/* The handler reads req (pointers into in[]) before the
		 * bytes are consumed. */
		conn_on_request(c, &req);
		conn_consume(c, (uint32_t)r);
		return STEP_AGAIN;
	}
	if (r == CS_HTTP_BAD) {
		cs_conn_fail(c, 400);
		return STEP_AGAIN;
	}
	if (c->in_len >= c->in_cap) {
		cs_conn_fail(c, 413);
		return STEP_AGAIN;
	}
	c->parsed_len = c->in_len;
	return STEP_WAIT;
}

static enum step conn_read_more(struct cs_conn *c)
{
	struct cs_worker *w = c->worker;
	ssize_t n;

	if (!c->can_read)
		return STEP_WAIT;
	n = read(c->handle.fd, c->in + c->in_len, c->in_cap - c->in_len);
	if (n > 0) {
		/* A keep-alive request's header clock starts at its first
		 * byte; the first request's started at connect. */
		if (c->in_len == 0 && c->body_to_discard == 0 && c->requests_served > 0)
			c->header_start_ns = w->now_ns;
		c->in_len += (uint32_t)n;
		return STEP_AGAIN;
	}
	if (n == 0) {
		c->peer_eof = true;
		return STEP_AGAIN;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK) {
		c->can_read = false;
		return STEP_WAIT;
	}
	if (errno == EINTR)
		return STEP_AGAIN;
	w->stats.resets++; /* ECONNRESET, ETIMEDOUT: the peer is gone */
	cs_conn_close(c);
	return STEP_CLOSED;
}

static enum step conn_step_read(struct cs_conn *c)
{
	if (c->body_to_discard > 0 && c->in_len > 0) {
		uint32_t n = c->body_to_discard < c->in_len ? (uint32_t)c->body_to_discard : c->in_len;
		conn_consume(c, n);
		c->body_to_discard -= n;
		return STEP_AGAIN;
	}
	if (c->body_to_discard == 0 && c->in_len > 0) {
		enum step s = conn_parse(c);
		if (s != STEP_WAIT)
			return s;
	}
	if (c->peer_eof) {
		/* The client is done; a partial request cannot complete. */
		cs_conn_close(c);
		return STEP_CLOSED;
	}
	return conn_read_more(c);
}

/* ---- lingering ---- */

static enum step conn_step_linger(struct cs_conn *c)
{
	ssize_t n;

	if (!c->can_read)
		return STEP_WAIT;
	n = read(c->handle.fd, c->in, c->in_cap);
	if (n > 0)
		return STEP_AGAIN; /* dropped */
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		c->can_read = false;
		return STEP_WAIT;
	}
	if (n < 0 && errno == EINTR)
		return STEP_AGAIN;
	cs_conn_close(c); /* EOF: the client has read our response and closed */
	return STEP_CLOSED;
}

/* ---- the state machine ---- */

static enum step conn_step(struct cs_conn *c)
{
	switch (c->state) {
	case CS_CONN_READING:
		return conn_step_read(c);
	case CS_CONN_WRITING:
		return conn_step_write(c);
	case CS_CONN_SLEEPING:
		return STEP_WAIT;
	case CS_CONN_LINGERING:
		return conn_step_linger(c);
	}
	return STEP_WAIT;
}

void cs_conn_drive(struct cs_conn *c)
{
	for (int budget = DRIVE_BUDGET; budget > 0; budget--) {
		enum step s = conn_step(c);
		if (s == STEP_CLOSED)
			return;
		if (s == STEP_WAIT) {
			conn_update_timer(c);
			return;
		}
	}
	/* Still work to do (a client pipelining without pause): let the
	 * other connections have their turn and come back after them. */
	ready_append(c->worker, c);
	conn_update_timer(c);
}

void cs_conn_run_ready(struct cs_worker *w)
{
	/* Only those queued before this call: a connection that runs out of
	 * budget again waits for the next turn. */
	for (uint32_t n = w->ready_count; n > 0 && w->ready_head; n--) {
		struct cs_conn *c = w->ready_head;
		ready_remove(w, c);
		cs_conn_drive(c);
	}
}

void cs_conn_on_event(struct cs_conn *c, uint32_t events)
{
	if (events & (EPOLLERR | EPOLLHUP)) {
		/* Reset, or both directions shut: nothing more can be sent.
		 * While lingering, HUP is the normal end (the client's FIN
		 * after ours). */
		if (c->state != CS_CONN_LINGERING)
			c->worker->stats.resets++;
		cs_conn_close(c);
		return;
	}
	if (events & (EPOLLIN | EPOLLRDHUP))
		c->can_read = true;
	if (events & EPOLLOUT)
		c->can_write = true;
	cs_conn_drive(c);
}

void cs_conn_on_timer(struct cs_conn *c)
{
	struct cs_worker *w = c->worker;

	switch (c->state) {
	case CS_CONN_READING:
		if (conn_is_idle(c)) {
			w->stats.idle_closes++;
			cs_conn_close(c);
			return;
		}
		w->stats.header_timeouts++;
		cs_conn_fail(c, 408);
		break;
	case CS_CONN_SLEEPING:
		cs_handle_wake(c);
		break;
	case CS_CONN_WRITING:
		w->stats.resets++; /* the client stopped reading */
		cs_conn_close(c);
		return;
	case CS_CONN_LINGERING:
		cs_conn_close(c);
		return;
	}
	cs_conn_drive(c);
}

/* ---- open and close ---- */

void cs_conn_open(struct cs_worker *w, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET };
	struct cs_conn *c;
	int one = 1;

	w->now_ns = cs_now_ns(); /* an --accept-delay-us sleep may have passed */
	c = conn_alloc(w);
	if (!c) {
		if (cs_log_ratelimit(&alloc_warned_ns, w->now_ns, CS_NS_PER_S))
			cs_log_warn("worker %d: out of memory for connections: closing new ones", w->id);
		close(fd);
		cs_conn_limit_release();
		return;
	}
	/* Without it, a pipelined second response would wait for the
	 * client's delayed ACK of the first (40 ms). Not fatal if refused.
	 * --nagle leaves Nagle's algorithm on, to show that very wait. */
	if (!w->cfg->nagle && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0 &&
	    cs_log_ratelimit(&nodelay_warned_ns, w->now_ns, CS_NS_PER_S))
		cs_log_warn("worker %d: setsockopt(TCP_NODELAY): %s", w->id, strerror(errno));

	memset(c, 0, sizeof(*c));
	c->handle = (struct cs_handle){ .kind = CS_HANDLE_CONN, .fd = fd };
	c->worker = w;
	c->state = CS_CONN_READING;
	cs_timer_init(&c->timer);
	c->in_cap = w->cfg->max_header_bytes;
	c->header_start_ns = w->now_ns;
	/* A new socket is writable; readability comes with the first edge,
	 * which epoll reports at once if the request is already there. */
	c->can_write = true;

	ev.data.ptr = &c->handle;
	if (epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		cs_log_warn("worker %d: epoll_ctl(ADD, connection): %s", w->id, strerror(errno));
		close(fd);
		cs_conn_limit_release();
		conn_free(w, c);
		return;
	}
	live_insert(w, c);
	conn_update_timer(c);
}

void cs_conn_close(struct cs_conn *c)
{
	struct cs_worker *w = c->worker;

	cs_timer_heap_remove(&w->timers, &c->timer);
	ready_remove(w, c);
	live_remove(w, c);
	/* close() also takes the fd out of the epoll set: it is never
	 * dup'ed, so this is the file's last reference. On Linux the fd is
	 * released even when close() fails, so it is never retried. */
	if (close(c->handle.fd) != 0 && errno != EINTR &&
	    cs_log_ratelimit(&close_warned_ns, w->now_ns, CS_NS_PER_S))
		cs_log_warn("worker %d: close: %s", w->id, strerror(errno));
	cs_conn_limit_release();
	conn_free(w, c);
}

void cs_conn_close_all(struct cs_worker *w)
{
	/* cs_conn_close unlinks the head (its live_prev is NULL), so w->live
	 * moves on before the connection is freed. */
	while (w->live)
		cs_conn_close(w->live); // NOLINT(clang-analyzer-unix.Malloc)
	while (w->free_conns) {
		struct cs_conn *c = w->free_conns;
		w->free_conns = c->live_next;
		free(c);
	}
	w->free_count = 0;
}
