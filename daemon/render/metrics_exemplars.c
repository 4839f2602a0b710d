// SPDX-License-Identifier: BSD-2-Clause
/*
 * OpenMetrics exemplars: on each latency or cause bucket, one of the slow
 * requests the engine keeps whole (struct cs_exemplar), the most recent
 * that falls in that bucket, with its largest cause, the thread that read
 * it, its listener, its number on its connection and its wall-clock end.
 */
#include <inttypes.h>
#include <string.h>

#include "metrics_internal.h"

/* OpenMetrics' limit on an exemplar's label names and values, together. */
#define EXEMPLAR_LABELS_MAX 128

/* The bucket a value in ns falls in: the first bound at or above it, else +Inf. */
static size_t bucket_of(uint64_t value_ns)
{
	for (size_t i = 0; i < CS_MX_BUCKETS; i++)
		if (value_ns <= (uint64_t)(cs_mx_bucket_bounds_s[i] * 1e9))
			return i;
	return CS_MX_BUCKETS;
}

void cs_mx_pick_exemplars(const struct cs_request_stats *requests, uint16_t port, int cause,
			  struct cs_mx_exemplars *picked)
{
	memset(picked, 0, sizeof(*picked));
	for (size_t i = 0; i < requests->exemplar_count && i < CS_EXEMPLARS; i++) {
		const struct cs_exemplar *ex = &requests->exemplars[i];
		if (port && ex->port != port)
			continue;
		uint64_t value_ns = cause < 0 ? ex->split.total_ns : ex->split.cause_ns[cause];
		/* A request with none of a cause says nothing about that cause. */
		if (cause >= 0 && !value_ns)
			continue;
		size_t b = bucket_of(value_ns);
		if (!picked->pick[b] || ex->end_ns > picked->pick[b]->end_ns) {
			picked->pick[b] = ex;
			picked->value_ns[b] = value_ns;
		}
	}
}

static enum cs_cause top_cause(const struct cs_request_split *split)
{
	int top = 0;
	for (int c = 1; c < CS_CAUSE_COUNT; c++)
		if (split->cause_ns[c] > split->cause_ns[top])
			top = c;
	return (enum cs_cause)top;
}

size_t cs_mx_exemplar_labels(char *buf, size_t len, const struct cs_exemplar *ex)
{
	/* Cause names are plain identifiers and the rest numbers: nothing to escape. */
	int n = snprintf(buf, len, "top_cause=\"%s\",tid=\"%" PRIu32 "\",port=\"%u\",request=\"%" PRIu32 "\"",
			 cs_cause_names[top_cause(&ex->split)], ex->reader_tid, ex->port, ex->index);
	/* The client's port finds the request in an access log that records it. */
	if (n > 0 && (size_t)n < len && ex->peer_family) {
		int more = snprintf(buf + n, len - (size_t)n, ",peer_port=\"%u\"", ex->peer_port);
		n = more > 0 ? n + more : n;
	}
	return n < 0 ? 0 : (size_t)n;
}

void cs_mx_write_exemplar(const struct cs_mx_out *w, const struct cs_exemplar *ex, uint64_t value_ns)
{
	char labels[EXEMPLAR_LABELS_MAX + 32];
	cs_mx_exemplar_labels(labels, sizeof(labels), ex);
	fprintf(w->out, " # {%s} %.9f", labels, (double)value_ns / 1e9);
	/*
	 * The request's end in wall-clock time: the probes stamp CLOCK_MONOTONIC,
	 * the run stamp holds both clocks at one moment. Unknown: no timestamp.
	 */
	const struct cs_run_stamp *stamp = &w->meta->stamp;
	if (stamp->start_unix_ns > 0 && stamp->start_mono_ns && ex->end_ns) {
		int64_t unix_ns = stamp->start_unix_ns + ((int64_t)ex->end_ns - (int64_t)stamp->start_mono_ns);
		if (unix_ns > 0)
			fprintf(w->out, " %" PRId64 ".%03" PRId64, unix_ns / 1000000000, unix_ns / 1000000 % 1000);
	}
}
