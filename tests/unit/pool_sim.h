/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A first-come-first-served pool of threads, simulated for the pool
 * tests: each job arrives, waits for a thread (any free one, or the one
 * its connection is bound to, as Netty's executor groups bind a channel),
 * and is served. The waits then come from the pool being busy, as they do
 * in a server; a test that wants idle threads behind a wait builds its
 * records by hand.
 */
#ifndef CS_TEST_POOL_SIM_H
#define CS_TEST_POOL_SIM_H

#include <stdint.h>
#include <stdlib.h>

struct pool_job {
	uint64_t arrive_ns;
	uint64_t service_ns;
	int bound_thread; /* -1: the first free thread takes it */
	/* filled in by pool_simulate: */
	uint64_t start_ns, end_ns;
	uint32_t thread; /* 0 .. threads-1 */
	uint32_t order;  /* its place among the jobs by arrival */
};

static inline int pool_job_by_end(const void *a, const void *b)
{
	const struct pool_job *x = a, *y = b;
	if (x->end_ns != y->end_ns)
		return x->end_ns < y->end_ns ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * Serve jobs (in arrival order) on threads (at most 16), then sort them by
 * their end: the order their records reach the engine.
 */
static inline void pool_simulate(struct pool_job *jobs, size_t n, uint32_t threads)
{
	uint64_t free_at[16] = { 0 };
	for (size_t i = 0; i < n; i++) {
		uint32_t t = 0;
		if (jobs[i].bound_thread >= 0)
			t = (uint32_t)jobs[i].bound_thread;
		else
			for (uint32_t k = 1; k < threads; k++)
				if (free_at[k] < free_at[t])
					t = k;
		jobs[i].start_ns = free_at[t] > jobs[i].arrive_ns ? free_at[t] : jobs[i].arrive_ns;
		jobs[i].end_ns = jobs[i].start_ns + jobs[i].service_ns;
		jobs[i].thread = t;
		jobs[i].order = (uint32_t)i;
		free_at[t] = jobs[i].end_ns;
	}
	qsort(jobs, n, sizeof(*jobs), pool_job_by_end);
}

#endif /* CS_TEST_POOL_SIM_H */
