// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tracing windows (daemon/engine/trace_windows.c): the schedule's syntax,
 * when windows open and close, the time traced, the estimates; and what
 * the engine and the reports make of requests a window's edge cut
 * (synthetic records with explicit times).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "events.h"
#include "report.h"
#include "trace_windows.h"

#define PORT 8080
#define T0 (100 * SEC)

static char errmsg[256];

static struct cs_trace_schedule parsed(const char *text)
{
	struct cs_trace_schedule schedule = { 0, 0 };
	cr_assert_eq(cs_trace_schedule_parse(text, &schedule, errmsg, sizeof(errmsg)), 0, "'%s': %s", text, errmsg);
	return schedule;
}

Test(trace_schedule, syntax)
{
	struct cs_trace_schedule s = parsed("1/10");
	cr_expect_eq(s.window_ns, 1 * SEC);
	cr_expect_eq(s.period_ns, 10 * SEC);
	s = parsed("0.25/2.5");
	cr_expect_eq(s.window_ns, 250 * MS);
	cr_expect_eq(s.period_ns, 2500 * MS);
	cr_expect(cs_trace_schedule_is_always(&(struct cs_trace_schedule){ 0, 0 }));
	s = parsed("always");
	cr_expect(cs_trace_schedule_is_always(&s));
	s = parsed("5/5"); /* a window as long as its period: always */
	cr_expect(cs_trace_schedule_is_always(&s));
	char text[32];
	s = parsed("1/10");
	cs_trace_schedule_format(&s, text, sizeof(text));
	cr_expect_str_eq(text, "1/10");
	s = parsed("always");
	cs_trace_schedule_format(&s, text, sizeof(text));
	cr_expect_str_eq(text, "always");

	const char *bad[] = { "", "1", "/10", "1/", "x/10", "1/10s", "0/10", "-1/10", "0.05/10", "11/10",
			      "1/3601", "nan/10", "1/inf" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cs_trace_schedule kept = { 7, 7 };
		errmsg[0] = '\0';
		cr_expect_eq(cs_trace_schedule_parse(bad[i], &kept, errmsg, sizeof(errmsg)), -1, "'%s' parsed", bad[i]);
		cr_expect(strstr(errmsg, "expects") != NULL, "'%s': %s", bad[i], errmsg);
		cr_expect_eq(kept.window_ns, 7, "'%s' changed the schedule", bad[i]);
	}
}

Test(trace_windows, edges_and_time_traced)
{
	struct cs_trace_schedule s = parsed("1/10");
	struct cs_trace_windows tw;
	cs_trace_windows_start(&tw, &s, T0);
	cr_expect(tw.tracing, "the first window opens at the start");
	cr_expect_eq(tw.number, 1, "odd, open: as the BPF side's trace_window starts");
	cr_expect_eq(cs_trace_windows_step(&tw, T0 + 500 * MS), CS_TRACE_KEEP);
	cr_expect_eq(cs_trace_windows_traced_ns(&tw, T0 + 500 * MS), 500 * MS, "the open window counts");
	/* The loop polls every 20 ms: the window closes at the first step past its end. */
	cr_expect_eq(cs_trace_windows_step(&tw, T0 + 1020 * MS), CS_TRACE_CLOSE);
	cr_expect_eq(tw.number, 2, "each edge is numbered: even between windows");
	cr_expect_eq(cs_trace_windows_traced_ns(&tw, T0 + 5 * SEC), 1020 * MS, "traced until the detach");
	cr_expect_eq(cs_trace_windows_step(&tw, T0 + 9990 * MS), CS_TRACE_KEEP);
	cr_expect_eq(cs_trace_windows_step(&tw, T0 + 10 * SEC), CS_TRACE_OPEN, "the next period's start");
	cr_expect_eq(tw.number, 3);
	cr_expect_eq(tw.windows, 2);
	cr_expect_eq(cs_trace_windows_traced_ns(&tw, T0 + 10500 * MS), 1520 * MS);
	cr_expect_eq(cs_trace_windows_step(&tw, T0 + 11 * SEC), CS_TRACE_CLOSE);
	cr_expect_eq(cs_trace_windows_traced_ns(&tw, T0 + 12 * SEC), 2020 * MS);

	struct cs_trace_meta meta = {};
	cs_trace_windows_meta(&tw, T0 + 12 * SEC, &meta);
	cr_expect(meta.sampled);
	cr_expect_not(meta.tracing);
	cr_expect_float_eq(meta.traced_s, 2.02, 1e-9);
	cr_expect_float_eq(meta.window_s, 1.0, 1e-9);
	cr_expect_float_eq(meta.period_s, 10.0, 1e-9);
	cr_expect_eq(meta.windows, 2);
}

/* A loop that stalled past whole periods opens at once, then keeps to the period grid. */
Test(trace_windows, stalled_loop)
{
	struct cs_trace_schedule s = parsed("1/10");
	struct cs_trace_windows tw;
	cs_trace_windows_start(&tw, &s, T0);
	cr_expect_eq(cs_trace_windows_step(&tw, T0 + 1 * SEC), CS_TRACE_CLOSE);
	cr_expect_eq(cs_trace_windows_step(&tw, T0 + 35 * SEC), CS_TRACE_OPEN);
	cr_expect_eq(tw.windows, 2, "the periods missed open no window");
	cr_expect_eq(cs_trace_windows_step(&tw, T0 + 35500 * MS), CS_TRACE_KEEP, "a whole window, not cut short");
	cr_expect_eq(cs_trace_windows_step(&tw, T0 + 36 * SEC), CS_TRACE_CLOSE);
	cr_expect_eq(cs_trace_windows_step(&tw, T0 + 39 * SEC), CS_TRACE_KEEP);
	cr_expect_eq(cs_trace_windows_step(&tw, T0 + 40 * SEC), CS_TRACE_OPEN);
}

Test(trace_windows, always_and_reschedule)
{
	struct cs_trace_schedule always = parsed("always"), windows = parsed("1/10");
	struct cs_trace_windows tw;
	cs_trace_windows_start(&tw, &always, T0);
	for (uint64_t t = T0; t < T0 + 63 * SEC; t += 700 * MS)
		cr_assert_eq(cs_trace_windows_step(&tw, t), CS_TRACE_KEEP, "always: no edge at %llu",
			     (unsigned long long)t);
	cr_expect_eq(cs_trace_windows_traced_ns(&tw, T0 + 63 * SEC), 63 * SEC);
	struct cs_trace_meta meta = {};
	cs_trace_windows_meta(&tw, T0 + 63 * SEC, &meta);
	cr_expect_not(meta.sampled, "always traced: not sampled");

	/* A reload to windows: the open window ends by the new schedule; the next opens on the grid. */
	cs_trace_windows_reschedule(&tw, &windows);
	cr_expect_eq(cs_trace_windows_step(&tw, T0 + 63 * SEC), CS_TRACE_CLOSE);
	cr_expect_eq(cs_trace_windows_step(&tw, T0 + 65 * SEC), CS_TRACE_KEEP);
	cr_expect_eq(tw.next_open_ns, T0 + 70 * SEC);
	/* ... and back to always: open at once, and stay. */
	cs_trace_windows_reschedule(&tw, &always);
	cr_expect_eq(cs_trace_windows_step(&tw, T0 + 65 * SEC), CS_TRACE_OPEN);
	cr_expect_eq(cs_trace_windows_step(&tw, T0 + 90 * SEC), CS_TRACE_KEEP);
	cs_trace_windows_meta(&tw, T0 + 90 * SEC, &meta);
	cr_expect(meta.sampled, "part of the run was traced in windows");
	cr_expect_float_eq(meta.traced_s, 88.0, 1e-9);
}

Test(trace_windows, estimates)
{
	cr_expect_float_eq(cs_trace_estimate(100, 1 * SEC, 10 * SEC), 1000.0, 1e-9);
	cr_expect_float_eq(cs_trace_estimate(100, 0, 10 * SEC), 100.0, 1e-9, "nothing traced: the count");
	cr_expect_float_eq(cs_trace_estimate(100, 10 * SEC, 10 * SEC), 100.0, 1e-9, "all traced: exact");

	/* A live meta moved on: the open window and the duration grow together. */
	struct cs_report_meta meta = { .duration_s = 5.0 };
	meta.trace = (struct cs_trace_meta){ .sampled = true, .tracing = true, .as_of_ns = T0, .traced_s = 1.0 };
	cs_trace_meta_advance(&meta, T0 + 500 * MS);
	cr_expect_float_eq(meta.duration_s, 5.5, 1e-9);
	cr_expect_float_eq(meta.trace.traced_s, 1.5, 1e-9);
	meta.trace.tracing = false;
	cs_trace_meta_advance(&meta, T0 + 2 * SEC);
	cr_expect_float_eq(meta.duration_s, 7.0, 1e-9);
	cr_expect_float_eq(meta.trace.traced_s, 1.5, 1e-9, "between windows nothing is traced");
}

/* ---- requests at a window's edges, as the engine gets them ----------------- */

CS_ENGINE_FIXTURE

TestSuite(window_edges, .init = setup, .fini = teardown);

/* A request of total_ns on sk, begun at t. */
/* The report's "tracing" over the engine's requests. */
static json_t *tracing_value(const struct cs_report_meta *meta)
{
	struct cs_traced_summary summary;
	cs_report_tracing_summary(engine, meta, &summary);
	return cs_report_tracing_value(&summary, meta);
}

static void request(uint64_t sk, uint64_t t, uint64_t total_ns, uint32_t index, uint16_t flags)
{
	feed_request(engine, (struct request_spec){ .sk = sk, .port = PORT, .start_ns = t,
						    .first_read_ns = t + total_ns / 4, .first_send_ns = t + total_ns,
						    .last_send_ns = t + total_ns, .index = index, .flags = flags });
}

/*
 * Two windows of 1 s in 10 s. In each, 100 whole requests of 1 ms; at the
 * second's start, a request read before the window (the BPF side flags it
 * partial: its wait is unknown). Requests cut by a window's end never reach
 * the engine (counted by the probes: meta.trace.requests_cut).
 */
Test(window_edges, partial_requests_stay_out_of_latencies)
{
	uint64_t sk = 0xffff880000002000ull;
	for (uint32_t i = 0; i < 100; i++)
		request(sk, T0 + i * 5 * MS, 1 * MS, i, 0);
	/* Seen mid-way at the window's start: 9 s old by its timestamps, were it taken. */
	feed_request(engine, (struct request_spec){ .sk = sk, .port = PORT, .start_ns = T0 + 10 * SEC,
						    .first_read_ns = T0 + 10 * SEC, .first_send_ns = T0 + 10 * SEC + 1 * MS,
						    .last_send_ns = T0 + 10 * SEC + 1 * MS, .index = 140,
						    .flags = CS_REQ_PARTIAL });
	for (uint32_t i = 0; i < 100; i++)
		request(sk, T0 + 10 * SEC + 2 * MS + i * 5 * MS, 1 * MS, 141 + i, 0);

	const struct cs_request_stats *r = &engine->requests;
	cr_expect_eq(r->requests, 200);
	cr_expect_eq(r->partial, 1);
	cr_expect_leq(r->latency_ns->max, 1100 * US, "the partial request is in no latency");

	struct cs_report_meta meta = { .target = "port 8080", .duration_s = 20.0 };
	meta.trace = (struct cs_trace_meta){ .sampled = true, .window_s = 1, .period_s = 10, .traced_s = 2.0,
					     .windows = 2, .requests_cut = 1 };
	struct cs_traced_summary summary;
	cs_report_tracing_summary(engine, &meta, &summary);
	cr_expect(summary.sampled);
	cr_expect_float_eq(summary.share, 0.1, 1e-9);
	cr_expect_eq(summary.requests_traced, 200);
	cr_expect_float_eq(summary.requests_estimated, 2010.0, 1e-6, "requests that ended in windows, scaled");

	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cs_report_text(out, engine, &meta);
	fclose(out);
	cr_expect(strstr(text, "traced 2.0 s of 20.0 s (10.0 %: 1 s windows every 10 s, 2 window(s)): 200 request(s) "
			       "traced of ~2010 estimated") != NULL, "%s", text);
	cr_expect(strstr(text, "1 request(s) cut by a window's end") != NULL);
	cr_expect(strstr(text, "requests    200 (100.0/s)") != NULL, "the rate over the time traced: %s", text);
	free(text);

	json_t *value = tracing_value(&meta);
	cr_assert_not_null(value);
	cr_expect_str_eq(json_string_value(json_object_get(value, "mode")), "windows");
	cr_expect_eq(json_integer_value(json_object_get(value, "requests_estimated")), 2010);
	cr_expect_eq(json_integer_value(json_object_get(value, "requests_cut")), 1);
	cr_expect_eq(json_array_size(json_object_get(value, "exact")), 5);
	json_decref(value);
}

/* Traced all the time: the figures are exact, the text says nothing more. */
Test(window_edges, always_is_exact)
{
	for (uint32_t i = 0; i < 10; i++)
		request(0xffff880000003000ull, T0 + i * MS, 500 * US, i, 0);
	struct cs_report_meta meta = { .target = "port 8080", .duration_s = 1.0 };
	struct cs_traced_summary summary;
	cs_report_tracing_summary(engine, &meta, &summary);
	cr_expect_not(summary.sampled);
	cr_expect_float_eq(summary.share, 1.0, 1e-9);
	cr_expect_float_eq(summary.requests_estimated, 10.0, 1e-9);
	json_t *value = tracing_value(&meta);
	cr_expect_str_eq(json_string_value(json_object_get(value, "mode")), "always");
	cr_expect_eq(json_array_size(json_object_get(value, "from_windows")), 0);
	json_decref(value);
}

/* The JSON's keys, sorted and joined: a reader sees one shape whatever the moment. */
static void tracing_keys(json_t *value, char *out, size_t len)
{
	out[0] = '\0';
	const char *key;
	json_t *member;
	json_object_foreach(value, key, member) {
		strncat(out, key, len - strlen(out) - 1);
		strncat(out, " ", len - strlen(out) - 1);
	}
}

/*
 * Before the run starts (the daemon's servers answer while its probes
 * load), the figures say the configured mode, with no window yet: the same
 * mode and keys as once a window has closed.
 */
Test(window_edges, configured_mode_before_the_first_window)
{
	struct cs_trace_schedule windows = parsed("1/10"), always = parsed("always");
	struct cs_report_meta before = { .target = "port 8080" };
	cs_trace_meta_configured(&windows, &before.trace);
	json_t *early = tracing_value(&before);
	cr_assert_not_null(early);
	cr_expect_str_eq(json_string_value(json_object_get(early, "mode")), "windows");
	cr_expect_eq(json_integer_value(json_object_get(early, "windows")), 0, "no window opened yet");
	cr_expect_float_eq(json_number_value(json_object_get(early, "window_s")), 1.0, 1e-9);

	struct cs_trace_windows tw;
	cs_trace_windows_start(&tw, &windows, T0);
	cr_expect_eq(cs_trace_windows_step(&tw, T0 + SEC), CS_TRACE_CLOSE);
	struct cs_report_meta later = { .target = "port 8080", .duration_s = 1.0 };
	cs_trace_windows_meta(&tw, T0 + SEC, &later.trace);
	json_t *closed = tracing_value(&later);
	char early_keys[512], closed_keys[512];
	tracing_keys(early, early_keys, sizeof(early_keys));
	tracing_keys(closed, closed_keys, sizeof(closed_keys));
	cr_expect_str_eq(early_keys, closed_keys);
	cr_expect_eq(json_integer_value(json_object_get(closed, "windows")), 1);
	json_decref(early);
	json_decref(closed);

	cs_trace_meta_configured(&always, &before.trace);
	early = tracing_value(&before);
	cr_expect_str_eq(json_string_value(json_object_get(early, "mode")), "always");
	json_decref(early);
}

Test(between_counts, gaps_add_what_the_counters_rose_by)
{
	struct cs_between_counts sum = { 0 };
	struct cs_tcp_counters at_close = { .listen_overflows = 5, .listen_drops = 6, .passive_opens = 100,
					    .estab_resets = 7, .out_rsts = 8 };
	struct cs_tcp_counters at_open = { .listen_overflows = 6, .listen_drops = 8, .passive_opens = 160,
					   .estab_resets = 7, .out_rsts = 11 };
	cs_between_add(&sum, &at_close, &at_open, 9 * SEC);
	/* A second gap whose namespace was made again: its counters went down, and add nothing. */
	struct cs_tcp_counters fresh = { .passive_opens = 3 };
	cs_between_add(&sum, &at_open, &fresh, SEC / 2);
	cr_expect_eq(sum.gaps, 2);
	cr_expect_float_eq(sum.gap_s, 9.5, 1e-9);
	cr_expect_eq(sum.added.passive_opens, 60);
	cr_expect_eq(sum.added.listen_overflows, 1);
	cr_expect_eq(sum.added.listen_drops, 2);
	cr_expect_eq(sum.added.estab_resets, 0);
	cr_expect_eq(sum.added.out_rsts, 3);
}

/*
 * --between-windows counters: the report says what the kernel counted in
 * the gaps, per namespace, and that accepts, drops, resets and closes port
 * by port come from the windows; the engine forgets its connections at a
 * window's close (their closes are not seen in the gap).
 */
Test(window_edges, counters_between_windows)
{
	for (uint32_t i = 0; i < 3; i++)
		FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tgid = 100, .tid = 3,
								     .ts_ns = T0 + i * MS },
					       0xffff880000004000ull + i * 0x100, 0x7f000001, (uint16_t)(40000 + i)));
	cr_assert_eq(engine->conns.count, 3);
	cs_engine_forget_connections(engine, T0 + SEC);
	cr_expect_eq(engine->conns.count, 0);
	cr_expect_eq(engine->conns_forgotten_between, 3);

	struct cs_report_meta meta = { .target = "port 8080", .duration_s = 20.0 };
	meta.trace = (struct cs_trace_meta){ .sampled = true, .window_s = 1, .period_s = 10, .traced_s = 2.0,
					     .windows = 2, .counters_between = true };
	meta.trace.between = (struct cs_between_counts){
		.valid = true, .netns_ino = 4026531840u, .gaps = 2, .gap_s = 18.0,
		.added = { .passive_opens = 60, .listen_overflows = 1, .listen_drops = 2, .out_rsts = 3 } };
	json_t *value = tracing_value(&meta);
	cr_assert_not_null(value);
	cr_expect_str_eq(json_string_value(json_object_get(value, "between_windows")), "counters");
	cr_expect_eq(json_array_size(json_object_get(value, "exact")), 1, "backlog samples only");
	cr_expect_eq(json_array_size(json_object_get(value, "from_windows")), 8);
	json_t *counts = json_object_get(value, "between_counts");
	cr_expect(json_is_true(json_object_get(counts, "valid")));
	cr_expect_eq(json_integer_value(json_object_get(counts, "netns")), 4026531840u);
	cr_expect_eq(json_integer_value(json_object_get(counts, "connections_opened")), 60);
	cr_expect_eq(json_integer_value(json_object_get(counts, "listen_overflows")), 1);
	cr_expect_eq(json_integer_value(json_object_get(counts, "resets_sent")), 3);
	json_decref(value);

	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cs_report_text(out, engine, &meta);
	fclose(out);
	cr_expect(strstr(text, "the kernel counted in network namespace 4026531840 (every port and process in it) "
			       "over 2 gap(s), 18.0 s: 60 connection(s) opened, 1 listen overflow(s), 2 listen drop(s), "
			       "0 established connection(s) reset, 3 reset(s) sent") != NULL, "%s", text);
	cr_expect(strstr(text, "3 connection(s) left at a window's close") != NULL, "%s", text);
	free(text);
	/* The default mode says so too: one shape, its value naming the mode. */
	meta.trace.counters_between = false;
	value = tracing_value(&meta);
	cr_expect_str_eq(json_string_value(json_object_get(value, "between_windows")), "events");
	cr_expect_null(json_object_get(value, "between_counts"));
	json_decref(value);
}
