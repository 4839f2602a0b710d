/* SPDX-License-Identifier: BSD-2-Clause */
/* csload reports: a human summary and one JSON object, each to a FILE *. */
#ifndef CSLOAD_REPORT_H
#define CSLOAD_REPORT_H

#include <stdio.h>

#include "csload.h"
#include "csload_stats.h"

void csl_report_text(FILE *out, const struct csl_config *cfg, const struct csl_stats *st);
void csl_report_json(FILE *out, const struct csl_config *cfg, const struct csl_stats *st);

#endif /* CSLOAD_REPORT_H */
