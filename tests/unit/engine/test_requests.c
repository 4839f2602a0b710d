// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of the request half of the engine (daemon/engine/requests.c): how one
 * request's time is split into causes (cs_split_request), and how request
 * records are joined with their connection's accept, up to its close. (A
 * local client's extra connect delay is joined in the kernel and arrives in
 * the first request's record: handshake_extra_ns.)
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine.h"
#include "events.h"

#define PORT 8080
#define T0 (100 * SEC)
#define CLIENT 0x0a000002u /* 10.0.0.2 */
#define SK(n) (0xffff888100000000ull + (n))

CS_ENGINE_FIXTURE

TestSuite(split, .init = setup, .fini = teardown);
TestSuite(join, .init = setup, .fini = teardown);

/* ---- helpers --------------------------------------------------------------- */

static const char *cause_list(const struct cs_request_split *s)
{
	static char buf[256];
	size_t n = 0;
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s=%llu ", cs_cause_names[c],
				      (unsigned long long)s->cause_ns[c]);
	snprintf(buf + n, sizeof(buf) - n, "total=%llu", (unsigned long long)s->total_ns);
	return buf;
}

static void assert_sum_exact(const struct cs_request_split *s)
{
	uint64_t sum = 0;
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		sum += s->cause_ns[c];
	cr_assert_eq(sum, s->total_ns, "causes do not add up: %s", cause_list(s));
}

/* Split a request built from spec; causes always add up to the total. */
static bool split_of(struct request_spec spec, struct cs_request_split *out)
{
	struct cs_ev_request ev = make_request(spec);
	bool ok = cs_split_request(engine, &ev, out);
	assert_sum_exact(out);
	return ok;
}

/* The split must be exactly want (every cause; the total is their sum). */
static void expect_split(const struct cs_request_split *got, const uint64_t want[CS_CAUSE_COUNT])
{
	uint64_t total = 0;
	for (int c = 0; c < CS_CAUSE_COUNT; c++) {
		cr_expect_eq(got->cause_ns[c], want[c], "%s: %llu ns, want %llu (%s)", cs_cause_names[c],
			     (unsigned long long)got->cause_ns[c], (unsigned long long)want[c], cause_list(got));
		total += want[c];
	}
	cr_assert_eq(got->total_ns, total, "total %llu, want %llu", (unsigned long long)got->total_ns,
		     (unsigned long long)total);
}

#define CAUSES(...) ((const uint64_t[CS_CAUSE_COUNT]){ __VA_ARGS__ })

/* A request on sk: data at start, then pickup, handler and drain phases. */
static struct request_spec timeline(uint64_t sk, uint32_t index, uint64_t start, uint64_t pickup,
				    uint64_t handler, uint64_t drain)
{
	return (struct request_spec){
		.sk = sk, .port = PORT, .index = index, .start_ns = start,
		.first_read_ns = start + pickup, .first_send_ns = start + pickup + handler,
		.last_send_ns = start + pickup + handler, .drain_end_ns = start + pickup + handler + drain,
	};
}

static void accept_conn(uint64_t sk, uint64_t established_ns, uint64_t accept_ns, uint32_t client_ipv4,
			uint16_t client_port)
{
	FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tgid = 100, .tid = 3,
							     .established_ns = established_ns,
							     .ts_ns = accept_ns, .backlog_limit = 128 },
				       sk, client_ipv4, client_port));
}

/* The one request the engine kept whole (the exemplar heap of a single request). */
static const struct cs_request_split *only_exemplar(void)
{
	cr_assert_eq(engine->requests.exemplar_count, 1);
	return &engine->requests.exemplars[0].split;
}

/* ---- cs_split_request: one cause at a time --------------------------------- */

Test(split, handler_only)
{
	struct cs_request_split s;
	cr_assert(split_of(timeline(SK(1), 3, T0, 0, 5 * MS, 0), &s));
	expect_split(&s, CAUSES([CS_CAUSE_HANDLER] = 5 * MS));
}

Test(split, event_loop_only)
{
	struct cs_request_split s;
	cr_assert(split_of(timeline(SK(1), 3, T0, 3 * MS, 0, 0), &s));
	expect_split(&s, CAUSES([CS_CAUSE_EVENT_LOOP] = 3 * MS));
}

Test(split, send_drain_only)
{
	struct cs_request_split s;
	struct request_spec r = timeline(SK(1), 3, T0, 0, 0, 4 * MS);
	r.last_send_ns = T0 + 1 * MS; /* several sends, the last returned at 1 ms */
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_SEND_DRAIN] = 4 * MS));
}

Test(split, drain_ends_no_earlier_than_the_last_send)
{
	struct cs_request_split s;
	struct request_spec r = timeline(SK(1), 3, T0, 0, 1 * MS, 0);
	r.last_send_ns = r.first_send_ns + 2 * MS;
	r.drain_end_ns = 0; /* not seen */
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_HANDLER] = 1 * MS, [CS_CAUSE_SEND_DRAIN] = 2 * MS));

	r.drain_end_ns = r.first_send_ns + 1 * MS; /* before the last send returned */
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_HANDLER] = 1 * MS, [CS_CAUSE_SEND_DRAIN] = 2 * MS));
}

Test(split, run_queue_only)
{
	/* The reader was runnable for all of the pickup, and so on. */
	struct cs_request_split s;
	struct request_spec r = timeline(SK(1), 3, T0, 2 * MS, 3 * MS, 4 * MS);
	r.pickup_runq_ns = 2 * MS;
	r.handler_runq_ns = 3 * MS;
	r.drain_runq_ns = 4 * MS;
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_RUN_QUEUE] = 9 * MS));
}

/* ---- combinations ------------------------------------------------------------ */

Test(split, every_phase_with_its_run_queue_part)
{
	struct cs_request_split s;
	struct request_spec r = timeline(SK(1), 3, T0, 2 * MS, 3 * MS, 4 * MS);
	r.pickup_runq_ns = 500 * US;
	r.handler_runq_ns = 1 * MS;
	r.drain_runq_ns = 1500 * US;
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_RUN_QUEUE] = 3 * MS, [CS_CAUSE_EVENT_LOOP] = 1500 * US,
				[CS_CAUSE_HANDLER] = 2 * MS, [CS_CAUSE_SEND_DRAIN] = 2500 * US));
	cr_assert_eq(s.total_ns, 9 * MS, "the request's span");
}

Test(split, run_queue_parts_are_clipped_to_their_phase)
{
	/* Each run-queue part claims more than its phase lasted. */
	struct cs_request_split s;
	struct request_spec r = timeline(SK(1), 3, T0, 1 * MS, 2 * MS, 3 * MS);
	r.pickup_runq_ns = 5 * MS;
	r.handler_runq_ns = 1 * MS; /* within its phase */
	r.drain_runq_ns = 50 * MS;
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_RUN_QUEUE] = 1 * MS + 1 * MS + 3 * MS,
				[CS_CAUSE_HANDLER] = 1 * MS));
	cr_assert_eq(s.total_ns, 6 * MS, "clipping must not stretch the request");

	/* A run-queue part of a phase that did not last. */
	r = timeline(SK(1), 3, T0, 0, 2 * MS, 0);
	r.pickup_runq_ns = 7 * MS;
	r.drain_runq_ns = 7 * MS;
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_HANDLER] = 2 * MS));
}

/*
 * Redis reads a PING, then a script that runs 12 ms in the same pass, and
 * writes both answers after it: the PING's handling ended at the script's
 * read; the rest it waited for its loop.
 */
Test(split, a_loop_that_turned_to_another_request)
{
	struct cs_request_split s;
	struct request_spec r = timeline(SK(1), 3, T0, 1 * MS, 12 * MS, 0);
	r.loop_turned_ns = r.first_read_ns + 50 * US;
	r.handler_runq_ns = 2 * MS;
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_EVENT_LOOP] = 1 * MS + 11950 * US - 2 * MS, [CS_CAUSE_RUN_QUEUE] = 2 * MS,
				[CS_CAUSE_HANDLER] = 50 * US));

	/* More run-queue time than the loop's part: the rest from the handler's. */
	r.loop_turned_ns = r.first_send_ns - 1 * MS;
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_EVENT_LOOP] = 1 * MS, [CS_CAUSE_RUN_QUEUE] = 2 * MS,
				[CS_CAUSE_HANDLER] = 10 * MS));
}

/*
 * The same pass, the loop preempted for 30 ms between the PING's read and
 * the script's (the probes read its run-queue counter at the turn): that
 * wait is the run queue's, the script's 12 ms the loop's, the PING's
 * handling the 50 us it took. Without the turn's look (an older trace) the
 * waits come out of the loop's part first, and the handler keeps the rest.
 */
Test(split, waits_for_a_cpu_before_the_turn_are_not_the_handler_s)
{
	struct cs_request_split s;
	struct request_spec r = timeline(SK(1), 3, T0, 1 * MS, 30 * MS + 50 * US + 12 * MS, 0);
	r.loop_turned_ns = r.first_read_ns + 30 * MS + 50 * US;
	r.handler_runq_ns = 30 * MS + 2 * MS; /* 2 ms more during the script */
	r.turn_runq_ns = 30 * MS;
	r.flags = CS_REQ_TURN_RUNQ;
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_EVENT_LOOP] = 1 * MS + 10 * MS, [CS_CAUSE_RUN_QUEUE] = 32 * MS,
				[CS_CAUSE_HANDLER] = 50 * US));
	cr_assert_eq(s.loop_after_read_ns, 10 * MS);

	r.flags = 0;
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_EVENT_LOOP] = 1 * MS, [CS_CAUSE_RUN_QUEUE] = 32 * MS,
				[CS_CAUSE_HANDLER] = 10 * MS + 50 * US));

	/* A turn's look past the handler's span: no more than the span before the turn. */
	r.flags = CS_REQ_TURN_RUNQ;
	r.turn_runq_ns = 40 * MS;
	r.handler_runq_ns = 40 * MS;
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_EVENT_LOOP] = 1 * MS + 12 * MS - 9950 * US, [CS_CAUSE_RUN_QUEUE] = 40 * MS,
				[CS_CAUSE_HANDLER] = 0));
}

Test(split, a_turn_that_does_not_fit_is_the_handler_s)
{
	struct cs_request_split s;
	struct request_spec r = timeline(SK(1), 3, T0, 1 * MS, 12 * MS, 0);
	/* Answered by another thread: the reader's turn says nothing of it. */
	r.loop_turned_ns = r.first_read_ns + 50 * US;
	r.sender_tid = 8;
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_EVENT_LOOP] = 1 * MS, [CS_CAUSE_HANDLER] = 12 * MS));
	/* Outside its read -> send. */
	r.sender_tid = 0;
	r.loop_turned_ns = r.first_send_ns + 1;
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_EVENT_LOOP] = 1 * MS, [CS_CAUSE_HANDLER] = 12 * MS));
	r.loop_turned_ns = r.first_read_ns;
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_EVENT_LOOP] = 1 * MS, [CS_CAUSE_HANDLER] = 12 * MS));
}

Test(split, phases_out_of_order_count_as_zero)
{
	/* Clock skew between CPUs: a phase that seems to end before it began. */
	struct cs_request_split s;
	struct request_spec r = timeline(SK(1), 3, T0, 1 * MS, 2 * MS, 3 * MS);
	r.first_read_ns = T0 - 10 * US;
	cr_assert(split_of(r, &s));
	cr_assert_eq(s.cause_ns[CS_CAUSE_EVENT_LOOP], 0, "%s", cause_list(&s));
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		cr_assert_lt(s.cause_ns[c], 10 * MS, "%s wrapped around: %s", cs_cause_names[c], cause_list(&s));
	cr_assert_eq(s.cause_ns[CS_CAUSE_SEND_DRAIN], 3 * MS);
}

/* ---- requests without a full timeline ---------------------------------------- */

Test(split, unanswered_and_partial_requests_are_not_split)
{
	struct cs_request_split s;
	struct request_spec r = timeline(SK(1), 3, T0, 1 * MS, 2 * MS, 3 * MS);
	static const uint16_t excluded[] = {
		CS_REQ_NO_RESPONSE, CS_REQ_PARTIAL, CS_REQ_NO_RESPONSE | CS_REQ_UNREAD,
		CS_REQ_PARTIAL | CS_REQ_HELD_BACK, CS_REQ_NO_RESPONSE | CS_REQ_PARTIAL,
	};
	for (size_t i = 0; i < sizeof(excluded) / sizeof(excluded[0]); i++) {
		r.flags = excluded[i];
		memset(&s, 0xa5, sizeof(s));
		cr_assert_not(split_of(r, &s), "flags %#x were split", excluded[i]);
		cr_assert_eq(s.total_ns, 0, "flags %#x: split not cleared", excluded[i]);
	}
	r.flags = CS_REQ_HELD_BACK; /* held back bytes: still a whole request */
	cr_assert(split_of(r, &s));
	cr_assert_eq(s.total_ns, 6 * MS);
}

Test(split, missing_phases_are_not_split)
{
	struct cs_request_split s;
	struct request_spec full = timeline(SK(1), 3, T0, 1 * MS, 2 * MS, 3 * MS), r;
	r = full;
	r.start_ns = 0;
	cr_assert_not(split_of(r, &s), "no start");
	r = full;
	r.first_read_ns = 0;
	cr_assert_not(split_of(r, &s), "never read");
	r = full;
	r.first_send_ns = 0;
	cr_assert_not(split_of(r, &s), "never answered");
}

/* ---- the first request on a connection --------------------------------------- */

Test(split, first_request_with_data_before_accept_pays_the_accept_queue)
{
	/* ESTABLISHED at T0, data at +1 ms, accept() at +5 ms, read +6, send +8. */
	accept_conn(SK(1), T0, T0 + 5 * MS, CLIENT, 40000);
	struct cs_request_split s;
	struct request_spec r = timeline(SK(1), 0, T0 + 1 * MS, 5 * MS, 2 * MS, 0);
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_ACCEPT_QUEUE] = 5 * MS, [CS_CAUSE_EVENT_LOOP] = 1 * MS,
				[CS_CAUSE_HANDLER] = 2 * MS));
	cr_assert_eq(s.total_ns, 8 * MS, "ESTABLISHED -> response sent");

	/* The same connection's next request paid no set-up. */
	r = timeline(SK(1), 1, T0 + 20 * MS, 1 * MS, 2 * MS, 0);
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_EVENT_LOOP] = 1 * MS, [CS_CAUSE_HANDLER] = 2 * MS));
}

Test(split, first_request_with_data_after_accept_pays_no_accept_queue)
{
	/* accept() at +5 ms, the client's data only at +7 ms. */
	accept_conn(SK(1), T0, T0 + 5 * MS, CLIENT, 40000);
	struct cs_request_split s;
	cr_assert(split_of(timeline(SK(1), 0, T0 + 7 * MS, 1 * MS, 2 * MS, 0), &s));
	expect_split(&s, CAUSES([CS_CAUSE_EVENT_LOOP] = 1 * MS, [CS_CAUSE_HANDLER] = 2 * MS));
}

Test(split, pickup_run_queue_is_clipped_to_the_time_after_accept)
{
	/*
	 * Data at +1 ms, accept at +5 ms, read at +6 ms: the pickup after the
	 * accept lasted 1 ms, though the reader was runnable for 4 ms since the
	 * data came.
	 */
	accept_conn(SK(1), T0, T0 + 5 * MS, CLIENT, 40000);
	struct cs_request_split s;
	struct request_spec r = timeline(SK(1), 0, T0 + 1 * MS, 5 * MS, 2 * MS, 0);
	r.pickup_runq_ns = 4 * MS;
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_ACCEPT_QUEUE] = 5 * MS, [CS_CAUSE_RUN_QUEUE] = 1 * MS,
				[CS_CAUSE_HANDLER] = 2 * MS));
}

Test(split, first_request_of_an_unknown_connection_pays_no_setup)
{
	struct cs_request_split s;
	cr_assert(split_of(timeline(SK(9), 0, T0, 1 * MS, 2 * MS, 0), &s));
	expect_split(&s, CAUSES([CS_CAUSE_EVENT_LOOP] = 1 * MS, [CS_CAUSE_HANDLER] = 2 * MS));

	/* Accepted, its establishment's time unknown: the wait is unknown. */
	accept_conn(SK(2), 0, T0 + 5 * MS, CLIENT, 40000);
	cr_assert(split_of(timeline(SK(2), 0, T0 + 1 * MS, 5 * MS, 2 * MS, 0), &s));
	cr_assert_eq(s.cause_ns[CS_CAUSE_ACCEPT_QUEUE], 0, "%s", cause_list(&s));
}

/* ---- sums on random timelines ------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	/* xorshift64*: fixed seed, same sequence on every run */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static uint64_t rng_upto(uint64_t n)
{
	return n ? rng() % (n + 1) : 0;
}

Test(split, random_timelines_add_up_to_their_span)
{
	/* 20000 ordered timelines, half of them first requests after an accept. */
	for (int i = 0; i < 20000; i++) {
		uint64_t sk = SK(1000 + (uint64_t)i);
		uint64_t established = T0 + (uint64_t)i * SEC;
		uint64_t start = established + rng_upto(3 * MS);
		uint64_t accept = established + rng_upto(6 * MS);
		bool first = i % 2 == 0;
		if (first)
			accept_conn(sk, established, accept, CLIENT, (uint16_t)(1024 + i));
		struct request_spec r = timeline(sk, first ? 0 : 1 + (uint32_t)rng_upto(5), start,
						 rng_upto(10 * MS), rng_upto(10 * MS), rng_upto(10 * MS));
		if (first && r.first_read_ns < accept)
			r.first_read_ns = r.first_send_ns = r.last_send_ns = r.drain_end_ns = accept;
		r.last_send_ns = r.first_send_ns + rng_upto(r.drain_end_ns - r.first_send_ns);
		if (rng() % 4 == 0)
			r.drain_end_ns = rng() % 2 ? 0 : r.first_send_ns; /* drain not seen */
		r.pickup_runq_ns = rng_upto(12 * MS);
		r.handler_runq_ns = rng_upto(12 * MS);
		r.drain_runq_ns = rng_upto(12 * MS);

		struct cs_request_split s;
		cr_assert(split_of(r, &s), "request %d not split", i);
		bool queued = first && start <= accept;
		uint64_t begin = queued ? established : start;
		uint64_t end = r.drain_end_ns > r.last_send_ns ? r.drain_end_ns : r.last_send_ns;
		cr_assert_eq(s.total_ns, end - begin, "request %d: total %llu, span %llu (%s)", i,
			     (unsigned long long)s.total_ns, (unsigned long long)(end - begin), cause_list(&s));
		cr_assert_eq(s.cause_ns[CS_CAUSE_ACCEPT_QUEUE], queued ? accept - established : 0,
			     "request %d: %s", i, cause_list(&s));
		cr_assert_leq(s.cause_ns[CS_CAUSE_RUN_QUEUE],
			      r.pickup_runq_ns + r.handler_runq_ns + r.drain_runq_ns, "request %d", i);
		cr_assert_eq(s.cause_ns[CS_CAUSE_LISTEN_OVERFLOW], 0);
	}
}

/* ---- joining records: accept, request, close --------------------------------- */

Test(join, accept_request_close)
{
	accept_conn(SK(1), T0, T0 + 2 * MS, CLIENT, 40000);
	feed_request(engine, timeline(SK(1), 0, T0 + 1 * MS, 2 * MS, 3 * MS, 1 * MS));
	feed_conn_close(engine, (struct close_spec){ .sk = SK(1), .port = PORT, .ts_ns = T0 + 10 * MS,
						     .established_ns = T0, .last_activity_ns = T0 + 6 * MS,
						     .requests = 1, .closed_by = CS_CLOSED_BY_CLIENT });

	const struct cs_request_stats *r = &engine->requests;
	cr_assert_eq(r->requests, 1);
	cr_assert_eq(r->first_on_connection, 1);
	cr_assert_eq(r->setup_ns, 2 * MS);
	expect_split(only_exemplar(), CAUSES([CS_CAUSE_ACCEPT_QUEUE] = 2 * MS, [CS_CAUSE_EVENT_LOOP] = 1 * MS,
					     [CS_CAUSE_HANDLER] = 3 * MS, [CS_CAUSE_SEND_DRAIN] = 1 * MS));
	cr_assert_eq(r->latency_ns->count, 1);
	cr_assert_eq(r->latency_ns->max, 7 * MS);

	/* The latency bucket holds the request's causes and its dominant one. */
	size_t b = cs_hist_bucket_index(7 * MS);
	cr_assert_eq(r->bucket_cause_ns[b][CS_CAUSE_HANDLER], 3 * MS);
	cr_assert_eq(r->bucket_cause_ns[b][CS_CAUSE_ACCEPT_QUEUE], 2 * MS);
	cr_assert_eq(r->bucket_dominant[b][CS_CAUSE_HANDLER], 1);

	const struct cs_listener_stats *l = cs_engine_listener(engine, PORT);
	cr_assert_not_null(l);
	cr_assert_eq(l->requests, 1);
	cr_assert_eq(l->latency_ns->count, 1);
	cr_assert_eq(engine->conns.count, 0, "the closed connection is still followed");
	cr_assert_eq(engine->lifecycle.closed_by[CS_CLOSED_BY_CLIENT], 1);
	cr_assert_eq(engine->lifecycle.requests_on_closed, 1);
}

Test(join, first_request_carries_its_connect_delay)
{
	/* The local client's SYN got in after two retransmits: 3 s late. */
	accept_conn(SK(1), T0, T0 + 2 * MS, CLIENT, 51000);
	struct request_spec r = timeline(SK(1), 0, T0 + 1 * MS, 2 * MS, 3 * MS, 0);
	r.handshake_extra_ns = 3 * SEC;
	feed_request(engine, r);
	expect_split(only_exemplar(), CAUSES([CS_CAUSE_ACCEPT_QUEUE] = 2 * MS, [CS_CAUSE_LISTEN_OVERFLOW] = 3 * SEC,
					     [CS_CAUSE_EVENT_LOOP] = 1 * MS, [CS_CAUSE_HANDLER] = 3 * MS));
	cr_assert_eq(engine->requests.setup_ns, 3 * SEC + 2 * MS);
	cr_assert_eq(engine->requests.latency_ns->max, 3 * SEC + 6 * MS);
}

Test(join, connect_delay_even_when_data_came_after_accept)
{
	accept_conn(SK(1), T0, T0 + 1 * MS, CLIENT, 51000);
	struct request_spec r = timeline(SK(1), 0, T0 + 4 * MS, 0, 1 * MS, 0);
	r.handshake_extra_ns = 1 * SEC;
	feed_request(engine, r);
	expect_split(only_exemplar(), CAUSES([CS_CAUSE_LISTEN_OVERFLOW] = 1 * SEC, [CS_CAUSE_HANDLER] = 1 * MS));
}

Test(join, connect_delay_counts_on_the_first_request_only)
{
	struct cs_request_split s;
	struct request_spec r = timeline(SK(1), 1, T0, 0, 1 * MS, 0);
	r.handshake_extra_ns = 1 * SEC; /* should not be there: ignored */
	cr_assert(split_of(r, &s));
	expect_split(&s, CAUSES([CS_CAUSE_HANDLER] = 1 * MS));
}

Test(join, handshake_records_are_evidence_not_a_second_count)
{
	/* The kernel reports the slow handshake and also puts it in the first request. */
	FEED_OK(engine, make_slow_handshake((struct handshake_spec){ .port = PORT, .syn_sent_ns = T0 - SEC,
								     .last_syn_ns = T0, .ts_ns = T0 },
					    1 * SEC, CLIENT, 51000));
	accept_conn(SK(1), T0, T0 + 2 * MS, CLIENT, 51000);
	struct request_spec r = timeline(SK(1), 0, T0 + 1 * MS, 2 * MS, 3 * MS, 0);
	r.handshake_extra_ns = 1 * SEC;
	feed_request(engine, r);
	cr_assert_eq(only_exemplar()->cause_ns[CS_CAUSE_LISTEN_OVERFLOW], 1 * SEC, "%s", cause_list(only_exemplar()));

	/* Another connection from the same client port, with no delay of its own. */
	accept_conn(SK(2), T0 + 5 * SEC, T0 + 5 * SEC + 2 * MS, CLIENT, 51000);
	struct cs_request_split s;
	cr_assert(split_of(timeline(SK(2), 0, T0 + 5 * SEC + 1 * MS, 2 * MS, 3 * MS, 0), &s));
	cr_assert_eq(s.cause_ns[CS_CAUSE_LISTEN_OVERFLOW], 0, "%s", cause_list(&s));

	const struct cs_listener_stats *l = cs_engine_listener(engine, PORT);
	cr_assert_eq(l->handshakes_delayed_1s, 1);
	cr_assert_eq(l->handshake_extra_ns->count, 1);
}

Test(join, recycled_socket_address_starts_a_fresh_connection)
{
	/* A connection that waited 50 ms in the queue. */
	accept_conn(SK(1), T0, T0 + 50 * MS, CLIENT, 51000);
	feed_request(engine, timeline(SK(1), 0, T0 + 1 * MS, 50 * MS, 1 * MS, 0));
	cr_assert_eq(only_exemplar()->cause_ns[CS_CAUSE_ACCEPT_QUEUE], 50 * MS);
	feed_conn_close(engine, (struct close_spec){ .sk = SK(1), .port = PORT, .ts_ns = T0 + 60 * MS,
						     .requests = 1, .closed_by = CS_CLOSED_BY_SERVER,
						     .client_port = 51000 });

	/* Between the close and the next accept, the address means nothing. */
	struct cs_request_split s;
	cr_assert(split_of(timeline(SK(1), 0, T0 + 1 * SEC, 1 * MS, 1 * MS, 0), &s));
	expect_split(&s, CAUSES([CS_CAUSE_EVENT_LOOP] = 1 * MS, [CS_CAUSE_HANDLER] = 1 * MS));

	/* The kernel hands the same address to a new connection: 1 ms in the queue. */
	uint64_t t = T0 + 2 * SEC;
	accept_conn(SK(1), t, t + 1 * MS, CLIENT + 7, 42000);
	cr_assert(split_of(timeline(SK(1), 0, t, 2 * MS, 1 * MS, 0), &s));
	expect_split(&s, CAUSES([CS_CAUSE_ACCEPT_QUEUE] = 1 * MS, [CS_CAUSE_EVENT_LOOP] = 1 * MS,
				[CS_CAUSE_HANDLER] = 1 * MS));
}

Test(join, accept_of_a_recycled_address_without_its_close_replaces_it)
{
	/* The close record was lost: the new accept still starts over. */
	accept_conn(SK(1), T0, T0 + 50 * MS, CLIENT, 51000);
	uint64_t t = T0 + 2 * SEC;
	accept_conn(SK(1), t, t + 1 * MS, CLIENT, 52000);
	struct cs_request_split s;
	cr_assert(split_of(timeline(SK(1), 0, t, 2 * MS, 1 * MS, 0), &s));
	expect_split(&s, CAUSES([CS_CAUSE_ACCEPT_QUEUE] = 1 * MS, [CS_CAUSE_EVENT_LOOP] = 1 * MS,
				[CS_CAUSE_HANDLER] = 1 * MS));
	cr_assert_eq(engine->conns.count, 1);
}

Test(join, requests_without_a_timeline_are_counted_apart)
{
	struct request_spec r = timeline(SK(1), 2, T0, 1 * MS, 1 * MS, 0);
	r.flags = CS_REQ_NO_RESPONSE;
	feed_request(engine, r);
	r.flags = CS_REQ_NO_RESPONSE | CS_REQ_UNREAD;
	feed_request(engine, r);
	r.flags = CS_REQ_PARTIAL;
	feed_request(engine, r);
	r.flags = CS_REQ_HELD_BACK;
	r.send_eagain = 3;
	feed_request(engine, r);
	r.flags = CS_REQ_HELD_BACK | CS_REQ_NO_RESPONSE;
	r.send_eagain = 2;
	feed_request(engine, r);

	const struct cs_request_stats *s = &engine->requests;
	cr_assert_eq(s->requests, 1);
	cr_assert_eq(s->unanswered, 3);
	cr_assert_eq(s->partial, 1);
	cr_assert_eq(s->held_back, 2);
	cr_assert_eq(s->send_eagain, 5);
	cr_assert_eq(s->latency_ns->count, 1);
	cr_assert_eq(engine->totals.by_type[CS_EV_REQUEST], 5);
}

Test(join, an_exited_forked_worker_is_named_by_its_exit)
{
	/* A forked worker (a PostgreSQL backend) served, then exited: /proc no longer names it. */
	struct request_spec r = timeline(SK(1), 1, T0, 100 * US, 200 * US, 300 * US);
	r.reader_tid = 4242;
	feed_request(engine, r);
	const struct cs_thread_stats *t = cs_u64map_get(&engine->threads, 4242);
	cr_assert_not_null(t);
	cr_assert_eq(t->comm[0], '\0');
	struct cs_ev_proc exit_ev = make_proc(CS_EV_PROC_EXIT, T0 + 1 * MS, 4242);
	FEED_OK(engine, exit_ev);
	cr_assert_str_eq(t->comm, "target");
	/* A process that served nothing gets no thread of its own. */
	struct cs_ev_proc other = make_proc(CS_EV_PROC_EXIT, T0 + 2 * MS, 4343);
	FEED_OK(engine, other);
	cr_assert_null(cs_u64map_get(&engine->threads, 4343));
}

Test(join, threads_collect_the_requests_they_read)
{
	for (int i = 0; i < 10; i++) {
		struct request_spec r = timeline(SK(1), 1 + (uint32_t)i, T0 + (uint64_t)i * MS, 100 * US,
						 200 * US, 300 * US);
		r.reader_tid = i < 7 ? 11 : 12;
		r.sender_tid = 13;
		r.handler_runq_ns = 50 * US;
		feed_request(engine, r);
	}
	const struct cs_thread_stats *t11 = cs_u64map_get(&engine->threads, 11);
	const struct cs_thread_stats *t12 = cs_u64map_get(&engine->threads, 12);
	cr_assert_not_null(t11);
	cr_assert_not_null(t12);
	cr_assert_eq(t11->requests, 7);
	cr_assert_eq(t12->requests, 3);
	cr_assert_eq(t11->tgid, 100);
	cr_assert_eq(t11->cause_ns[CS_CAUSE_EVENT_LOOP], 7 * 100 * US);
	cr_assert_eq(t11->cause_ns[CS_CAUSE_HANDLER], 7 * 150 * US);
	cr_assert_eq(t11->cause_ns[CS_CAUSE_RUN_QUEUE], 7 * 50 * US);
	cr_assert_eq(t12->cause_ns[CS_CAUSE_SEND_DRAIN], 3 * 300 * US);
	cr_assert_null(cs_u64map_get(&engine->threads, 13), "the sender did not read any request");

	/* A thread sample names the thread and keeps its counts. */
	FEED_OK(engine, make_thread_sample(T0 + SEC, 11, "worker-11", 5 * MS, 1 * MS, 9));
	t11 = cs_u64map_get(&engine->threads, 11);
	cr_assert_str_eq(t11->comm, "worker-11");
	cr_assert_eq(t11->requests, 7);
	cr_assert_eq(t11->runq_total_ns, 5 * MS);
	cr_assert_eq(t11->runq_waits, 9);
}

Test(join, the_slowest_requests_are_kept_as_exemplars)
{
	/* 3000 requests of distinct latencies, fed in a scrambled order. */
	const uint64_t n = 3000;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t k = (i * 1237) % n; /* 1237 is prime to 3000: a permutation */
		feed_request(engine, timeline(SK(1), 1 + (uint32_t)i, T0 + i * MS, 0, 10 * US + k * US, 0));
	}
	const struct cs_request_stats *s = &engine->requests;
	cr_assert_eq(s->exemplar_count, CS_EXEMPLARS);
	static bool seen[3000];
	for (size_t i = 0; i < s->exemplar_count; i++) {
		uint64_t total = s->exemplars[i].split.total_ns;
		cr_assert_geq(total, 10 * US + (n - CS_EXEMPLARS) * US, "exemplar %zu: %llu ns is not among the slowest",
			      i, (unsigned long long)total);
		uint64_t k = (total - 10 * US) / US;
		cr_assert_not(seen[k], "exemplar %llu kept twice", (unsigned long long)k);
		seen[k] = true;
	}
	cr_assert_eq(s->exemplars[0].split.total_ns, 10 * US + (n - CS_EXEMPLARS) * US, "heap root");
}

Test(join, latency_per_listener)
{
	for (int i = 0; i < 5; i++) {
		struct request_spec r = timeline(SK(1), 1, T0 + (uint64_t)i * MS, 0, 1 * MS, 0);
		r.port = i < 3 ? 8080 : 9090;
		feed_request(engine, r);
	}
	cr_assert_eq(cs_engine_listener(engine, 8080)->requests, 3);
	cr_assert_eq(cs_engine_listener(engine, 9090)->requests, 2);
	cr_assert_eq(cs_engine_listener(engine, 9090)->latency_ns->count, 2);
}

Test(join, malformed_request_records_are_refused)
{
	struct cs_ev_request ev = make_request(timeline(SK(1), 1, T0, 0, 1 * MS, 0));
	ev.hdr.size = sizeof(ev) - 8;
	cr_assert_eq(cs_engine_feed(engine, &ev, sizeof(ev)), -EINVAL);
	ev.hdr.size = sizeof(ev);
	cr_assert_eq(cs_engine_feed(engine, &ev, sizeof(ev) - 1), -EINVAL);
	cr_assert_eq(engine->totals.malformed, 2);
	cr_assert_eq(engine->requests.requests, 0);
}
