// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of attribution (daemon/analysis/tail.c, attrib.c): the tail's causes at a
 * percentile, the conditions that shape the tail (non-persistent
 * connections, idle timeouts, listen overflow, accept contention, CPU
 * saturation), connection lifecycles, and the JSON report's request part.
 * Expected shares are computed by hand from the populations fed.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "attrib.h"
#include "engine.h"
#include "events.h"
#include "figures_check.h"
#include "json_check.h"
#include "report.h"
#include "words.h"

#define PORT 8080
#define T0 (100 * SEC)
#define SK(n) (0xffff888200000000ull + (n))

static struct cs_engine *engine;
static struct cs_report_meta meta;
static uint64_t clock_ns;
static uint64_t next_sk;

static void setup(void)
{
	engine = cs_engine_new();
	cr_assert_not_null(engine);
	meta = (struct cs_report_meta){ .target = "pid 1234 (csserver)", .duration_s = 10.0 };
	clock_ns = T0;
	next_sk = 1;
}

static void teardown(void)
{
	cs_engine_free(engine);
}

TestSuite(tail, .init = setup, .fini = teardown);
TestSuite(conditions, .init = setup, .fini = teardown);
TestSuite(lifecycle, .init = setup, .fini = teardown);
TestSuite(requests_json, .init = setup, .fini = teardown);

/* ---- populations --------------------------------------------------------------- */

struct phases {
	uint64_t event_loop, handler, drain, runq; /* runq: of the handler phase */
	uint32_t reader_tid;
};

/* A request on a kept-alive connection (no set-up), with these causes. */
static void request(struct phases p)
{
	clock_ns += 100 * US;
	uint64_t start = clock_ns;
	feed_request(engine, (struct request_spec){
		.sk = SK(next_sk++), .port = PORT, .index = 1, .start_ns = start,
		.first_read_ns = start + p.event_loop,
		.first_send_ns = start + p.event_loop + p.handler + p.runq,
		.last_send_ns = start + p.event_loop + p.handler + p.runq,
		.drain_end_ns = start + p.event_loop + p.handler + p.runq + p.drain,
		.handler_runq_ns = p.runq, .reader_tid = p.reader_tid, .bytes_out = 1000,
	});
	clock_ns += p.event_loop + p.handler + p.runq + p.drain;
}

static void requests(uint64_t n, struct phases p)
{
	for (uint64_t i = 0; i < n; i++)
		request(p);
}

/*
 * 1000 requests:   899 handler 100 us
 *                   90 handler 200 us      (ranks 900..989)
 *                    1 handler 1 ms        (rank 990: the p99 value)
 *                   10 event loop 9 ms + handler 1 ms, on thread 21
 */
static void population_event_loop_tail(void)
{
	requests(899, (struct phases){ .handler = 100 * US });
	requests(90, (struct phases){ .handler = 200 * US });
	requests(1, (struct phases){ .handler = 1 * MS });
	requests(10, (struct phases){ .event_loop = 9 * MS, .handler = 1 * MS, .reader_tid = 21 });
}

static const struct cs_tail_cause *cause_in(const struct cs_tail *tail, enum cs_cause cause)
{
	for (int i = 0; i < CS_CAUSE_COUNT; i++)
		if (tail->causes[i].cause == cause)
			return &tail->causes[i];
	cr_assert_fail("cause %d missing from the tail", cause);
	return NULL;
}

/* Every cause once, largest share first, shares adding up to 1. */
static void assert_tail_well_formed(const struct cs_tail *tail)
{
	bool seen[CS_CAUSE_COUNT] = { false };
	double sum = 0;
	uint64_t ns = 0, dominant = 0;
	for (int i = 0; i < CS_CAUSE_COUNT; i++) {
		const struct cs_tail_cause *c = &tail->causes[i];
		cr_assert(c->cause >= 0 && c->cause < CS_CAUSE_COUNT, "cause %d", c->cause);
		cr_assert_not(seen[c->cause], "%s listed twice", cs_cause_names[c->cause]);
		seen[c->cause] = true;
		if (i)
			cr_assert_geq(tail->causes[i - 1].share, c->share, "%s (%.4f) ranked above %s (%.4f)",
				      cs_cause_names[tail->causes[i - 1].cause], tail->causes[i - 1].share,
				      cs_cause_names[c->cause], c->share);
		sum += c->share;
		ns += c->ns;
		dominant += c->requests;
	}
	cr_assert_eq(ns, tail->total_ns, "cause times do not add up to the tail's");
	cr_assert_eq(dominant, tail->requests, "each tail request has one largest cause");
	if (tail->requests && tail->total_ns)
		cr_assert(fabs(sum - 1.0) < 1e-9, "shares add up to %.12f", sum);
}

static void expect_share(const struct cs_tail *tail, enum cs_cause cause, double want)
{
	double got = cause_in(tail, cause)->share;
	cr_expect(fabs(got - want) < 1e-9, "%s share %.6f, want %.6f", cs_cause_names[cause], got, want);
}

/* ---- the tail -------------------------------------------------------------------- */

Test(tail, empty_engine)
{
	struct cs_tail tail;
	memset(&tail, 0x5a, sizeof(tail));
	cs_compute_tail(engine, 99.0, &tail);
	cr_assert_eq(tail.requests, 0);
	cr_assert_eq(tail.threshold_ns, 0);
	cr_assert_eq(tail.total_ns, 0);
	cr_assert_eq(tail.percentile, 99.0);
	for (int i = 0; i < CS_CAUSE_COUNT; i++) {
		cr_assert_eq(tail.causes[i].cause, (enum cs_cause)i);
		cr_assert_eq(tail.causes[i].share, 0.0);
		cr_assert_eq(tail.causes[i].requests, 0);
		cr_assert_eq(tail.causes[i].evidence.count, 0, "%s has evidence", cs_cause_names[i]);
	}
}

Test(tail, p99_is_the_event_loop)
{
	population_event_loop_tail();
	struct cs_tail tail;
	cs_compute_tail(engine, 99.0, &tail);
	assert_tail_well_formed(&tail);

	/* Ranks 990..1000: the 1 ms request and the ten slow ones. */
	cr_assert_eq(tail.requests, 11);
	cr_assert_leq(tail.threshold_ns, 1 * MS);
	cr_assert_geq(tail.threshold_ns, 1 * MS - 1 * MS / 128, "threshold %llu ns",
		      (unsigned long long)tail.threshold_ns);
	cr_assert_eq(tail.total_ns, 101 * MS);
	cr_assert_eq(tail.causes[0].cause, CS_CAUSE_EVENT_LOOP);
	cr_assert_eq(tail.causes[1].cause, CS_CAUSE_HANDLER);
	expect_share(&tail, CS_CAUSE_EVENT_LOOP, 90.0 / 101.0);
	expect_share(&tail, CS_CAUSE_HANDLER, 11.0 / 101.0);
	cr_assert_eq(tail.causes[0].ns, 90 * MS);
	cr_assert_eq(tail.causes[0].requests, 10);
	cr_assert_eq(tail.causes[1].requests, 1);
	for (int i = 2; i < CS_CAUSE_COUNT; i++)
		cr_assert_eq(tail.causes[i].share, 0.0, "%s", cs_cause_names[tail.causes[i].cause]);

	/* The evidence names the thread whose loop kept them waiting: its figures, then its words. */
	const struct cs_figures *figures = &tail.causes[0].evidence;
	cr_assert_eq(figures->dropped, 0);
	cr_assert_eq(figure_count(figures, "thread_tid"), 21);
	cr_assert_eq(figure_count(figures, "tail_requests"), 10);
	cr_assert_eq(figure_ns(figures, "thread_time"), 90 * MS);
	char evidence[CS_SENTENCE_LEN];
	cs_cause_evidence(evidence, sizeof(evidence), &tail.causes[0]);
	cr_assert_not_null(strstr(evidence, "tid 21"), "evidence: %s", evidence);
	cr_assert_not_null(strstr(evidence, "10 tail request(s)"), "evidence: %s", evidence);
	cr_assert_not_null(strstr(evidence, "90.0 ms"), "evidence: %s", evidence);
}

Test(tail, the_percentile_chooses_the_tail)
{
	population_event_loop_tail();
	struct cs_tail tail;

	/* p90: rank 900 is a 200 us request: 90 + 1 + 10 requests. */
	cs_compute_tail(engine, 90.0, &tail);
	assert_tail_well_formed(&tail);
	cr_assert_eq(tail.percentile, 90.0);
	cr_assert_eq(tail.requests, 101);
	cr_assert_eq(tail.total_ns, 119 * MS);
	cr_assert_eq(tail.causes[0].cause, CS_CAUSE_EVENT_LOOP);
	expect_share(&tail, CS_CAUSE_EVENT_LOOP, 90.0 / 119.0);
	expect_share(&tail, CS_CAUSE_HANDLER, 29.0 / 119.0);
	cr_assert_eq(cause_in(&tail, CS_CAUSE_HANDLER)->requests, 91);
	cr_assert_leq(tail.threshold_ns, 200 * US);
	cr_assert_geq(tail.threshold_ns, 200 * US - 200 * US / 128);

	/* p99.9: rank 999, only the ten slow ones. */
	cs_compute_tail(engine, 99.9, &tail);
	assert_tail_well_formed(&tail);
	cr_assert_eq(tail.requests, 10);
	expect_share(&tail, CS_CAUSE_EVENT_LOOP, 0.9);
	expect_share(&tail, CS_CAUSE_HANDLER, 0.1);
	cr_assert_eq(cause_in(&tail, CS_CAUSE_HANDLER)->requests, 0);

	/* p50: every request; the handler's 118.9 ms outweigh the loop's 90. */
	cs_compute_tail(engine, 50.0, &tail);
	assert_tail_well_formed(&tail);
	cr_assert_eq(tail.requests, 1000);
	cr_assert_eq(tail.causes[0].cause, CS_CAUSE_HANDLER);
	expect_share(&tail, CS_CAUSE_HANDLER, 118.9 / 208.9);
	cr_assert_eq(tail.causes[0].requests, 990);
}

Test(tail, set_up_causes_are_named_and_ranked)
{
	/*
	 * 40 new connections, one request each. 36 are quick (accept 50 us,
	 * handler 100 us); 4 waited 2 ms in the accept queue after a 1 s SYN
	 * retransmit, then 1 ms for the handler.
	 */
	for (uint64_t i = 0; i < 40; i++) {
		bool slow = i >= 36;
		uint64_t t = T0 + i * 2 * SEC, sk = SK(i);
		uint16_t client_port = (uint16_t)(41000 + i);
		if (slow)
			FEED_OK(engine, make_slow_handshake((struct handshake_spec){ .port = PORT,
										     .syn_sent_ns = t - SEC,
										     .last_syn_ns = t, .ts_ns = t },
							    1 * SEC, 0x0a000002, client_port));
		uint64_t accept = t + (slow ? 2 * MS : 50 * US);
		FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tid = 3, .established_ns = t,
								     .ts_ns = accept },
					       sk, 0x0a000002, client_port));
		uint64_t handler = slow ? 1 * MS : 100 * US;
		feed_request(engine, (struct request_spec){ .sk = sk, .port = PORT, .start_ns = t,
							    .first_read_ns = accept, .first_send_ns = accept + handler,
							    .last_send_ns = accept + handler,
							    .handshake_extra_ns = slow ? 1 * SEC : 0 });
	}
	struct cs_tail tail;
	/* p90: rank 36, a quick one: every request is at or above it. */
	cs_compute_tail(engine, 90.0, &tail);
	assert_tail_well_formed(&tail);
	cr_assert_eq(tail.requests, 40);
	cr_assert_eq(cause_in(&tail, CS_CAUSE_LISTEN_OVERFLOW)->ns, 4 * SEC);
	cr_assert_eq(cause_in(&tail, CS_CAUSE_ACCEPT_QUEUE)->ns, 36 * 50 * US + 4 * 2 * MS);
	cr_assert_eq(tail.causes[0].cause, CS_CAUSE_LISTEN_OVERFLOW);
	cr_assert_eq(tail.causes[0].requests, 4);
	cr_assert_eq(figure_count(&tail.causes[0].evidence, "port"), PORT);
	char evidence[CS_SENTENCE_LEN];
	cs_cause_evidence(evidence, sizeof(evidence), &tail.causes[0]);
	cr_assert(strstr(evidence, "listener :8080 dropped"), "evidence: %s", evidence);
	/* p99.9: the four slow ones. */
	cs_compute_tail(engine, 99.9, &tail);
	cr_assert_eq(tail.requests, 4);
	expect_share(&tail, CS_CAUSE_LISTEN_OVERFLOW, 4000.0 / 4012.0);
	expect_share(&tail, CS_CAUSE_ACCEPT_QUEUE, 8.0 / 4012.0);
	expect_share(&tail, CS_CAUSE_HANDLER, 4.0 / 4012.0);
	cr_assert_str_eq(cs_cause_names[tail.causes[1].cause], "accept_queue");
}

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

Test(tail, matches_a_brute_force_count_on_a_random_population)
{
	enum { N = 5000 };
	static struct phases pop[N];
	static uint64_t totals[N], sorted[N];
	for (int i = 0; i < N; i++) {
		/* Mostly fast, a few slow in one cause or another. */
		uint64_t scale = rng() % 50 == 0 ? 20 * MS : 300 * US;
		pop[i] = (struct phases){ .event_loop = rng() % scale, .handler = 1 + rng() % scale,
					  .drain = rng() % (scale / 2), .runq = rng() % (scale / 3) };
		request(pop[i]);
		totals[i] = sorted[i] = pop[i].event_loop + pop[i].handler + pop[i].drain + pop[i].runq;
	}
	qsort(sorted, N, sizeof(sorted[0]), compare_u64);

	static const double percentiles[] = { 50.0, 90.0, 95.0, 99.0, 99.5, 99.9 };
	for (size_t p = 0; p < sizeof(percentiles) / sizeof(percentiles[0]); p++) {
		struct cs_tail tail;
		cs_compute_tail(engine, percentiles[p], &tail);
		assert_tail_well_formed(&tail);
		/* The threshold: the bucket holding the nearest-rank value. */
		uint64_t rank = (uint64_t)ceil(percentiles[p] / 100.0 * N - 1e-9);
		uint64_t exact = sorted[rank - 1];
		cr_assert_leq(tail.threshold_ns, exact, "p%g", percentiles[p]);
		cr_assert_eq(cs_hist_bucket_index(tail.threshold_ns), cs_hist_bucket_index(exact), "p%g",
			     percentiles[p]);
		/* Everything at or above it, and nothing else. */
		uint64_t want_requests = 0, want_ns[CS_CAUSE_COUNT] = { 0 }, want_dominant[CS_CAUSE_COUNT] = { 0 };
		for (int i = 0; i < N; i++) {
			if (totals[i] < tail.threshold_ns)
				continue;
			uint64_t c[CS_CAUSE_COUNT] = { [CS_CAUSE_EVENT_LOOP] = pop[i].event_loop,
						       [CS_CAUSE_HANDLER] = pop[i].handler,
						       [CS_CAUSE_SEND_DRAIN] = pop[i].drain,
						       [CS_CAUSE_RUN_QUEUE] = pop[i].runq };
			int dominant = 0;
			for (int k = 0; k < CS_CAUSE_COUNT; k++) {
				want_ns[k] += c[k];
				if (c[k] > c[dominant])
					dominant = k;
			}
			want_dominant[dominant]++;
			want_requests++;
		}
		cr_assert_eq(tail.requests, want_requests, "p%g: %llu tail requests, want %llu", percentiles[p],
			     (unsigned long long)tail.requests, (unsigned long long)want_requests);
		for (int k = 0; k < CS_CAUSE_COUNT; k++) {
			cr_assert_eq(cause_in(&tail, k)->ns, want_ns[k], "p%g %s", percentiles[p], cs_cause_names[k]);
			cr_assert_eq(cause_in(&tail, k)->requests, want_dominant[k], "p%g %s", percentiles[p],
				     cs_cause_names[k]);
		}
	}
}

/* ---- conditions: non-persistent connections ---------------------------------------- */

/* A connection from client:port accepted after a wait, carrying n requests, then closed. */
static void connection(uint32_t client, uint16_t client_port, uint64_t accept_wait, uint32_t n,
		       uint8_t closed_by, uint64_t idle_after)
{
	uint64_t sk = SK(next_sk++);
	uint64_t established = clock_ns += 1 * MS;
	uint64_t accept = established + accept_wait;
	FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tgid = 100, .tid = 3,
							     .established_ns = established, .ts_ns = accept,
							     .backlog_limit = 128 },
				       sk, client, client_port));
	uint64_t t = established;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t read = i == 0 && t + 10 * US < accept ? accept + 10 * US : t + 10 * US;
		feed_request(engine, (struct request_spec){ .sk = sk, .port = PORT, .index = i, .start_ns = t,
							    .first_read_ns = read, .first_send_ns = read + 100 * US,
							    .last_send_ns = read + 100 * US });
		t = read + 100 * US + 1 * MS;
	}
	uint64_t last = t - 1 * MS;
	clock_ns = last + idle_after;
	feed_conn_close(engine, (struct close_spec){ .sk = sk, .port = PORT, .ts_ns = clock_ns,
						     .established_ns = established, .last_activity_ns = last,
						     .requests = n, .client_ipv4 = client, .client_port = client_port,
						     .closed_by = closed_by });
}

static struct cs_conditions conditions(void)
{
	struct cs_conditions c;
	memset(&c, 0x5a, sizeof(c));
	cs_compute_conditions(engine, &meta, &c);
	return c;
}

Test(conditions, nothing_flagged_on_an_empty_engine)
{
	struct cs_conditions c = conditions();
	cr_assert_not(c.non_persistent.flagged);
	cr_assert_not(c.idle_timeout.flagged);
	cr_assert_not(c.listen_overflow.flagged);
	cr_assert_not(c.accept_contention.flagged);
	cr_assert_not(c.cpu_saturation.flagged);
	cr_assert_eq(c.non_persistent.requests_per_connection, 0.0);
	cr_assert_eq(c.idle_timeout.inferred_timeout_ms, 0.0);
	cr_assert_eq(c.lifecycle.time_wait_now, 0);
	cr_assert_eq(c.cpu_saturation.top_tid, 0);
}

Test(conditions, one_request_per_connection_is_non_persistent)
{
	/* 30 connections, one request each, 200 us in the accept queue. */
	for (int i = 0; i < 30; i++)
		connection(0x0a000002, (uint16_t)(40000 + i), 200 * US, 1, CS_CLOSED_BY_CLIENT, 0);
	struct cs_conditions c = conditions();
	cr_assert(c.non_persistent.flagged);
	cr_assert_eq(c.non_persistent.connections, 30);
	cr_assert_float_eq(c.non_persistent.requests_per_connection, 1.0, 1e-9);
	cr_assert_float_eq(c.non_persistent.setup_share, 1.0, 1e-9);
	cr_assert_float_eq(c.non_persistent.setup_cost_us, 200.0, 1e-6);
	/* Each request: 200 us queued + 10 us pickup + 100 us handler. */
	cr_assert(fabs(c.non_persistent.median_latency_us - 310.0) < 310.0 / 128, "median %.3f us",
		  c.non_persistent.median_latency_us);
}

Test(conditions, fifty_requests_per_connection_is_persistent)
{
	for (int i = 0; i < 4; i++)
		connection(0x0a000002, (uint16_t)(40000 + i), 200 * US, 50, CS_CLOSED_BY_CLIENT, 0);
	struct cs_conditions c = conditions();
	cr_assert_not(c.non_persistent.flagged);
	cr_assert_eq(c.non_persistent.connections, 4);
	cr_assert_float_eq(c.non_persistent.requests_per_connection, 50.0, 1e-9);
	cr_assert_float_eq(c.non_persistent.setup_share, 0.02, 1e-9);
}

Test(conditions, too_few_requests_to_judge)
{
	for (int i = 0; i < 5; i++)
		connection(0x0a000002, (uint16_t)(40000 + i), 200 * US, 1, CS_CLOSED_BY_CLIENT, 0);
	cr_assert_not(conditions().non_persistent.flagged);
}

/* ---- conditions: idle timeouts ------------------------------------------------------ */

Test(conditions, server_idle_closes_reveal_the_timeout)
{
	/* 24 keep-alive connections the server closed ~200 ms after their last request. */
	for (uint32_t i = 0; i < 24; i++)
		connection(0x0a000100 + i, 40000, 50 * US, 3, CS_CLOSED_BY_SERVER, 200 * MS + (rng() % (3 * MS)));
	/* Noise: a few idle closes at other gaps, each its own. */
	static const uint64_t other_gaps[] = { 10 * MS, 35 * MS, 80 * MS, 140 * MS, 900 * MS };
	for (uint32_t i = 0; i < 5; i++)
		connection(0x0a000200 + i, 40000, 50 * US, 1, CS_CLOSED_BY_SERVER, other_gaps[i]);
	struct cs_conditions c = conditions();
	cr_assert(c.idle_timeout.flagged);
	cr_assert_eq(c.idle_timeout.server_idle_closes, 29);
	cr_assert(fabs(c.idle_timeout.inferred_timeout_ms - 200.0) <= 200.0 * 0.02, "inferred %.3f ms",
		  c.idle_timeout.inferred_timeout_ms);
	cr_assert_eq(engine->lifecycle.idle_gap_ns->count, 29);
}

Test(conditions, closes_on_a_poller_s_schedule_reveal_the_timeout_where_they_begin)
{
	/*
	 * A server that looks for idle connections once a second (Tomcat's
	 * poller) with a 300 ms timeout: each of 103 connections is closed
	 * between 300 ms and 1.3 s after its last request, spread.
	 */
	for (uint32_t i = 0; i < 100; i++)
		connection(0x0a000100 + i, 40000, 50 * US, 2, CS_CLOSED_BY_SERVER, 300 * MS + i * 10 * MS + 3 * MS);
	/* Three that went idle together and were closed in the same pass: the fullest bucket. */
	for (uint32_t i = 0; i < 3; i++)
		connection(0x0a000200 + i, 40000, 50 * US, 2, CS_CLOSED_BY_SERVER, 1100 * MS);
	struct cs_conditions c = conditions();
	cr_assert(c.idle_timeout.flagged);
	cr_assert(c.idle_timeout.inferred_timeout_ms >= 300.0 && c.idle_timeout.inferred_timeout_ms <= 330.0,
		  "inferred %.3f ms", c.idle_timeout.inferred_timeout_ms);
}

Test(conditions, closes_that_are_not_idle_timeouts)
{
	/* The server closes right after answering (Connection: close): no idle gap. */
	for (uint32_t i = 0; i < 10; i++)
		connection(0x0a000100 + i, 40000, 50 * US, 1, CS_CLOSED_BY_SERVER, 100 * US);
	/* The clients close their idle connections. */
	for (uint32_t i = 0; i < 10; i++)
		connection(0x0a000200 + i, 40000, 50 * US, 2, CS_CLOSED_BY_CLIENT, 200 * MS);
	/* Aborted after a long silence. */
	for (uint32_t i = 0; i < 10; i++)
		connection(0x0a000300 + i, 40000, 50 * US, 2, CS_CLOSED_BY_ABORT, 200 * MS);
	/* The server drops connections that never sent a request. */
	for (uint32_t i = 0; i < 10; i++)
		connection(0x0a000400 + i, 40000, 50 * US, 0, CS_CLOSED_BY_SERVER, 200 * MS);
	struct cs_conditions c = conditions();
	cr_assert_eq(c.idle_timeout.server_idle_closes, 0);
	cr_assert_not(c.idle_timeout.flagged);
	cr_assert_eq(c.idle_timeout.inferred_timeout_ms, 0.0);
	cr_assert_eq(c.idle_timeout.reconnects, 0);
}

Test(conditions, reconnects_after_idle_closes)
{
	/* Client A reconnects 300 ms after its idle close; B after 1.5 s; C never. */
	const uint32_t a = 0x0a000002, b = 0x0a000003, c_addr = 0x0a000004, other = 0x0a000009;
	connection(a, 40000, 50 * US, 2, CS_CLOSED_BY_SERVER, 200 * MS);
	clock_ns += 300 * MS;
	connection(a, 40001, 50 * US, 2, CS_CLOSED_BY_CLIENT, 1 * MS);

	connection(b, 40000, 50 * US, 2, CS_CLOSED_BY_SERVER, 200 * MS);
	clock_ns += 1500 * MS;
	connection(b, 40001, 50 * US, 2, CS_CLOSED_BY_CLIENT, 1 * MS);

	connection(c_addr, 40000, 50 * US, 2, CS_CLOSED_BY_SERVER, 200 * MS);
	clock_ns += 100 * MS;
	connection(other, 40000, 50 * US, 2, CS_CLOSED_BY_CLIENT, 1 * MS); /* someone else */

	/* A's second reconnect within the second is not counted twice. */
	connection(a, 40002, 50 * US, 2, CS_CLOSED_BY_CLIENT, 1 * MS);

	struct cs_conditions c = conditions();
	cr_assert_eq(c.idle_timeout.server_idle_closes, 3);
	cr_assert(c.idle_timeout.flagged);
	cr_assert_eq(c.idle_timeout.reconnects, 1);
}

Test(conditions, several_idle_closes_of_one_address_await_as_many_reconnects)
{
	/* Local load generators share one address: three idle closes, then four connects. */
	const uint32_t local = 0x7f000001;
	for (uint16_t i = 0; i < 3; i++)
		connection(local, (uint16_t)(40000 + i), 50 * US, 2, CS_CLOSED_BY_SERVER, 200 * MS);
	for (uint16_t i = 0; i < 4; i++)
		connection(local, (uint16_t)(41000 + i), 50 * US, 2, CS_CLOSED_BY_CLIENT, 1 * MS);
	cr_assert_eq(conditions().idle_timeout.reconnects, 3);

	/* Closes older than the window are not waited for: 5 s later, one close, two connects. */
	clock_ns += 5 * SEC;
	connection(local, 42000, 50 * US, 2, CS_CLOSED_BY_SERVER, 200 * MS);
	for (uint16_t i = 0; i < 2; i++)
		connection(local, (uint16_t)(43000 + i), 50 * US, 2, CS_CLOSED_BY_CLIENT, 1 * MS);
	cr_assert_eq(conditions().idle_timeout.reconnects, 4);
}

Test(conditions, keepalive_race_resets)
{
	/* Sent resets: 8 (ABORT_ON_DATA) and 9 (TIMEWAIT_SOCKET) are the race. */
	static const uint32_t reasons[] = { 8, 9, 9, 0, 1, 5, 7, 10, 11 };
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		FEED_OK(engine, make_reset(T0 + i * MS, PORT, CS_RESET_SENT, reasons[i]));
	/* Received resets carry no reason: never the race, whatever the field says. */
	FEED_OK(engine, make_reset(T0 + 20 * MS, PORT, CS_RESET_RECEIVED, 8));
	FEED_OK(engine, make_reset(T0 + 21 * MS, PORT, CS_RESET_RECEIVED, 0));
	struct cs_conditions c = conditions();
	cr_assert_eq(c.idle_timeout.keepalive_race_resets, 3);
	cr_assert(c.idle_timeout.flagged, "a keep-alive race alone is an idle-timeout problem");
	cr_assert_eq(c.lifecycle.resets_sent, 9);
	cr_assert_eq(c.lifecycle.resets_received, 2);
}

Test(conditions, abort_on_close_with_an_unread_request_is_a_race)
{
	/* The server closed while a request it never read sat in the socket (reason 11). */
	struct cs_ev_reset unread = make_reset(T0, PORT, CS_RESET_SENT, 11);
	unread.flags = CS_RESET_UNREAD_REQUEST;
	FEED_OK(engine, unread);
	/* Reason 11 on a connection with nothing unread: an ordinary abort. */
	FEED_OK(engine, make_reset(T0 + MS, PORT, CS_RESET_SENT, 11));
	cr_assert_eq(conditions().idle_timeout.keepalive_race_resets, 1);
}

Test(conditions, other_resets_are_no_keepalive_race)
{
	static const uint32_t reasons[] = { 0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13 };
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		FEED_OK(engine, make_reset(T0 + i * MS, PORT, CS_RESET_SENT, reasons[i]));
	struct cs_conditions c = conditions();
	cr_assert_eq(c.idle_timeout.keepalive_race_resets, 0);
	cr_assert_not(c.idle_timeout.flagged);
}

/* ---- conditions: listen overflow ------------------------------------------------------ */

Test(conditions, listen_drops_flag_an_overflow)
{
	feed_sample(engine, (struct sample_spec){ .port = PORT, .ts_ns = T0, .backlog = 128, .backlog_limit = 128,
						  .drops = 10 });
	feed_sample(engine, (struct sample_spec){ .port = PORT, .ts_ns = T0 + SEC, .backlog = 129,
						  .backlog_limit = 128, .drops = 17 });
	/* Two of the seven were third ACKs, counted twice by sk_drops. */
	FEED_OK(engine, make_ack_overflow(T0 + 500 * MS, PORT));
	FEED_OK(engine, make_ack_overflow(T0 + 600 * MS, PORT));
	struct cs_conditions c = conditions();
	cr_assert(c.listen_overflow.flagged);
	cr_assert_eq(c.listen_overflow.drops, 5);
	/* As ListenOverflows counts them: three SYNs, two handshake ACKs. */
	cr_assert_eq(c.listen_overflow.ack_drops, 2);
	cr_assert_eq(figure_count(&c.seen[CS_COND_LISTEN_OVERFLOW], "syn_drops"), 3);
	cr_assert_eq(c.listen_overflow.delayed_connections, 0);
}

Test(conditions, tail_evidence_counts_the_drops_the_condition_counts)
{
	/* The socket says 40 drops; the kernel's ListenOverflows only 6. */
	meta.netstat = (struct cs_netstat_delta){ .valid = true, .listen_overflows = 6, .listen_drops = 6 };
	feed_sample(engine, (struct sample_spec){ .port = PORT, .ts_ns = T0, .backlog = 128, .backlog_limit = 128,
						  .drops = 0 });
	FEED_OK(engine, make_slow_handshake((struct handshake_spec){ .port = PORT, .syn_sent_ns = T0,
								     .last_syn_ns = T0 + SEC, .ts_ns = T0 + SEC },
					    1 * SEC, 0x0a000002, 41000));
	FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tid = 3, .established_ns = T0 + SEC,
							     .ts_ns = T0 + SEC + MS },
				       SK(1), 0x0a000002, 41000));
	feed_request(engine, (struct request_spec){ .sk = SK(1), .port = PORT, .start_ns = T0 + SEC,
						    .first_read_ns = T0 + SEC + MS, .first_send_ns = T0 + SEC + 2 * MS,
						    .last_send_ns = T0 + SEC + 2 * MS, .handshake_extra_ns = SEC });
	feed_sample(engine, (struct sample_spec){ .port = PORT, .ts_ns = T0 + 2 * SEC, .backlog = 129,
						  .backlog_limit = 128, .drops = 40 });
	struct cs_conditions c = conditions();
	cr_assert_eq(c.listen_overflow.drops, 6);
	struct cs_tail tail;
	cs_compute_run_tail(engine, &meta, &tail);
	const struct cs_tail_cause *overflow = cause_in(&tail, CS_CAUSE_LISTEN_OVERFLOW);
	cr_assert_not_null(overflow);
	cr_assert_eq(figure_count(&overflow->evidence, "drops"), 6);
	cr_assert_eq(figure_count(&overflow->evidence, "syn_drops"), 6);
}

Test(conditions, delayed_and_failed_handshakes)
{
	FEED_OK(engine, make_slow_handshake((struct handshake_spec){ .port = PORT, .syn_sent_ns = T0,
								     .last_syn_ns = T0 + SEC, .ts_ns = T0 + SEC },
					    1 * SEC, 0x0a000002, 41000));
	FEED_OK(engine, make_slow_handshake((struct handshake_spec){ .port = PORT, .syn_sent_ns = T0,
								     .last_syn_ns = T0 + 3 * SEC, .retransmits = 2,
								     .ts_ns = T0 + 3 * SEC },
					    3 * SEC, 0x0a000002, 41001));
	FEED_OK(engine, make_slow_handshake((struct handshake_spec){ .port = PORT, .syn_sent_ns = T0,
								     .ts_ns = T0 + 60 * SEC, .retransmits = 6,
								     .gave_up = true },
					    0, 0x0a000002, 41002));
	struct cs_conditions c = conditions();
	cr_assert(c.listen_overflow.flagged);
	cr_assert_eq(c.listen_overflow.drops, 0);
	cr_assert_eq(c.listen_overflow.delayed_connections, 2);
	cr_assert_eq(c.listen_overflow.failed_connections, 1);
}

Test(conditions, no_overflow_without_drops_or_delays)
{
	feed_sample(engine, (struct sample_spec){ .port = PORT, .ts_ns = T0, .backlog = 3, .backlog_limit = 128,
						  .drops = 10 });
	feed_sample(engine, (struct sample_spec){ .port = PORT, .ts_ns = T0 + SEC, .backlog = 0,
						  .backlog_limit = 128, .drops = 10 });
	/* A connect slowed by 150 ms (a lost ACK on a lossy link, not a full queue). */
	FEED_OK(engine, make_slow_handshake((struct handshake_spec){ .port = PORT, .syn_sent_ns = T0,
								     .last_syn_ns = T0, .ts_ns = T0 + 150 * MS },
					    150 * MS, 0x0a000002, 41000));
	struct cs_conditions c = conditions();
	cr_assert_not(c.listen_overflow.flagged);
	cr_assert_eq(c.listen_overflow.drops, 0);
	cr_assert_eq(c.listen_overflow.delayed_connections, 0);
}

/* ---- conditions: accept contention -------------------------------------------------- */

Test(conditions, accept_contention_figures)
{
	uint64_t t = T0;
	feed_accepts(engine, PORT, 1, 75, 30 * US, &t);
	feed_accepts(engine, PORT, 2, 25, 30 * US, &t);
	feed_eagains(engine, PORT, 2, 7, &t);
	struct cs_conditions c = conditions();
	cr_assert_float_eq(c.accept_contention.busiest_worker_share, 0.75, 1e-9);
	cr_assert_eq(c.accept_contention.eagain, 7);
	cr_assert(fabs(c.accept_contention.accept_wait_p99_us - 30.0) < 30.0 / 128, "p99 %.3f us",
		  c.accept_contention.accept_wait_p99_us);
}

/* ---- conditions: CPU saturation ----------------------------------------------------- */

Test(conditions, a_thread_waiting_for_a_cpu_5_percent_of_the_run)
{
	/* 10 s run: 600 ms runnable is 6 %; another thread 100 ms. */
	FEED_OK(engine, make_thread_sample(T0, 31, "worker-31", 100 * MS, 2 * MS, 100));
	FEED_OK(engine, make_thread_sample(T0 + SEC, 31, "worker-31", 600 * MS, 9 * MS, 800)); /* totals: latest wins */
	FEED_OK(engine, make_thread_sample(T0 + SEC, 32, "worker-32", 100 * MS, 12 * MS, 50));
	struct cs_conditions c = conditions();
	cr_assert(c.cpu_saturation.flagged);
	cr_assert_eq(c.cpu_saturation.top_tid, 31);
	cr_assert_str_eq(c.cpu_saturation.top_comm, "worker-31");
	cr_assert_eq(c.cpu_saturation.top_runq_ns, 600 * MS);
	cr_assert_float_eq(c.cpu_saturation.top_runq_share, 0.06, 1e-9);
	cr_assert_eq(c.cpu_saturation.runq_total_ns, 700 * MS);
	cr_assert_eq(c.cpu_saturation.runq_max_ns, 12 * MS);
	cr_assert_not(c.cpu_saturation.runq_max_is_mean);
}

Test(conditions, a_longest_wait_that_is_a_mean_is_said_as_one)
{
	/*
	 * The kernel's lifetime maximum did not move during the run: the
	 * sample carries the mean (20 ms in 30 waits), a lower bound of the
	 * longest, and the words say "at least".
	 */
	FEED_OK(engine, make_thread_sample(T0 + SEC, 31, "worker-31", 600 * MS, 20 * MS, 30));
	struct cs_conditions c = conditions();
	cr_assert(c.cpu_saturation.flagged);
	cr_assert_eq(c.cpu_saturation.runq_max_ns, 20 * MS);
	cr_assert(c.cpu_saturation.runq_max_is_mean);
	char text[512];
	cs_conditions_figures(&c);
	cs_condition_text(text, sizeof(text), &c, CS_COND_CPU_SATURATION);
	cr_assert(strstr(text, "longest wait at least 20.0 ms (a mean wait"), "%s", text);
}

Test(conditions, a_thread_waiting_4_percent_of_the_run_is_no_saturation)
{
	FEED_OK(engine, make_thread_sample(T0, 31, "worker-31", 400 * MS, 2 * MS, 100));
	FEED_OK(engine, make_thread_sample(T0, 32, "worker-32", 400 * MS, 2 * MS, 100));
	struct cs_conditions c = conditions();
	cr_assert_not(c.cpu_saturation.flagged, "two threads at 4 %% each are not one at 8 %%");
	cr_assert_float_eq(c.cpu_saturation.top_runq_share, 0.04, 1e-9);

	/* Exactly 5 % is enough. */
	FEED_OK(engine, make_thread_sample(T0 + SEC, 33, "worker-33", 500 * MS, 2 * MS, 100));
	c = conditions();
	cr_assert(c.cpu_saturation.flagged);
	cr_assert_eq(c.cpu_saturation.top_tid, 33);
}

Test(conditions, run_queue_a_fifth_of_the_tail_is_saturation)
{
	/* 95 fast requests; 5 slow ones: handler 5 ms + 2 ms runnable (29 %). */
	requests(95, (struct phases){ .handler = 100 * US });
	requests(5, (struct phases){ .handler = 5 * MS, .runq = 2 * MS });
	/* The threads' own waits: the 10 ms the tail's requests waited. */
	FEED_OK(engine, make_thread_sample(T0, 31, "worker-31", 10 * MS, 2 * MS, 5));
	struct cs_conditions c = conditions();
	cr_assert(c.cpu_saturation.flagged);
}

/*
 * The same tail, but the threads waited 2 ms in all: one short wait that
 * held several tail requests at once, each counting it. The tail says
 * run_queue; the CPU was not saturated.
 */
Test(conditions, run_queue_in_the_tail_without_the_threads_waits_is_no_saturation)
{
	requests(95, (struct phases){ .handler = 100 * US });
	requests(5, (struct phases){ .handler = 5 * MS, .runq = 2 * MS });
	FEED_OK(engine, make_thread_sample(T0, 31, "worker-31", 2 * MS, 2 * MS, 1));
	cr_assert_not(conditions().cpu_saturation.flagged);
}

Test(conditions, run_queue_a_tenth_of_the_tail_is_no_saturation)
{
	requests(95, (struct phases){ .handler = 100 * US });
	requests(5, (struct phases){ .handler = 9 * MS, .runq = 1 * MS });
	cr_assert_not(conditions().cpu_saturation.flagged);
}

Test(conditions, run_queue_share_is_read_from_the_reported_tail)
{
	/*
	 * --tail 90. 80 fast requests; 15 at 1 ms, all runnable-not-running;
	 * 5 at 10 ms in the handler. The p90 tail (ranks 90..100: 15 + 5
	 * requests) is 15 ms of run queue in 65 ms, 23 %: the report shows
	 * run_queue at 23 % of its tail, so the condition must agree with it
	 * (the p99 tail, the 5 slow ones, has no run queue at all).
	 */
	requests(80, (struct phases){ .handler = 100 * US });
	requests(15, (struct phases){ .runq = 1 * MS });
	requests(5, (struct phases){ .handler = 10 * MS });
	FEED_OK(engine, make_thread_sample(T0, 31, "worker-31", 15 * MS, 1 * MS, 15));
	meta.tail_percentile = 90.0;
	struct cs_tail tail;
	cs_compute_tail(engine, meta.tail_percentile, &tail);
	cr_assert_eq(tail.requests, 20);
	expect_share(&tail, CS_CAUSE_RUN_QUEUE, 15.0 / 65.0);
	cr_expect(conditions().cpu_saturation.flagged,
		  "run_queue is %.0f %% of the reported p90 tail, yet cpu_saturation is not flagged",
		  100.0 * cause_in(&tail, CS_CAUSE_RUN_QUEUE)->share);
}

/* ---- lifecycle ------------------------------------------------------------------------- */

Test(lifecycle, who_closed)
{
	for (int i = 0; i < 5; i++)
		connection(0x0a000100 + (uint32_t)i, 40000, 50 * US, 1, CS_CLOSED_BY_SERVER, 100 * US);
	for (int i = 0; i < 3; i++)
		connection(0x0a000200 + (uint32_t)i, 40000, 50 * US, 1, CS_CLOSED_BY_CLIENT, 100 * US);
	for (int i = 0; i < 2; i++)
		connection(0x0a000300 + (uint32_t)i, 40000, 50 * US, 1, CS_CLOSED_BY_ABORT, 100 * US);
	feed_conn_close(engine, (struct close_spec){ .sk = SK(999), .port = PORT, .ts_ns = clock_ns += MS,
						     .requests = 4, .partial = 1, .closed_by = CS_CLOSED_BY_CLIENT });
	struct cs_conditions c = conditions();
	cr_assert_eq(c.lifecycle.closed_by_server, 5);
	cr_assert_eq(c.lifecycle.closed_by_client, 4);
	cr_assert_eq(c.lifecycle.aborted, 2);
	cr_assert_eq(c.lifecycle.time_wait_created, 5, "TIME_WAIT: the side that closed first");
	cr_assert_eq(c.lifecycle.time_wait_now, 5);
	cr_assert_eq(engine->lifecycle.closed_partial, 1);
	cr_assert_eq(engine->lifecycle.requests_on_closed, 14);
	cr_assert_eq(engine->lifecycle.lifetime_ns->count, 10, "the partial connection has no known lifetime");
	/* Each lived 50 us queued + 10 us pickup + 100 us handler + 100 us to the close. */
	cr_assert(fabs(c.lifecycle.lifetime_p50_ms - 0.26) < 0.26 / 128, "lifetime p50 %.4f ms",
		  c.lifecycle.lifetime_p50_ms);
}

Test(lifecycle, time_wait_counts_the_last_60_seconds)
{
	/* One server close a second for 120 s (from second 100 to 219). */
	for (uint64_t k = 0; k < 120; k++)
		feed_conn_close(engine, (struct close_spec){ .sk = SK(k), .port = PORT, .ts_ns = T0 + k * SEC,
							     .requests = 1, .last_activity_ns = T0 + k * SEC,
							     .closed_by = CS_CLOSED_BY_SERVER });
	struct cs_conditions c = conditions();
	cr_assert_eq(c.lifecycle.time_wait_created, 120);
	cr_assert_eq(c.lifecycle.time_wait_now, 60, "closes of seconds 160..219");

	/* The run goes on 30 s without a close: half of those are gone. */
	FEED_OK(engine, make_thread_sample(T0 + 149 * SEC, 31, "worker", 0, 0, 0));
	c = conditions();
	cr_assert_eq(c.lifecycle.time_wait_now, 30, "closes of seconds 190..219");

	/* Ten closes in the run's last second count ten times. */
	for (uint64_t k = 0; k < 10; k++)
		feed_conn_close(engine, (struct close_spec){ .sk = SK(500 + k), .port = PORT,
							     .ts_ns = T0 + 149 * SEC + k * MS, .requests = 1,
							     .last_activity_ns = T0 + 149 * SEC,
							     .closed_by = CS_CLOSED_BY_SERVER });
	c = conditions();
	cr_assert_eq(c.lifecycle.time_wait_now, 40);
	cr_assert_eq(c.lifecycle.time_wait_created, 130);
}

/* ---- the JSON report ------------------------------------------------------------------- */

static char *render_json(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	cr_assert_not_null(out);
	cs_report_json(out, engine, &meta);
	cr_assert_eq(fclose(out), 0);
	cr_assert_eq(strlen(buf), len, "NUL byte in the report");
	return buf;
}

static const char *const expected_causes[CS_CAUSE_COUNT] = {
	"accept_queue", "listen_overflow", "run_queue", "event_loop", "worker_pool", "handler", "send_drain",
	"tls_handshake", "protocol_setup", "runtime_pause", "upstream",
};

Test(requests_json, cause_names_are_the_documented_ones)
{
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		cr_assert_str_eq(cs_cause_names[c], expected_causes[c]);
}

/* The tail object: causes named once each, sorted by share, shares adding up to 1. */
static void check_tail_json(const struct json *tail, double percentile, uint64_t requests)
{
	cr_assert_float_eq(number(tail, "percentile"), percentile, 1e-9);
	cr_assert_eq(number(tail, "requests"), (double)requests);
	const struct json *causes = member(tail, "causes", J_ARRAY);
	cr_assert_eq(length(causes), CS_CAUSE_COUNT);
	bool seen[CS_CAUSE_COUNT] = { false };
	double sum = 0, previous = 2.0;
	uint64_t dominant = 0;
	for (size_t i = 0; i < length(causes); i++) {
		const struct json *c = element(causes, i);
		const char *name = member(c, "cause", J_STRING)->string;
		int k = 0;
		while (k < CS_CAUSE_COUNT && strcmp(expected_causes[k], name))
			k++;
		cr_assert_lt(k, CS_CAUSE_COUNT, "unknown cause \"%s\"", name);
		cr_assert_not(seen[k], "cause \"%s\" twice", name);
		seen[k] = true;
		double share = number(c, "share");
		cr_assert(share >= 0 && share <= 1, "%s share %g", name, share);
		cr_assert_leq(share, previous, "causes not sorted by share at %s", name);
		previous = share;
		sum += share;
		dominant += (uint64_t)number(c, "requests");
		member(c, "time_us", J_NUMBER);
		member(c, "evidence", J_STRING);
	}
	cr_assert(fabs(sum - 1.0) <= 0.01, "shares add up to %.4f", sum);
	cr_assert_eq(dominant, requests, "requests by largest cause");
}

/* Threads: the readers (7, 21), the sampled one, the accepting one (3); 21 read the ten slow requests. */
static void check_threads_json(const struct json *threads)
{
	cr_assert_eq(length(threads), 3);
	bool found = false;
	for (size_t i = 0; i < length(threads); i++) {
		const struct json *t = element(threads, i);
		for (int k = 0; k < CS_CAUSE_COUNT; k++) {
			char key[64];
			snprintf(key, sizeof(key), "%s_us", expected_causes[k]);
			member(t, key, J_NUMBER);
		}
		if (number(t, "tid") != 21)
			continue;
		found = true;
		cr_assert_eq(number(t, "requests"), 10);
		cr_assert_float_eq(number(t, "event_loop_us"), 90000.0, 1e-3);
		cr_assert_float_eq(number(t, "runq_total_us"), 800000.0, 1e-3);
	}
	cr_assert(found, "thread 21 missing");
}

Test(requests_json, tail_conditions_lifecycle_threads)
{
	population_event_loop_tail();
	for (int i = 0; i < 30; i++)
		connection(0x0a000100 + (uint32_t)i, 40000, 200 * US, 1, CS_CLOSED_BY_SERVER, 200 * MS);
	FEED_OK(engine, make_thread_sample(clock_ns, 21, "loop\"21", 800 * MS, 5 * MS, 99));
	FEED_OK(engine, make_reset(clock_ns, PORT, CS_RESET_SENT, 8));
	char *text = render_json();
	struct json *root = json_parse(text);

	cr_assert_eq(number(root, "requests"), 1030);
	cr_assert_eq(number(root, "connections"), 30);
	cr_assert_eq(number(root, "requests_unanswered"), 0);
	cr_assert_eq(number(root, "requests_partial"), 0);
	const struct json *latency = member(root, "latency_us", J_OBJECT);
	cr_assert_eq(number(latency, "count"), 1030);
	cr_assert_float_eq(number(latency, "max"), 10000.0, 1e-6);
	cr_assert_leq(number(latency, "p50"), number(latency, "p90"));
	cr_assert_leq(number(latency, "p99"), number(latency, "p999"));

	/*
	 * p99 of 1030: rank 1020. Sorted: 899 at 100 us, 90 at 200 us, the 30
	 * first requests at 310 us (ranks 990..1019), the 1 ms one (rank 1020)
	 * and the ten slow ones: the same 11-request tail as without them.
	 */
	const struct json *tail = member(root, "tail", J_OBJECT);
	check_tail_json(tail, 99.0, 11);
	const struct json *first = element(member(tail, "causes", J_ARRAY), 0);
	cr_assert_str_eq(member(first, "cause", J_STRING)->string, "event_loop");
	cr_assert_float_eq(number(first, "share"), 90.0 / 101.0, 1e-4);
	cr_assert_float_eq(number(first, "time_us"), 90000.0, 1e-3);
	cr_assert_eq(number(first, "requests"), 10);
	const struct json *second = element(member(tail, "causes", J_ARRAY), 1);
	cr_assert_str_eq(member(second, "cause", J_STRING)->string, "handler");
	cr_assert_float_eq(number(second, "share"), 11.0 / 101.0, 1e-4);
	double threshold = number(tail, "threshold_us");
	cr_assert(threshold <= 1000.0 && threshold >= 1000.0 * 127 / 128, "threshold %.3f us", threshold);

	const struct json *cond = member(root, "conditions", J_OBJECT);
	static const char *const names[] = { "non_persistent", "idle_timeout", "listen_overflow",
					     "accept_contention", "cpu_saturation" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		member(member(cond, names[i], J_OBJECT), "flagged", J_BOOL);
	const struct json *idle = member(cond, "idle_timeout", J_OBJECT);
	cr_assert_eq(member(idle, "flagged", J_BOOL)->number, 1.0);
	cr_assert_eq(number(idle, "server_idle_closes"), 30);
	cr_assert_eq(number(idle, "keepalive_race_resets"), 1);
	cr_assert(fabs(number(idle, "inferred_timeout_ms") - 200.0) <= 4.0);
	const struct json *cpu = member(cond, "cpu_saturation", J_OBJECT);
	cr_assert_eq(member(cpu, "flagged", J_BOOL)->number, 1.0);
	cr_assert_eq(number(cpu, "top_tid"), 21);
	cr_assert_str_eq(member(cpu, "top_comm", J_STRING)->string, "loop\"21");
	cr_assert_float_eq(number(cpu, "top_runq_share"), 0.08, 1e-4);
	const struct json *nonp = member(cond, "non_persistent", J_OBJECT);
	cr_assert_eq(member(nonp, "flagged", J_BOOL)->number, 0.0, "1000 of the requests were kept alive");

	const struct json *life = member(root, "lifecycle", J_OBJECT);
	cr_assert_eq(number(life, "closed_by_server"), 30);
	cr_assert_eq(number(life, "time_wait_created"), 30);
	cr_assert_eq(number(life, "time_wait_now"), 30);
	cr_assert_eq(number(life, "resets_sent"), 1);
	member(life, "lifetime_p50_ms", J_NUMBER);

	check_threads_json(member(root, "threads", J_ARRAY));
	json_free(root);
	free(text);
}

Test(requests_json, the_tail_percentile_of_the_meta)
{
	population_event_loop_tail();
	meta.tail_percentile = 90.0;
	char *text = render_json();
	struct json *root = json_parse(text);
	const struct json *tail = member(root, "tail", J_OBJECT);
	check_tail_json(tail, 90.0, 101);
	const struct json *first = element(member(tail, "causes", J_ARRAY), 0);
	cr_assert_float_eq(number(first, "share"), 90.0 / 119.0, 1e-4);
	json_free(root);
	free(text);
}

Test(requests_json, no_requests)
{
	uint64_t t = T0;
	feed_accepts(engine, PORT, 1, 10, 30 * US, &t);
	char *text = render_json();
	struct json *root = json_parse(text);
	cr_assert_eq(number(root, "requests"), 0);
	const struct json *tail = member(root, "tail", J_OBJECT);
	cr_assert_eq(number(tail, "requests"), 0);
	cr_assert_eq(length(member(tail, "causes", J_ARRAY)), 0);
	member(root, "conditions", J_OBJECT);
	member(root, "lifecycle", J_OBJECT);
	/* The accepting thread is a thread of the report, with its role. */
	const struct json *threads = member(root, "threads", J_ARRAY);
	cr_assert_eq(length(threads), 1);
	const struct json *listener = element(member(root, "listeners", J_ARRAY), 0);
	const struct json *worker = element(member(listener, "workers", J_ARRAY), 0);
	cr_assert_eq(number(element(threads, 0), "tid"), number(worker, "tid"));
	const struct json *roles = member(element(threads, 0), "roles", J_ARRAY);
	cr_assert_eq(length(roles), 1);
	cr_assert_str_eq(element(roles, 0)->string, "acceptor");
	json_free(root);
	free(text);
}

Test(requests_json, unanswered_and_partial_only)
{
	feed_request(engine, (struct request_spec){ .sk = SK(1), .port = PORT, .start_ns = T0,
						    .flags = CS_REQ_NO_RESPONSE | CS_REQ_UNREAD });
	feed_request(engine, (struct request_spec){ .sk = SK(2), .port = PORT, .start_ns = T0,
						    .first_read_ns = T0 + MS, .first_send_ns = T0 + 2 * MS,
						    .flags = CS_REQ_PARTIAL });
	char *text = render_json();
	struct json *root = json_parse(text);
	cr_assert_eq(number(root, "requests"), 0);
	cr_assert_eq(number(root, "requests_unanswered"), 1);
	cr_assert_eq(number(root, "requests_partial"), 1);
	json_free(root);
	free(text);
}
