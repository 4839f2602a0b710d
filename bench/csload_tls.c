// SPDX-License-Identifier: BSD-2-Clause
/*
 * --tls: HTTPS over OpenSSL. One client SSL_CTX for the run, one SSL per
 * connection, driven non-blocking from the worker's epoll loop: after the
 * TCP connect, SSL_do_handshake() until it is done, then the requests with
 * SSL_write() and SSL_read(); each call that cannot go on says whether it
 * waits for the socket to be readable or writable (a TLS read can need a
 * write, and a write a read), and the slot waits for that.
 *
 * The targets are loopback test servers with certificates made for the
 * test: no certificate is verified, no name is sent (SNI). No session is
 * reused: every connection makes a full handshake, as a new client does.
 *
 * And conn_read() and conn_write(), through which every connection's bytes
 * go, plain or TLS: the response parser is fed what they return, the
 * decrypted bytes with --tls.
 */
#include "csload_worker.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

/* ---- the run's context */

static void print_ssl_error(const char *what)
{
	char buf[256];
	unsigned long e = ERR_get_error();
	if (e)
		ERR_error_string_n(e, buf, sizeof(buf));
	else
		snprintf(buf, sizeof(buf), "no reason given");
	fprintf(stderr, "csload: %s: %s\n", what, buf);
	ERR_clear_error();
}

struct ssl_ctx_st *csl_tls_ctx_new(const struct csl_config *cfg)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx) {
		print_ssl_error("cannot set up TLS");
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	/* try_send() goes on from where a short write stopped, at another
	 * address than the first call's. */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* A FIN without close_notify ends the stream as a plain connection's
	 * FIN does (a body delimited by the close, a server's idle close). */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
	int version = cfg->tls_version == 12   ? TLS1_2_VERSION
		      : cfg->tls_version == 13 ? TLS1_3_VERSION
					       : 0;
	if (version && (SSL_CTX_set_min_proto_version(ctx, version) != 1 ||
			SSL_CTX_set_max_proto_version(ctx, version) != 1)) {
		print_ssl_error("cannot restrict TLS to the version asked for");
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

void csl_tls_ctx_free(struct ssl_ctx_st *ctx)
{
	SSL_CTX_free(ctx);
}

/* ---- a connection's bytes */

/*
 * What an SSL call that returned r <= 0 means, as conn_read() says it;
 * err: errno just after the call.
 */
static ssize_t tls_io_failed(struct slot *s, int r, int err)
{
	switch (SSL_get_error(s->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		s->again_events = EPOLLIN;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		s->again_events = EPOLLOUT;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0; /* close_notify, or a FIN (SSL_OP_IGNORE_UNEXPECTED_EOF) */
	case SSL_ERROR_SYSCALL:
		s->tls_fatal = true;
		if (!err)
			return 0;
		errno = err;
		return -1;
	default:
		s->tls_fatal = true;
		errno = EPROTO;
		return -1;
	}
}

ssize_t conn_read(struct slot *s, void *buf, size_t len)
{
	if (!s->ssl) {
		s->again_events = EPOLLIN;
		return read(s->fd, buf, len);
	}
	ERR_clear_error();
	errno = 0;
	int n = SSL_read(s->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
	if (n > 0)
		return n;
	return tls_io_failed(s, n, errno);
}

ssize_t conn_write(struct slot *s, const void *buf, size_t len)
{
	if (!s->ssl) {
		s->again_events = EPOLLOUT;
		return send(s->fd, buf, len, MSG_NOSIGNAL);
	}
	ERR_clear_error();
	errno = 0;
	int n = SSL_write(s->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
	if (n > 0)
		return n;
	ssize_t r = tls_io_failed(s, n, errno);
	if (r == 0) {
		/* The server said close_notify: nothing more can be sent. */
		errno = EPIPE;
		r = -1;
	}
	return r;
}

/* ---- the handshake */

void tls_handshake_failed(struct csl_worker *w, struct slot *s, const char *why, uint64_t now)
{
	struct csl_run *run = w->run;

	s->tls_fatal = true;
	if (atomic_exchange(&run->tls_error_taken, 1) == 0)
		snprintf(run->tls_error, sizeof(run->tls_error), "%s", why);
	uint64_t fails = atomic_fetch_add(&run->tls_fail, 1) + 1;
	/* No handshake ever completed and every connection has tried: give up. */
	if (atomic_load(&run->tls_ok) == 0 && fails >= w->cfg->connections)
		atomic_store(&run->stop, 1);
	fail_request(w, s, CSL_ERR_TLS_HANDSHAKE, now);
}

void tls_start(struct csl_worker *w, struct slot *s, uint64_t now)
{
	s->tls_fatal = false;
	s->ssl = SSL_new(w->run->tls_ctx);
	if (!s->ssl || SSL_set_fd(s->ssl, s->fd) != 1) {
		char why[160];
		ERR_error_string_n(ERR_get_error(), why, sizeof(why));
		ERR_clear_error();
		tls_handshake_failed(w, s, why, now);
		return;
	}
	SSL_set_connect_state(s->ssl);
	s->handshake_start_ns = now;
	s->phase = PH_HANDSHAKE;
	csl_timers_set(&w->timers, s->id, now + w->cfg->connect_timeout_ms * 1000000ull);
	tls_handshake_step(w, s);
}

static void handshake_done(struct csl_worker *w, struct slot *s)
{
	uint64_t now = csl_now_ns();
	int version = SSL_version(s->ssl);

	csl_timers_cancel(&w->timers, s->id);
	atomic_fetch_add(&w->run->tls_ok, 1);
	csl_stats_handshake(&w->stats, now - s->handshake_start_ns,
			    version == TLS1_3_VERSION   ? 3
			    : version == TLS1_2_VERSION ? 2
							: 0);
	s->phase = PH_SENDING;
	try_send(w, s);
}

void tls_handshake_step(struct csl_worker *w, struct slot *s)
{
	ERR_clear_error();
	errno = 0;
	int r = SSL_do_handshake(s->ssl);
	if (r == 1) {
		handshake_done(w, s);
		return;
	}
	int err = errno;
	int kind = SSL_get_error(s->ssl, r);
	if (kind == SSL_ERROR_WANT_READ || kind == SSL_ERROR_WANT_WRITE) {
		if (watch(w, s, kind == SSL_ERROR_WANT_READ ? EPOLLIN : EPOLLOUT) < 0)
			fail_request(w, s, CSL_ERR_OTHER, csl_now_ns());
		return;
	}
	char why[160];
	if (kind == SSL_ERROR_SSL)
		ERR_error_string_n(ERR_peek_last_error(), why, sizeof(why));
	else if (kind == SSL_ERROR_SYSCALL && err)
		snprintf(why, sizeof(why), "%s", strerror(err));
	else
		snprintf(why, sizeof(why), "the server closed the connection");
	ERR_clear_error();
	tls_handshake_failed(w, s, why, csl_now_ns());
}

void tls_close(struct csl_worker *w, struct slot *s)
{
	if (!s->ssl)
		return;
	/* As wrk and ab do: close_notify, not waiting for the server's. */
	if (!s->tls_fatal && SSL_is_init_finished(s->ssl)) {
		ERR_clear_error();
		if (SSL_shutdown(s->ssl) >= 0)
			w->stats.tls_close_notify++;
	}
	SSL_free(s->ssl);
	s->ssl = NULL;
	ERR_clear_error();
}
