/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Runtime pauses (a JVM's safepoints) as the analysis sees them: the
 * pauses that overlapped the tail's requests, and the run's, in numbers
 * and names (never sentences). Pure: from the engine's pause table.
 */
#ifndef CS_RUNTIME_PAUSES_H
#define CS_RUNTIME_PAUSES_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"

/* The pauses of a set (the run's, or those that overlapped requests at or above a latency). */
struct cs_pause_scan {
	uint64_t pauses;
	uint64_t gc_pauses;           /* a collection ran in them */
	uint64_t other_pauses;        /* VM operations that are no collection (from the USDT probes) */
	uint64_t total_ns;
	uint64_t p50_ns;
	uint64_t max_ns;
	uint64_t reach_p50_ns;        /* time to stop every thread, where known; 0: not known */
	uint64_t reach_max_ns;
	char top_gc_op[CS_PAUSE_OP_NAME_LEN];    /* the collection's VM operation with the most pauses */
	uint64_t top_gc_op_pauses;
	char top_other_op[CS_PAUSE_OP_NAME_LEN]; /* the other operation with the most pauses; "": none named */
	uint64_t top_other_op_pauses;
	bool named;                   /* USDT probes: operations and collections told apart */
};

/*
 * The pauses kept that overlapped a request of at least min_request_ns
 * (0: every pause kept, overlapping a request or not).
 */
void cs_scan_pauses(const struct cs_engine *engine, uint64_t min_request_ns, struct cs_pause_scan *scan);

#endif /* CS_RUNTIME_PAUSES_H */
