/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What user space walks (listeners, the target's threads), and the
 * target's processes followed across fork and exit.
 */
#ifndef CS_WALKS_BPF_H
#define CS_WALKS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"
#include "core_compat.bpf.h"

/*
 * ---- listeners: walked by user space at the attach, then only to name a
 * listener sock_diag shows and no walk has met yet (at most once a second:
 * the walk visits every TCP socket, TIME_WAIT ones included). The periodic
 * samples of backlog, limit and drops come from sock_diag.
 */

/* The listening sockets whose queues handshake_may_wait() looks at: this walk's. */
static __always_inline void note_listener(struct cs_endpoint_state *ep, const struct sock *sk)
{
	if (ep->walk != listener_walk) { /* its first listener in this walk */
		ep->walk = listener_walk;
		ep->listeners = 0;
	}
	__u32 seen = ep->listeners;
	if (seen < CS_ENDPOINT_LISTENERS)
		ep->listener_sk[seen] = (__u64)sk;
	ep->listeners = seen + 1;
}

SEC("iter/tcp")
int sample_listeners(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct cs_ev_listener_sample sample = {};
	struct cs_endpoint_state *ep;
	struct tcp_sock *tp;
	struct sock *sk;

	if (!skc || skc->skc_state != TCP_LISTEN)
		return 0;
	if (!is_target_port(skc->skc_num))
		return 0;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp)
		return 0;
	sk = (struct sock *)tp;
	ep = target_endpoint_of_sk(sk, skc->skc_num);
	if (!ep)
		return 0;
	note_listener(ep, sk);

	cs_event_header(&sample.hdr, bpf_ktime_get_ns(), CS_EV_LISTENER_SAMPLE, sizeof(sample));
	sample.sk = (__u64)sk;
	sample.inode = BPF_CORE_READ(sk, sk_socket, file, f_inode, i_ino);
	sample.backlog = sk->sk_ack_backlog;
	sample.backlog_limit = sk->sk_max_ack_backlog;
	sample.syn_queue = tp->inet_conn.icsk_accept_queue.qlen.counter;
	sample.drops = sk->sk_drops.counter;
	sample.port = skc->skc_num;
	sample.family = skc->skc_family;
	bpf_seq_write(ctx->meta->seq, &sample, sizeof(sample));
	return 0;
}

/* ---- target threads' run-queue totals: walked by user space at 1 Hz ------- */

SEC("iter/task")
int sample_threads(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct cs_thread_sched_sample sample = {};

	if (!task || !is_target_tgid(task->tgid))
		return 0;
	sample.run_delay_ns = task->sched_info.run_delay;
	sample.max_run_delay_ns = cs_task_max_run_delay(task);
	sample.run_count = task->sched_info.pcount;
	sample.start_ns = task->start_time;
	sample.cpu_ns = task->se.sum_exec_runtime;
	sample.tid = task->pid;
	sample.tgid = task->tgid;
	bpf_probe_read_kernel_str(sample.comm, sizeof(sample.comm), task->comm);
	struct poll_thread *polls = bpf_map_lookup_elem(&poll_threads, &sample.tid);
	if (polls) {
		sample.ready_polls = polls->ready_polls;
		sample.reads_own = polls->reads_own;
		sample.reads_handed = polls->reads_handed;
		sample.handed_out = polls->handed_out;
		sample.reads_blocking = polls->reads_blocking;
	}
	bpf_seq_write(ctx->meta->seq, &sample, sizeof(sample));
	return 0;
}

/* ---- follow the target's processes --------------------------------------- */

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = parent->tgid;
	__u32 child_pid = child->pid;
	__u8 present = 1; /* a set: the value is unused */
	struct cs_ev_proc *ev;

	/* New threads share their parent's tgid: already covered. */
	if (child_pid != (__u32)child->tgid || !is_target_tgid(parent_tgid))
		return 0;
	if (bpf_map_update_elem(&target_tgids, &child_pid, &present, BPF_ANY))
		count(CS_CTR_TABLE_FULL);
	__sync_fetch_and_or(&target_tgid_bits[cs_tgid_word(child_pid)], cs_tgid_bit(child_pid));
	ev = reserve_event(sizeof(*ev), CS_EV_PROC_FORK);
	if (!ev)
		return 0;
	ev->pid = child_pid;
	ev->parent_pid = parent_tgid;
	bpf_probe_read_kernel_str(ev->comm, sizeof(ev->comm), child->comm);
	submit_event(ev);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task, bool group_dead)
{
	__u32 tgid = task->tgid, tid = task->pid;
	struct cs_ev_proc *ev;

	if (!is_target_tgid(tgid))
		return 0;
	bpf_map_delete_elem(&poll_threads, &tid);
	bpf_map_delete_elem(&reading_threads, &tid);
	if (!group_dead)
		return 0;
	bpf_map_delete_elem(&last_poller, &tgid);
	bpf_map_delete_elem(&target_tgids, &tgid);
	ev = reserve_event(sizeof(*ev), CS_EV_PROC_EXIT);
	if (!ev)
		return 0;
	ev->pid = tgid;
	ev->parent_pid = 0;
	bpf_probe_read_kernel_str(ev->comm, sizeof(ev->comm), task->comm);
	/* Wake at once: an exit ends a run. */
	bpf_ringbuf_submit(ev, BPF_RB_FORCE_WAKEUP);
	return 0;
}

#endif /* CS_WALKS_BPF_H */
