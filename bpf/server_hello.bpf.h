/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A TLS connection's server answers the ClientHello with its first flight,
 * the ServerHello first: in TLS 1.2 its ALPN extension names the protocol
 * the server chose (HTTP/2 or not), in the clear. Its first bytes are
 * copied once per connection, from the sending call's own buffer, at the
 * send's start (tcp_sendmsg_locked); user space reads them.
 */
#ifndef CS_SERVER_HELLO_BPF_H
#define CS_SERVER_HELLO_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"

/* The sending call's first buffer and its length: a send()'s, or a writev()'s first vector. */
static __always_inline const void *send_buffer(const struct msghdr *msg, __u64 *len)
{
	__u8 type = BPF_CORE_READ(msg, msg_iter.iter_type);
	__u64 count = BPF_CORE_READ(msg, msg_iter.count);

	if (BPF_CORE_READ(msg, msg_iter.iov_offset))
		return NULL;
	if (type == ITER_UBUF) {
		*len = count;
		return BPF_CORE_READ(msg, msg_iter.ubuf);
	}
	if (type != ITER_IOVEC)
		return NULL;
	const struct iovec *iov = BPF_CORE_READ(msg, msg_iter.__iov);
	__u64 first = BPF_CORE_READ(iov, iov_len);
	*len = first < count ? first : count;
	return BPF_CORE_READ(iov, iov_base);
}

static __always_inline void copy_server_hello(const struct sock *sk, struct conn_state *conn,
					      const struct msghdr *msg)
{
	__u64 len = 0;

	conn->server_hello_seen = 1;
	const void *buf = send_buffer(msg, &len);
	if (!buf || !len)
		return;
	struct cs_ev_server_hello *ev = reserve_event(sizeof(*ev), CS_EV_SERVER_HELLO);
	if (!ev)
		return;
	ev->sk = (__u64)sk;
	ev->send_len = len > 0xffffffffull ? 0xffffffffu : (__u32)len;
	ev->listener_port = conn->port;
	ev->captured_len = 0;
	/* len - 1 masked where the verifier sees it: the size is 1..CS_SERVER_HELLO_LEN. */
	__u64 last = (len < CS_SERVER_HELLO_LEN ? len : CS_SERVER_HELLO_LEN) - 1;
	asm volatile("%[last] &= %[mask]"
		     : [last] "+r"(last)
		     : [mask] "i"(CS_SERVER_HELLO_LEN - 1));
	if (!bpf_probe_read_user(ev->flight, last + 1, buf))
		ev->captured_len = (__u16)(last + 1);
	submit_event(ev);
}

#endif /* CS_SERVER_HELLO_BPF_H */
