/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tail's upstreams: of the tail's time in the upstream cause, each
 * upstream's part, from the slowest requests kept (the engine's
 * exemplars), and the evidence of the one that took the most. Pure.
 */
#ifndef CS_UPSTREAM_TAIL_H
#define CS_UPSTREAM_TAIL_H

#include <stdint.h>

#include "engine.h"
#include "tail.h"

struct cs_upstream_tail {
	uint64_t ns[CS_UPSTREAMS_MAX];        /* the tail requests' time on each upstream (kept ones) */
	uint64_t requests[CS_UPSTREAMS_MAX];  /* tail requests that waited on it */
	uint64_t loop_waits[CS_UPSTREAMS_MAX]; /* ... of which behind a loop blocked on it */
	uint64_t queue_ns[CS_UPSTREAMS_MAX];  /* ... of it, waiting for a free connection to it */
	uint64_t connect_ns[CS_UPSTREAMS_MAX];
	uint64_t wait_ns[CS_UPSTREAMS_MAX];
	uint64_t read_ns[CS_UPSTREAMS_MAX];
	uint64_t syn_retransmits[CS_UPSTREAMS_MAX];
	double share[CS_UPSTREAMS_MAX];       /* of the tail's time: the upstream cause's share, split
	                                         as the kept tail requests split it */
	int top;                              /* the upstream with the most; -1: none */
};

/* What the tail's requests waited on each upstream. */
void cs_upstream_tail_scan(const struct cs_engine *engine, const struct cs_tail *tail, struct cs_upstream_tail *scan);

/* The upstream cause's evidence: its top upstream, its tail requests, the split of their wait. */
void cs_upstream_evidence(const struct cs_engine *engine, const struct cs_tail *tail, struct cs_tail_cause *cause);

#endif /* CS_UPSTREAM_TAIL_H */
