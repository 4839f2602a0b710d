// SPDX-License-Identifier: BSD-2-Clause
#include "units.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

uint64_t cs_monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

void cs_format_duration(char *buf, size_t len, uint64_t ns)
{
	/* Switch units on the rounded value: never "1000 us" or "1000 ms". */
	if (ns < 1000)
		snprintf(buf, len, "%" PRIu64 " ns", ns);
	else if (ns < 999500)
		snprintf(buf, len, "%.0f us", (double)ns / NS_PER_US);
	else if (ns < 99950000)
		snprintf(buf, len, "%.1f ms", (double)ns / NS_PER_MS);
	else if (ns < 999500000)
		snprintf(buf, len, "%.0f ms", (double)ns / NS_PER_MS);
	else
		snprintf(buf, len, "%.2f s", (double)ns / NS_PER_SEC);
}
