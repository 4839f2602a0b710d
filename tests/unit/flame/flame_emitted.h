/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every path the flamegraph join emitted, as the join tests look at them:
 * record_path is the join's callback (cs_flame_join), and a path of
 * weight 0 fails the test.
 */
#ifndef CS_TEST_FLAME_EMITTED_H
#define CS_TEST_FLAME_EMITTED_H

#include <criterion/criterion.h>
#include <stddef.h>
#include <stdint.h>

#include "flame_join.h"

struct emitted {
	struct cs_flame_path paths[4096];
	uint64_t weights[4096];
	size_t count;
	uint64_t total_ns;
};

static inline void record_path(void *ctx, const struct cs_flame_path *path, uint64_t weight_ns)
{
	struct emitted *e = ctx;
	cr_assert_lt(e->count, sizeof(e->paths) / sizeof(e->paths[0]));
	cr_assert_gt(weight_ns, 0, "no path of weight 0");
	e->paths[e->count] = *path;
	e->weights[e->count] = weight_ns;
	e->count++;
	e->total_ns += weight_ns;
}

/* The weight emitted under cause, whatever the path below it. */
static inline uint64_t cause_weight(const struct emitted *e, enum cs_cause cause)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < e->count; i++)
		if (e->paths[i].cause == cause)
			sum += e->weights[i];
	return sum;
}

#endif /* CS_TEST_FLAME_EMITTED_H */
