// SPDX-License-Identifier: BSD-2-Clause
/*
 * The target's upstream exchanges joined to the requests they served
 * (upstreams.c): a thread that blocks in its call joins exactly; an event
 * loop joins the exchange that only one of its open requests can have
 * made, and never guesses among several. Synthetic records, in the order
 * the probes write them: an exchange's at its answer's first read, its
 * request's once the answer is out.
 */
#include <criterion/criterion.h>

#include "engine.h"
#include "engine_internal.h"
#include "events.h"
#include "upstream_stats.h"

#define PORT 8080
#define T0 (100 * SEC)
#define SK(n) (0xffff888600000000ull + (n))

CS_ENGINE_FIXTURE

TestSuite(upstreams, .init = setup, .fini = teardown);

static uint64_t cause_total(enum cs_cause cause)
{
	uint64_t ns = 0;
	for (size_t b = 0; b < CS_HIST_BUCKETS; b++)
		ns += engine->requests.bucket_cause_ns[b][cause];
	return ns;
}

/* A request read at read_ns and answered handler_ns later, on thread tid. */
static struct request_spec request(uint64_t sk, uint64_t read_ns, uint64_t handler_ns, uint32_t tid)
{
	return (struct request_spec){ .sk = sk, .port = PORT, .index = 1, .start_ns = read_ns - 20 * US,
				      .first_read_ns = read_ns, .first_send_ns = read_ns + handler_ns,
				      .last_send_ns = read_ns + handler_ns, .drain_end_ns = read_ns + handler_ns,
				      .reader_tid = tid };
}

static const struct cs_upstream_stats *only_upstream(void)
{
	cr_assert_eq(engine->upstream_count, 1);
	return &engine->upstreams[0];
}

/* Joined and not joined add up to the exchanges. */
static void expect_joins(uint64_t joined, uint64_t ambiguous, uint64_t no_request, uint64_t unmatched)
{
	const struct cs_upstream_stats *u = only_upstream();
	cr_expect_eq(u->joined, joined, "joined %lu", (unsigned long)u->joined);
	cr_expect_eq(u->not_joined[CS_UNJOINED_AMBIGUOUS], ambiguous);
	cr_expect_eq(u->not_joined[CS_UNJOINED_NO_REQUEST], no_request);
	cr_expect_eq(u->not_joined[CS_UNJOINED_UNMATCHED], unmatched);
	cr_expect_eq(u->pending, 0);
	cr_expect_eq(u->joined + cs_upstream_not_joined(u), u->exchanges);
}

/*
 * A thread per request (gunicorn's sync workers, Tomcat's pool threads):
 * it reads, connects to its backend (200 us), sends, waits 30 ms for the
 * first byte, reads it 100 us later and answers 2 ms after its read. The
 * connect, the wait and the read are upstream; the rest of the handler
 * (its own 1.7 ms, and the gap between the connect and the send) stays.
 */
Test(upstreams, a_blocking_thread_joins_its_exchange_exactly)
{
	uint64_t read = T0, start = T0 + 100 * US, send = start + 300 * US;
	feed_upstream(engine, (struct upstream_spec){ .start_ns = start, .connect_ns = 200 * US, .send_ns = send,
						      .first_byte_ns = send + 30 * MS, .first_read_ns = send + 30 * MS + 100 * US,
						      .open = 1, .request_read_ns = read, .flags = CS_UP_CONNECT,
						      .syn_retransmits = 0, .sender_cpu_ns = 20 * US });
	feed_request(engine, request(SK(1), read, 32 * MS, 7));

	uint64_t upstream = 200 * US + 30 * MS + 100 * US;
	cr_expect_eq(cause_total(CS_CAUSE_UPSTREAM), upstream);
	cr_expect_eq(cause_total(CS_CAUSE_HANDLER), 32 * MS - upstream);
	expect_joins(1, 0, 0, 0);
	const struct cs_upstream_stats *u = only_upstream();
	cr_expect_eq(u->port, 9000);
	cr_expect_eq(u->connects, 1);
	cr_expect_eq(u->requests_waited, 1);
	cr_expect_eq(u->waited_ns, upstream);
	const struct cs_upstream_use *use = &engine->requests.exemplars[0].upstream;
	cr_expect_eq(use->upstream, 1);
	cr_expect_eq(use->connect_ns, 200 * US);
	cr_expect_eq(use->wait_ns, 30 * MS);
	cr_expect_eq(use->read_ns, 100 * US);
	cr_expect_eq(use->exchanges, 1);
	cr_expect_not(use->loop_blocked);
}

/*
 * An event loop (nginx) reads R1, proxies it, and while the backend
 * takes 30 ms reads R2, proxies it and answers it. R1 alone was open
 * over the whole of its exchange: joined. R2's exchange found R1 open at
 * both its ends too: two requests qualify, so it is joined to neither.
 */
Test(upstreams, an_event_loop_joins_the_exchange_only_one_open_request_can_have_made)
{
	uint64_t r1 = T0, r2 = T0 + 5 * MS;
	feed_upstream(engine, (struct upstream_spec){ .send_ns = r2 + 10 * US, .first_byte_ns = r2 + 200 * US,
						      .first_read_ns = r2 + 220 * US, .open = 2, .reads_between = 0,
						      .sender_cpu_ns = 100 * US, .tid = 9 });
	feed_request(engine, request(SK(2), r2, 300 * US, 9));
	feed_upstream(engine, (struct upstream_spec){ .send_ns = r1 + 10 * US, .first_byte_ns = r1 + 30 * MS,
						      .first_read_ns = r1 + 30 * MS + 50 * US, .open = 1,
						      .request_read_ns = r1, .reads_between = 1, .sender_cpu_ns = 400 * US,
						      .tid = 9 });
	feed_request(engine, request(SK(1), r1, 30 * MS + 200 * US, 9));

	/* The first exchange, ambiguous by what was open, is the second request's by its turn (below). */
	cr_expect_eq(cause_total(CS_CAUSE_UPSTREAM), 30 * MS + 40 * US + 210 * US);
	cr_expect_eq(cause_total(CS_CAUSE_HANDLER), 90 * US + 160 * US);
	expect_joins(2, 0, 0, 0);
	cr_expect_eq(only_upstream()->joined_by_turn, 1);
	cr_expect_eq(only_upstream()->exchanges, 2);
	cr_expect_eq(only_upstream()->requests_waited, 2);
}

/*
 * nginx proxying three requests at once, each on a connection of its own
 * to the backend: it read them 100 us apart and connected for each; the
 * backend answered them in turn, and the loop wrote each client's answer
 * 50 us after reading the backend's. Every exchange had three requests
 * open; each request's answer followed exactly one exchange's read, begun
 * after the request was read: that exchange is the request's.
 */
Test(upstreams, an_event_loop_s_exchange_is_the_request_its_turn_answered)
{
	for (uint64_t i = 0; i < 3; i++) {
		uint64_t read = T0 + i * 100 * US, start = read + 10 * US, answer = T0 + (10 + 2 * i) * MS;
		feed_upstream(engine, (struct upstream_spec){ .sk = 0x7000 + i, .start_ns = start, .connect_ns = 30 * US,
							      .send_ns = start + 40 * US, .first_byte_ns = answer - 20 * US,
							      .first_read_ns = answer, .open = 3, .tid = 9,
							      .reads_between = (uint16_t)(2 - i), .flags = CS_UP_CONNECT,
							      .sender_cpu_ns = 100 * US });
		feed_request(engine, request(SK(10 + i), read, answer + 50 * US - read, 9));
	}
	expect_joins(3, 0, 0, 0);
	cr_expect_eq(only_upstream()->joined_by_turn, 3);
	cr_expect_eq(only_upstream()->requests_waited, 3);
	/*
	 * Each request's read -> answer, less its loop's own 10 us before the
	 * connect, 10 us between it and the send and 50 us after the read.
	 */
	uint64_t handled = 0;
	for (uint64_t i = 0; i < 3; i++)
		handled += (10 + 2 * i) * MS + 50 * US - i * 100 * US;
	cr_expect_eq(cause_total(CS_CAUSE_UPSTREAM), handled - 3 * 70 * US);
	cr_expect_eq(cause_total(CS_CAUSE_HANDLER), 3 * 70 * US);
}

/*
 * The loop read two backends' answers in one turn, then wrote both
 * clients' answers: which exchange was which request's is not told by the
 * turn either. One took 10 ms, the other 30: neither is joined.
 */
Test(upstreams, an_event_loop_that_read_two_unlike_answers_in_one_turn_does_not_guess)
{
	uint64_t r1 = T0, r2 = T0 + 20 * MS;
	feed_upstream(engine, (struct upstream_spec){ .sk = 0x7001, .send_ns = r2 + 10 * US, .first_byte_ns = r2 + 10 * MS,
						      .first_read_ns = r2 + 10 * MS, .open = 2, .tid = 9,
						      .reads_between = 1, .sender_cpu_ns = 100 * US });
	feed_upstream(engine, (struct upstream_spec){ .sk = 0x7002, .send_ns = r1 + 10 * US,
						      .first_byte_ns = r2 + 10 * MS + 10 * US,
						      .first_read_ns = r2 + 10 * MS + 20 * US, .open = 2, .tid = 9,
						      .reads_between = 1, .sender_cpu_ns = 100 * US });
	feed_request(engine, request(SK(1), r1, 30 * MS + 50 * US, 9));
	feed_request(engine, request(SK(2), r2, 10 * MS + 70 * US, 9));
	expect_joins(0, 2, 0, 0);
	cr_expect_eq(cause_total(CS_CAUSE_UPSTREAM), 0);
}

/*
 * HAProxy with two connections to its server, answered in lockstep: it
 * read both answers in one turn, then wrote both clients' answers. Which
 * was whose is not told, but the two exchanges are alike (sent 60 us
 * apart, read 10 us apart, 20 ms long): either gives each request the
 * same split, and each request takes one, whichever order their records
 * come in.
 */
Test(upstreams, alike_answers_read_in_one_turn_are_joined_either_way)
{
	uint64_t r1 = T0, r2 = T0 + 100 * US, send = T0 + 5 * MS, read = send + 20 * MS;
	feed_upstream(engine, (struct upstream_spec){ .sk = 0x7001, .send_ns = send, .first_byte_ns = read - 50 * US,
						      .first_read_ns = read, .open = 2, .tid = 9, .reads_between = 1,
						      .sender_cpu_ns = 100 * US });
	feed_upstream(engine, (struct upstream_spec){ .sk = 0x7002, .send_ns = send + 60 * US,
						      .first_byte_ns = read - 40 * US, .first_read_ns = read + 10 * US,
						      .open = 2, .tid = 9, .sender_cpu_ns = 100 * US });
	/* The second request's record first. */
	feed_request(engine, request(SK(2), r2, read + 100 * US - r2, 9));
	feed_request(engine, request(SK(1), r1, read + 40 * US - r1, 9));
	expect_joins(2, 0, 0, 0);
	cr_expect_eq(only_upstream()->joined_by_turn, 2);
	cr_expect_eq(only_upstream()->joined_alike, 2);
	cr_expect_eq(only_upstream()->requests_waited, 2);
	/* Each request's upstream time is one exchange's: 20 ms and 20.01 ms from the sends (less any cut). */
	cr_expect_geq(cause_total(CS_CAUSE_UPSTREAM), 2 * 20 * MS - 100 * US);
	cr_expect_leq(cause_total(CS_CAUSE_UPSTREAM), 2 * 20 * MS + 100 * US);
}

/*
 * HAProxy with at most two connections to its server: four requests read
 * at once; two go out at once, the other two wait in its queue until the
 * first two's answers come (20 ms), then go out. The two queued requests'
 * wait while both connections were busy is upstream time, told apart as
 * the wait for a connection; the first two waited for none.
 */
Test(upstreams, a_request_queued_for_a_busy_connection_waits_on_the_upstream)
{
	uint64_t answered[2] = { 20 * MS, 40 * MS + 100 * US };
	for (uint64_t turn = 0; turn < 2; turn++) {
		for (uint64_t k = 0; k < 2; k++) {
			uint64_t start = turn ? answered[0] + 80 * US + k * 10 * US : 10 * US + k * 10 * US;
			feed_upstream(engine, (struct upstream_spec){
				.sk = 0x7100 + k, .send_ns = T0 + start, .first_byte_ns = T0 + answered[turn] + k * 10 * US,
				.first_read_ns = T0 + answered[turn] + k * 10 * US, .open = 2, .tid = 9, .reads_between = 1,
				.sender_cpu_ns = 100 * US });
		}
		for (uint64_t k = 0; k < 2; k++) {
			uint64_t read = T0 + (turn * 2 + k) * 5 * US, sent = T0 + answered[turn] + 40 * US + k * 20 * US;
			feed_request(engine, request(SK(20 + turn * 2 + k), read, sent - read, 9));
		}
	}
	expect_joins(4, 0, 0, 0);
	const struct cs_upstream_stats *u = only_upstream();
	cr_expect_eq(u->joined_alike, 4);
	cr_expect_eq(u->queued_requests, 2);
	/*
	 * From each queued request's read (10 and 15 us) to the first turn's
	 * last answer (20.01 ms), and for the second, the 10 us the first's
	 * exchange was under way before its own went out.
	 */
	cr_expect_eq(u->queued_ns, (20 * MS) + (20 * MS - 5 * US + 10 * US), "queued %lu", (unsigned long)u->queued_ns);
}

/*
 * Two blocking workers, a connection each: the second read its request
 * 2 ms before the first's answer came and sent its own call 0.5 ms after
 * it (it waited for a CPU, or a lock the first held): no connection was
 * freed for it, it waited for none.
 */
Test(upstreams, a_worker_with_a_connection_of_its_own_waits_for_none)
{
	uint64_t answer = T0 + 10 * MS, read = answer - 2 * MS, start = answer + 500 * US;
	feed_upstream(engine, (struct upstream_spec){ .sk = 0x7200, .send_ns = T0, .first_byte_ns = answer,
						      .first_read_ns = answer, .open = 1, .request_read_ns = T0 - 10 * US,
						      .tid = 11 });
	feed_request(engine, request(SK(30), T0 - 10 * US, 10 * MS + 50 * US, 11));
	feed_upstream(engine, (struct upstream_spec){ .sk = 0x7201, .send_ns = start, .first_byte_ns = start + 1 * MS,
						      .first_read_ns = start + 1 * MS, .open = 1, .request_read_ns = read,
						      .tid = 12 });
	feed_request(engine, request(SK(31), read, start + 1 * MS + 50 * US - read, 12));
	expect_joins(2, 0, 0, 0);
	cr_expect_eq(only_upstream()->queued_requests, 0);
}

/*
 * Two requests open over the whole exchange (the loop read both, then
 * called the upstream for one of them, or for both): ambiguous, and each
 * keeps its handler time. More open requests than the probes follow, the
 * same. An exchange with no request open (a health check, a thread that
 * reads none) is joined to none.
 */
Test(upstreams, an_event_loop_with_several_requests_open_does_not_guess)
{
	uint64_t r1 = T0, r2 = T0 + 1 * MS;
	feed_upstream(engine, (struct upstream_spec){ .send_ns = r2 + 10 * US, .first_byte_ns = r2 + 20 * MS,
						      .first_read_ns = r2 + 20 * MS + 10 * US, .open = 2, .tid = 9,
						      .reads_between = 3, .sender_cpu_ns = 1 * MS });
	feed_upstream(engine, (struct upstream_spec){ .send_ns = r2 + 30 * MS, .first_byte_ns = r2 + 31 * MS,
						      .first_read_ns = r2 + 31 * MS, .open = 1, .request_read_ns = r1,
						      .flags = CS_UP_CROWDED, .tid = 9, .reads_between = 1 });
	feed_upstream(engine, (struct upstream_spec){ .send_ns = r2 + 40 * MS, .first_byte_ns = r2 + 41 * MS,
						      .first_read_ns = r2 + 41 * MS, .open = 0, .tid = 9, .reads_between = 1 });
	feed_request(engine, request(SK(1), r1, 50 * MS, 9));
	feed_request(engine, request(SK(2), r2, 50 * MS, 9));

	cr_expect_eq(cause_total(CS_CAUSE_UPSTREAM), 0);
	cr_expect_eq(cause_total(CS_CAUSE_HANDLER), 100 * MS);
	expect_joins(0, 2, 1, 0);
	cr_expect_eq(only_upstream()->requests_waited, 0);
}

/*
 * The one open request's record is not a request the engine times (it
 * closed unanswered): its exchange is unmatched, not lost. One whose
 * record has not come yet is awaiting it, and counts as not joined.
 */
Test(upstreams, exchanges_of_requests_not_timed_are_unmatched)
{
	feed_upstream(engine, (struct upstream_spec){ .send_ns = T0 + 10 * US, .first_read_ns = T0 + 5 * MS,
						      .open = 1, .request_read_ns = T0 });
	struct request_spec unanswered = request(SK(1), T0, 0, 7);
	unanswered.first_send_ns = unanswered.last_send_ns = unanswered.drain_end_ns = 0;
	unanswered.ts_ns = T0 + 6 * MS;
	unanswered.flags = CS_REQ_NO_RESPONSE;
	feed_request(engine, unanswered);
	expect_joins(0, 0, 0, 1);

	feed_upstream(engine, (struct upstream_spec){ .send_ns = T0 + 10 * MS, .first_read_ns = T0 + 15 * MS,
						      .open = 1, .request_read_ns = T0 + 9 * MS });
	const struct cs_upstream_stats *u = only_upstream();
	cr_expect_eq(u->pending, 1);
	cr_expect_eq(cs_upstream_not_joined(u), 2);
	cr_expect_eq(u->joined + cs_upstream_not_joined(u), u->exchanges);
}

/*
 * A loop that calls its upstream blocking (a synchronous client in an
 * async server): it read nothing and was off its CPU for the 50 ms of
 * the call, while R2's bytes waited from 10 ms in. Of R2's wait for its
 * loop, the 40 ms the loop spent blocked in the call are upstream; R1,
 * whose call it was, has its own exchange joined.
 */
Test(upstreams, a_loop_blocked_in_its_call_makes_the_requests_behind_it_wait_on_the_upstream)
{
	uint64_t r1 = T0;
	uint64_t send = r1 + 100 * US, answered = send + 50 * MS;
	feed_upstream(engine, (struct upstream_spec){ .send_ns = send, .first_byte_ns = answered, .first_read_ns = answered,
						      .open = 1, .request_read_ns = r1, .reads_between = 0,
						      .sender_cpu_ns = 50 * US, .tid = 9 });
	feed_request(engine, request(SK(1), r1, 50 * MS + 200 * US, 9));
	struct request_spec r2 = request(SK(2), answered + 300 * US, 100 * US, 9);
	r2.start_ns = send + 10 * MS;
	feed_request(engine, r2);

	cr_expect_eq(cause_total(CS_CAUSE_UPSTREAM), 50 * MS + 40 * MS);
	cr_expect_eq(cause_total(CS_CAUSE_EVENT_LOOP), 20 * US + 300 * US, "R1's own 20 us, and R2's after the call");
	const struct cs_upstream_stats *u = only_upstream();
	cr_expect_eq(u->requests_waited, 2);
	cr_expect_eq(u->loop_waits, 1);
	expect_joins(1, 0, 0, 0);
}

/* The same call while the loop kept reading others (or stayed on its CPU): no wait of theirs is upstream. */
Test(upstreams, a_loop_that_served_others_during_its_call_was_not_blocked_in_it)
{
	uint64_t send = T0 + 100 * US, answered = send + 50 * MS;
	feed_upstream(engine, (struct upstream_spec){ .send_ns = send, .first_read_ns = answered, .open = 1,
						      .request_read_ns = T0, .reads_between = 4, .tid = 9 });
	feed_upstream(engine, (struct upstream_spec){ .port = 9001, .send_ns = send, .first_read_ns = answered,
						      .open = 0, .reads_between = 0, .sender_cpu_ns = 45 * MS, .tid = 9 });
	struct request_spec r2 = request(SK(2), answered + 300 * US, 100 * US, 9);
	r2.start_ns = send + 10 * MS;
	feed_request(engine, r2);
	cr_expect_eq(cause_total(CS_CAUSE_UPSTREAM), 0);
	cr_expect_eq(cause_total(CS_CAUSE_EVENT_LOOP), 40 * MS + 300 * US);
}

/* A connection closed before its answer was read: counted apart, not an exchange. */
Test(upstreams, an_answer_never_read_is_no_exchange)
{
	feed_upstream(engine, (struct upstream_spec){ .send_ns = T0, .first_read_ns = 0, .open = 1,
						      .request_read_ns = T0 - 1 * MS, .flags = CS_UP_UNREAD });
	const struct cs_upstream_stats *u = only_upstream();
	cr_expect_eq(u->exchanges, 0);
	cr_expect_eq(u->unread, 1);
	cr_expect_eq(u->pending, 0);
}

/*
 * A request that waited 30 ms for its upstream's first byte, read 6 ms
 * later and answered 4 ms after that, its thread 8 ms runnable but not
 * running in that span. Thread is the exchange's sender (9: reading
 * others meanwhile; 7: blocked in the call).
 */
static void call_with_runq(uint32_t tid, uint16_t reads_between, uint64_t cpu_ns)
{
	feed_upstream(engine, (struct upstream_spec){ .send_ns = T0, .first_byte_ns = T0 + 30 * MS,
						      .first_read_ns = T0 + 36 * MS, .open = 1, .request_read_ns = T0,
						      .reads_between = reads_between, .sender_cpu_ns = cpu_ns, .tid = tid });
	struct request_spec r = request(0xffff888600000001ull, T0, 40 * MS, tid);
	r.start_ns = T0; /* no wait before the read */
	r.handler_runq_ns = 8 * MS;
	feed_request(engine, r);
}

/*
 * A loop that served others while its request waited: its waits for a
 * CPU are spread over the span, and those during the wait for the first
 * byte (6 of the 8 ms) delayed no one here: the upstream's.
 */
Test(upstreams, a_loop_s_waits_for_a_cpu_during_the_call_are_not_the_request_s)
{
	call_with_runq(9, 5, 20 * MS);
	cr_expect_eq(cause_total(CS_CAUSE_UPSTREAM), 36 * MS);
	cr_expect_eq(cause_total(CS_CAUSE_RUN_QUEUE), 2 * MS);
	cr_expect_eq(cause_total(CS_CAUSE_HANDLER), 2 * MS);
	cr_expect_eq(engine->requests.exemplars[0].upstream.read_ns, 6 * MS);
}

/*
 * A thread blocked in the call was runnable only once the answer woke it:
 * all its 8 ms fall outside the wait, the answer's read first, which the
 * upstream keeps only what is left of (2 ms).
 */
Test(upstreams, a_blocked_thread_s_waits_for_a_cpu_fall_after_the_answer)
{
	call_with_runq(7, 0, 100 * US);
	cr_expect_eq(cause_total(CS_CAUSE_UPSTREAM), 32 * MS);
	cr_expect_eq(cause_total(CS_CAUSE_RUN_QUEUE), 8 * MS);
	cr_expect_eq(cause_total(CS_CAUSE_HANDLER), 0);
	const struct cs_upstream_use *use = &engine->requests.exemplars[0].upstream;
	cr_expect_eq(use->wait_ns, 30 * MS);
	cr_expect_eq(use->read_ns, 2 * MS);
}

/*
 * An exchange whose request's record never comes (lost with a full ring
 * buffer) is unmatched once it is as old as a forgotten connection; the
 * threads' blocking calls go with it.
 */
Test(upstreams, exchanges_whose_request_never_comes_are_forgotten_unmatched)
{
	feed_upstream(engine, (struct upstream_spec){ .send_ns = T0, .first_read_ns = T0 + 50 * MS, .open = 1,
						      .request_read_ns = T0 - 10 * US, .sender_cpu_ns = 10 * US });
	cr_expect_eq(only_upstream()->pending, 1);
	cr_expect_eq(engine->upstream_blocked.count, 1);
	cs_conns_sweep(engine, T0 + CS_CONN_TIMEOUT_NS + 1 * SEC);
	expect_joins(0, 0, 0, 1);
	cr_expect_eq(engine->upstream_pending.count, 0);
	cr_expect_eq(engine->upstream_blocked.count, 0);
}

/* Every cause's time so far. */
static void cause_totals(uint64_t out[CS_CAUSE_COUNT])
{
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		out[c] = cause_total((enum cs_cause)c);
}

/*
 * A request with no exchange of its own, whose thread never blocked in
 * one, keeps its split whether or not another thread ever blocked: the
 * engine skips the upstreams' takes when none has anything to give, and
 * must split it as when it runs them.
 */
Test(upstreams, a_request_with_nothing_to_take_splits_alike_beside_a_blocked_thread)
{
	struct request_spec r = request(SK(1), T0, 3 * MS, 7);
	r.start_ns = T0 - 2 * MS; /* waited for its loop */
	r.handler_runq_ns = 1 * MS;
	feed_request(engine, r);
	uint64_t alone[CS_CAUSE_COUNT];
	cause_totals(alone);
	cr_assert_eq(engine->upstream_blocked.count, 0);

	/* Thread 9 blocks in a call no request claims; then the same request again, on thread 7. */
	feed_upstream(engine, (struct upstream_spec){ .send_ns = T0 + 10 * MS, .first_read_ns = T0 + 20 * MS,
						      .open = 0, .sender_cpu_ns = 10 * US, .tid = 9 });
	cr_assert_eq(engine->upstream_blocked.count, 1);
	r = request(SK(2), T0 + 30 * MS, 3 * MS, 7);
	r.start_ns = T0 + 28 * MS;
	r.handler_runq_ns = 1 * MS;
	feed_request(engine, r);
	uint64_t both[CS_CAUSE_COUNT];
	cause_totals(both);
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		cr_expect_eq(both[c], 2 * alone[c], "%s: %lu, then %lu", cs_cause_names[c], (unsigned long)alone[c],
			     (unsigned long)(both[c] - alone[c]));
	cr_expect_gt(alone[CS_CAUSE_RUN_QUEUE], 0);
	cr_expect_eq(cause_total(CS_CAUSE_UPSTREAM), 0);
}
