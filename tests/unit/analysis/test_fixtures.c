// SPDX-License-Identifier: BSD-2-Clause
/*
 * Recorded traces of the seven scenarios (tests/fixtures/, recorded by the
 * integration tests with CS_FIXTURES_OUT set) replayed through the engine:
 * real kernel event streams, with the causes the live runs found.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrib.h"
#include "engine.h"
#include "trace_file.h"

struct replay {
	struct cs_engine *engine;
	struct cs_trace_info info;
	struct cs_tail tail;
	struct cs_conditions cond;
};

static int feed(void *ctx, const void *record, size_t len)
{
	cs_engine_feed(ctx, record, len);
	return 0;
}

static void replay(const char *name, struct replay *r)
{
	const char *dir = getenv("CS_FIXTURES") ? getenv("CS_FIXTURES") : "tests/fixtures";
	char path[512], errmsg[256];
	snprintf(path, sizeof(path), "%s/%s.cstrace", dir, name);
	FILE *file = fopen(path, "rb");
	cr_assert_not_null(file, "cannot open %s: %s (run from the repository root)", path, strerror(errno));
	r->engine = cs_engine_new();
	cr_assert_not_null(r->engine);
	int err = cs_trace_read(file, feed, r->engine, &r->info, errmsg, sizeof(errmsg));
	fclose(file);
	cr_assert_eq(err, 0, "%s: %s", path, errmsg);
	cr_assert(r->info.has_summary, "%s has no summary", path);
	cr_assert_eq(r->engine->totals.malformed, 0);
	r->info.meta.tail_percentile = 99.0;
	cs_compute_tail(r->engine, 99.0, &r->tail);
	cs_compute_conditions(r->engine, &r->info.meta, &r->cond);
}

static void release(struct replay *r)
{
	cs_engine_free(r->engine);
}

static double share_of(const struct cs_tail *tail, enum cs_cause cause)
{
	for (int i = 0; i < CS_CAUSE_COUNT; i++)
		if (tail->causes[i].cause == cause)
			return tail->causes[i].share;
	return 0;
}

Test(fixtures, s1_baseline_is_the_handler_and_nothing_else)
{
	struct replay r;
	replay("s1", &r);
	cr_expect_eq(r.tail.causes[0].cause, CS_CAUSE_HANDLER);
	cr_expect(!r.cond.non_persistent.flagged && !r.cond.idle_timeout.flagged &&
		  !r.cond.listen_overflow.flagged && !r.cond.accept_contention.flagged &&
		  !r.cond.cpu_saturation.flagged, "a condition flagged on the baseline");
	/* /sleep/5: every request's handler takes at least the 5 ms. */
	cr_expect_geq(cs_hist_percentile(r.engine->requests.latency_ns, 50.0), 5000000);
	release(&r);
}

Test(fixtures, s2_slow_acceptor_is_the_accept_queue)
{
	struct replay r;
	replay("s2", &r);
	cr_expect_eq(r.tail.causes[0].cause, CS_CAUSE_ACCEPT_QUEUE);
	cr_expect_gt(r.tail.causes[0].share, 0.8);
	cr_expect(r.cond.accept_contention.flagged && r.cond.accept_contention.acceptor_bottleneck);
	release(&r);
}

Test(fixtures, s3_full_backlog_is_listen_overflow)
{
	struct replay r;
	replay("s3", &r);
	cr_expect_eq(r.tail.causes[0].cause, CS_CAUSE_LISTEN_OVERFLOW);
	cr_expect(r.cond.listen_overflow.flagged);
	/* The kernel's own count, recorded beside the events, matches ours. */
	cr_expect(r.info.meta.netstat.valid);
	cr_expect_eq(r.cond.listen_overflow.drops, r.info.meta.netstat.listen_overflows);
	cr_expect_gt(r.cond.listen_overflow.delayed_connections, 0);
	/* SYN retransmits come after 1 s and more: the tail is seconds long. */
	cr_expect_geq(r.tail.threshold_ns, 1000000000ull);
	release(&r);
}

Test(fixtures, s4a_idle_timeout_is_inferred)
{
	struct replay r;
	replay("s4a", &r);
	cr_expect(r.cond.idle_timeout.flagged);
	cr_expect_geq(r.cond.idle_timeout.inferred_timeout_ms, 195.0);
	cr_expect_leq(r.cond.idle_timeout.inferred_timeout_ms, 215.0);
	cr_expect_geq(r.cond.idle_timeout.reconnects, r.cond.idle_timeout.server_idle_closes * 9 / 10);
	/* Reconnecting after idle closes is the idle timeout's doing, not a client without keep-alive. */
	cr_expect(!r.cond.non_persistent.flagged);
	release(&r);
}

Test(fixtures, s4b_keepalive_race_resets)
{
	struct replay r;
	replay("s4b", &r);
	cr_expect(r.cond.idle_timeout.flagged);
	cr_expect_gt(r.cond.idle_timeout.keepalive_race_resets, 0);
	/* Each race is a request that arrived and was never answered. */
	cr_expect_leq(r.cond.idle_timeout.keepalive_race_resets,
		      r.engine->requests.unanswered + r.engine->lifecycle.resets_sent);
	release(&r);
}

Test(fixtures, s5_non_persistent_only_without_keepalive)
{
	struct replay close, keep;
	replay("s5close", &close);
	replay("s5keep", &keep);
	cr_expect(close.cond.non_persistent.flagged);
	cr_expect_float_eq(close.cond.non_persistent.requests_per_connection, 1.0, 1e-9);
	cr_expect(!keep.cond.non_persistent.flagged);
	cr_expect_gt(keep.cond.non_persistent.requests_per_connection, 100.0);
	release(&close);
	release(&keep);
}

Test(fixtures, s6_blocked_loop_is_the_event_loop_on_one_worker)
{
	struct replay r;
	replay("s6", &r);
	cr_expect_eq(r.tail.causes[0].cause, CS_CAUSE_EVENT_LOOP);
	const struct cs_figure *comm = cs_figures_get(&r.tail.causes[0].evidence, "thread_comm");
	cr_assert_not_null(comm, "the event loop's evidence names no thread");
	cr_expect_str_eq(comm->comm, "csw-0");
	release(&r);
}

Test(fixtures, s7_cpu_hogs_are_the_run_queue)
{
	struct replay r;
	replay("s7", &r);
	cr_expect_eq(r.tail.causes[0].cause, CS_CAUSE_RUN_QUEUE);
	cr_expect_gt(share_of(&r.tail, CS_CAUSE_RUN_QUEUE), 0.4);
	cr_expect(r.cond.cpu_saturation.flagged);
	release(&r);
}

Test(fixtures, s8_nagle_is_send_drain_past_the_last_send)
{
	struct replay r;
	replay("s8", &r);
	cr_expect_eq(r.tail.causes[0].cause, CS_CAUSE_SEND_DRAIN);
	cr_expect_gt(r.tail.causes[0].share, 0.9);
	/* The wait comes after the last send returned: held back, then drained. */
	cr_expect_geq(r.engine->requests.held_back, r.engine->requests.requests * 9 / 10);
	release(&r);
}

Test(fixtures, tls_resume_handshakes_are_set_up)
{
	/* nginx over TLS 1.2: 20 connections of 2 requests, the last 19 resuming the first's session. */
	struct replay r;
	replay("tls_resume", &r);
	const struct cs_request_stats *q = &r.engine->requests;
	cr_expect_eq(q->requests, 40);
	cr_expect_eq(q->first_on_connection, 20);
	cr_expect_eq(q->tls_connections, 20);
	cr_expect_eq(q->tls_handshakes, 20);
	cr_expect_eq(q->tls12, 20);
	cr_expect_eq(q->tls_resumed, 19);
	/* A full handshake takes two exchanges, a resumed one its ClientHello's (its end goes with the request). */
	cr_expect_eq(q->tls_handshake_exchanges, 21);
	cr_expect_gt(q->setup_tls_ns, 0);
	cr_expect_eq(q->connections_multiplexed, 0);
	release(&r);
}

Test(fixtures, every_fixture_splits_exactly)
{
	/* The tail's cause times add up to the tail requests' whole latency. */
	static const char *const names[] = { "s1", "s2", "s3", "s4a", "s4b", "s5close", "s5keep", "s6", "s7", "s8",
					     "tls_resume" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct replay r;
		replay(names[i], &r);
		double sum = 0;
		for (int c = 0; c < CS_CAUSE_COUNT; c++)
			sum += r.tail.causes[c].share;
		cr_expect_float_eq(sum, 1.0, 0.01, "%s: shares sum to %f", names[i], sum);
		cr_expect_eq(r.info.meta.events_lost, 0, "%s lost events", names[i]);
		release(&r);
	}
}

/*
 * tests/integration/test_upstream.sh: nginx proxying to csserver, 5 % of
 * the requests waiting 30 ms there. The tail waited on the upstream; each
 * exchange is joined or counted as not joined, none left waiting for its
 * request (its record came before the request's, as the probes write them).
 */
Test(fixtures, upstream_nginx_waits_on_its_backend)
{
	struct replay r;
	replay("upstream", &r);
	cr_expect_eq(r.tail.causes[0].cause, CS_CAUSE_UPSTREAM);
	cr_expect_gt(share_of(&r.tail, CS_CAUSE_UPSTREAM), 0.9);
	cr_assert_eq(r.engine->upstream_count, 1);
	const struct cs_upstream_stats *u = &r.engine->upstreams[0];
	cr_expect_eq(u->joined + cs_upstream_not_joined(u), u->exchanges);
	cr_expect_eq(u->pending, 0);
	cr_expect_eq(u->not_joined[CS_UNJOINED_UNMATCHED], 0);
	cr_expect_eq(u->exchanges, r.engine->requests.requests);
	cr_expect_geq(cs_hist_percentile(u->wait_ns, 99.0), 30 * 1000000ull);
	release(&r);
}

/*
 * A Redis recording (tests/fixtures/README.md): redis-benchmark's 3 200
 * PINGs, 16 at a time on 2 connections (and its 2 CONFIG GETs), then 400
 * PINGs and 3 scripts on 5 connections, one command an exchange. Every
 * command is a request; none is multiplexed.
 */
Test(fixtures, redis_pipelined_commands_are_requests)
{
	struct replay r;
	replay("redis", &r);
	const struct cs_request_stats *q = &r.engine->requests;
	cr_assert_eq(q->requests, 3200 + 2 + 400 + 3);
	cr_assert_eq(q->pipelined_commands, 3202);
	cr_assert_eq(q->connections_multiplexed, 0);
	cr_assert_eq(q->connections_by_protocol[CS_PROTOCOL_RESP], 8);
	release(&r);
}
