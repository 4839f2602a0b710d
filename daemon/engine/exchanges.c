// SPDX-License-Identifier: BSD-2-Clause
/*
 * What each of a connection's exchanges is. The probes delimit an exchange
 * as bytes in, then bytes out; a TLS handshake is made of such exchanges
 * too, and a connection whose requests overlap (HTTP/1.1 pipelining,
 * HTTP/2) packs several requests into one. The probes copy a few bytes of
 * what the server read in a connection's first CS_PEEK_EXCHANGES exchanges
 * (struct cs_ev_request_bytes): the exchange's first bytes and, on a
 * connection that began with a TLS record, each record's content type.
 * From those this file tells handshake exchanges (connection set-up) from
 * requests, with no TLS library hook and no decryption. On a plain
 * connection the probe flags an exchange whose first read held a request
 * and the start of the next (CS_PEEK_MORE_REQUESTS): pipelined requests
 * read at once, which no timing shows.
 *
 * The client's records, as real clients send them (OpenSSL's ab, wrk,
 * s_client and Python; JSSE), one line an exchange:
 *   TLS 1.2 full:         22 (ClientHello) | 22 20 22 (key exchange, CCS,
 *                         Finished) | 23... (requests)
 *   TLS 1.2 resumed:      22 | 20 22 [23] (CCS, Finished, and the request
 *                         when it came before the server answered)
 *   TLS 1.3 (full or resumed, middlebox compatibility): 22 | 20 23 [23] |
 *                         23... The client's Finished is already a type 23
 *                         record: in 1.3 the first 23 of the client's
 *                         second flight is its Finished, the later ones are
 *                         application data. OpenSSL and JSSE servers answer
 *                         that Finished with NewSessionTicket, so the
 *                         request is an exchange of its own, unless it was
 *                         read together with the Finished.
 *   TLS 1.3 after a HelloRetryRequest: 22 | [20] 22 (the second
 *                         ClientHello, a big handshake record:
 *                         CS_PEEK_BIG_HANDSHAKE) | 23 (Finished) | 23...
 * TLS 1.3 resumption looks like a full handshake from the client's
 * records: it is told from the ClientHello's session offer (pre_shared_key)
 * and the size of the server's first flight (tls13_resumption).
 * Limits: a 1.3 client that sends a certificate (Certificate,
 * CertificateVerify, Finished as several type 23 records) or 0-RTT early
 * data has its extra records taken for application data; an exchange that
 * carries both the handshake's end and a request counts as a request that
 * starts when its first record's read returned (record_read_us: a read's
 * time, not the bytes' arrival), and what the server sent before it
 * (session tickets) leaves its handler time unknown apart from its
 * send_drain; renegotiation is not told apart from requests. When the probe could not follow the records (a
 * header split over reads, io_uring, more records in a read than it
 * follows), the connection's later exchanges count as requests and the
 * connection as "could not be told" (tls_lost).
 */
#include <string.h>

#include "engine_internal.h"
#include "tables.h"

#define TLS_CHANGE_CIPHER_SPEC 20
#define TLS_ALERT 21
#define TLS_HANDSHAKE 22
#define TLS_APPLICATION_DATA 23

/*
 * A second ClientHello: the server answered the first with a
 * HelloRetryRequest (TLS 1.3). After its first ClientHello the client
 * sends one big handshake record, maybe after a ChangeCipherSpec
 * (middlebox compatibility). A TLS 1.2 abbreviated handshake's [20 22]
 * ends with a Finished, never that big (CS_PEEK_BIG_HANDSHAKE_LEN); a full
 * one's RSA key exchange is big, but its ChangeCipherSpec and Finished
 * follow it in the same flight.
 */
static bool second_client_hello(uint8_t phase, const struct cs_ev_request_bytes *ev)
{
	const uint8_t *type = ev->record_types;
	if (phase != CS_TLS_CLIENT_FLIGHT || !(ev->flags & CS_PEEK_BIG_HANDSHAKE))
		return false;
	return (ev->record_count == 1 && type[0] == TLS_HANDSHAKE) ||
	       (ev->record_count == 2 && type[0] == TLS_CHANGE_CIPHER_SPEC && type[1] == TLS_HANDSHAKE);
}

/* Walk an exchange's records (cs_tls_walk); a second ClientHello starts the client's flights again. */
static void walk_exchange(struct cs_request_stats *stats, uint8_t *phase, const struct cs_ev_request_bytes *ev,
			  struct cs_tls_exchange *walk)
{
	if (second_client_hello(*phase, ev)) {
		*phase = CS_TLS_HELLO;
		stats->tls13_hello_retries++;
	}
	cs_tls_walk(phase, ev->record_types, CS_PEEK_TLS_RECORDS, ev->record_count, (ev->flags & CS_PEEK_LOST) != 0,
		    walk);
}

/* One record of the client's, in phase. */
static void walk_one(uint8_t *phase, uint8_t type, struct cs_tls_exchange *out)
{
	switch (*phase) {
	case CS_TLS_HELLO:
		if (type == TLS_HANDSHAKE) {
			out->handshake = true;
			*phase = CS_TLS_CLIENT_FLIGHT;
		}
		return;
	case CS_TLS_CLIENT_FLIGHT:
	case CS_TLS_CLIENT_FLIGHT_CCS:
		if (type == TLS_CHANGE_CIPHER_SPEC) {
			out->handshake = true;
			*phase = CS_TLS_CLIENT_FLIGHT_CCS;
		} else if (type == TLS_HANDSHAKE) {
			/* 1.2: the key exchange (full), or the Finished after a CCS (abbreviated). */
			out->handshake = true;
			out->version = 12;
			out->resumed = *phase == CS_TLS_CLIENT_FLIGHT_CCS;
			*phase = CS_TLS_12_FLIGHT;
		} else if (type == TLS_APPLICATION_DATA) {
			/* 1.3: the client's Finished, encrypted. */
			out->handshake = true;
			out->version = 13;
			out->ended = true;
			*phase = CS_TLS_DONE;
		}
		return;
	case CS_TLS_12_FLIGHT:
		if (type == TLS_CHANGE_CIPHER_SPEC || type == TLS_HANDSHAKE) {
			out->handshake = true;
		} else if (type == TLS_APPLICATION_DATA) {
			out->app_data = true;
			out->ended = true;
			*phase = CS_TLS_DONE;
		}
		return;
	case CS_TLS_DONE:
		if (type == TLS_APPLICATION_DATA)
			out->app_data = true;
		return;
	default:
		return;
	}
}

void cs_tls_walk(uint8_t *phase, const uint8_t *types, size_t kept, size_t count, bool lost,
		 struct cs_tls_exchange *out)
{
	memset(out, 0, sizeof(*out));
	out->data_record = -1;
	if (*phase == CS_TLS_NONE || *phase == CS_TLS_LOST)
		return;
	for (size_t i = 0; i < kept && i < count; i++) {
		walk_one(phase, types[i], out);
		if (out->app_data && out->data_record < 0)
			out->data_record = (int)i;
	}
	/* Records not kept, or not followed: what they were cannot be told. */
	if (lost || count > kept)
		*phase = CS_TLS_LOST;
}

enum cs_exchange_kind cs_tls_exchange_kind(const struct cs_tls_exchange *walk, uint8_t phase)
{
	if (walk->app_data)
		return CS_EXCHANGE_REQUEST;
	/* Lost in this exchange: what followed the last record told may be a request. */
	if (phase == CS_TLS_LOST)
		return CS_EXCHANGE_REQUEST;
	if (walk->handshake)
		return CS_EXCHANGE_TLS_HANDSHAKE;
	return CS_EXCHANGE_TLS_CONTROL;
}

/*
 * After the handshake a TLS 1.3 alert is, from outside, an application-data
 * record like a request's; but one of 19 bytes holds 3 bytes under a
 * 16-byte AEAD tag (AES-GCM, ChaCha20-Poly1305): an alert's 2 and its
 * content type. No request is that short. (A TLS 1.2 alert shows its own
 * type, 21, and the walk makes it control already.)
 */
#define TLS_RECORD_HEADER_LEN 5
#define TLS13_ALERT_RECORD_LEN 19

bool cs_is_tls13_alert(const struct cs_ev_request_bytes *ev, size_t first_len)
{
	return ev->record_count == 1 && first_len >= TLS_RECORD_HEADER_LEN && ev->first[0] == TLS_APPLICATION_DATA &&
	       ev->first[1] == 3 && ((unsigned int)ev->first[3] << 8 | ev->first[4]) == TLS13_ALERT_RECORD_LEN;
}

bool cs_is_h2_preface(const uint8_t *first, size_t first_len)
{
	static const char preface[] = "PRI * HTTP/2.0";
	size_t n = sizeof(preface) - 1;
	return first_len >= n && memcmp(first, preface, n) == 0;
}

/*
 * A TLS 1.3 connection whose ClientHello offered a session: resumed when
 * the server's first flight (its first exchange's bytes out) had no room
 * for a certificate. Its ServerHello says so in the clear, but the probes
 * read no bytes the server sends: its size is what they see.
 */
static void tls13_resumption(struct cs_request_stats *stats, const struct cs_conn *conn)
{
	if (conn->hello_psk == 1 + CS_PSK_NOT_TOLD) {
		stats->tls_psk_not_told++;
	} else if (conn->hello_psk == 1 + CS_PSK_OFFERED) {
		stats->tls13_psk_offered++;
		if (conn->first_flight_bytes && conn->first_flight_bytes <= CS_TLS13_RESUMED_FLIGHT_MAX)
			stats->tls13_psk_resumed++;
	}
}

void cs_mark_multiplexed(struct cs_request_stats *stats, struct cs_conn *conn, enum cs_multiplex_reason why)
{
	if (conn->multiplexed)
		return;
	conn->multiplexed = (uint8_t)why;
	stats->connections_multiplexed++;
	if (why == CS_MUX_H2_PREFACE)
		stats->multiplexed_h2++;
	else if (why == CS_MUX_ONE_READ)
		stats->multiplexed_one_read++;
	else if (why == CS_MUX_UNCOUNTED)
		stats->multiplexed_uncounted++;
	else if (why == CS_MUX_H2_ALPN)
		stats->multiplexed_h2_alpn++;
}

/* What a walk told, counted once per connection: versions, resumption, a lost framing. */
static void count_walk(struct cs_request_stats *stats, const struct cs_tls_exchange *walk, uint8_t before,
		       uint8_t after)
{
	if (before != CS_TLS_LOST && after == CS_TLS_LOST)
		stats->tls_lost++;
	if (walk->version == 12)
		stats->tls12++;
	else if (walk->version == 13)
		stats->tls13++;
	stats->tls_resumed += walk->resumed;
}

/* A connection not followed, remembered from now (NULL: the table is full, counted). */
static struct cs_unfollowed *unfollowed_get(struct cs_engine *engine, uint64_t sk)
{
	int created = 0;
	struct cs_unfollowed *u = cs_u64map_put(&engine->unfollowed, sk, &created);
	if (!u) {
		engine->requests.unfollowed_full++;
		return NULL;
	}
	if (created)
		memset(u, 0, sizeof(*u));
	return u;
}

/* The kind of a TLS exchange: its walk's, but an alert after the handshake is control. */
static enum cs_exchange_kind exchange_kind_of(const struct cs_ev_request_bytes *ev, const struct cs_tls_exchange *walk,
					      uint8_t before, uint8_t after)
{
	enum cs_exchange_kind kind = cs_tls_exchange_kind(walk, after);
	size_t first_len = ev->first_len < CS_PEEK_FIRST_LEN ? ev->first_len : CS_PEEK_FIRST_LEN;
	if (kind == CS_EXCHANGE_REQUEST && before == CS_TLS_DONE && cs_is_tls13_alert(ev, first_len))
		return CS_EXCHANGE_TLS_CONTROL;
	return kind;
}

/* Where a bytes record of a connection not followed waits: its socket's slot, a free one, or the oldest. */
static struct cs_orphan_exchange *orphan_slot(struct cs_request_stats *stats, uint64_t sk)
{
	struct cs_orphan_exchange *free_slot = NULL;
	for (size_t i = 0; i < CS_ORPHAN_SLOTS; i++) {
		if (stats->orphans[i].sk == sk)
			return &stats->orphans[i];
		if (!free_slot && !stats->orphans[i].sk)
			free_slot = &stats->orphans[i];
	}
	return free_slot ? free_slot : &stats->orphans[stats->orphan_next++ % CS_ORPHAN_SLOTS];
}

/*
 * Bytes of a connection the engine does not follow (its accept came
 * before the attach, or was not seen) or follows no more (closed, and its
 * server still reads what came before): its TLS records are walked on
 * from where they were, for its request record next; anything else is
 * taken for a request.
 */
static int unfollowed_bytes(struct cs_engine *engine, const struct cs_ev_request_bytes *ev)
{
	struct cs_request_stats *stats = &engine->requests;
	stats->bytes_unmatched++;
	struct cs_orphan_exchange *orphan = orphan_slot(stats, ev->sk);
	orphan->sk = ev->sk;
	orphan->index = ev->index;
	orphan->kind = CS_EXCHANGE_REQUEST;
	orphan->ended = 0;
	orphan->commands = (uint16_t)cs_exchange_commands(ev);
	orphan->kind = (uint8_t)cs_framed_kind(ev);
	struct cs_unfollowed *u = cs_u64map_get(&engine->unfollowed, ev->sk);
	size_t first_len = ev->first_len < CS_PEEK_FIRST_LEN ? ev->first_len : CS_PEEK_FIRST_LEN;
	bool h2 = ev->index == 0 && cs_is_h2_preface(ev->first, first_len);
	/* A Redis read not counted: no one request, as a pipelined HTTP read. */
	bool more = !h2 && (ev->flags & (CS_PEEK_MORE_REQUESTS | CS_PEEK_UNCOUNTED));
	/*
	 * A TLS connection's last exchange, closed by the client first: its
	 * close_notify, which the server answered after the close record.
	 */
	if (!u && ev->index > 0 && (ev->flags & CS_PEEK_TLS) && ev->record_count == 1 &&
	    (ev->record_types[0] == TLS_ALERT || cs_is_tls13_alert(ev, first_len))) {
		orphan->kind = CS_EXCHANGE_TLS_CONTROL;
		return 0;
	}
	/* A socket's first exchange: a new connection, whatever an older one left. */
	if (u && ev->index == 0)
		memset(u, 0, sizeof(*u));
	if (ev->index == 0)
		cs_count_protocol(stats, ev);
	bool resp = ev->flags & CS_PEEK_RESP;
	if (!u && ((ev->index == 0 && (ev->flags & CS_PEEK_TLS)) || h2 || more || resp))
		u = unfollowed_get(engine, ev->sk);
	if (!u)
		return 0;
	u->last_ns = ev->hdr.ts_ns;
	u->counted |= cs_counts_commands(ev);
	if ((h2 || more) && !u->multiplexed) {
		u->multiplexed = 1;
		stats->connections_multiplexed++;
		if (h2)
			stats->multiplexed_h2++;
		else if (ev->flags & CS_PEEK_UNCOUNTED)
			stats->multiplexed_uncounted++;
		else
			stats->multiplexed_one_read++;
	}
	if (ev->index == 0 && (ev->flags & CS_PEEK_TLS)) {
		u->phase = CS_TLS_HELLO; /* its ClientHello (read after its close, maybe) */
		stats->tls_connections++;
	}
	uint8_t before = u->phase;
	struct cs_tls_exchange walk;
	walk_exchange(stats, &u->phase, ev, &walk);
	if (before != CS_TLS_NONE)
		orphan->kind = (uint8_t)exchange_kind_of(ev, &walk, before, u->phase);
	orphan->ended = walk.ended;
	count_walk(stats, &walk, before, u->phase);
	return 0;
}

int cs_on_request_bytes(struct cs_engine *engine, const struct cs_ev_request_bytes *ev)
{
	struct cs_request_stats *stats = &engine->requests;
	struct cs_conn *conn = cs_u64map_get(&engine->conns, ev->sk);
	if (!conn)
		return unfollowed_bytes(engine, ev);
	size_t first_len = ev->first_len < CS_PEEK_FIRST_LEN ? ev->first_len : CS_PEEK_FIRST_LEN;
	if (ev->index == 0) {
		conn->protocol = (uint8_t)(1 + cs_count_protocol(stats, ev));
		if (ev->flags & CS_PEEK_UNREADABLE && !first_len)
			stats->bytes_unreadable++;
		if (ev->flags & CS_PEEK_TLS) {
			conn->tls_phase = CS_TLS_HELLO;
			stats->tls_connections++;
		} else if (cs_is_h2_preface(ev->first, first_len)) {
			cs_mark_multiplexed(stats, conn, CS_MUX_H2_PREFACE);
		}
	}
	/* This exchange holds more than one request: it and the later ones are no single request. */
	if (ev->flags & CS_PEEK_MORE_REQUESTS)
		cs_mark_multiplexed(stats, conn, CS_MUX_ONE_READ);
	if (cs_counts_commands(ev))
		conn->framing |= CS_FRAMING_COUNTED;
	if (ev->flags & CS_PEEK_UNCOUNTED)
		cs_mark_multiplexed(stats, conn, CS_MUX_UNCOUNTED);
	conn->bytes_commands = (uint16_t)cs_exchange_commands(ev);
	uint8_t before = conn->tls_phase;
	struct cs_tls_exchange walk;
	walk_exchange(stats, &conn->tls_phase, ev, &walk);
	conn->bytes_index = ev->index;
	conn->bytes_valid = 1;
	conn->bytes_ended = walk.ended;
	/*
	 * The handshake's end and a request in one exchange (the request came
	 * before the server answered the client's Finished): the request
	 * began when its first record was read, not with the exchange.
	 */
	conn->bytes_data_us = walk.ended && walk.data_record > 0 ? ev->record_read_us[walk.data_record] : 0;
	conn->bytes_kind = before == CS_TLS_NONE ? CS_EXCHANGE_REQUEST : exchange_kind_of(ev, &walk, before, conn->tls_phase);
	enum cs_exchange_kind framed = cs_framed_kind(ev);
	if (framed != CS_EXCHANGE_REQUEST) /* a framed protocol's set-up or goodbye */
		conn->bytes_kind = framed;
	if (conn->bytes_kind == CS_EXCHANGE_PROTOCOL_SETUP)
		conn->framing |= CS_FRAMING_SETUP_SEEN;
	if (ev->index == 0 && (ev->messages & CS_MSG_GREETING))
		conn->framing |= CS_FRAMING_GREETED;
	count_walk(stats, &walk, before, conn->tls_phase);
	if (walk.version == 13)
		tls13_resumption(stats, conn);
	return 0;
}

/* The kind of an exchange of a connection not followed: the same rules, from what is remembered of it. */
static enum cs_exchange_kind unfollowed_kind(struct cs_engine *engine, const struct cs_ev_request *req,
					     uint32_t *commands)
{
	struct cs_request_stats *stats = &engine->requests;
	enum cs_exchange_kind kind = CS_EXCHANGE_REQUEST;
	bool ended = false;
	for (size_t i = 0; i < CS_ORPHAN_SLOTS; i++) {
		struct cs_orphan_exchange *orphan = &stats->orphans[i];
		if (orphan->sk != req->sk)
			continue;
		/* The socket's request record ends what waited for it, matched or not. */
		if (orphan->index == req->index) {
			kind = (enum cs_exchange_kind)orphan->kind;
			ended = orphan->ended != 0;
			*commands = orphan->commands ? orphan->commands : 1;
		}
		orphan->sk = 0;
		break;
	}
	struct cs_unfollowed *u = cs_u64map_get(&engine->unfollowed, req->sk);
	/* A Redis connection's commands are counted: a read after an answer began is the next ones'. */
	if (kind == CS_EXCHANGE_REQUEST && !ended && (req->flags & CS_REQ_READ_AFTER_SEND) && !(u && u->counted) &&
	    !(req->flags & CS_REQ_PARTIAL)) {
		if (!u)
			u = unfollowed_get(engine, req->sk);
		if (u && !u->multiplexed) {
			u->multiplexed = 1;
			stats->connections_multiplexed++;
		}
	}
	if (!u)
		return kind;
	u->last_ns = req->hdr.ts_ns;
	return u->multiplexed ? CS_EXCHANGE_MULTIPLEXED : kind;
}

static enum cs_exchange_kind exchange_kind(struct cs_engine *engine, struct cs_conn *conn, const struct cs_ev_request *req,
					   uint32_t *commands)
{
	struct cs_request_stats *stats = &engine->requests;
	*commands = 1;
	if (!conn)
		return unfollowed_kind(engine, req, commands);
	enum cs_exchange_kind kind = CS_EXCHANGE_REQUEST;
	bool ended = false;
	conn->request_start_us = 0;
	if (conn->bytes_valid && conn->bytes_index == req->index) {
		kind = conn->bytes_kind;
		ended = conn->bytes_ended;
		conn->request_start_us = conn->bytes_data_us;
		*commands = conn->bytes_commands ? conn->bytes_commands : 1;
		conn->bytes_valid = 0;
	}
	/*
	 * Bytes read after the answer began had come before it: the client
	 * sent more without waiting for the answer. The exchange that ends a
	 * TLS handshake does so by itself (the server answers the client's
	 * Finished with session tickets, then reads the request). A Redis
	 * connection's commands are counted as they are read: no overlap
	 * hides one.
	 */
	if (kind == CS_EXCHANGE_REQUEST && !ended && !(conn->framing & CS_FRAMING_COUNTED) && (req->flags & CS_REQ_READ_AFTER_SEND) &&
	    !(req->flags & CS_REQ_PARTIAL))
		cs_mark_multiplexed(stats, conn, CS_MUX_OVERLAP);
	/* (A TLS handshake's exchanges stay set-up: HTTP/2 is told at the server's first flight.) */
	if (conn->multiplexed && kind == CS_EXCHANGE_REQUEST)
		return CS_EXCHANGE_MULTIPLEXED;
	return kind;
}

/*
 * Whether the exchange is a request (exchanges.c), and what it paid
 * before it began when it is its connection's first. A TLS connection's
 * first request is the first exchange after its handshake's.
 */
bool cs_exchange_is_request(struct cs_engine *engine, struct cs_conn *conn, const struct cs_ev_request *req,
			     struct cs_request_setup *setup)
{
	struct cs_request_stats *stats = &engine->requests;
	cs_setup_from_record(req, setup);
	uint32_t commands = 1;
	if (conn && req->index == 0) {
		conn->first_bytes_ns = req->start_ns;
		conn->handshake_extra_ns = req->handshake_extra_ns;
		conn->first_flight_bytes = req->bytes_out;
	}
	struct cs_unfollowed *u = conn ? NULL : cs_u64map_get(&engine->unfollowed, req->sk);
	if (u && req->index == 0)
		u->first_bytes_ns = req->start_ns;
	enum cs_exchange_kind kind = exchange_kind(engine, conn, req, &commands);
	setup->commands = commands;
	switch (kind) {
	case CS_EXCHANGE_TLS_HANDSHAKE:
		stats->tls_handshake_exchanges++;
		return false;
	case CS_EXCHANGE_TLS_CONTROL:
		stats->tls_control_exchanges++;
		return false;
	case CS_EXCHANGE_MULTIPLEXED:
		stats->multiplexed_exchanges++;
		return false;
	case CS_EXCHANGE_PROTOCOL_SETUP:
		stats->protocol_setup_exchanges++;
		return false;
	case CS_EXCHANGE_GOODBYE:
		stats->goodbye_exchanges++;
		return false;
	case CS_EXCHANGE_REQUEST:
		break;
	}
	if (conn && conn->tls_phase != CS_TLS_NONE && req->index > 0 && conn->first_bytes_ns) {
		setup->first = conn->requests_counted == 0;
		setup->began_ns = conn->first_bytes_ns;
		setup->extra_ns = conn->handshake_extra_ns;
		setup->tls = true;
		if (setup->first && conn->request_start_us)
			setup->start_ns = req->start_ns + (uint64_t)conn->request_start_us * 1000;
		return true;
	}
	if (u && u->phase != CS_TLS_NONE && req->index > 0 && u->first_bytes_ns) {
		setup->first = u->requests_counted++ == 0;
		setup->began_ns = u->first_bytes_ns;
		setup->tls = true;
	}
	/*
	 * A protocol's set-up (PostgreSQL's start-up) ran before its first
	 * request: it pays it. A server that spoke first (MySQL's greeting)
	 * began it at its accept.
	 */
	if (conn && (conn->framing & CS_FRAMING_SETUP_SEEN) && req->index > 0 && conn->first_bytes_ns) {
		setup->first = conn->requests_counted == 0;
		setup->began_ns = (conn->framing & CS_FRAMING_GREETED) && conn->accept_ns ? conn->accept_ns
											   : conn->first_bytes_ns;
		setup->extra_ns = conn->handshake_extra_ns;
		setup->protocol = true;
	}
	return true;
}
