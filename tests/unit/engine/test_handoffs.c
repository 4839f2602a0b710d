// SPDX-License-Identifier: BSD-2-Clause
/*
 * Who made a ready request wait, decided per request (requests.c, roles.c):
 * a pool whose threads both poll and serve (Jetty), event loops that must
 * stay event loops, and requests a loop parked for an executor thread
 * (Netty's executor groups), whose read -> send the hand-back record splits
 * into worker_pool, handler and event_loop. Synthetic records, known answers.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "engine.h"
#include "events.h"
#include "tables.h"

#define PORT 8080
#define T0 (100 * SEC)
#define SK(n) (0xffff888500000000ull + (n))

CS_ENGINE_FIXTURE

TestSuite(handoffs, .init = setup, .fini = teardown);

static struct cs_thread_stats *thread(uint32_t tid)
{
	struct cs_thread_stats *t = cs_get_thread(engine, tid, 100, NULL);
	cr_assert_not_null(t);
	return t;
}

static void expect_roles(uint32_t tid, const char *want)
{
	char got[64];
	cs_format_roles(got, sizeof(got), cs_thread_roles(thread(tid)));
	cr_expect_str_eq(got, want, "thread %u: roles %s, want %s", tid, got, want);
}

/* Every cause's time over all requests, from the per-bucket totals. */
static uint64_t cause_total(enum cs_cause cause)
{
	uint64_t ns = 0;
	for (size_t b = 0; b < CS_HIST_BUCKETS; b++)
		ns += engine->requests.bucket_cause_ns[b][cause];
	return ns;
}

static struct request_spec served(uint64_t sk, uint32_t index, uint64_t start, uint64_t wait, uint64_t handler,
				  uint32_t reader, uint16_t flags)
{
	return (struct request_spec){ .sk = sk, .port = PORT, .index = index, .start_ns = start,
				      .first_read_ns = start + wait, .first_send_ns = start + wait + handler,
				      .last_send_ns = start + wait + handler,
				      .drain_end_ns = start + wait + handler, .reader_tid = reader, .flags = flags };
}

/*
 * Jetty's QueuedThreadPool, exhausted: 4 threads take turns selecting. A
 * thread that selected a request and ran it itself waited 100 us for it
 * (its own poll); one that ran a task another thread's poll queued waited
 * 30 ms for a free thread. Each thread did both, and polled for others.
 */
Test(handoffs, a_pool_whose_threads_poll_in_turn_waits_per_request)
{
	uint64_t clock = T0;
	for (uint32_t i = 0; i < 400; i++) {
		bool handed = i % 4 != 0;
		uint64_t wait = handed ? 30 * MS : 100 * US;
		feed_request(engine, served(SK(i % 16), 1 + i / 16, clock, wait, 10 * MS, 11 + (i / 4) % 4,
					    handed ? CS_REQ_HANDED_OFF : 0));
		clock += 5 * MS;
	}
	for (uint32_t t = 0; t < 4; t++)
		FEED_OK(engine, make_thread_polls(clock, 11 + t, 200, 25, 75, 75, 0));
	cr_assert_eq(engine->requests.requests, 400);
	cr_expect_eq(cause_total(CS_CAUSE_WORKER_POOL), 300 * 30 * MS);
	cr_expect_eq(cause_total(CS_CAUSE_EVENT_LOOP), 100 * 100 * US);
	cr_expect_eq(cause_total(CS_CAUSE_HANDLER), 400 * 10 * MS);
	for (uint32_t t = 0; t < 4; t++) {
		cr_expect_eq(thread(11 + t)->handed_requests, 75);
		/* It polled for others, read what it polled, and read what others polled. */
		expect_roles(11 + t, "poller,event_loop,worker");
	}
}

/*
 * Two event loops of one process (csserver, Netty without executors): each
 * reads what it polled; one request was parked on a timer (a loop that
 * polls again before answering) with no worker to hand it back, and one
 * carries a hand-back of an earlier request on its socket. Both stay the
 * handler's, and nobody is a worker.
 */
Test(handoffs, event_loops_stay_event_loops)
{
	uint64_t clock = T0;
	for (uint32_t i = 0; i < 100; i++) {
		feed_request(engine, served(SK(i % 8), 1 + i / 8, clock, 2 * MS, 1 * MS, 21 + i % 2, 0));
		clock += 5 * MS;
	}
	feed_request(engine, served(SK(100), 1, clock, 1 * MS, 20 * MS, 21, CS_REQ_PARKED));
	clock += 50 * MS;
	/* A hand-back of the socket's previous request: another start_ns. */
	FEED_OK(engine, make_handback(SK(101), clock - 10 * MS, clock + 1 * MS, clock + 2 * MS, 31));
	feed_request(engine, served(SK(101), 2, clock, 1 * MS, 20 * MS, 22, CS_REQ_PARKED));
	FEED_OK(engine, make_thread_polls(clock + SEC, 21, 300, 51, 0, 0, 0));
	FEED_OK(engine, make_thread_polls(clock + SEC, 22, 300, 51, 0, 0, 0));
	cr_expect_eq(cause_total(CS_CAUSE_EVENT_LOOP), 100 * 2 * MS + 2 * MS);
	cr_expect_eq(cause_total(CS_CAUSE_HANDLER), 100 * 1 * MS + 40 * MS);
	cr_expect_eq(cause_total(CS_CAUSE_WORKER_POOL), 0);
	expect_roles(21, "event_loop");
	expect_roles(22, "event_loop");
	cr_expect_eq(thread(31)->executed, 0, "a stale hand-back names no worker");
	cr_expect_eq(thread(21)->parked_out + thread(22)->parked_out, 0);
}

/*
 * Netty with an executor group: the loop (tid 21) read at +1 ms and went
 * back to epoll_wait; the executor (tid 31) was busy until +21 ms with an
 * earlier request, ran this one until +31 ms and woke the loop, which sent
 * at +33 ms, 1 ms of that in the run queue. The 1 ms before the read is the
 * loop's own.
 */
Test(handoffs, an_executor_s_wait_run_and_pick_up_add_up)
{
	struct request_spec spec = served(SK(1), 1, T0, 1 * MS, 32 * MS, 21, CS_REQ_PARKED);
	spec.handler_runq_ns = 1 * MS;
	FEED_OK(engine, make_handback(SK(1), T0, T0 + 21 * MS, T0 + 31 * MS, 31));
	struct cs_ev_request req = make_request(spec);
	struct cs_request_split split;
	cr_assert(cs_split_request(engine, &req, &split));
	cr_expect_eq(split.cause_ns[CS_CAUSE_EVENT_LOOP], 1 * MS + 1 * MS);
	cr_expect_eq(split.cause_ns[CS_CAUSE_RUN_QUEUE], 1 * MS);
	cr_expect_eq(split.cause_ns[CS_CAUSE_WORKER_POOL], 20 * MS);
	cr_expect_eq(split.cause_ns[CS_CAUSE_HANDLER], 10 * MS);
	uint64_t sum = 0;
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		sum += split.cause_ns[c];
	cr_expect_eq(sum, split.total_ns);
	cr_expect_eq(split.total_ns, 33 * MS, "the parts add up to the request's time");

	FEED_OK(engine, make_request(spec));
	cr_expect_eq(thread(31)->executed, 1);
	cr_expect_eq(thread(31)->serving_ns, 10 * MS);
	cr_expect_eq(thread(21)->parked_out, 1);
	FEED_OK(engine, make_thread_polls(T0 + SEC, 21, 10, 1, 0, 0, 0));
	expect_roles(21, "event_loop");
	expect_roles(31, "worker");
}

/* A hand-back whose times lie outside its request's read -> send is not used: all handler. */
Test(handoffs, a_hand_back_outside_the_request_is_ignored)
{
	struct request_spec spec = served(SK(2), 1, T0, 1 * MS, 32 * MS, 21, CS_REQ_PARKED);
	const uint64_t bad[][2] = { { T0, T0 + 10 * MS },		 /* begins before the read */
				    { T0 + 5 * MS, T0 + 40 * MS },	 /* ends after the send */
				    { T0 + 20 * MS, T0 + 10 * MS } }; /* ends before it begins */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		FEED_OK(engine, make_handback(SK(2), T0, bad[i][0], bad[i][1], 31));
		struct cs_ev_request req = make_request(spec);
		struct cs_request_split split;
		cr_assert(cs_split_request(engine, &req, &split));
		cr_expect_eq(split.cause_ns[CS_CAUSE_HANDLER], 32 * MS, "hand-back %zu", i);
		cr_expect_eq(split.cause_ns[CS_CAUSE_WORKER_POOL], 0, "hand-back %zu", i);
	}
	/* Without CS_REQ_PARKED, a matching hand-back is not read either. */
	FEED_OK(engine, make_handback(SK(2), T0, T0 + 5 * MS, T0 + 10 * MS, 31));
	spec.flags = 0;
	struct cs_ev_request req = make_request(spec);
	struct cs_request_split split;
	cr_assert(cs_split_request(engine, &req, &split));
	cr_expect_eq(split.cause_ns[CS_CAUSE_HANDLER], 32 * MS);
}
