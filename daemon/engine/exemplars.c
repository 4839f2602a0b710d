// SPDX-License-Identifier: BSD-2-Clause
/*
 * The slowest requests of a run, kept whole (their split, thread and
 * connection) for the reports' exemplars: a bounded min-heap, so that a
 * request slower than the fastest kept one replaces it in O(log n).
 */
#include "engine_internal.h"

/* Keep the CS_EXEMPLARS slowest requests: a min-heap on total_ns. */
static void heap_swap(struct cs_exemplar *a, struct cs_exemplar *b)
{
	struct cs_exemplar t = *a;
	*a = *b;
	*b = t;
}

void cs_keep_exemplar(struct cs_request_stats *stats, const struct cs_exemplar *candidate)
{
	struct cs_exemplar *heap = stats->exemplars;
	size_t n = stats->exemplar_count;
	if (n < CS_EXEMPLARS) {
		size_t i = n;
		heap[i] = *candidate;
		stats->exemplar_count++;
		while (i > 0 && heap[(i - 1) / 2].split.total_ns > heap[i].split.total_ns) {
			heap_swap(&heap[(i - 1) / 2], &heap[i]);
			i = (i - 1) / 2;
		}
		return;
	}
	if (candidate->split.total_ns <= heap[0].split.total_ns)
		return;
	heap[0] = *candidate;
	for (size_t i = 0;;) {
		size_t smallest = i, left = 2 * i + 1, right = left + 1;
		if (left < n && heap[left].split.total_ns < heap[smallest].split.total_ns)
			smallest = left;
		if (right < n && heap[right].split.total_ns < heap[smallest].split.total_ns)
			smallest = right;
		if (smallest == i)
			break;
		heap_swap(&heap[i], &heap[smallest]);
		i = smallest;
	}
}
