/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reports: the engine's statistics and the analysis (the tail's causes,
 * the conditions, the findings) as a human report or one JSON object.
 * Renderers take a FILE * and do no other I/O, so tests can render into
 * memory.
 */
#ifndef CS_REPORT_H
#define CS_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "engine.h"
#include "run_meta.h"
#include "units.h"

/* The meta->slowest slowest requests, one by one (report_slowest.c). */
void cs_report_slowest_text(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta);
void cs_report_slowest_json(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta);
void cs_report_text(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta);
void cs_report_json(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta);

/* text as a JSON string: escaped, invalid UTF-8 replaced by U+FFFD. */
void cs_json_write_string(FILE *out, const char *text);
/* ,"roles":[...] of a thread (names of enum cs_thread_role). */
void cs_json_roles(FILE *out, const struct cs_thread_stats *thread);

#endif /* CS_REPORT_H */
