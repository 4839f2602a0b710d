// SPDX-License-Identifier: BSD-2-Clause
#include "timer_heap.h"

#include <errno.h>
#include <stdlib.h>

int cs_timer_heap_init(struct cs_timer_heap *heap, uint32_t initial_cap)
{
	heap->len = 0;
	heap->cap = initial_cap ? initial_cap : 16;
	heap->slots = calloc(heap->cap, sizeof(*heap->slots)); // NOLINT(bugprone-sizeof-expression): pointers
	return heap->slots ? 0 : -ENOMEM;
}

void cs_timer_heap_free(struct cs_timer_heap *heap)
{
	free(heap->slots);
	heap->slots = NULL;
	heap->len = heap->cap = 0;
}

static void place(struct cs_timer_heap *heap, uint32_t i, struct cs_timer *timer)
{
	heap->slots[i] = timer;
	timer->index = i;
}

static void sift_up(struct cs_timer_heap *heap, uint32_t i)
{
	struct cs_timer *timer = heap->slots[i];

	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (heap->slots[parent]->deadline_ns <= timer->deadline_ns)
			break;
		place(heap, i, heap->slots[parent]);
		i = parent;
	}
	place(heap, i, timer);
}

static void sift_down(struct cs_timer_heap *heap, uint32_t i)
{
	struct cs_timer *timer = heap->slots[i];

	for (;;) {
		uint32_t child = 2 * i + 1;
		if (child >= heap->len)
			break;
		if (child + 1 < heap->len &&
		    heap->slots[child + 1]->deadline_ns < heap->slots[child]->deadline_ns)
			child++;
		if (timer->deadline_ns <= heap->slots[child]->deadline_ns)
			break;
		place(heap, i, heap->slots[child]);
		i = child;
	}
	place(heap, i, timer);
}

static int grow(struct cs_timer_heap *heap)
{
	uint32_t cap = heap->cap * 2;
	struct cs_timer **slots;

	if (cap <= heap->cap)
		return -ENOMEM;                             /* 2^31 timers: not going to happen */
	slots = realloc(heap->slots, cap * sizeof(*slots)); // NOLINT(bugprone-sizeof-expression): pointers
	if (!slots)
		return -ENOMEM;
	heap->slots = slots;
	heap->cap = cap;
	return 0;
}

int cs_timer_heap_set(struct cs_timer_heap *heap, struct cs_timer *timer, uint64_t deadline_ns)
{
	if (cs_timer_queued(timer)) {
		uint64_t old = timer->deadline_ns;
		timer->deadline_ns = deadline_ns;
		if (deadline_ns < old)
			sift_up(heap, timer->index);
		else if (deadline_ns > old)
			sift_down(heap, timer->index);
		return 0;
	}
	if (heap->len == heap->cap) {
		int err = grow(heap);
		if (err)
			return err;
	}
	timer->deadline_ns = deadline_ns;
	place(heap, heap->len++, timer);
	sift_up(heap, timer->index);
	return 0;
}

void cs_timer_heap_remove(struct cs_timer_heap *heap, struct cs_timer *timer)
{
	uint32_t i = timer->index;
	struct cs_timer *last;

	if (!cs_timer_queued(timer))
		return;
	timer->index = CS_TIMER_UNQUEUED;
	last = heap->slots[--heap->len];
	if (i == heap->len)
		return; /* it was the last slot */
	/* The last timer fills the hole; it may belong above or below it. */
	place(heap, i, last);
	if (i > 0 && heap->slots[(i - 1) / 2]->deadline_ns > last->deadline_ns)
		sift_up(heap, i);
	else
		sift_down(heap, i);
}

struct cs_timer *cs_timer_heap_peek(const struct cs_timer_heap *heap)
{
	return heap->len ? heap->slots[0] : NULL;
}

struct cs_timer *cs_timer_heap_pop_expired(struct cs_timer_heap *heap, uint64_t now_ns)
{
	struct cs_timer *top = cs_timer_heap_peek(heap);

	if (!top || top->deadline_ns > now_ns)
		return NULL;
	cs_timer_heap_remove(heap, top);
	return top;
}
