/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The clients' side: a process on this host connected to a target port
 * (its socket in a target's network namespace: loopback, or the host's
 * own addresses). The server's answer lands in the client's socket in the
 * server's own send (loopback delivers at once); the client reads it when
 * its thread gets to it. That wait is in every latency the client prints,
 * and no server-side figure holds it (cs_ev_client_read).
 *
 * A client socket is met at its first answer's arrival (sk_data_ready on
 * a socket whose peer port is a target endpoint): no probe runs at its
 * connect, and connections open before the attach are followed alike.
 * The socket probes look here only for a socket without server or
 * upstream state.
 */
#ifndef CS_CLIENTS_BPF_H
#define CS_CLIENTS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "maps.bpf.h"
#include "sock_reads.bpf.h"
#include "requests.bpf.h"

static __always_inline struct client_state *client_of(const struct sock *sk)
{
	return clients_followed ? bpf_sk_storage_get(&client_sides, (void *)sk, 0, 0) : NULL;
}

/* A socket connected to a target endpoint from this side: a local client's, followed from now. */
static __always_inline struct client_state *adopt_client(const struct sock *sk)
{
	if (!follow_clients || !(trace_window & 1) || sk->__sk_common.skc_state != TCP_ESTABLISHED ||
	    !is_target_sk_port(sk, bpf_ntohs(sk->__sk_common.skc_dport)))
		return NULL;
	if (sk->__sk_common.skc_family != AF_INET && sk->__sk_common.skc_family != AF_INET6)
		return NULL;
	struct client_state *client = bpf_sk_storage_get(&client_sides, (void *)sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!client) {
		count(CS_CTR_SOCKET_STORAGE);
		return NULL;
	}
	if (!clients_followed)
		clients_followed = 1;
	client->window = trace_window;
	return client;
}

/* Answer bytes came into the client's socket (in the server's send, or a softirq). */
static __always_inline int client_data_ready(struct client_state *client)
{
	if (!(trace_window & 1))
		return 0;
	if (client->window != trace_window) { /* bytes that came between windows: their time unknown */
		client->window = trace_window;
		client->arrived_ns = 0;
	}
	if (client->arrived_ns) /* earlier bytes still unread: the wait runs from theirs */
		return 0;
	client->arrived_ns = bpf_ktime_get_ns();
	client->leftover = 0;
	client->arrival_run_delay_ns = thread_run_delay(client->reader_task, client->reader_tid);
	return 0;
}

/* The bytes still queued after a read: rcv_nxt - copied_seq. */
static __always_inline bool client_bytes_left(const struct sock *sk)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);

	return tp && tp->rcv_nxt != tp->copied_seq;
}

/* The client read ret bytes: the wait since their arrival, in a record. */
static __always_inline int client_read(const struct sock *sk, struct client_state *client, int ret)
{
	if (!(trace_window & 1) || client->window != trace_window || !client->arrived_ns)
		return 0;
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns();
	__u64 run_delay = task->sched_info.run_delay;
	__u32 tid = cs_tid_of(pid_tgid);
	__u16 flags = (client->reads ? 0 : CS_CLIENT_FIRST) | (client->leftover ? CS_CLIENT_LEFTOVER : 0);
	__u64 waited = now - client->arrived_ns;
	__u64 runq = 0;

	if (client->arrival_run_delay_ns && tid == client->reader_tid)
		runq = run_delay - client->arrival_run_delay_ns;
	else
		flags |= CS_CLIENT_RUNQ_UNKNOWN;
	struct cs_ev_client_read *ev = reserve_event_at(sizeof(*ev), CS_EV_CLIENT_READ, now);
	if (ev) {
		ev->sk = (__u64)sk;
		ev->client_key = client_side_key(sk);
		ev->arrived_ns = client->arrived_ns;
		ev->runq_ns = runq < waited ? runq : waited; /* a wait under way at the arrival counts whole */
		ev->thread_cpu_ns = task->se.sum_exec_runtime;
		ev->thread_runq_ns = run_delay;
		ev->tgid = cs_tgid_of(pid_tgid);
		ev->tid = tid;
		ev->bytes = (__u32)ret;
		ev->pad = 0;
		if (flags & CS_CLIENT_FIRST)
			bpf_get_current_comm(ev->comm, sizeof(ev->comm));
		else
			__builtin_memset(ev->comm, 0, sizeof(ev->comm));
	}
	client->reads++;
	client->reader_tid = tid;
	client->reader_task = (__u64)task;
	/* What this read left is the next read's: it is there now. */
	client->arrived_ns = client_bytes_left(sk) ? now : 0;
	client->leftover = client->arrived_ns != 0;
	client->arrival_run_delay_ns = run_delay;
	if (ev) {
		ev->flags = flags;
		submit_event(ev);
	}
	return 0;
}

#endif /* CS_CLIENTS_BPF_H */
