// SPDX-License-Identifier: BSD-2-Clause
/*
 * Server closes, idle or not. A close is idle when the server waited for a
 * request that never came: it comes at least IDLE_CLOSE_MIN_NS after the
 * connection's last bytes. A close right after the answer that the machine
 * delayed (its closing thread runnable but not running meanwhile) is not
 * one, however late it comes. Nor is a close with a request waiting that
 * the server never read: the connection was not idle.
 */
#include <criterion/criterion.h>

#include "engine.h"
#include "events.h"

#define PORT 8080

CS_ENGINE_FIXTURE

TestSuite(closes, .init = setup, .fini = teardown);

/* One request answered at answered_ns, then closed by the server at closed_ns. */
static void server_close(uint64_t sk, uint64_t answered_ns, uint64_t closed_ns, uint64_t closer_runq_ns)
{
	feed_conn_close(engine, (struct close_spec){ .sk = sk, .port = PORT, .ts_ns = closed_ns,
						     .established_ns = answered_ns - MS, .last_activity_ns = answered_ns,
						     .requests = 1, .closed_by = CS_CLOSED_BY_SERVER,
						     .closer_runq_ns = closer_runq_ns });
}

Test(closes, a_close_the_run_queue_delayed_is_not_idle)
{
	/* 10 ms after the answer, 9.5 ms of it waiting for a CPU: closed right after the answer. */
	server_close(0xffff880000001000ull, 1 * SEC, 1 * SEC + 10 * MS, 9500 * US);
	/* The wait cannot exceed the gap: a larger one is taken as the whole gap. */
	server_close(0xffff880000001040ull, 2 * SEC, 2 * SEC + 10 * MS, 20 * MS);
	cr_expect_eq(engine->lifecycle.closed_by[CS_CLOSED_BY_SERVER], 2);
	cr_expect_eq(engine->lifecycle.server_idle_closes, 0);
	cr_expect_eq(engine->lifecycle.idle_gap_ns->count, 0);
}

Test(closes, an_idle_close_stays_idle_with_a_wait_in_it)
{
	/* 10 ms after the answer with no wait known: idle. */
	server_close(0xffff880000001000ull, 1 * SEC, 1 * SEC + 10 * MS, 0);
	/* A 200 ms timeout whose close waited 50 ms for a CPU: still idle, its gap the whole 250 ms. */
	server_close(0xffff880000001040ull, 2 * SEC, 2 * SEC + 250 * MS, 50 * MS);
	/* 10 ms, 4 ms of it waiting: 6 ms the server did not close. */
	server_close(0xffff880000001080ull, 3 * SEC, 3 * SEC + 10 * MS, 4 * MS);
	cr_expect_eq(engine->lifecycle.server_idle_closes, 3);
	cr_expect_eq(engine->lifecycle.idle_gap_ns->count, 3);
	cr_expect_geq(engine->lifecycle.idle_gap_ns->max, 250 * MS, "the gap is the connection's, wait included");
}

Test(closes, a_clients_close_is_never_idle)
{
	feed_conn_close(engine, (struct close_spec){ .sk = 0xffff880000001000ull, .port = PORT, .ts_ns = 5 * SEC,
						     .established_ns = SEC, .last_activity_ns = 2 * SEC, .requests = 1,
						     .closed_by = CS_CLOSED_BY_CLIENT });
	cr_expect_eq(engine->lifecycle.server_idle_closes, 0);
}

/*
 * A connection answered at answered_ns whose client sent its next request
 * at next_ns, which the server closed at closed_ns without reading it: the
 * probes write that request (unread, unanswered), then the close.
 */
static void close_with_request_waiting(uint64_t sk, uint64_t answered_ns, uint64_t next_ns, uint64_t closed_ns)
{
	FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tgid = 100, .tid = 3,
							     .established_ns = answered_ns - 2 * MS,
							     .ts_ns = answered_ns - 2 * MS },
					sk, 0x7f000001, (uint16_t)(40000 + sk % 1000)));
	feed_request(engine, (struct request_spec){ .sk = sk, .port = PORT, .ts_ns = next_ns,
						    .start_ns = answered_ns - 2 * MS, .first_read_ns = answered_ns - MS,
						    .first_send_ns = answered_ns, .last_send_ns = answered_ns,
						    .drain_end_ns = answered_ns });
	feed_request(engine, (struct request_spec){ .sk = sk, .port = PORT, .index = 1, .ts_ns = closed_ns,
						    .start_ns = next_ns, .flags = CS_REQ_UNREAD | CS_REQ_NO_RESPONSE });
	feed_conn_close(engine, (struct close_spec){ .sk = sk, .port = PORT, .ts_ns = closed_ns,
						     .established_ns = answered_ns - 2 * MS, .last_activity_ns = next_ns,
						     .requests = 2, .client_ipv4 = 0x7f000001,
						     .client_port = (uint16_t)(40000 + sk % 1000),
						     .closed_by = CS_CLOSED_BY_SERVER });
}

Test(closes, a_close_with_a_request_waiting_unread_is_not_idle)
{
	/* Apache's event MPM with no worker free: the next request waited 40 ms, then the close. */
	close_with_request_waiting(0xffff880000002000ull, 1 * SEC, 1 * SEC + 100 * US, 1 * SEC + 40100 * US);
	close_with_request_waiting(0xffff880000002040ull, 2 * SEC, 2 * SEC + 100 * US, 2 * SEC + 20100 * US);
	cr_expect_eq(engine->lifecycle.server_idle_closes, 0);
	cr_expect_eq(engine->lifecycle.idle_gap_ns->count, 0);
	cr_expect_eq(engine->lifecycle.server_unread_closes, 2);
	cr_expect_eq(engine->lifecycle.unread_close_wait_ns, 60 * MS);
	cr_expect_eq(engine->requests.unanswered, 2);
}

Test(closes, a_request_just_before_the_close_is_dropped_too_never_idle)
{
	/* The request came 200 us before the close: unread all the same, the connection not idle. */
	close_with_request_waiting(0xffff880000002000ull, 1 * SEC, 1 * SEC + 300 * MS, 1 * SEC + 300200 * US);
	cr_expect_eq(engine->lifecycle.server_idle_closes, 0);
	cr_expect_eq(engine->lifecycle.server_unread_closes, 1);
	cr_expect_eq(engine->lifecycle.unread_close_wait_ns, 200 * US);
}

Test(closes, an_adopted_connections_close_with_a_request_waiting_is_not_idle)
{
	/* Older than the attach (its accept unseen), followed from an idle moment: the records alone. */
	uint64_t sk = 0xffff880000003000ull;
	feed_request(engine, (struct request_spec){ .sk = sk, .port = PORT, .index = 1, .ts_ns = SEC + 40 * MS,
						    .start_ns = SEC,
						    .flags = CS_REQ_UNREAD | CS_REQ_NO_RESPONSE | CS_REQ_ADOPTED });
	feed_conn_close(engine, (struct close_spec){ .sk = sk, .port = PORT, .ts_ns = SEC + 40 * MS,
						     .established_ns = SEC / 2, .last_activity_ns = SEC, .requests = 1,
						     .closed_by = CS_CLOSED_BY_SERVER, .partial = 1 });
	cr_expect_eq(engine->lifecycle.server_idle_closes, 0);
	cr_expect_eq(engine->lifecycle.server_unread_closes, 1);
	cr_expect_eq(engine->lifecycle.unread_close_wait_ns, 40 * MS);
}
