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
 * Include after vmlinux.h, bpf_helpers.h and connscope.h.
 */
#ifndef CS_HTTP_PEEK_BPF_H
#define CS_HTTP_PEEK_BPF_H

#define HTTP_SCAN_LEN 512 /* a power of two: the copy's size is masked with it */

/* The read's first bytes, copied where the scan can index them (a BPF stack holds 512 bytes in all). */
struct http_scan_buf {
	__u8 bytes[HTTP_SCAN_LEN];
};

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
 * bytes gathered little-endian into two words (immediates: no string in
 * .rodata). "content-length:" is 15 bytes; of "transfer-encoding:" its
 * first 16 are enough.
 */
#define HTTP_W8(a, b, c, d, e, f, g, h)                                                                             \
	((__u64)(a) | (__u64)(b) << 8 | (__u64)(c) << 16 | (__u64)(d) << 24 | (__u64)(e) << 32 | (__u64)(f) << 40 | \
	 (__u64)(g) << 48 | (__u64)(h) << 56)
#define HTTP_CONTENT_ HTTP_W8('c', 'o', 'n', 't', 'e', 'n', 't', '-')
#define HTTP_LENGTH_ HTTP_W8('l', 'e', 'n', 'g', 't', 'h', ':', 0)
#define HTTP_TRANSFER HTTP_W8('t', 'r', 'a', 'n', 's', 'f', 'e', 'r')
#define HTTP_ENCODIN HTTP_W8('-', 'e', 'n', 'c', 'o', 'd', 'i', 'n')
#define HTTP_METHOD_MAX 16

struct http_scan {
	__u32 len;      /* bytes copied into the scan buffer */
	__u32 read_len; /* bytes the read returned in its first buffer */
	__u32 method;   /* the method's first three bytes, to tell HTTP/2's "PRI " */
	__u64 name_lo;  /* the current header line's first 8 bytes, lower case */
	__u64 name_hi;  /* ... its next 8 */
	__u32 line_at;  /* bytes into the current line (counted up to 16) */
	__u8 crlf_at;   /* bytes of "\r\n\r\n" matched so far */
	__u8 in_method; /* still in the request line's method */
	__u8 result;    /* enum http_scan_result */
};

/* One more byte of a header line: does the line so far name a body? */
static __always_inline bool http_names_body(struct http_scan *s, __u8 c)
{
	if (c == '\n') {
		s->line_at = 0;
		s->name_lo = s->name_hi = 0;
		return false;
	}
	if (s->line_at >= 16)
		return false;
	__u64 lower = c >= 'A' && c <= 'Z' ? c | 0x20 : c;
	if (s->line_at < 8)
		s->name_lo |= lower << (8 * s->line_at);
	else
		s->name_hi |= lower << (8 * (s->line_at - 8));
	s->line_at++;
	return (s->line_at == 15 && s->name_lo == HTTP_CONTENT_ && s->name_hi == HTTP_LENGTH_) ||
	       (s->line_at == 16 && s->name_lo == HTTP_TRANSFER && s->name_hi == HTTP_ENCODIN);
}

/* bpf_loop's body: one byte at i. Returns 1 to stop. */
static long http_scan_byte(__u64 i, void *ctx)
{
	struct http_scan *s = ctx;
	__u32 zero = 0;
	struct http_scan_buf *b = bpf_map_lookup_elem(&http_scan_bufs, &zero);

	if (!b || i >= s->len)
		return 1;
	__u8 c = b->bytes[i & (HTTP_SCAN_LEN - 1)];
	if (s->in_method) {
		if (c == ' ' && i > 0) {
			s->in_method = 0;
			if (s->method == ('P' | 'R' << 8 | 'I' << 16)) {
				s->result = HTTP_SCAN_NOT_HTTP; /* HTTP/2's preface */
				return 1;
			}
		} else if (c < 'A' || c > 'Z' || i >= HTTP_METHOD_MAX) {
			s->result = HTTP_SCAN_NOT_HTTP;
			return 1;
		} else if (i < 3) {
			s->method |= (__u32)c << (8 * i);
		}
		return 0;
	}
	if (http_names_body(s, c))
		return 1; /* a body may follow the header block: not told */
	if (c == '\r')
		s->crlf_at = s->crlf_at == 2 ? 3 : 1;
	else if (c == '\n' && (s->crlf_at == 1 || s->crlf_at == 3))
		s->crlf_at++;
	else
		s->crlf_at = 0;
	if (s->crlf_at < 4)
		return 0;
	/* The header block ends at i: is a request behind it? */
	if (i + 1 < s->len) {
		__u8 next = b->bytes[(i + 1) & (HTTP_SCAN_LEN - 1)];
		if (next >= 'A' && next <= 'Z')
			s->result = HTTP_SCAN_MORE;
	} else if (i + 1 < s->read_len) {
		s->result = HTTP_SCAN_MORE; /* bytes beyond the scanned ones */
	}
	return 1;
}

/* Scan the first bytes of a read: room bytes at buf, of a read that returned len. */
static __always_inline enum http_scan_result http_scan_read(__u64 buf, __u32 room)
{
	__u32 zero = 0;
	struct http_scan_buf *b = bpf_map_lookup_elem(&http_scan_bufs, &zero);
	struct http_scan s = { .read_len = room, .in_method = 1 };

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
	bpf_loop(HTTP_SCAN_LEN, http_scan_byte, &s, 0);
	return (enum http_scan_result)s.result;
}

#endif /* CS_HTTP_PEEK_BPF_H */
