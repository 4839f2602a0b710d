// SPDX-License-Identifier: BSD-2-Clause
/*
 * Connections the engine cannot follow whole: a socket that was
 * open before the attach, an accept whose socket carried no time of its
 * establishment, a close without an open, connections whose close was lost (time-
 * outs) and a full connection table (evictions). Each is counted, shown in
 * the reports, kept out of every latency, and never crashes the engine.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "events.h"
#include "json_check.h"
#include "metrics.h"
#include "report.h"

#define PORT 8080

CS_ENGINE_FIXTURE

TestSuite(partial, .init = setup, .fini = teardown);
TestSuite(forget, .init = setup, .fini = teardown);

/* A whole connection: accepted after 100 us in the queue, one request. */
static void whole_connection(uint64_t sk, uint64_t t0)
{
	FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tid = 7, .ts_ns = t0 + 100 * US,
							     .established_ns = t0 },
				       sk, 0x0a000002, 41000));
	feed_request(engine, (struct request_spec){ .sk = sk, .port = PORT, .start_ns = t0 + 50 * US,
						    .first_read_ns = t0 + 200 * US, .first_send_ns = t0 + 300 * US,
						    .last_send_ns = t0 + 300 * US });
}

static bool conn_followed(uint64_t sk)
{
	return cs_u64map_get(&engine->conns, sk) != NULL;
}

/* ---- partial connections -------------------------------------------------- */

Test(partial, accept_never_seen_entering_the_queue)
{
	uint64_t sk = 0xffff880000001000ull;
	/* No time of its establishment (a recording without TCP's stamp): the probe sends 0. */
	FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tid = 7, .ts_ns = 5 * SEC }, sk,
				       0x0a000002, 41000));
	/* Its first request's bytes came before the accept. */
	feed_request(engine, (struct request_spec){ .sk = sk, .port = PORT, .start_ns = 4 * SEC,
						    .first_read_ns = 5 * SEC + 10 * US,
						    .first_send_ns = 5 * SEC + 20 * US,
						    .last_send_ns = 5 * SEC + 20 * US });

	const struct cs_listener_stats *l = cs_engine_listener(engine, PORT);
	cr_assert_not_null(l);
	cr_expect_eq(l->accepts, 1);
	cr_expect_eq(l->accepts_unmatched, 1);
	cr_expect_eq(l->accept_wait_ns->count, 0, "no accept wait from an unknown queue entry");
	cr_expect_eq(cs_engine_partial(engine).accepts, 1);
	/* The request counts, but no accept-queue time is made up for it. */
	cr_assert_eq(engine->requests.requests, 1);
	cr_expect_eq(engine->requests.cause_ns[CS_CAUSE_ACCEPT_QUEUE]->max, 0);
	cr_expect_eq(engine->requests.latency_ns->max, 1 * SEC + 20 * US,
		     "pickup from the data's arrival: %llu",
		     (unsigned long long)engine->requests.latency_ns->max);
	cr_expect_eq(engine->requests.cause_ns[CS_CAUSE_EVENT_LOOP]->count, 1);
}

Test(partial, request_on_a_socket_open_before_the_attach)
{
	uint64_t sk = 0xffff880000002000ull;
	feed_request(engine, (struct request_spec){ .sk = sk, .port = PORT, .index = 3, .flags = CS_REQ_PARTIAL,
						    .first_send_ns = 2 * SEC, .last_send_ns = 2 * SEC });
	cr_expect_eq(engine->requests.partial, 1);
	cr_expect_eq(engine->requests.requests, 0);
	cr_expect_eq(engine->requests.latency_ns->count, 0, "never in a latency");
	cr_expect_eq(engine->requests.exemplar_count, 0);
	cr_expect_eq(cs_engine_partial(engine).requests, 1);
	/* Nor in any listener's or thread's figures. */
	const struct cs_listener_stats *l = cs_engine_listener(engine, PORT);
	cr_expect(!l || l->requests == 0);
}

Test(partial, close_without_an_open)
{
	/* Never accepted in sight, flagged partial by the probe: established 0. */
	feed_conn_close(engine, (struct close_spec){ .sk = 0xffff880000003000ull, .port = PORT, .ts_ns = 3 * SEC,
						     .closed_by = CS_CLOSED_BY_CLIENT, .partial = 1, .requests = 2,
						     .last_activity_ns = 2 * SEC });
	cr_expect_eq(engine->lifecycle.closed_partial, 1);
	cr_expect_eq(engine->lifecycle.closed_by[CS_CLOSED_BY_CLIENT], 1);
	cr_expect_eq(engine->lifecycle.lifetime_ns->count, 0, "no lifetime without a start");
	cr_expect_eq(engine->conns.count, 0);
	cr_expect_eq(cs_engine_partial(engine).closes, 1);

	/* A close of a socket the engine never saw accepted, not flagged: no crash, no entry. */
	feed_conn_close(engine, (struct close_spec){ .sk = 0xffff880000004000ull, .port = PORT, .ts_ns = 4 * SEC,
						     .established_ns = 1 * SEC, .closed_by = CS_CLOSED_BY_SERVER });
	cr_expect_eq(engine->conns.count, 0);
	cr_expect_eq(engine->lifecycle.lifetime_ns->count, 1);
}

/*
 * A connection established between tracing windows closes with TCP's stamp
 * of its start, which its reads may have moved later: its lifetime runs
 * from its accept's start, which the engine saw.
 */
Test(partial, lifetime_from_the_accept_not_the_moved_stamp)
{
	uint64_t sk = 0xffff880000006000ull;
	FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tid = 7, .ts_ns = 2 * SEC,
							      .established_ns = 1 * SEC },
				       sk, 0x0a000002, 41000));
	feed_conn_close(engine, (struct close_spec){ .sk = sk, .port = PORT, .ts_ns = 9 * SEC,
						     .established_ns = 6 * SEC, .last_activity_ns = 8 * SEC,
						     .closed_by = CS_CLOSED_BY_CLIENT,
						     .flags = CS_CLOSE_UNFOLLOWED | CS_CLOSE_RECEIVED_DATA });
	cr_expect_eq(engine->lifecycle.lifetime_ns->count, 1);
	cr_expect_eq(engine->lifecycle.lifetime_ns->max, 8 * SEC, "lifetime %llu ns, want 8 s from the accept's start",
		     (unsigned long long)engine->lifecycle.lifetime_ns->max);
	cr_expect_eq(engine->lifecycle.closed_partial, 0);
}

/*
 * Closes of connections the probes kept no state for (established between
 * tracing windows): counted by side; an idle close told by TCP's own stamps
 * of its last data, when it received any.
 */
Test(partial, unfollowed_closes)
{
	const uint32_t unfollowed = CS_CLOSE_UNFOLLOWED, received = CS_CLOSE_UNFOLLOWED | CS_CLOSE_RECEIVED_DATA;
	/* Answered, then idle for 2 s until the server closed it: an idle close. */
	feed_conn_close(engine, (struct close_spec){ .sk = 0xffff880000005000ull, .port = PORT, .ts_ns = 10 * SEC,
						     .last_activity_ns = 8 * SEC, .closed_by = CS_CLOSED_BY_SERVER,
						     .partial = 1, .flags = received });
	/* Closed by the server right after its answer: not idle. */
	feed_conn_close(engine, (struct close_spec){ .sk = 0xffff880000005040ull, .port = PORT, .ts_ns = 11 * SEC,
						     .last_activity_ns = 11 * SEC, .closed_by = CS_CLOSED_BY_SERVER,
						     .partial = 1, .flags = received });
	/* Nothing ever came in: a server that drops silent connections is no idle timeout of requests. */
	feed_conn_close(engine, (struct close_spec){ .sk = 0xffff880000005080ull, .port = PORT, .ts_ns = 12 * SEC,
						     .last_activity_ns = 2 * SEC, .closed_by = CS_CLOSED_BY_SERVER,
						     .partial = 1, .flags = unfollowed });
	/* The tick rate unknown (last activity 0): not told idle. */
	feed_conn_close(engine, (struct close_spec){ .sk = 0xffff8800000050c0ull, .port = PORT, .ts_ns = 13 * SEC,
						     .closed_by = CS_CLOSED_BY_SERVER, .partial = 1, .flags = received });
	feed_conn_close(engine, (struct close_spec){ .sk = 0xffff880000005100ull, .port = PORT, .ts_ns = 14 * SEC,
						     .last_activity_ns = 13 * SEC, .closed_by = CS_CLOSED_BY_CLIENT,
						     .partial = 1, .flags = received });
	cr_expect_eq(engine->lifecycle.closed_by[CS_CLOSED_BY_SERVER], 4);
	cr_expect_eq(engine->lifecycle.closed_by[CS_CLOSED_BY_CLIENT], 1);
	cr_expect_eq(engine->lifecycle.closed_partial, 5);
	cr_expect_eq(engine->lifecycle.server_idle_closes, 1);
	cr_expect_eq(engine->lifecycle.idle_gap_ns->count, 1);
	cr_expect_eq(engine->lifecycle.idle_gap_ns->max >= 2 * SEC, true);
	cr_expect_eq(engine->lifecycle.lifetime_ns->count, 0, "no lifetime without a start");
	cr_expect_eq(engine->conns.count, 0);
}

Test(partial, partial_and_whole_connections_together)
{
	for (uint64_t i = 0; i < 10; i++)
		whole_connection(0xffff880000100000ull + i * 64, (10 + i) * SEC);
	feed_request(engine, (struct request_spec){ .sk = 0xffff880000200000ull, .port = PORT,
						    .flags = CS_REQ_PARTIAL, .first_send_ns = 30 * SEC,
						    .last_send_ns = 31 * SEC });
	feed_conn_close(engine, (struct close_spec){ .sk = 0xffff880000200000ull, .port = PORT,
						     .ts_ns = 32 * SEC, .partial = 1,
						     .closed_by = CS_CLOSED_BY_SERVER });
	/* The whole ones alone make the latency: 250 us each, nothing from the partial one. */
	cr_expect_eq(engine->requests.requests, 10);
	cr_expect_eq(engine->requests.latency_ns->count, 10);
	cr_expect_lt(engine->requests.latency_ns->max, 1 * MS);
	struct cs_conn_partial p = cs_engine_partial(engine);
	cr_expect_eq(p.accepts + p.requests + p.closes, 2);
}

/* ---- forgetting connections ----------------------------------------------- */

Test(forget, a_connection_whose_close_was_lost_times_out)
{
	uint64_t lost = 0xffff880000300000ull, busy = 0xffff880000300040ull;
	whole_connection(lost, 1 * SEC);
	whole_connection(busy, 2 * SEC);
	cr_assert_eq(engine->conns.count, 2);
	/* busy keeps talking; lost's close never arrives. */
	uint64_t t = 2 * SEC;
	for (int i = 0; i < 40; i++) {
		t += CS_CONN_TIMEOUT_NS / 20;
		feed_request(engine, (struct request_spec){ .sk = busy, .port = PORT, .index = (uint32_t)i + 1,
							    .start_ns = t, .first_read_ns = t + US,
							    .first_send_ns = t + 2 * US, .last_send_ns = t + 2 * US });
	}
	cr_expect(!conn_followed(lost), "the silent connection is forgotten");
	cr_expect(conn_followed(busy), "a connection with recent records stays");
	cr_expect_eq(engine->conns_timed_out, 1);
	cr_expect_eq(engine->conns_evicted, 0);
	/* Its close, should it come after all, is harmless. */
	feed_conn_close(engine, (struct close_spec){ .sk = lost, .port = PORT, .ts_ns = t + SEC,
						     .established_ns = 1 * SEC, .closed_by = CS_CLOSED_BY_CLIENT });
	cr_expect_eq(engine->conns.count, 1);
}

Test(forget, nothing_times_out_before_its_time)
{
	whole_connection(0xffff880000400000ull, 1 * SEC);
	/* Other records keep coming for just under the time-out. */
	for (uint64_t t = 2 * SEC; t < 1 * SEC + CS_CONN_TIMEOUT_NS - SEC; t += SEC)
		feed_sample(engine, (struct sample_spec){ .port = PORT, .ts_ns = t, .backlog_limit = 128 });
	cr_expect_eq(engine->conns.count, 1);
	cr_expect_eq(engine->conns_timed_out, 0);
}

Test(forget, a_full_table_evicts_the_least_recently_seen)
{
	engine->conns.max_count = 4;
	uint64_t sk[6];
	for (int i = 0; i < 6; i++)
		sk[i] = 0xffff880000500000ull + (uint64_t)i * 64;
	for (int i = 0; i < 4; i++)
		whole_connection(sk[i], (uint64_t)(i + 1) * SEC);
	/* The oldest one talks again: sk[1] is now the least recently seen. */
	feed_request(engine, (struct request_spec){ .sk = sk[0], .port = PORT, .index = 1, .start_ns = 9 * SEC,
						    .first_read_ns = 9 * SEC + US, .first_send_ns = 9 * SEC + 2 * US,
						    .last_send_ns = 9 * SEC + 2 * US });
	uint64_t setup_before_ns = engine->requests.setup_ns;
	whole_connection(sk[4], 10 * SEC);
	cr_expect_eq(engine->conns_evicted, 1);
	cr_expect_eq(engine->conns.count, 4);
	cr_expect(!conn_followed(sk[1]), "the least recently seen went");
	cr_expect(conn_followed(sk[0]) && conn_followed(sk[2]) && conn_followed(sk[3]) && conn_followed(sk[4]));
	/* The new connection is followed whole: its request paid its accept-queue wait. */
	cr_expect_eq(engine->requests.setup_ns - setup_before_ns, 100 * US);
	whole_connection(sk[5], 11 * SEC);
	cr_expect_eq(engine->conns_evicted, 2);
	cr_expect(!conn_followed(sk[2]));
}

Test(forget, a_flood_of_connections_without_closes_stays_bounded)
{
	engine->conns.max_count = 1000;
	/* 20 000 connections whose closes were all lost, 1 ms apart. */
	for (uint64_t i = 0; i < 20000; i++)
		whole_connection(0xffff880010000000ull + i * 64, SEC + i * MS);
	cr_expect_leq(engine->conns.count, 1000);
	cr_expect_eq(engine->conns_evicted + engine->conns_timed_out + engine->conns.count, 20000,
		     "every connection followed, evicted or timed out: %llu + %llu + %zu",
		     (unsigned long long)engine->conns_evicted, (unsigned long long)engine->conns_timed_out,
		     engine->conns.count);
	cr_expect_eq(engine->requests.requests, 20000, "every request still counted");
	/* Then silence past the time-out: the table empties. */
	feed_sample(engine, (struct sample_spec){ .port = PORT, .ts_ns = 30 * SEC + CS_CONN_TIMEOUT_NS,
						  .backlog_limit = 128 });
	for (int i = 0; i < 64; i++)
		feed_sample(engine, (struct sample_spec){ .port = PORT, .ts_ns = 50 * SEC + CS_CONN_TIMEOUT_NS,
							  .backlog_limit = 128 });
	cr_expect_eq(engine->conns.count, 0, "%zu connections left", engine->conns.count);
	cr_expect_eq(engine->conns_evicted + engine->conns_timed_out, 20000);
}

/* ---- shown in every report ------------------------------------------------ */

static char *render(void (*renderer)(FILE *, const struct cs_engine *, const struct cs_report_meta *),
		    const struct cs_report_meta *meta)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	renderer(out, engine, meta);
	fclose(out);
	return text;
}

static void partial_everything(void)
{
	engine->conns.max_count = 2;
	FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tid = 7, .ts_ns = 5 * SEC },
				       0xffff880000600000ull, 0x0a000002, 41000));
	feed_request(engine, (struct request_spec){ .sk = 0xffff880000600040ull, .port = PORT,
						    .flags = CS_REQ_PARTIAL, .first_send_ns = 6 * SEC,
						    .last_send_ns = 6 * SEC });
	feed_conn_close(engine, (struct close_spec){ .sk = 0xffff880000600080ull, .port = PORT, .ts_ns = 7 * SEC,
						     .partial = 1, .closed_by = CS_CLOSED_BY_CLIENT });
	whole_connection(0xffff8800006000c0ull, 8 * SEC);
	whole_connection(0xffff880000600100ull, 9 * SEC); /* evicts the first */
}

Test(partial, counted_in_the_json_report)
{
	partial_everything();
	struct cs_report_meta meta = { .target = "pid 1 (t)", .duration_s = 1.0, .events_lost = 5 };
	char *text = render(cs_report_json, &meta);
	struct json *root = json_parse(text);
	cr_assert_not_null(root, "%s", text);
	const struct json *events = member(root, "events", J_OBJECT);
	cr_expect_eq(number(events, "lost"), 5);
	cr_expect_eq(number(events, "partial"), 3);
	cr_expect_eq(number(events, "partial_accepts"), 1);
	cr_expect_eq(number(events, "partial_requests"), 1);
	cr_expect_eq(number(events, "partial_closes"), 1);
	cr_expect_eq(number(events, "evicted"), 1);
	cr_expect_eq(number(events, "timed_out"), 0);
	cr_expect_eq(number(events, "followed"), 2);
	json_free(root);
	free(text);
}

Test(partial, counted_in_the_text_report)
{
	partial_everything();
	struct cs_report_meta meta = { .target = "pid 1 (t)", .duration_s = 1.0, .events_lost = 5 };
	char *text = render(cs_report_text, &meta);
	const char *want = "connscope: pid 1 (t), 1.0 s, 7 events, 5 lost, partial (older than the attach): "
			   "1 accept(s), 1 request(s), 1 close(s), connections forgotten: 1 evicted (table "
			   "full), 0 timed out (no event for 300 s)\n";
	cr_expect(!strncmp(text, want, strlen(want)), "header:\n%.300s\nwant:\n%s", text, want);
	free(text);
}

Test(partial, a_clean_run_shows_no_partial_line)
{
	whole_connection(0xffff880000700000ull, SEC);
	struct cs_report_meta meta = { .target = "pid 1 (t)", .duration_s = 1.0 };
	char *text = render(cs_report_text, &meta);
	cr_expect(!strncmp(text, "connscope: pid 1 (t), 1.0 s, 2 events, 0 lost\n\n", 46), "%.200s", text);
	free(text);
}

Test(partial, counted_in_the_metrics)
{
	partial_everything();
	struct cs_report_meta meta = { .target = "web", .duration_s = 1.0 };
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	cs_metrics_render(out, engine, &meta, "web", CS_METRICS_PROMETHEUS);
	fclose(out);
	cr_expect_not_null(strstr(text, "connscope_partial_total{target=\"web\",seen=\"accept\"} 1\n"), "%s", text);
	cr_expect_not_null(strstr(text, "connscope_partial_total{target=\"web\",seen=\"request\"} 1\n"));
	cr_expect_not_null(strstr(text, "connscope_partial_total{target=\"web\",seen=\"close\"} 1\n"));
	cr_expect_not_null(strstr(text, "connscope_connections_forgotten_total{target=\"web\",why=\"evicted\"} 1\n"));
	cr_expect_not_null(strstr(text, "connscope_connections_forgotten_total{target=\"web\",why=\"timed_out\"} 0\n"));
	cr_expect_not_null(strstr(text, "# TYPE connscope_partial_total counter\n"));
	free(text);
}

/* ---- records out of order (per-CPU ring order, clock oddities) ------------- */

Test(forget, a_close_before_its_accept_leaves_nothing_stuck)
{
	uint64_t sk = 0xffff880000800000ull;
	/* The close (CPU 1) is read before the accept (CPU 0) of the same socket. */
	feed_conn_close(engine, (struct close_spec){ .sk = sk, .port = PORT, .ts_ns = 5 * SEC,
						     .established_ns = 4 * SEC, .closed_by = CS_CLOSED_BY_CLIENT });
	FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tid = 7, .ts_ns = 4 * SEC + MS,
							     .established_ns = 4 * SEC },
				       sk, 0x0a000002, 41000));
	cr_expect_eq(engine->lifecycle.closed_by[CS_CLOSED_BY_CLIENT], 1);
	cr_expect_eq(engine->conns.count, 1, "followed until it times out");
	/* Time goes on: the orphan is forgotten, counted. */
	for (int i = 0; i < 2; i++)
		feed_sample(engine, (struct sample_spec){ .port = PORT, .ts_ns = 5 * SEC + CS_CONN_TIMEOUT_NS + (uint64_t)i,
							  .backlog_limit = 128 });
	cr_expect_eq(engine->conns.count, 0);
	cr_expect_eq(engine->conns_timed_out, 1);
}

Test(forget, time_going_backwards_forgets_nothing_early)
{
	whole_connection(0xffff880000900000ull, 1000 * SEC);
	/* A record from long before (a bad clock, a corrupt trace), then the present. */
	feed_sample(engine, (struct sample_spec){ .port = PORT, .ts_ns = 1, .backlog_limit = 128 });
	feed_sample(engine, (struct sample_spec){ .port = PORT, .ts_ns = 1001 * SEC, .backlog_limit = 128 });
	cr_expect_eq(engine->conns.count, 1);
	cr_expect_eq(engine->conns_timed_out, 0);
	/* A record from far in the future forgets it, and the table stays usable. */
	feed_sample(engine, (struct sample_spec){ .port = PORT, .ts_ns = UINT64_MAX - 1, .backlog_limit = 128 });
	cr_expect_eq(engine->conns.count, 0);
	whole_connection(0xffff880000900040ull, 1002 * SEC);
	cr_expect_eq(engine->conns.count, 1);
	cr_expect_eq(engine->requests.requests, 2);
}
