/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Time units. Timestamps and durations are CLOCK_MONOTONIC nanoseconds
 * throughout (the probes' bpf_ktime_get_ns() and user space agree); these
 * convert to and from the units people read.
 */
#ifndef CS_UNITS_H
#define CS_UNITS_H

#define NS_PER_MS 1000000ull
#define NS_PER_SEC 1000000000ull

#endif
