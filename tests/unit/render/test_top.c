// SPDX-License-Identifier: BSD-2-Clause
/* The live view: snapshot JSON (daemon/render/live.c), top's model and layout. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "json_check.h"
#include "live.h"
#include "top_model.h"
#include "top_render.h"

#define T0 (1000 * SEC)

struct fixture {
	struct cs_engine *engine;
	struct cs_window window;
	char *json;
	size_t len;
};

/*
 * Two threads, one listener, a minute of traffic with a slow tail; rendered
 * as a snapshot, with `skipped` probe runs the kernel skipped.
 */
static void build(struct fixture *f, double tail, uint64_t skipped)
{
	f->engine = cs_engine_new();
	cr_assert_eq(cs_window_init(&f->window), 0);
	cs_window_tick(&f->window, f->engine, T0);
	uint64_t clock = T0;
	for (uint64_t s = 1; s <= 5; s++) {
		feed_accepts(f->engine, 8080, 11, 2, 300 * US, &clock);
		feed_samples(f->engine, 8080, 1, s, 128, (uint32_t)(10 * s), &clock);
		for (uint64_t i = 0; i < 100; i++) {
			uint64_t latency = i >= 98 ? 40 * MS : 1 * MS; /* 2 %: the p99 */
			uint64_t start = T0 + s * SEC - 100 * MS + i * 100 * US;
			feed_request(f->engine, (struct request_spec){ .sk = 0x5000 + i, .index = 1, .port = 8080,
								      .reader_tid = i % 4 == 0 ? 12 : 11,
								      .start_ns = start, .first_read_ns = start + latency / 2,
								      .first_send_ns = start + latency,
								      .last_send_ns = start + latency });
		}
		cs_window_tick(&f->window, f->engine, T0 + s * SEC);
	}
	struct cs_report_meta meta = { .target = "pid 42 (web) port 8080", .duration_s = 5, .tail_percentile = tail,
				       .probe_runs_skipped = skipped };
	struct cs_live_info info = { .source = "daemon", .uptime_s = 65, .since_reset_s = 5 };
	FILE *out = open_memstream(&f->json, &f->len);
	cr_assert_eq(cs_snapshot_json(out, f->engine, &meta, &f->window, &info), 0);
	fclose(out);
}

static void destroy(struct fixture *f)
{
	free(f->json);
	cs_window_free(&f->window);
	cs_engine_free(f->engine);
}

Test(live, snapshot_is_the_report_json_plus_live)
{
	struct fixture f;
	build(&f, 0, 0);
	struct json *root = json_parse(f.json);
	cr_expect(!strncmp(f.json, "{\"schema_version\":1,", 20), "the report's first member: %.40s", f.json);
	cr_expect_eq(f.json[f.len - 1], '\n');
	/* attach's members are there, unchanged in kind */
	cr_expect_eq(number(root, "requests"), 500);
	cr_expect_not_null(member(root, "tail", J_OBJECT));
	cr_expect_not_null(member(root, "findings", J_ARRAY));
	const struct json *live = member(root, "live", J_OBJECT);
	cr_expect_str_eq(member(live, "source", J_STRING)->string, "daemon");
	const struct json *seconds = member(live, "seconds", J_ARRAY);
	int n = 0;
	for (const struct json *s = seconds->child; s; s = s->next, n++) {
		cr_expect_eq(number(s, "requests"), 100);
		cr_expect_gt(number(s, "p99_us"), 35000, "each second holds two 40 ms requests");
	}
	cr_expect_eq(n, 5);
	cr_expect_float_eq(number(member(live, "last", J_OBJECT), "requests_per_s"), 100, 1e-6);
	const struct json *thread = member(live, "threads", J_ARRAY)->child;
	int threads = 0;
	for (; thread; thread = thread->next, threads++)
		cr_expect(number(thread, "tid") == 11 || number(thread, "tid") == 12);
	cr_expect_eq(threads, 2);
	json_free(root);
	destroy(&f);
}

Test(top, model_reads_the_snapshot)
{
	struct fixture f;
	build(&f, 99.9, 7);
	struct cs_top_model *m = malloc(sizeof(*m));
	char err[256];
	cr_assert_eq(cs_top_model_read(m, f.json, f.len, "test", err, sizeof(err)), 0);
	cr_expect_str_eq(m->target, "pid 42 (web) port 8080");
	cr_expect_eq(m->skipped, 7);
	struct cs_top_screen s;
	cr_assert_eq(cs_top_screen_init(&s, 24, 120), 0);
	struct cs_top_ui ui = { .sort = CS_TOP_SORT_REQUESTS };
	cs_top_render(&s, m, &ui);
	char title[1024];
	cs_top_screen_row(&s, 0, title, sizeof(title));
	cr_expect(strstr(title, " lost, 7 probe runs skipped"), "title: %s", title);
	cs_top_screen_free(&s);
	cr_expect_str_eq(m->source, "daemon");
	cr_expect_eq(m->requests, 500);
	cr_expect_float_eq(m->requests_per_s, 100, 1e-6);
	cr_expect_eq(m->series_len, 5);
	cr_expect_gt(m->p99_series_us[4], 35000);
	cr_expect_float_eq(m->tail_percentile, 99.9, 1e-9);
	cr_expect_eq(m->listener_count, 1);
	cr_expect_eq(m->listeners[0].port, 8080);
	cr_expect_eq(m->listeners[0].backlog_now, 5);
	cr_expect_eq(m->listeners[0].backlog_limit, 128);
	cr_expect_eq(m->listeners[0].drops, 50); /* the accepts saw sk_drops 0 first */
	cr_expect_float_eq(m->listeners[0].accepts_per_s, 2, 1e-6);
	cr_expect_eq(m->thread_count, 2);
	cr_expect_gt(m->cause_count, 0);
	cr_expect_gt(m->window.p99_us, 1000);
	free(m);
	destroy(&f);
}

static bool screen_has(const struct cs_top_screen *s, const char *text)
{
	char row[2048];
	for (int r = 0; r < s->rows; r++) {
		cs_top_screen_row(s, r, row, sizeof(row));
		if (strstr(row, text))
			return true;
	}
	return false;
}

Test(top, layout_at_80x24)
{
	struct fixture f;
	build(&f, 0, 0);
	struct cs_top_model *m = malloc(sizeof(*m));
	char err[256];
	cr_assert_eq(cs_top_model_read(m, f.json, f.len, "test", err, sizeof(err)), 0);
	struct cs_top_screen s;
	cr_assert_eq(cs_top_screen_init(&s, 24, 80), 0);
	struct cs_top_ui ui = { .sort = CS_TOP_SORT_REQUESTS, .unicode = true };
	snprintf(ui.status, sizeof(ui.status), "daemon /run/x.sock");
	cs_top_render(&s, m, &ui);
	char row[1024];
	cs_top_screen_row(&s, 0, row, sizeof(row));
	cr_expect(strstr(row, "connscope top") && strstr(row, "pid 42 (web) port 8080"), "title: %s", row);
	cr_expect_null(strstr(row, "skipped"), "no skipped runs, none shown: %s", row);
	static const char *const sections[] = { "latency", "p99 /s", "listener", ":8080", "tail p99:",
						"conditions", "threads", "sort: req/s", "  a     11 " };
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		cr_expect(screen_has(&s, sections[i]), "no '%s' at 80x24", sections[i]);
	cs_top_screen_row(&s, 23, row, sizeof(row));
	cr_expect_eq(strncmp(row, "q quit", 6), 0, "the key line is the last row: %s", row);
	cr_expect(strstr(row, "daemon /run/x.sock"));

	/* The busiest thread first; by accepts, the accepting one (11) leads too, 12 has none. */
	int first_thread_row = -1;
	for (int r = 0; r < s.rows && first_thread_row < 0; r++) {
		cs_top_screen_row(&s, r, row, sizeof(row));
		if (!strncmp(row, "threads", 7))
			first_thread_row = r + 1;
	}
	cr_assert_gt(first_thread_row, 0);
	cs_top_screen_row(&s, first_thread_row, row, sizeof(row));
	cr_expect(strstr(row, " 11 "), "req/s order: %s", row);

	ui.paused = true;
	ui.sort = CS_TOP_SORT_RUNQ;
	cs_top_render(&s, m, &ui);
	cr_expect(screen_has(&s, "[paused]"));
	cr_expect(screen_has(&s, "sort: runq p99"));
	ui.help = true;
	cs_top_render(&s, m, &ui);
	cr_expect(screen_has(&s, "q   quit"));
	cr_expect_not(screen_has(&s, "tail p99:"), "help replaces the figures");
	cs_top_screen_free(&s);
	free(m);
	destroy(&f);
}

Test(top, any_size_and_an_empty_model_draw_without_harm)
{
	struct cs_top_model *m = calloc(1, sizeof(*m));
	struct cs_top_ui ui = { 0 };
	static const int sizes[][2] = { { 1, 1 }, { 2, 10 }, { 5, 20 }, { 24, 80 }, { 60, 200 }, { 0, 0 }, { 9999, 9999 } };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct cs_top_screen s;
		cr_assert_eq(cs_top_screen_init(&s, sizes[i][0], sizes[i][1]), 0);
		cs_top_render(&s, m, &ui);
		cr_expect_leq(s.used_rows, s.rows);
		cs_top_screen_free(&s);
	}
	/* The text of a frame: no trailing blanks, one line a used row. */
	struct cs_top_screen s;
	cs_top_screen_init(&s, 24, 80);
	ui.once = true;
	cs_top_render(&s, m, &ui);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cs_top_screen_print(&s, out, false);
	fclose(out);
	cr_expect(strstr(text, "no request yet"));
	cr_expect_null(strstr(text, " \n"));
	cr_expect_null(strstr(text, "\033["), "no colour unless asked");
	free(text);
	cs_top_screen_free(&s);
	free(m);
}

Test(top, a_cut_snapshot_is_refused_naming_its_sender)
{
	struct fixture f;
	build(&f, 0, 0);
	struct cs_top_model *m = malloc(sizeof(*m));
	char err[256];
	/* A reply cut anywhere: an error, never a crash, and an empty model. */
	for (size_t len = 0; len + 1 < f.len; len += 97) {
		err[0] = '\0';
		cr_assert_eq(cs_top_model_read(m, f.json, len, "connscoped's snapshot", err, sizeof(err)), -EINVAL);
		cr_expect(!strncmp(err, "connscoped's snapshot: not valid JSON at line 1, column ", 56), "%s", err);
		cr_expect_eq(m->target[0], '\0');
	}
	cr_expect_eq(cs_top_model_read(m, f.json, f.len, "connscoped's snapshot", err, sizeof(err)), 0);
	free(m);
	destroy(&f);
}

Test(top, hostile_json_yields_a_clamped_model)
{
	const char *json = "{\"target\":\"\\u001b[2Jx\",\"duration_s\":-5,\"requests\":1e300,"
			   "\"tail\":{\"percentile\":1e9,\"causes\":[{\"cause\":\"handler\",\"share\":7}]},"
			   "\"listeners\":[{\"port\":99999}],\"live\":{\"seconds\":[{\"requests\":1,\"p99_us\":-1}]}}";
	struct cs_top_model *m = malloc(sizeof(*m));
	char err[256];
	cr_assert_eq(cs_top_model_read(m, json, strlen(json), "test", err, sizeof(err)), 0);
	cr_expect_eq(m->target[0], '?', "control characters never reach the terminal");
	cr_expect_eq(m->duration_s, 0);
	cr_expect_leq(m->tail_percentile, 100);
	cr_expect_leq(m->causes[0].share, 1);
	cr_expect_eq(m->listeners[0].port, 65535);
	cr_expect_eq(m->p99_series_us[0], 0);
	cr_expect_neq(cs_top_model_read(m, "{", 1, "test", err, sizeof(err)), 0);
	free(m);
}

Test(top, multiplexed_connections_are_said)
{
	static const char json[] = "{\"requests\":10,\"connections_multiplexed\":3,\"live\":{\"window\":{\"seconds\":60}}}";
	struct cs_top_model *m = malloc(sizeof(*m));
	char err[256];
	cr_assert_eq(cs_top_model_read(m, json, sizeof(json) - 1, "test", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(m->multiplexed, 3);
	struct cs_top_screen s;
	cr_assert_eq(cs_top_screen_init(&s, 24, 160), 0);
	struct cs_top_ui ui = { .sort = CS_TOP_SORT_REQUESTS };
	cs_top_render(&s, m, &ui);
	cr_expect(screen_has(&s, "3 multiplexed conn(s), not in the latency"), "multiplexed connections not said");
	cs_top_screen_free(&s);
	free(m);
}

Test(top, adopted_connections_are_said)
{
	static const char json[] = "{\"requests\":10,\"connections_adopted\":20,\"requests_in_flight_at_attach\":4,"
				   "\"live\":{\"window\":{\"seconds\":60}}}";
	struct cs_top_model *m = malloc(sizeof(*m));
	char err[256];
	cr_assert_eq(cs_top_model_read(m, json, sizeof(json) - 1, "test", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(m->adopted, 20);
	cr_expect_eq(m->in_flight_at_attach, 4);
	struct cs_top_screen s;
	cr_assert_eq(cs_top_screen_init(&s, 24, 160), 0);
	struct cs_top_ui ui = { .sort = CS_TOP_SORT_REQUESTS };
	cs_top_render(&s, m, &ui);
	cr_expect(screen_has(&s, "20 connections older than the attach, adopted at their first idle moment; "
				 "4 requests in flight at the attach left out"),
		  "adoption not said");
	cs_top_screen_free(&s);
	free(m);
}
