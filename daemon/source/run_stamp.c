// SPDX-License-Identifier: BSD-2-Clause
#include "run_stamp.h"

#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "units.h"

void cs_run_stamp_now(struct cs_run_stamp *stamp)
{
	struct timespec now, mono;
	struct utsname names;
	memset(stamp, 0, sizeof(*stamp));
	if (clock_gettime(CLOCK_REALTIME, &now) == 0 && clock_gettime(CLOCK_MONOTONIC, &mono) == 0) {
		stamp->start_unix_ns = (int64_t)now.tv_sec * (int64_t)NS_PER_SEC + now.tv_nsec;
		stamp->start_mono_ns = (uint64_t)mono.tv_sec * NS_PER_SEC + (uint64_t)mono.tv_nsec;
	}
	if (uname(&names) == 0) {
		snprintf(stamp->host, sizeof(stamp->host), "%s", names.nodename);
		snprintf(stamp->kernel, sizeof(stamp->kernel), "%s", names.release);
	}
}

static void format_unix_ns(int64_t unix_ns, char *buf, size_t len)
{
	struct tm utc;
	time_t seconds = (time_t)(unix_ns / (int64_t)NS_PER_SEC);
	if (unix_ns <= 0 || !gmtime_r(&seconds, &utc)) {
		snprintf(buf, len, "unknown");
		return;
	}
	char date[32];
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &utc);
	snprintf(buf, len, "%s.%03dZ", date, (int)(unix_ns / (int64_t)NS_PER_MS % MS_PER_SEC));
}

void cs_run_stamp_format_utc(const struct cs_run_stamp *stamp, char *buf, size_t len)
{
	format_unix_ns(stamp->start_unix_ns, buf, len);
}

void cs_run_stamp_format_at(const struct cs_run_stamp *stamp, uint64_t mono_ns, char *buf, size_t len)
{
	if (stamp->start_unix_ns <= 0 || !stamp->start_mono_ns) {
		snprintf(buf, len, "unknown");
		return;
	}
	format_unix_ns(stamp->start_unix_ns + ((int64_t)mono_ns - (int64_t)stamp->start_mono_ns), buf, len);
}
