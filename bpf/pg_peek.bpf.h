/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * PostgreSQL's frontend messages, walked as the server reads them. Every
 * message but the first is a type byte and a 4-byte length (which counts
 * itself); the first (the start-up, or an SSL or GSS request, after which
 * the start-up comes again) has no type byte. The walk skips each
 * message's body by its length, across reads, and notes per exchange:
 *
 * - the queries it brought: a simple query ('Q') or an extended-protocol
 *   Sync ('S'), each answered by its ReadyForQuery: one request each, so a
 *   pipeline of several is counted as Redis's are;
 * - set-up: the start-up message, a password or SASL message ('p');
 * - the goodbye: Terminate ('X'), which the server does not answer.
 *
 * What cannot be walked makes the exchange CS_PEEK_UNCOUNTED: a header
 * split over two reads, a read whose buffer cannot be seen, more than
 * PG_STEPS messages in one read, a length below its own size.
 */
#ifndef CS_PG_PEEK_BPF_H
#define CS_PG_PEEK_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "conn_state.bpf.h"

#define PG_STEPS 64         /* messages in one read */
#define PG_TYPED_HEADER 5   /* type, length */
#define PG_UNTYPED_HEADER 8 /* length, code */
#define PG_SSL_REQUEST 80877103u
#define PG_GSSENC_REQUEST 80877104u
#define PG_STARTUP_MAX 10000u /* the server refuses a longer start-up packet */

struct pg_scan {
	__u64 buf;     /* the read's buffer */
	__u32 len;     /* bytes the read returned, all of them in buf */
	__u32 at;      /* the next byte to walk, from the read's start */
	__u32 skip;    /* bytes of the message under way still to pass */
	__u32 queries; /* queries and Syncs whose header this read brought */
	__u8 untyped;  /* the next message has no type byte (start-up, SSL or GSS request) */
	__u8 setup;    /* a start-up or authentication message */
	__u8 goodbye;  /* Terminate */
	__u8 lost;
	__u8 tls; /* the server took up SSL: a TLS record came where the start-up would */
};

static __always_inline __u32 pg_be32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

/* A frontend message's type (the protocol's 3.0 messages a client sends once started). */
static __always_inline bool pg_frontend_type(__u8 t)
{
	return t == 'Q' || t == 'P' || t == 'B' || t == 'E' || t == 'S' || t == 'D' || t == 'C' || t == 'H' ||
	       t == 'F' || t == 'X' || t == 'p' || t == 'd' || t == 'c' || t == 'f';
}

/* The untyped first message: a start-up, or a request for SSL or GSS (the start-up follows). */
static __always_inline long pg_untyped(struct pg_scan *s, const __u8 *h)
{
	__u32 len = pg_be32(h), code = pg_be32(h + 4);
	if (len < PG_UNTYPED_HEADER || len > PG_STARTUP_MAX)
		return -1;
	s->untyped = code == PG_SSL_REQUEST || code == PG_GSSENC_REQUEST;
	s->setup = 1;
	s->skip = len - PG_UNTYPED_HEADER;
	return PG_UNTYPED_HEADER;
}

/* bpf_loop's body: pass a message's body, then read the next header. 1: the read is done. */
static long pg_step(__u64 i, void *ctx)
{
	struct pg_scan *s = ctx;
	__u8 h[PG_UNTYPED_HEADER];

	(void)i;
	__u32 left = s->len - s->at;
	if (s->skip > left) {
		s->skip -= left;
		s->at = s->len;
		return 1;
	}
	s->at += s->skip;
	s->skip = 0;
	if (s->at >= s->len)
		return 1;
	__u32 want = s->untyped ? PG_UNTYPED_HEADER : PG_TYPED_HEADER;
	if (s->len - s->at < want || bpf_probe_read_user(h, want, (void *)(s->buf + s->at)))
		goto lost;
	long n;
	if (s->untyped && h[0] == 0x16 && h[1] == 3) {
		s->tls = 1;
		return 1;
	}
	if (s->untyped) {
		n = pg_untyped(s, h);
	} else {
		__u32 len = pg_be32(h + 1);
		if (len < 4 || !pg_frontend_type(h[0]))
			goto lost;
		n = PG_TYPED_HEADER;
		s->skip = len - 4;
		s->queries += h[0] == 'Q' || h[0] == 'S';
		s->setup |= h[0] == 'p';
		s->goodbye |= h[0] == 'X';
	}
	if (n < 0)
		goto lost;
	s->at += (__u32)n;
	return 0;
lost:
	s->lost = 1;
	return 1;
}

/*
 * One read of a PostgreSQL connection: len bytes, room of them contiguous
 * at buf. What it brought adds to the exchange's; a walk lost is said on
 * the exchange, and the connection is walked no more.
 */
static __always_inline void pg_read(struct conn_state *conn, __u64 buf, __u32 room, __u32 len)
{
	struct pg_scan s = {
		.buf = buf,
		.len = len,
		.skip = conn->msg_skip,
		.untyped = conn->pg_untyped,
	};

	conn->resp_resync = 0;
	if (!buf || room < len)
		s.lost = 1;
	else
		bpf_loop(PG_STEPS, pg_step, &s, 0);
	if (!s.lost && !s.tls && s.at < s.len)
		s.lost = 1;
	conn->pg_untyped = s.untyped;
	keep_walk(conn, s.skip, s.queries, (s.setup ? CS_MSG_SETUP : 0) | (s.goodbye ? CS_MSG_GOODBYE : 0), s.tls,
		  s.lost, CS_PEEK_PG | CS_PEEK_UNCOUNTED);
}

/* A connection's first bytes: a PostgreSQL start-up message, or an SSL or GSS request. */
static __always_inline bool pg_first_bytes(const __u8 *first, __u8 first_len)
{
	if (first_len < PG_UNTYPED_HEADER)
		return false;
	__u32 len = pg_be32(first), code = pg_be32(first + 4);
	return len >= PG_UNTYPED_HEADER && len <= PG_STARTUP_MAX &&
	       (code == 0x00030000u || code == PG_SSL_REQUEST || code == PG_GSSENC_REQUEST);
}

#endif /* CS_PG_PEEK_BPF_H */
