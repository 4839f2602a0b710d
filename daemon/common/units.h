/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Time units. Timestamps and durations are CLOCK_MONOTONIC nanoseconds
 * throughout (the probes' bpf_ktime_get_ns() and user space agree); these
 * convert to and from the units people read.
 */
#ifndef CS_UNITS_H
#define CS_UNITS_H

#include <stddef.h>
#include <stdint.h>

#define NS_PER_US 1000ull
#define NS_PER_MS 1000000ull
#define NS_PER_SEC 1000000000ull
#define MS_PER_SEC 1000

/* CLOCK_MONOTONIC now, in ns: the clock of the probes' timestamps. */
uint64_t cs_monotonic_ns(void);

/* "850 us", "12.3 ms", "3.00 s": a duration in ns made readable. */
void cs_format_duration(char *buf, size_t len, uint64_t ns);

#endif
