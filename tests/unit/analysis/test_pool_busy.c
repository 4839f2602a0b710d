// SPDX-License-Identifier: BSD-2-Clause
/*
 * Was the pool busy while requests waited for it? The part of each wait
 * the thread that took the request spent serving others (pool_waits.c):
 * pool_saturation needs it, and a wait for threads that were idle is not
 * called a full pool.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "attrib.h"
#include "engine.h"
#include "events.h"
#include "figures_check.h"
#include "report.h"
#include "report_render.h"

#define PORT 8080
#define T0 (100 * SEC)
#define SK(n) (0xffff888400000000ull + (n))
#define POLLER 3
#define POOL_FIRST 11
#define POOL_THREADS 4

CS_ENGINE_FIXTURE

TestSuite(pool_busy, .init = setup, .fini = teardown);

/*
 * Four pool threads, a request every 5 ms, 10 ms of work: the pool is half
 * busy. Every tenth request waits 40 ms none the less, and the thread that
 * takes it had nothing to serve meanwhile (as when a pause stops them, or
 * something holds the hand-off): a wait, not a full pool.
 */
static void idle_takers(uint64_t slow_runq_ns)
{
	uint64_t clock_ns = T0;
	for (uint32_t i = 0; i < 1000; i++, clock_ns += 5 * MS) {
		uint64_t wait = i % 10 == 9 ? 40 * MS : 100 * US;
		feed_request(engine, (struct request_spec){
			.sk = SK(i % 32), .port = PORT, .index = 1 + i / 32, .start_ns = clock_ns,
			.first_read_ns = clock_ns + wait, .first_send_ns = clock_ns + wait + 10 * MS,
			.last_send_ns = clock_ns + wait + 10 * MS, .drain_end_ns = clock_ns + wait + 10 * MS,
			.reader_tid = POOL_FIRST + i % POOL_THREADS, .flags = CS_REQ_HANDED_OFF,
			.pickup_runq_ns = wait > MS ? slow_runq_ns : 0 });
	}
	FEED_OK(engine, make_thread_polls(clock_ns, POLLER, 990, 0, 0, 1000, 0));
	for (uint32_t t = 0; t < POOL_THREADS; t++)
		FEED_OK(engine, make_thread_polls(clock_ns, POOL_FIRST + t, 0, 0, 250, 0, 0));
}

Test(pool_busy, a_wait_for_threads_that_were_idle_is_not_pool_saturation)
{
	idle_takers(0);
	struct cs_report_meta meta = { .target = "pid 100 (java)", .duration_s = 5.0 };
	struct cs_tail tail;
	cs_compute_tail(engine, 99.0, &tail);
	cr_assert_eq(tail.causes[0].cause, CS_CAUSE_WORKER_POOL);
	cr_assert_lt(figure_share(&tail.causes[0].evidence, "busy_while_waiting_share"), 0.01);

	struct cs_conditions cond;
	cs_compute_conditions(engine, &meta, &cond);
	cr_assert_not(cond.pool_saturation.flagged);
	cr_assert_not(cond.pool_saturation.busy);
	cr_assert_lt(cond.pool_saturation.busy_while_waiting_share, 0.01);
	/* Its threads served half the run: busy enough by the whole run's measure. */
	cr_assert_gt(cond.pool_saturation.busy_share, 0.3);
	cr_assert_eq(cond.pool_saturation.wait_cause, CS_POOL_WAIT_NOT_KNOWN);

	char *text = render_report(engine, &meta, false);
	cr_assert(strstr(text, "not a full pool, its threads were idle"), "%s", text);
	cr_assert_null(strstr(text, "! pool_saturation"), "%s", text);
	/* Nothing else in the tail held them: no other place to look is named. */
	cr_assert_null(strstr(text, "or waiting for a CPU"), "%s", text);
	cr_assert_null(strstr(text, "or stopped by the runtime"), "%s", text);
	free(text);
}

/* The same waits, partly spent waiting for a CPU: the evidence names that, and only that. */
Test(pool_busy, an_idle_pool_names_what_else_the_tail_shows)
{
	idle_takers(5 * MS);
	struct cs_report_meta meta = { .target = "pid 100 (java)", .duration_s = 5.0 };
	char *text = render_report(engine, &meta, false);
	cr_assert(strstr(text, "not a full pool, its threads were idle, or waiting for a CPU (run_queue)"), "%s", text);
	cr_assert_null(strstr(text, "or stopped by the runtime"), "%s", text);
	free(text);
}

/*
 * A carrier serves interleaved requests (its virtual threads take turns):
 * its served spans overlap, and an instant counts once. It served 0-10 ms
 * and 5-15 ms; a request handed to it waited 2-20 ms: busy 13 ms of it.
 */
Test(pool_busy, overlapping_spans_count_once_and_only_within_the_wait)
{
	feed_request(engine, (struct request_spec){ .sk = SK(1), .port = PORT, .index = 1, .start_ns = T0,
						    .first_read_ns = T0, .first_send_ns = T0 + 10 * MS,
						    .last_send_ns = T0 + 10 * MS, .reader_tid = 51 });
	feed_request(engine, (struct request_spec){ .sk = SK(2), .port = PORT, .index = 1, .start_ns = T0 + 5 * MS,
						    .first_read_ns = T0 + 5 * MS, .first_send_ns = T0 + 15 * MS,
						    .last_send_ns = T0 + 15 * MS, .reader_tid = 51 });
	struct cs_ev_request req = make_request((struct request_spec){
		.sk = SK(3), .port = PORT, .index = 1, .start_ns = T0 + 2 * MS, .first_read_ns = T0 + 20 * MS,
		.first_send_ns = T0 + 21 * MS, .last_send_ns = T0 + 21 * MS, .reader_tid = 51,
		.flags = CS_REQ_HANDED_OFF });
	struct cs_request_split split;
	cr_assert(cs_split_request(engine, &req, &split));
	cr_assert_eq(split.cause_ns[CS_CAUSE_WORKER_POOL], 18 * MS);
	cr_assert_eq(split.pool_busy_ns, 13 * MS);

	/* Waiting for a CPU is not the pool's wait: the busy part is at most what is left of it. */
	req.pickup_runq_ns = 10 * MS;
	cr_assert(cs_split_request(engine, &req, &split));
	cr_assert_eq(split.cause_ns[CS_CAUSE_WORKER_POOL], 8 * MS);
	cr_assert_eq(split.pool_busy_ns, 8 * MS);

	/* Read by a thread that served nothing before: the whole wait idle. */
	req.reader_tid = 52;
	req.pickup_runq_ns = 0;
	cr_assert(cs_split_request(engine, &req, &split));
	cr_assert_eq(split.pool_busy_ns, 0);
}

/*
 * Jetty's pool threads take turns as the selector: the thread that takes a
 * handed-off request may have been polling for the pool, not serving. A
 * taker that hands out what it polls is the pool's while it polls: its
 * whole wait is busy. One that only takes (Tomcat's exec threads) is
 * measured by what it served.
 */
Test(pool_busy, a_taker_that_polls_for_the_pool_is_busy_while_it_polls)
{
	struct cs_ev_request req = make_request((struct request_spec){
		.sk = SK(3), .port = PORT, .index = 1, .start_ns = T0, .first_read_ns = T0 + 20 * MS,
		.first_send_ns = T0 + 21 * MS, .last_send_ns = T0 + 21 * MS, .reader_tid = 61,
		.flags = CS_REQ_HANDED_OFF });
	struct cs_request_split split;
	FEED_OK(engine, make_thread_polls(T0, 61, 0, 0, 10, 0, 0));
	cr_assert(cs_split_request(engine, &req, &split));
	cr_assert_eq(split.pool_busy_ns, 0, "a taker seen serving nothing, polling nothing");
	FEED_OK(engine, make_thread_polls(T0, 61, 40, 10, 10, 20, 0));
	cr_assert(cs_split_request(engine, &req, &split));
	cr_assert_eq(split.cause_ns[CS_CAUSE_WORKER_POOL], 20 * MS);
	cr_assert_eq(split.pool_busy_ns, 20 * MS);
}

/*
 * A full pool's waits are many requests long: the taker served 30 requests
 * of 10 ms back to back while a request waited 300 ms for it, more than
 * its ring of recent spans holds. The spans it still has show it busy
 * throughout: the wait counts busy at that share, not only where they reach.
 */
Test(pool_busy, a_wait_longer_than_the_recent_spans_counts_busy_at_their_share)
{
	for (uint64_t i = 0; i < 30; i++)
		feed_request(engine, (struct request_spec){ .sk = SK(100 + i), .port = PORT, .index = 1,
							    .start_ns = T0 + i * 10 * MS, .first_read_ns = T0 + i * 10 * MS,
							    .first_send_ns = T0 + (i + 1) * 10 * MS,
							    .last_send_ns = T0 + (i + 1) * 10 * MS, .reader_tid = 61 });
	struct cs_ev_request req = make_request((struct request_spec){
		.sk = SK(1), .port = PORT, .index = 1, .start_ns = T0, .first_read_ns = T0 + 300 * MS,
		.first_send_ns = T0 + 301 * MS, .last_send_ns = T0 + 301 * MS, .reader_tid = 61,
		.flags = CS_REQ_HANDED_OFF });
	struct cs_request_split split;
	cr_assert(cs_split_request(engine, &req, &split));
	cr_assert_eq(split.cause_ns[CS_CAUSE_WORKER_POOL], 300 * MS);
	cr_assert_eq(split.pool_busy_ns, 300 * MS);
}
