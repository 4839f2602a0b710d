// SPDX-License-Identifier: BSD-2-Clause
/*
 * A bounded min-heap of the slowest requests (slowest.h). Ties keep the
 * request already in: the heap's order, and so the reports', depends only
 * on the order of the stream.
 */
#include "slowest.h"

#include <stdint.h>
#include <string.h>

#include "engine.h"

static uint64_t key_of(const unsigned char *heap, size_t size, size_t i)
{
	const struct cs_request_split *split = (const void *)(heap + i * size);
	return split->total_ns;
}

static void move_to(unsigned char *heap, size_t size, size_t to, size_t from)
{
	memcpy(heap + to * size, heap + from * size, size);
}

/*
 * Both sifts move a hole rather than swap the candidate along: each
 * element on the path is copied once, whole, and the candidate once at the
 * end (elements are some hundred bytes). The comparisons are those of a
 * swapping sift, the candidate's key standing for the element it would
 * have been, so the heap's order, and its ties, are unchanged.
 */
static void sift_up(unsigned char *heap, size_t size, size_t i, const void *candidate, uint64_t key_ns)
{
	while (i > 0 && key_of(heap, size, (i - 1) / 2) > key_ns) {
		move_to(heap, size, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	memcpy(heap + i * size, candidate, size);
}

static void sift_down(unsigned char *heap, size_t size, size_t n, const void *candidate, uint64_t key_ns)
{
	size_t i = 0;
	for (;;) {
		size_t smallest = i, left = 2 * i + 1, right = left + 1;
		uint64_t smallest_ns = key_ns;
		if (left < n && key_of(heap, size, left) < smallest_ns) {
			smallest = left;
			smallest_ns = key_of(heap, size, left);
		}
		if (right < n && key_of(heap, size, right) < smallest_ns)
			smallest = right;
		if (smallest == i)
			break;
		move_to(heap, size, i, smallest);
		i = smallest;
	}
	memcpy(heap + i * size, candidate, size);
}

void cs_slowest_keep(void *heap_base, size_t *count, size_t cap, size_t size, const void *candidate)
{
	unsigned char *heap = heap_base;
	size_t n = *count;
	uint64_t key_ns = ((const struct cs_request_split *)candidate)->total_ns;
	if (!cs_slowest_admits(heap, n, cap, key_ns))
		return;
	if (n < cap) {
		(*count)++;
		sift_up(heap, size, n, candidate, key_ns);
		return;
	}
	sift_down(heap, size, n, candidate, key_ns);
}
