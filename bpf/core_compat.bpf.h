/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reads of kernel state that differ between the kernels connscope runs on,
 * each behind a CO-RE test of the field or value it needs (resolved by
 * libbpf at load against the running kernel's BTF; the verifier then drops
 * the branch not taken, so the test costs nothing at run time). Each names
 * the kernel, and the commit's subject, that brought what it reads. The
 * kernel the rest needs is checked at start-up (daemon/source/kernel_check.c).
 */
#ifndef CS_CORE_COMPAT_BPF_H
#define CS_CORE_COMPAT_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "cs_helpers.bpf.h"

/*
 * The unit of a TCP socket's timestamps (retrans_stamp): microseconds when
 * the route asks for them (tcp_usec_ts), else milliseconds. Linux 6.7,
 * commit 614e8316aa4c ("tcp: add support for usec resolution in TCP TS
 * values"); always milliseconds before.
 */
static __always_inline __u64 cs_tcp_ts_unit_ns(const struct tcp_sock *tp)
{
	if (!bpf_core_field_exists(tp->tcp_usec_ts))
		return NSEC_PER_MSEC;
	return BPF_CORE_READ_BITFIELD_PROBED(tp, tcp_usec_ts) ? NSEC_PER_USEC : NSEC_PER_MSEC;
}

/*
 * A thread's longest single run-queue wait (sched_info.max_run_delay).
 * Linux 6.15 ("delayacct: add delay max to record delay peak"); 0 before.
 */
static __always_inline __u64 cs_task_max_run_delay(const struct task_struct *task)
{
	if (!bpf_core_field_exists(task->sched_info.max_run_delay))
		return 0;
	return task->sched_info.max_run_delay;
}

/*
 * Is a freed packet's drop reason a full accept queue's (a handshake's
 * last ACK dropped)? Linux 6.15 ("tcp: add four drop reasons to
 * tcp_check_req()"); before, that drop carries no reason of its own and
 * the probe sees none (the namespace's ListenOverflows counter still
 * counts them).
 */
static __always_inline bool cs_is_listen_overflow(enum skb_drop_reason reason)
{
	if (!bpf_core_enum_value_exists(enum skb_drop_reason, SKB_DROP_REASON_TCP_LISTEN_OVERFLOW))
		return false;
	return reason == bpf_core_enum_value(enum skb_drop_reason, SKB_DROP_REASON_TCP_LISTEN_OVERFLOW);
}

#endif /* CS_CORE_COMPAT_BPF_H */
