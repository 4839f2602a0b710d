/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The engine's state as Prometheus text exposition (format 0.0.4) or as
 * OpenMetrics 1.0.0: request latency, accept-queue wait and each cause's
 * time as histograms, accepts, drops, wasted wake-ups, idle closes, race
 * resets and lost events as counters, the sampled backlog, the busiest
 * threads, the pool and the build as gauges. Base units (seconds); counters
 * end in _total. OpenMetrics adds exemplars (a recent slow request) to the
 * latency and cause buckets. Pure: renders into a FILE *.
 */
#ifndef CS_METRICS_H
#define CS_METRICS_H

#include <stdio.h>
#include <sys/socket.h>

#include "engine.h"
#include "run_meta.h"

enum cs_metrics_format {
	CS_METRICS_PROMETHEUS,  /* text format 0.0.4 */
	CS_METRICS_OPENMETRICS, /* OpenMetrics 1.0.0, with exemplars */
};

/* Content-Type of what cs_metrics_render writes in each format. */
#define CS_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define CS_OPENMETRICS_CONTENT_TYPE "application/openmetrics-text; version=1.0.0; charset=utf-8"

/* Threads with per-thread series: the ones that read the most requests. */
#define CS_METRICS_THREADS 8

/*
 * target: the label value naming what is watched (e.g. the process name).
 * Returns 0, or -ENOMEM when there was no memory for the report's view
 * (nothing is written then).
 */
int cs_metrics_render(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta,
		      const char *target, enum cs_metrics_format format);

/*
 * The format an HTTP request head asks for: OpenMetrics when its Accept
 * header names application/openmetrics-text (with a q above 0), else
 * Prometheus text.
 */
enum cs_metrics_format cs_metrics_negotiate(const char *request_head);

/* The same for one Accept header's value (value_len bytes, no NUL needed). */
enum cs_metrics_format cs_metrics_negotiate_accept(const char *value, size_t value_len);

/*
 * Parse "ADDR:PORT", "[ADDR6]:PORT" or "PORT" (then 127.0.0.1: metrics are
 * served on loopback unless an address is given). Returns 0 or -EINVAL.
 */
int cs_parse_listen_address(const char *text, struct sockaddr_storage *addr, unsigned int *addr_len);

#endif /* CS_METRICS_H */
