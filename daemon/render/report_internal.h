/* SPDX-License-Identifier: BSD-2-Clause */
/* What the text (report.c) and JSON (report_json.c) reports share. */
#ifndef CS_REPORT_INTERNAL_H
#define CS_REPORT_INTERNAL_H

#include <stdint.h>

#include "report.h"
#include "tail.h"

static const double report_percentiles[] = { 50.0, 90.0, 99.0, 99.9 };
static const char *const report_percentile_names[] = { "p50", "p90", "p99", "p999" };
#define PERCENTILE_COUNT (sizeof(report_percentiles) / sizeof(report_percentiles[0]))

static inline double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

static inline double per_second(uint64_t count, double seconds)
{
	return seconds > 0 ? (double)count / seconds : 0.0;
}

static inline double tail_percentile(const struct cs_report_meta *meta)
{
	return cs_tail_percentile(meta);
}

#endif /* CS_REPORT_INTERNAL_H */
