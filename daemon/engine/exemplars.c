// SPDX-License-Identifier: BSD-2-Clause
/*
 * The slowest requests of a run, kept whole (their split, thread and
 * connection) for the reports' exemplars: a bounded min-heap, so that a
 * request slower than the fastest kept one replaces it in O(log n).
 */
#include "engine_internal.h"
#include "slowest.h"

/* The heap's key is the split each element begins with. */
_Static_assert(offsetof(struct cs_exemplar, split) == 0, "an exemplar begins with its split");

void cs_keep_exemplar(struct cs_request_stats *stats, const struct cs_exemplar *candidate)
{
	cs_slowest_keep(stats->exemplars, &stats->exemplar_count, CS_EXEMPLARS, sizeof(*candidate), candidate);
}
