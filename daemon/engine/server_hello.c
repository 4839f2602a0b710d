// SPDX-License-Identifier: BSD-2-Clause
/*
 * A TLS connection's server's first flight (struct cs_ev_server_hello):
 * its ServerHello says which protocol the server chose for a client that
 * offered HTTP/2. In TLS 1.2 the ALPN extension is there, in the clear; in
 * TLS 1.3 the ServerHello names the version (supported_versions) and the
 * choice is in the encrypted extensions that follow. Pure but for
 * cs_on_server_hello, which marks a connection that chose HTTP/2 as
 * multiplexed.
 */
#include <string.h>

#include "engine_internal.h"
#include "exchanges.h"

#define TLS_RECORD_HANDSHAKE 22
#define TLS_RECORD_HEADER 5
#define HELLO_SERVER_HELLO 2
#define EXT_ALPN 16
#define EXT_SUPPORTED_VERSIONS 43
#define TLS13_VERSION 0x0304

static size_t be16(const uint8_t *p)
{
	return (size_t)p[0] << 8 | p[1];
}

/* The protocol an ALPN extension of a ServerHello names: exactly one. */
static enum cs_alpn_choice alpn_choice(const uint8_t *p, size_t len)
{
	if (len < 3 || be16(p) + 2 != len || (size_t)p[2] + 3 != len)
		return CS_ALPN_CHOICE_NOT_TOLD;
	return p[2] == 2 && memcmp(p + 3, "h2", 2) == 0 ? CS_ALPN_CHOICE_H2 : CS_ALPN_CHOICE_OTHER;
}

enum cs_alpn_choice cs_server_hello_alpn(const uint8_t *flight, size_t len)
{
	/* The record's header, the handshake's type(1) length(3) version(2) random(32), then the session id. */
	size_t at = TLS_RECORD_HEADER + 38;
	if (len < at + 1 || flight[0] != TLS_RECORD_HANDSHAKE || flight[1] != 3 ||
	    flight[TLS_RECORD_HEADER] != HELLO_SERVER_HELLO)
		return CS_ALPN_CHOICE_NOT_TOLD;
	size_t hello_end = TLS_RECORD_HEADER + 4 + ((size_t)flight[6] << 16 | be16(flight + 7));
	at += 1 + flight[at];
	at += 2 + 1; /* the cipher suite, the compression method */
	if (at >= hello_end)
		return CS_ALPN_CHOICE_NONE; /* no extensions: no ALPN, TLS 1.2 */
	if (at + 2 > len)
		return CS_ALPN_CHOICE_NOT_TOLD;
	size_t end = at + 2 + be16(flight + at);
	enum cs_alpn_choice choice = CS_ALPN_CHOICE_NONE;
	for (at += 2; at + 4 <= end; at += 4 + be16(flight + at + 2)) {
		size_t type = be16(flight + at), n = be16(flight + at + 2);
		if (at + 4 + n > len)
			return CS_ALPN_CHOICE_NOT_TOLD; /* the copy ended first */
		if (type == EXT_SUPPORTED_VERSIONS && n == 2 && be16(flight + at + 4) == TLS13_VERSION)
			return CS_ALPN_CHOICE_ENCRYPTED;
		if (type == EXT_ALPN)
			choice = alpn_choice(flight + at + 4, n);
	}
	return at == end ? choice : CS_ALPN_CHOICE_NOT_TOLD;
}

/*
 * A connection that offered HTTP/2 and whose server chose it is
 * multiplexed: its streams' exchanges are no requests. One whose server
 * chose otherwise is HTTP/1.x; one whose choice is encrypted (TLS 1.3) is
 * said as not told.
 */
int cs_on_server_hello(struct cs_engine *engine, const struct cs_ev_server_hello *ev)
{
	struct cs_request_stats *stats = &engine->requests;
	struct cs_conn *conn = cs_u64map_get(&engine->conns, ev->sk);
	if (!conn || conn->alpn_offer != 1 + CS_ALPN_H2)
		return 0;
	size_t len = ev->captured_len < CS_SERVER_HELLO_LEN ? ev->captured_len : CS_SERVER_HELLO_LEN;
	switch (cs_server_hello_alpn(ev->flight, len)) {
	case CS_ALPN_CHOICE_H2:
		stats->tls_alpn_h2_chosen++;
		cs_mark_multiplexed(stats, conn, CS_MUX_H2_ALPN);
		break;
	case CS_ALPN_CHOICE_OTHER:
	case CS_ALPN_CHOICE_NONE:
		stats->tls_alpn_h2_declined++;
		break;
	default:
		break;
	}
	return 0;
}
