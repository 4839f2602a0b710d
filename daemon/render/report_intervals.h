/* SPDX-License-Identifier: BSD-2-Clause */
/* connscope report --interval's table: a line per interval (intervals.h's numbers). */
#ifndef CS_REPORT_INTERVALS_H
#define CS_REPORT_INTERVALS_H

#include "intervals.h"

/* Prints interval's line to out_file (a FILE *), the table's header before the first: a cs_interval_fn. */
void cs_interval_print(const struct cs_interval *interval, void *out_file);

#endif /* CS_REPORT_INTERVALS_H */
