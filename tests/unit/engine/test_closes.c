// SPDX-License-Identifier: BSD-2-Clause
/*
 * Server closes, idle or not. A close is idle when the server waited for a
 * request that never came: it comes at least IDLE_CLOSE_MIN_NS after the
 * connection's last bytes. A close right after the answer that the machine
 * delayed (its closing thread runnable but not running meanwhile) is not
 * one, however late it comes.
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
