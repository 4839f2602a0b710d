// SPDX-License-Identifier: BSD-2-Clause
/*
 * What the worker's epoll set and timers report, handed to the slot's
 * phase: a connect that ended, room to send, a response's bytes, a
 * server's close of an idle connection, a deadline.
 */
#include "csload_worker.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* Data or EOF on a connection with no request: the server closed it. */
static void on_idle_readable(struct csl_worker *w, struct slot *s)
{
	for (;;) {
		/* With --tls: a session ticket or a close_notify, read here. */
		ssize_t n = conn_read(s, w->scratch, sizeof(w->scratch));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n > 0) {
			/* Bytes nobody asked for (e.g. a 408 before an idle close):
			 * the connection is out of step, do not reuse it. */
			w->stats.unexpected_bytes += (uint64_t)n;
			close_conn(w, s);
			return;
		}
		w->stats.idle_closes++; /* EOF or reset: the server closed it */
		close_conn(w, s);
		return;
	}
}

static void on_readable(struct csl_worker *w, struct slot *s)
{
	for (;;) {
		char *dst;
		size_t room;
		if (s->carry_len) {
			dst = s->carry + s->carry_len;
			room = CARRY_SIZE - s->carry_len;
		} else {
			dst = w->scratch;
			room = sizeof(w->scratch);
		}
		ssize_t n = conn_read(s, dst, room);
		uint64_t now = csl_now_ns();
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				/* A TLS read can wait for room to write. */
				if (watch(w, s, s->again_events) < 0)
					fail_request(w, s, CSL_ERR_OTHER, now);
				return;
			}
			fail_request(w, s, errno == ECONNRESET ? CSL_ERR_RESET : CSL_ERR_OTHER, now);
			return;
		}
		if (n == 0) {
			if (!s->got_byte)
				fail_request(w, s, CSL_ERR_EOF_BEFORE, now);
			else if (s->carry_len == 0 && csl_http_resp_eof(&s->resp))
				complete_response(w, s, now, 0);
			else
				fail_request(w, s, CSL_ERR_EOF_MID, now);
			return;
		}
		s->got_byte = true;
		const char *data = s->carry_len ? s->carry : w->scratch;
		size_t len = s->carry_len + (size_t)n;
		ssize_t used = csl_http_resp_feed(&s->resp, data, len);
		if (used < 0) {
			fail_request(w, s, CSL_ERR_BAD_RESPONSE, now);
			return;
		}
		if (s->resp.state == CSL_HTTP_DONE) {
			complete_response(w, s, now, len - (size_t)used);
			return;
		}
		size_t rest = len - (size_t)used;
		if (rest == 0) {
			s->carry_len = 0;
			continue;
		}
		/* Keep the unfinished head or line for the next read. */
		if (!s->carry) {
			s->carry = malloc(CARRY_SIZE);
			if (!s->carry) {
				fail_request(w, s, CSL_ERR_OTHER, now);
				return;
			}
		}
		memmove(s->carry, data + used, rest);
		s->carry_len = rest;
	}
}

static void on_writable(struct csl_worker *w, struct slot *s)
{
	if (s->phase == PH_CONNECTING) {
		uint64_t now = csl_now_ns();
		int err = 0;
		socklen_t len = sizeof(err);
		if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err) {
			connect_failed(w, s, err, CSL_ERR_CONNECT, now);
			return;
		}
		connected(w, s, now);
	} else if (s->phase == PH_HANDSHAKE) {
		tls_handshake_step(w, s);
	} else if (s->phase == PH_SENDING) {
		try_send(w, s);
	}
}

void on_event(struct csl_worker *w, struct slot *s, uint32_t ev)
{
	/* As in Redis' ae: errors and hang-ups go to whichever handler the
	 * phase has; its syscall then reports what happened. */
	if (s->fd < 0)
		return;
	switch (s->phase) {
	case PH_CONNECTING:
		if (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			on_writable(w, s);
		break;
	case PH_HANDSHAKE:
	case PH_SENDING:
		/* Whatever it waits for: room to write, or with --tls, bytes
		 * to read first (the socket's interest is only that). */
		on_writable(w, s);
		break;
	case PH_WAITING:
		/* Bytes, or with --tls room to write (a TLS read that must
		 * write first; the interest is only what it waits for). */
		on_readable(w, s);
		break;
	case PH_IDLE:
	case PH_GAP:
	case PH_RETIRED:
		if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP))
			on_idle_readable(w, s);
		break;
	}
}

static void on_timer(struct csl_worker *w, struct slot *s, uint64_t now)
{
	switch (s->phase) {
	case PH_GAP:
		s->phase = PH_IDLE;
		closed_issue(w, s, now);
		break;
	case PH_CONNECTING:
		connect_failed(w, s, ETIMEDOUT, CSL_ERR_CONNECT_TIMEOUT, now);
		break;
	case PH_HANDSHAKE:
		tls_handshake_failed(w, s, "timed out", now);
		break;
	case PH_SENDING:
	case PH_WAITING:
		fail_request(w, s, CSL_ERR_TIMEOUT, now);
		break;
	default:
		break;
	}
}

void run_timers(struct csl_worker *w, uint64_t now)
{
	unsigned int id;
	uint64_t when;
	while (csl_timers_peek(&w->timers, &id, &when) && when <= now) {
		csl_timers_cancel(&w->timers, id);
		on_timer(w, &w->slots[id], now);
	}
}
