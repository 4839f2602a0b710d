// SPDX-License-Identifier: BSD-2-Clause
/*
 * A TLS connection's ClientHello (struct cs_ev_client_hello): what it
 * offers, read from its extensions: HTTP/2 (ALPN) and a session to resume
 * (TLS 1.3's pre_shared_key). Pure but for cs_on_client_hello, which
 * counts them.
 */
#include <string.h>

#include "engine_internal.h"
#include "exchanges.h"

/* Big-endian integers of n bytes at p. */
static size_t be(const uint8_t *p, size_t n)
{
	size_t v = 0;
	for (size_t i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

#define HELLO_CLIENT_HELLO 1
#define EXT_ALPN 16
#define EXT_PRE_SHARED_KEY 41

/* The ALPN extension's protocol list: does it name "h2"? */
static enum cs_alpn_offer alpn_list(const uint8_t *p, size_t len)
{
	if (len < 2 || be(p, 2) + 2 > len)
		return CS_ALPN_NOT_TOLD;
	size_t end = 2 + be(p, 2);
	for (size_t at = 2; at < end;) {
		size_t n = p[at];
		if (at + 1 + n > end)
			return CS_ALPN_NOT_TOLD;
		if (n == 2 && p[at + 1] == 'h' && p[at + 2] == '2')
			return CS_ALPN_H2;
		at += 1 + n;
	}
	return CS_ALPN_NO_H2;
}

enum hello_find {
	HELLO_NOT_TOLD, /* the copy ended first, or malformed */
	HELLO_ABSENT,   /* every extension walked: not there */
	HELLO_FOUND,    /* at *body, *body_len bytes (maybe beyond the copy) */
};

/* Find extension want in a ClientHello (len bytes of it copied, total_len in its record). */
static enum hello_find hello_extension(const uint8_t *hello, size_t len, size_t total_len, size_t want,
				       size_t *body, size_t *body_len)
{
	/* type(1) length(3) version(2) random(32), then the session id, suites, compression. */
	size_t at = 38;
	if (len < at + 1 || hello[0] != HELLO_CLIENT_HELLO)
		return HELLO_NOT_TOLD;
	at += 1 + hello[at];
	if (at + 2 > len)
		return HELLO_NOT_TOLD;
	at += 2 + be(hello + at, 2);
	if (at + 1 > len)
		return HELLO_NOT_TOLD;
	at += 1 + hello[at];
	/* No extensions at all: the hello ends here. */
	if (at >= total_len)
		return HELLO_ABSENT;
	if (at + 2 > len)
		return HELLO_NOT_TOLD;
	size_t end = at + 2 + be(hello + at, 2);
	for (at += 2; at + 4 <= end && at + 4 <= len;) {
		size_t type = be(hello + at, 2), n = be(hello + at + 2, 2);
		if (type == want) {
			*body = at + 4;
			*body_len = n;
			return HELLO_FOUND;
		}
		at += 4 + n;
	}
	/* Every extension walked without it, or the copy ended first. */
	return at >= end ? HELLO_ABSENT : HELLO_NOT_TOLD;
}

enum cs_alpn_offer cs_client_hello_alpn(const uint8_t *hello, size_t len, size_t total_len)
{
	size_t at = 0, n = 0;
	switch (hello_extension(hello, len, total_len, EXT_ALPN, &at, &n)) {
	case HELLO_FOUND:
		return at + n <= len ? alpn_list(hello + at, n) : CS_ALPN_NOT_TOLD;
	case HELLO_ABSENT:
		return CS_ALPN_NONE;
	default:
		return CS_ALPN_NOT_TOLD;
	}
}

/*
 * pre_shared_key is the hello's last extension (RFC 8446 4.2.11): behind
 * ALPN, the key shares and the ticket itself, so a long hello may be cut
 * before it (CS_HELLO_LEN): then not told. Its presence is the offer; the
 * client sends it only with a session to resume.
 */
enum cs_psk_offer cs_client_hello_psk(const uint8_t *hello, size_t len, size_t total_len)
{
	size_t at = 0, n = 0;
	switch (hello_extension(hello, len, total_len, EXT_PRE_SHARED_KEY, &at, &n)) {
	case HELLO_FOUND:
		return CS_PSK_OFFERED;
	case HELLO_ABSENT:
		return CS_PSK_NONE;
	default:
		return CS_PSK_NOT_TOLD;
	}
}

/*
 * A TLS connection's ClientHello: whether it offered HTTP/2. The
 * server's choice is in its own flight (server_hello.c), encrypted in TLS
 * 1.3: a connection that offered h2 may be multiplexed; one that did not
 * is HTTP/1.x.
 */
int cs_on_client_hello(struct cs_engine *engine, const struct cs_ev_client_hello *ev)
{
	struct cs_request_stats *stats = &engine->requests;
	size_t len = ev->captured_len < CS_HELLO_LEN ? ev->captured_len : CS_HELLO_LEN;
	enum cs_alpn_offer offer = cs_client_hello_alpn(ev->hello, len, ev->record_len);
	if (offer == CS_ALPN_H2)
		stats->tls_alpn_h2++;
	else if (offer == CS_ALPN_NOT_TOLD)
		stats->tls_alpn_not_told++;
	/* A session offer counts when the connection turns out TLS 1.3 (tls13_resumption). */
	enum cs_psk_offer psk = cs_client_hello_psk(ev->hello, len, ev->record_len);
	struct cs_conn *conn = cs_u64map_get(&engine->conns, ev->sk);
	if (conn) {
		conn->hello_psk = (uint8_t)(1 + psk);
		conn->alpn_offer = (uint8_t)(1 + offer);
	}
	else if (psk != CS_PSK_NONE)
		stats->tls_psk_not_told++; /* its version will not be told: said at once */
	return 0;
}
