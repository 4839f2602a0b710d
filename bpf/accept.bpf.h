/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * accept() and the queue wait it ends.
 */
#ifndef CS_ACCEPT_BPF_H
#define CS_ACCEPT_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"
#include "core_compat.bpf.h"
#include "sock_reads.bpf.h"

/* ---- accept() ------------------------------------------------------------ */

static __always_inline int on_accept_enter(int listen_fd)
{
	if (lifecycle_off())
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	if (!is_target_tgid(cs_tgid_of(pid_tgid)))
		return 0;
	struct sock *listener = tcp_sock_of_fd(listen_fd);
	if (!listener)
		return 0;
	if (!is_target_sk_port(listener, listener->__sk_common.skc_num))
		return 0;
	struct accept_call *call = bpf_task_storage_get(&accept_calls, bpf_get_current_task_btf(), 0,
							BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!call) {
		count(CS_CTR_TABLE_FULL);
		return 0;
	}
	call->listener_sk = (__u64)listener;
	call->enter_ns = bpf_ktime_get_ns();
	return 0;
}

/* The accepted connection in its record: its socket, tuple, and when its handshake ended. */
static __always_inline void note_accepted(struct cs_ev_accept *ev, struct sock *child)
{
	ev->sk = (__u64)child;
	read_tuple(child, &ev->tuple);
	/* Not read yet: TCP's stamp is the handshake's end. */
	ev->established_ns = tcp_stamp_ns(child);
	if (!ev->established_ns)
		count(CS_CTR_ACCEPT_UNMATCHED);
}

/*
 * An accept() whose call began before the attach (a blocking acceptor,
 * Tomcat's or Jetty's, waits in one): no entry was seen, but the
 * connection it returns is the server's all the same, and one of its open
 * connections. Recorded with its wait for the call unknown (enter_ns 0)
 * and its listener unknown; a target's accept on another listener is
 * looked at here too, and left.
 */
static __always_inline int accept_begun_before(__u64 pid_tgid, long ret)
{
	if (ret < 0 || !is_target_tgid(cs_tgid_of(pid_tgid)))
		return 0;
	struct sock *child = tcp_sock_of_fd((int)ret);
	if (!child)
		return 0;
	__u16 port = child->__sk_common.skc_num;
	if (!is_target_sk_port(child, port))
		return 0;
	struct cs_ev_accept *ev = reserve_event(sizeof(*ev), CS_EV_ACCEPT);
	if (!ev)
		return 0;
	/* Every field after the header (cs_event_reserve wrote it): no call, no listener known. */
	__builtin_memset((char *)ev + sizeof(ev->hdr), 0, sizeof(*ev) - sizeof(ev->hdr));
	ev->ret = (__s32)ret;
	ev->tgid = cs_tgid_of(pid_tgid);
	ev->tid = cs_tid_of(pid_tgid);
	ev->listener_port = port;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	note_accepted(ev, child);
	submit_event(ev);
	return 0;
}

static __always_inline int on_accept_exit(long ret)
{
	if (lifecycle_off())
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = cs_tid_of(pid_tgid);
	struct accept_call *call;
	struct cs_ev_accept *ev;

	/* Only threads whose accept() entry was a target's listener are here. */
	call = bpf_task_storage_get(&accept_calls, bpf_get_current_task_btf(), 0, 0);
	if (!call || !call->enter_ns)
		return accept_begun_before(pid_tgid, ret);
	const struct sock *listener = kernel_ptr(struct sock, call->listener_sk);

	ev = reserve_event(sizeof(*ev), CS_EV_ACCEPT);
	if (!ev)
		goto out;
	ev->listener_sk = call->listener_sk;
	ev->enter_ns = call->enter_ns;
	ev->ret = (__s32)ret;
	ev->tgid = cs_tgid_of(pid_tgid);
	ev->tid = tid;
	ev->backlog = listener->sk_ack_backlog;
	ev->backlog_limit = listener->sk_max_ack_backlog;
	ev->listener_drops = read_drops(listener);
	ev->listener_port = listener->__sk_common.skc_num;
	ev->pad[0] = ev->pad[1] = ev->pad[2] = 0;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	ev->sk = 0;
	ev->established_ns = 0;
	__builtin_memset(&ev->tuple, 0, sizeof(ev->tuple));

	if (ret >= 0) {
		struct sock *child = tcp_sock_of_fd((int)ret);
		if (child)
			note_accepted(ev, child);
	}
	submit_event(ev);
out:
	call->enter_ns = 0;
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_accept4")
int on_enter_accept4(struct trace_event_raw_sys_enter *ctx)
{
	return on_accept_enter((int)ctx->args[0]);
}

SEC("tracepoint/syscalls/sys_enter_accept")
int on_enter_accept(struct trace_event_raw_sys_enter *ctx)
{
	return on_accept_enter((int)ctx->args[0]);
}

SEC("tracepoint/syscalls/sys_exit_accept4")
int on_exit_accept4(struct trace_event_raw_sys_exit *ctx)
{
	return on_accept_exit(ctx->ret);
}

SEC("tracepoint/syscalls/sys_exit_accept")
int on_exit_accept(struct trace_event_raw_sys_exit *ctx)
{
	return on_accept_exit(ctx->ret);
}

#endif /* CS_ACCEPT_BPF_H */
