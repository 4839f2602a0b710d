// SPDX-License-Identifier: BSD-2-Clause
/* Prometheus exposition and the --metrics address parser. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "metrics.h"

static char *render(struct cs_engine *engine, const char *target)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	struct cs_report_meta meta = { .target = target, .duration_s = 1.0, .events_lost = 7,
				       .probe_runs_skipped = 9 };
	cs_metrics_render(out, engine, &meta, target);
	fclose(out);
	return text;
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
