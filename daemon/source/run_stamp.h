/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where and when a run happened: its wall-clock start, the host and the
 * kernel. Reports and trace files carry it, so that a report found later
 * (or compared with another) says which machine and which moment it is.
 */
#ifndef CS_RUN_STAMP_H
#define CS_RUN_STAMP_H

#include <stddef.h>
#include <stdint.h>

#define CS_RUN_STAMP_NAME_LEN 65 /* a utsname field, with its NUL */

struct cs_run_stamp {
	int64_t start_unix_ns;             /* CLOCK_REALTIME at the start; 0: unknown */
	uint64_t start_mono_ns;            /* CLOCK_MONOTONIC then: record times to wall clock */
	char host[CS_RUN_STAMP_NAME_LEN];  /* uname nodename */
	char kernel[CS_RUN_STAMP_NAME_LEN]; /* uname release */
};

/* This machine, now. */
void cs_run_stamp_now(struct cs_run_stamp *stamp);

/* The start as ISO 8601 UTC with milliseconds ("2026-12-01T11:00:19.123Z"), or "unknown". */
void cs_run_stamp_format_utc(const struct cs_run_stamp *stamp, char *buf, size_t len);

/* A record's time (CLOCK_MONOTONIC ns) as ISO 8601 UTC, or "unknown" without a stamp. */
void cs_run_stamp_format_at(const struct cs_run_stamp *stamp, uint64_t mono_ns, char *buf, size_t len);

#endif /* CS_RUN_STAMP_H */
