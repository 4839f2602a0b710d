// SPDX-License-Identifier: BSD-2-Clause
/*
 * The local clients (clients.c): each read of an answer at the client's
 * end, joined to the server's request by the connection's key whichever
 * record comes first, and the client's threads' load; and client_bound
 * (analysis/clients.c) from them.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "attrib.h"
#include "clients.h"
#include "engine.h"
#include "engine_internal.h"
#include "events.h"

#define PORT 8080
#define T0 (100 * SEC)
#define KEY(n) cs_client_key(0x0100007f, (uint16_t)(40000 + (n)), PORT)
#define SK(n) (0xffff888600000000ull + (n))

CS_ENGINE_FIXTURE

TestSuite(clients, .init = setup, .fini = teardown);

/* A kept-alive connection's request n: 50 us on the server from start_ns, its answer out at its end. */
static struct request_spec request(uint32_t n, uint64_t start_ns)
{
	return (struct request_spec){ .sk = SK(n), .port = PORT, .index = 1, .start_ns = start_ns,
				      .first_read_ns = start_ns + 10 * US, .first_send_ns = start_ns + 40 * US,
				      .last_send_ns = start_ns + 50 * US, .drain_end_ns = start_ns + 50 * US,
				      .client_key = KEY(n) };
}

static struct client_read_spec read_of(uint32_t n, uint64_t arrived_ns, uint64_t read_ns)
{
	return (struct client_read_spec){ .client_key = KEY(n), .arrived_ns = arrived_ns, .read_ns = read_ns };
}

Test(clients, a_read_before_its_request_record_is_joined)
{
	/* Kept alive: the request's record comes when its next request arrives, after the client's read. */
	struct request_spec r = request(1, T0);
	FEED_OK(engine, make_client_read(read_of(1, T0 + 41 * US, T0 + 1050 * US)));
	r.ts_ns = T0 + 1100 * US;
	feed_request(engine, r);
	cr_assert_eq(engine->client_count, 1);
	const struct cs_client_stats *c = &engine->clients[0];
	cr_expect_eq(c->tgid, 300);
	cr_expect_str_eq(c->comm, "wrk");
	cr_expect_eq(c->reads, 1);
	cr_expect_eq(c->joined, 1);
	/* The server's 50 us, then the answer read 1 ms after its last byte went out. */
	cr_expect_eq(c->server_ns->max, 50 * US);
	cr_expect_eq(c->seen_ns->max, 1050 * US);
	cr_expect_eq(c->read_delay_ns->max, 1009 * US);
	cr_expect_eq(engine->client_pending.count, 0, "joined: nothing waits");
}

Test(clients, reads_after_a_socket_s_first_keep_the_name_it_gave)
{
	/* The probes name the reading thread on a socket's first read only. */
	struct client_read_spec first = read_of(1, T0 + 41 * US, T0 + 60 * US);
	first.flags = CS_CLIENT_FIRST;
	FEED_OK(engine, make_client_read(first));
	struct client_read_spec next = read_of(1, T0 + 141 * US, T0 + 160 * US);
	next.comm = "";
	FEED_OK(engine, make_client_read(next));
	cr_assert_eq(engine->client_count, 1);
	cr_expect_str_eq(engine->clients[0].comm, "wrk");
	cr_expect_eq(engine->clients[0].reads, 2);
	cr_expect_eq(engine->clients[0].connections, 1);
}

Test(clients, a_request_record_before_its_read_is_joined)
{
	/* The server closed after its answer: its record comes at the close, before the client reads. */
	feed_request(engine, request(2, T0));
	FEED_OK(engine, make_client_read(read_of(9, T0, T0 + 5 * US))); /* another client is known */
	feed_request(engine, request(3, T0));
	FEED_OK(engine, make_client_read(read_of(3, T0 + 45 * US, T0 + 250 * US)));
	const struct cs_client_stats *c = &engine->clients[0];
	cr_expect_eq(c->joined, 1);
	cr_expect_eq(c->seen_ns->max, 250 * US);
	cr_expect_eq(c->server_ns->max, 50 * US);
}

Test(clients, a_read_of_an_earlier_answer_is_not_joined)
{
	/* Bytes that came before the server began this answer belong to another. */
	FEED_OK(engine, make_client_read(read_of(1, T0 - 5 * US, T0 + 100 * US)));
	feed_request(engine, request(1, T0));
	cr_expect_eq(engine->clients[0].joined, 0);
	cr_expect_eq(engine->clients[0].seen_ns->count, 0);
}

Test(clients, leftover_reads_are_not_waits_but_move_the_answer_s_end)
{
	FEED_OK(engine, make_client_read(read_of(1, T0 + 45 * US, T0 + 60 * US)));
	struct client_read_spec rest = read_of(1, T0 + 60 * US, T0 + 400 * US);
	rest.flags = CS_CLIENT_LEFTOVER;
	FEED_OK(engine, make_client_read(rest));
	feed_request(engine, request(1, T0));
	const struct cs_client_stats *c = &engine->clients[0];
	cr_expect_eq(c->reads, 1, "the leftover is the same answer");
	cr_expect_eq(c->read_delay_ns->count, 1);
	cr_expect_eq(c->read_delay_ns->max, 15 * US);
	cr_expect_eq(c->seen_ns->max, 400 * US, "the client has the answer at its last read");
}

Test(clients, connections_threads_and_their_load)
{
	/* Two threads over 1 s: one on a CPU 900 ms and waiting 50 ms, the other 100 ms. */
	struct client_read_spec a = read_of(1, T0, T0 + 1 * US), b = read_of(2, T0, T0 + 2 * US);
	a.flags = b.flags = CS_CLIENT_FIRST;
	b.tid = 302;
	FEED_OK(engine, make_client_read(a));
	FEED_OK(engine, make_client_read(b));
	a = read_of(1, T0 + SEC, T0 + SEC + 1 * US);
	a.thread_cpu_ns = 900 * MS;
	a.thread_runq_ns = 50 * MS;
	b = read_of(2, T0 + SEC, T0 + SEC + 2 * US);
	b.tid = 302;
	b.thread_cpu_ns = 100 * MS;
	FEED_OK(engine, make_client_read(a));
	FEED_OK(engine, make_client_read(b));
	const struct cs_client_stats *c = &engine->clients[0];
	cr_expect_eq(c->connections, 2);
	cr_expect_eq(c->threads_seen, 2);
	struct cs_client_load load;
	cs_client_load(c, &load);
	cr_expect_eq(load.threads, 2);
	cr_expect_float_eq(load.busiest_share, 0.9, 1e-6);
	cr_expect_float_eq(load.busiest_runq_share, 0.05, 1e-6);
	cr_expect_eq(load.cpu_ns, 1000 * MS);
}

/*
 * n answers on one connection, 1 ms apart: the server server_ns each, the
 * client reading each delay_ns after it went out, its thread on a CPU
 * cpu_per_answer_ns between two.
 */
static void answers(uint32_t n, uint64_t server_ns, uint64_t delay_ns, uint64_t cpu_per_answer_ns)
{
	for (uint32_t i = 0; i < n; i++) {
		uint64_t start = T0 + i * MS;
		struct client_read_spec r = read_of(1, start + server_ns - 5 * US, start + server_ns + delay_ns);
		r.thread_cpu_ns = i * cpu_per_answer_ns;
		FEED_OK(engine, make_client_read(r));
		struct request_spec q = request(1, start);
		q.first_send_ns = start + server_ns - 10 * US;
		q.last_send_ns = q.drain_end_ns = start + server_ns;
		q.ts_ns = start + server_ns + delay_ns + 10 * US;
		feed_request(engine, q);
	}
}

static struct cs_client_bound_condition condition(void)
{
	struct cs_conditions *cond = calloc(1, sizeof(*cond));
	cr_assert_not_null(cond);
	cs_client_bound_condition(engine, cond);
	struct cs_client_bound_condition c = cond->client_bound;
	free(cond);
	return c;
}

Test(clients, a_client_that_reads_late_is_bound)
{
	answers(200, 50 * US, 300 * US, 100 * US);
	struct cs_client_bound_condition c = condition();
	cr_expect(c.flagged);
	cr_expect_eq(c.worst.tgid, 300);
	cr_expect_gt(c.worst.read_delay_p99_ns, c.worst.server_p99_ns);
	cr_expect_geq(c.worst.seen_p99_ns, 345 * US);
	cr_expect_float_eq(c.worst.busy_share, 0.1, 0.01);
}

Test(clients, a_prompt_client_is_not_bound)
{
	answers(200, 50 * US, 5 * US, 100 * US);
	cr_expect_not(condition().flagged);
}

Test(clients, a_saturated_client_is_bound_by_less)
{
	/* 100 us late against the server's 200 us: bound only when its thread never rests. */
	answers(200, 200 * US, 100 * US, 100 * US);
	cr_expect_not(condition().flagged);
	cs_engine_free(engine);
	engine = cs_engine_new();
	answers(200, 200 * US, 100 * US, 1 * MS);
	struct cs_client_bound_condition c = condition();
	cr_expect_geq(c.worst.busy_share, 0.9);
	cr_expect(c.flagged);
}

/*
 * 200 answers of a thread on a CPU all the time, the server server_ns each:
 * one in late_one_in read late_ns after it came, the others 5 us after.
 */
static void busy_reads(uint32_t late_one_in, uint64_t late_ns, uint64_t server_ns)
{
	for (uint32_t i = 0; i < 200; i++) {
		uint64_t start = T0 + i * MS, delay = i % late_one_in == 0 ? late_ns : 5 * US;
		struct client_read_spec r = read_of(1, start + server_ns - 5 * US, start + server_ns + delay);
		r.thread_cpu_ns = i * MS;
		FEED_OK(engine, make_client_read(r));
		struct request_spec q = request(1, start);
		q.first_send_ns = start + server_ns - 10 * US;
		q.last_send_ns = q.drain_end_ns = start + server_ns;
		q.ts_ns = start + server_ns + 10 * US + delay;
		feed_request(engine, q);
	}
}

Test(clients, a_busy_poller_that_reads_at_once_is_not_saturated)
{
	/* It spins: nearly every answer read at once, one in fifty late (the machine stalled it). */
	busy_reads(50, 100 * US, 200 * US);
	/* Its read delay p99 (105 us) is above a quarter of the server's 200 us: only its p90 tells. */
	cr_expect_not(condition().flagged);
}

Test(clients, a_loop_at_its_limit_is_saturated_though_its_median_is_prompt)
{
	/*
	 * ab at its limit: the answers that came while it worked read at once,
	 * every other one late, 300 us against the server's 500 us.
	 */
	busy_reads(2, 300 * US, 500 * US);
	struct cs_client_bound_condition c = condition();
	cr_expect_lt(c.worst.read_delay_p50_ns, 25 * US);
	cr_expect_lt(c.worst.read_delay_p99_ns, c.worst.server_p99_ns);
	cr_expect(c.flagged);
}

Test(clients, a_delay_under_the_floor_is_no_client_s)
{
	/* A busy client 30 us late on a 40 us server: under the floor. */
	answers(200, 40 * US, 30 * US, 1 * MS);
	cr_expect_not(condition().flagged);
}

Test(clients, too_few_answers_say_nothing)
{
	answers(20, 50 * US, 300 * US, 100 * US);
	cr_expect_not(condition().flagged);
}

/* Connection n's close at ts_ns, from 127.0.0.1:40000+n, with requests. */
static void close_of(uint32_t n, uint64_t ts_ns)
{
	feed_conn_close(engine, (struct close_spec){ .sk = SK(n), .ts_ns = ts_ns, .established_ns = T0 - SEC,
						     .requests = 3, .client_ipv4 = 0x7f000001,
						     .client_port = (uint16_t)(40000 + n), .port = PORT,
						     .closed_by = CS_CLOSED_BY_SERVER,
						     .flags = CS_CLOSE_CLIENTS_FOLLOWED });
}

Test(clients, a_connection_whose_client_never_read_is_remote)
{
	struct client_read_spec local = read_of(1, T0, T0 + 5 * US);
	local.flags = CS_CLIENT_FIRST;
	FEED_OK(engine, make_client_read(local));
	close_of(1, T0 + MS);                        /* its client read first: local */
	close_of(2, T0 + MS);                        /* no read before its close... */
	struct client_read_spec late = read_of(2, T0 + 2 * MS, T0 + 3 * MS);
	late.flags = CS_CLIENT_FIRST;
	FEED_OK(engine, make_client_read(late));     /* ...then its client read the last answer: local */
	close_of(3, T0 + 4 * MS);                    /* never read: remote */
	cr_expect_eq(cs_engine_remote_connections(engine), 1);
	cr_expect_eq(engine->remote_connections, 0, "not yet swept: waiting a second for a read");
	cs_clients_sweep(engine, T0 + 2 * SEC);
	cr_expect_eq(engine->remote_connections, 1);
	cr_expect_eq(cs_engine_remote_connections(engine), 1);
	cr_expect_eq(engine->client_conns.count, 0);
}

Test(clients, without_the_clients_followed_no_connection_is_said_remote)
{
	/* --no-clients, or a trace from probes that did not follow them. */
	feed_conn_close(engine, (struct close_spec){ .sk = SK(1), .ts_ns = T0, .established_ns = T0 - SEC,
						     .requests = 3, .client_ipv4 = 0x7f000001, .client_port = 40001,
						     .port = PORT, .closed_by = CS_CLOSED_BY_CLIENT });
	cr_expect_eq(cs_engine_remote_connections(engine), 0);
}
