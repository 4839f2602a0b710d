/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A binary min-heap of deadlines, one per worker, pure code. Each timer is
 * embedded in its owner (a connection) and remembers its slot, so moving
 * or removing it is O(log n): a connection re-arms its timer on every
 * request (idle, header, sleep deadlines), so this matters more than the
 * pop. The earliest deadline sets epoll_wait's timeout.
 */
#ifndef CS_TIMER_HEAP_H
#define CS_TIMER_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CS_TIMER_UNQUEUED UINT32_MAX

struct cs_timer {
	uint64_t deadline_ns; /* CLOCK_MONOTONIC; meaningful while queued */
	uint32_t index;       /* slot in the heap, or CS_TIMER_UNQUEUED */
};

struct cs_timer_heap {
	struct cs_timer **slots;
	uint32_t len;
	uint32_t cap;
};

static inline void cs_timer_init(struct cs_timer *timer)
{
	timer->deadline_ns = 0;
	timer->index = CS_TIMER_UNQUEUED;
}

static inline bool cs_timer_queued(const struct cs_timer *timer)
{
	return timer->index != CS_TIMER_UNQUEUED;
}

/* Returns 0 or -ENOMEM. */
int cs_timer_heap_init(struct cs_timer_heap *heap, uint32_t initial_cap);
void cs_timer_heap_free(struct cs_timer_heap *heap);

/* Queues timer for deadline_ns, or moves it there if already queued.
 * Returns 0, or -ENOMEM (the timer is then left unqueued). */
int cs_timer_heap_set(struct cs_timer_heap *heap, struct cs_timer *timer, uint64_t deadline_ns);

/* Unqueues timer; a no-op if it is not queued. */
void cs_timer_heap_remove(struct cs_timer_heap *heap, struct cs_timer *timer);

/* The earliest timer, or NULL when empty. */
struct cs_timer *cs_timer_heap_peek(const struct cs_timer_heap *heap);

/* Unqueues and returns the earliest timer if its deadline is <= now_ns. */
struct cs_timer *cs_timer_heap_pop_expired(struct cs_timer_heap *heap, uint64_t now_ns);

#endif /* CS_TIMER_HEAP_H */
