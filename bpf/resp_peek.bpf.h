/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Redis's commands counted as the server reads them. A client that
 * pipelines (redis-benchmark -P 16, any client's pipeline) writes many
 * commands at once; the server reads them in one call and answers them in
 * one write: one exchange (bytes in, then bytes out) of sixteen requests,
 * which no timing tells. The bytes do: RESP frames each command.
 *
 * - An array command: "*N\r\n", then N bulk strings "$L\r\n" and L bytes
 *   and "\r\n". Headers are parsed; a bulk string's bytes are skipped by
 *   their length, across reads (a value of 1 MiB costs one step). A
 *   command counts in the read that brought its last byte: the read after
 *   which the server can answer it.
 * - An inline command: one line. A connection whose first bytes are a
 *   word and a line's end ("PING\r\n") counts the lines of each read.
 *
 * What cannot be counted makes the exchange CS_PEEK_UNCOUNTED (user space
 * keeps such a connection out of the per-request figures, as it does a
 * multiplexed one): a header split over two reads, a read whose buffer
 * cannot be seen, more than RESP_STEPS steps or RESP_INLINE_WINDOWS windows
 * in one read, an array command whose element is not a bulk string.
 *
 * Cost: one copy of up to RESP_WINDOW bytes per read (more for a long
 * read), then a step per header: redis-benchmark's PING is two headers.
 */
#ifndef CS_RESP_PEEK_BPF_H
#define CS_RESP_PEEK_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "conn_state.bpf.h"
#include "http_peek.bpf.h"

#define RESP_WINDOW HTTP_SCAN_LEN /* the per-CPU scan buffer, shared with http_peek */
#define RESP_HEADER_MAX 16        /* '*' or '$', a sign, up to 12 digits, "\r\n" */
#define RESP_STEPS 256            /* headers and window copies in one read */
#define RESP_INLINE_WINDOWS 8     /* 4 KiB of inline commands in one read */
#define RESP_COMMANDS_MAX 65535   /* what the record's count holds */

struct resp_scan {
	__u64 buf;        /* the read's buffer */
	__u32 len;        /* bytes the read returned, all of them in buf */
	__u32 at;         /* the next byte to parse, from the read's start */
	__u32 win_at;     /* the copied window's first byte, from the read's start */
	__u32 win_len;    /* bytes in the window */
	__u32 skip;       /* bytes of a bulk string and its CRLF still to pass */
	__u32 elems_left; /* bulk strings of the command under way still to come */
	__u32 commands;   /* commands whose last byte this read brought */
	__u8 lost;        /* could not be counted */
};

/* Copy the window that begins at s->at: up to RESP_WINDOW bytes of the read. */
static __always_inline bool resp_copy_window(struct resp_scan *s, struct http_scan_buf *b)
{
	__u32 n = s->len - s->at;
	if (n > RESP_WINDOW)
		n = RESP_WINDOW;
	/* n - 1 masked where the verifier sees it: the size is 1..RESP_WINDOW. */
	__u64 last = n - 1;
	asm volatile("%[last] &= %[mask]"
		     : [last] "+r"(last)
		     : [mask] "i"(RESP_WINDOW - 1));
	if (!n || bpf_probe_read_user(b->bytes, last + 1, (void *)(s->buf + s->at)))
		return false;
	s->win_at = s->at;
	s->win_len = (__u32)(last + 1);
	return true;
}

/*
 * The header at s->at ("*N\r\n" or "$L\r\n"), whole inside the window:
 * its number in *value, its length returned; 0 when it is not one, or
 * does not end inside the window. A global function, checked once by the
 * verifier on its own (inlined, its digits' branches multiply the loop's
 * states). s may be NULL to it.
 */
__attribute__((noinline)) int resp_header(struct resp_scan *s, __u8 type, __s64 *value)
{
	__u32 zero = 0;
	const struct http_scan_buf *b = bpf_map_lookup_elem(&http_scan_bufs, &zero);
	__s64 n = 0;
	bool negative = false;

	if (!s || !value || !b || s->at < s->win_at)
		return 0;
	__u32 off = s->at - s->win_at;
	if (off >= RESP_WINDOW || b->bytes[off & (RESP_WINDOW - 1)] != type)
		return 0;
#pragma unroll
	for (int k = 1; k < RESP_HEADER_MAX; k++) {
		if (off + k >= s->win_len)
			return 0;
		__u8 c = b->bytes[(off + k) & (RESP_WINDOW - 1)];
		if (c == '-' && k == 1) {
			negative = true;
		} else if (c >= '0' && c <= '9') {
			n = n * 10 + (c - '0');
		} else if (c == '\r' && k > 1 && off + k + 1 < s->win_len &&
			   b->bytes[(off + k + 1) & (RESP_WINDOW - 1)] == '\n') {
			*value = negative ? -n : n;
			return k + 2;
		} else {
			return 0;
		}
	}
	return 0;
}

/* A bulk string's bytes and CRLF passed, as far as the read goes. */
static __always_inline void resp_pass_bulk(struct resp_scan *s)
{
	__u32 left = s->len - s->at;
	if (s->skip > left) {
		s->skip -= left;
		s->at = s->len;
		return;
	}
	s->at += s->skip;
	s->skip = 0;
	if (!s->elems_left)
		s->commands++;
}

/* bpf_loop's body: pass a bulk string, or parse the next header. 1: the read is done. */
static long resp_step(__u64 i, void *ctx)
{
	struct resp_scan *s = ctx;
	__u32 zero = 0;
	struct http_scan_buf *b = bpf_map_lookup_elem(&http_scan_bufs, &zero);
	__s64 value = 0;

	(void)i;
	if (!b)
		goto lost;
	if (s->skip)
		resp_pass_bulk(s);
	if (s->at >= s->len)
		return 1;
	/* A header not whole in the window: copy the next one from it, if the read goes on. */
	if (s->at + RESP_HEADER_MAX > s->win_at + s->win_len && s->win_at + s->win_len < s->len)
		return resp_copy_window(s, b) ? 0 : (s->lost = 1);
	int n = resp_header(s, s->elems_left ? '$' : '*', &value);
	if (n <= 0)
		goto lost;
	s->at += n;
	if (!s->elems_left) {
		/* A command's array: an empty one is answered at once. */
		if (value <= 0)
			s->commands++;
		else
			s->elems_left = (__u32)value;
		return 0;
	}
	if (value < 0)
		goto lost;
	s->elems_left--;
	s->skip = (__u32)value + 2;
	return 0;
lost:
	s->lost = 1;
	return 1;
}

/*
 * Count the lines of a read of inline commands (each '\n' a command's
 * end): eight bytes at a time, the '\n's of a word found exactly (no
 * carry between bytes) and added up by one multiplication.
 */
#define RESP_LOW7 0x7f7f7f7f7f7f7f7full
static long resp_inline_word(__u64 i, void *ctx)
{
	struct resp_scan *s = ctx;
	__u32 zero = 0, at = (__u32)i * 8;
	const struct http_scan_buf *b = bpf_map_lookup_elem(&http_scan_bufs, &zero);

	if (!b || at >= s->win_len)
		return 1;
	__u64 x = http_word(b, at) ^ HTTP_NEWLINES;
	__u64 nl = ~(((x & RESP_LOW7) + RESP_LOW7) | x | RESP_LOW7); /* 0x80 where a byte was '\n' */
	__u32 valid = s->win_len - at;
	if (valid < 8)
		nl &= (1ull << (valid * 8)) - 1;
	s->commands += (__u32)(((nl >> 7) * HTTP_ONES) >> 56);
	return 0;
}

static __always_inline void resp_count_inline(struct resp_scan *s, struct http_scan_buf *b)
{
	for (int w = 0; w < RESP_INLINE_WINDOWS; w++) {
		if (s->at >= s->len)
			return;
		if (!resp_copy_window(s, b)) {
			s->lost = 1;
			return;
		}
		bpf_loop(RESP_WINDOW / 8, resp_inline_word, s, 0);
		s->at += s->win_len;
	}
	if (s->at < s->len)
		s->lost = 1;
}

/*
 * One read of a Redis connection: len bytes, room of them contiguous at
 * buf. Its commands add to the exchange's; a count lost is said on the
 * exchange, and the connection is counted no more.
 */
static __always_inline void resp_read(struct conn_state *conn, __u64 buf, __u32 room, __u32 len)
{
	__u32 zero = 0;
	struct http_scan_buf *b = bpf_map_lookup_elem(&http_scan_bufs, &zero);
	struct resp_scan s = {
		.buf = buf,
		.len = len,
		.skip = conn->msg_skip,
		.elems_left = conn->resp_elems_left,
	};

	/* Reads went by unseen (resp_resync): an array command's count goes on only from one's start. */
	if (!b || !buf || room < len ||
	    (conn->peek_conn == PEEK_RESP && conn->resp_resync && resp_copy_window(&s, b) && b->bytes[0] != '*')) {
		s.lost = 1;
	} else if (conn->peek_conn == PEEK_RESP_INLINE) {
		resp_count_inline(&s, b);
	} else {
		bpf_loop(RESP_STEPS, resp_step, &s, 0);
		if (s.at < s.len)
			s.lost = 1;
	}
	conn->resp_resync = 0;
	__u32 total = conn->msg_commands + s.commands;
	conn->msg_commands = total > RESP_COMMANDS_MAX ? RESP_COMMANDS_MAX : (__u16)total;
	conn->msg_skip = s.skip;
	conn->resp_elems_left = s.elems_left;
	if (s.lost) {
		conn->peek_flags |= CS_PEEK_RESP | CS_PEEK_UNCOUNTED;
		conn->peek_seen = 1;
		conn->peek_conn = PEEK_OFF;
	}
}

/*
 * A connection's first bytes (first_len of them): a RESP array header
 * ('*' and a digit), or an inline command (letters, then a line's end:
 * "PING\r\n"; a word and a space may be HTTP's method, and is left to it).
 */
static __always_inline enum peek_conn_state resp_kind(const __u8 *first, __u8 first_len)
{
	if (first_len >= 2 && first[0] == '*' && first[1] >= '0' && first[1] <= '9')
		return PEEK_RESP;
	for (int i = 0; i < CS_PEEK_FIRST_LEN; i++) {
		if (i >= first_len)
			return PEEK_START;
		__u8 c = first[i] | 0x20;
		if ((first[i] == '\r' || first[i] == '\n') && i > 0)
			return PEEK_RESP_INLINE;
		if (c < 'a' || c > 'z')
			return PEEK_START;
	}
	return PEEK_START;
}

#endif /* CS_RESP_PEEK_BPF_H */
