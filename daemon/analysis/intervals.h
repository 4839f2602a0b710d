/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A recorded run, interval by interval (connscope report --interval): when
 * did the tail start to grow, and with which cause. Each line is the
 * difference between the engine's cumulative statistics at the interval's
 * two ends: the requests that completed in it, their percentiles, the
 * cause that holds most of its own tail's time (its tail summed as the
 * run's is: cs_tail_sum), and the SYNs dropped in it.
 * Pure: the caller replays the records and calls cs_intervals_advance
 * before each one with its timestamp; each interval goes to the caller's
 * function as numbers (the table's words: daemon/render/report_intervals.c).
 */
#ifndef CS_INTERVALS_H
#define CS_INTERVALS_H

#include <stdint.h>

#include "engine.h"
#include "hist.h"

/* One interval's line. */
struct cs_interval {
	uint64_t index;           /* 0: the first */
	double from_s;            /* its start, from the first record */
	double span_s;            /* the last may be shorter than the width */
	uint64_t requests;        /* that completed in it */
	uint64_t p50_ns, p99_ns;  /* of those requests (0 when none) */
	int top_cause;            /* enum cs_cause holding most of its tail's time; -1: none */
	double top_cause_share;   /* of that time */
	uint64_t drops;           /* SYNs dropped in it */
};

typedef void (*cs_interval_fn)(const struct cs_interval *interval, void *ctx);

struct cs_intervals {
	uint64_t width_ns;
	double tail_percentile;
	uint64_t first_ns;        /* the first record's time: interval 0 starts there */
	uint64_t next_end_ns;     /* 0: no record yet */
	struct cs_hist *prev_latency;                /* the engine's, at the last boundary */
	uint64_t (*prev_bucket_cause_ns)[CS_CAUSE_COUNT]; /* [CS_HIST_BUCKETS] */
	uint64_t (*bucket_cause_ns)[CS_CAUSE_COUNT];      /* the interval's: now less prev */
	uint64_t prev_drops;
	uint64_t lines;
	uint64_t requests_in_lines; /* the lines' requests and drops, added up: the run's */
	uint64_t drops_in_lines;
	cs_interval_fn emit;
	void *ctx;
};

/* Each interval goes to emit(interval, ctx). Returns 0 or -1 (out of memory). */
int cs_intervals_init(struct cs_intervals *iv, uint64_t width_ns, double tail_percentile, cs_interval_fn emit,
		      void *ctx);
void cs_intervals_free(struct cs_intervals *iv);
/* Emits every interval that ended at or before ts_ns (the next record's time). */
void cs_intervals_advance(struct cs_intervals *iv, const struct cs_engine *engine, uint64_t ts_ns);
/* Emits the last interval, up to the last record (it may be shorter). */
void cs_intervals_finish(struct cs_intervals *iv, const struct cs_engine *engine);

#endif /* CS_INTERVALS_H */
