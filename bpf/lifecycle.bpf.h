/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Resets, handshakes and state changes of the connections.
 */
#ifndef CS_LIFECYCLE_BPF_H
#define CS_LIFECYCLE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "maps.bpf.h"
#include "core_compat.bpf.h"
#include "sock_reads.bpf.h"
#include "requests.bpf.h"
#include "socket_probes.bpf.h"
#include "upstreams.bpf.h"

/* ---- accept-queue pressure: when local handshakes are worth following --- */

/* A drop or a lost SYN at ep: its next handshakes may wait too. */
static __always_inline void note_queue_pressure(struct cs_endpoint_state *ep, __u64 now)
{
	ep->pressure_until_ns = now + CS_PRESSURE_HOLD_NS;
}

/*
 * May a local client's handshake to ep, its SYN leaving now, be delayed?
 * Only if the accept queue drops its SYN or its last ACK: on loopback
 * both arrive within the connect() that sent the SYN, so a listener
 * less than half full now has room for them (two CPUs, two handshakes at
 * once). Not walked yet, or too many listeners to look at: follow.
 */
static __always_inline bool handshake_may_wait(const struct cs_endpoint_state *ep, __u64 now)
{
	__u32 listeners = ep->listeners;

	if (now < ep->pressure_until_ns || listeners == 0 || listeners > CS_ENDPOINT_LISTENERS)
		return true;
	for (__u32 i = 0; i < CS_ENDPOINT_LISTENERS; i++) {
		if (i >= listeners)
			break;
		/* Fault-safe loads: a listener closed since the walk reads as garbage or 0 (followed). */
		const struct sock *listener = kernel_ptr(struct sock, ep->listener_sk[i]);
		if (2 * listener->sk_ack_backlog >= listener->sk_max_ack_backlog)
			return true;
	}
	return false;
}

/* ---- resets ---------------------------------------------------------------- */

static __always_inline void emit_reset(const struct sock *sk, struct cs_tuple *tuple, __u32 reason,
				       __u8 direction, __u16 flags)
{
	struct cs_ev_reset *ev = reserve_event(sizeof(*ev), CS_EV_RESET);

	if (!ev)
		return;
	ev->sk = (__u64)sk;
	__builtin_memcpy(&ev->tuple, tuple, sizeof(ev->tuple));
	ev->reason = reason;
	ev->direction = direction;
	ev->state = sk ? BPF_CORE_READ(sk, __sk_common.skc_state) : 0;
	ev->flags = flags;
	submit_event(ev);
}

/*
 * Ports of a reset. The socket's own port cannot be trusted: a reset often
 * follows the move to CLOSE, which clears it (inet_put_port). The segment
 * that provoked the reset, or our storage, still knows.
 */
SEC("tp_btf/tcp_send_reset")
int BPF_PROG(on_send_reset, const struct sock *sk, const struct sk_buff *skb, int reason)
{
	if (lifecycle_off())
		return 0;
	struct cs_tuple tuple = {};
	struct conn_state *conn = NULL;
	__u16 flags = 0;

	if (sk && BPF_CORE_READ(sk, __sk_common.skc_state) != TCP_TIME_WAIT) {
		/* A full socket (timewait ones have no storage). */
		conn = bpf_sk_storage_get(&conns, (void *)sk, 0, 0);
		if (conn && conn->unread_at_close)
			flags |= CS_RESET_UNREAD_REQUEST;
	}
	if (skb) {
		struct tcphdr th;
		if (!cs_skb_tcphdr(skb, &th))
			return 0;
		tuple.local_port = bpf_ntohs(th.dest);
		tuple.remote_port = bpf_ntohs(th.source);
	} else if (conn) {
		tuple.local_port = conn->port;
	} else if (sk) {
		tuple.local_port = BPF_CORE_READ(sk, __sk_common.skc_num);
	}
	if (sk ? !is_target_sk_port(sk, tuple.local_port)
	       : !skb || !is_target_skb_port(skb, tuple.local_port))
		return 0;
	if (sk) {
		/* Addresses survive the close; take them, keep the ports. */
		__u16 local_port = tuple.local_port, remote_port = tuple.remote_port;
		read_tuple(sk, &tuple);
		tuple.local_port = local_port;
		if (remote_port)
			tuple.remote_port = remote_port;
	}
	emit_reset(sk, &tuple, (__u32)reason, CS_RESET_SENT, flags);
	return 0;
}

/*
 * A third ACK dropped because the accept queue was full (the SYN itself was
 * let in). Most frees carry other reasons: compare that first.
 */
SEC("tp_btf/kfree_skb")
int BPF_PROG(on_kfree_skb, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	if (lifecycle_off())
		return 0;
	if (!cs_is_listen_overflow(reason))
		return 0;
	struct tcphdr th;
	if (!cs_skb_tcphdr(skb, &th))
		return 0;
	__u16 port = bpf_ntohs(th.dest);
	struct cs_endpoint_state *ep = target_endpoint_of_skb(skb, port);
	if (!ep)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	note_queue_pressure(ep, now);
	struct cs_ev_ack_overflow *ev = reserve_event_at(sizeof(*ev), CS_EV_ACK_OVERFLOW, now);
	if (!ev)
		return 0;
	__builtin_memset(&ev->tuple, 0, sizeof(ev->tuple));
	ev->tuple.local_port = port;
	ev->tuple.remote_port = bpf_ntohs(th.source);
	submit_event(ev);
	return 0;
}

SEC("tp_btf/tcp_receive_reset")
int BPF_PROG(on_receive_reset, struct sock *sk)
{
	if (lifecycle_off())
		return 0;
	struct cs_tuple tuple = {};

	/* Before the reset is processed: the socket still has its port. */
	if (!sk || !is_target_sk_port(sk, sk->__sk_common.skc_num))
		return 0;
	read_tuple(sk, &tuple);
	emit_reset(sk, &tuple, 0, CS_RESET_RECEIVED, 0);
	return 0;
}

/* ---- the connection enters the accept queue; client handshakes ---------- */

/* A client socket's connection, keyed as the server's side will look it up. */
static __always_inline struct handshake_key client_handshake_key(const struct sock *sk)
{
	struct handshake_key key = {
		.client_addr = addr_low32(sk, false),
		.client_port = sk->__sk_common.skc_num,
		.server_port = bpf_ntohs(sk->__sk_common.skc_dport),
	};
	return key;
}

/* Leave a followed handshake for the server's side; client_established_ns 0: its end unseen. */
static __always_inline void leave_client_handshake(const struct sock *sk, const struct client_handshake *hs,
						   __u64 client_established_ns)
{
	struct handshake_key key = client_handshake_key(sk);
	struct handshake_done done = {
		.syn_sent_ns = hs->syn_sent_ns,
		.last_syn_ns = hs->last_syn_ns,
		.client_established_ns = client_established_ns,
		.syn_retransmits = hs->syn_retransmits,
		.tgid = hs->tgid,
	};
	if (!bpf_map_update_elem(&handshakes_done, &key, &done, BPF_NOEXIST))
		__sync_fetch_and_add(&handshakes_pending, 1);
	else if (bpf_map_update_elem(&handshakes_done, &key, &done, BPF_EXIST))
		count(CS_CTR_TABLE_FULL);
}

/* Take a handshake out of handshakes_done (and out of the count, if it was there). */
static __always_inline void take_handshake(const struct handshake_key *key)
{
	if (!bpf_map_delete_elem(&handshakes_done, key))
		__sync_fetch_and_add(&handshakes_pending, -1);
}

/* The client's side of a handshake ended: leave it for the server's side. */
static __always_inline void on_client_handshake_end(const struct sock *sk, bool established)
{
	struct client_handshake *hs;

	hs = bpf_sk_storage_get(&client_handshakes, (void *)sk, 0, 0);
	if (!hs)
		return;
	if (established) {
		leave_client_handshake(sk, hs, bpf_ktime_get_ns());
	} else if (hs->syn_retransmits > 0) {
		/* It gave up: no server side will ever come to take what its retransmits left. */
		struct handshake_key key = client_handshake_key(sk);
		take_handshake(&key);
		struct cs_ev_handshake *ev = reserve_event(sizeof(*ev), CS_EV_HANDSHAKE);
		if (ev) {
			ev->sk = (__u64)sk;
			ev->syn_sent_ns = hs->syn_sent_ns;
			ev->last_syn_ns = hs->last_syn_ns;
			ev->client_established_ns = 0;
			ev->extra_ns = 0;
			__builtin_memset(&ev->tuple, 0, sizeof(ev->tuple));
			ev->tuple.local_port = bpf_ntohs(sk->__sk_common.skc_dport);
			ev->syn_retransmits = hs->syn_retransmits;
			ev->tgid = hs->tgid;
			ev->established = 0;
			ev->pad = 0;
			submit_event(ev);
		}
	}
	bpf_sk_storage_delete(&client_handshakes, (void *)sk);
}

/* A slow handshake is worth a record of its own (the listener's evidence). */
#define SLOW_HANDSHAKE_NS (100 * 1000 * 1000)

/*
 * The server's side of a connection became ESTABLISHED: if a local client
 * made it, its extra connect delay is what the server's queue cost it
 * (kept in conn for its first request; conn NULL: between windows).
 */
static __always_inline void join_client_handshake(const struct sock *sk, struct conn_state *conn,
						  __u64 now)
{
	if (!handshakes_pending)
		return;
	struct handshake_key key = {
		.client_addr = addr_low32(sk, true),
		.client_port = bpf_ntohs(sk->__sk_common.skc_dport),
		.server_port = sk->__sk_common.skc_num,
	};
	struct handshake_done *done = bpf_map_lookup_elem(&handshakes_done, &key);
	if (!done)
		return;
	/* One round trip is the normal cost: SYN-ACK seen -> our ESTABLISHED (0 where unseen). */
	__u64 round_trip = done->client_established_ns > done->last_syn_ns
				   ? done->client_established_ns - done->last_syn_ns
				   : 0;
	__u64 total = now > done->syn_sent_ns ? now - done->syn_sent_ns : 0;
	__u64 extra = total > round_trip ? total - round_trip : 0;
	if (conn)
		conn->handshake_extra_ns = extra;
	if (done->syn_retransmits > 0 || extra >= SLOW_HANDSHAKE_NS) {
		struct cs_ev_handshake *ev = reserve_event(sizeof(*ev), CS_EV_HANDSHAKE);
		if (ev) {
			ev->sk = (__u64)sk;
			ev->syn_sent_ns = done->syn_sent_ns;
			ev->last_syn_ns = done->last_syn_ns;
			ev->client_established_ns = done->client_established_ns;
			ev->extra_ns = extra;
			read_tuple(sk, &ev->tuple);
			ev->syn_retransmits = done->syn_retransmits;
			ev->tgid = done->tgid;
			ev->established = 1;
			ev->pad = 0;
			submit_event(ev);
		}
	}
	take_handshake(&key);
}

/* Server side: the third ACK moved the child into the accept queue. */
static __always_inline int on_server_established(const struct sock *sk)
{
	__u16 port = sk->__sk_common.skc_num;
	if (!is_target_sk_port(sk, port))
		return 0;
	/*
	 * Between tracing windows, nothing of its own (its storage is most of
	 * what a new connection costs the probes): its accept record has its
	 * queue wait, a slow handshake its record, and TCP's stamp of this
	 * moment tells the request probes and its close that it is younger
	 * than the attach (adopt_connection, close_unfollowed).
	 */
	if (!(trace_window & 1)) {
		if (trace_handshakes && handshakes_pending)
			join_client_handshake(sk, NULL, bpf_ktime_get_ns());
		return 0;
	}
	__u64 now = bpf_ktime_get_ns();
	struct conn_state *conn = bpf_sk_storage_get(&conns, (void *)sk, 0,
						     BPF_SK_STORAGE_GET_F_CREATE);
	if (!conn) {
		count(CS_CTR_SOCKET_STORAGE);
		return 0;
	}
	conn->established_ns = now;
	conn->last_activity_ns = now;
	conn->port = port;
	conn->window = trace_window;
	if (trace_handshakes)
		join_client_handshake(sk, conn, now);
	return 0;
}

/*
 * The kernel does not re-enter a program on a CPU where it is running:
 * a softirq's state change that lands while this probe runs in a task
 * is skipped (counted in the program's recursion_misses). A connection
 * whose exit from ESTABLISHED was skipped is closed here, at its next
 * state change (from old_state, one of the closing states), rather than
 * lost with its request.
 */
static __always_inline int on_closing_state_change(const struct sock *sk, int old_state)
{
	struct conn_state *conn = bpf_sk_storage_get(&conns, (void *)sk, 0, 0);
	if (!conn) {
		/* An upstream the target closes after the upstream did (or reset): its answer is read or never will be. */
		struct upstream_state *up = old_state == TCP_CLOSE_WAIT ? upstream_of(sk) : NULL;
		return up ? upstream_closed(sk, up) : 0;
	}
	bool server_first = old_state != TCP_CLOSE_WAIT && old_state != TCP_LAST_ACK;
	if (!conn->closed) {
		count(CS_CTR_CLOSE_LATE);
		on_leave_established(sk, server_first ? TCP_FIN_WAIT1 : TCP_CLOSE_WAIT, true);
	}
	/* The server closed its half after the client's: whatever it answered is done. */
	if (!server_first)
		finish_request(sk, conn, bpf_ktime_get_ns());
	return 0;
}

/* Client side: connect() to a target port sends its first SYN. */
static __always_inline int on_client_syn_sent(const struct sock *sk)
{
	__u16 port = bpf_ntohs(sk->__sk_common.skc_dport);
	/*
	 * Followed while the queue is filling (handshake_may_wait), not only
	 * after a drop: a connect whose third ACK is dropped on a full queue
	 * retransmits no SYN, and the first of them come before any drop
	 * (gated on drops alone, 14 of 15 such clients went unseen). A SYN
	 * retransmitted unfollowed is followed from there (on_tcp_retransmit).
	 * A client is followed in the server's namespace only: one connecting
	 * from another namespace (a veth pair) is not.
	 */
	struct cs_endpoint_state *ep = target_endpoint_of_sk(sk, port);
	if (!ep)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	if (!handshake_may_wait(ep, now))
		return 0;
	struct client_handshake *hs = bpf_sk_storage_get(&client_handshakes, (void *)sk, 0,
							 BPF_SK_STORAGE_GET_F_CREATE);
	if (!hs) {
		count(CS_CTR_TABLE_FULL);
		return 0;
	}
	count(CS_CTR_HANDSHAKES_FOLLOWED);
	hs->syn_sent_ns = now;
	hs->last_syn_ns = hs->syn_sent_ns;
	hs->syn_retransmits = 0;
	hs->tgid = cs_tgid_of(bpf_get_current_pid_tgid());
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(on_tcp_state, const struct sock *sk, const int old_state, const int new_state)
{
	if (lifecycle_off())
		return 0;
	if (old_state == TCP_SYN_RECV && new_state == TCP_ESTABLISHED)
		return on_server_established(sk);
	if (old_state == TCP_ESTABLISHED)
		return on_leave_established(sk, new_state, false);
	if (old_state == TCP_FIN_WAIT1 || old_state == TCP_FIN_WAIT2 || old_state == TCP_CLOSING ||
	    old_state == TCP_CLOSE_WAIT || old_state == TCP_LAST_ACK)
		return on_closing_state_change(sk, old_state);
	if (old_state == TCP_CLOSE && new_state == TCP_SYN_SENT) {
		follow_upstream(sk); /* a target connecting: its upstream */
		return trace_handshakes ? on_client_syn_sent(sk) : 0;
	}
	if (old_state != TCP_SYN_SENT)
		return 0;
	upstream_connected(sk, new_state == TCP_ESTABLISHED);
	if (trace_handshakes && !(skip_client_established && new_state == TCP_ESTABLISHED))
		on_client_handshake_end(sk, new_state == TCP_ESTABLISHED);
	return 0;
}

/*
 * A SYN to a target port retransmitted whose connect was not followed
 * (made before the attach, or while the queue had room): followed from
 * here. Its first SYN went out unseen: TCP noted when, in retrans_stamp
 * (ms of the same clock, 32 bits; us if the route asks for microsecond
 * timestamps).
 */
static __always_inline struct client_handshake *follow_from_retransmit(const struct sock *sk, __u64 now)
{
	struct client_handshake *hs = bpf_sk_storage_get(&client_handshakes, (void *)sk, 0,
							 BPF_SK_STORAGE_GET_F_CREATE);
	if (!hs) {
		count(CS_CTR_TABLE_FULL);
		return NULL;
	}
	count(CS_CTR_HANDSHAKES_FOLLOWED);
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;
	__u32 stamp = BPF_CORE_READ(tp, retrans_stamp);
	__u64 unit_ns = cs_tcp_ts_unit_ns(tp);
	__u32 ago = (__u32)(now / unit_ns) - stamp;
	hs->syn_sent_ns = now - (__u64)ago * unit_ns;
	hs->syn_retransmits = BPF_CORE_READ(&tp->inet_conn, icsk_retransmits);
	hs->tgid = 0; /* unknown: a timer retransmits, in no process of its own */
	return hs;
}

/*
 * A followed client retransmits data with its handshake's end never seen:
 * the kernel skipped that run of on_tcp_state (a softirq's, while the
 * probe ran in a task on the same CPU: one such moment can take a whole
 * burst of handshakes). Left now, its end's time unknown, unless a SYN
 * retransmit left it already. A last ACK dropped on a full queue is
 * followed by such retransmits, until the server lets the connection in.
 */
static __always_inline int finish_unseen_handshake(const struct sock *sk)
{
	struct client_handshake *hs = bpf_sk_storage_get(&client_handshakes, (void *)sk, 0, 0);

	if (!hs)
		return 0;
	if (!hs->syn_retransmits)
		leave_client_handshake(sk, hs, 0);
	bpf_sk_storage_delete(&client_handshakes, (void *)sk);
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(on_tcp_retransmit, const struct sock *sk, const struct sk_buff *skb, int err)
{
	if (lifecycle_off())
		return 0;
	struct client_handshake *hs;

	if (!sk)
		return 0;
	if (sk->__sk_common.skc_state == TCP_ESTABLISHED)
		return trace_handshakes ? finish_unseen_handshake(sk) : 0;
	if (sk->__sk_common.skc_state != TCP_SYN_SENT)
		return 0;
	upstream_syn_retransmitted(sk);
	if (!trace_handshakes)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	struct cs_endpoint_state *ep = target_endpoint_of_sk(sk, bpf_ntohs(sk->__sk_common.skc_dport));
	if (ep)
		note_queue_pressure(ep, now); /* a SYN was lost: follow the next clients' */
	hs = bpf_sk_storage_get(&client_handshakes, (void *)sk, 0, 0);
	if (!hs && ep)
		hs = follow_from_retransmit(sk, now);
	if (!hs)
		return 0;
	hs->syn_retransmits++;
	hs->last_syn_ns = now;
	/*
	 * Left for the server's side at each retransmit, not only at the
	 * client's ESTABLISHED, whose run the kernel may skip: a connect that
	 * waited seconds for its SYNs is then still joined.
	 */
	leave_client_handshake(sk, hs, 0);
	return 0;
}

#endif /* CS_LIFECYCLE_BPF_H */
