// SPDX-License-Identifier: BSD-2-Clause
#include "conn.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "conn_limit.h"
#include "handlers.h"
#include "http_parse.h"
#include "log.h"

/*
 * Response bodies come from one static buffer, never copied: body byte i
 * is pattern[i % PATTERN_BYTES], so a 64 MiB body is one writev() of
 * pointers into it at a time.
 */
#define PATTERN_BYTES (256u * 1024)
#define WRITE_IOV_MAX 17          /* out[] and 16 pattern slices: 4 MiB per writev */
#define DRIVE_BUDGET 64           /* steps per wake-up before others get a turn */
#define LINGER_MS 1000            /* how long to drain a client after our FIN */
#define STALL_TIMEOUT_MS 60000    /* a response with no progress, without --idle-timeout-ms */
#define DISCARD_MAX_BYTES (1u << 20) /* bigger request bodies: close, don't skip */
#define FREE_CONNS_MAX 1024       /* recycled structs kept per worker */
#define DATE_REFRESH_NS (100 * CS_NS_PER_MS)

static char pattern[PATTERN_BYTES];

void cs_conn_init_pattern(void)
{
	/* 64-byte lines, so a body is readable text: "0123...xyz\n". */
	static const char line[64] =
		"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ\n";

	for (size_t i = 0; i < PATTERN_BYTES; i++)
		pattern[i] = line[i % sizeof(line)];
}

/* Outcome of one step of the state machine. */
enum step {
	STEP_AGAIN,  /* progress made: step again */
	STEP_WAIT,   /* wait for a socket edge or the timer */
	STEP_CLOSED, /* the connection is gone: do not touch it */
};

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

static uint64_t ms_after(uint64_t start_ns, uint32_t ms)
{
	return start_ns + (uint64_t)ms * CS_NS_PER_MS;
}

/* The deadline of the current state, or 0 for none. */
static uint64_t conn_deadline_ns(const struct cs_conn *c)
{
	const struct cs_config *cfg = c->worker->cfg;

	switch (c->state) {
	case CS_CONN_READING:
		if (conn_is_idle(c))
			return cfg->idle_timeout_ms ? ms_after(c->idle_since_ns, cfg->idle_timeout_ms) : 0;
		return cfg->header_timeout_ms ? ms_after(c->header_start_ns, cfg->header_timeout_ms) : 0;
	case CS_CONN_SLEEPING:
		return c->wake_ns;
	case CS_CONN_WRITING:
		return ms_after(c->progress_ns,
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

/* ---- responses ---- */

static const char *status_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 501: return "Not Implemented";
	default: return "Unknown";
	}
}

/* The "Date: ...\r\n" field, formatted at most every 100 ms (as nginx
 * caches its time strings): strftime per response would cost more than
 * the rest of a small response. */
static const char *worker_date_field(struct cs_worker *w)
{
	if (w->now_ns >= w->date_next_ns) {
		time_t now = time(NULL);
		struct tm tm;

		if (gmtime_r(&now, &tm) == NULL ||
		    strftime(w->date, sizeof(w->date), "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm) == 0)
			w->date[0] = '\0';
		w->date_next_ns = w->now_ns + DATE_REFRESH_NS;
	}
	return w->date;
}

/*
 * Formats status line, fields and (for text responses) the body into out[]
 * and switches to WRITING. content_length is what a GET would get; HEAD
 * sends the same fields and no body.
 */
static void start_response(struct cs_conn *c, int status, uint64_t content_length,
			   const char *text, uint64_t pattern_len)
{
	struct cs_worker *w = c->worker;
	int n;

	n = snprintf(c->out, sizeof(c->out),
		     "HTTP/1.1 %d %s\r\n"
		     "Server: csserver\r\n"
		     "%s"
		     "Content-Type: text/plain\r\n"
		     "Content-Length: %" PRIu64 "\r\n"
		     "%s"
		     "Connection: %s\r\n"
		     "\r\n"
		     "%s",
		     status, status_reason(status), worker_date_field(w), content_length,
		     status == 405 ? "Allow: GET, HEAD\r\n" : "",
		     c->close_after ? "close" : "keep-alive",
		     c->head_only ? "" : text);
	if (n < 0 || (size_t)n >= sizeof(c->out)) {
		/* Only our own short texts get here; should one ever be too
		 * long, send no body rather than a wrong Content-Length. */
		cs_log_warn("response %d does not fit in %zu bytes", status, sizeof(c->out));
		start_response(c, status, 0, "", 0);
		return;
	}
	c->out_len = (uint32_t)n;
	c->out_off = 0;
	c->body_len = c->head_only ? 0 : pattern_len;
	c->body_off = 0;
	c->progress_ns = w->now_ns;
	c->state = CS_CONN_WRITING;
}

void cs_conn_respond_text(struct cs_conn *c, int status, const char *text)
{
	start_response(c, status, strlen(text), text, 0);
}

void cs_conn_respond_pattern(struct cs_conn *c, uint64_t n)
{
	start_response(c, 200, n, "", n);
}

void cs_conn_respond_later(struct cs_conn *c, uint32_t ms)
{
	c->sleep_ms = ms;
	c->wake_ns = ms_after(c->worker->now_ns, ms);
	c->state = CS_CONN_SLEEPING;
}

static const char *error_text(int status)
{
	switch (status) {
	case 400: return "bad request\n";
	case 408: return "request header timeout\n";
	case 413: return "request header too large\n";
	case 501: return "transfer codings are not supported\n";
	default: return "error\n";
	}
}

void cs_conn_fail(struct cs_conn *c, int status)
{
	c->close_after = true;
	c->failed = true;
	c->head_only = false;
	if (status != 408)
		c->worker->stats.bad_requests++;
	cs_conn_respond_text(c, status, error_text(status));
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

/* ---- writing ---- */

static int conn_fill_iov(const struct cs_conn *c, struct iovec *iov, size_t *total)
{
	int n = 0;

	*total = 0;
	if (c->out_off < c->out_len) {
		iov[n] = (struct iovec){ (char *)c->out + c->out_off, c->out_len - c->out_off };
		*total += iov[n++].iov_len;
		/* /split: header and body in two writes (write-write-read). */
		if (c->split_write)
			return n;
	}
	for (uint64_t off = c->body_off; off < c->body_len && n < WRITE_IOV_MAX;) {
		size_t at = (size_t)(off % PATTERN_BYTES);
		uint64_t left = c->body_len - off;
		size_t len = PATTERN_BYTES - at < left ? PATTERN_BYTES - at : (size_t)left;

		iov[n] = (struct iovec){ pattern + at, len };
		*total += len;
		off += len;
		n++;
	}
	return n;
}

static void conn_advance_output(struct cs_conn *c, size_t sent)
{
	size_t head_left = c->out_len - c->out_off;
	size_t head = sent < head_left ? sent : head_left;

	c->out_off += (uint32_t)head;
	c->body_off += sent - head;
}

/* The last response is out and the connection is to be closed. */
static enum step conn_finish(struct cs_conn *c)
{
	struct cs_worker *w = c->worker;
	bool client_may_send = c->in_len > 0 || c->body_to_discard > 0 || c->failed;

	if (c->peer_eof || !client_may_send) {
		cs_conn_close(c);
		return STEP_CLOSED;
	}
	/* FIN now, close later: see CS_CONN_LINGERING. */
	if (shutdown(c->handle.fd, SHUT_WR) != 0) {
		cs_conn_close(c);
		return STEP_CLOSED;
	}
	c->state = CS_CONN_LINGERING;
	c->in_len = 0;
	c->parsed_len = 0;
	c->body_to_discard = 0;
	c->linger_until_ns = ms_after(w->now_ns, LINGER_MS);
	return STEP_AGAIN;
}

static enum step conn_response_done(struct cs_conn *c)
{
	struct cs_worker *w = c->worker;

	c->requests_served++;
	w->stats.requests++;
	if (c->close_after)
		return conn_finish(c);
	c->state = CS_CONN_READING;
	c->idle_since_ns = w->now_ns;
	if (c->in_len > 0)
		c->header_start_ns = w->now_ns; /* a pipelined request waits */
	return STEP_AGAIN;
}

static enum step conn_step_write(struct cs_conn *c)
{
	struct iovec iov[WRITE_IOV_MAX];
	size_t want;
	int iovcnt;
	ssize_t n;

	if (!c->can_write)
		return STEP_WAIT;
	iovcnt = conn_fill_iov(c, iov, &want);
	if (iovcnt == 0)
		return conn_response_done(c);
	/* SIGPIPE is ignored process-wide, so a closed peer is just EPIPE. */
	n = writev(c->handle.fd, iov, iovcnt);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			c->can_write = false;
			return STEP_WAIT;
		}
		if (errno == EINTR)
			return STEP_AGAIN;
		c->worker->stats.resets++; /* EPIPE, ECONNRESET */
		cs_conn_close(c);
		return STEP_CLOSED;
	}
	conn_advance_output(c, (size_t)n);
	c->progress_ns = c->worker->now_ns;
	/* A short write means the send buffer is full; the kernel flags the
	 * socket for an EPOLLOUT edge, so skip the writev() that would only
	 * say EAGAIN (nginx does the same). */
	if ((size_t)n < want)
		c->can_write = false;
	if (c->out_off == c->out_len && c->body_off == c->body_len)
		return conn_response_done(c);
	return STEP_AGAIN;
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
