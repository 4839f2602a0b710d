/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What metrics.c, metrics_exemplars.c and metrics_series.c share: one
 * writer for both exposition formats, so that every family is written once
 * and the two formats cannot drift apart.
 */
#ifndef CS_METRICS_INTERNAL_H
#define CS_METRICS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis.h"
#include "engine.h"
#include "report_view.h"
#include "run_meta.h"

/* Bucket bounds in seconds: 100 us to 10 s, the range of request tails. */
#define CS_MX_BUCKETS 16
extern const double cs_mx_bucket_bounds_s[CS_MX_BUCKETS];

struct cs_mx_out {
	FILE *out;
	bool openmetrics;
	const char *target;
	const struct cs_report_view *view;  /* made once per exposition */
	const struct cs_report_meta *meta;  /* the view's */
	const struct cs_analysis *analysis; /* the view's */
};

/*
 * # HELP / # TYPE (and # UNIT for _seconds families in OpenMetrics, where a
 * counter's family name drops its _total: the samples keep it).
 */
void cs_mx_header(const struct cs_mx_out *w, const char *name, const char *type, const char *help);
/* A label value with \, " and newline escaped, as both formats require. */
void cs_mx_label_value(FILE *out, const char *value);
/* The same into buf (at most len bytes, its 0 included; a value too long is cut); returns its length. */
size_t cs_mx_escape(char *buf, size_t len, const char *value);
/* name{target="...",extra} (extra already formatted, may be NULL), no closing brace. */
void cs_mx_series(const struct cs_mx_out *w, const char *name, const char *extra);
void cs_mx_sample(const struct cs_mx_out *w, const char *name, const char *extra, uint64_t value);
void cs_mx_sample_double(const struct cs_mx_out *w, const char *name, const char *extra, double value);

/* For each bucket (the last: +Inf) the exemplar shown on it, NULL: none. */
struct cs_mx_exemplars {
	const struct cs_exemplar *pick[CS_MX_BUCKETS + 1];
	uint64_t value_ns[CS_MX_BUCKETS + 1];
};

/*
 * The most recent of the engine's kept slow requests in each bucket:
 * of a listener's latency (cause < 0; port), or of one cause's time
 * (port 0: any listener; requests with none of that cause are left out).
 */
void cs_mx_pick_exemplars(const struct cs_request_stats *requests, uint16_t port, int cause,
			  struct cs_mx_exemplars *picked);
/* " # {labels} value timestamp" after a bucket's value (OpenMetrics only). */
void cs_mx_write_exemplar(const struct cs_mx_out *w, const struct cs_exemplar *ex, uint64_t value_ns);
/* An exemplar's labels, as written: for the 128-character limit's test. */
size_t cs_mx_exemplar_labels(char *buf, size_t len, const struct cs_exemplar *ex);

/* One histogram series in seconds from a nanosecond cs_hist; ex may be NULL. */
void cs_mx_histogram(const struct cs_mx_out *w, const char *name, const char *extra, const struct cs_hist *hist,
		     const struct cs_mx_exemplars *ex);

/* The families beyond the core ones (metrics_series.c): backlog depth, threads, pool, build. */
void cs_mx_render_series(const struct cs_mx_out *w);

/* The servers the target calls (metrics_upstreams.c): waits, connects, exchanges, per upstream. */
void cs_mx_render_upstreams(const struct cs_mx_out *w);
/* The target's local clients (metrics_clients.c): read delay, what they measured, busy share. */
void cs_mx_render_clients(const struct cs_mx_out *w);

/* What connscope costs (metrics_cost.c): BPF run time, its own CPU time. */
void cs_mx_render_cost(const struct cs_mx_out *w);

#endif /* CS_METRICS_INTERNAL_H */
