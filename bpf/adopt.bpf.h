/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Connections older than the attach: given storage at their first sight,
 * partial until an idle moment, then followed as if accepted after the
 * attach (their requests whole, not their first).
 */
#ifndef CS_ADOPT_BPF_H
#define CS_ADOPT_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"
#include "requests.bpf.h"

/*
 * Nothing read from it: every byte it received is still queued. Its first
 * exchange is to come, whole; what the server sent before is a greeting
 * (a server that speaks first, as MySQL's).
 */
static __always_inline bool is_fresh_connection(const struct tcp_sock *tp)
{
	return tp->rcv_nxt - tp->copied_seq == (__u32)tp->bytes_received;
}

/*
 * The client had the server's whole answer: every byte the server wrote is
 * acknowledged. The ACK that comes with the bytes now arriving is taken
 * before they are said to be ready (tcp_rcv_established, tcp_ack before
 * tcp_data_ready), so a client that sent after reading the answer passes.
 */
static __always_inline bool answer_acked(const struct tcp_sock *tp)
{
	return tp->snd_una == tp->write_seq;
}

/*
 * At data_ready, seen for the first time: the bytes now arriving are the
 * only unread ones. The receive queue holds one buffer and the server has
 * read none of it (TCP frees a buffer once read whole, so the queue of a
 * server that had read everything was empty). Not told apart: bytes that
 * arrived before the attach, unread, and were merged into the buffer with
 * these (a request in parts while its server was slow to read).
 */
static __always_inline bool only_arriving_bytes_unread(const struct sock *sk, const struct tcp_sock *tp)
{
	if (BPF_CORE_READ(sk, sk_receive_queue.qlen) != 1)
		return false;
	const struct sk_buff *head = BPF_CORE_READ(sk, sk_receive_queue.next);
	__u32 head_seq = 0; /* TCP_SKB_CB(head)->seq: the first field of its control block */
	if (bpf_probe_read_kernel(&head_seq, sizeof(head_seq),
				  (const char *)head + bpf_core_field_offset(struct sk_buff, cb)))
		return false;
	return head_seq == tp->copied_seq;
}

/*
 * From here an older connection is followed as one accepted after the
 * attach: its requests are whole, though not its first (index from 1:
 * its set-up happened before the attach). Its next read's first bytes must
 * start a message (peek_adopted); no other looks at its bytes but for a
 * TLS alert (the peek follows a connection's first exchanges).
 */
static __always_inline void adopt_idle(struct conn_state *conn)
{
	conn->partial = 0;
	conn->adopted = ADOPT_DUE;
	conn->first_unseen = 1;
	conn->peek_conn = PEEK_ADOPTED;
}

/*
 * A connection older than the attach, followed as partial, at data_ready:
 * it was idle before these bytes if the server had read all that a probe
 * saw arrive at its last look (each arrival since raised data_ready, which
 * looks) and the client had the whole answer; and the server was not
 * reading a request (one in parts read as they come is not idle between
 * them). Then the request in flight at the attach (if seen) ends, partial,
 * and these bytes begin the first whole one.
 */
static __always_inline void adopt_when_idle(const struct sock *sk, struct conn_state *conn, __u64 now)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);
	if (!tp)
		return;
	__u32 seen = conn->rcv_nxt_seen;
	conn->rcv_nxt_seen = tp->rcv_nxt;
	if ((conn->phase != PHASE_IDLE && conn->phase != PHASE_SENDING) || tp->copied_seq != seen ||
	    !answer_acked(tp))
		return;
	finish_request(sk, conn, now);
	adopt_idle(conn);
	conn->adopted = conn->stamped_since ? ADOPT_DUE_STAMPED : ADOPT_DUE;
}

/*
 * A connection seen for the first time without storage: one established
 * between tracing windows (whole: its start is known), older than the
 * attach, or one whose ESTABLISHED the state probe never saw (rare; its
 * accept then counts as partial). Followed from here if it is on a target
 * port. An older one whose bytes are arriving now while it was idle (fresh:
 * none read and nothing sent yet; or the previous exchange over) is
 * adopted: its requests are whole from this one. Otherwise it is partial
 * until its first idle moment (adopt_when_idle). NULL if it is not ours
 * (or the storage is full: counted).
 */
static __always_inline struct conn_state *adopt_connection(const struct sock *sk, bool arriving)
{
	struct conn_state *conn;

	if (sk->__sk_common.skc_state != TCP_ESTABLISHED ||
	    sk->__sk_common.skc_family == AF_UNIX ||
	    !is_target_sk_port(sk, sk->__sk_common.skc_num))
		return NULL;
	conn = bpf_sk_storage_get(&conns, (void *)sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!conn) {
		count(CS_CTR_SOCKET_STORAGE);
		return NULL;
	}
	conn->port = sk->__sk_common.skc_num;
	conn->window = trace_window;
	/*
	 * Stamped since the attach, after the first window: established
	 * between windows (whole from its first bytes, or from an idle moment
	 * as an older one), or older and read since: TCP's stamp is its start
	 * or later (reads move it). Its close takes the stamp; the engine
	 * takes the start from its accept, when it saw one. In the first
	 * window (and always in `connscope attach`) every connection
	 * established since has storage: one without is older.
	 */
	__u64 stamp_ns = tcp_stamp_ns(sk);
	bool stamped_since = trace_window > 1 && stamp_ns >= attach_ns;
	if (stamped_since) {
		conn->established_ns = stamp_ns;
		conn->last_activity_ns = stamp_ns;
	}
	struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);
	if (arriving && tp && is_fresh_connection(tp))
		return conn;
	if (arriving && tp && answer_acked(tp) && only_arriving_bytes_unread(sk, tp)) {
		adopt_idle(conn);
		conn->adopted = stamped_since ? ADOPT_DUE_STAMPED : ADOPT_DUE;
		return conn;
	}
	conn->stamped_since = stamped_since;
	conn->partial = 1;
	conn->rcv_nxt_seen = tp ? tp->rcv_nxt : 0;
	return conn;
}

#endif /* CS_ADOPT_BPF_H */
