// SPDX-License-Identifier: BSD-2-Clause
#include "intervals.h"

#include <stdlib.h>
#include <string.h>

#include "tail.h"

int cs_intervals_init(struct cs_intervals *iv, uint64_t width_ns, double tail_percentile, cs_interval_fn emit,
		      void *ctx)
{
	memset(iv, 0, sizeof(*iv));
	iv->width_ns = width_ns;
	iv->tail_percentile = tail_percentile > 0 ? tail_percentile : 99.0;
	iv->emit = emit;
	iv->ctx = ctx;
	iv->prev_latency = calloc(1, sizeof(*iv->prev_latency));
	iv->prev_bucket_cause_ns = calloc(CS_HIST_BUCKETS, sizeof(*iv->prev_bucket_cause_ns));
	iv->bucket_cause_ns = calloc(CS_HIST_BUCKETS, sizeof(*iv->bucket_cause_ns));
	if (!iv->prev_latency || !iv->prev_bucket_cause_ns || !iv->bucket_cause_ns) {
		cs_intervals_free(iv);
		return -1;
	}
	cs_hist_init(iv->prev_latency);
	return 0;
}

void cs_intervals_free(struct cs_intervals *iv)
{
	free(iv->prev_latency);
	free(iv->prev_bucket_cause_ns);
	free(iv->bucket_cause_ns);
	iv->prev_latency = NULL;
	iv->prev_bucket_cause_ns = NULL;
	iv->bucket_cause_ns = NULL;
}

static uint64_t total_drops(const struct cs_engine *engine)
{
	uint64_t drops = 0;
	for (size_t i = 0; i < engine->listener_count; i++)
		drops += cs_listener_drops(&engine->listeners[i]);
	return drops;
}

/*
 * The interval's histogram: the engine's now less the one at the last
 * boundary, bucket by bucket (min and max are the buckets' bounds: the
 * exact ones of the interval are not kept).
 */
static void interval_latency(const struct cs_intervals *iv, const struct cs_hist *now, struct cs_hist *out)
{
	cs_hist_init(out);
	for (size_t b = 0; b < CS_HIST_BUCKETS; b++) {
		uint64_t n = now->buckets[b] - iv->prev_latency->buckets[b];
		if (!n)
			continue;
		out->buckets[b] = n;
		out->count += n;
		if (out->min == UINT64_MAX || out->min > cs_hist_bucket_lowest(b))
			out->min = cs_hist_bucket_lowest(b);
		out->max = cs_hist_bucket_highest(b);
	}
}

/* The cause holding most of the interval's tail time, -1: none; its share of that time. */
static int interval_top_cause(const struct cs_intervals *iv, const struct cs_engine *engine,
			      const struct cs_hist *latency, double *share)
{
	for (size_t b = 0; b < CS_HIST_BUCKETS; b++)
		for (int c = 0; c < CS_CAUSE_COUNT; c++)
			iv->bucket_cause_ns[b][c] = engine->requests.bucket_cause_ns[b][c] - iv->prev_bucket_cause_ns[b][c];
	struct cs_tail tail;
	cs_tail_sum(latency, (const uint64_t (*)[CS_CAUSE_COUNT])iv->bucket_cause_ns, NULL, iv->tail_percentile, &tail);
	*share = tail.causes[0].share;
	return tail.causes[0].ns ? (int)tail.causes[0].cause : -1;
}

static void emit_line(struct cs_intervals *iv, const struct cs_engine *engine, uint64_t start_ns, uint64_t end_ns)
{
	struct cs_hist latency;
	interval_latency(iv, engine->requests.latency_ns, &latency);
	struct cs_interval line = { .index = iv->lines++, .from_s = (double)(start_ns - iv->first_ns) / 1e9,
				    .span_s = (double)(end_ns - start_ns) / 1e9, .requests = latency.count,
				    .top_cause = -1 };
	if (latency.count) {
		line.p50_ns = cs_hist_percentile(&latency, 50);
		line.p99_ns = cs_hist_percentile(&latency, 99);
		line.top_cause = interval_top_cause(iv, engine, &latency, &line.top_cause_share);
	}
	uint64_t drops = total_drops(engine);
	line.drops = drops - iv->prev_drops;
	iv->requests_in_lines += latency.count;
	iv->drops_in_lines += line.drops;
	iv->emit(&line, iv->ctx);
	/* This boundary is the next interval's start. */
	memcpy(iv->prev_latency, engine->requests.latency_ns, sizeof(*iv->prev_latency));
	memcpy(iv->prev_bucket_cause_ns, engine->requests.bucket_cause_ns,
	       CS_HIST_BUCKETS * sizeof(*iv->prev_bucket_cause_ns));
	iv->prev_drops = drops;
}

void cs_intervals_advance(struct cs_intervals *iv, const struct cs_engine *engine, uint64_t ts_ns)
{
	if (!iv->next_end_ns) {
		iv->first_ns = ts_ns;
		iv->next_end_ns = ts_ns + iv->width_ns;
		return;
	}
	while (ts_ns >= iv->next_end_ns) {
		emit_line(iv, engine, iv->next_end_ns - iv->width_ns, iv->next_end_ns);
		iv->next_end_ns += iv->width_ns;
	}
}

void cs_intervals_finish(struct cs_intervals *iv, const struct cs_engine *engine)
{
	uint64_t last = engine->totals.last_ts_ns;
	if (iv->next_end_ns && last > iv->next_end_ns - iv->width_ns)
		emit_line(iv, engine, iv->next_end_ns - iv->width_ns, last);
}
