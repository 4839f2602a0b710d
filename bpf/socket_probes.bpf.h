/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The socket hooks a request goes through: data ready, the reads, the
 * sends, the last byte out.
 */
#ifndef CS_SOCKET_PROBES_BPF_H
#define CS_SOCKET_PROBES_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "maps.bpf.h"
#include "sock_reads.bpf.h"
#include "requests.bpf.h"
#include "adopt.bpf.h"
#include "read_peek.bpf.h"
#include "server_hello.bpf.h"
#include "upstreams.bpf.h"
#include "clients.bpf.h"

/* Bytes came into a socket without server-side state: an upstream's, a local client's, or an older connection's. */
static __always_inline struct conn_state *data_ready_elsewhere(const struct sock *sk)
{
	struct upstream_state *up = upstream_of(sk);
	if (up) {
		upstream_data_ready(up);
		return NULL;
	}
	struct client_state *client = client_of(sk);
	if (client) {
		client_data_ready(client);
		return NULL;
	}
	struct conn_state *conn = adopt_connection(sk, true);
	if (conn)
		return conn;
	client = adopt_client(sk);
	if (client)
		client_data_ready(client);
	return NULL;
}

/* A read on a socket without server-side state: an upstream's or a local client's (true: it was). */
static __always_inline bool read_elsewhere(const struct sock *sk, int ret)
{
	struct upstream_state *up = upstream_of(sk);
	if (up) {
		upstream_read(sk, up, ret);
		return true;
	}
	struct client_state *client = client_of(sk);
	if (client) {
		client_read(sk, client, ret);
		return true;
	}
	return false;
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(on_data_ready, const struct sock *sk)
{
	/* Only target sockets have storage: that is the filter. */
	struct conn_state *conn = bpf_sk_storage_get(&conns, (void *)sk, 0, 0);
	__u64 now;

	if (!conn) {
		conn = data_ready_elsewhere(sk);
		if (!conn)
			return 0;
	}
	if (conn->closed)
		return 0;
	enter_window(sk, conn, 0);
	now = bpf_ktime_get_ns();
	note_answer_in_flight(sk, conn, now);
	if (conn->partial)
		adopt_when_idle(sk, conn, now);
	if (conn->phase == PHASE_SENDING)
		finish_request(sk, conn, now);
	if (conn->phase == PHASE_IDLE) {
		start_request(conn, now);
		conn->start_run_delay_ns = reader_run_delay(conn);
	}
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(on_recv, struct sock *sk, int ret, int flags)
{
	/* Most reads of an event loop are the EAGAIN that ends a batch. */
	if (ret <= 0 || (flags & MSG_PEEK))
		return 0;
	struct conn_state *conn = bpf_sk_storage_get(&conns, sk, 0, 0);
	/*
	 * No storage: not ours, or older than the attach with its bytes
	 * queued before it (they raised no data_ready we saw: a connection
	 * still in the accept queue at the attach, say). Partial until its
	 * first idle moment.
	 */
	if (!conn) {
		if (read_elsewhere(sk, ret))
			return 0;
		conn = adopt_connection(sk, false);
		if (!conn)
			return 0;
	}
	enter_window(sk, conn, (__u32)ret);
	__u64 now = bpf_ktime_get_ns();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	conn->last_activity_ns = now;
	conn->bytes_in += ret;
	if (conn->phase == PHASE_IDLE) {
		/* Bytes that were queued before we saw them arrive. */
		start_request(conn, now);
		conn->flags |= CS_REQ_PARTIAL;
	}
	if (conn->partial)
		conn->peek_conn = PEEK_OFF; /* mid-stream: no first bytes, no framing */
	if (conn->peek_conn == PEEK_ADOPTED && conn->phase == PHASE_WAITING)
		peek_adopted(sk, conn, (__u32)ret);
	/* An adopted connection's bytes: its first ones were long before the attach. */
	if (counts_messages(conn))
		peek_messages(conn, (__u32)ret);
	else if (conn->peek_conn != PEEK_OFF && conn->requests <= CS_PEEK_EXCHANGES && !conn->adopted)
		peek_read(sk, conn, (__u32)ret, now);
	else if (conn->peek_conn == PEEK_TLS && conn->phase == PHASE_WAITING && ret <= TLS_SMALL_EXCHANGE)
		peek_tls_alert(sk, conn, (__u32)ret);
	if (conn->phase == PHASE_SENDING)
		conn->flags |= CS_REQ_READ_AFTER_SEND;
	if (conn->phase != PHASE_WAITING)
		return 0;
	/*
	 * The answer's mark before the phase: a softirq on this CPU (the
	 * client's FIN, its next bytes) may run the state-change probe between
	 * the two, and in HANDLING it takes a write_seq past the mark for an
	 * answer begun.
	 */
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	if (tp)
		conn->write_seq_at_read = tp->write_seq;
	asm volatile("" ::
			     : "memory");
	conn->phase = PHASE_HANDLING;
	conn->first_read_ns = now;
	conn->reader_tid = cs_tid_of(pid_tgid);
	conn->tgid = cs_tgid_of(pid_tgid);
	note_reader(sk, conn);
	__u64 run_delay = current_run_delay();
	open_read(conn, run_delay);
	__u32 looked_at = conn->last_reader_tid;
	conn->read_run_delay_ns = run_delay;
	conn->last_reader_tid = conn->reader_tid;
	conn->last_reader_task = (__u64)bpf_get_current_task();
	/*
	 * Read by the thread we looked at when the bytes came: exact, except
	 * that a wait already under way then counts whole (capped at the
	 * window). Another thread: what its counter grew since we last ran in it.
	 * (The exact case leaves the thread's last look alone: every send
	 * notes one, the last before the thread goes back to epoll_wait.)
	 */
	if (conn->start_run_delay_ns && conn->reader_tid == looked_at)
		conn->pickup_runq_ns = at_most(run_delay - conn->start_run_delay_ns, now - conn->start_ns);
	else
		conn->pickup_runq_ns = runq_since(conn->start_ns, now, run_delay);
	return 0;
}

/*
 * Fires inside tcp_sendmsg_locked before the data moves: the exact start of
 * the answer. Optional (newer kernels); sock_send_length covers the rest.
 */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(on_tcp_sendmsg, const struct sock *sk, const struct msghdr *msg, const struct sk_buff *skb,
	     int size_goal)
{
	struct conn_state *conn = bpf_sk_storage_get(&conns, (void *)sk, 0, 0);

	if (!conn) {
		struct upstream_state *up = upstream_of(sk);
		return up ? upstream_sending(up, bpf_ktime_get_ns()) : 0;
	}
	enter_window(sk, conn, 0);
	if (conn->phase != PHASE_HANDLING)
		return 0;
	mark_first_send(conn, cs_tid_of(bpf_get_current_pid_tgid()), bpf_ktime_get_ns(), true);
	/* A TLS connection's first answer: the server's first flight, its ServerHello. */
	if (conn->peek_conn == PEEK_TLS && !conn->server_hello_seen && conn->requests == 1 && !conn->first_unseen)
		copy_server_hello(sk, conn, msg);
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(on_send, struct sock *sk, int ret, int flags)
{
	struct conn_state *conn = bpf_sk_storage_get(&conns, sk, 0, 0);

	if (!conn) {
		struct upstream_state *up = upstream_of(sk);
		return up ? upstream_sent(up, ret) : 0;
	}
	enter_window(sk, conn, 0);
	if (ret == -EAGAIN) {
		conn->send_eagain++;
		return 0;
	}
	if (ret <= 0 || (conn->phase != PHASE_HANDLING && conn->phase != PHASE_SENDING))
		return 0;
	__u64 now = bpf_ktime_get_ns();
	if (conn->phase == PHASE_HANDLING)
		mark_first_send(conn, cs_tid_of(bpf_get_current_pid_tgid()), now, true);
	conn->last_send_ns = now;
	/* Preempted between the first and the last send: the client waited on us. */
	__u64 run_delay = current_run_delay();
	if (conn->send_run_delay_ns)
		conn->drain_runq_ns = at_most(run_delay - conn->send_run_delay_ns,
					      now - conn->first_send_ns);
	/* The thread's last look before it goes back to epoll_wait, and what it answered. */
	struct thread_obs *obs = bpf_task_storage_get(&thread_obs, bpf_get_current_task_btf(), 0,
						      BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (obs) {
		obs->seen_ns = now;
		obs->run_delay_ns = run_delay;
		obs->last_send_sk = (__u64)sk;
		obs->last_send_ns = now;
	} else {
		count(CS_CTR_TABLE_FULL);
	}
	conn->last_activity_ns = now;
	conn->bytes_out += ret;
	/* Bytes the kernel holds back (Nagle, a closed window) reach the client later. */
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return 0;
	__u64 key = (__u64)sk;
	if (tp->write_seq != tp->snd_nxt) {
		struct drain_state fresh = { .end_seq = tp->write_seq };
		struct drain_state *drain = bpf_map_lookup_elem(&draining, &key);
		if (drain) {
			drain->end_seq = tp->write_seq;
			drain->drained_ns = 0;
		} else if (!bpf_map_update_elem(&draining, &key, &fresh, BPF_NOEXIST)) {
			__sync_fetch_and_add(&draining_sockets, 1);
		} else {
			count(CS_CTR_TABLE_FULL);
		}
		conn->flags |= CS_REQ_HELD_BACK;
		conn->drain_end_ns = 0;
	} else if (conn->flags & CS_REQ_HELD_BACK) {
		/* An earlier send was held, but now everything is out. */
		if (!bpf_map_delete_elem(&draining, &key))
			__sync_fetch_and_add(&draining_sockets, -1);
		conn->drain_end_ns = now;
	}
	return 0;
}

/*
 * Every packet handed to a device, loopback included. Only while some
 * answer is draining does it look further; then it notes when the held
 * back answer's last byte goes out.
 */
SEC("tp_btf/net_dev_start_xmit")
int BPF_PROG(on_xmit, const struct sk_buff *skb, const struct net_device *dev)
{
	if (!draining_sockets)
		return 0;
	__u64 key = (__u64)BPF_CORE_READ(skb, sk);
	struct drain_state *drain = key ? bpf_map_lookup_elem(&draining, &key) : NULL;
	if (!drain || drain->drained_ns)
		return 0;
	/* This segment's last byte: seq + payload. */
	struct tcphdr th;
	const unsigned char *tcp = cs_skb_tcphdr(skb, &th);
	if (!tcp)
		return 0;
	/* The headers before TCP's, from where the packet's data starts. */
	__u32 headers = (__u32)(tcp - BPF_CORE_READ(skb, data));
	__u32 payload = BPF_CORE_READ(skb, len) - headers - th.doff * TCP_DOFF_UNIT;
	__u32 end = bpf_ntohl(th.seq) + payload;
	if ((__s32)(end - drain->end_seq) >= 0)
		drain->drained_ns = bpf_ktime_get_ns();
	return 0;
}

/* The kernel's tick rate: TCP stamps its last data in and out in jiffies. 0: unknown. */
extern int CONFIG_HZ __kconfig __weak;

/*
 * When TCP last saw data go in or out of tp, as a time of bpf_ktime_get_ns:
 * the later of its two stamps, which are in jiffies. Taken as late as it
 * can have been (one tick later than its jiffy says), so that a close
 * right after an answer never looks like an idle gap. 0: the tick rate is
 * unknown.
 */
static __always_inline __u64 last_data_ns(const struct tcp_sock *tp, __u64 now)
{
	__u32 sent = tp->lsndtime, received = tp->inet_conn.icsk_ack.lrcvtime;
	__u32 last = (__s32)(received - sent) > 0 ? received : sent;
	__u32 ticks_ago = (__u32)bpf_jiffies64() - last;

	if (CONFIG_HZ <= 0)
		return 0;
	__u64 ago_ns = ticks_ago > 1 ? (__u64)(ticks_ago - 1) * (NSEC_PER_SEC / (__u64)CONFIG_HZ) : 0;
	return now > ago_ns ? now - ago_ns : 1;
}

/*
 * A target's connection without request state leaves ESTABLISHED: one
 * established between tracing windows (where none is made) or before the
 * attach, never seen by the request probes since. Closes are counted all
 * the time, so it is recorded too, from what TCP keeps: who closed, when
 * data last went in or out, and whether the server received any.
 */
static __always_inline int close_unfollowed(const struct sock *sk, int new_state)
{
	__u16 port = sk->__sk_common.skc_num;

	if (!is_target_sk_port(sk, port))
		return 0;
	__u64 now = bpf_ktime_get_ns();
	struct cs_ev_conn_close *ev = reserve_event_at(sizeof(*ev), CS_EV_CONN_CLOSE, now);
	if (!ev)
		return 0;
	__u64 stamp_ns = tcp_stamp_ns(sk);
	ev->sk = (__u64)sk;
	/* Since the attach: whole, its start TCP's stamp or later (the engine takes its accept's). */
	ev->partial = stamp_ns < attach_ns;
	ev->established_ns = ev->partial ? 0 : stamp_ns;
	ev->last_activity_ns = 0;
	ev->flags = CS_CLOSE_UNFOLLOWED;
	struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);
	if (tp) {
		ev->last_activity_ns = last_data_ns(tp, now);
		if (tp->bytes_received)
			ev->flags |= CS_CLOSE_RECEIVED_DATA;
	}
	read_tuple(sk, &ev->tuple);
	ev->requests = 0;
	ev->listener_port = port;
	ev->tgid = 0;
	ev->closer_runq_ns = 0;
	ev->closer_tid = ev->pad = 0;
	if (new_state == TCP_FIN_WAIT1) {
		__u64 pid_tgid = bpf_get_current_pid_tgid();
		ev->closed_by = CS_CLOSED_BY_SERVER;
		ev->tgid = cs_tgid_of(pid_tgid);
		ev->closer_tid = cs_tid_of(pid_tgid);
		ev->closer_runq_ns = closer_runq(ev->last_activity_ns, now);
	} else {
		ev->closed_by = new_state == TCP_CLOSE_WAIT ? CS_CLOSED_BY_CLIENT : CS_CLOSED_BY_ABORT;
	}
	submit_event(ev);
	return 0;
}

/*
 * The connection leaves ESTABLISHED: close its request and say who closed.
 * late: seen only at a later state change (the kernel skipped our run at
 * the exit itself), so the closer is not the current task: the record is
 * stamped now and carries the connection's own process.
 */
static __always_inline int on_leave_established(const struct sock *sk, int new_state, bool late)
{
	struct conn_state *conn = bpf_sk_storage_get(&conns, (void *)sk, 0, 0);
	struct cs_ev_conn_close *ev;
	__u64 now;

	if (!conn) {
		struct upstream_state *up = upstream_of(sk);
		/*
		 * The upstream's FIN (CLOSE_WAIT) often comes with its answer, still
		 * to be read: the exchange ends at that read, or at the target's close.
		 */
		if (up)
			return new_state == TCP_CLOSE_WAIT ? 0 : upstream_closed(sk, up);
		return late ? 0 : close_unfollowed(sk, new_state);
	}
	if (conn->closed)
		return 0;
	now = bpf_ktime_get_ns();
	note_answer_in_flight(sk, conn, now);
	/*
	 * The client's FIN does not end a request the server has yet to answer
	 * (it may have half-closed after sending it): that one ends when the
	 * server closes too.
	 */
	if (new_state != TCP_CLOSE_WAIT || conn->phase == PHASE_SENDING)
		finish_request(sk, conn, now);
	conn->closed = 1;
	ev = reserve_event_at(sizeof(*ev), CS_EV_CONN_CLOSE, now);
	if (!ev)
		return 0;
	ev->sk = (__u64)sk;
	ev->established_ns = conn->established_ns;
	ev->last_activity_ns = conn->last_activity_ns;
	read_tuple(sk, &ev->tuple);
	ev->requests = conn->requests;
	ev->listener_port = conn->port;
	ev->partial = conn->partial || !conn->established_ns; /* its start not seen */
	ev->flags = follow_clients ? CS_CLOSE_CLIENTS_FOLLOWED : 0;
	ev->closer_runq_ns = 0;
	ev->closer_tid = ev->pad = 0;
	if (new_state == TCP_FIN_WAIT1) {
		__u64 pid_tgid = bpf_get_current_pid_tgid();
		ev->closed_by = CS_CLOSED_BY_SERVER;
		ev->tgid = late ? conn->tgid : cs_tgid_of(pid_tgid);
		if (!late) {
			ev->closer_tid = cs_tid_of(pid_tgid);
			ev->closer_runq_ns = closer_runq(conn->last_activity_ns, now);
		}
	} else {
		ev->closed_by = new_state == TCP_CLOSE_WAIT ? CS_CLOSED_BY_CLIENT : CS_CLOSED_BY_ABORT;
		ev->tgid = conn->tgid;
	}
	submit_event(ev);
	return 0;
}

#endif /* CS_SOCKET_PROBES_BPF_H */
