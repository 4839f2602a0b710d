// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of the reference server's request parser (server/http_parse.c).
 *
 * As picohttpparser's tests do, every input is copied to the very end of a
 * read-only mapping followed by a PROT_NONE page: a parser that reads one
 * byte too far (or writes into its input) dies with SIGSEGV, which
 * Criterion reports as a crashed test.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../server/http_parse.h"

/* A copy of some bytes that ends right where an inaccessible page starts. */
struct guarded {
	char *map;
	size_t map_len;
	const char *data;
};

static struct guarded guard_place(const char *data, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t data_pages = len == 0 ? 1 : (len + page - 1) / page;
	struct guarded g = { .map_len = (data_pages + 1) * page };

	g.map = mmap(NULL, g.map_len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(g.map, MAP_FAILED, "mmap");
	char *dst = g.map + data_pages * page - len;
	memcpy(dst, data, len);
	cr_assert_eq(mprotect(g.map, data_pages * page, PROT_READ), 0);
	cr_assert_eq(mprotect(g.map + data_pages * page, page, PROT_NONE), 0);
	g.data = dst;
	return g;
}

static void guard_free(struct guarded *g)
{
	munmap(g->map, g->map_len);
}

/* Parses data placed before a guard page. The mapping stays (each test
 * runs in its own process), so req's pointers remain valid. */
static int parse_n(const char *data, size_t len, size_t last_len, struct cs_http_request *req)
{
	struct guarded g = guard_place(data, len);
	return cs_http_parse_request(g.data, len, last_len, req);
}

static int parse(const char *s, struct cs_http_request *req)
{
	return parse_n(s, strlen(s), 0, req);
}

#define assert_span(ptr, len, lit)                                                    \
	do {                                                                          \
		cr_assert_eq((len), sizeof(lit) - 1, "length %zu, want %zu for \"%s\"", \
			     (size_t)(len), sizeof(lit) - 1, lit);                  \
		cr_assert(memcmp((ptr), lit, sizeof(lit) - 1) == 0, "want \"%s\"", lit); \
	} while (0)

#define assert_header(req, i, name_lit, value_lit)                               \
	do {                                                                     \
		assert_span((req).headers[i].name, (req).headers[i].name_len, name_lit); \
		assert_span((req).headers[i].value, (req).headers[i].value_len, value_lit); \
	} while (0)

/* ---- complete requests ---- */

Test(http_parse, simple_get)
{
	static const char s[] = "GET /bytes/10240 HTTP/1.1\r\n"
				"Host: 127.0.0.1:8080\r\n"
				"User-Agent: wrk\r\n"
				"\r\n";
	struct cs_http_request req;

	cr_assert_eq(parse(s, &req), (int)strlen(s));
	assert_span(req.method, req.method_len, "GET");
	assert_span(req.target, req.target_len, "/bytes/10240");
	cr_assert_eq(req.minor_version, 1);
	cr_assert_eq(req.num_headers, 2);
	assert_header(req, 0, "Host", "127.0.0.1:8080");
	assert_header(req, 1, "User-Agent", "wrk");
}

Test(http_parse, http10_without_fields)
{
	static const char s[] = "HEAD / HTTP/1.0\r\n\r\n";
	struct cs_http_request req;

	cr_assert_eq(parse(s, &req), (int)strlen(s));
	assert_span(req.method, req.method_len, "HEAD");
	cr_assert_eq(req.minor_version, 0);
	cr_assert_eq(req.num_headers, 0);
}

Test(http_parse, query_string_stays_in_target)
{
	static const char s[] = "GET /sleep/10?x=1&y=%20 HTTP/1.1\r\n\r\n";
	struct cs_http_request req;

	cr_assert_eq(parse(s, &req), (int)strlen(s));
	assert_span(req.target, req.target_len, "/sleep/10?x=1&y=%20");
}

Test(http_parse, bare_lf_line_endings)
{
	static const char s[] = "GET / HTTP/1.1\nHost: a\n\n";
	struct cs_http_request req;

	cr_assert_eq(parse(s, &req), (int)strlen(s));
	cr_assert_eq(req.num_headers, 1);
	assert_header(req, 0, "Host", "a");
}

Test(http_parse, empty_lines_before_request_line_are_skipped)
{
	static const char s[] = "\r\n\nGET / HTTP/1.1\r\n\r\n";
	struct cs_http_request req;

	cr_assert_eq(parse(s, &req), (int)strlen(s));
	assert_span(req.method, req.method_len, "GET");
}

Test(http_parse, other_methods_are_parsed)
{
	static const char s[] = "M-SEARCH * HTTP/1.1\r\n\r\n";
	struct cs_http_request req;

	cr_assert_eq(parse(s, &req), (int)strlen(s));
	assert_span(req.method, req.method_len, "M-SEARCH");
	assert_span(req.target, req.target_len, "*");
}

/* ---- header field values ---- */

Test(http_parse, field_values_are_trimmed_inside_kept)
{
	static const char s[] = "GET / HTTP/1.1\r\n"
				"X-A:  v1 \t\r\n"
				"X-B:\r\n"
				"X-C: \t \r\n"
				"X-D: a  b\tc\r\n"
				"x-lower:UPPER\r\n"
				"\r\n";
	struct cs_http_request req;

	cr_assert_eq(parse(s, &req), (int)strlen(s));
	cr_assert_eq(req.num_headers, 5);
	assert_header(req, 0, "X-A", "v1");
	assert_header(req, 1, "X-B", "");
	assert_header(req, 2, "X-C", "");
	assert_header(req, 3, "X-D", "a  b\tc");
	assert_header(req, 4, "x-lower", "UPPER");
}

Test(http_parse, field_value_may_hold_obs_text)
{
	static const char s[] = "GET /caf\xc3\xa9 HTTP/1.1\r\nX-Name: caf\xc3\xa9\r\n\r\n";
	struct cs_http_request req;

	cr_assert_eq(parse(s, &req), (int)strlen(s));
	assert_header(req, 0, "X-Name", "caf\xc3\xa9");
}

Test(http_parse, find_header_ignores_case)
{
	static const char s[] = "GET / HTTP/1.1\r\nhOsT: x\r\nAccept: */*\r\n\r\n";
	struct cs_http_request req;

	cr_assert_eq(parse(s, &req), (int)strlen(s));
	const struct cs_http_header *h = cs_http_find_header(&req, "Host");
	cr_assert_not_null(h);
	assert_span(h->value, h->value_len, "x");
	cr_assert_null(cs_http_find_header(&req, "Hos"));
	cr_assert_null(cs_http_find_header(&req, "Hostname"));
}

/* ---- partial input: every prefix of a valid request needs more ---- */

static const char *const valid_requests[] = {
	"GET /bytes/10 HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n\r\n",
	"GET / HTTP/1.0\n\n",
	"\r\nHEAD /x?y HTTP/1.1\r\nA:\r\nB: c \r\n\r\n",
};

Test(http_parse, every_prefix_is_incomplete)
{
	struct cs_http_request req;

	for (size_t k = 0; k < sizeof(valid_requests) / sizeof(valid_requests[0]); k++) {
		const char *s = valid_requests[k];
		size_t n = strlen(s);

		for (size_t len = 0; len < n; len++) {
			struct guarded g = guard_place(s, len);
			int r = cs_http_parse_request(g.data, len, 0, &req);
			cr_assert_eq(r, CS_HTTP_INCOMPLETE, "request %zu, prefix of %zu bytes: %d",
				     k, len, r);
			guard_free(&g);
		}
		cr_assert_eq(parse_n(s, n, 0, &req), (int)n);
	}
}

/* A client that sends a byte at a time, with last_len taking the fast path. */
Test(http_parse, byte_at_a_time_with_last_len)
{
	struct cs_http_request req;

	for (size_t k = 0; k < sizeof(valid_requests) / sizeof(valid_requests[0]); k++) {
		const char *s = valid_requests[k];
		size_t n = strlen(s);
		size_t last_len = 0;
		int r = CS_HTTP_INCOMPLETE;

		for (size_t len = 1; len <= n; len++) {
			struct guarded g = guard_place(s, len);
			r = cs_http_parse_request(g.data, len, last_len, &req);
			guard_free(&g);
			if (len < n)
				cr_assert_eq(r, CS_HTTP_INCOMPLETE, "request %zu, %zu bytes: %d", k, len, r);
			last_len = len;
		}
		cr_assert_eq(r, (int)n, "request %zu: %d", k, r);
	}
}

/* The terminator may straddle what was there before and what came now. */
Test(http_parse, terminator_split_across_reads)
{
	static const char s[] = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
	size_t n = strlen(s);
	struct cs_http_request req;

	for (size_t last_len = 1; last_len < n; last_len++)
		cr_assert_eq(parse_n(s, n, last_len, &req), (int)n, "last_len %zu", last_len);
}

/* ---- malformed ---- */

struct bad_case {
	const char *data;
	size_t len;
};

/* sizeof, not strlen: some cases hold a NUL byte. */
#define BAD(lit) { lit, sizeof(lit) - 1 }

static const struct bad_case bad_requests[] = {
	BAD("GET  / HTTP/1.1\r\n\r\n"), /* two spaces */
	BAD(" GET / HTTP/1.1\r\n\r\n"), /* empty method */
	BAD("GE(T / HTTP/1.1\r\n\r\n"), /* not a token */
	BAD("GET / HTTP/1.1 \r\n\r\n"), /* trailing space */
	BAD("GET / HTTP/2.0\r\n\r\n"),
	BAD("GET / HTTP/1.x\r\n\r\n"),
	BAD("GET / HTTP/1.10\r\n\r\n"),
	BAD("GET / http/1.1\r\n\r\n"),
	BAD("GET /\r\n\r\n"), /* HTTP/0.9 */
	BAD("GET /a\x01z HTTP/1.1\r\n\r\n"), /* control in target */
	BAD("GET /a\x7fz HTTP/1.1\r\n\r\n"), /* DEL in target */
	BAD("GET /a\0z HTTP/1.1\r\n\r\n"), /* NUL in target */
	BAD("GET / HTTP/1.1\rX\r\n\r\n"), /* CR without LF */
	BAD("GET / HTTP/1.1\r\nHost : x\r\n\r\n"), /* space before colon */
	BAD("GET / HTTP/1.1\r\nHost\r\n\r\n"), /* no colon */
	BAD("GET / HTTP/1.1\r\n: x\r\n\r\n"), /* empty name */
	BAD("GET / HTTP/1.1\r\nX(y): 1\r\n\r\n"), /* not a token */
	BAD("GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n"), /* obs-fold */
	BAD("GET / HTTP/1.1\r\n Host: x\r\n\r\n"), /* whitespace-led first field */
	BAD("GET / HTTP/1.1\r\nX: a\rb\r\n\r\n"), /* lone CR in value */
	BAD("GET / HTTP/1.1\r\nX: a\x7f\r\n\r\n"), /* DEL in value */
	BAD("GET / HTTP/1.1\r\nX: a\0b\r\n\r\n"), /* NUL in value */
	BAD("GET / HTTP/1.1\r\n\r\r\n"), /* CR CR */
};

Test(http_parse, malformed_requests_are_bad)
{
	struct cs_http_request req;

	for (size_t i = 0; i < sizeof(bad_requests) / sizeof(bad_requests[0]); i++) {
		const struct bad_case *c = &bad_requests[i];
		int r = parse_n(c->data, c->len, 0, &req);
		cr_assert_eq(r, CS_HTTP_BAD, "case %zu: got %d", i, r);
	}
}

/* Bad bytes are reported as soon as they arrive, not once the header
 * ends: a TLS ClientHello on the plain-text port gets its 400 at once. */
Test(http_parse, garbage_is_rejected_before_the_header_ends)
{
	static const char tls_hello[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
	struct cs_http_request req;

	cr_assert_eq(parse_n(tls_hello, sizeof(tls_hello) - 1, 0, &req), CS_HTTP_BAD);
	cr_assert_eq(parse("GET / FTP", &req), CS_HTTP_BAD);
	cr_assert_eq(parse("GET / HTTP/1.1\r\nX: \x01", &req), CS_HTTP_BAD);
	/* A token-shaped prefix is still a valid start. */
	cr_assert_eq(parse("GARBAGE", &req), CS_HTTP_INCOMPLETE);
}

/* ---- oversized ---- */

static char *build_fields(size_t count, size_t *len_out)
{
	size_t cap = 64 + count * 32;
	char *buf = malloc(cap);
	size_t len = 0;

	cr_assert_not_null(buf);
	len += (size_t)snprintf(buf + len, cap - len, "GET / HTTP/1.1\r\n");
	for (size_t i = 0; i < count; i++)
		len += (size_t)snprintf(buf + len, cap - len, "X-Field-%zu: %zu\r\n", i, i);
	len += (size_t)snprintf(buf + len, cap - len, "\r\n");
	*len_out = len;
	return buf;
}

Test(http_parse, at_most_max_headers)
{
	struct cs_http_request req;
	size_t len;
	char *ok = build_fields(CS_HTTP_MAX_HEADERS, &len);

	cr_assert_eq(parse_n(ok, len, 0, &req), (int)len);
	cr_assert_eq(req.num_headers, CS_HTTP_MAX_HEADERS);
	assert_header(req, CS_HTTP_MAX_HEADERS - 1, "X-Field-63", "63");
	free(ok);

	char *too_many = build_fields(CS_HTTP_MAX_HEADERS + 1, &len);
	cr_assert_eq(parse_n(too_many, len, 0, &req), CS_HTTP_BAD);
	free(too_many);
}

/* The parser has no size limit of its own (the server's buffer is the
 * limit): a 20 KiB header spanning pages parses, and any cut of it is
 * incomplete, so that the caller can answer 413 when its buffer is full. */
Test(http_parse, long_header_spanning_pages)
{
	static const char head[] = "GET /bytes/1 HTTP/1.1\r\nCookie: ";
	size_t value_len = 20 * 1024;
	size_t len = strlen(head) + value_len + 4;
	char *s = malloc(len);
	struct cs_http_request req;

	cr_assert_not_null(s);
	memcpy(s, head, strlen(head));
	memset(s + strlen(head), 'c', value_len);
	memcpy(s + len - 4, "\r\n\r\n", 4);

	cr_assert_eq(parse_n(s, len, 0, &req), (int)len);
	cr_assert_eq(req.headers[0].value_len, value_len);
	cr_assert_eq(parse_n(s, 8192, 0, &req), CS_HTTP_INCOMPLETE);
	cr_assert_eq(parse_n(s, len - 1, 8192, &req), CS_HTTP_INCOMPLETE);
	free(s);
}

/* ---- pipelining ---- */

Test(http_parse, pipelined_requests_parse_one_at_a_time)
{
	static const char s[] = "GET /bytes/1 HTTP/1.1\r\nHost: a\r\n\r\n"
				"HEAD /bytes/2 HTTP/1.1\r\n\r\n"
				"GET /bytes/3 HTTP/1.1\r\nHo";
	struct guarded g = guard_place(s, strlen(s));
	const char *p = g.data;
	size_t left = strlen(s);
	struct cs_http_request req;
	int r;

	r = cs_http_parse_request(p, left, 0, &req);
	cr_assert_eq(r, (int)strlen("GET /bytes/1 HTTP/1.1\r\nHost: a\r\n\r\n"));
	assert_span(req.target, req.target_len, "/bytes/1");
	p += r;
	left -= (size_t)r;

	r = cs_http_parse_request(p, left, 0, &req);
	cr_assert_eq(r, (int)strlen("HEAD /bytes/2 HTTP/1.1\r\n\r\n"));
	assert_span(req.method, req.method_len, "HEAD");
	assert_span(req.target, req.target_len, "/bytes/2");
	p += r;
	left -= (size_t)r;

	cr_assert_eq(cs_http_parse_request(p, left, 0, &req), CS_HTTP_INCOMPLETE);
}

/* ---- framing: Content-Length, Transfer-Encoding, Connection ---- */

static int framing_of(const char *s, struct cs_http_framing *f)
{
	struct cs_http_request req;
	int r = parse(s, &req);

	cr_assert_gt(r, 0, "parse of \"%s\": %d", s, r);
	return cs_http_request_framing(&req, f);
}

Test(http_parse, keep_alive_defaults_by_version)
{
	struct cs_http_framing f;

	cr_assert_eq(framing_of("GET / HTTP/1.1\r\n\r\n", &f), 0);
	cr_assert(f.keep_alive);
	cr_assert_eq(framing_of("GET / HTTP/1.0\r\n\r\n", &f), 0);
	cr_assert_not(f.keep_alive);
	cr_assert_eq(framing_of("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &f), 0);
	cr_assert(f.keep_alive);
	cr_assert_eq(framing_of("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", &f), 0);
	cr_assert_not(f.keep_alive);
	cr_assert_eq(framing_of("GET / HTTP/1.1\r\nConnection: keep-alive, CLOSE\r\n\r\n", &f), 0);
	cr_assert_not(f.keep_alive, "close wins");
	cr_assert_eq(framing_of("GET / HTTP/1.1\r\nConnection: Upgrade\r\nConnection: close\r\n\r\n", &f), 0);
	cr_assert_not(f.keep_alive, "repeated Connection fields are one list");
	cr_assert_eq(framing_of("GET / HTTP/1.1\r\nConnection: closed\r\n\r\n", &f), 0);
	cr_assert(f.keep_alive, "\"closed\" is not \"close\"");
}

Test(http_parse, content_length)
{
	struct cs_http_framing f;

	cr_assert_eq(framing_of("GET / HTTP/1.1\r\n\r\n", &f), 0);
	cr_assert_not(f.has_content_length);
	cr_assert_eq(f.content_length, 0);

	cr_assert_eq(framing_of("POST / HTTP/1.1\r\nContent-Length: 42\r\n\r\n", &f), 0);
	cr_assert(f.has_content_length);
	cr_assert_eq(f.content_length, 42);

	cr_assert_eq(framing_of("POST / HTTP/1.1\r\ncontent-length: 7\r\nContent-Length: 7\r\n\r\n", &f), 0);
	cr_assert_eq(f.content_length, 7, "equal repeats are one length");

	cr_assert_eq(framing_of("POST / HTTP/1.1\r\nContent-Length: 18446744073709551615\r\n\r\n", &f), 0);
	cr_assert_eq(f.content_length, UINT64_MAX);

	cr_assert_eq(framing_of("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &f), 0);
	cr_assert(f.has_transfer_encoding);
}

Test(http_parse, ambiguous_content_length_is_bad)
{
	static const char *const bad[] = {
		"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 5 5\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length:\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 18446744073709551616\r\n\r\n",
	};
	struct cs_http_framing f;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(framing_of(bad[i], &f), CS_HTTP_BAD, "case %zu", i);
}

Test(http_parse, list_has_token)
{
	cr_assert(cs_http_list_has_token("close", 5, "close"));
	cr_assert(cs_http_list_has_token(" Keep-Alive ,\tUpgrade", 21, "upgrade"));
	cr_assert(cs_http_list_has_token(",,close,,", 9, "close"));
	cr_assert_not(cs_http_list_has_token("closed", 6, "close"));
	cr_assert_not(cs_http_list_has_token("clos", 4, "close"));
	cr_assert_not(cs_http_list_has_token("", 0, "close"));
	cr_assert_not(cs_http_list_has_token("keep-alive close", 16, "close"));
}
