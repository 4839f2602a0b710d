// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of daemon/engine/slowest.c: the bounded min-heap that keeps a
 * stream's slowest requests (the engine's exemplars, flamegraph's
 * requests), for any element that begins with its split.
 */
#include <criterion/criterion.h>
#include <stdbool.h>
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

/*
 * The textbook heap, swapping whole elements, as the reference for the
 * order: the reports list the kept requests in the heap's order, so a
 * faster sift must leave every element where this one does, ties included.
 */
static void reference_keep(struct kept *heap, size_t *count, size_t cap, const struct kept *candidate)
{
	size_t i = *count;
	if (i < cap) {
		heap[(*count)++] = *candidate;
		for (; i > 0 && heap[(i - 1) / 2].split.total_ns > heap[i].split.total_ns; i = (i - 1) / 2) {
			struct kept t = heap[i];
			heap[i] = heap[(i - 1) / 2];
			heap[(i - 1) / 2] = t;
		}
		return;
	}
	if (i == 0 || candidate->split.total_ns <= heap[0].split.total_ns)
		return;
	heap[0] = *candidate;
	for (i = 0;;) {
		size_t smallest = i, left = 2 * i + 1, right = left + 1;
		if (left < *count && heap[left].split.total_ns < heap[smallest].split.total_ns)
			smallest = left;
		if (right < *count && heap[right].split.total_ns < heap[smallest].split.total_ns)
			smallest = right;
		if (smallest == i)
			return;
		struct kept t = heap[i];
		heap[i] = heap[smallest];
		heap[smallest] = t;
		i = smallest;
	}
}

Test(slowest, keeps_the_reference_heaps_order_ties_included)
{
	struct kept heap[CAP] = { 0 }, reference[CAP] = { 0 };
	size_t count = 0, reference_count = 0;
	uint32_t state = 12345;
	/* Totals of a few values only, so that most candidates tie with some kept one. */
	for (uint32_t i = 0; i < 2000; i++) {
		state = state * 1103515245u + 12345u;
		struct kept k = request((state >> 16) % 13 + i / 200, i);
		bool admitted = cs_slowest_admits(heap, count, CAP, k.split.total_ns);
		cs_slowest_keep(heap, &count, CAP, sizeof(heap[0]), &k);
		size_t count_before = reference_count;
		uint32_t root_before = reference[0].id;
		reference_keep(reference, &reference_count, CAP, &k);
		cr_assert_eq(count, reference_count);
		/* A candidate kept either filled a room or replaced the root: admitted exactly then. */
		cr_assert_eq(admitted, reference_count != count_before || reference[0].id != root_before,
			     "request %u: admitted %d", i, admitted);
		for (size_t j = 0; j < count; j++)
			cr_assert_eq(heap[j].id, reference[j].id, "after %u requests, slot %zu holds %u, not %u", i + 1,
				     j, heap[j].id, reference[j].id);
	}
}
