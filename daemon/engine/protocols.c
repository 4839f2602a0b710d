// SPDX-License-Identifier: BSD-2-Clause
/*
 * What a connection speaks, told from its first bytes (the probes keep an
 * exchange's first CS_PEEK_FIRST_LEN), and what a Redis exchange's count
 * of commands makes of it. Pure: unit tests drive it with synthetic bytes.
 */
#include <string.h>

#include "engine_internal.h"
#include "exchanges.h"

const char *const cs_protocol_names[CS_PROTOCOL_COUNT] = {
	[CS_PROTOCOL_HTTP1] = "http1",
	[CS_PROTOCOL_H2] = "h2",
	[CS_PROTOCOL_TLS] = "tls",
	[CS_PROTOCOL_RESP] = "resp",
	[CS_PROTOCOL_POSTGRESQL] = "postgresql",
	[CS_PROTOCOL_MYSQL] = "mysql",
	[CS_PROTOCOL_OTHER] = "other",
};

/* A PostgreSQL client's first message has no type byte: a length, then a code. */
#define PG_PROTOCOL_3 0x00030000u /* StartupMessage, protocol 3.0 */
#define PG_CANCEL 80877102u       /* CancelRequest */
#define PG_SSL 80877103u          /* SSLRequest */
#define PG_GSSENC 80877104u       /* GSSENCRequest */
#define PG_STARTUP_MAX 10000u     /* the server refuses a longer start-up packet */

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static bool is_postgresql_start(const uint8_t *first, size_t first_len)
{
	if (first_len < 8)
		return false;
	uint32_t len = be32(first), code = be32(first + 4);
	if (len < 8 || len > PG_STARTUP_MAX)
		return false;
	return code == PG_PROTOCOL_3 || code == PG_SSL || code == PG_GSSENC || (code == PG_CANCEL && len == 16);
}

/* An HTTP/1.x request line's start: a method of capital letters, then a space. */
static bool is_http1_start(const uint8_t *first, size_t first_len)
{
	size_t i = 0;
	while (i < first_len && first[i] >= 'A' && first[i] <= 'Z')
		i++;
	return i > 0 && i < first_len && first[i] == ' ';
}

enum cs_protocol cs_protocol_of(const uint8_t *first, size_t first_len, uint8_t peek_flags)
{
	if (peek_flags & CS_PEEK_TLS)
		return CS_PROTOCOL_TLS;
	if (peek_flags & CS_PEEK_RESP)
		return CS_PROTOCOL_RESP;
	if (cs_is_h2_preface(first, first_len))
		return CS_PROTOCOL_H2;
	if (is_http1_start(first, first_len))
		return CS_PROTOCOL_HTTP1;
	if (is_postgresql_start(first, first_len))
		return CS_PROTOCOL_POSTGRESQL;
	return CS_PROTOCOL_OTHER;
}

/* MySQL's framing was told by the probes (its first bytes are binary, after the server's greeting). */
static bool is_mysql(const struct cs_ev_request_bytes *ev)
{
	return ev->protocol == CS_WIRE_PROTOCOL_MYSQL;
}

enum cs_protocol cs_count_protocol(struct cs_request_stats *stats, const struct cs_ev_request_bytes *ev)
{
	size_t first_len = ev->first_len < CS_PEEK_FIRST_LEN ? ev->first_len : CS_PEEK_FIRST_LEN;
	enum cs_protocol protocol = is_mysql(ev) ? CS_PROTOCOL_MYSQL : cs_protocol_of(ev->first, first_len, ev->flags);
	stats->connections_by_protocol[protocol]++;
	if (ev->messages & CS_MSG_GREETING)
		stats->greetings++;
	return protocol;
}

bool cs_counts_commands(const struct cs_ev_request_bytes *ev)
{
	return (ev->flags & (CS_PEEK_RESP | CS_PEEK_PG)) || is_mysql(ev);
}

uint32_t cs_exchange_commands(const struct cs_ev_request_bytes *ev)
{
	if (!cs_counts_commands(ev) || (ev->flags & CS_PEEK_UNCOUNTED))
		return 1;
	/* None ended in it (its answer was for none of them: a push, an error): one exchange. */
	return ev->commands ? ev->commands : 1;
}

/*
 * A PostgreSQL or MySQL exchange without a query: the connection's set-up
 * (PostgreSQL's start-up, an SSL request, a password; MySQL's handshake
 * response and authentication, after its greeting), or the client's
 * goodbye (Terminate, COM_QUIT, which the server does not answer). One
 * with a query is a request, whatever else it read.
 */
enum cs_exchange_kind cs_framed_kind(const struct cs_ev_request_bytes *ev)
{
	if (!((ev->flags & CS_PEEK_PG) || is_mysql(ev)) || (ev->flags & CS_PEEK_UNCOUNTED) || ev->commands)
		return CS_EXCHANGE_REQUEST;
	if (ev->messages & CS_MSG_SETUP)
		return CS_EXCHANGE_PROTOCOL_SETUP;
	if (ev->messages & CS_MSG_GOODBYE)
		return CS_EXCHANGE_GOODBYE;
	return CS_EXCHANGE_REQUEST;
}
