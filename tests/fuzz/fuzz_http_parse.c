// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: the reference server's HTTP/1.x request parser
 * (server/http_parse.c), called the way csserver calls it.
 *
 * The first input byte sets a read size (1 to 64 bytes); the rest is what
 * the client sends. Like conn_parse(), the target parses after each read,
 * passing the length at the previous CS_HTTP_INCOMPLETE as last_len, until
 * the parser answers something else; on a request it consumes it and goes
 * on with the pipelined bytes after it. The bytes past what has "arrived"
 * are poisoned, and the whole input sits in a buffer of exactly its
 * length, so ASan reports any read beyond buf + len.
 *
 * Checked beyond "no crash, no sanitizer report":
 *   - the incremental answer is the one-shot answer: the last_len shortcut
 *     may put off a CS_HTTP_BAD until the header's end arrives, but never
 *     hides or changes a request (same length consumed, same fields);
 *   - a request's method, target and header fields lie inside the bytes
 *     it consumed, a method and field names are non-empty, values have no
 *     surrounding whitespace, and consumed bytes never exceed len;
 *   - the framing, header lookup and token helpers run on every request.
 */
#include <sanitizer/asan_interface.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_parse.h"

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_http_parse: %s\n", what);
		abort();
	}
}

static bool inside(const char *p, size_t len, const char *buf, size_t consumed)
{
	return p >= buf && len <= consumed && p + len <= buf + consumed;
}

static void check_request(const struct cs_http_request *req, const char *buf, int consumed)
{
	size_t n = (size_t)consumed;
	check(req->method_len > 0 && inside(req->method, req->method_len, buf, n), "method outside the request");
	check(req->target_len > 0 && inside(req->target, req->target_len, buf, n), "target outside the request");
	check(req->minor_version >= 0 && req->minor_version <= 9, "minor version");
	check(req->num_headers <= CS_HTTP_MAX_HEADERS, "too many headers");
	for (size_t i = 0; i < req->num_headers; i++) {
		const struct cs_http_header *h = &req->headers[i];
		check(h->name_len > 0 && inside(h->name, h->name_len, buf, n), "field name outside the request");
		check(inside(h->value, h->value_len, buf, n), "field value outside the request");
		if (h->value_len)
			check(h->value[0] != ' ' && h->value[0] != '\t' && h->value[h->value_len - 1] != ' ' &&
				      h->value[h->value_len - 1] != '\t',
			      "field value not trimmed");
	}

	/* Framing: a Content-Length it used is one find_header finds; "close" always wins. */
	struct cs_http_framing framing;
	if (cs_http_request_framing(req, &framing) == 0) {
		check(framing.has_content_length == (cs_http_find_header(req, "content-length") != NULL),
		      "Content-Length used but not found");
		const struct cs_http_header *connection = cs_http_find_header(req, "CONNECTION");
		if (connection && cs_http_list_has_token(connection->value, connection->value_len, "close"))
			check(!framing.keep_alive, "Connection: close kept alive");
	}
}

static bool same_request(const struct cs_http_request *a, const struct cs_http_request *b)
{
	if (a->method != b->method || a->method_len != b->method_len || a->target != b->target ||
	    a->target_len != b->target_len || a->minor_version != b->minor_version ||
	    a->num_headers != b->num_headers)
		return false;
	return memcmp(a->headers, b->headers, a->num_headers * sizeof(a->headers[0])) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t step = (size_t)(data[0] % 64) + 1;
	size_t total = size - 1;
	/* malloc(0) may return NULL: keep one byte, poisoned, for an empty input. */
	char *buf = malloc(total ? total : 1);
	check(buf != NULL, "malloc");
	memcpy(buf, data + 1, total);

	size_t start = 0; /* first byte of the request being parsed */
	while (start < total) {
		const char *req_buf = buf + start;
		size_t avail = total - start, len = 0, last_len = 0;
		struct cs_http_request req;
		int r = CS_HTTP_INCOMPLETE;

		while (len < avail) {
			len = len + step < avail ? len + step : avail;
			/* Only len bytes have arrived: the rest must not be read. */
			ASAN_POISON_MEMORY_REGION(req_buf + len, avail - len);
			r = cs_http_parse_request(req_buf, len, last_len, &req);
			ASAN_UNPOISON_MEMORY_REGION(req_buf + len, avail - len);
			check(r == CS_HTTP_BAD || r == CS_HTTP_INCOMPLETE || (r > 0 && (size_t)r <= len),
			      "result out of range");
			if (r != CS_HTTP_INCOMPLETE)
				break;
			last_len = len;
		}

		/* The same bytes in one call, without the shortcut. */
		struct cs_http_request once;
		ASAN_POISON_MEMORY_REGION(req_buf + len, avail - len);
		int r_once = cs_http_parse_request(req_buf, len, 0, &once);
		ASAN_UNPOISON_MEMORY_REGION(req_buf + len, avail - len);
		if (r > 0 || r_once > 0) {
			check(r == r_once, "incremental and one-shot parses disagree");
			check(same_request(&req, &once), "incremental and one-shot requests differ");
			check_request(&req, req_buf, r);
			start += (size_t)r; /* pipelined: the next request follows */
			continue;
		}
		if (r == CS_HTTP_BAD)
			check(r_once == CS_HTTP_BAD, "incremental BAD, one-shot not");
		break;
	}
	free(buf);
	return 0;
}
