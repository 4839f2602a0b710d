/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reports: the engine's statistics and the analysis (the tail's causes,
 * the conditions, the findings) as a human report or one JSON object.
 * Renderers take a FILE * and do no other I/O, so tests can render into
 * memory.
 */
#ifndef CS_REPORT_H
#define CS_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "engine.h"
#include "run_meta.h"
#include "trace_windows.h"
#include "units.h"

struct cs_report_view; /* report_view.h: the model every renderer reads */

/* The view's meta->slowest slowest requests, one by one (report_slowest.c). */
void cs_report_slowest_text(FILE *out, const struct cs_report_view *view);
json_t *cs_report_slowest_value(const struct cs_report_view *view);
/* The target's upstreams: their exchanges, connect and wait, joins, share of the tail (report_upstreams.c). */
void cs_report_upstreams_text(FILE *out, const struct cs_report_view *view);
json_t *cs_report_upstreams_value(const struct cs_report_view *view);
/* The target's local clients: their own read delay, what they measured (report_clients.c). */
void cs_report_clients_text(FILE *out, const struct cs_report_view *view);
json_t *cs_report_clients_value(const struct cs_report_view *view);
struct cs_client_bound_condition;
json_t *cs_report_client_bound_value(const struct cs_client_bound_condition *c);
/* The text report of a view; cs_report_text makes the view of engine first. */
void cs_report_view_text(FILE *out, const struct cs_report_view *view);
void cs_report_text(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta);
/* The JSON report, one line (cs_report_value, dumped). */
void cs_report_json(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta);

/* The schema of every JSON report, snapshot and diff: raised when a field changes meaning or goes. */
#define CS_REPORT_SCHEMA_VERSION 1

/*
 * The JSON report as a value, "schema_version" first (NULL: out of
 * memory). The caller owns it; the snapshot adds its "live" to it.
 */
json_t *cs_report_value(const struct cs_engine *engine, const struct cs_report_meta *meta);
/* The same from a view already made: a snapshot makes one for all its parts. */
json_t *cs_report_view_value(const struct cs_report_view *view);
/*
 * What was traced (report_tracing.c): the share of the time the request
 * probes were attached, the requests traced and the estimate of all of
 * them; which figures are exact. The text is one line, only when traced
 * in windows; the JSON ("tracing") always.
 */
void cs_report_tracing_summary(const struct cs_engine *engine, const struct cs_report_meta *meta,
			       struct cs_traced_summary *summary);
json_t *cs_report_tracing_value(const struct cs_traced_summary *traced, const struct cs_report_meta *meta);
void cs_report_tracing_text(FILE *out, const struct cs_traced_summary *traced, const struct cs_report_meta *meta);
/* {"p50":..,"p90":..,"p99":..,"p999":..,"max":..,"count":..}, the times in microseconds. */
json_t *cs_report_percentiles_us(const struct cs_hist *hist);
/* [[lowest_us, highest_us, count],...]: the histogram's non-empty buckets, lowest first. */
json_t *cs_report_buckets_us(const struct cs_hist *hist);
/* ["acceptor",...]: a thread's roles (names of enum cs_thread_role). */
json_t *cs_report_roles(const struct cs_thread_stats *t);

#endif /* CS_REPORT_H */
