/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * MySQL's and MariaDB's client packets, walked as the server reads them.
 * The server speaks first (its greeting); the client answers with its
 * handshake response, and every packet is a 3-byte length (little-endian)
 * and a sequence number, then its payload. A command starts a new
 * sequence (0) and its payload's first byte names it; packets numbered
 * from 1 are the handshake and authentication before the first command,
 * and a command's own later packets after it (a LOAD DATA LOCAL file). The
 * walk skips each packet's payload by its length, across reads, and notes
 * per exchange:
 *
 * - the commands the server answers: one request each;
 * - set-up: the handshake response, an SSL request, authentication;
 * - the goodbye: COM_QUIT, which the server does not answer.
 * COM_STMT_CLOSE and COM_STMT_SEND_LONG_DATA are not answered either: not
 * requests (their exchange is the next command's).
 *
 * What cannot be walked makes the exchange CS_PEEK_UNCOUNTED: a header
 * split over two reads, a read whose buffer cannot be seen, more than
 * MYSQL_STEPS packets in one read.
 */
#ifndef CS_MYSQL_PEEK_BPF_H
#define CS_MYSQL_PEEK_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "conn_state.bpf.h"

#define MYSQL_STEPS 64             /* packets in one read */
#define MYSQL_HEADER 4             /* length, sequence */
#define MYSQL_MAX_PACKET 0xffffffu /* a payload this long continues in the next packet */
#define MYSQL_SSL_REQUEST_LEN 32   /* capabilities, max packet, charset, filler: then TLS */
#define MYSQL_CLIENT_PROTOCOL_41 0x200u
#define MYSQL_COM_QUIT 0x01
#define MYSQL_COM_STMT_SEND_LONG_DATA 0x18
#define MYSQL_COM_STMT_CLOSE 0x19
#define MYSQL_COM_LAST 0x1f                     /* the highest command byte the protocol defines */
#define MYSQL_ADOPT_HEADER_ALONE_MAX (1u << 20) /* a header read alone, taken for a command's below 1 MiB */

struct mysql_scan {
	__u64 buf;        /* the read's buffer */
	__u32 len;        /* bytes the read returned, all of them in buf */
	__u32 at;         /* the next byte to walk, from the read's start */
	__u32 skip;       /* payload bytes of the packet under way still to pass */
	__u32 queries;    /* commands the server answers, whose header this read brought */
	__u8 authed;      /* a command was seen: packets numbered from 1 are a command's own */
	__u8 continued;   /* the packet under way is MYSQL_MAX_PACKET long: the next continues it */
	__u8 ssl;         /* an SSL request was read: a TLS record comes next */
	__u8 command_due; /* a command's header ended the last read: its first byte starts this one */
	__u8 setup;
	__u8 goodbye;
	__u8 lost;
	__u8 tls;
};

static __always_inline __u32 mysql_le24(const __u8 *p)
{
	return (__u32)p[0] | (__u32)p[1] << 8 | (__u32)p[2] << 16;
}

static __always_inline __u32 mysql_le32(const __u8 *p)
{
	return mysql_le24(p) | (__u32)p[3] << 24;
}

/* A command packet's first byte: what it asks, and whether the server answers it. */
static __always_inline void mysql_command(struct mysql_scan *s, __u8 command)
{
	s->authed = 1;
	if (command == MYSQL_COM_QUIT)
		s->goodbye = 1;
	else if (command != MYSQL_COM_STMT_CLOSE && command != MYSQL_COM_STMT_SEND_LONG_DATA)
		s->queries++;
}

/*
 * A packet numbered from 1 before the first command: the handshake
 * response, or an SSL request (32 bytes exactly: a handshake response
 * adds at least its user's name).
 */
static __always_inline void mysql_handshake(struct mysql_scan *s, __u32 payload_len)
{
	s->setup = 1;
	s->ssl = payload_len == MYSQL_SSL_REQUEST_LEN;
}

/*
 * bpf_loop's body: pass a packet's payload, then read the next header. 1:
 * the read is done. A server may read a header alone, then its payload
 * (MariaDB does): a command's first byte then comes with the next read.
 */
static long mysql_step(__u64 i, void *ctx)
{
	struct mysql_scan *s = ctx;
	__u8 h[MYSQL_HEADER + 1] = {};

	(void)i;
	if (s->command_due && s->at < s->len) {
		if (bpf_probe_read_user(h, 1, (void *)(s->buf + s->at)))
			goto lost;
		mysql_command(s, h[0]);
		s->command_due = 0;
	}
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
	left = s->len - s->at;
	if (left < MYSQL_HEADER ||
	    bpf_probe_read_user(h, left > MYSQL_HEADER ? sizeof(h) : MYSQL_HEADER, (void *)(s->buf + s->at)))
		goto lost;
	if (s->ssl && h[0] == 0x16 && h[1] == 3) {
		s->tls = 1;
		return 1;
	}
	__u32 payload_len = mysql_le24(h);
	/* (A continued packet: the payload of a long command or handshake goes on.) */
	bool command = !s->continued && h[3] == 0 && payload_len > 0;
	if (command && left > MYSQL_HEADER)
		mysql_command(s, h[4]);
	else if (command)
		s->command_due = 1;
	else if (!s->continued && !s->authed)
		mysql_handshake(s, payload_len);
	s->continued = payload_len == MYSQL_MAX_PACKET;
	s->skip = payload_len;
	s->at += MYSQL_HEADER;
	return 0;
lost:
	s->lost = 1;
	return 1;
}

/*
 * One read of a MySQL connection: len bytes, room of them contiguous at
 * buf. What it brought adds to the exchange's; a walk lost is said on the
 * exchange, and the connection is walked no more.
 */
static __always_inline void mysql_read(struct conn_state *conn, __u64 buf, __u32 room, __u32 len)
{
	struct mysql_scan s = {
		.buf = buf,
		.len = len,
		.skip = conn->msg_skip,
		.authed = conn->mysql_authed,
		.continued = conn->mysql_continued,
		.ssl = conn->mysql_ssl,
		.command_due = conn->mysql_command_due,
	};

	if (!buf || room < len)
		s.lost = 1;
	else
		bpf_loop(MYSQL_STEPS, mysql_step, &s, 0);
	if (!s.lost && !s.tls && s.at < s.len)
		s.lost = 1;
	conn->mysql_authed = s.authed;
	conn->mysql_continued = s.continued;
	conn->mysql_ssl = s.ssl;
	conn->mysql_command_due = s.command_due;
	keep_walk(conn, s.skip, s.queries, (s.setup ? CS_MSG_SETUP : 0) | (s.goodbye ? CS_MSG_GOODBYE : 0), s.tls,
		  s.lost, CS_PEEK_UNCOUNTED);
}

/*
 * A connection's first bytes, after the server's greeting: the header of
 * a handshake response (or an SSL request), packet 1, and when the read
 * went on, the capabilities of a client that speaks the protocol 4.1
 * every server since MySQL 4.1 requires.
 */
static __always_inline bool mysql_first_bytes(const __u8 *first, __u8 first_len)
{
	if (first_len < MYSQL_HEADER || first[3] != 1 || mysql_le24(first) < MYSQL_SSL_REQUEST_LEN)
		return false;
	return first_len < MYSQL_HEADER + 4 || (mysql_le32(first + MYSQL_HEADER) & MYSQL_CLIENT_PROTOCOL_41);
}

/*
 * An adopted connection's bytes at an idle moment: one command packet,
 * the whole read (a command's header, a known command, its length), or
 * a command's header alone (a server that reads the payload next).
 */
static __always_inline bool mysql_command_read(const __u8 *h, __u32 room, __u32 len)
{
	if (room < MYSQL_HEADER || h[3] != 0 || mysql_le24(h) == 0)
		return false;
	if (len == MYSQL_HEADER)
		return mysql_le24(h) < MYSQL_ADOPT_HEADER_ALONE_MAX;
	return room > MYSQL_HEADER && h[4] >= 1 && h[4] <= MYSQL_COM_LAST && mysql_le24(h) + MYSQL_HEADER == len;
}

#endif /* CS_MYSQL_PEEK_BPF_H */
