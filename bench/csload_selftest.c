// SPDX-License-Identifier: BSD-2-Clause
/*
 * `csload --self-test`: checks of the pure modules (response parser,
 * target and option parsing, timer heap, statistics) that need no network.
 * Parser input sits at the end of a page followed by a PROT_NONE page, as in
 * picohttpparser's tests, so any over-read crashes instead of passing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "csload.h"
#include "csload_http.h"
#include "csload_opts.h"
#include "csload_stats.h"
#include "csload_timer.h"

int csl_self_test(FILE *out);

static int failures;
static int checks;

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		checks++;                                                 \
		if (!(cond)) {                                            \
			failures++;                                       \
			fprintf(out, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(out, __VA_ARGS__);                        \
			fprintf(out, "\n");                               \
		}                                                         \
	} while (0)

static char *guard_page;
static size_t page_size;

/* A copy of [s, s+len) that ends exactly where readable memory ends. */
static const char *at_page_end(const char *s, size_t len)
{
	char *p = guard_page + page_size - len;
	memcpy(p, s, len);
	return p;
}

struct outcome {
	int result; /* 1 complete, 0 incomplete, -1 bad */
	int status;
	bool close;
	uint64_t body;
	size_t extra; /* bytes after the complete response */
};

/*
 * Feeds `resp` the way csload_events.c does: split at `split` into two reads,
 * unconsumed bytes carried over, then EOF if `eof`.
 */
static struct outcome run_parser(const char *resp, size_t split, bool eof)
{
	struct csl_http_resp r;
	struct outcome o = { 0 };
	char carry[4096];
	size_t carry_len = 0, len = strlen(resp);
	size_t cuts[2] = { split, len - split };
	const char *src = resp;

	csl_http_resp_init(&r);
	for (int i = 0; i < 2; i++) {
		char joined[4096];
		/* carry_len is 0 until carry is written: nothing is read before */
		// cppcheck-suppress legacyUninitvar
		memcpy(joined, carry, carry_len);
		memcpy(joined + carry_len, src, cuts[i]);
		src += cuts[i];
		size_t n = carry_len + cuts[i];
		if (n == 0)
			continue;
		const char *p = at_page_end(joined, n);
		ssize_t used = csl_http_resp_feed(&r, p, n);
		if (used < 0) {
			o.result = -1;
			return o;
		}
		if (r.state == CSL_HTTP_DONE) {
			o.result = 1;
			o.extra = n - (size_t)used + (i == 0 ? cuts[1] : 0);
			goto done;
		}
		carry_len = n - (size_t)used;
		memcpy(carry, joined + used, carry_len);
	}
	if (eof && carry_len == 0 && csl_http_resp_eof(&r))
		o.result = 1;
done:
	o.status = r.status;
	o.close = r.close;
	o.body = r.body_bytes;
	return o;
}

/* Every split point gives the same outcome. */
static void parse_case(FILE *out, const char *name, const char *resp, bool eof, int result,
		       int status, bool close, uint64_t body, size_t extra)
{
	size_t len = strlen(resp);
	for (size_t split = 0; split <= len; split++) {
		struct outcome o = run_parser(resp, split, eof);
		CHECK(o.result == result, "%s split %zu: result %d, want %d", name, split, o.result,
		      result);
		if (result != 1 || o.result != 1)
			continue;
		CHECK(o.status == status, "%s split %zu: status %d, want %d", name, split, o.status,
		      status);
		CHECK(o.close == close, "%s split %zu: close %d, want %d", name, split, o.close, close);
		CHECK(o.body == body, "%s split %zu: body %llu, want %llu", name, split,
		      (unsigned long long)o.body, (unsigned long long)body);
		CHECK(o.extra == extra, "%s split %zu: extra %zu, want %zu", name, split, o.extra,
		      extra);
	}
}

static void test_http(FILE *out)
{
	parse_case(out, "length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false, 1,
		   200, false, 5, 0);
	parse_case(out, "zero length", "HTTP/1.1 204 No Content\r\nServer: x\r\n\r\n", false, 1,
		   204, false, 0, 0);
	parse_case(out, "bare LF", "HTTP/1.1 200 OK\nContent-Length: 2\n\nhi", false, 1, 200,
		   false, 2, 0);
	parse_case(out, "close header",
		   "HTTP/1.1 503 Busy\r\nconnection: Keep-Alive, Close\r\ncontent-length: 0\r\n\r\n",
		   false, 1, 503, true, 0, 0);
	parse_case(out, "http/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", false, 1, 200,
		   true, 1, 0);
	parse_case(out, "http/1.0 keep-alive",
		   "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx", false,
		   1, 200, false, 1, 0);
	parse_case(out, "chunked",
		   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		   "5\r\nhello\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-T: 1\r\n\r\n",
		   false, 1, 200, false, 31, 0);
	parse_case(out, "chunked over length",
		   "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
		   "2\r\nab\r\n0\r\n\r\n",
		   false, 1, 200, false, 2, 0);
	parse_case(out, "until close", "HTTP/1.1 200 OK\r\nServer: x\r\n\r\nabc", true, 1, 200, true,
		   3, 0);
	parse_case(out, "until close, no eof", "HTTP/1.1 200 OK\r\n\r\nabc", false, 0, 0, false, 0,
		   0);
	parse_case(out, "interim 100",
		   "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
		   false, 1, 201, false, 0, 0);
	parse_case(out, "extra bytes", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxyz", false, 1,
		   200, false, 1, 2);
	parse_case(out, "truncated body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", true,
		   0, 0, false, 0, 0);
	parse_case(out, "bad status", "HTTP/1.1 2x0 OK\r\n\r\n", false, -1, 0, false, 0, 0);
	parse_case(out, "not http", "SSH-2.0-OpenSSH\r\n\r\n", false, -1, 0, false, 0, 0);
	parse_case(out, "conflicting length",
		   "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", false, -1,
		   0, false, 0, 0);
	parse_case(out, "bad length", "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\nab", false, -1,
		   0, false, 0, 0);
	parse_case(out, "bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		   false, -1, 0, false, 0, 0);
	parse_case(out, "chunk without crlf",
		   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n", false,
		   -1, 0, false, 0, 0);
	parse_case(out, "space before colon", "HTTP/1.1 200 OK\r\nContent-Length : 1\r\n\r\nx",
		   false, -1, 0, false, 0, 0);

	/* A head that never ends is bad once it reaches the limit. */
	struct csl_http_resp r;
	size_t n = CSL_HTTP_MAX_HEADER;
	char *big = malloc(n);
	if (big) {
		memset(big, 'a', n);
		memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
		csl_http_resp_init(&r);
		CHECK(csl_http_resp_feed(&r, big, n) == -1, "oversized head accepted");
		csl_http_resp_init(&r);
		CHECK(csl_http_resp_feed(&r, big, n - 1) == 0, "a head below the limit must wait");
		free(big);
	}

	char req[512];
	int len = csl_http_request(req, sizeof(req), "/bytes/10", "127.0.0.1:80", false);
	CHECK(len > 0 && strcmp(req, "GET /bytes/10 HTTP/1.1\r\nHost: 127.0.0.1:80\r\n"
				     "User-Agent: csload/1\r\nAccept: */*\r\n"
				     "Connection: close\r\n\r\n") == 0,
	      "request text: %s", req);
	CHECK(csl_http_request(req, 20, "/", "h", true) == -1, "overlong request accepted");
}

static void test_target(FILE *out)
{
	static const struct {
		const char *host;
		bool ok;
	} cases[] = {
		{ "127.0.0.1", true },
		{ "127.255.3.4", true },
		{ "localhost", true },
		{ "::1", true },
		{ "::ffff:127.0.0.9", true },
		{ "10.0.0.1", false },
		{ "128.0.0.1", false },
		{ "0.0.0.0", false },
		{ "192.0.2.1", false },
		{ "::2", false },
		{ "::", false },
		{ "::ffff:10.0.0.1", false },
		{ "fe80::1", false },
		{ "example.com", false },
		{ "126.0.0.1", false },
		{ "", false },
		{ "127.0.0.1 ", false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_storage a;
		socklen_t alen;
		char err[256];
		int rc = csl_target_parse(cases[i].host, 80, &a, &alen, err, sizeof(err));
		CHECK((rc == 0) == cases[i].ok, "target '%s': %s", cases[i].host,
		      rc == 0 ? "accepted" : err);
	}

	struct csl_path p;
	char err[256];
	CHECK(csl_mix_parse("/block/50:0.02", &p, err, sizeof(err)) == 0 &&
		      strcmp(p.path, "/block/50") == 0 && p.fraction == 0.02,
	      "mix /block/50:0.02");
	CHECK(csl_mix_parse("/a:b:0.5", &p, err, sizeof(err)) == 0 && strcmp(p.path, "/a:b") == 0,
	      "mix splits at the last colon");
	CHECK(csl_mix_parse("/x:1.5", &p, err, sizeof(err)) < 0, "mix fraction > 1 accepted");
	CHECK(csl_mix_parse("/x:0", &p, err, sizeof(err)) < 0, "mix fraction 0 accepted");
	CHECK(csl_mix_parse("x:0.1", &p, err, sizeof(err)) < 0, "mix path without / accepted");
	CHECK(csl_mix_parse("/x", &p, err, sizeof(err)) < 0, "mix without fraction accepted");
	CHECK(!csl_path_valid("/a b") && !csl_path_valid("") && csl_path_valid("/a?b=1"),
	      "path validation");
}

static void test_options(FILE *out)
{
	struct csl_config cfg;
	FILE *null = fopen("/dev/null", "w");
	if (!null) {
		CHECK(0, "cannot open /dev/null");
		return;
	}
	char *ok[] = { "csload", "-p", "8080", "-c", "4", "-t", "2", "-R", "100", "--mix",
		       "/a:0.25", "--mix", "/b:0.25", NULL };
	CHECK(csl_opts_parse(13, ok, &cfg, null, null) == CSL_OPTS_RUN && cfg.port == 8080 &&
		      cfg.connections == 4 && cfg.threads == 2 && cfg.rate == 100 &&
		      cfg.npaths == 3 && cfg.paths[0].fraction == 0.5 &&
		      cfg.time_limit_s == CSL_DEFAULT_DURATION_S,
	      "valid options");
	char *n_only[] = { "csload", "-p", "1", "-n", "5", NULL };
	CHECK(csl_opts_parse(5, n_only, &cfg, null, null) == CSL_OPTS_RUN &&
		      cfg.time_limit_s == CSL_HARD_CAP_S && cfg.duration_s == 0,
	      "--requests alone is still cut at the hard cap");
	char *tls[] = { "csload", "-p", "1", "--tls", NULL };
	CHECK(csl_opts_parse(4, tls, &cfg, null, null) == CSL_OPTS_RUN && cfg.tls &&
		      cfg.tls_version == 0,
	      "--tls negotiates its version");
	char *tls13[] = { "csload", "-p", "1", "--tls-version", "1.3", NULL };
	CHECK(csl_opts_parse(5, tls13, &cfg, null, null) == CSL_OPTS_RUN && cfg.tls &&
		      cfg.tls_version == 13,
	      "--tls-version 1.3 implies --tls");
	char *bad[][8] = {
		{ "csload", "-p", "1", "-H", "10.1.2.3", NULL },
		{ "csload", "-p", "0", NULL },
		{ "csload", "-p", "1", "-c", "1x", NULL },
		{ "csload", "-p", "1", "-c", "2", "-t", "3", NULL }, /* threads > connections */
		{ "csload", "-c", "2", NULL },                       /* no port */
		{ "csload", "-p", "1", "--mix", "/a:0.7", NULL },
		{ "csload", "-p", "1", "-d", "-1", NULL },
		{ "csload", "-p", "1", "--bogus", NULL },
		{ "csload", "-p", "1", "stray", NULL },
		{ "csload", "-p", "1", "--tls-version", "1.1", NULL },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int argc = 0;
		while (bad[i][argc])
			argc++;
		/* the --mix case: two entries summing above 1 */
		if (i == 5) {
			char *two[] = { "csload", "-p", "1", "--mix", "/a:0.7", "--mix", "/b:0.7", NULL };
			CHECK(csl_opts_parse(7, two, &cfg, null, null) == CSL_OPTS_USAGE,
			      "mix sum > 1 accepted");
			continue;
		}
		CHECK(csl_opts_parse(argc, bad[i], &cfg, null, null) == CSL_OPTS_USAGE,
		      "bad options case %zu accepted", i);
	}
	fclose(null);
}

static void test_timers(FILE *out)
{
	struct csl_timers t;
	if (csl_timers_init(&t, 64) < 0) {
		CHECK(0, "timers: out of memory");
		return;
	}
	uint64_t x = 12345;
	for (unsigned int round = 0; round < 2000; round++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		unsigned int id = (unsigned int)(x >> 33) % 64;
		if ((x >> 20) % 3 == 0)
			csl_timers_cancel(&t, id);
		else
			csl_timers_set(&t, id, (x >> 40) % 1000);
		/* The heap's top is the smallest armed deadline. */
		uint64_t best = UINT64_MAX;
		for (unsigned int i = 0; i < 64; i++)
			if (csl_timers_armed(&t, i) && t.when[i] < best)
				best = t.when[i];
		unsigned int top;
		uint64_t when;
		bool any = csl_timers_peek(&t, &top, &when);
		CHECK(any == (best != UINT64_MAX) && (!any || when == best),
		      "timers round %u: top %llu, want %llu", round, (unsigned long long)when,
		      (unsigned long long)best);
	}
	csl_timers_free(&t);
}

static void test_stats(FILE *out)
{
	struct csl_stats a, b;
	if (csl_stats_init(&a, 2) < 0 || csl_stats_init(&b, 2) < 0) {
		CHECK(0, "stats: out of memory");
		return;
	}
	for (uint64_t i = 1; i <= 1000; i++) {
		csl_stats_response(i % 2 ? &a : &b, i % 2, i * 1000, i == 7 ? 500 : 200);
		/* began 100 us before the send: a connect */
		csl_stats_service(i % 2 ? &a : &b, i * 1000 + 100000, i * 1000);
	}
	csl_stats_error(&a, 1, CSL_ERR_EOF_BEFORE);
	csl_stats_connect(&b, 1500000000ull);
	csl_stats_connect(&b, 50000);
	csl_stats_handshake(&a, 1000000, 2);
	csl_stats_handshake(&b, 2000000, 3);
	csl_stats_span(&a, 1000, 2000000000ull + 1000);
	csl_stats_merge(&a, &b);
	struct csl_summary s;
	csl_stats_summarize(&a, &s);
	CHECK(a.requests == 1000 && a.path_requests[0] == 500 && a.path_requests[1] == 500,
	      "stats: request counts");
	CHECK(a.errors[CSL_ERR_NON_2XX] == 1 && a.errors[CSL_ERR_EOF_BEFORE] == 1 &&
		      s.errors_total == 1,
	      "stats: errors (non_2xx is not in the total)");
	CHECK(s.latency_us.p50 >= 500 * 0.996 && s.latency_us.p50 <= 500 * 1.004,
	      "stats: p50 %.3f us, want 500 within 0.4 %%", s.latency_us.p50);
	CHECK(s.latency_us.p99 >= 990 * 0.996 && s.latency_us.p99 <= 990 * 1.004,
	      "stats: p99 %.3f us, want 990", s.latency_us.p99);
	CHECK(s.latency_us.max == 1000 && s.latency_us.mean == 500.5, "stats: max/mean");
	CHECK(s.from_send_us.p99 >= 990 * 0.996 && s.from_send_us.p99 <= 990 * 1.004 &&
		      s.service_us.p99 >= 1090 * 0.996 && s.service_us.p99 <= 1090 * 1.004,
	      "stats: p99 from the send %.3f us (want 990), from the start %.3f us (want 1090)",
	      s.from_send_us.p99, s.service_us.p99);
	CHECK(a.path_errors[1] == 1 && a.path_errors[0] == 0, "stats: errors per path");
	CHECK(a.connects == 2 && a.connects_over_1s == 1, "stats: slow connects");
	CHECK(a.tls12 == 1 && a.tls13 == 1 && s.handshake_us.count == 2 &&
		      s.handshake_us.max == 2000,
	      "stats: TLS handshakes by version, their times");
	CHECK(s.duration_s == 2.0 && s.rate_rps == 500.0, "stats: rate %.3f", s.rate_rps);
	csl_stats_free(&a);
	csl_stats_free(&b);
}

int csl_self_test(FILE *out)
{
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	guard_page = mmap(NULL, 2 * page_size, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (guard_page == MAP_FAILED || mprotect(guard_page + page_size, page_size, PROT_NONE) < 0) {
		perror("csload: self-test: mmap");
		return -1;
	}
	test_http(out);
	test_target(out);
	test_options(out);
	test_timers(out);
	test_stats(out);
	munmap(guard_page, 2 * page_size);
	fprintf(out, "self-test: %d checks, %d failed\n", checks, failures);
	return failures ? -1 : 0;
}
