// SPDX-License-Identifier: BSD-2-Clause
#include "run_stamp.h"

#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

void cs_run_stamp_now(struct cs_run_stamp *stamp)
{
	struct timespec now;
	struct utsname names;
	memset(stamp, 0, sizeof(*stamp));
	if (clock_gettime(CLOCK_REALTIME, &now) == 0)
		stamp->start_unix_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	if (clock_gettime(CLOCK_MONOTONIC, &now) == 0)
		stamp->start_monotonic_ns = (uint64_t)now.tv_sec * 1000000000 + (uint64_t)now.tv_nsec;
	if (uname(&names) == 0) {
		snprintf(stamp->host, sizeof(stamp->host), "%s", names.nodename);
		snprintf(stamp->kernel, sizeof(stamp->kernel), "%s", names.release);
	}
}

void cs_run_stamp_format_utc(const struct cs_run_stamp *stamp, char *buf, size_t len)
{
	struct tm utc;
	time_t seconds = (time_t)(stamp->start_unix_ns / 1000000000);
	if (stamp->start_unix_ns <= 0 || !gmtime_r(&seconds, &utc)) {
		snprintf(buf, len, "unknown");
		return;
	}
	char date[32];
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &utc);
	snprintf(buf, len, "%s.%03dZ", date, (int)(stamp->start_unix_ns / 1000000 % 1000));
}
