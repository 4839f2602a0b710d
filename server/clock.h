/* SPDX-License-Identifier: BSD-2-Clause */
/* Monotonic time and sleeping, in nanoseconds (CLOCK_MONOTONIC is the clock
 * that bpf_ktime_get_ns() reads, so the profiler's times line up). */
#ifndef CS_CLOCK_H
#define CS_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

#define CS_NS_PER_US 1000ull
#define CS_NS_PER_MS 1000000ull
#define CS_NS_PER_S 1000000000ull

static inline uint64_t cs_now_ns(void)
{
	struct timespec ts;

	/* Cannot fail: the clock id is valid and ts is writable. */
	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * CS_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Sleeps off-CPU for duration_ns, resuming after signal handlers. */
static inline void cs_sleep_ns(uint64_t duration_ns)
{
	struct timespec left = {
		.tv_sec = (time_t)(duration_ns / CS_NS_PER_S),
		.tv_nsec = (long)(duration_ns % CS_NS_PER_S),
	};

	while (nanosleep(&left, &left) == -1 && errno == EINTR)
		;
}

#endif /* CS_CLOCK_H */
