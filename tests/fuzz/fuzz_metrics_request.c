// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: connscoped's metrics endpoint reading a request
 * (daemon/service/metrics_request.c), called the way metrics_server.c
 * calls it.
 *
 * The first input byte sets a read size (1 to 64 bytes), the second the
 * head limit (16 to 4096 bytes); the rest is what the client sends. Like
 * the server, the target judges after each read; on a request served it
 * goes on with the pipelined bytes after its head, on a refusal it stops.
 * The bytes past what has "arrived" are poisoned, and the whole input sits
 * in a buffer of exactly its length, so ASan reports any read beyond
 * buf + len.
 *
 * Checked beyond "no crash, no sanitizer report":
 *   - a verdict never changes as more bytes arrive: the one given at a
 *     read is the one the whole input gives (same head, same fields), and
 *     while the answer is "more", every shorter prefix said "more" too;
 *   - a served head lies inside the bytes judged and within the limit, and
 *     ends in a blank line; a refusal has a status line, the others none.
 */
#include <sanitizer/asan_interface.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics_request.h"

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_metrics_request: %s\n", what);
		abort();
	}
}

static bool same(const struct cs_metrics_request *a, const struct cs_metrics_request *b)
{
	if (a->verdict != b->verdict)
		return false;
	if (a->verdict != CS_MREQ_SERVE)
		return true;
	return a->head_len == b->head_len && a->keep_alive == b->keep_alive && a->head_only == b->head_only &&
	       a->format == b->format;
}

static void check_verdict(const struct cs_metrics_request *req, const char *buf, size_t len, size_t max_len)
{
	bool refusal = req->verdict != CS_MREQ_MORE && req->verdict != CS_MREQ_SERVE;
	check(refusal == (cs_metrics_verdict_status(req->verdict) != NULL), "status line for a refusal only");
	if (req->verdict != CS_MREQ_SERVE)
		return;
	check(req->head_len >= 2 && req->head_len <= len && req->head_len <= max_len, "head outside the bytes");
	check(buf[req->head_len - 1] == '\n', "head does not end a line");
	check(buf[req->head_len - 2] == '\n' || (req->head_len >= 3 && buf[req->head_len - 2] == '\r' &&
						 buf[req->head_len - 3] == '\n'), "head does not end in a blank line");
}

/* One request's bytes from buf, read by read; returns the bytes it took (0: stop). */
static size_t one_request(const char *buf, size_t len, size_t read_size, size_t max_len)
{
	struct cs_metrics_request req = { .verdict = CS_MREQ_MORE };
	size_t have = 0;
	while (req.verdict == CS_MREQ_MORE && have < len && have < max_len) {
		size_t n = len - have < read_size ? len - have : read_size;
		if (have + n > max_len)
			n = max_len - have; /* the server reads into a buffer of max_len */
		ASAN_UNPOISON_MEMORY_REGION(buf + have, n);
		have += n;
		cs_metrics_request_parse(buf, have, max_len, &req);
		check_verdict(&req, buf, have, max_len);
	}
	ASAN_UNPOISON_MEMORY_REGION(buf, len);
	struct cs_metrics_request whole;
	cs_metrics_request_parse(buf, len, max_len, &whole);
	if (req.verdict != CS_MREQ_MORE)
		check(same(&req, &whole), "the verdict changed as more bytes came");
	else
		check(whole.verdict == CS_MREQ_MORE, "a verdict the reads never gave");
	ASAN_POISON_MEMORY_REGION(buf, len);
	return req.verdict == CS_MREQ_SERVE ? req.head_len : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t read_size = 1 + data[0] % 64;
	size_t max_len = 16 + (size_t)data[1] * 16;
	size_t len = size - 2;
	char *buf = malloc(len ? len : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 2, len);
	ASAN_POISON_MEMORY_REGION(buf, len);
	for (size_t at = 0, taken; at < len; at += taken) {
		/* A pipelined request starts where the last head ended, as the server moves it to its buffer's start. */
		taken = one_request(buf + at, len - at, read_size, max_len);
		if (!taken)
			break;
	}
	ASAN_UNPOISON_MEMORY_REGION(buf, len);
	free(buf);
	return 0;
}
