// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of daemon/engine/protocols.c and of what a Redis exchange's count
 * of commands makes of it in the engine: each pipelined command a
 * request of its exchange's times, a count lost keeps the connection out
 * as multiplexed, a read after an answer began is no overlap on a
 * connection whose commands are counted, and connections counted by what
 * their first bytes spoke. PostgreSQL's and MySQL's set-up and goodbyes
 * are no requests; a server that spoke first began the set-up at its
 * accept.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "engine.h"
#include "events.h"
#include "exchanges.h"

#define PORT 6379
#define T0 (100 * SEC)

CS_ENGINE_FIXTURE

TestSuite(protocol_of);
TestSuite(resp, .init = setup, .fini = teardown);
TestSuite(pg, .init = setup, .fini = teardown);
TestSuite(mysql, .init = setup, .fini = teardown);

static enum cs_protocol of(const char *first, size_t len, uint8_t flags)
{
	return cs_protocol_of((const uint8_t *)first, len, flags);
}

Test(protocol_of, first_bytes)
{
	cr_assert_eq(of("GET / HTTP/1.1\r\n", 16, 0), CS_PROTOCOL_HTTP1);
	cr_assert_eq(of("PRI * HTTP/2.0\r\n", 16, 0), CS_PROTOCOL_H2);
	cr_assert_eq(of("\x16\x03\x01\x02\x00", 5, CS_PEEK_TLS), CS_PROTOCOL_TLS);
	cr_assert_eq(of("*1\r\n$4\r\nPING\r\n", 14, CS_PEEK_RESP), CS_PROTOCOL_RESP);
	/* A start-up message of protocol 3.0, 41 bytes; an SSLRequest; a CancelRequest. */
	cr_assert_eq(of("\x00\x00\x00\x29\x00\x03\x00\x00user", 12, 0), CS_PROTOCOL_POSTGRESQL);
	cr_assert_eq(of("\x00\x00\x00\x08\x04\xd2\x16\x2f", 8, 0), CS_PROTOCOL_POSTGRESQL);
	cr_assert_eq(of("\x00\x00\x00\x10\x04\xd2\x16\x2e\x00\x00", 10, 0), CS_PROTOCOL_POSTGRESQL);
	/* A cancel of the wrong length, a huge length, a lower-case word, nothing seen. */
	cr_assert_eq(of("\x00\x00\x00\x09\x04\xd2\x16\x2e", 8, 0), CS_PROTOCOL_OTHER);
	cr_assert_eq(of("\x00\x01\x00\x00\x00\x03\x00\x00", 8, 0), CS_PROTOCOL_OTHER);
	cr_assert_eq(of("get key\r\n", 9, 0), CS_PROTOCOL_OTHER);
	cr_assert_eq(of("", 0, CS_PEEK_UNREADABLE), CS_PROTOCOL_OTHER);
	cr_assert_eq(of("GET", 3, 0), CS_PROTOCOL_OTHER, "a method cut before its space is not told");
}

static uint64_t accept_at(uint64_t ts_ns)
{
	struct cs_ev_accept ev = make_accept((struct accept_spec){ .ts_ns = ts_ns, .established_ns = ts_ns - 100 * US, .port = PORT, .tgid = 100, .tid = 7 });
	FEED_OK(engine, ev);
	return ev.sk;
}

/* A Redis exchange's bytes record: its commands (the probe sends one only when not one). */
static void resp_bytes(uint64_t sk, uint32_t index, uint64_t start_ns, uint16_t commands, uint8_t flags)
{
	struct cs_ev_request_bytes bytes = make_request_bytes(sk, index, PORT, start_ns + 100 * US, CS_PEEK_RESP | flags);
	bytes.commands = commands;
	if (index == 0) {
		memcpy(bytes.first, "*1\r\n$4\r\nPING\r\n", 14);
		bytes.first_len = 14;
	}
	FEED_OK(engine, bytes);
}

/* Its request record: 300 us from the bytes to the last write, 200 of them handling. */
static void resp_request(uint64_t sk, uint32_t index, uint64_t start_ns, uint16_t flags)
{
	feed_request(engine, (struct request_spec){ .sk = sk, .index = index, .port = PORT, .start_ns = start_ns, .first_read_ns = start_ns + 50 * US, .first_send_ns = start_ns + 250 * US, .last_send_ns = start_ns + 300 * US, .flags = flags });
}

Test(resp, pipelined_commands_are_each_a_request)
{
	uint64_t sk = accept_at(T0);
	resp_bytes(sk, 0, T0 + 10 * US, 16, 0);
	resp_request(sk, 0, T0 + 10 * US, 0);
	/* One command: no bytes record after the first exchange. */
	resp_request(sk, 1, T0 + 1 * MS, 0);
	resp_bytes(sk, 2, T0 + 2 * MS, 16, 0);
	resp_request(sk, 2, T0 + 2 * MS, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 33);
	cr_assert_eq(r->latency_ns->count, 33, "each command in the latency");
	cr_assert_eq(r->pipelined_exchanges, 2);
	cr_assert_eq(r->pipelined_commands, 32);
	cr_assert_eq(r->first_on_connection, 1, "the connection's set-up paid once");
	cr_assert_eq(r->connections_multiplexed, 0);
	cr_assert_eq(r->connections_by_protocol[CS_PROTOCOL_RESP], 1);
	cr_assert_eq(r->cause_ns[CS_CAUSE_HANDLER]->count, 33);
	cr_assert_eq(cs_hist_count_at_or_below(r->cause_ns[CS_CAUSE_HANDLER], 190 * US), 0,
		     "each command's handler time is its exchange's");
	const struct cs_thread_stats *t = cs_u64map_get(&engine->threads, 7);
	cr_assert_not_null(t);
	cr_assert_eq(t->requests, 33);
}

Test(resp, a_read_after_an_answer_began_is_no_overlap)
{
	uint64_t sk = accept_at(T0);
	resp_bytes(sk, 0, T0 + 10 * US, 1, 0);
	resp_request(sk, 0, T0 + 10 * US, 0);
	resp_bytes(sk, 1, T0 + 1 * MS, 40, 0);
	resp_request(sk, 1, T0 + 1 * MS, CS_REQ_READ_AFTER_SEND);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->connections_multiplexed, 0, "its commands were counted as they were read");
	cr_assert_eq(r->requests, 41);
}

Test(resp, a_count_lost_keeps_the_connection_out)
{
	uint64_t sk = accept_at(T0);
	resp_bytes(sk, 0, T0 + 10 * US, 16, 0);
	resp_request(sk, 0, T0 + 10 * US, 0);
	resp_bytes(sk, 1, T0 + 1 * MS, 3, CS_PEEK_UNCOUNTED);
	resp_request(sk, 1, T0 + 1 * MS, 0);
	resp_request(sk, 2, T0 + 2 * MS, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 16, "only the counted exchange's");
	cr_assert_eq(r->connections_multiplexed, 1);
	cr_assert_eq(r->multiplexed_uncounted, 1);
	cr_assert_eq(r->multiplexed_one_read, 0);
	cr_assert_eq(r->multiplexed_exchanges, 2);
}

Test(resp, an_adopted_connections_pipeline_is_counted)
{
	/* Older than the attach: not followed, its commands counted from an idle moment. */
	uint64_t sk = 0xffff777000000042ull;
	resp_bytes(sk, 3, T0, 16, 0);
	resp_request(sk, 3, T0, CS_REQ_ADOPTED);
	resp_bytes(sk, 4, T0 + 1 * MS, 8, CS_PEEK_UNCOUNTED);
	resp_request(sk, 4, T0 + 1 * MS, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 16);
	cr_assert_eq(r->pipelined_commands, 16);
	cr_assert_eq(r->multiplexed_uncounted, 1);
	cr_assert_eq(r->connections_by_protocol[CS_PROTOCOL_RESP], 0, "its first bytes were not seen");
}

/* A PostgreSQL exchange's bytes record: its queries, and what else it read. */
static void pg_bytes(uint64_t sk, uint32_t index, uint64_t start_ns, uint16_t queries, uint8_t messages)
{
	struct cs_ev_request_bytes bytes = make_request_bytes(sk, index, PORT, start_ns + 100 * US, CS_PEEK_PG);
	bytes.commands = queries;
	bytes.messages = messages;
	if (index == 0) {
		memcpy(bytes.first, "\x00\x00\x00\x08\x04\xd2\x16\x2f", 8); /* an SSLRequest */
		bytes.first_len = 8;
	}
	FEED_OK(engine, bytes);
}

Test(pg, start_up_is_set_up_paid_by_the_first_query_and_terminate_no_request)
{
	uint64_t sk = accept_at(T0);
	/* SSLRequest ('N'), then the start-up: set-up. */
	pg_bytes(sk, 0, T0 + 10 * US, 0, CS_MSG_SETUP);
	resp_request(sk, 0, T0 + 10 * US, 0);
	pg_bytes(sk, 1, T0 + 1 * MS, 0, CS_MSG_SETUP);
	resp_request(sk, 1, T0 + 1 * MS, 0);
	/* The query: no record (one request, nothing else). */
	resp_request(sk, 2, T0 + 20 * MS, 0);
	/* Three Syncs read at once: an extended-protocol pipeline. */
	pg_bytes(sk, 3, T0 + 30 * MS, 3, 0);
	resp_request(sk, 3, T0 + 30 * MS, 0);
	/* Terminate: unanswered. */
	pg_bytes(sk, 4, T0 + 40 * MS, 0, CS_MSG_GOODBYE);
	resp_request(sk, 4, T0 + 40 * MS, CS_REQ_NO_RESPONSE);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 4, "the query and the pipeline's 3");
	cr_assert_eq(r->unanswered, 0, "the goodbye is no unanswered request");
	cr_assert_eq(r->protocol_setup_exchanges, 2);
	cr_assert_eq(r->goodbye_exchanges, 1);
	cr_assert_eq(r->protocol_setups, 1);
	cr_assert_eq(r->connections_by_protocol[CS_PROTOCOL_POSTGRESQL], 1);
	/* From the connection's first bytes (T0 + 10 us) to the query's (T0 + 20 ms). */
	cr_assert_eq(r->setup_protocol_ns, 20 * MS - 10 * US);
	cr_assert_eq(r->setup_accept_ns, 0, "its bytes came after the accept");
}

/* A MySQL exchange's bytes record: its commands, and what else it read. */
static void mysql_bytes(uint64_t sk, uint32_t index, uint64_t start_ns, uint16_t commands, uint8_t messages)
{
	struct cs_ev_request_bytes bytes = make_request_bytes(sk, index, PORT, start_ns + 100 * US, 0);
	bytes.protocol = CS_WIRE_PROTOCOL_MYSQL;
	bytes.commands = commands;
	bytes.messages = messages;
	if (index == 0) {
		memcpy(bytes.first, "\xad\x00\x00\x01", 4); /* a handshake response's header, read alone */
		bytes.first_len = 4;
	}
	FEED_OK(engine, bytes);
}

Test(mysql, the_greeting_and_authentication_are_set_up_from_the_accept)
{
	uint64_t sk = accept_at(T0);
	/* The greeting went out at the accept; the handshake response came 200 us later. */
	mysql_bytes(sk, 0, T0 + 200 * US, 0, CS_MSG_GREETING | CS_MSG_SETUP);
	resp_request(sk, 0, T0 + 200 * US, 0);
	/* A query: no record (one command, nothing else). */
	resp_request(sk, 1, T0 + 1 * MS, 0);
	/* COM_STMT_CLOSE and the next query in one exchange: one answered command. */
	mysql_bytes(sk, 2, T0 + 2 * MS, 1, 0);
	resp_request(sk, 2, T0 + 2 * MS, 0);
	/* COM_QUIT: unanswered. */
	mysql_bytes(sk, 3, T0 + 3 * MS, 0, CS_MSG_GOODBYE);
	resp_request(sk, 3, T0 + 3 * MS, CS_REQ_NO_RESPONSE);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 2, "the two queries");
	cr_assert_eq(r->unanswered, 0, "the goodbye is no unanswered request");
	cr_assert_eq(r->protocol_setup_exchanges, 1);
	cr_assert_eq(r->goodbye_exchanges, 1);
	cr_assert_eq(r->greetings, 1);
	cr_assert_eq(r->protocol_setups, 1);
	cr_assert_eq(r->connections_by_protocol[CS_PROTOCOL_MYSQL], 1);
	/* The accept queue (100 us before the accept), then from the accept to the query's start. */
	cr_assert_eq(r->setup_accept_ns, 100 * US);
	cr_assert_eq(r->setup_protocol_ns, 1 * MS);
}

Test(mysql, a_lost_walk_keeps_the_connection_out)
{
	uint64_t sk = accept_at(T0);
	mysql_bytes(sk, 0, T0 + 200 * US, 0, CS_MSG_GREETING | CS_MSG_SETUP);
	resp_request(sk, 0, T0 + 200 * US, 0);
	resp_request(sk, 1, T0 + 1 * MS, 0);
	struct cs_ev_request_bytes lost = make_request_bytes(sk, 2, PORT, T0 + 2 * MS, CS_PEEK_UNCOUNTED);
	lost.protocol = CS_WIRE_PROTOCOL_MYSQL;
	FEED_OK(engine, lost);
	resp_request(sk, 2, T0 + 2 * MS, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 1, "the query before the walk was lost");
	cr_assert_eq(r->multiplexed_uncounted, 1);
}

Test(mysql, a_greeting_is_counted_on_any_protocol)
{
	uint64_t sk = accept_at(T0);
	struct cs_ev_request_bytes bytes = make_request_bytes(sk, 0, PORT, T0 + 1 * MS, 0);
	memcpy(bytes.first, "\x01\x02\x03\x04", 4); /* a binary protocol whose server spoke first */
	bytes.first_len = 4;
	bytes.messages = CS_MSG_GREETING;
	FEED_OK(engine, bytes);
	resp_request(sk, 0, T0 + 1 * MS, 0);
	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->greetings, 1);
	cr_assert_eq(r->connections_by_protocol[CS_PROTOCOL_OTHER], 1);
	cr_assert_eq(r->requests, 1, "its exchange a request: no set-up known of it");
	cr_assert_eq(r->protocol_setups, 0);
}
