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

static void swap_at(unsigned char *heap, size_t size, size_t i, size_t j)
{
	unsigned char *a = heap + i * size, *b = heap + j * size;
	for (size_t k = 0; k < size; k++) {
		unsigned char t = a[k];
		a[k] = b[k];
		b[k] = t;
	}
}

void cs_slowest_keep(void *heap_base, size_t *count, size_t cap, size_t size, const void *candidate)
{
	unsigned char *heap = heap_base;
	size_t n = *count;
	if (n < cap) {
		size_t i = n;
		memcpy(heap + i * size, candidate, size);
		(*count)++;
		while (i > 0 && key_of(heap, size, (i - 1) / 2) > key_of(heap, size, i)) {
			swap_at(heap, size, (i - 1) / 2, i);
			i = (i - 1) / 2;
		}
		return;
	}
	if (n == 0 || ((const struct cs_request_split *)candidate)->total_ns <= key_of(heap, size, 0))
		return;
	memcpy(heap, candidate, size);
	for (size_t i = 0;;) {
		size_t smallest = i, left = 2 * i + 1, right = left + 1;
		if (left < n && key_of(heap, size, left) < key_of(heap, size, smallest))
			smallest = left;
		if (right < n && key_of(heap, size, right) < key_of(heap, size, smallest))
			smallest = right;
		if (smallest == i)
			return;
		swap_at(heap, size, i, smallest);
		i = smallest;
	}
}
