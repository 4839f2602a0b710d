// SPDX-License-Identifier: BSD-2-Clause
/*
 * The target's upstreams in the live outputs: Prometheus (a series per
 * upstream address) and top (a line per upstream, the most of the tail
 * first), and the connects that waited for a SYN retransmit.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "json_check.h"
#include "live.h"
#include "metrics.h"
#include "report_render.h"
#include "top_model.h"
#include "top_render.h"

#define PORT 8080
#define T0 (100 * SEC)

CS_ENGINE_FIXTURE

TestSuite(upstream_outputs, .init = setup, .fini = teardown);

/*
 * A blocking worker: 100 requests, each calling 127.0.0.2:9000 (the
 * tenth ones wait 40 ms, the others 1 ms) on a new connection; three of
 * the connects waited for a SYN retransmit (1 s), one of them for two.
 * Every twentieth request also calls 127.0.0.3:6379 (100 us).
 */
static void worker_with_two_upstreams(void)
{
	for (uint64_t i = 0; i < 100; i++) {
		uint64_t read = T0 + i * 2 * SEC, connect = i < 3 ? 1 * SEC + (i == 0) * 2 * SEC : 100 * US;
		uint64_t send = read + 100 * US + connect, wait = i % 10 == 5 ? 40 * MS : 1 * MS;
		feed_upstream(engine, (struct upstream_spec){
			.sk = 0x9000 + i, .start_ns = read + 100 * US, .connect_ns = connect, .send_ns = send,
			.first_byte_ns = send + wait, .first_read_ns = send + wait + 20 * US, .open = 1,
			.request_read_ns = read, .flags = CS_UP_CONNECT, .sender_cpu_ns = 10 * US,
			.syn_retransmits = i < 3 ? 1 + (i == 0) : 0, .index = 0 });
		uint64_t answer = send + wait + 200 * US;
		if (i % 20 == 0) {
			feed_upstream(engine, (struct upstream_spec){
				.sk = 0x6379, .upstream_ipv4 = 0x7f000003, .port = 6379, .send_ns = send + wait + 40 * US,
				.first_byte_ns = send + wait + 140 * US, .first_read_ns = send + wait + 150 * US,
				.open = 1, .request_read_ns = read, .sender_cpu_ns = 5 * US, .index = (uint32_t)i });
		}
		feed_request(engine, (struct request_spec){ .sk = 0xffff888700000000ull + i, .port = PORT, .index = 1,
							    .start_ns = read - 10 * US, .first_read_ns = read,
							    .first_send_ns = answer, .last_send_ns = answer,
							    .drain_end_ns = answer, .reader_tid = 7 });
	}
}

static const struct cs_report_meta meta = { .target = "pid 100 (app)", .duration_s = 200.0 };

Test(upstream_outputs, the_json_and_text_count_the_connects_that_waited_for_a_syn_retransmit)
{
	worker_with_two_upstreams();
	char *text = render_report(engine, &meta, true);
	struct json *root = json_parse(text);
	const struct json *u = element(member(root, "upstreams", J_ARRAY), 0);
	cr_expect_eq(number(u, "port"), 9000);
	cr_expect_eq(number(u, "connects"), 100);
	cr_expect_eq(number(u, "syn_retransmits"), 4);
	cr_expect_eq(number(u, "connects_retransmitted"), 3);
	json_free(root);
	free(text);
	text = render_report(engine, &meta, false);
	cr_expect_not_null(strstr(text, "(100 connect(s), 3 waited for a SYN retransmit: 4 in all)"), "%s", text);
	free(text);
}

static char *metrics_text(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	cs_metrics_render(out, engine, &meta, "app", CS_METRICS_PROMETHEUS);
	fclose(out);
	return text;
}

/* The value of the sample whose series is exactly name{labels}, or -1. */
static double sample(const char *text, const char *series)
{
	size_t n = strlen(series);
	for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, series, n) && line[n] == ' ')
			return strtod(line + n + 1, NULL);
	return -1;
}

Test(upstream_outputs, prometheus_has_a_series_per_upstream)
{
	worker_with_two_upstreams();
	char *text = metrics_text();
	cr_expect_eq(sample(text, "connscope_upstream_exchanges_total{target=\"app\",upstream=\"127.0.0.2:9000\"}"), 100,
		     "%s", text);
	cr_expect_eq(sample(text, "connscope_upstream_exchanges_total{target=\"app\",upstream=\"127.0.0.3:6379\"}"), 5);
	cr_expect_eq(sample(text, "connscope_upstream_connects_retransmitted_total{target=\"app\",upstream=\"127.0.0.2:9000\"}"),
		     3);
	cr_expect_eq(sample(text, "connscope_upstream_wait_seconds_count{target=\"app\",upstream=\"127.0.0.2:9000\"}"), 100);
	/* Ten answers took 40 ms: 90 of the waits are at most 2.5 ms, all at most 50 ms. */
	cr_expect_eq(sample(text, "connscope_upstream_wait_seconds_bucket{target=\"app\",upstream=\"127.0.0.2:9000\",le=\"0.0025\"}"),
		     90, "%s", text);
	cr_expect_eq(sample(text, "connscope_upstream_wait_seconds_bucket{target=\"app\",upstream=\"127.0.0.2:9000\",le=\"0.05\"}"),
		     100);
	cr_expect_eq(sample(text, "connscope_upstream_connect_seconds_count{target=\"app\",upstream=\"127.0.0.2:9000\"}"),
		     100);
	cr_expect_gt(sample(text, "connscope_upstream_tail_share{target=\"app\",upstream=\"127.0.0.2:9000\"}"), 0.5);
	cr_expect_eq(sample(text, "connscope_upstream_untracked_exchanges_total{target=\"app\"}"), 0);
	free(text);
}

Test(upstream_outputs, prometheus_leaves_the_families_out_for_a_target_that_calls_nobody)
{
	feed_request(engine, (struct request_spec){ .sk = 1, .port = PORT, .index = 1, .start_ns = T0,
						    .first_read_ns = T0, .first_send_ns = T0 + MS, .last_send_ns = T0 + MS,
						    .drain_end_ns = T0 + MS, .reader_tid = 7 });
	char *text = metrics_text();
	cr_expect_null(strstr(text, "connscope_upstream_"), "%s", text);
	free(text);
}

Test(upstream_outputs, top_shows_each_upstream_the_most_of_the_tail_first)
{
	worker_with_two_upstreams();
	struct cs_window window;
	cr_assert_eq(cs_window_init(&window), 0);
	char *json = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&json, &len);
	struct cs_live_info info = { .source = "daemon", .uptime_s = 200, .since_reset_s = 200 };
	cr_assert_eq(cs_snapshot_json(out, engine, &meta, &window, &info), 0);
	fclose(out);
	struct cs_top_model m;
	char err[128];
	cr_assert_eq(cs_top_model_read(&m, json, len, "test", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(m.upstream_count, 2);
	cr_expect_str_eq(m.upstreams[0].endpoint, "127.0.0.2:9000");
	cr_expect_eq(m.upstreams[0].exchanges, 100);
	cr_expect_eq(m.upstreams[0].connects_retransmitted, 3);
	cr_expect_float_eq(m.upstreams[0].wait_p99_us, 40000.0, 40000.0 / 64);
	cr_expect_str_eq(m.upstreams[1].endpoint, "127.0.0.3:6379");
	cr_expect_eq(m.upstreams[1].exchanges, 5);

	struct cs_top_screen screen;
	cr_assert_eq(cs_top_screen_init(&screen, 60, 120), 0);
	struct cs_top_ui ui = { .once = true };
	cs_top_render(&screen, &m, &ui);
	char row[512];
	bool header = false, line = false;
	for (int r = 0; r < 60; r++) {
		cs_top_screen_row(&screen, r, row, sizeof(row));
		header |= strncmp(row, "upstream ", 9) == 0;
		line |= strncmp(row, "127.0.0.2:9000 ", 15) == 0 && strstr(row, " 100 ") && strstr(row, "3 ");
	}
	cr_expect(header, "no upstream header");
	cr_expect(line, "no line for 127.0.0.2:9000");
	cs_top_screen_free(&screen);
	cs_window_free(&window);
	free(json);
}

/*
 * A worker calling Redis on its Unix socket (named, its path's bytes with
 * the kernel's trailing 0, and a quote to escape in Prometheus), an
 * abstract socket, and one whose path record was lost.
 */
static void worker_with_unix_upstreams(void)
{
	static const char path[] = "/run/re\"dis.sock";
	FEED_OK(engine, make_upstream_path(0x5000, 0xabc, path, sizeof(path), T0 - MS));
	FEED_OK(engine, make_upstream_path(0x5001, 0xdef, "\0db", 3, T0 - MS));
	for (uint64_t i = 0; i < 10; i++) {
		uint64_t read = T0 + i * SEC, send = read + 50 * US, hash = i < 6 ? 0xabc : i < 9 ? 0xdef : 0x123;
		feed_upstream(engine, (struct upstream_spec){
			.sk = 0x5000 + (i < 6 ? 0 : i < 9 ? 1 : 2), .send_ns = send, .first_byte_ns = send + 2 * MS,
			.first_read_ns = send + 2 * MS + 10 * US, .open = 1, .request_read_ns = read,
			.sender_cpu_ns = 10 * US, .unix_hash = hash });
		uint64_t answer = send + 2 * MS + 100 * US;
		feed_request(engine, (struct request_spec){ .sk = 0xffff888700000000ull + i, .port = PORT, .index = 1,
							    .start_ns = read - 10 * US, .first_read_ns = read,
							    .first_send_ns = answer, .last_send_ns = answer,
							    .drain_end_ns = answer, .reader_tid = 7 });
	}
}

Test(upstream_outputs, a_unix_socket_is_named_by_its_path_in_every_output)
{
	worker_with_unix_upstreams();
	char *text = render_report(engine, &meta, true);
	struct json *root = json_parse(text);
	const struct json *list = member(root, "upstreams", J_ARRAY);
	const struct json *named = element(list, 0), *abstract = element(list, 1), *unnamed = element(list, 2);
	cr_expect_str_eq(member(named, "address", J_STRING)->string, "/run/re\"dis.sock", "%s", text);
	cr_expect_str_eq(member(named, "transport", J_STRING)->string, "unix");
	cr_expect_eq(number(named, "port"), 0);
	cr_expect_eq(number(named, "exchanges"), 6);
	cr_expect_eq(number(named, "joined"), 6);
	cr_expect_str_eq(member(abstract, "address", J_STRING)->string, "@db");
	cr_expect_eq(number(abstract, "exchanges"), 3);
	cr_expect_str_eq(member(unnamed, "address", J_STRING)->string, "unix socket #0000000000000123");
	json_free(root);
	free(text);

	text = metrics_text();
	cr_expect_eq(sample(text, "connscope_upstream_exchanges_total{target=\"app\",upstream=\"/run/re\\\"dis.sock\"}"), 6,
		     "%s", text);
	cr_expect_eq(sample(text, "connscope_upstream_exchanges_total{target=\"app\",upstream=\"@db\"}"), 3);
	free(text);

	text = render_report(engine, &meta, false);
	cr_expect_not_null(strstr(text, "  /run/re\"dis.sock  6 exchange(s)"), "%s", text);
	free(text);
}
