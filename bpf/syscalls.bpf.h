/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which system call a task is in, and its arguments, from the registers
 * its entry saved: the exit tracepoints and the socket hooks carry neither.
 * x86-64 only (CS_HAVE_SYSCALL_REGS); elsewhere the callers say what they
 * do without.
 */
#ifndef CS_SYSCALLS_BPF_H
#define CS_SYSCALLS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#if defined(__TARGET_ARCH_x86)
#define CS_HAVE_SYSCALL_REGS 1

/* x86-64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl: a stable ABI). */
#define CS_NR_READ 0
#define CS_NR_READV 19
#define CS_NR_RECVFROM 45
#define CS_NR_RECVMSG 47
#define CS_NR_EPOLL_WAIT 232
#define CS_NR_EPOLL_PWAIT 281
#define CS_NR_EPOLL_PWAIT2 441

/* The registers task's system call entry saved. */
static __always_inline struct pt_regs *cs_syscall_regs(struct task_struct *task)
{
	return (struct pt_regs *)bpf_task_pt_regs(task);
}

/* The number of the system call the registers belong to. */
static __always_inline long cs_syscall_nr(const struct pt_regs *regs)
{
	return BPF_CORE_READ(regs, orig_ax);
}

/* Its first and second arguments. */
static __always_inline __u64 cs_syscall_arg1(const struct pt_regs *regs)
{
	return BPF_CORE_READ(regs, di);
}

static __always_inline __u64 cs_syscall_arg2(const struct pt_regs *regs)
{
	return BPF_CORE_READ(regs, si);
}

/* Is nr one of the epoll waits? */
static __always_inline bool cs_is_epoll_wait(long nr)
{
	return nr == CS_NR_EPOLL_WAIT || nr == CS_NR_EPOLL_PWAIT || nr == CS_NR_EPOLL_PWAIT2;
}
#endif

#endif /* CS_SYSCALLS_BPF_H */
