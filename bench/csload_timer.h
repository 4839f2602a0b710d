/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An indexed binary min-heap of deadlines: each of n ids (connection slots)
 * has at most one deadline; set, cancel and peek the earliest. Pure code.
 */
#ifndef CSLOAD_TIMER_H
#define CSLOAD_TIMER_H

#include <stdbool.h>
#include <stdint.h>

struct csl_timers {
	unsigned int n;     /* ids are 0..n-1 */
	unsigned int size;  /* ids in the heap */
	unsigned int *heap; /* heap of ids, ordered by when[] */
	unsigned int *pos;  /* pos[id]: index in heap, or UINT32_MAX when absent */
	uint64_t *when;     /* when[id]: the deadline */
};

int csl_timers_init(struct csl_timers *t, unsigned int n); /* 0 or -1 (ENOMEM) */
void csl_timers_free(struct csl_timers *t);
void csl_timers_set(struct csl_timers *t, unsigned int id, uint64_t when);
void csl_timers_cancel(struct csl_timers *t, unsigned int id);
bool csl_timers_armed(const struct csl_timers *t, unsigned int id);
/* The earliest deadline and its id; false when none is set. */
bool csl_timers_peek(const struct csl_timers *t, unsigned int *id, uint64_t *when);

#endif /* CSLOAD_TIMER_H */
