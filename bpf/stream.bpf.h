/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one stream of records and its counters: the main object's ring
 * buffer (events) and per-CPU counters (enum cs_counter). The pause probes'
 * object (pauses.bpf.c) defines them from here too, and user space hands
 * it the main object's maps before load (their fds reused), so that every
 * record sits in one stream in the order it happened and every lost one
 * is counted in one place.
 */
#ifndef CS_STREAM_BPF_H
#define CS_STREAM_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "connscope.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CS_CTR_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, CS_RING_MB_DEFAULT << 20); /* user space sets it before load */
} events SEC(".maps");

#endif /* CS_STREAM_BPF_H */
