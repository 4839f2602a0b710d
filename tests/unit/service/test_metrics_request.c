// SPDX-License-Identifier: BSD-2-Clause
/* The metrics endpoint's request reading (daemon/service/metrics_request.c). */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "metrics_request.h"

#define MAX 8192

/*
 * Parse text placed at the very end of a page followed by an inaccessible
 * page (picohttpparser's trick): a read past the text's length crashes.
 */
static struct cs_metrics_request parse_len(const char *text, size_t len, size_t max_len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t pages = (len + page - 1) / page + 1;
	char *map = mmap(NULL, (pages + 1) * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(map, MAP_FAILED);
	cr_assert_eq(mprotect(map + pages * page, page, PROT_NONE), 0);
	char *buf = map + pages * page - len;
	memcpy(buf, text, len);
	struct cs_metrics_request req;
	cs_metrics_request_parse(buf, len, max_len, &req);
	munmap(map, (pages + 1) * page);
	return req;
}

static struct cs_metrics_request parse(const char *text)
{
	return parse_len(text, strlen(text), MAX);
}

static enum cs_metrics_verdict verdict(const char *text)
{
	return parse(text).verdict;
}

Test(metrics_request, a_prometheus_scrape_is_served_kept_alive_in_openmetrics)
{
	const char *scrape = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9464\r\nUser-Agent: Prometheus/2.42.0\r\n"
			     "Accept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
			     "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n"
			     "Accept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n";
	struct cs_metrics_request req = parse(scrape);
	cr_expect_eq(req.verdict, CS_MREQ_SERVE);
	cr_expect_eq(req.head_len, strlen(scrape));
	cr_expect(req.keep_alive);
	cr_expect_not(req.head_only);
	cr_expect_eq(req.format, CS_METRICS_OPENMETRICS);
}

Test(metrics_request, curl_gets_prometheus_text_and_http_1_0_closes)
{
	struct cs_metrics_request req = parse("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n");
	cr_expect_eq(req.verdict, CS_MREQ_SERVE);
	cr_expect_eq(req.format, CS_METRICS_PROMETHEUS);
	req = parse("GET /metrics HTTP/1.0\r\n\r\n");
	cr_expect_eq(req.verdict, CS_MREQ_SERVE);
	cr_expect_not(req.keep_alive);
	cr_expect(parse("GET /metrics HTTP/1.0\nConnection: Keep-Alive\n\n").keep_alive);
	cr_expect_not(parse("GET /metrics HTTP/1.1\r\nHost: a\r\nConnection: TE, close\r\n\r\n").keep_alive);
	cr_expect_eq(verdict("GET http://h:1/metrics HTTP/1.1\r\nHost: h:1\r\n\r\n"), CS_MREQ_SERVE);
}

Test(metrics_request, head_answers_without_a_body_and_a_body_ends_the_connection)
{
	cr_expect(parse("HEAD /metrics HTTP/1.1\r\nHost: a\r\n\r\n").head_only);
	struct cs_metrics_request req = parse("GET /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc");
	cr_expect_eq(req.verdict, CS_MREQ_SERVE);
	cr_expect_not(req.keep_alive);
}

Test(metrics_request, the_head_so_far_waits_for_more)
{
	const char *scrape = "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n";
	for (size_t len = 0; len < strlen(scrape); len++)
		cr_expect_eq(parse_len(scrape, len, MAX).verdict, CS_MREQ_MORE, "%zu bytes", len);
	cr_expect_eq(parse_len(scrape, strlen(scrape), MAX).verdict, CS_MREQ_SERVE);
}

Test(metrics_request, pipelined_requests_are_taken_one_head_at_a_time)
{
	const char *two = "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\nGET /metrics HTTP/1.1\r\nHost: a\r\n\r\n";
	struct cs_metrics_request req = parse(two);
	cr_expect_eq(req.verdict, CS_MREQ_SERVE);
	cr_expect_eq(req.head_len, strlen(two) / 2);
}

Test(metrics_request, another_method_is_405_and_another_path_404_when_the_line_ends)
{
	cr_expect_eq(verdict("POST /metrics HTTP/1.1\r\n"), CS_MREQ_NOT_ALLOWED);
	cr_expect_eq(verdict("DELETE / HTTP/1.1\r\n"), CS_MREQ_NOT_ALLOWED);
	cr_expect_eq(verdict("get /metrics HTTP/1.1\r\n"), CS_MREQ_NOT_ALLOWED); /* methods are case-sensitive */
	cr_expect_eq(verdict("GET / HTTP/1.1\r\n"), CS_MREQ_NOT_FOUND);
	cr_expect_eq(verdict("GET /metricsX HTTP/1.1\r\n"), CS_MREQ_NOT_FOUND);
	cr_expect_eq(verdict("GET /metrics/ HTTP/1.1\r\n"), CS_MREQ_NOT_FOUND);
	cr_expect_eq(verdict("GET http://h HTTP/1.1\r\n"), CS_MREQ_NOT_FOUND);
}

Test(metrics_request, malformed_is_400_at_the_first_byte_that_shows_it)
{
	cr_expect_eq(verdict("\x16\x03\x01"), CS_MREQ_BAD); /* a TLS hello */
	cr_expect_eq(verdict("GET\t/"), CS_MREQ_BAD);
	cr_expect_eq(verdict("GET  /metrics"), CS_MREQ_BAD);
	cr_expect_eq(verdict("GET /metrics HTTX"), CS_MREQ_BAD);
	cr_expect_eq(verdict("GET /metrics HTTP/2"), CS_MREQ_BAD);
	cr_expect_eq(verdict("GET /metrics HTTP/1.1 "), CS_MREQ_BAD);
	cr_expect_eq(verdict("GET /met\rrics"), CS_MREQ_BAD);
	cr_expect_eq(verdict("GET /metrics HTTP/1.1\r\n"), CS_MREQ_MORE);
	cr_expect_eq(verdict("GET /metrics HTTP/1.1\r\nHost: a\x01"), CS_MREQ_BAD);
	cr_expect_eq(verdict("GET /metrics HTTP/1.1\r\nHost: a\r\nNo colon\r\n"), CS_MREQ_BAD);
	cr_expect_eq(verdict("GET /metrics HTTP/1.1\r\nHost : a\r\n"), CS_MREQ_BAD);
	cr_expect_eq(verdict("GET /metrics HTTP/1.1\r\nHost: a\r\n folded\r\n"), CS_MREQ_BAD);
	cr_expect_eq(verdict("GET /metrics HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n"), CS_MREQ_BAD);
}

Test(metrics_request, http_1_1_without_exactly_one_host_is_400)
{
	cr_expect_eq(verdict("GET /metrics HTTP/1.1\r\n\r\n"), CS_MREQ_BAD);
	cr_expect_eq(verdict("GET /metrics HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n"), CS_MREQ_BAD);
}

Test(metrics_request, a_head_over_the_limit_is_431_when_the_limit_is_reached)
{
	char big[MAX + 16];
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /metrics?", 13);
	cr_expect_eq(parse_len(big, MAX - 1, MAX).verdict, CS_MREQ_MORE);
	cr_expect_eq(parse_len(big, MAX, MAX).verdict, CS_MREQ_TOO_LARGE);
	size_t len = (size_t)snprintf(big, sizeof(big), "GET /metrics HTTP/1.1\r\nHost: a\r\nX: ");
	memset(big + len, 'b', sizeof(big) - len);
	cr_expect_eq(parse_len(big, MAX, MAX).verdict, CS_MREQ_TOO_LARGE);
	/* Empty lines before the request line count toward it. */
	memset(big, '\n', sizeof(big));
	cr_expect_eq(parse_len(big, MAX, MAX).verdict, CS_MREQ_TOO_LARGE);
}

Test(metrics_request, each_refusal_has_its_status_line)
{
	cr_expect_str_eq(cs_metrics_verdict_status(CS_MREQ_BAD), "400 Bad Request");
	cr_expect_str_eq(cs_metrics_verdict_status(CS_MREQ_NOT_FOUND), "404 Not Found");
	cr_expect_str_eq(cs_metrics_verdict_status(CS_MREQ_NOT_ALLOWED), "405 Method Not Allowed");
	cr_expect_str_eq(cs_metrics_verdict_status(CS_MREQ_TOO_LARGE), "431 Request Header Fields Too Large");
	cr_expect_null(cs_metrics_verdict_status(CS_MREQ_SERVE));
	cr_expect_null(cs_metrics_verdict_status(CS_MREQ_MORE));
}
