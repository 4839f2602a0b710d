/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tail: the requests at or above a percentile, and where their time
 * went, cause by cause, ranked, with the figures of their evidence. Pure: computed from the
 * engine's state and the run's metadata.
 */
#ifndef CS_TAIL_H
#define CS_TAIL_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "figures.h"
#include "run_meta.h"

struct cs_tail_cause {
	enum cs_cause cause;
	double share;          /* of the tail's total time */
	uint64_t ns;           /* time in this cause over the tail */
	uint64_t requests;     /* tail requests for which it was the largest cause */
	struct cs_figures evidence; /* none: no evidence (a cause of the tail without a thread or listener to name) */
};

struct cs_tail {
	double percentile;
	uint64_t threshold_ns;   /* requests at or above this latency are the tail */
	uint64_t requests;
	uint64_t total_ns;
	struct cs_tail_cause causes[CS_CAUSE_COUNT]; /* largest share first */
	uint64_t pool_busy_ns;   /* of its worker_pool time: the pool's threads were serving others */
};

/*
 * A pool was busy while requests waited for it when the threads that took
 * them were serving others for at least this share of those waits: a
 * full pool's are, nearly all the time; a pool stopped by a pause, or
 * kept from a CPU, is idle through them.
 */
#define CS_POOL_BUSY_WHILE_WAITING_MIN 0.5

/* The tail's pool_busy_ns over its worker_pool time; -1: it had none. */
double cs_tail_pool_busy_share(const struct cs_tail *tail);

/*
 * The tail of engine's requests at percentile, its causes ranked, each
 * with its evidence. cs_compute_run_tail: the run's, at meta's percentile,
 * its drops those the kernel's counters allow (what every report says).
 */
void cs_compute_tail(const struct cs_engine *engine, double percentile, struct cs_tail *tail);
void cs_compute_run_tail(const struct cs_engine *engine, const struct cs_report_meta *meta, struct cs_tail *tail);

/*
 * The tail of any latency histogram with its causes' time bucket by
 * bucket (bucket_dominant may be NULL: no requests per cause), ranked,
 * without evidence: the run's (cs_compute_tail) and an interval's
 * (intervals.c) are the same sum.
 */
void cs_tail_sum(const struct cs_hist *latency, const uint64_t (*bucket_cause_ns)[CS_CAUSE_COUNT],
		 const uint64_t (*bucket_dominant)[CS_CAUSE_COUNT], double percentile, struct cs_tail *tail);

/* The run's tail percentile: meta's, 99 when unset. */
double cs_tail_percentile(const struct cs_report_meta *meta);

/*
 * True when the tail has requests and the accept path (accept queue and
 * SYN retransmits) is a negligible share of their time: a handful of
 * persistent connections, accepted once, cannot explain a tail.
 */
bool cs_tail_accept_path_negligible(const struct cs_tail *tail);
/* The accept path's share (accept queue and SYN retransmits) of the tail's time. */
double cs_tail_accept_share(const struct cs_tail *tail);
/* The same, computing the tail at meta's percentile first. */
bool cs_accept_path_negligible(const struct cs_engine *engine, const struct cs_report_meta *meta);

/* The pool behind handed-off requests: its threads, their serving time, the poller. */
struct cs_pool_scan {
	uint32_t threads;
	uint32_t carriers;         /* of which a JVM's virtual-thread carriers */
	uint64_t serving_ns;
	uint64_t serving_span_ns;  /* each pool thread's first read to last send, summed */
	uint32_t poller_tid;
	uint64_t poller_handed_out;
	char poller_comm[CS_COMM_LEN];
};

/*
 * The pool's threads and its poller, from the engine's threads: the
 * tail's evidence and the pool_saturation condition both read it.
 */
void cs_scan_pool(const struct cs_engine *engine, struct cs_pool_scan *pool);
/* The pool threads' serving time over the time they served, at most 1. */
double cs_pool_busy_share(const struct cs_pool_scan *pool);

#endif /* CS_TAIL_H */
