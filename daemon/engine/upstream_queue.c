// SPDX-License-Identifier: BSD-2-Clause
/*
 * A request's wait for a free connection to its upstream.
 *
 * A proxy that limits its connections to an upstream (HAProxy's maxconn on
 * a server line, a pool of a fixed size) queues a request while they are
 * all busy, and sends it when one frees: its exchange begins right after
 * another exchange with that upstream ended. The time from the request's
 * read to its exchange's start is then the upstream's (its connections
 * were all in use), not the handler's, as far as the upstream had an
 * exchange under way all that time. Told only for a gap of a millisecond
 * or more, ended within a millisecond of an answer on the same
 * connection: a loop's own work between reading a request and sending it
 * on (tens of microseconds) is not a wait for a connection, nor is a
 * thread's with a connection of its own (a blocking worker that waited
 * for a CPU or a lock, as another's answer came on another connection).
 */
#include <errno.h>
#include <stdlib.h>

#include "engine_internal.h"

#define SPANS_RECENT 64
#define QUEUE_GAP_MIN_NS (1000 * 1000ull)
#define FREED_WITHIN_NS (1000 * 1000ull)

struct span {
	uint64_t from_ns, to_ns; /* an exchange's start -> its answer's first read */
	uint64_t sk;             /* its connection */
};

struct cs_upstream_spans {
	struct span spans[SPANS_RECENT];
	uint32_t next;
	uint32_t pad;
};

int cs_upstream_queue_init(struct cs_engine *engine)
{
	engine->upstream_spans = calloc(CS_UPSTREAMS_MAX, sizeof(*engine->upstream_spans));
	return engine->upstream_spans ? 0 : -ENOMEM;
}

void cs_upstream_queue_free(struct cs_engine *engine)
{
	free(engine->upstream_spans);
	engine->upstream_spans = NULL;
}

void cs_upstream_queue_note(struct cs_engine *engine, const struct cs_upstream_exchange *x)
{
	if (!x->upstream || x->upstream > CS_UPSTREAMS_MAX || !x->first_read_ns)
		return;
	struct cs_upstream_spans *ring = &engine->upstream_spans[x->upstream - 1];
	ring->spans[ring->next % SPANS_RECENT] = (struct span){ x->start_ns, x->first_read_ns, x->sk };
	ring->next++;
}

static int by_start(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return (x->from_ns > y->from_ns) - (x->from_ns < y->from_ns);
}

/* How much of [from, to] the spans (sorted here) cover together. */
static uint64_t covered(struct span *spans, size_t n, uint64_t from, uint64_t to)
{
	qsort(spans, n, sizeof(spans[0]), by_start);
	uint64_t total = 0, reached = from;
	for (size_t i = 0; i < n; i++) {
		uint64_t a = spans[i].from_ns > reached ? spans[i].from_ns : reached;
		uint64_t b = spans[i].to_ns < to ? spans[i].to_ns : to;
		if (b > a) {
			total += b - a;
			reached = b;
		}
	}
	return total;
}

uint64_t cs_upstream_queued(const struct cs_engine *engine, uint64_t read_ns, const struct cs_upstream_exchange *x)
{
	if (!x->upstream || x->upstream > CS_UPSTREAMS_MAX || x->start_ns < read_ns + QUEUE_GAP_MIN_NS)
		return 0;
	const struct cs_upstream_spans *ring = &engine->upstream_spans[x->upstream - 1];
	struct span over[SPANS_RECENT];
	size_t n = 0;
	bool freed = false;
	for (uint32_t i = 0; i < SPANS_RECENT && i < ring->next; i++) {
		const struct span *s = &ring->spans[i];
		if (s->from_ns == x->start_ns && s->to_ns == x->first_read_ns)
			continue; /* the exchange itself */
		freed |= s->sk == x->sk && s->to_ns <= x->start_ns && x->start_ns - s->to_ns <= FREED_WITHIN_NS;
		if (s->to_ns > read_ns && s->from_ns < x->start_ns)
			over[n++] = *s;
	}
	return freed ? covered(over, n, read_ns, x->start_ns) : 0;
}
