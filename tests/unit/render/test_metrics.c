// SPDX-License-Identifier: BSD-2-Clause
/* Prometheus exposition and the --metrics address parser. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "metrics.h"
#include "metrics_internal.h"
#include "version.h"

/* The run began at this wall-clock time, when the monotonic clock read MONO0. */
#define UNIX0 1764590000000000000ll
#define MONO0 (50 * SEC)

static char *render_as(struct cs_engine *engine, const char *target, enum cs_metrics_format format)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	struct cs_report_meta meta = { .target = target, .duration_s = 1.0, .events_lost = 7,
				       .probe_runs_skipped = 9,
				       .stamp = { .start_unix_ns = UNIX0, .start_mono_ns = MONO0 } };
	cs_metrics_render(out, engine, &meta, target, format);
	fclose(out);
	return text;
}

static char *render(struct cs_engine *engine, const char *target)
{
	return render_as(engine, target, CS_METRICS_PROMETHEUS);
}

/* The value of the series line that starts with prefix, or -1. */
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

Test(metrics, histogram_buckets_are_cumulative_and_end_in_count)
{
	struct cs_engine *engine = cs_engine_new();
	/* Three accepts waiting 50 us, 2 ms and 3 s. */
	uint64_t waits_ns[] = { 50000, 2000000, 3000000000ull };
	for (int i = 0; i < 3; i++) {
		feed_accept(engine, (struct accept_spec){
			.port = 8080, .tid = 1, .ts_ns = 10000000000ull + (uint64_t)i * 1000,
			.established_ns = 10000000000ull + (uint64_t)i * 1000 - waits_ns[i] });
	}
	char *text = render(engine, "web");
	const char *b = "connscope_accept_wait_seconds_bucket{target=\"web\",port=\"8080\",le=";
	char key[200];
	snprintf(key, sizeof(key), "%s\"0.0001\"}", b);
	cr_expect_eq(series(text, key), 1);
	snprintf(key, sizeof(key), "%s\"0.0025\"}", b);
	cr_expect_eq(series(text, key), 2);
	snprintf(key, sizeof(key), "%s\"10\"}", b);
	cr_expect_eq(series(text, key), 3);
	snprintf(key, sizeof(key), "%s\"+Inf\"}", b);
	cr_expect_eq(series(text, key), 3);
	cr_expect_float_eq(series(text, "connscope_accept_wait_seconds_sum{target=\"web\",port=\"8080\"}"),
			   3.00205, 1e-4);
	cr_expect_eq(series(text, "connscope_accepts_total{target=\"web\",port=\"8080\"}"), 3);
	cr_expect_eq(series(text, "connscope_events_lost_total{target=\"web\"}"), 7);
	cr_expect_eq(series(text, "connscope_probe_runs_skipped_total{target=\"web\"}"), 9);
	cr_expect(strstr(text, "# TYPE connscope_accept_wait_seconds histogram\n") != NULL);
	cr_expect(strstr(text, "# TYPE connscope_accepts_total counter\n") != NULL);
	free(text);
	cs_engine_free(engine);
}

Test(metrics, label_values_are_escaped)
{
	struct cs_engine *engine = cs_engine_new();
	char *text = render(engine, "a\"b\\c\nd");
	cr_expect(strstr(text, "{target=\"a\\\"b\\\\c\\nd\"}") != NULL, "%s", text);
	free(text);
	cs_engine_free(engine);
}

Test(metrics, every_counter_name_ends_in_total)
{
	struct cs_engine *engine = cs_engine_new();
	char *text = render(engine, "t");
	for (const char *line = strstr(text, "# TYPE "); line; line = strstr(line + 1, "# TYPE ")) {
		char name[128], type[32];
		cr_assert_eq(sscanf(line, "# TYPE %127s %31s", name, type), 2);
		if (!strcmp(type, "counter"))
			cr_expect(strlen(name) > 6 && !strcmp(name + strlen(name) - 6, "_total"), "%s", name);
		if (!strcmp(type, "histogram"))
			cr_expect(strstr(name, "_seconds") != NULL, "%s is not in seconds", name);
	}
	free(text);
	cs_engine_free(engine);
}

Test(metrics, listen_addresses)
{
	struct sockaddr_storage addr;
	unsigned int len;
	cr_assert_eq(cs_parse_listen_address("9464", &addr, &len), 0);
	struct sockaddr_in *in4 = (struct sockaddr_in *)&addr;
	cr_expect_eq(in4->sin_family, AF_INET);
	cr_expect_eq(ntohs(in4->sin_port), 9464);
	cr_expect_eq(in4->sin_addr.s_addr, htonl(INADDR_LOOPBACK), "a bare port must mean loopback");
	cr_assert_eq(cs_parse_listen_address("0.0.0.0:80", &addr, &len), 0);
	cr_expect_eq(in4->sin_addr.s_addr, htonl(INADDR_ANY));
	cr_assert_eq(cs_parse_listen_address("[::1]:9464", &addr, &len), 0);
	cr_expect_eq(addr.ss_family, AF_INET6);
	cr_expect_eq(len, sizeof(struct sockaddr_in6));
	const char *bad[] = { "", ":", "x:1", "1.2.3.4:0", "1.2.3.4:65536", "[::1]9464", "[::1", "80a",
			      "999.1.1.1:80", "host.example:80" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(cs_parse_listen_address(bad[i], &addr, &len), -EINVAL, "'%s' accepted", bad[i]);
}

/* ---- OpenMetrics ---------------------------------------------------------- */

#define PORT 8080

/* A connection accepted on port by tid, then a request on it (index 2: no set-up) of handler_ns, ending at end_ns. */
static void feed_served(struct cs_engine *engine, uint16_t port, uint32_t tid, uint64_t sk, uint64_t end_ns,
			uint64_t handler_ns)
{
	FEED_OK(engine, make_accept_of((struct accept_spec){ .port = port, .tgid = 100, .tid = tid,
							     .established_ns = end_ns - handler_ns - 2 * MS,
							     .ts_ns = end_ns - handler_ns - MS, .backlog_limit = 128 },
				       sk, 0x0a000002u, (uint16_t)(40000 + sk % 1000)));
	feed_request(engine, (struct request_spec){ .sk = sk, .port = port, .index = 2, .reader_tid = tid,
						    .start_ns = end_ns - handler_ns, .first_read_ns = end_ns - handler_ns,
						    .first_send_ns = end_ns, .last_send_ns = end_ns,
						    .drain_end_ns = end_ns });
}

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Each sample line ("name{labels} value"), the exemplar cut off, sorted: what both formats must agree on. */
static char *samples_of(const char *text)
{
	char *copy = strdup(text), *result = calloc(1, strlen(text) + 1);
	char *lines[4096];
	size_t n = 0;
	for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		char *exemplar = strstr(line, " # {");
		if (exemplar)
			*exemplar = '\0';
		cr_assert_lt(n, 4096);
		lines[n++] = line;
	}
	qsort(lines, n, sizeof(lines[0]), compare_strings);
	for (size_t i = 0; i < n; i++)
		strcat(strcat(result, lines[i]), "\n");
	free(copy);
	return result;
}

Test(openmetrics, same_samples_as_prometheus_text_and_ends_in_eof)
{
	struct cs_engine *engine = cs_engine_new();
	for (uint64_t i = 0; i < 20; i++)
		feed_served(engine, PORT, 7 + (uint32_t)(i % 3), 0xffff888100000000ull + i, 100 * SEC + i * MS,
			    (i + 1) * MS);
	char *prom = render(engine, "web");
	char *om = render_as(engine, "web", CS_METRICS_OPENMETRICS);
	size_t om_len = strlen(om);
	cr_expect(om_len > 6 && !strcmp(om + om_len - 6, "# EOF\n"), "no # EOF at the end");
	cr_expect_null(strstr(prom, "# EOF"));
	cr_expect_null(strstr(prom, " # {"), "exemplars in the Prometheus text format");
	cr_expect_not_null(strstr(om, " # {"), "no exemplar in OpenMetrics");
	/* Counters: the family drops _total, its samples keep it. */
	cr_expect_not_null(strstr(om, "# TYPE connscope_requests counter\n"));
	cr_expect_not_null(strstr(om, "# HELP connscope_requests Requests"));
	cr_expect_not_null(strstr(om, "\nconnscope_requests_total{target=\"web\",port=\"8080\"} 20\n"));
	cr_expect_not_null(strstr(prom, "# TYPE connscope_requests_total counter\n"));
	cr_expect_not_null(strstr(om, "# UNIT connscope_request_duration_seconds seconds\n"));
	cr_expect_null(strstr(prom, "# UNIT"));
	char *prom_samples = samples_of(prom), *om_samples = samples_of(om);
	cr_expect_str_eq(om_samples, prom_samples);
	free(prom_samples);
	free(om_samples);
	free(prom);
	free(om);
	cs_engine_free(engine);
}

/* The exemplar on a bucket line (the line starting with key), or NULL. */
static const char *exemplar_on(const char *text, const char *key)
{
	const char *line = strstr(text, key);
	if (!line)
		return NULL;
	const char *end = strchr(line, '\n');
	const char *ex = strstr(line, " # {");
	return ex && ex < end ? ex : NULL;
}

Test(openmetrics, exemplar_is_the_latest_request_of_its_bucket_with_wall_clock_time)
{
	struct cs_engine *engine = cs_engine_new();
	/* Two requests in the 25..50 ms bucket, the later one by tid 12; one of 300 ms. */
	feed_served(engine, PORT, 11, 0xffff888100000001ull, 100 * SEC, 30 * MS);
	feed_served(engine, PORT, 12, 0xffff888100000002ull, 101 * SEC + 500 * MS, 40 * MS);
	feed_served(engine, PORT, 13, 0xffff888100000003ull, 99 * SEC, 300 * MS);
	char *om = render_as(engine, "web", CS_METRICS_OPENMETRICS);
	const char *b = "connscope_request_duration_seconds_bucket{target=\"web\",port=\"8080\",le=";
	char key[200];
	snprintf(key, sizeof(key), "%s\"0.05\"} 2", b);
	const char *ex = exemplar_on(om, key);
	cr_assert_not_null(ex, "%s", om);
	/* 101.5 s monotonic is 51.5 s after the stamp's MONO0: UNIX0 + 51.5 s. */
	cr_expect(!strncmp(ex, " # {top_cause=\"handler\",tid=\"12\",port=\"8080\",request=\"2\",peer_port=\"40682\"} 0.040000000 "
			   "1764590051.500\n", 78), "%.120s", ex);
	snprintf(key, sizeof(key), "%s\"0.5\"} 3", b);
	ex = exemplar_on(om, key);
	cr_assert_not_null(ex);
	cr_expect_not_null(strstr(ex, "tid=\"13\""));
	cr_expect_not_null(strstr(ex, "} 0.300000000 1764590049.000\n"));
	snprintf(key, sizeof(key), "%s\"0.01\"} 0", b);
	cr_expect_null(exemplar_on(om, key), "an exemplar on an empty bucket");
	/* The handler cause's histogram shows the same request, by its handler time. */
	ex = exemplar_on(om, "connscope_request_cause_seconds_bucket{target=\"web\",cause=\"handler\",le=\"0.05\"}");
	cr_assert_not_null(ex);
	cr_expect_not_null(strstr(ex, "tid=\"12\""));
	/* No run queue time in any request: no exemplar on that cause. */
	const char *runq = strstr(om, "cause=\"run_queue\"");
	const char *next = strstr(om, "cause=\"event_loop\"");
	cr_assert(runq && next);
	const char *first_ex = strstr(runq, " # {");
	cr_expect(!first_ex || first_ex > next, "an exemplar on run_queue: %.200s", first_ex);
	free(om);
	cs_engine_free(engine);
}

Test(openmetrics, exemplar_labels_stay_under_128_characters)
{
	struct cs_exemplar ex = { .reader_tid = UINT32_MAX, .port = UINT16_MAX, .index = UINT32_MAX,
				  .peer_family = 10, .peer_port = UINT16_MAX };
	ex.split.cause_ns[CS_CAUSE_LISTEN_OVERFLOW] = 1; /* the longest cause name */
	char labels[256];
	size_t len = cs_mx_exemplar_labels(labels, sizeof(labels), &ex);
	cr_assert_gt(len, 0);
	/* The limit counts label names and values, not the quotes, = and commas. */
	size_t chars = 0;
	for (const char *c = labels; *c; c++)
		chars += *c != '"' && *c != '=' && *c != ',';
	cr_expect_leq(chars, 128, "%s", labels);
	cr_expect_not_null(strstr(labels, "top_cause=\"listen_overflow\""));
	cr_expect_not_null(strstr(labels, "peer_port=\"65535\""), "%s", labels);
}

Test(openmetrics, negotiated_from_the_accept_header)
{
	/* What Prometheus 2.42 sends. */
	cr_expect_eq(cs_metrics_negotiate("GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text;"
					  "version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
					  "text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n\r\n"),
		     CS_METRICS_OPENMETRICS);
	cr_expect_eq(cs_metrics_negotiate("GET /metrics HTTP/1.1\r\naccept:  text/plain, Application/OpenMetrics-Text"
					  "\r\n\r\n"),
		     CS_METRICS_OPENMETRICS);
	cr_expect_eq(cs_metrics_negotiate("GET /metrics HTTP/1.1\r\nAccept: */*\r\n\r\n"), CS_METRICS_PROMETHEUS);
	cr_expect_eq(cs_metrics_negotiate("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), CS_METRICS_PROMETHEUS);
	cr_expect_eq(cs_metrics_negotiate("GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text; q=0, "
					  "text/plain\r\n\r\n"),
		     CS_METRICS_PROMETHEUS);
	cr_expect_eq(cs_metrics_negotiate("GET /metrics HTTP/1.1\r\nX-Accept: application/openmetrics-text\r\n\r\n"),
		     CS_METRICS_PROMETHEUS);
}

/* ---- the gauges ----------------------------------------------------------- */

Test(metrics, threads_are_the_busiest_few_and_the_rest_is_bounded)
{
	struct cs_engine *engine = cs_engine_new();
	/* tid 100 + t reads t + 1 requests: the top ones are tids 111..104. */
	uint64_t sk = 0xffff888200000000ull;
	for (uint32_t t = 0; t < 12; t++)
		for (uint32_t r = 0; r <= t; r++, sk++)
			feed_served(engine, PORT, 100 + t, sk, 100 * SEC + (sk & 0xffff) * MS, MS);
	char *text = render(engine, "web");
	size_t series = 0;
	for (const char *p = strstr(text, "\nconnscope_thread_busy_ratio{"); p;
	     p = strstr(p + 1, "\nconnscope_thread_busy_ratio{"))
		series++;
	cr_expect_eq(series, CS_METRICS_THREADS);
	char key[128];
	for (uint32_t t = 0; t < 12; t++) {
		snprintf(key, sizeof(key), "connscope_thread_run_queue_p99_seconds{target=\"web\",tid=\"%u\",", 100 + t);
		bool top = t >= 12 - CS_METRICS_THREADS;
		cr_expect_eq(strstr(text, key) != NULL, top, "tid %u %s", 100 + t, top ? "missing" : "shown");
	}
	free(text);
	cs_engine_free(engine);
}

Test(metrics, backlog_depth_build_info_and_listener_info)
{
	struct cs_engine *engine = cs_engine_new();
	feed_accept(engine, (struct accept_spec){ .port = PORT, .tid = 5, .ts_ns = 10 * SEC,
						  .established_ns = 10 * SEC - 1000, .comm = "nginx" });
	/* Two sockets of the port (SO_REUSEPORT): the depth is theirs together, the latest sample. */
	feed_sample(engine, (struct sample_spec){ .ts_ns = 11 * SEC, .port = PORT, .backlog = 9, .backlog_limit = 511 });
	feed_sample(engine, (struct sample_spec){ .ts_ns = 12 * SEC, .port = PORT, .backlog = 4, .backlog_limit = 511 });
	feed_sample(engine, (struct sample_spec){ .ts_ns = 12 * SEC, .sk = 0xffff888000abcdefull, .port = PORT,
						  .backlog = 3, .backlog_limit = 511 });
	char *text = render(engine, "web");
	cr_expect_eq(series(text, "connscope_backlog_depth{target=\"web\",port=\"8080\"}"), 7);
	cr_expect_not_null(strstr(text, "connscope_listener_info{target=\"web\",port=\"8080\",comm=\"nginx\"} 1\n"));
	char build[128];
	snprintf(build, sizeof(build), "connscope_build_info{target=\"web\",version=\"%s\",wire=\"%d\"} 1\n", CS_VERSION,
		 CS_WIRE_VERSION);
	cr_expect_not_null(strstr(text, build), "%s", text);
	cr_expect_eq(series(text, "connscope_condition{target=\"web\",condition=\"pool_saturation\"}"), 0);
	free(text);
	cs_engine_free(engine);
}

/* The pool's series say its kind: no accept pool here, so the hand-off pool (of none). */
Test(metrics, pool_series_carry_the_pools_kind)
{
	struct cs_engine *engine = cs_engine_new();
	feed_accept(engine, (struct accept_spec){ .port = PORT, .tid = 5, .ts_ns = 10 * SEC,
						  .established_ns = 10 * SEC - 1000, .comm = "apache2" });
	char *text = render(engine, "web");
	cr_expect_not_null(strstr(text, "connscope_pool_threads{target=\"web\",kind=\"handoff\"} 0\n"), "%s", text);
	cr_expect_not_null(strstr(text, "connscope_pool_busy_ratio{target=\"web\",kind=\"handoff\"} "), "%s", text);
	free(text);
	cs_engine_free(engine);
}
