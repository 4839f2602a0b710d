// SPDX-License-Identifier: BSD-2-Clause
#include "report_intervals.h"

#include <inttypes.h>
#include <stdio.h>

#include "engine.h"
#include "units.h"

void cs_interval_print(const struct cs_interval *interval, void *out_file)
{
	FILE *out = out_file;
	if (interval->index == 0)
		fprintf(out, "%9s %9s %10s %10s  %-24s %7s\n", "from_s", "req/s", "p50", "p99", "top cause (tail share)",
			"drops");
	char p50[32] = "-", p99[32] = "-", cause[48] = "-";
	if (interval->requests) {
		cs_format_duration(p50, sizeof(p50), interval->p50_ns);
		cs_format_duration(p99, sizeof(p99), interval->p99_ns);
		if (interval->top_cause >= 0 && interval->top_cause < CS_CAUSE_COUNT)
			snprintf(cause, sizeof(cause), "%s (%.0f%%)", cs_cause_names[interval->top_cause],
				 100.0 * interval->top_cause_share);
	}
	fprintf(out, "%9.1f %9.1f %10s %10s  %-24s %7" PRIu64 "\n", interval->from_s,
		interval->span_s > 0 ? (double)interval->requests / interval->span_s : 0.0, p50, p99, cause,
		interval->drops);
}
