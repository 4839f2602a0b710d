/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a read carries, followed without copying it: TLS records
 * (handshakes told from requests) and the first bytes of plain HTTP.
 */
#ifndef CS_READ_PEEK_BPF_H
#define CS_READ_PEEK_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"
#include "http_peek.bpf.h"
#include "resp_peek.bpf.h"
#include "pg_peek.bpf.h"
#include "mysql_peek.bpf.h"
#include "syscalls.bpf.h"

/*
 * The buffer the current read system call copied into, and how much of
 * it is contiguous (room): sock_recv_length runs inside the call, after
 * the copy, and the call's own registers say which call it is and where
 * its buffer is. readv and recvmsg: the first iovec only. 0 for anything
 * else: io_uring (no system call of the reader's), recvmmsg, other
 * architectures.
 */
static __always_inline __u64 read_call_buffer(__u64 *room, __u64 len)
{
#if defined(CS_HAVE_SYSCALL_REGS)
	struct pt_regs *regs = cs_syscall_regs(bpf_get_current_task_btf());
	long nr = cs_syscall_nr(regs);
	__u64 arg = cs_syscall_arg2(regs); /* the buffer, or the iovec or msghdr that holds it */
	struct iovec iov;
	__u64 iov_at = arg;

	*room = len;
	if (nr == CS_NR_READ || nr == CS_NR_RECVFROM)
		return arg;
	if (nr == CS_NR_RECVMSG &&
	    bpf_probe_read_user(&iov_at, sizeof(iov_at), (void *)(arg + offsetof(struct user_msghdr, msg_iov))))
		return 0;
	if (nr != CS_NR_READV && nr != CS_NR_RECVMSG)
		return 0;
	if (bpf_probe_read_user(&iov, sizeof(iov), (void *)iov_at))
		return 0;
	*room = iov.iov_len < len ? iov.iov_len : len;
	return (__u64)iov.iov_base;
#else
	*room = 0;
	return 0;
#endif
}

/*
 * A TLS record header (RFC 8446 5.1): content type, legacy version (major,
 * minor), length. The major version is 3 from SSL 3.0 to TLS 1.3; the
 * minor one is taken from 1 (TLS 1.0) to 4 (TLS 1.3's own number, though
 * its records say 3, or 1 in a ClientHello).
 */
#define TLS_HEADER_LEN 5
#define TLS_VERSION_MAJOR 3
#define TLS_VERSION_MINOR_MIN 1 /* TLS 1.0 */
#define TLS_VERSION_MINOR_MAX 4
#define TLS_CT_FIRST 20 /* change_cipher_spec */
#define TLS_CT_LAST 24  /* heartbeat */
#define TLS_CT_HANDSHAKE 22
#define TLS_CT_APPLICATION_DATA 23
#define PEEK_RECORDS_PER_READ 6

/* A TLS record header: a known content type, major version 3. */
static __always_inline bool tls_header(const __u8 *h)
{
	return h[0] >= TLS_CT_FIRST && h[0] <= TLS_CT_LAST && h[1] == TLS_VERSION_MAJOR;
}

/*
 * Walk the TLS record headers that begin in this read (len bytes at buf),
 * noting each one's content type; the record under way at its end carries
 * over to the next read in tls_skip. A header split over two reads, or
 * more records in one read than we follow, loses the framing: said, and
 * no more looks at this connection.
 */
static __always_inline void follow_tls_records(struct conn_state *conn, __u64 buf, __u32 len, __u32 room,
					       __u32 read_us)
{
	__u32 at = conn->tls_skip;
	__u8 h[TLS_HEADER_LEN];

	if (room < len && at < len)
		goto lost;
	for (int i = 0; i < PEEK_RECORDS_PER_READ; i++) {
		if (at >= len) {
			conn->tls_skip = at - len;
			return;
		}
		if (len - at < TLS_HEADER_LEN || bpf_probe_read_user(h, sizeof(h), (void *)(buf + at)) ||
		    !tls_header(h))
			goto lost;
		__u8 r = conn->peek_records;
		__u32 record_len = (__u32)h[3] << 8 | h[4];
		if (h[0] == TLS_CT_HANDSHAKE && record_len > CS_PEEK_BIG_HANDSHAKE_LEN && conn->tls_records_seen)
			conn->peek_flags |= CS_PEEK_BIG_HANDSHAKE;
		conn->tls_records_seen = 1;
		if (r < CS_PEEK_TLS_RECORDS) {
			conn->peek_types[r & (CS_PEEK_TLS_RECORDS - 1)] = h[0];
			conn->peek_read_us[r & (CS_PEEK_TLS_RECORDS - 1)] = read_us;
		}
		if (r < 255)
			conn->peek_records = r + 1;
		at += TLS_HEADER_LEN + record_len;
	}
	if (at >= len) {
		conn->tls_skip = at - len;
		return;
	}
lost:
	conn->peek_flags |= CS_PEEK_LOST;
	conn->peek_conn = PEEK_OFF;
}

/*
 * The ClientHello's body, once: from the read that brings its first
 * bytes (OpenSSL reads the record header alone, then the body; JSSE both
 * at once: the body then starts after the header).
 */
static __always_inline void copy_client_hello(const struct sock *sk, struct conn_state *conn, __u64 buf,
					      __u32 room, bool first_read)
{
	__u32 at = first_read ? TLS_HEADER_LEN : 0;

	if (!conn->hello_len || room <= at)
		return;
	struct cs_ev_client_hello *ev = reserve_event(sizeof(*ev), CS_EV_CLIENT_HELLO);
	if (ev) {
		__u32 n = room - at;
		if (n > conn->hello_len)
			n = conn->hello_len;
		if (n > CS_HELLO_LEN)
			n = CS_HELLO_LEN;
		ev->sk = (__u64)sk;
		ev->record_len = conn->hello_len;
		ev->listener_port = conn->port;
		ev->captured_len = 0;
		/* n - 1 masked where the verifier sees it: the size is 1..CS_HELLO_LEN. */
		__u64 last = n - 1;
		asm volatile("%[last] &= %[mask]"
			     : [last] "+r"(last)
			     : [mask] "i"(CS_HELLO_LEN - 1));
		if (!bpf_probe_read_user(ev->hello, last + 1, (void *)(buf + at)))
			ev->captured_len = (__u16)(last + 1);
		submit_event(ev);
	}
	conn->hello_len = 0;
}

/*
 * Past its first exchanges a TLS connection's reads are not looked at, but
 * for one kind: an exchange of a few dozen bytes in all may be an alert,
 * the client's close_notify, which a server may answer with its own (JSSE
 * does): bytes in, then bytes out, and no request. Its size is the first
 * read and what the socket still holds (OpenSSL reads a record's 5-byte
 * header alone); if small, the first record's header is kept when it is
 * an alert's: type 21 (TLS 1.2), or type 23 of 19 bytes (TLS 1.3: an
 * alert's 2 bytes and its content type under a 16-byte AEAD tag; no
 * request is 3 bytes). The engine then counts the exchange as TLS
 * control, not as a request. Any other exchange leaves no record here.
 */
#define TLS_SMALL_EXCHANGE 96 /* above an alert under any TLS 1.2 cipher suite's overhead (CBC with SHA-384: 85) */
#define TLS_CT_ALERT 21
#define TLS13_ALERT_RECORD_LEN 19

static __always_inline void peek_tls_alert(const struct sock *sk, struct conn_state *conn, __u32 len)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);
	__u64 room = 0, buf;
	__u8 h[TLS_HEADER_LEN];

	if (!tp || len + (__u32)(tp->rcv_nxt - tp->copied_seq) > TLS_SMALL_EXCHANGE || len < TLS_HEADER_LEN)
		return;
	buf = read_call_buffer(&room, len);
	if (!buf || room < TLS_HEADER_LEN || bpf_probe_read_user(h, sizeof(h), (void *)buf) ||
	    h[1] != TLS_VERSION_MAJOR)
		return;
	if (h[0] != TLS_CT_ALERT && !(h[0] == TLS_CT_APPLICATION_DATA && ((__u32)h[3] << 8 | h[4]) == TLS13_ALERT_RECORD_LEN))
		return;
	__builtin_memcpy(conn->peek_first, h, sizeof(h));
	conn->peek_first_len = sizeof(h);
	conn->peek_types[0] = h[0];
	conn->peek_records = 1;
	conn->peek_flags |= CS_PEEK_TLS;
	conn->peek_seen = 1;
}

/*
 * The first read of a connection adopted at an idle moment: what arrived
 * must start a message. A TLS record header: its records re-synchronised
 * there, followed on for alerts (peek_tls_alert) and said on the request.
 * A PostgreSQL message, a MySQL command or a Redis array: its messages
 * counted from there. Text (an HTTP/1.x request line, Redis, memcached): a
 * request. Anything else (a TLS record or a request body under way, split
 * where the server had read all that came, a binary protocol): not a
 * boundary after all; the
 * connection goes back to partial until its next idle moment, said once.
 * An unreadable buffer: taken as a start (the kernel's state said so).
 */
static __always_inline void peek_adopted(const struct sock *sk, struct conn_state *conn, __u32 len)
{
	__u64 room = 0, buf = read_call_buffer(&room, len);
	__u8 h[TLS_HEADER_LEN] = {};

	conn->peek_conn = PEEK_OFF;
	/* (Four bytes: a MySQL command's header, read alone.) */
	__u32 want = room >= sizeof(h) ? sizeof(h) : room >= MYSQL_HEADER ? MYSQL_HEADER
									  : 1;
	if (!buf || room < 1 || bpf_probe_read_user(h, want, (void *)buf))
		return;
	if (room >= TLS_HEADER_LEN && tls_header(h) && h[2] <= TLS_VERSION_MINOR_MAX) {
		conn->peek_conn = PEEK_TLS;
		conn->flags |= CS_REQ_ADOPTED_TLS;
		return;
	}
	/* A PostgreSQL message (a type, then a length below 16 MiB): its messages walked from here. */
	if (room >= PG_TYPED_HEADER && h[1] == 0 && pg_frontend_type(h[0]) && pg_be32(h + 1) >= 4) {
		conn->peek_conn = PEEK_PG;
		return;
	}
	/* A MySQL command, the whole read: its packets walked from here, past the handshake. */
	if (mysql_command_read(h, (__u32)room, len)) {
		conn->peek_conn = PEEK_MYSQL;
		conn->wire_protocol = CS_WIRE_PROTOCOL_MYSQL;
		conn->mysql_authed = 1;
		return;
	}
	/* A RESP array's header: a Redis connection, its commands counted from here. */
	if (h[0] == '*' && room >= 2 && h[1] >= '0' && h[1] <= '9') {
		conn->peek_conn = PEEK_RESP;
		return;
	}
	if ((h[0] >= 0x20 && h[0] < 0x7f) || h[0] == '\r' || h[0] == '\n')
		return;
	struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);
	conn->partial = 1;
	conn->adopted = ADOPT_NONE;
	conn->rcv_nxt_seen = tp ? tp->rcv_nxt : 0;
	conn->flags |= CS_REQ_PARTIAL;
	if (!conn->not_a_start)
		conn->flags |= CS_REQ_NOT_A_START;
	conn->not_a_start = 1;
}

/*
 * Scan an exchange's first read for pipelined requests (http_peek.bpf.h):
 * the connection's first read decides whether it speaks HTTP/1.x at all.
 */
static __always_inline void scan_plain_read(struct conn_state *conn, __u64 buf, __u32 room)
{
	conn->peek_scanned = (__u8)conn->requests;
	switch (http_scan_read(buf, room)) {
	case HTTP_SCAN_MORE:
		conn->peek_seen = 1;
		conn->peek_flags |= CS_PEEK_MORE_REQUESTS;
		conn->peek_conn = PEEK_PLAIN;
		return;
	case HTTP_SCAN_ONE:
		conn->peek_conn = PEEK_PLAIN;
		return;
	case HTTP_SCAN_UNREADABLE:
		conn->peek_seen = 1;
		conn->peek_flags |= CS_PEEK_UNREADABLE;
		conn->peek_conn = PEEK_OFF;
		return;
	default:
		conn->peek_conn = PEEK_OFF;
	}
}

/*
 * A read in one of the connection's first exchanges: keep the exchange's
 * first bytes, decide at the connection's first read whether it speaks TLS
 * (a handshake record header: type 22, version 3.1 to 3.4) and follow its
 * records from then on, or HTTP/1.x, whose exchanges' first reads are
 * scanned for pipelined requests. Only in the first CS_PEEK_EXCHANGES
 * exchanges: every later read costs nothing here.
 */
static __always_inline void peek_read(const struct sock *sk, struct conn_state *conn, __u32 len, __u64 now)
{
	__u64 room = 0;
	__u64 buf;

	/* A plain connection's later exchanges: their first reads only, a record when something is found. */
	if (conn->peek_conn == PEEK_PLAIN) {
		if (conn->peek_scanned == (__u8)conn->requests)
			return;
		buf = read_call_buffer(&room, len);
		scan_plain_read(conn, buf, buf ? (__u32)room : 0);
		return;
	}
	buf = read_call_buffer(&room, len);
	conn->peek_seen = 1;
	if (conn->peek_conn == PEEK_TLS)
		conn->peek_flags |= CS_PEEK_TLS;
	if (!buf || !room) {
		conn->peek_flags |= CS_PEEK_UNREADABLE;
		if (conn->peek_conn == PEEK_TLS)
			conn->peek_flags |= CS_PEEK_LOST;
		conn->peek_conn = PEEK_OFF;
		return;
	}
	if (!conn->peek_first_len) {
		__u32 n = room < CS_PEEK_FIRST_LEN ? room : CS_PEEK_FIRST_LEN;
		if (n < 1 || n > CS_PEEK_FIRST_LEN || bpf_probe_read_user(conn->peek_first, n, (void *)buf))
			conn->peek_flags |= CS_PEEK_UNREADABLE;
		else
			conn->peek_first_len = n;
	}
	if (conn->peek_conn == PEEK_START) {
		const __u8 *f = conn->peek_first;
		/*
		 * Bytes sent before the first read: the server spoke first (MySQL's
		 * greeting). Told here, not at the send: on loopback the client may
		 * have read it and answered before the send's tracepoint runs.
		 */
		struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);
		if (tp && tp->bytes_sent)
			conn->msg_flags |= CS_MSG_GREETING;
		if (conn->peek_first_len >= TLS_HEADER_LEN && f[0] == TLS_CT_HANDSHAKE && f[1] == TLS_VERSION_MAJOR &&
		    f[2] >= TLS_VERSION_MINOR_MIN && f[2] <= TLS_VERSION_MINOR_MAX) {
			conn->peek_conn = PEEK_TLS;
			conn->peek_flags |= CS_PEEK_TLS;
			conn->hello_len = (__u32)f[3] << 8 | f[4];
			copy_client_hello(sk, conn, buf, (__u32)room, true);
		} else if ((conn->msg_flags & CS_MSG_GREETING) && mysql_first_bytes(conn->peek_first, conn->peek_first_len)) {
			conn->peek_conn = PEEK_MYSQL;
			conn->wire_protocol = CS_WIRE_PROTOCOL_MYSQL;
			mysql_read(conn, buf, (__u32)room, len);
			return;
		} else if (pg_first_bytes(conn->peek_first, conn->peek_first_len)) {
			conn->peek_conn = PEEK_PG;
			conn->peek_flags |= CS_PEEK_PG;
			conn->pg_untyped = 1;
			pg_read(conn, buf, (__u32)room, len);
			return;
		} else if (resp_kind(conn->peek_first, conn->peek_first_len) != PEEK_START) {
			conn->peek_conn = resp_kind(conn->peek_first, conn->peek_first_len);
			conn->peek_flags |= CS_PEEK_RESP;
			resp_read(conn, buf, (__u32)room, len);
			return;
		} else {
			scan_plain_read(conn, buf, (__u32)room);
			return;
		}
	} else if (conn->peek_conn == PEEK_TLS) {
		copy_client_hello(sk, conn, buf, (__u32)room, false);
	}
	if (conn->peek_conn == PEEK_TLS)
		follow_tls_records(conn, buf, len, (__u32)room,
				   now > conn->start_ns ? (__u32)((now - conn->start_ns) / 1000) : 0);
}

/* A read of a Redis, PostgreSQL or MySQL connection: its messages counted, every exchange long. */
static __always_inline void peek_messages(struct conn_state *conn, __u32 len)
{
	__u64 room = 0, buf = read_call_buffer(&room, len);

	if (conn->peek_conn == PEEK_PG)
		pg_read(conn, buf, (__u32)room, len);
	else if (conn->peek_conn == PEEK_MYSQL)
		mysql_read(conn, buf, (__u32)room, len);
	else
		resp_read(conn, buf, (__u32)room, len);
}

#endif /* CS_READ_PEEK_BPF_H */
