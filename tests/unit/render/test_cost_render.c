// SPDX-License-Identifier: BSD-2-Clause
/*
 * What connscope costs, as each output shows it (daemon/render/
 * cost_render.c, metrics_cost.c, the reports and top's model): the line of
 * the text report and `record`, the JSON report's "cost" with its
 * programs, the Prometheus series; null figures and a note when the cost
 * was not recorded or not measured, never a made-up zero.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost_render.h"
#include "events.h"
#include "metrics.h"
#include "report.h"
#include "top_model.h"
#include "top_render.h"

/* 4 connections, 40 requests, 2 programs (8 us in 40 runs), 4 ms of CPU in 2 s. */
static struct cs_engine *measured_run(uint32_t bpf_stats)
{
	struct cs_engine *engine = cs_engine_new();
	uint64_t clock_ns = SEC;
	feed_accepts(engine, 8080, 7, 4, 50 * US, &clock_ns);
	for (uint32_t i = 0; i < 40; i++) {
		clock_ns += MS;
		feed_request(engine, (struct request_spec){ .sk = 1 + i % 4, .port = 8080, .index = i, .start_ns = clock_ns,
							    .first_read_ns = clock_ns + 10 * US,
							    .first_send_ns = clock_ns + 20 * US,
							    .last_send_ns = clock_ns + 30 * US });
	}
	FEED_OK(engine, make_prog_cost(clock_ns, 11, "on_recv", 6000, 30));
	FEED_OK(engine, make_prog_cost(clock_ns, 12, "on_send", 2000, 10));
	FEED_OK(engine, make_self_cost(clock_ns, 3 * MS, 1 * MS, 2 * SEC, bpf_stats));
	return engine;
}

static char *rendered(void (*render)(FILE *, const struct cs_engine *, const struct cs_report_meta *),
		      const struct cs_engine *engine)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	struct cs_report_meta meta = { .target = "port 8080", .duration_s = 2.0 };
	render(out, engine, &meta);
	fclose(out);
	return text;
}

static void metrics_of(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta)
{
	cs_metrics_render(out, engine, meta, "port 8080", CS_METRICS_PROMETHEUS);
}

Test(cost_render, the_line_gives_bpf_per_request_and_connection_and_the_cpu_share)
{
	struct cs_engine *engine = measured_run(CS_BPF_STATS_ENABLED);
	struct cs_cost cost;
	cs_cost_of(engine, NULL, &cost);
	char line[256];
	cs_cost_line(line, sizeof(line), &cost);
	cr_assert_str_eq(line, "BPF 200 ns per request, 2000 ns per connection (0.000 s in 40 runs); "
			       "connscope 0.20% of one CPU");
	char *report = rendered(cs_report_text, engine);
	cr_assert_not_null(strstr(report, "\ncost        BPF 200 ns per request, 2000 ns per connection"), "%s", report);
	free(report);
	cs_engine_free(engine);
}

Test(cost_render, larger_times_keep_three_or_four_figures)
{
	struct cs_cost cost = { .recorded = true, .bpf_measured = true, .bpf_ns_per_request = 13456.0,
				.bpf_ns_per_connection = 18690000.0, .bpf_run_ns = 1500000000, .bpf_runs = 7,
				.cpu_share = 0.0123 };
	char line[256];
	cs_cost_line(line, sizeof(line), &cost);
	cr_assert_str_eq(line, "BPF 13.5 us per request, 18.69 ms per connection (1.500 s in 7 runs); "
			       "connscope 1.23% of one CPU");
	cost.bpf_ns_per_connection = -1; /* no connection accepted */
	cs_cost_line(line, sizeof(line), &cost);
	cr_assert_not_null(strstr(line, "per request, - per connection"), "%s", line);
}

Test(cost_render, not_recorded_and_not_measured_say_so)
{
	struct cs_engine *engine = cs_engine_new();
	struct cs_cost cost;
	cs_cost_of(engine, NULL, &cost);
	char line[256];
	cs_cost_line(line, sizeof(line), &cost);
	cr_assert_str_eq(line, "not recorded (a trace from a connscope that did not record it)");
	char *report = rendered(cs_report_text, engine);
	cr_assert_not_null(strstr(report, "\ncost        not recorded"), "%s", report);
	free(report);
	cs_engine_free(engine);

	engine = measured_run(CS_BPF_STATS_OFF);
	cs_cost_of(engine, NULL, &cost);
	cs_cost_line(line, sizeof(line), &cost);
	cr_assert_str_eq(line, "BPF not measured (BPF run-time statistics turned off with --no-bpf-stats); "
			       "connscope 0.20% of one CPU");
	cs_engine_free(engine);
}

Test(cost_render, json_has_the_figures_and_each_program)
{
	struct cs_engine *engine = measured_run(CS_BPF_STATS_ENABLED);
	char *text = rendered(cs_report_json, engine);
	json_error_t error;
	json_t *report = json_loads(text, 0, &error);
	cr_assert_not_null(report, "%s", error.text);
	json_t *cost = json_object_get(report, "cost");
	cr_assert(json_is_true(json_object_get(cost, "recorded")));
	cr_assert(json_is_true(json_object_get(cost, "bpf_measured")));
	cr_assert_str_eq(json_string_value(json_object_get(cost, "bpf_stats")), "enabled");
	cr_assert_float_eq(json_number_value(json_object_get(cost, "bpf_ns_per_request")), 200.0, 1e-9);
	cr_assert_float_eq(json_number_value(json_object_get(cost, "bpf_ns_per_connection")), 2000.0, 1e-9);
	cr_assert_eq(json_integer_value(json_object_get(cost, "bpf_total_ns")), 8000);
	cr_assert_eq(json_integer_value(json_object_get(cost, "bpf_runs")), 40);
	cr_assert_eq(json_integer_value(json_object_get(cost, "requests")), 40);
	cr_assert_eq(json_integer_value(json_object_get(cost, "connections")), 4);
	cr_assert_float_eq(json_number_value(json_object_get(cost, "cpu_share")), 0.002, 1e-9);
	cr_assert_float_eq(json_number_value(json_object_get(cost, "cpu_s")), 0.004, 1e-9);
	cr_assert_null(json_object_get(cost, "note"));
	json_t *programs = json_object_get(cost, "programs");
	cr_assert_eq(json_array_size(programs), 2);
	json_t *recv = json_array_get(programs, 0);
	cr_assert_str_eq(json_string_value(json_object_get(recv, "name")), "on_recv");
	cr_assert_eq(json_integer_value(json_object_get(recv, "id")), 11);
	cr_assert_eq(json_integer_value(json_object_get(recv, "calls")), 30);
	cr_assert_float_eq(json_number_value(json_object_get(recv, "ns_per_call")), 200.0, 1e-9);
	cr_assert_eq(json_integer_value(json_object_get(recv, "total_ns")), 6000);
	json_decref(report);
	free(text);
	cs_engine_free(engine);
}

Test(cost_render, json_figures_are_null_when_not_measured)
{
	struct cs_engine *engine = measured_run(CS_BPF_STATS_FAILED);
	struct cs_cost cost;
	cs_cost_of(engine, NULL, &cost);
	json_t *value = cs_cost_value(&engine->cost, &cost, true);
	cr_assert(json_is_true(json_object_get(value, "recorded")));
	cr_assert(json_is_false(json_object_get(value, "bpf_measured")));
	cr_assert_str_eq(json_string_value(json_object_get(value, "bpf_stats")), "failed");
	cr_assert(json_is_null(json_object_get(value, "bpf_ns_per_request")));
	cr_assert(json_is_null(json_object_get(value, "bpf_total_ns")));
	cr_assert_eq(json_array_size(json_object_get(value, "programs")), 0);
	cr_assert_not_null(strstr(json_string_value(json_object_get(value, "note")), "refused"));
	cr_assert_null(json_object_get(value, "bpf_stats_error")); /* no errno in this reading */
	cr_assert(json_is_number(json_object_get(value, "cpu_share")));
	json_decref(value);
	/* With the kernel's errno: named in the line and the JSON. */
	engine->cost.bpf_stats_error = EPERM;
	cs_cost_of(engine, NULL, &cost);
	char line[256];
	cs_cost_line(line, sizeof(line), &cost);
	cr_assert_not_null(strstr(line, "refused to turn BPF run-time statistics on: Operation not permitted"), "%s",
			   line);
	value = cs_cost_value(&engine->cost, &cost, true);
	cr_assert_str_eq(json_string_value(json_object_get(value, "bpf_stats_error")), "Operation not permitted");
	json_decref(value);
	/* status leaves the programs out. */
	value = cs_cost_value(&engine->cost, &cost, false);
	cr_assert_null(json_object_get(value, "programs"));
	json_decref(value);
	cs_engine_free(engine);
}

/* The value of the first line starting with prefix, or -1. */
static double series(const char *text, const char *prefix)
{
	const char *line = strstr(text, prefix);
	if (!line)
		return -1;
	const char *end = strchr(line, '\n');
	const char *space = end;
	while (space > line && space[-1] != ' ')
		space--;
	return strtod(space, NULL);
}

Test(cost_render, metrics_carry_the_figures)
{
	struct cs_engine *engine = measured_run(CS_BPF_STATS_ENABLED);
	char *text = rendered(metrics_of, engine);
	cr_assert_float_eq(series(text, "connscope_bpf_stats_measured{"), 1, 1e-12);
	cr_assert_float_eq(series(text, "connscope_bpf_seconds_per_request{"), 200e-9, 1e-15);
	cr_assert_float_eq(series(text, "connscope_bpf_seconds_per_connection{"), 2000e-9, 1e-15);
	cr_assert_float_eq(series(text, "connscope_bpf_run_seconds_total{target=\"port 8080\",program=\"on_recv\"}"),
			   6000e-9, 1e-15);
	cr_assert_float_eq(series(text, "connscope_bpf_runs_total{target=\"port 8080\",program=\"on_send\"}"), 10,
			   1e-12);
	cr_assert_float_eq(series(text, "connscope_self_cpu_seconds_total{target=\"port 8080\",mode=\"user\"}"), 0.003,
			   1e-12);
	cr_assert_float_eq(series(text, "connscope_self_cpu_ratio{"), 0.002, 1e-12);
	free(text);
	cs_engine_free(engine);

	/* Not measured: the flag is 0 and no BPF figure is made up. */
	engine = measured_run(CS_BPF_STATS_OFF);
	text = rendered(metrics_of, engine);
	cr_assert_float_eq(series(text, "connscope_bpf_stats_measured{"), 0, 1e-12);
	cr_assert_null(strstr(text, "connscope_bpf_seconds_per_request{"));
	cr_assert_null(strstr(text, "connscope_bpf_runs_total{"));
	cr_assert_geq(series(text, "connscope_self_cpu_ratio{"), 0);
	free(text);
	cs_engine_free(engine);

	/* Not recorded (no readings yet): no cost series at all. */
	engine = cs_engine_new();
	text = rendered(metrics_of, engine);
	cr_assert_null(strstr(text, "connscope_bpf_"));
	cr_assert_null(strstr(text, "connscope_self_cpu"));
	free(text);
	cs_engine_free(engine);
}

Test(cost_render, top_reads_the_cost_from_the_snapshot)
{
	struct cs_top_model m;
	char err[256];
	const char *measured = "{\"cost\":{\"recorded\":true,\"bpf_ns_per_request\":2690.2,\"cpu_share\":0.0118}}";
	cr_assert_eq(cs_top_model_read(&m, measured, strlen(measured), "test", err, sizeof(err)), 0, "%s", err);
	cr_assert(m.cost_recorded);
	cr_assert_float_eq(m.bpf_ns_per_request, 2690.2, 1e-9);
	cr_assert_float_eq(m.cpu_share, 0.0118, 1e-12);
	const char *unmeasured = "{\"cost\":{\"recorded\":true,\"bpf_ns_per_request\":null,\"cpu_share\":0.01}}";
	cr_assert_eq(cs_top_model_read(&m, unmeasured, strlen(unmeasured), "test", err, sizeof(err)), 0, "%s", err);
	cr_assert_lt(m.bpf_ns_per_request, 0);
	const char *older = "{\"requests\":3}";
	cr_assert_eq(cs_top_model_read(&m, older, strlen(older), "test", err, sizeof(err)), 0, "%s", err);
	cr_assert(!m.cost_recorded);
}

/* The screen's row that starts with prefix, or "" (into row). */
static void find_row(const struct cs_top_screen *s, const char *prefix, char *row, size_t len)
{
	for (int r = 0; r < s->rows; r++) {
		cs_top_screen_row(s, r, row, len);
		if (!strncmp(row, prefix, strlen(prefix)))
			return;
	}
	row[0] = '\0';
}

Test(cost_render, top_shows_the_cost_on_its_own_line_at_80_columns)
{
	struct cs_top_model m;
	char err[256], row[1024];
	const char *json = "{\"cost\":{\"recorded\":true,\"bpf_ns_per_request\":2690.2,\"cpu_share\":0.0118}}";
	cr_assert_eq(cs_top_model_read(&m, json, strlen(json), "test", err, sizeof(err)), 0, "%s", err);
	struct cs_top_screen s;
	cr_assert_eq(cs_top_screen_init(&s, 24, 80), 0);
	struct cs_top_ui ui = { .sort = CS_TOP_SORT_REQUESTS };
	cs_top_render(&s, &m, &ui);
	find_row(&s, "cost", row, sizeof(row));
	cr_assert_not_null(strstr(row, "BPF 2690 ns per request, connscope CPU 1.2% of one CPU"), "'%s'", row);

	const char *unmeasured = "{\"cost\":{\"recorded\":true,\"bpf_ns_per_request\":null,\"cpu_share\":0.01}}";
	cr_assert_eq(cs_top_model_read(&m, unmeasured, strlen(unmeasured), "test", err, sizeof(err)), 0, "%s", err);
	cs_top_render(&s, &m, &ui);
	find_row(&s, "cost", row, sizeof(row));
	cr_assert_not_null(strstr(row, "BPF not measured, connscope CPU 1.0% of one CPU"), "'%s'", row);

	const char *older = "{\"requests\":3}";
	cr_assert_eq(cs_top_model_read(&m, older, strlen(older), "test", err, sizeof(err)), 0, "%s", err);
	cs_top_render(&s, &m, &ui);
	find_row(&s, "cost", row, sizeof(row));
	cr_assert_str_eq(row, "", "no cost line before a reading");
	cs_top_screen_free(&s);
}

Test(cost_render, hostile_readings_still_render_valid_json_and_lines)
{
	/* A corrupt trace's sums can wrap: every output stays well-formed. */
	struct cs_engine *engine = measured_run(CS_BPF_STATS_ENABLED);
	FEED_OK(engine, make_prog_cost(9 * SEC, 11, "on_recv", UINT64_MAX, UINT64_MAX));
	FEED_OK(engine, make_self_cost(9 * SEC, UINT64_MAX, UINT64_MAX, 1, 0xdead));
	char *text = rendered(cs_report_json, engine);
	json_error_t error;
	json_t *report = json_loads(text, 0, &error);
	cr_assert_not_null(report, "%s: %s", error.text, text);
	cr_assert(json_is_object(json_object_get(report, "cost")));
	json_decref(report);
	free(text);
	text = rendered(cs_report_text, engine);
	cr_assert_not_null(strstr(text, "\ncost        BPF not measured"), "%s", text);
	free(text);
	text = rendered(metrics_of, engine);
	cr_assert_not_null(strstr(text, "connscope_self_cpu_ratio{"));
	free(text);
	cs_engine_free(engine);
}

Test(cost_render, sampled_statistics_say_how_much_of_the_time_they_were_on)
{
	/* measured_run's 2 s held on, then 6 s left off: a quarter of the time. */
	struct cs_engine *engine = measured_run(CS_BPF_STATS_SAMPLED_ON);
	FEED_OK(engine, make_self_cost(10 * SEC, 1 * MS, 0, 6 * SEC, CS_BPF_STATS_SAMPLED_OFF));
	struct cs_cost cost;
	cs_cost_of(engine, NULL, &cost);
	char line[256];
	cs_cost_line(line, sizeof(line), &cost);
	cr_assert_not_null(strstr(line, "BPF 800 ns per request, 8000 ns per connection (0.000 s in 40 runs, BPF "
					"statistics on 25.0 % of the time)"),
			   "%s", line);
	json_t *value = cs_cost_value(&engine->cost, &cost, true);
	cr_assert_str_eq(json_string_value(json_object_get(value, "bpf_stats")), "sampled");
	cr_assert(json_is_true(json_object_get(value, "bpf_sampled")));
	cr_assert_float_eq(json_number_value(json_object_get(value, "bpf_measured_share")), 0.25, 1e-9);
	cr_assert_eq(json_integer_value(json_object_get(value, "bpf_total_ns")), 8000);
	json_decref(value);
	char *text = rendered(metrics_of, engine);
	cr_assert_float_eq(series(text, "connscope_bpf_stats_measured_ratio{"), 0.25, 1e-12);
	cr_assert_float_eq(series(text, "connscope_bpf_seconds_per_request{"), 800e-9, 1e-15);
	/* The counters are what the kernel counted, no estimate: they only grow. */
	cr_assert_float_eq(series(text, "connscope_bpf_runs_total{target=\"port 8080\",program=\"on_send\"}"), 10,
			   1e-12);
	free(text);
	cs_engine_free(engine);
}
