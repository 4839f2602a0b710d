/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A target's connect() to a Unix stream socket: the start of a Unix
 * upstream (a database's or a cache's socket, an application server's
 * behind a proxy). Unix sockets have no state-change tracepoint, so the
 * system call is followed: its entry (the address's family, read from the
 * caller's memory: only AF_UNIX goes on) and its exit, whose time minus
 * the entry's is the connect's (a blocking connect waits there while the
 * listener's backlog is full, as a TCP connect waits for its SYN's
 * retransmit). The exit finds the socket by its descriptor and keeps the
 * upstream's state by the socket's address (unix_connected) until a
 * socket probe moves it into socket storage (upstreams.bpf.h).
 */
#ifndef CS_UNIX_CONNECT_BPF_H
#define CS_UNIX_CONNECT_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"
#include "sock_reads.bpf.h"
#include "upstreams.bpf.h"

#define CS_SOCK_STREAM 1

SEC("tracepoint/syscalls/sys_enter_connect")
int on_enter_connect(struct trace_event_raw_sys_enter *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u16 family = 0;

	if (!is_target_tgid(cs_tgid_of(pid_tgid)))
		return 0;
	if (bpf_probe_read_user(&family, sizeof(family), (void *)ctx->args[1]) || family != AF_UNIX)
		return 0;
	struct connect_call *call = bpf_task_storage_get(&connect_calls, bpf_get_current_task_btf(), 0,
							 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!call) {
		count(CS_CTR_TABLE_FULL);
		return 0;
	}
	call->enter_ns = bpf_ktime_get_ns();
	call->fd = (__s32)ctx->args[0];
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_connect")
int on_exit_connect(struct trace_event_raw_sys_exit *ctx)
{
	/* Only a target's threads that began a connect to a Unix socket have a call. */
	if (!may_be_target_tgid(cs_tgid_of(bpf_get_current_pid_tgid())))
		return 0;
	struct connect_call *call = bpf_task_storage_get(&connect_calls, bpf_get_current_task_btf(), 0, 0);

	if (!call || !call->enter_ns)
		return 0;
	__u64 enter_ns = call->enter_ns;
	call->enter_ns = 0;
	if (ctx->ret != 0)
		return 0; /* refused (no listener, a full backlog without waiting): no connection */
	struct sock *sk = sock_of_fd(call->fd);
	if (!sk || sk->__sk_common.skc_family != AF_UNIX || sk->sk_type != CS_SOCK_STREAM)
		return 0;
	__u64 key = (__u64)sk, now = bpf_ktime_get_ns(), pid_tgid = bpf_get_current_pid_tgid();
	struct upstream_state fresh = {};
	/* An entry left by a socket at the same address, never used before it closed: replaced. */
	bool stale = bpf_map_lookup_elem(&unix_connected, &key) != NULL;
	if (bpf_map_update_elem(&unix_connected, &key, &fresh, stale ? BPF_EXIST : BPF_NOEXIST)) {
		count(CS_CTR_TABLE_FULL);
		return 0;
	}
	if (!stale)
		__sync_fetch_and_add(&unix_connected_count, 1);
	struct upstream_state *up = bpf_map_lookup_elem(&unix_connected, &key);
	if (!up)
		return 0;
	count(CS_CTR_UPSTREAMS_FOLLOWED);
	up->syn_sent_ns = enter_ns;
	up->connect_ns = now - enter_ns;
	up->tgid = cs_tgid_of(pid_tgid);
	up->connector_tid = cs_tid_of(pid_tgid);
	up->window = trace_window;
	upstream_begin(up, up->connector_tid, enter_ns);
	return 0;
}

#endif /* CS_UNIX_CONNECT_BPF_H */
