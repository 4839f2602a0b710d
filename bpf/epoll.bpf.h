/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The epoll path: which thread polls which socket, and its wake-ups.
 */
#ifndef CS_EPOLL_BPF_H
#define CS_EPOLL_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"
#include "syscalls.bpf.h"

/* ---- the epoll path ------------------------------------------------------ */

/*
 * The epoll instance a poll waited on: the call's first argument, still in
 * the registers the entry saved (the exit tracepoint carries only the
 * return value). -1 where not known (other architectures): turns are then
 * not told apart.
 */
static __always_inline __s32 poll_epfd(void)
{
#if defined(CS_HAVE_SYSCALL_REGS)
	return (__s32)cs_syscall_arg1(cs_syscall_regs(bpf_get_current_task_btf()));
#else
	return -1;
#endif
}

/* Written only when the turn passes: a loop alone on its instance leaves the entry untouched. */
static __always_inline void note_turn(__u32 tgid, __u32 tid, __s32 epfd, __u64 now)
{
	if (epfd < 0)
		return;
	struct poll_turn_key key = { .tgid = tgid, .epfd = epfd };
	struct last_poll *turn = bpf_map_lookup_elem(&poll_turns, &key);
	if (!turn) {
		struct last_poll fresh = { .tid = tid, .exit_ns = now };
		bpf_map_update_elem(&poll_turns, &key, &fresh, BPF_NOEXIST);
	} else if (turn->tid != tid) {
		turn->tid = tid;
		turn->exit_ns = now;
	}
}

/*
 * A poll returned ready events in a target thread. Polls that time out or
 * fail (ret <= 0) are left out first: an idle server's timer wake-ups cost
 * the call and one comparison. A ready poll of a target thread costs four
 * lookups (target, thread, epoll instance, process), updated in place, a
 * clock read and a register read: when and on which instance it returned
 * decides, per request, who learned it was ready.
 */
static __always_inline int on_poll_exit(long ret)
{
	if (ret <= 0)
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = cs_tgid_of(pid_tgid), tid = cs_tid_of(pid_tgid);
	if (!is_target_tgid(tgid))
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__s32 epfd = poll_epfd();
	struct poll_thread *thread = bpf_map_lookup_elem(&poll_threads, &tid);
	if (!thread) {
		struct poll_thread fresh = { .ready_polls = 1, .ready_exit_ns = now, .ready_epfd = epfd };
		if (bpf_map_update_elem(&poll_threads, &tid, &fresh, BPF_NOEXIST) == -E2BIG)
			count(CS_CTR_TABLE_FULL);
	} else {
		thread->ready_polls++;
		thread->ready_exit_ns = now;
		thread->ready_epfd = epfd;
	}
	note_turn(tgid, tid, epfd, now);
	struct last_poll *poller = bpf_map_lookup_elem(&last_poller, &tgid);
	if (!poller) {
		struct last_poll fresh = { .tid = tid, .exit_ns = now };
		if (bpf_map_update_elem(&last_poller, &tgid, &fresh, BPF_NOEXIST) == -E2BIG)
			count(CS_CTR_TABLE_FULL);
	} else {
		poller->tid = tid;
		poller->exit_ns = now;
	}
	return 0;
}

/*
 * Whether a sleeping task sleeps in epoll_wait(): its system call number,
 * which the entry saved in its registers. A loop also sleeps elsewhere (a
 * JVM's thread blocked at a safepoint, then woken by the VM's thread): only
 * a wake-up out of epoll_wait hands an answer back. Where the number is not
 * known (other architectures), every wake-up counts.
 */
static __always_inline bool sleeps_in_epoll(struct task_struct *p)
{
#if defined(CS_HAVE_SYSCALL_REGS)
	return cs_is_epoll_wait(cs_syscall_nr(cs_syscall_regs(p)));
#else
	return true;
#endif
}

/*
 * A thread of a target process that does not poll wakes one that sleeps
 * in epoll_wait(): a worker (an executor) hands an answer back to its event
 * loop (Netty's executor groups), and the loop writes it. Fires on every
 * wake-up of the machine, so the cheapest tests come first: same process (a
 * field and a helper), a target process (one lookup), a polling wakee (one
 * more), then its system call. The waker is the current task in
 * sched_waking, unlike sched_wakeup, which may run on the wakee's CPU. A
 * wake-up from an interrupt that happened to land in a worker of the same
 * process counts too: rare, and only read for parked requests.
 */
SEC("tp_btf/sched_waking")
int BPF_PROG(on_waking, struct task_struct *p)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = cs_tgid_of(pid_tgid);

	if ((__u32)p->tgid != tgid || !is_target_tgid(tgid))
		return 0;
	__u32 wakee = p->pid, waker = cs_tid_of(pid_tgid);
	struct poll_thread *loop = bpf_map_lookup_elem(&poll_threads, &wakee);
	if (!loop || !loop->ready_polls || wakee == waker || !sleeps_in_epoll(p))
		return 0;
	struct poll_thread *worker = bpf_map_lookup_elem(&poll_threads, &waker);
	if (worker && worker->ready_polls)
		return 0; /* a loop or an acceptor that polls: not a worker */
	__u64 now = bpf_ktime_get_ns();
	if (!worker) {
		struct poll_thread fresh = { .last_handback_ns = now };
		if (bpf_map_update_elem(&poll_threads, &waker, &fresh, BPF_NOEXIST) == -E2BIG)
			count(CS_CTR_TABLE_FULL);
		loop->waker_prev_handback_ns = 0;
	} else {
		loop->waker_prev_handback_ns = worker->last_handback_ns;
		worker->last_handback_ns = now;
	}
	loop->woken_ns = now;
	loop->woken_by = waker;
	loop->woken_claimed = 0;
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_epoll_wait")
int on_exit_epoll_wait(struct trace_event_raw_sys_exit *ctx)
{
	return on_poll_exit(ctx->ret);
}

SEC("tracepoint/syscalls/sys_exit_epoll_pwait")
int on_exit_epoll_pwait(struct trace_event_raw_sys_exit *ctx)
{
	return on_poll_exit(ctx->ret);
}

SEC("tracepoint/syscalls/sys_exit_epoll_pwait2")
int on_exit_epoll_pwait2(struct trace_event_raw_sys_exit *ctx)
{
	return on_poll_exit(ctx->ret);
}

#endif /* CS_EPOLL_BPF_H */
