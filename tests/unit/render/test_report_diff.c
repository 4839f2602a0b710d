// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope diff: two recorded runs (keep-alive, then a connection per
 * request) through the engine, their JSON reports compared. The diff says
 * what the reports say, and a percentile they did not print, computed
 * from their histograms, is the engine's own.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "report.h"
#include "report_diff.h"
#include "trace_file.h"

static int feed(void *ctx, const void *record, size_t len)
{
	cs_engine_feed(ctx, record, len);
	return 0;
}

/* A fixture's engine, and its JSON report as `connscope report --json` writes it. */
static json_t *fixture_report(const char *name, struct cs_engine **engine_out)
{
	const char *dir = getenv("CS_FIXTURES") ? getenv("CS_FIXTURES") : "tests/fixtures";
	char path[512], errmsg[256];
	snprintf(path, sizeof(path), "%s/%s.cstrace", dir, name);
	FILE *file = fopen(path, "rb");
	cr_assert_not_null(file, "cannot open %s: %s (run from the repository root)", path, strerror(errno));
	static struct cs_trace_info info;
	struct cs_engine *engine = cs_engine_new();
	cr_assert_not_null(engine);
	cr_assert_eq(cs_trace_read(file, feed, engine, &info, errmsg, sizeof(errmsg)), 0, "%s: %s", path, errmsg);
	fclose(file);
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	cs_report_json(mem, engine, &info.meta);
	fclose(mem);
	json_error_t error;
	json_t *report = json_loadb(text, len, 0, &error);
	cr_assert_not_null(report, "%s: report JSON: %s", name, error.text);
	free(text);
	*engine_out = engine;
	return report;
}

static json_t *diff_json(const json_t *before, const json_t *after, double extra_pct)
{
	char *text = NULL, err[256] = "";
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	struct cs_diff_options options = { .as_json = true, .extra_percentile = extra_pct };
	cr_assert_eq(cs_report_diff(mem, before, after, &options, err, sizeof(err)), 0, "%s", err);
	fclose(mem);
	json_error_t error;
	json_t *diff = json_loadb(text, len, 0, &error);
	cr_assert_not_null(diff, "diff JSON: %s: %s", error.text, text);
	free(text);
	return diff;
}

static bool array_has(const json_t *array, const char *name)
{
	size_t i;
	const json_t *v;
	json_array_foreach(array, i, v)
		if (!strcmp(json_string_value(v), name))
			return true;
	return false;
}

static double get2(const json_t *root, const char *a, const char *b)
{
	return json_number_value(json_object_get(json_object_get(root, a), b));
}

Test(report_diff, keepalive_off_makes_non_persistent_appear_and_keeps_each_runs_figures)
{
	struct cs_engine *keep, *close_each;
	json_t *before = fixture_report("s5keep", &keep), *after = fixture_report("s5close", &close_each);
	json_t *diff = diff_json(before, after, 95.0);

	const json_t *conditions = json_object_get(diff, "conditions");
	cr_expect(array_has(json_object_get(conditions, "appeared"), "non_persistent"));
	cr_expect(!array_has(json_object_get(conditions, "went_away"), "non_persistent"));
	const json_t *latency = json_object_get(diff, "latency_us");
	static const char *const keys[] = { "p50", "p90", "p99", "p999", "max" };
	for (size_t i = 0; i < 5; i++) {
		cr_expect_eq(get2(latency, keys[i], "before"),
			     get2(before, "latency_us", keys[i]), "%s before", keys[i]);
		cr_expect_eq(get2(latency, keys[i], "after"), get2(after, "latency_us", keys[i]), "%s after", keys[i]);
	}
	/* p95 was not printed: from the buckets, it is the engine's own. */
	cr_expect(fabs(get2(latency, "p95", "before") - (double)cs_hist_percentile(keep->requests.latency_ns, 95.0) / 1e3) < 0.002);
	cr_expect(fabs(get2(latency, "p95", "after") - (double)cs_hist_percentile(close_each->requests.latency_ns, 95.0) / 1e3) < 0.002);
	/* The tail's causes: each run's shares as its report gives them. */
	size_t i;
	const json_t *cause;
	json_array_foreach(json_object_get(diff, "tail_causes"), i, cause) {
		const char *name = json_string_value(json_object_get(cause, "cause"));
		size_t j;
		const json_t *c;
		json_array_foreach(json_object_get(json_object_get(after, "tail"), "causes"), j, c)
			if (!strcmp(json_string_value(json_object_get(c, "cause")), name))
				cr_expect_eq(get2(cause, "share", "after"), json_number_value(json_object_get(c, "share")), "%s", name);
	}
	cr_expect_gt(json_array_size(json_object_get(diff, "tail_causes")), 0);
	json_decref(diff);
	json_decref(before);
	json_decref(after);
	cs_engine_free(keep);
	cs_engine_free(close_each);
}

Test(report_diff, a_run_against_itself_changes_nothing)
{
	struct cs_engine *engine;
	json_t *report = fixture_report("s1", &engine);
	json_t *diff = diff_json(report, report, 0);
	const char *key;
	const json_t *p;
	json_object_foreach(json_object_get(diff, "latency_us"), key, p)
		cr_expect_eq(json_number_value(json_object_get(p, "change")), 0.0, "%s", key);
	const json_t *conditions = json_object_get(diff, "conditions");
	cr_expect_eq(json_array_size(json_object_get(conditions, "appeared")), 0);
	cr_expect_eq(json_array_size(json_object_get(conditions, "went_away")), 0);
	json_decref(diff);
	json_decref(report);
	cs_engine_free(engine);
}

Test(report_diff, a_json_that_is_not_a_report_is_refused_by_name)
{
	json_t *report = json_pack("{s:f, s:i}", "duration_s", 1.0, "requests", 3);
	char err[256] = "";
	struct cs_diff_options options = { 0 };
	FILE *devnull = fopen("/dev/null", "w");
	cr_expect_eq(cs_report_diff(devnull, report, report, &options, err, sizeof(err)), -1);
	fclose(devnull);
	cr_expect(strstr(err, "BEFORE has no 'latency_us'"), "%s", err);
	json_decref(report);
}

Test(report_diff, percentiles_from_buckets_use_the_nearest_rank)
{
	json_t *buckets = json_pack("[[f,f,i],[f,f,i],[f,f,i]]", 0.0, 10.0, 1, 10.0, 20.0, 98, 20.0, 30.0, 1);
	cr_expect_eq(cs_diff_bucket_percentile_us(buckets, 1.0), 5.0);
	cr_expect_eq(cs_diff_bucket_percentile_us(buckets, 50.0), 15.0);
	cr_expect_eq(cs_diff_bucket_percentile_us(buckets, 99.0), 15.0);
	cr_expect_eq(cs_diff_bucket_percentile_us(buckets, 100.0), 25.0);
	json_t *empty = json_array();
	cr_expect_eq(cs_diff_bucket_percentile_us(empty, 50.0), -1.0);
	json_decref(buckets);
	json_decref(empty);
}
