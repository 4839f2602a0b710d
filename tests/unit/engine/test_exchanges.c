// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of daemon/engine/exchanges.c: which of a connection's exchanges
 * are TLS handshake (set-up), which are requests, and which connections
 * overlap their requests, from synthetic request-bytes records shaped as
 * real clients' records are (OpenSSL, JSSE): TLS 1.2 full and resumed,
 * TLS 1.3 with its Finished read alone or with the request, records
 * followed across exchanges, framing lost, plaintext, HTTP/2's preface,
 * pipelined requests (told by their timing, or read at once).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "engine.h"
#include "events.h"
#include "exchanges.h"

#define PORT 8443
#define T0 (100 * SEC)

CS_ENGINE_FIXTURE

TestSuite(tls_walk);
TestSuite(exchanges, .init = setup, .fini = teardown);

/* ---- the walk alone -------------------------------------------------------- */

static struct cs_tls_exchange walk(uint8_t *phase, const char *types)
{
	struct cs_tls_exchange out;
	uint8_t t[CS_PEEK_TLS_RECORDS] = { 0 };
	size_t n = strlen(types);
	for (size_t i = 0; i < n && i < CS_PEEK_TLS_RECORDS; i++)
		t[i] = (uint8_t)(20 + types[i] - 'a'); /* a=20 (CCS), c=22 (handshake), d=23 (data) */
	cs_tls_walk(phase, t, CS_PEEK_TLS_RECORDS, n, false, &out);
	return out;
}

Test(tls_walk, tls12_full_handshake_then_data)
{
	uint8_t phase = CS_TLS_HELLO;
	struct cs_tls_exchange w = walk(&phase, "c");
	cr_assert(w.handshake && !w.app_data);
	cr_assert_eq(cs_tls_exchange_kind(&w, phase), CS_EXCHANGE_TLS_HANDSHAKE);
	w = walk(&phase, "cac"); /* ClientKeyExchange, CCS, Finished */
	cr_assert(w.handshake && !w.app_data && !w.resumed);
	cr_assert_eq(w.version, 12);
	cr_assert_eq(cs_tls_exchange_kind(&w, phase), CS_EXCHANGE_TLS_HANDSHAKE);
	w = walk(&phase, "d");
	cr_assert(w.app_data && w.ended);
	cr_assert_eq(cs_tls_exchange_kind(&w, phase), CS_EXCHANGE_REQUEST);
	w = walk(&phase, "dd");
	cr_assert(w.app_data && !w.ended);
}

Test(tls_walk, tls12_resumed_with_the_request)
{
	uint8_t phase = CS_TLS_HELLO;
	walk(&phase, "c");
	struct cs_tls_exchange w = walk(&phase, "acd"); /* CCS, Finished, the request */
	cr_assert(w.resumed && w.app_data && w.ended);
	cr_assert_eq(w.version, 12);
	cr_assert_eq(cs_tls_exchange_kind(&w, phase), CS_EXCHANGE_REQUEST);
}

Test(tls_walk, tls13_finished_is_type_23_and_no_request)
{
	uint8_t phase = CS_TLS_HELLO;
	walk(&phase, "c");
	struct cs_tls_exchange w = walk(&phase, "ad"); /* CCS, Finished (encrypted) */
	cr_assert_eq(w.version, 13);
	cr_assert(w.handshake && !w.app_data && w.ended);
	cr_assert_eq(cs_tls_exchange_kind(&w, phase), CS_EXCHANGE_TLS_HANDSHAKE);
	w = walk(&phase, "d");
	cr_assert_eq(cs_tls_exchange_kind(&w, phase), CS_EXCHANGE_REQUEST);
}

Test(tls_walk, tls13_without_middlebox_ccs_and_request_with_finished)
{
	uint8_t phase = CS_TLS_HELLO;
	walk(&phase, "c");
	struct cs_tls_exchange w = walk(&phase, "dd"); /* Finished and the request, read together */
	cr_assert_eq(w.version, 13);
	cr_assert(w.app_data && w.ended);
	cr_assert_eq(cs_tls_exchange_kind(&w, phase), CS_EXCHANGE_REQUEST);
}

Test(tls_walk, second_flight_split_over_exchanges)
{
	/* Records are walked where they were read: the phase carries over. */
	uint8_t phase = CS_TLS_HELLO;
	walk(&phase, "c");
	struct cs_tls_exchange w = walk(&phase, "c");
	cr_assert_eq(cs_tls_exchange_kind(&w, phase), CS_EXCHANGE_TLS_HANDSHAKE);
	w = walk(&phase, "ac");
	cr_assert_eq(cs_tls_exchange_kind(&w, phase), CS_EXCHANGE_TLS_HANDSHAKE);
	w = walk(&phase, "d");
	cr_assert_eq(cs_tls_exchange_kind(&w, phase), CS_EXCHANGE_REQUEST);
}

Test(tls_walk, records_not_kept_cannot_be_told)
{
	uint8_t phase = CS_TLS_HELLO;
	walk(&phase, "c");
	uint8_t t[CS_PEEK_TLS_RECORDS] = { 22, 22, 22, 22, 22, 22, 22, 22 };
	struct cs_tls_exchange w;
	cs_tls_walk(&phase, t, CS_PEEK_TLS_RECORDS, 12, false, &w);
	cr_assert_eq(phase, CS_TLS_LOST);
	cr_assert_eq(cs_tls_exchange_kind(&w, phase), CS_EXCHANGE_REQUEST);
	w = walk(&phase, "d");
	cr_assert_not(w.app_data, "a lost connection is not walked on");
}

Test(tls_walk, alerts_after_the_handshake_are_control)
{
	uint8_t phase = CS_TLS_DONE;
	struct cs_tls_exchange w = walk(&phase, "b"); /* close_notify */
	cr_assert_eq(cs_tls_exchange_kind(&w, phase), CS_EXCHANGE_TLS_CONTROL);
}

Test(tls_walk, h2_preface)
{
	cr_assert(cs_is_h2_preface((const uint8_t *)"PRI * HTTP/2.0\r\n", 16));
	cr_assert_not(cs_is_h2_preface((const uint8_t *)"PRI * HTTP/2.0", 10));
	cr_assert_not(cs_is_h2_preface((const uint8_t *)"GET / HTTP/1.1\r\n", 16));
}

/* ---- the engine: records in, requests out ---------------------------------- */

static uint64_t accept_at(uint64_t ts_ns)
{
	struct cs_ev_accept ev = make_accept((struct accept_spec){ .ts_ns = ts_ns, .established_ns = ts_ns - 100 * US,
								    .port = PORT, .tgid = 100, .tid = 7 });
	FEED_OK(engine, ev);
	return ev.sk;
}

/* One exchange: its bytes record (types as in walk(), or first bytes), then its request record. */
/* When the read of each record of the next exchange returned, us after its start (0: all at once). */
static uint32_t next_read_us[CS_PEEK_TLS_RECORDS];

/* The bytes record of an exchange; types: its TLS records' content types, 'a' for 20 and on. */
static struct cs_ev_request_bytes bytes_of(uint64_t sk, uint32_t index, uint64_t start_ns, const uint8_t *first,
					   size_t first_len, const char *types, uint8_t flags)
{
	struct cs_ev_request_bytes bytes =
		make_request_bytes(sk, index, PORT, start_ns + 100 * US, flags | (types ? CS_PEEK_TLS : 0));
	bytes.first_len = (uint8_t)(first_len < CS_PEEK_FIRST_LEN ? first_len : CS_PEEK_FIRST_LEN);
	if (first)
		memcpy(bytes.first, first, bytes.first_len);
	for (size_t i = 0; types && types[i]; i++) {
		if (i < CS_PEEK_TLS_RECORDS) {
			bytes.record_types[i] = (uint8_t)(20 + types[i] - 'a');
			bytes.record_read_us[i] = next_read_us[i];
		}
		bytes.record_count++;
	}
	memset(next_read_us, 0, sizeof(next_read_us));
	return bytes;
}

static void request_of(uint64_t sk, uint32_t index, uint64_t start_ns, uint16_t request_flags)
{
	feed_request(engine, (struct request_spec){ .sk = sk, .index = index, .port = PORT, .start_ns = start_ns,
						    .first_read_ns = start_ns + 10 * US,
						    .first_send_ns = start_ns + 50 * US,
						    .last_send_ns = start_ns + 60 * US, .flags = request_flags });
}

static void exchange_of(uint64_t sk, uint32_t index, uint64_t start_ns, const uint8_t *first, size_t first_len,
			const char *types, uint8_t flags, uint16_t request_flags)
{
	FEED_OK(engine, bytes_of(sk, index, start_ns, first, first_len, types, flags));
	request_of(sk, index, start_ns, request_flags);
}

static void exchange(uint64_t sk, uint32_t index, uint64_t start_ns, const char *first, const char *types,
		     uint8_t flags, uint16_t request_flags)
{
	exchange_of(sk, index, start_ns, (const uint8_t *)first, first ? strnlen(first, CS_PEEK_FIRST_LEN) : 0, types,
		    flags, request_flags);
}

Test(exchanges, tls12_handshake_is_set_up_not_requests)
{
	uint64_t sk = accept_at(T0);
	/* ClientHello queued before the accept; the request 3 ms after it. */
	exchange(sk, 0, T0 - 50 * US, NULL, "c", 0, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, "cac", 0, 0);
	exchange(sk, 2, T0 + 3 * MS, NULL, "d", 0, 0);
	exchange(sk, 3, T0 + 5 * MS, NULL, "d", 0, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 2);
	cr_assert_eq(r->first_on_connection, 1);
	cr_assert_eq(r->tls_connections, 1);
	cr_assert_eq(r->tls_handshakes, 1);
	cr_assert_eq(r->tls12, 1);
	cr_assert_eq(r->tls_handshake_exchanges, 2);
	/* From the accept to the request's bytes: the handshake. */
	cr_assert_eq(r->setup_tls_ns, 3 * MS);
	cr_assert_eq(r->setup_accept_ns, 100 * US);
	cr_assert_eq(r->setup_ns, 3 * MS + 100 * US);
	/* The first request's latency: accept queue + TLS + its own 60 us. */
	cr_assert_eq(r->latency_ns->max, 3 * MS + 100 * US + 60 * US);
}

Test(exchanges, tls13_finished_then_request)
{
	uint64_t sk = accept_at(T0);
	exchange(sk, 0, T0 + 10 * US, NULL, "c", 0, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, "ad", 0, 0);
	exchange(sk, 2, T0 + 2 * MS, NULL, "d", 0, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 1);
	cr_assert_eq(r->tls13, 1);
	cr_assert_eq(r->tls_handshake_exchanges, 2);
	cr_assert_eq(r->setup_tls_ns, 2 * MS - 10 * US);
}

Test(exchanges, tls13_request_read_with_the_finished_is_no_overlap)
{
	/* The server answers the Finished with tickets, then reads the request that came with it. */
	uint64_t sk = accept_at(T0);
	exchange(sk, 0, T0 + 10 * US, NULL, "c", 0, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, "add", 0, CS_REQ_READ_AFTER_SEND);
	exchange(sk, 2, T0 + 2 * MS, NULL, "d", 0, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 2);
	cr_assert_eq(r->connections_multiplexed, 0);
	cr_assert_eq(r->tls_handshake_exchanges, 1);
}

Test(exchanges, tls12_resumed)
{
	uint64_t sk = accept_at(T0);
	exchange(sk, 0, T0 + 10 * US, NULL, "c", 0, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, "acd", 0, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 1);
	cr_assert_eq(r->tls_resumed, 1);
	cr_assert_eq(r->tls_handshakes, 1);
	cr_assert_eq(r->first_on_connection, 1);
}

Test(exchanges, framing_lost_is_said_and_counted_as_requests)
{
	uint64_t sk = accept_at(T0);
	exchange(sk, 0, T0 + 10 * US, NULL, "c", 0, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, "c", CS_PEEK_LOST, 0);
	exchange(sk, 2, T0 + 2 * MS, NULL, NULL, 0, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->tls_lost, 1);
	cr_assert_eq(r->tls_handshake_exchanges, 1);
	cr_assert_eq(r->requests, 2);
}

Test(exchanges, plaintext_first_request_pays_the_accept_queue_only)
{
	uint64_t sk = accept_at(T0);
	exchange(sk, 0, T0 - 50 * US, "GET / HTTP/1.1\r\n", NULL, 0, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, NULL, 0, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 2);
	cr_assert_eq(r->first_on_connection, 1);
	cr_assert_eq(r->tls_connections, 0);
	cr_assert_eq(r->setup_tls_ns, 0);
	cr_assert_eq(r->setup_accept_ns, 100 * US);
}

Test(exchanges, h2_preface_multiplexed_out_of_the_requests)
{
	uint64_t sk = accept_at(T0);
	exchange(sk, 0, T0 + 10 * US, "PRI * HTTP/2.0\r\n", NULL, 0, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, NULL, 0, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 0);
	cr_assert_eq(r->connections_multiplexed, 1);
	cr_assert_eq(r->multiplexed_h2, 1);
	cr_assert_eq(r->multiplexed_exchanges, 2);
	cr_assert_eq(r->latency_ns->count, 0);
}

Test(exchanges, overlap_marks_the_connection_from_there)
{
	uint64_t sk = accept_at(T0);
	exchange(sk, 0, T0 + 10 * US, "GET / HTTP/1.1\r\n", NULL, 0, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, NULL, 0, CS_REQ_READ_AFTER_SEND);
	exchange(sk, 2, T0 + 2 * MS, NULL, NULL, 0, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 1, "only the exchange before the overlap");
	cr_assert_eq(r->connections_multiplexed, 1);
	cr_assert_eq(r->multiplexed_h2, 0);
	cr_assert_eq(r->multiplexed_exchanges, 2);
}

Test(exchanges, requests_read_at_once_mark_the_connection)
{
	/* The probe found a second request behind the first in the first read. */
	uint64_t sk = accept_at(T0);
	exchange(sk, 0, T0 + 10 * US, "GET / HTTP/1.1\r\n", NULL, CS_PEEK_MORE_REQUESTS, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, NULL, 0, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 0, "none of its exchanges is one request");
	cr_assert_eq(r->connections_multiplexed, 1);
	cr_assert_eq(r->multiplexed_one_read, 1);
	cr_assert_eq(r->multiplexed_h2, 0);
	cr_assert_eq(r->multiplexed_exchanges, 2);
	cr_assert_eq(r->latency_ns->count, 0);
}

Test(exchanges, requests_read_at_once_in_a_later_exchange)
{
	/* A plain connection's later exchanges have a bytes record only when flagged. */
	uint64_t sk = accept_at(T0);
	exchange(sk, 0, T0 + 10 * US, "GET / HTTP/1.1\r\n", NULL, 0, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, NULL, CS_PEEK_MORE_REQUESTS, 0);
	/* Read after the answer began too: the connection counts once. */
	exchange(sk, 2, T0 + 2 * MS, NULL, NULL, 0, CS_REQ_READ_AFTER_SEND);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 1, "only the exchange before");
	cr_assert_eq(r->connections_multiplexed, 1);
	cr_assert_eq(r->multiplexed_one_read, 1);
	cr_assert_eq(r->multiplexed_exchanges, 2);
}

Test(exchanges, unfollowed_requests_read_at_once)
{
	uint64_t sk = 0xffff777000000004ull;
	exchange(sk, 0, T0, "GET / HTTP/1.1\r\n", NULL, CS_PEEK_MORE_REQUESTS, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, NULL, 0, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 0);
	cr_assert_eq(r->connections_multiplexed, 1);
	cr_assert_eq(r->multiplexed_one_read, 1);
	cr_assert_eq(r->multiplexed_exchanges, 2);
}

Test(exchanges, close_notify_reset_is_no_keepalive_race)
{
	uint64_t sk = accept_at(T0);
	exchange(sk, 0, T0 + 10 * US, NULL, "c", 0, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, "ad", 0, 0);
	exchange(sk, 2, T0 + 2 * MS, NULL, "d", 0, 0);
	feed_conn_close(engine, (struct close_spec){ .sk = sk, .ts_ns = T0 + 3 * MS, .established_ns = T0 - 100 * US,
						     .last_activity_ns = T0 + 2 * MS, .requests = 3, .port = PORT,
						     .closed_by = CS_CLOSED_BY_SERVER });
	/* The client's close_notify reaches the closed socket: a reset. */
	struct cs_ev_reset reset = make_reset(T0 + 3 * MS + 50 * US, PORT, CS_RESET_SENT, 9);
	FEED_OK(engine, reset);
	cr_assert_eq(engine->lifecycle.tls_close_resets, 1);
	cr_assert_eq(engine->lifecycle.keepalive_race_resets, 0);
	/* Its FIN may draw another: the same close's. */
	FEED_OK(engine, reset);
	cr_assert_eq(engine->lifecycle.tls_close_resets, 2);
	/* A reset of a connection not known to be TLS stays a race. */
	struct cs_ev_reset other = make_reset(T0 + 3 * MS + 60 * US, PORT + 1, CS_RESET_SENT, 9);
	FEED_OK(engine, other);
	cr_assert_eq(engine->lifecycle.keepalive_race_resets, 1);
}

Test(exchanges, bytes_of_an_unknown_connection_are_counted)
{
	exchange(0xffff1234, 0, T0, NULL, "c", 0, 0);
	cr_assert_eq(engine->requests.bytes_unmatched, 1);
}

/* ---- connections whose accept was not seen --------------------------------- */

Test(exchanges, unfollowed_tls_handshake_is_still_set_up)
{
	/* No accept record: an accept call begun before the attach. */
	uint64_t sk = 0xffff777000000001ull;
	exchange(sk, 0, T0, NULL, "c", 0, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, "cac", 0, 0);
	exchange(sk, 2, T0 + 3 * MS, NULL, "d", 0, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 1);
	cr_assert_eq(r->tls_connections, 1);
	cr_assert_eq(r->tls_handshake_exchanges, 2);
	cr_assert_eq(r->first_on_connection, 1);
	cr_assert_eq(r->setup_tls_ns, 3 * MS);
}

Test(exchanges, unfollowed_overlap_and_h2)
{
	uint64_t piped = 0xffff777000000002ull, h2 = 0xffff777000000003ull;
	exchange(piped, 0, T0, "GET /block/100 H", NULL, 0, CS_REQ_READ_AFTER_SEND);
	exchange(piped, 1, T0 + 1 * MS, NULL, NULL, 0, 0);
	exchange(h2, 0, T0, "PRI * HTTP/2.0\r\n", NULL, 0, 0);
	exchange(h2, 1, T0 + 1 * MS, NULL, NULL, 0, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 0);
	cr_assert_eq(r->connections_multiplexed, 2);
	cr_assert_eq(r->multiplexed_h2, 1);
	cr_assert_eq(r->multiplexed_exchanges, 4);
}

/* ---- a ClientHello's ALPN offer -------------------------------------------- */

/* A ClientHello handshake message with one cipher suite and the extensions given. */
static size_t client_hello(uint8_t *out, const uint8_t *extensions, size_t extensions_len, bool with_extensions)
{
	size_t n = 0;
	out[n++] = 1; /* ClientHello */
	n += 3;       /* length, below */
	out[n++] = 3;
	out[n++] = 3;
	memset(out + n, 0xab, 32); /* random */
	n += 32;
	out[n++] = 0; /* session id */
	out[n++] = 0;
	out[n++] = 2;
	out[n++] = 0x13;
	out[n++] = 0x01; /* one suite */
	out[n++] = 1;
	out[n++] = 0; /* compression: null */
	if (with_extensions) {
		out[n++] = (uint8_t)(extensions_len >> 8);
		out[n++] = (uint8_t)extensions_len;
		memcpy(out + n, extensions, extensions_len);
		n += extensions_len;
	}
	out[1] = 0;
	out[2] = (uint8_t)((n - 4) >> 8);
	out[3] = (uint8_t)(n - 4);
	return n;
}

Test(tls_walk, client_hello_alpn_offers)
{
	uint8_t hello[256];
	/* server_name (type 0, 5 bytes), then ALPN "h2", "http/1.1". */
	static const uint8_t h2[] = { 0, 0, 0, 5, 0, 3, 0, 'a', 'b',
				      0, 16, 0, 14, 0, 12, 2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };
	static const uint8_t http11[] = { 0, 16, 0, 11, 0, 9, 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };
	static const uint8_t sni_only[] = { 0, 0, 0, 5, 0, 3, 0, 'a', 'b' };
	size_t n = client_hello(hello, h2, sizeof(h2), true);
	cr_assert_eq(cs_client_hello_alpn(hello, n, n), CS_ALPN_H2);
	/* Cut inside the ALPN list: not told. */
	cr_assert_eq(cs_client_hello_alpn(hello, n - 4, n), CS_ALPN_NOT_TOLD);
	n = client_hello(hello, http11, sizeof(http11), true);
	cr_assert_eq(cs_client_hello_alpn(hello, n, n), CS_ALPN_NO_H2);
	n = client_hello(hello, sni_only, sizeof(sni_only), true);
	cr_assert_eq(cs_client_hello_alpn(hello, n, n), CS_ALPN_NONE);
	n = client_hello(hello, NULL, 0, false);
	cr_assert_eq(cs_client_hello_alpn(hello, n, n), CS_ALPN_NONE);
	hello[0] = 2; /* a ServerHello */
	cr_assert_eq(cs_client_hello_alpn(hello, n, n), CS_ALPN_NOT_TOLD);
}

Test(exchanges, verdict_of_the_last_request_record)
{
	uint64_t sk = accept_at(T0);
	struct cs_ev_request handshake = make_request((struct request_spec){ .sk = sk, .index = 0, .port = PORT, .start_ns = T0 });
	struct cs_request_setup setup;
	exchange(sk, 0, T0 + 10 * US, NULL, "c", 0, 0);
	cr_assert_eq(cs_engine_request_verdict(engine, &handshake, &setup), 0, "a handshake exchange is no request");
	exchange(sk, 1, T0 + 1 * MS, NULL, "ad", 0, 0);
	exchange(sk, 2, T0 + 2 * MS, NULL, "d", 0, 0);
	struct cs_ev_request request = make_request((struct request_spec){ .sk = sk, .index = 2, .port = PORT });
	cr_assert_eq(cs_engine_request_verdict(engine, &request, &setup), 1);
	cr_assert(setup.first && setup.tls);
	cr_assert_eq(cs_engine_request_verdict(engine, &handshake, &setup), -1, "not the last record fed");
}

Test(exchanges, aborted_tls_connection_reset_is_its_close)
{
	uint64_t sk = accept_at(T0);
	exchange(sk, 0, T0 + 10 * US, NULL, "c", 0, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, "ad", 0, 0);
	exchange(sk, 2, T0 + 2 * MS, NULL, "d", 0, 0);
	/* An abort: the socket's local port is cleared before the close record is written. */
	struct cs_ev_conn_close close = make_conn_close((struct close_spec){ .sk = sk, .ts_ns = T0 + 3 * MS,
									     .established_ns = T0 - 100 * US, .port = PORT,
									     .requests = 3, .closed_by = CS_CLOSED_BY_ABORT });
	close.tuple.local_port = 0;
	FEED_OK(engine, close);
	/* The close with the client's close_notify unread: a reset, just after the record. */
	struct cs_ev_reset reset = make_reset(T0 + 3 * MS + 20 * US, PORT, CS_RESET_SENT, 11);
	reset.flags = CS_RESET_UNREAD_REQUEST;
	FEED_OK(engine, reset);
	cr_assert_eq(engine->lifecycle.tls_close_resets, 1);
	cr_assert_eq(engine->lifecycle.keepalive_race_resets, 0);
}

Test(exchanges, request_sharing_the_handshakes_end_starts_at_its_read)
{
	/* TLS 1.2 resumed: CCS and Finished read at once, the request 2 ms later in the same exchange. */
	uint64_t sk = accept_at(T0);
	exchange(sk, 0, T0 + 10 * US, NULL, "c", 0, 0);
	next_read_us[2] = 2000;
	exchange(sk, 1, T0 + 1 * MS, NULL, "acd", 0, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 1);
	/* The handshake ran from the ClientHello to the request's read: 3 ms, not 1. */
	cr_assert_eq(r->setup_tls_ns, 3 * MS - 10 * US);
	/* The request: from its read (T0 + 3 ms) to its last send (T0 + 1.06 ms, before): nothing but set-up. */
	cr_assert_eq(r->latency_ns->max, r->setup_ns);
}

/*
 * A client's close_notify that the server answers (JSSE does): bytes in,
 * bytes out, and no request. In TLS 1.3 it is a type 23 record of 19
 * bytes; a request's record is longer. In TLS 1.2 it shows type 21.
 */
Test(exchanges, tls13_close_notify_answered_is_control_not_a_request)
{
	static const uint8_t alert13[] = { 0x17, 0x03, 0x03, 0x00, 0x13 };
	static const uint8_t request13[] = { 0x17, 0x03, 0x03, 0x00, 0x3e };
	uint64_t sk = accept_at(T0);
	exchange(sk, 0, T0 + 10 * US, NULL, "c", 0, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, "ad", 0, 0);
	exchange_of(sk, 2, T0 + 2 * MS, request13, sizeof(request13), "d", 0, 0);
	exchange_of(sk, 3, T0 + 3 * MS, alert13, sizeof(alert13), "d", 0, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 1);
	cr_assert_eq(r->tls_control_exchanges, 1);
}

Test(exchanges, tls12_close_notify_answered_is_control_not_a_request)
{
	static const uint8_t alert12[] = { 0x15, 0x03, 0x03, 0x00, 0x1a };
	uint64_t sk = accept_at(T0);
	exchange(sk, 0, T0 - 50 * US, NULL, "c", 0, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, "cac", 0, 0);
	exchange(sk, 2, T0 + 3 * MS, NULL, "d", 0, 0);
	exchange_of(sk, 3, T0 + 5 * MS, alert12, sizeof(alert12), "b", 0, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 1);
	cr_assert_eq(r->tls_control_exchanges, 1);
}

Test(exchanges, unfollowed_tls13_close_notify_answered_is_control)
{
	static const uint8_t alert13[] = { 0x17, 0x03, 0x03, 0x00, 0x13 };
	/* No accept record: an accept call begun before the attach. */
	uint64_t sk = 0xffff777000000002ull;
	exchange(sk, 0, T0, NULL, "c", 0, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, "ad", 0, 0);
	exchange(sk, 2, T0 + 2 * MS, NULL, "d", 0, 0);
	exchange_of(sk, 6, T0 + 9 * MS, alert13, sizeof(alert13), "d", 0, 0);
	cr_assert_eq(engine->requests.requests, 1);
	cr_assert_eq(engine->requests.tls_control_exchanges, 1);
}

/* The client closed first: the server answers its close_notify after the close record. */
Test(exchanges, close_notify_answered_after_the_close_is_control)
{
	static const uint8_t alert13[] = { 0x17, 0x03, 0x03, 0x00, 0x13 };
	uint64_t sk = accept_at(T0);
	exchange(sk, 0, T0 + 10 * US, NULL, "c", 0, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, "ad", 0, 0);
	exchange(sk, 2, T0 + 2 * MS, NULL, "d", 0, 0);
	feed_conn_close(engine, (struct close_spec){ .sk = sk, .ts_ns = T0 + 4 * MS, .established_ns = T0 - 100 * US,
						     .last_activity_ns = T0 + 3 * MS, .requests = 4, .port = PORT,
						     .closed_by = CS_CLOSED_BY_CLIENT });
	exchange_of(sk, 3, T0 + 3 * MS, alert13, sizeof(alert13), "d", 0, 0);
	cr_assert_eq(engine->requests.requests, 1);
	cr_assert_eq(engine->requests.tls_control_exchanges, 1);
}

/*
 * Two connections closed by their clients, whose servers answer the
 * close_notify alerts on two CPUs: each bytes record comes before its own
 * request record, but the two pairs interleave.
 */
Test(exchanges, close_notifies_after_two_closes_interleaved_are_control)
{
	static const uint8_t alert13[] = { 0x17, 0x03, 0x03, 0x00, 0x13 };
	uint64_t sks[2];
	for (int c = 0; c < 2; c++) {
		uint64_t sk = sks[c] = accept_at(T0 + (uint64_t)c * MS);
		exchange(sk, 0, T0 + 10 * US, NULL, "c", 0, 0);
		exchange(sk, 1, T0 + 1 * MS, NULL, "ad", 0, 0);
		exchange(sk, 2, T0 + 2 * MS, NULL, "d", 0, 0);
		feed_conn_close(engine, (struct close_spec){ .sk = sk, .ts_ns = T0 + 4 * MS, .established_ns = T0,
							     .last_activity_ns = T0 + 3 * MS, .requests = 4, .port = PORT,
							     .closed_by = CS_CLOSED_BY_CLIENT });
	}
	FEED_OK(engine, bytes_of(sks[0], 3, T0 + 5 * MS, alert13, sizeof(alert13), "d", 0));
	FEED_OK(engine, bytes_of(sks[1], 3, T0 + 5 * MS, alert13, sizeof(alert13), "d", 0));
	request_of(sks[0], 3, T0 + 5 * MS, 0);
	request_of(sks[1], 3, T0 + 5 * MS, 0);
	cr_assert_eq(engine->requests.requests, 2);
	cr_assert_eq(engine->requests.tls_control_exchanges, 2);
	/* A later request record of a socket without its bytes record is a request, as before. */
	request_of(sks[0], 4, T0 + 6 * MS, 0);
	cr_assert_eq(engine->requests.requests, 3);
}

Test(exchanges, a_19_byte_record_of_a_plain_connection_is_a_request)
{
	static const uint8_t bytes[] = { 0x17, 0x03, 0x03, 0x00, 0x13 };
	uint64_t sk = accept_at(T0);
	exchange(sk, 0, T0 + 10 * US, "GET / HTTP/1.1\r\n", NULL, 0, 0);
	exchange_of(sk, 1, T0 + 1 * MS, bytes, sizeof(bytes), NULL, 0, 0);
	cr_assert_eq(engine->requests.requests, 2);
	cr_assert_eq(engine->requests.tls_control_exchanges, 0);
}

/*
 * TLS 1.3 with a HelloRetryRequest: the client's second ClientHello (a big
 * handshake record, after a ChangeCipherSpec) is set-up, its Finished
 * next, then the request; not a TLS 1.2 abbreviated handshake.
 */
Test(exchanges, hello_retry_second_client_hello_is_set_up)
{
	uint64_t sk = accept_at(T0);
	exchange(sk, 0, T0 + 10 * US, NULL, "c", 0, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, "ac", CS_PEEK_BIG_HANDSHAKE, 0);
	exchange(sk, 2, T0 + 2 * MS, NULL, "d", 0, 0);
	exchange(sk, 3, T0 + 3 * MS, NULL, "d", 0, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 1);
	cr_assert_eq(r->tls13, 1);
	cr_assert_eq(r->tls12, 0);
	cr_assert_eq(r->tls_resumed, 0);
	cr_assert_eq(r->tls13_hello_retries, 1);
	cr_assert_eq(r->tls_handshake_exchanges, 3);
}

/* A TLS 1.2 RSA key exchange is big too, but its flight goes on with a ChangeCipherSpec and a Finished. */
Test(exchanges, tls12_rsa_key_exchange_is_no_hello_retry)
{
	uint64_t sk = accept_at(T0);
	exchange(sk, 0, T0 + 10 * US, NULL, "c", 0, 0);
	exchange(sk, 1, T0 + 1 * MS, NULL, "cac", CS_PEEK_BIG_HANDSHAKE, 0);
	exchange(sk, 2, T0 + 2 * MS, NULL, "d", 0, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 1);
	cr_assert_eq(r->tls12, 1);
	cr_assert_eq(r->tls13_hello_retries, 0);
}
