/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Pipelined HTTP/1.x requests read at once: a client that writes two
 * requests in one go, read by the server in one call, makes one exchange
 * (bytes in, then bytes out) of two requests, and no timing tells it. The
 * read's buffer does: the first request's header block ends ("\r\n\r\n")
 * and more bytes follow. peek_read scans the first read of each of a
 * plain connection's first CS_PEEK_EXCHANGES exchanges with this; later
 * exchanges are not looked at, so pipelining that starts after them is
 * seen only when its timing shows it (CS_REQ_READ_AFTER_SEND).
 *
 * Conservative: a request whose scanned headers name a body
 * (Content-Length, Transfer-Encoding) is not flagged, since what follows
 * its header block may be that body; so is one whose header block does not
 * end within the first HTTP_SCAN_LEN bytes. The byte after the header
 * block, when scanned, must begin a method (A-Z).
 *
 * Cost: the scan walks 8-byte words; a word without a '\n' costs one
 * test, and only words that hold a line's end are looked at byte by byte
 * (a header's name compared as two words). A single browser-sized request
 * (~400 bytes, 8 header lines) is some 50 words, a dozen of them slow.
 */
#ifndef CS_HTTP_PEEK_BPF_H
#define CS_HTTP_PEEK_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#define HTTP_SCAN_LEN 512 /* a power of two: the copy's size is masked with it */

/*
 * The read's first bytes, copied where the scan can index them (a BPF
 * stack holds 512 bytes in all). 16 bytes of slack: a header name is
 * compared as two 8-byte words loaded at a masked offset.
 */
struct http_scan_buf {
	__u8 bytes[HTTP_SCAN_LEN + 16];
} __attribute__((aligned(8)));

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct http_scan_buf);
} http_scan_bufs SEC(".maps");

enum http_scan_result {
	HTTP_SCAN_ONE = 0,    /* one request as far as can be told */
	HTTP_SCAN_MORE,       /* a request without a body, and more bytes behind it */
	HTTP_SCAN_NOT_HTTP,   /* the read does not begin with a method */
	HTTP_SCAN_UNREADABLE, /* the buffer could not be copied */
};

/*
 * Header names that announce a body, lower case, as a line's first 16
 * bytes loaded little-endian into two words (immediates: no string in
 * .rodata). "content-length:" is 15 bytes (the second word's last byte
 * masked off); of "transfer-encoding:" its first 16 are enough. Lower case
 * is OR 0x20 on every byte: it leaves '-' and ':' as they are, and what it
 * makes of other bytes can only miss a flag, never add one.
 */
#define HTTP_W8(a, b, c, d, e, f, g, h)                                                                             \
	((__u64)(a) | (__u64)(b) << 8 | (__u64)(c) << 16 | (__u64)(d) << 24 | (__u64)(e) << 32 | (__u64)(f) << 40 | \
	 (__u64)(g) << 48 | (__u64)(h) << 56)
#define HTTP_LOWER 0x2020202020202020ull
#define HTTP_CONTENT_ HTTP_W8('c', 'o', 'n', 't', 'e', 'n', 't', '-')
#define HTTP_LENGTH_ HTTP_W8('l', 'e', 'n', 'g', 't', 'h', ':', 0)
#define HTTP_SEVEN_BYTES 0x00ffffffffffffffull
#define HTTP_TRANSFER HTTP_W8('t', 'r', 'a', 'n', 's', 'f', 'e', 'r')
#define HTTP_ENCODIN HTTP_W8('-', 'e', 'n', 'c', 'o', 'd', 'i', 'n')
#define HTTP_NEWLINES 0x0a0a0a0a0a0a0a0aull
#define HTTP_ONES 0x0101010101010101ull
#define HTTP_HIGHS 0x8080808080808080ull
#define HTTP_METHOD_MAX 16

struct http_scan {
	__u32 len;      /* bytes copied into the scan buffer */
	__u32 read_len; /* bytes the read returned in its first buffer */
	__u8 crlf_at;   /* bytes of "\r\n\r\n" matched so far */
	__u8 result;    /* enum http_scan_result */
};

/* 8 bytes at a masked offset (x86 loads them unaligned at no cost). */
static __always_inline __u64 http_word(const struct http_scan_buf *b, __u32 at)
{
	return *(const __u64 *)&b->bytes[at & (HTTP_SCAN_LEN - 1)];
}

/* The header line that begins at at names a body (Content-Length, Transfer-Encoding)? */
static __always_inline bool http_names_body(const struct http_scan_buf *b, __u32 at)
{
	__u64 lo = http_word(b, at) | HTTP_LOWER, hi = http_word(b, at + 8) | HTTP_LOWER;
	return (lo == HTTP_CONTENT_ && (hi & HTTP_SEVEN_BYTES) == HTTP_LENGTH_) ||
	       (lo == HTTP_TRANSFER && hi == HTTP_ENCODIN);
}

/*
 * One byte at at, of a word that holds a line's end (or the scan's end).
 * Returns 1 to stop: the header block ended (s->result says whether a
 * request follows), a header names a body, or the scanned bytes ended.
 */
static __always_inline long http_scan_byte(struct http_scan *s, const struct http_scan_buf *b, __u32 at)
{
	if (at >= s->len)
		return 1;
	__u8 c = b->bytes[at & (HTTP_SCAN_LEN - 1)];
	if (c == '\r') {
		s->crlf_at = s->crlf_at == 2 ? 3 : 1;
		return 0;
	}
	if (c != '\n' || (s->crlf_at != 1 && s->crlf_at != 3)) {
		s->crlf_at = 0;
		return 0;
	}
	if (++s->crlf_at < 4) {
		/*
		 * A header line begins at at + 1. Nearer the end than 16 bytes
		 * it is not compared: a body-naming line and the blank line
		 * after it would not fit before the end, so no flag follows.
		 */
		return at + 17 <= s->len && http_names_body(b, at + 1);
	}
	/* The header block ends at at: is a request behind it? */
	if (at + 1 < s->len) {
		__u8 next = b->bytes[(at + 1) & (HTTP_SCAN_LEN - 1)];
		if (next >= 'A' && next <= 'Z')
			s->result = HTTP_SCAN_MORE;
	} else if (at + 1 < s->read_len) {
		s->result = HTTP_SCAN_MORE; /* bytes beyond the scanned ones */
	}
	return 1;
}

/*
 * The 8 bytes at at, one by one: a word that holds a line's end. Returns 1
 * to stop the scan.
 *
 * A global function, so that the verifier checks it once, on its own, and
 * sees only its return value at the call: inlined, each of the 4 values of
 * crlf_at times each byte's branches made a state of its own on every
 * pass through the loop, some 440 000 instructions for the verifier to
 * walk and a third of a second at every attach. s may be NULL to it (a
 * global function's pointer is checked where it is used).
 */
__attribute__((noinline)) long http_scan_line_end(struct http_scan *s, __u32 at)
{
	__u32 zero = 0;
	const struct http_scan_buf *b = bpf_map_lookup_elem(&http_scan_bufs, &zero);

	if (!s || !b)
		return 1;
#pragma unroll
	for (int k = 0; k < 8; k++)
		if (http_scan_byte(s, b, at + k))
			return 1;
	return 0;
}

/* bpf_loop's body: the 8 bytes of word i. Most hold no line's end: one test each. */
static long http_scan_word(__u64 i, void *ctx)
{
	struct http_scan *s = ctx;
	__u32 zero = 0, at = (__u32)i * 8;
	const struct http_scan_buf *b = bpf_map_lookup_elem(&http_scan_bufs, &zero);

	if (!b || at >= s->len)
		return 1;
	if (at + 8 <= s->len) {
		__u64 w = http_word(b, at), x = w ^ HTTP_NEWLINES;
		if (!((x - HTTP_ONES) & ~x & HTTP_HIGHS)) {
			/* No '\n' in it: only a '\r' at its end can begin the block's end. */
			s->crlf_at = (w >> 56) == '\r';
			return 0;
		}
	}
	return http_scan_line_end(s, at) ? 1 : 0; /* a callback returns 0 or 1, as the verifier sees it */
}

/* The read begins with a method: upper-case letters, then a space; not HTTP/2's "PRI ". */
static __always_inline enum http_scan_result http_method(const struct http_scan_buf *b, __u32 len)
{
	if (len >= 4 && (http_word(b, 0) & 0xffffffff) == HTTP_W8('P', 'R', 'I', ' ', 0, 0, 0, 0))
		return HTTP_SCAN_NOT_HTTP;
	for (int i = 0; i < HTTP_METHOD_MAX; i++) {
		if (i >= len)
			return HTTP_SCAN_ONE; /* a method cut by the read: nothing more to tell */
		__u8 c = b->bytes[i];
		if (c == ' ' && i > 0)
			return HTTP_SCAN_MORE; /* a method: scan on */
		if (c < 'A' || c > 'Z')
			return HTTP_SCAN_NOT_HTTP;
	}
	return HTTP_SCAN_NOT_HTTP;
}

/* Scan the first bytes of a read: room bytes at buf. */
static __always_inline enum http_scan_result http_scan_read(__u64 buf, __u32 room)
{
	__u32 zero = 0;
	struct http_scan_buf *b = bpf_map_lookup_elem(&http_scan_bufs, &zero);
	struct http_scan s = { .read_len = room };

	if (!b || !room)
		return HTTP_SCAN_UNREADABLE;
	__u32 n = room < HTTP_SCAN_LEN ? room : HTTP_SCAN_LEN;
	/* n - 1 masked where the verifier sees it: the size is 1..HTTP_SCAN_LEN. */
	__u64 last = n - 1;
	asm volatile("%[last] &= %[mask]"
		     : [last] "+r"(last)
		     : [mask] "i"(HTTP_SCAN_LEN - 1));
	if (bpf_probe_read_user(b->bytes, last + 1, (void *)buf))
		return HTTP_SCAN_UNREADABLE;
	s.len = (__u32)(last + 1);
	enum http_scan_result method = http_method(b, s.len);
	if (method != HTTP_SCAN_MORE)
		return method;
	bpf_loop(HTTP_SCAN_LEN / 8, http_scan_word, &s, 0);
	return (enum http_scan_result)s.result;
}

#endif /* CS_HTTP_PEEK_BPF_H */
