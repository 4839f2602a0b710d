// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The floor of connscope's overhead: one empty program on each hook the
 * probes use, so that a benchmark can tell what being attached at all
 * costs (trampolines, the syscall tracepoint slow path) from what the
 * probes' own work costs. No maps, no ring buffer, no reads.
 *
 * floor_hooks.inc is generated from the SEC() names of bpf/connscope.bpf.c
 * and its parts (bpf/PART.bpf.h) by bench/floor_hooks.sh, so the floor
 * follows the probes as they change.
 * Built with the probes' clang flags (mk/bench.mk); loaded by bench/floor.c.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define FLOOR_CAT_(a, b) a##b
#define FLOOR_CAT(a, b) FLOOR_CAT_(a, b)
/* tp_btf and classic tracepoints alike: take the context, touch nothing. */
#define FLOOR_HOOK(section)                          \
	SEC(section)                                 \
	int FLOOR_CAT(noop_, __COUNTER__)(void *ctx) \
	{                                            \
		return 0;                            \
	}

#include "floor_hooks.inc"
