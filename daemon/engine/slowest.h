/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The slowest requests of a stream, at most a fixed number of them: a
 * bounded min-heap on the requests' total time, so that a request slower
 * than the fastest one kept replaces it in O(log n). The engine keeps its
 * exemplars so, `connscope flamegraph` the requests it joins to stacks.
 */
#ifndef CS_SLOWEST_H
#define CS_SLOWEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/*
 * Keep candidate among the slowest in heap (*count elements of size bytes,
 * room for cap), each element beginning with its struct cs_request_split
 * (split.total_ns is the key). A candidate no slower than every kept one
 * is left out once the heap is full. candidate must not lie within heap.
 */
void cs_slowest_keep(void *heap, size_t *count, size_t cap, size_t size, const void *candidate);

/*
 * Whether cs_slowest_keep would keep a candidate of total_ns: while there
 * is room, or when slower than the fastest kept (the root). Most
 * candidates are not, and their callers need not build them.
 */
static inline bool cs_slowest_admits(const void *heap, size_t count, size_t cap, uint64_t total_ns)
{
	if (count < cap)
		return true;
	const struct cs_request_split *fastest = heap;
	return count > 0 && total_ns > fastest->total_ns;
}

#endif /* CS_SLOWEST_H */
