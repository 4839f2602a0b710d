// SPDX-License-Identifier: BSD-2-Clause
/*
 * A connection's responses: the status line and fields formatted into
 * out[], then written with the body (from the static pattern buffer) by
 * the WRITING state; at the end, keep-alive or close (with a linger).
 */
#include "conn.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "clock.h"
#include "conn_internal.h"
#include "log.h"

/*
 * Response bodies come from one static buffer, never copied: body byte i
 * is pattern[i % PATTERN_BYTES], so a 64 MiB body is one writev() of
 * pointers into it at a time.
 */
#define PATTERN_BYTES (256u * 1024)
#define WRITE_IOV_MAX 17 /* out[] and 16 pattern slices: 4 MiB per writev */
#define LINGER_MS 1000   /* how long to drain a client after our FIN */
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
	c->wake_ns = conn_ms_after(c->worker->now_ns, ms);
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
	c->linger_until_ns = conn_ms_after(w->now_ns, LINGER_MS);
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

enum step conn_step_write(struct cs_conn *c)
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
