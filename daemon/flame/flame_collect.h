/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What `connscope flamegraph` keeps while it runs: on-CPU samples and
 * off-CPU intervals (their stacks interned: a stack seen a thousand times
 * is stored once) and the slowest requests with their phase windows. Pure:
 * records in, arrays out for the join (flame_join.h). Bounded: past the
 * limits records are counted, not kept.
 */
#ifndef CS_FLAME_COLLECT_H
#define CS_FLAME_COLLECT_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "flame_join.h"
#include "u64map.h"

#define CS_FLAME_MAX_RECORDS (4u << 20)   /* samples, and intervals, kept at most */
#define CS_FLAME_MAX_STACKS (1u << 20)    /* distinct stacks kept at most */
#define CS_FLAME_MAX_REQUESTS 65536       /* slowest requests kept with their windows */

/* An interned stack: kernel frames then user frames, each leaf first. */
struct cs_flame_stack {
	uint32_t tgid;
	uint16_t kernel_frames;
	uint16_t user_frames;
	uint64_t ips[];
};

struct cs_flame_collector {
	struct cs_flame_sample *samples;
	size_t sample_count, sample_cap;
	struct cs_flame_off_cpu *off_cpu;
	size_t off_cpu_count, off_cpu_cap;
	struct cs_flame_stack **stacks;
	size_t stack_count, stack_cap;
	struct cs_u64map stack_index;      /* stack hash -> index + 1 */
	struct cs_flame_request *requests; /* min-heap on split.total_ns */
	size_t request_count;
	struct cs_flame_serving *serving;  /* every request's, for the pools' waits */
	size_t serving_count, serving_cap;
	struct cs_flame_pool_thread *pool_threads;
	size_t pool_thread_count, pool_thread_cap;

	uint64_t requests_seen;            /* requests with a full timeline */
	uint64_t requests_not_kept;        /* pushed out of (or never in) the heap */
	uint64_t records_dropped;          /* over the limits, or out of memory */
	uint64_t malformed;                /* wrong size or type */
};

int cs_flame_collect_init(struct cs_flame_collector *c);
void cs_flame_collect_free(struct cs_flame_collector *c);

/*
 * A struct cs_ev_cpu_sample (without the stack copy that follows it in
 * the ring: its user frames already unwound from it, hdr.size its own) or
 * cs_ev_off_cpu record. Returns 0 or -EINVAL.
 */
int cs_flame_collect_stack_record(struct cs_flame_collector *c, const void *record, size_t len);

/*
 * Any main-probe record: a CS_EV_REQUEST with a full timeline is split
 * (against engine, which must have been fed everything before it) and
 * kept if it is among the slowest. Others are ignored.
 */
void cs_flame_collect_request(struct cs_flame_collector *c, const struct cs_engine *engine, const void *record,
			      size_t len);

/*
 * The pools' threads, once the run is over (roles are known from all of
 * it): every pool worker or virtual-thread carrier of a process, and the
 * threads of a listener's accept pool (accept_pool.h). Returns 0 or -ENOMEM.
 */
int cs_flame_collect_pools(struct cs_flame_collector *c, const struct cs_engine *engine);

/* The kept requests at or above threshold_ns, moved to the front; returns how many. */
size_t cs_flame_collect_tail(struct cs_flame_collector *c, uint64_t threshold_ns);

#endif /* CS_FLAME_COLLECT_H */
