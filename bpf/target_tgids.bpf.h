/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The target processes (tgid), a set: filled by user space, forks of
 * targets added by the probes (walks.bpf.h). Both objects define it from
 * here, since the stack probes' (stacks.bpf.c) is replaced by the main
 * object's map before load and must be its twin.
 */
#ifndef CS_TARGET_TGIDS_BPF_H
#define CS_TARGET_TGIDS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "connscope.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CS_TARGET_TGIDS_MAX);
	__type(key, __u32);
	__type(value, __u8);
} target_tgids SEC(".maps");

#endif /* CS_TARGET_TGIDS_BPF_H */
