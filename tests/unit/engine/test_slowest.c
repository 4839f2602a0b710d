// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of daemon/engine/slowest.c: the bounded min-heap that keeps a
 * stream's slowest requests (the engine's exemplars, flamegraph's
 * requests), for any element that begins with its split.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine.h"
#include "slowest.h"

/* An element as the users' are: the split first, then what rides along. */
struct kept {
	struct cs_request_split split;
	uint32_t id;
	uint8_t pad[13]; /* an odd size: the heap moves whole elements */
};

#define CAP 8

static struct kept request(uint64_t total_ns, uint32_t id)
{
	struct kept k = { .id = id };
	k.split.total_ns = total_ns;
	return k;
}

static int by_total(const void *a, const void *b)
{
	uint64_t x = ((const struct kept *)a)->split.total_ns, y = ((const struct kept *)b)->split.total_ns;
	return x < y ? -1 : x > y;
}

Test(slowest, keeps_the_slowest_of_a_stream_whatever_its_order)
{
	struct kept heap[CAP];
	size_t count = 0;
	/* 100 totals in a scrambled order (37 is prime to 100): the 8 largest are 92..99. */
	for (uint32_t i = 0; i < 100; i++) {
		uint32_t total = (i * 37) % 100;
		struct kept k = request(total, total + 1000);
		cs_slowest_keep(heap, &count, CAP, sizeof(heap[0]), &k);
		cr_assert_leq(count, CAP);
	}
	cr_assert_eq(count, CAP);
	qsort(heap, count, sizeof(heap[0]), by_total);
	for (size_t i = 0; i < CAP; i++) {
		cr_assert_eq(heap[i].split.total_ns, 92 + i);
		cr_assert_eq(heap[i].id, 1092 + i, "element %zu moved whole", i);
	}
}

Test(slowest, a_tie_with_the_fastest_kept_is_left_out)
{
	struct kept heap[2];
	size_t count = 0;
	struct kept a = request(5, 1), b = request(7, 2), tie = request(5, 3), faster = request(4, 4);
	cs_slowest_keep(heap, &count, 2, sizeof(heap[0]), &a);
	cs_slowest_keep(heap, &count, 2, sizeof(heap[0]), &b);
	cs_slowest_keep(heap, &count, 2, sizeof(heap[0]), &tie);
	cs_slowest_keep(heap, &count, 2, sizeof(heap[0]), &faster);
	cr_assert_eq(count, 2);
	cr_assert_eq(heap[0].id, 1, "the root is still the first 5 ns request");
	cr_assert_eq(heap[1].id, 2);
}

Test(slowest, no_room_keeps_nothing)
{
	struct kept heap[1];
	size_t count = 0;
	struct kept k = request(9, 1);
	cs_slowest_keep(heap, &count, 0, sizeof(heap[0]), &k);
	cr_assert_eq(count, 0);
}
