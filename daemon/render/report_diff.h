/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Two reports side by side (connscope diff): what changed between a run
 * before and a run after, say a deploy or a setting. Pure: two JSON
 * reports (as `connscope report --json` writes them) in, text or JSON out.
 */
#ifndef CS_REPORT_DIFF_H
#define CS_REPORT_DIFF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct cs_diff_options {
	bool as_json;
	double extra_percentile; /* 0: none; else also compared, from the histograms */
};

/*
 * Writes the comparison of before and after to out. Returns 0, or -1 with
 * why in err when either is not a connscope report (a field missing or of
 * the wrong type).
 */
int cs_report_diff(FILE *out, const json_t *before, const json_t *after, const struct cs_diff_options *options,
		   char *err, size_t err_len);

/*
 * The value at percentile pct (0-100] of a report's latency_buckets_us
 * ([lowest_us, highest_us, count] each), as the report's own percentiles
 * are read: the highest value of the bucket holding that rank. Returns -1
 * when there are no buckets.
 */
double cs_diff_bucket_percentile_us(const json_t *buckets, double pct);

#endif /* CS_REPORT_DIFF_H */
