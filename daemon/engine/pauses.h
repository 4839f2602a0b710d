/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Runtime pauses (pauses.c): a JVM's safepoints, when the runtime stopped
 * every thread of its process. Kept in the engine so that a request's
 * split can take the time a pause overlapped out of whatever phase it fell
 * in (cause runtime_pause), and summed for the runtime_pauses condition.
 * Part of engine.h; pure.
 */
#ifndef CS_PAUSES_H
#define CS_PAUSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "connscope.h"
#include "hist.h"

/* Recent pauses kept whole, for the requests they overlap; older ones only counted. */
#define CS_PAUSES_KEPT 2048
/* Operations kept apart by name; more are summed in ops_unlisted. */
#define CS_PAUSE_OPS 16
/* Pauses begun and not ended at once: one per JVM; more replace one of them. */
#define CS_PAUSES_OPEN 64

/* One pause, as a request's split and the tail's evidence read it. */
struct cs_pause {
	uint64_t begin_ns;         /* the threads were asked to stop */
	uint64_t end_ns;           /* they went on */
	uint64_t reached_ns;       /* all had stopped; 0: not known */
	uint64_t gc_ns;            /* the collections' own time in it */
	uint64_t vm_runq_ns;       /* with CS_PAUSE_RUNQ: the VM thread's waits for a CPU in it */
	uint64_t gc_runq_ns;       /* ...inside its collections */
	uint64_t worst_request_ns; /* the slowest request it overlapped: in the tail or not */
	uint32_t tgid;
	uint32_t requests;         /* requests it overlapped */
	uint16_t flags;            /* enum cs_pause_flags */
	uint16_t op;               /* its operation's index in ops; CS_PAUSE_OPS: unlisted */
	uint32_t pad;
};

/* The pauses of one VM operation ("G1CollectForAllocation", "ThreadDump"). */
struct cs_pause_op {
	char name[CS_PAUSE_OP_NAME_LEN]; /* "": the operation was not named (uprobes) */
	bool gc;                         /* a collection ran in its pauses */
	uint64_t pauses;
	uint64_t total_ns;
	uint64_t max_ns;
};

struct cs_pause_stats {
	uint64_t pauses;
	uint64_t gc_pauses;          /* pauses in which a collection ran */
	uint64_t gc_full_pauses;     /* ...a full one */
	uint64_t collections;        /* collections inside pauses (a pause may hold two) */
	uint64_t total_ns;           /* every pause's length, summed */
	uint64_t max_ns;
	uint64_t gc_total_ns;        /* the collections' own time */
	uint64_t reached_pauses;     /* pauses whose time to stop every thread is known */
	uint64_t reach_total_ns;     /* that time, summed */
	uint64_t reach_max_ns;
	uint64_t uprobe_pauses;      /* from the uprobe fallback: not named */
	uint64_t runq_pauses;        /* pauses whose VM thread's waits for a CPU are known */
	uint64_t runq_pause_total_ns; /* their lengths, summed */
	uint64_t vm_runq_total_ns;   /* their VM threads' waits for a CPU, summed */
	uint64_t first_begin_ns;     /* the first pause began */
	uint64_t last_end_ns;        /* the latest ended */
	struct cs_hist *pause_ns;    /* each pause's length */
	struct cs_hist *gc_ns;       /* each collection pause's collection time */
	struct cs_hist *reach_ns;    /* each pause's time to stop every thread */
	struct cs_pause_op ops[CS_PAUSE_OPS];
	size_t op_count;
	uint64_t ops_unlisted;       /* pauses of operations beyond CS_PAUSE_OPS */
	struct cs_pause open[CS_PAUSES_OPEN]; /* begun, not ended yet (end_ns 0): a request
	                                 meanwhile overlaps them up to its own end */
	size_t open_count;
	uint64_t open_replaced;      /* a begun pause whose end never came (lost), replaced */
	struct cs_pause *recent;     /* ended pauses in the order they ended: a ring of
	                                CS_PAUSES_KEPT, oldest at recent_next once full */
	size_t recent_count;
	size_t recent_next;
	uint64_t forgotten;          /* pushed out of the ring: no longer in requests' splits */
};

/* The length of a pause. */
static inline uint64_t cs_pause_ns(const struct cs_pause *pause)
{
	return pause->end_ns > pause->begin_ns ? pause->end_ns - pause->begin_ns : 0;
}

/* Its time to stop every thread; 0: not known. */
static inline uint64_t cs_pause_reach_ns(const struct cs_pause *pause)
{
	return pause->reached_ns > pause->begin_ns ? pause->reached_ns - pause->begin_ns : 0;
}

/* The i-th pause kept, oldest first (i < recent_count). */
const struct cs_pause *cs_pause_kept(const struct cs_pause_stats *stats, size_t i);

/*
 * How long process tgid was stopped in [from_ns, to_ns): the pauses kept,
 * and those begun and not ended yet, that overlap it, their overlap
 * summed. Pauses do not overlap each other.
 */
uint64_t cs_pause_overlap_ns(const struct cs_pause_stats *stats, uint32_t tgid, uint64_t from_ns, uint64_t to_ns);

#endif /* CS_PAUSES_H */
