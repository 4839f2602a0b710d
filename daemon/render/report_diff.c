/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * connscope diff: two JSON reports side by side. What an SRE asks after a
 * deploy: did the percentiles move, did the tail's causes change, which
 * conditions appeared or went away, on which listener. Each figure is
 * read from the reports as they are; a percentile the reports did not
 * print is computed from their histograms (latency_buckets_us).
 */
#include "report_diff.h"
#include "errmsg.h"

#include <math.h>
#include <string.h>

#include "json.h"
#include "report.h"

/* The latency percentiles compared, by their names in latency_us. */
static const struct {
	const char *key;
	const char *label;
	double percentile;
} latency_rows[] = {
	{ "p50", "p50", 50 }, { "p90", "p90", 90 }, { "p99", "p99", 99 }, { "p999", "p99.9", 99.9 }, { "max", "max", 100 },
};
#define LATENCY_ROWS (sizeof(latency_rows) / sizeof(latency_rows[0]))

/* A number at a path of object keys ("latency_us", "p99"); NAN if absent. */
static double number_at(const json_t *root, const char *first, const char *second)
{
	return second ? cs_json_num(json_object_get(root, first), second, NAN) : cs_json_num(root, first, NAN);
}

double cs_diff_bucket_percentile_us(const json_t *buckets, double pct)
{
	double total = 0;
	size_t i;
	const json_t *bucket;
	json_array_foreach(buckets, i, bucket)
		total += json_number_value(json_array_get(bucket, 2));
	if (total <= 0)
		return -1;
	/* Nearest rank, at least 1, as the report's own percentiles. */
	double rank = ceil(pct / 100.0 * total - 1e-9);
	if (rank < 1)
		rank = 1;
	double seen = 0;
	json_array_foreach(buckets, i, bucket) {
		seen += json_number_value(json_array_get(bucket, 2));
		if (seen >= rank) {
			double low = json_number_value(json_array_get(bucket, 0));
			double high = json_number_value(json_array_get(bucket, 1));
			return low + (high - low) / 2;
		}
	}
	return json_number_value(json_array_get(json_array_get(buckets, json_array_size(buckets) - 1), 1));
}

/* Is report one this diff can read? which names it (its file) in err when not. */
static int check_report(const json_t *report, const char *which, char *err, size_t err_len)
{
	static const struct {
		const char *key;
		json_type type;
	} needed[] = { { "duration_s", JSON_REAL },	 { "requests", JSON_INTEGER }, { "latency_us", JSON_OBJECT },
		       { "tail", JSON_OBJECT },	 { "conditions", JSON_OBJECT }, { "listeners", JSON_ARRAY } };
	if (!json_is_object(report)) {
		return cs_fail(err, err_len, "%s is not a JSON object", which);
	}
	/* Reports from before the field have none: schema 1 too. */
	const json_t *schema = json_object_get(report, "schema_version");
	if (schema && json_integer_value(schema) != CS_REPORT_SCHEMA_VERSION) {
		return cs_fail(err, err_len, "%s is a report of schema_version %lld; this connscope reads %d", which,
			(long long)json_integer_value(schema), CS_REPORT_SCHEMA_VERSION);
	}
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
		const json_t *value = json_object_get(report, needed[i].key);
		if (!value) {
			return cs_fail(err, err_len, "%s has no '%s': not a connscope report (connscope report --json)", which,
				needed[i].key);
		}
		/* A whole number of seconds may well be written as an integer. */
		bool number = needed[i].type == JSON_REAL || needed[i].type == JSON_INTEGER;
		if (number ? !json_is_number(value) : json_typeof(value) != needed[i].type) {
			return cs_fail(err, err_len, "%s: '%s' is not %s", which, needed[i].key,
				number ? "a number" : needed[i].type == JSON_OBJECT ? "an object" : "an array");
		}
	}
	return 0;
}

/* Percentile P of a report: from latency_us when printed there, else its buckets. */
static double extra_percentile_us(const json_t *report, double pct)
{
	double value = cs_diff_bucket_percentile_us(json_object_get(report, "latency_buckets_us"), pct);
	double max = number_at(report, "latency_us", "max");
	return value >= 0 && !isnan(max) && value > max ? max : value;
}

/* One tail cause of a report: its share of the tail's time and its time per tail request. */
static void cause_of(const json_t *report, const char *cause, double *share, double *per_request_us)
{
	const json_t *tail = json_object_get(report, "tail");
	double requests = number_at(report, "tail", "requests");
	size_t i;
	const json_t *c;
	*share = 0;
	*per_request_us = 0;
	json_array_foreach(json_object_get(tail, "causes"), i, c) {
		if (strcmp(json_string_value(json_object_get(c, "cause")) ?: "", cause) != 0)
			continue;
		*share = number_at(c, "share", NULL);
		*per_request_us = requests > 0 ? number_at(c, "time_us", NULL) / requests : 0;
	}
}

/* Every cause either tail names, in the order before's then after's. */
static json_t *cause_names(const json_t *before, const json_t *after)
{
	json_t *names = json_array();
	const json_t *reports[2] = { before, after };
	for (int r = 0; r < 2; r++) {
		size_t i, j;
		const json_t *c, *seen;
		json_array_foreach(json_object_get(json_object_get(reports[r], "tail"), "causes"), i, c) {
			const char *name = json_string_value(json_object_get(c, "cause"));
			bool known = !name;
			json_array_foreach(names, j, seen)
				known = known || !strcmp(json_string_value(seen), name);
			if (!known)
				json_array_append_new(names, json_string(name));
		}
	}
	return names;
}

static bool flagged(const json_t *report, const char *condition)
{
	const json_t *c = json_object_get(json_object_get(report, "conditions"), condition);
	return json_is_true(json_object_get(c, "flagged"));
}

static const json_t *listener_on(const json_t *report, json_int_t port)
{
	size_t i;
	const json_t *l;
	json_array_foreach(json_object_get(report, "listeners"), i, l)
		if (json_integer_value(json_object_get(l, "port")) == port)
			return l;
	return NULL;
}

/* ---- the comparison as JSON: built first, then printed as text or JSON */

static json_t *pair(double before, double after)
{
	json_t *p = json_object();
	json_object_set_new(p, "before", isnan(before) ? json_null() : json_real(before));
	json_object_set_new(p, "after", isnan(after) ? json_null() : json_real(after));
	if (!isnan(before) && !isnan(after) && before > 0)
		json_object_set_new(p, "change", json_real((after - before) / before));
	else
		json_object_set_new(p, "change", json_null());
	return p;
}

static json_t *run_summary(const json_t *report)
{
	json_t *run = json_object();
	const json_t *target = json_object_get(report, "target");
	json_object_set(run, "target", target ? (json_t *)target : json_null());
	json_object_set_new(run, "duration_s", json_real(number_at(report, "duration_s", NULL)));
	json_object_set_new(run, "requests", json_integer((json_int_t)number_at(report, "requests", NULL)));
	json_object_set_new(run, "tail_percentile", json_real(number_at(report, "tail", "percentile")));
	return run;
}

/* The printed percentiles, and the extra one in its place among them. */
static json_t *latency_diff(const json_t *before, const json_t *after, double extra_pct)
{
	json_t *latency = json_object();
	bool extra_done = extra_pct <= 0;
	for (size_t i = 0; i < LATENCY_ROWS; i++) {
		if (!extra_done && extra_pct <= latency_rows[i].percentile) {
			extra_done = true;
			if (extra_pct < latency_rows[i].percentile) {
				char key[32];
				snprintf(key, sizeof(key), "p%g", extra_pct);
				double b = extra_percentile_us(before, extra_pct), a = extra_percentile_us(after, extra_pct);
				json_object_set_new(latency, key, pair(b < 0 ? NAN : b, a < 0 ? NAN : a));
			}
		}
		json_object_set_new(latency, latency_rows[i].key,
				    pair(number_at(before, "latency_us", latency_rows[i].key),
					 number_at(after, "latency_us", latency_rows[i].key)));
	}
	return latency;
}

static json_t *causes_diff(const json_t *before, const json_t *after)
{
	json_t *names = cause_names(before, after), *causes = json_array();
	size_t i;
	const json_t *name;
	json_array_foreach(names, i, name) {
		double bs, bt, as, at;
		cause_of(before, json_string_value(name), &bs, &bt);
		cause_of(after, json_string_value(name), &as, &at);
		json_t *c = json_object();
		json_object_set(c, "cause", (json_t *)name);
		json_object_set_new(c, "share", pair(bs, as));
		json_object_set_new(c, "us_per_tail_request", pair(bt, at));
		json_array_append_new(causes, c);
	}
	json_decref(names);
	return causes;
}

static json_t *conditions_diff(const json_t *before, const json_t *after)
{
	json_t *out = json_object(), *appeared = json_array(), *gone = json_array(), *both = json_array();
	const char *key;
	const json_t *value;
	json_t *all = json_object();
	json_object_update(all, json_object_get(before, "conditions"));
	json_object_update(all, json_object_get(after, "conditions"));
	json_object_foreach(all, key, value) {
		(void)value;
		bool b = flagged(before, key), a = flagged(after, key);
		if (a && !b)
			json_array_append_new(appeared, json_string(key));
		else if (b && !a)
			json_array_append_new(gone, json_string(key));
		else if (a && b)
			json_array_append_new(both, json_string(key));
	}
	json_decref(all);
	json_object_set_new(out, "appeared", appeared);
	json_object_set_new(out, "went_away", gone);
	json_object_set_new(out, "flagged_in_both", both);
	return out;
}

/* A listener's figures, before and after, matched by port. */
static json_t *listener_diff(const json_t *b, const json_t *a, json_int_t port)
{
	static const struct {
		const char *key, *sub;
	} figures[] = { { "accepts_per_s", NULL }, { "accept_wait_us", "p99" }, { "drops", NULL },
			{ "backlog_max", NULL }, { "backlog_full_share", NULL } };
	json_t *l = json_object();
	json_object_set_new(l, "port", json_integer(port));
	for (size_t i = 0; i < sizeof(figures) / sizeof(figures[0]); i++) {
		char key[48];
		snprintf(key, sizeof(key), "%s%s%s", figures[i].key, figures[i].sub ? "_" : "",
			 figures[i].sub ? figures[i].sub : "");
		json_object_set_new(l, key,
				    pair(b ? number_at(b, figures[i].key, figures[i].sub) : NAN,
					 a ? number_at(a, figures[i].key, figures[i].sub) : NAN));
	}
	return l;
}

/* The one listener of a run that the other run has no listener on the port of. */
static const json_t *lone_unmatched(const json_t *report, const json_t *other)
{
	const json_t *found = NULL;
	size_t i, unmatched = 0;
	const json_t *l;
	json_array_foreach(json_object_get(report, "listeners"), i, l) {
		if (!listener_on(other, json_integer_value(json_object_get(l, "port")))) {
			found = l;
			unmatched++;
		}
	}
	return unmatched == 1 ? found : NULL;
}

/*
 * Listeners paired by port; when each run has one listener left unpaired
 * (the server moved to another port), those two are paired.
 */
static json_t *listeners_diff(const json_t *before, const json_t *after)
{
	json_t *out = json_array();
	const json_t *moved_from = lone_unmatched(before, after), *moved_to = lone_unmatched(after, before);
	bool moved = moved_from && moved_to;
	const json_t *reports[2] = { before, after };
	for (int r = 0; r < 2; r++) {
		size_t i;
		const json_t *l;
		json_array_foreach(json_object_get(reports[r], "listeners"), i, l) {
			json_int_t port = json_integer_value(json_object_get(l, "port"));
			if (r == 1 && (listener_on(before, port) || (moved && l == moved_to)))
				continue; /* already paired */
			const json_t *paired = listener_on(after, port);
			if (moved && l == moved_from)
				paired = moved_to;
			json_t *d = listener_diff(r == 0 ? l : NULL, r == 0 ? paired : l, port);
			if (paired && paired != listener_on(after, port))
				json_object_set_new(d, "port_after", json_integer(json_integer_value(json_object_get(paired, "port"))));
			json_array_append_new(out, d);
		}
	}
	return out;
}

static json_t *build_diff(const json_t *before, const json_t *after, double extra_pct)
{
	json_t *diff = json_object();
	json_object_set_new(diff, "schema_version", json_integer(CS_REPORT_SCHEMA_VERSION));
	json_object_set_new(diff, "before", run_summary(before));
	json_object_set_new(diff, "after", run_summary(after));
	json_object_set_new(diff, "latency_us", latency_diff(before, after, extra_pct));
	json_object_set_new(diff, "tail_causes", causes_diff(before, after));
	json_object_set_new(diff, "conditions", conditions_diff(before, after));
	json_object_set_new(diff, "listeners", listeners_diff(before, after));
	return diff;
}

/* ---- text */

static void put_duration_us(FILE *out, const json_t *value)
{
	char text[32] = "-";
	if (json_is_number(value))
		cs_format_duration(text, sizeof(text), (uint64_t)(json_number_value(value) * 1e3 + 0.5));
	fprintf(out, "%12s", text);
}

static void put_change(FILE *out, const json_t *p)
{
	const json_t *change = json_object_get(p, "change");
	if (json_is_number(change))
		fprintf(out, "  %+7.1f%%", 100.0 * json_number_value(change));
	fputc('\n', out);
}

static void text_latency(FILE *out, const json_t *latency)
{
	const char *key;
	const json_t *p;
	fprintf(out, "\nlatency            %12s %12s    change\n", "before", "after");
	json_object_foreach((json_t *)latency, key, p) {
		const char *label = key;
		for (size_t i = 0; i < LATENCY_ROWS; i++)
			if (!strcmp(latency_rows[i].key, key))
				label = latency_rows[i].label;
		fprintf(out, "  %-16s ", label);
		put_duration_us(out, json_object_get(p, "before"));
		fputc(' ', out);
		put_duration_us(out, json_object_get(p, "after"));
		put_change(out, p);
	}
}

static void text_causes(FILE *out, const json_t *diff)
{
	size_t i;
	const json_t *c;
	fprintf(out, "\ntail causes        share of the tail's time, and time per tail request\n");
	json_array_foreach(json_object_get(diff, "tail_causes"), i, c) {
		const json_t *share = json_object_get(c, "share"), *per = json_object_get(c, "us_per_tail_request");
		if (json_number_value(json_object_get(share, "before")) == 0 &&
		    json_number_value(json_object_get(share, "after")) == 0)
			continue; /* in neither tail */
		fprintf(out, "  %-16s %5.1f%% -> %5.1f%%  ", json_string_value(json_object_get(c, "cause")),
			100.0 * json_number_value(json_object_get(share, "before")),
			100.0 * json_number_value(json_object_get(share, "after")));
		put_duration_us(out, json_object_get(per, "before"));
		fputs(" ->", out);
		put_duration_us(out, json_object_get(per, "after"));
		fputc('\n', out);
	}
}

static void text_conditions(FILE *out, const json_t *conditions)
{
	static const struct {
		const char *key, *mark, *words;
	} kinds[] = { { "appeared", "+", "appeared" }, { "went_away", "-", "went away" },
		      { "flagged_in_both", "=", "flagged in both" } };
	fprintf(out, "\nconditions\n");
	bool any = false;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		size_t i;
		const json_t *name;
		json_array_foreach(json_object_get(conditions, kinds[k].key), i, name) {
			fprintf(out, "  %s %-22s %s\n", kinds[k].mark, json_string_value(name), kinds[k].words);
			any = true;
		}
	}
	if (!any)
		fprintf(out, "  none flagged in either run\n");
}

static void text_listeners(FILE *out, const json_t *listeners)
{
	size_t i;
	const json_t *l;
	json_array_foreach(listeners, i, l) {
		char name[32];
		const json_t *moved_to = json_object_get(l, "port_after");
		int n = snprintf(name, sizeof(name), ":%lld", (long long)json_integer_value(json_object_get(l, "port")));
		if (moved_to && n > 0)
			snprintf(name + n, sizeof(name) - (size_t)n, " -> :%lld", (long long)json_integer_value(moved_to));
		fprintf(out, "\nlistener %-17s %12s %12s    change\n", name, "before", "after");
		const json_t *wait = json_object_get(l, "accept_wait_us_p99");
		fprintf(out, "  %-16s ", "accept wait p99");
		put_duration_us(out, json_object_get(wait, "before"));
		fputc(' ', out);
		put_duration_us(out, json_object_get(wait, "after"));
		put_change(out, wait);
		static const char *const counts[] = { "accepts_per_s", "drops", "backlog_max" };
		for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
			const json_t *p = json_object_get(l, counts[c]);
			const json_t *b = json_object_get(p, "before"), *a = json_object_get(p, "after");
			fprintf(out, "  %-16s %12.1f %12.1f", counts[c], json_is_number(b) ? json_number_value(b) : 0.0,
				json_is_number(a) ? json_number_value(a) : 0.0);
			put_change(out, p);
		}
	}
}

static void text_diff(FILE *out, const json_t *diff)
{
	const json_t *b = json_object_get(diff, "before"), *a = json_object_get(diff, "after");
	fprintf(out, "connscope diff\n  before: %s, %.1f s, %.0f requests\n  after:  %s, %.1f s, %.0f requests\n",
		json_string_value(json_object_get(b, "target")) ?: "?", number_at(b, "duration_s", NULL),
		number_at(b, "requests", NULL), json_string_value(json_object_get(a, "target")) ?: "?",
		number_at(a, "duration_s", NULL), number_at(a, "requests", NULL));
	text_latency(out, json_object_get(diff, "latency_us"));
	text_causes(out, diff);
	text_conditions(out, json_object_get(diff, "conditions"));
	text_listeners(out, json_object_get(diff, "listeners"));
}

int cs_report_diff(FILE *out, const json_t *before, const json_t *after, const struct cs_diff_options *options,
		   char *err, size_t err_len)
{
	if (check_report(before, options->before_name ? options->before_name : "BEFORE", err, err_len) ||
	    check_report(after, options->after_name ? options->after_name : "AFTER", err, err_len))
		return -1;
	json_t *diff = build_diff(before, after, options->extra_percentile);
	if (!diff)
		return cs_fail(err, err_len, "out of memory");
	if (options->as_json) {
		if (cs_json_dump(out, diff) == 0)
			return 0;
		return cs_fail(err, err_len, "the comparison could not be written");
	}
	text_diff(out, diff);
	json_decref(diff);
	return 0;
}
