// SPDX-License-Identifier: BSD-2-Clause
#include "csload_timer.h"

#include <stdlib.h>

#define ABSENT UINT32_MAX

int csl_timers_init(struct csl_timers *t, unsigned int n)
{
	t->n = n;
	t->size = 0;
	t->heap = calloc(n ? n : 1, sizeof(*t->heap));
	t->pos = calloc(n ? n : 1, sizeof(*t->pos));
	t->when = calloc(n ? n : 1, sizeof(*t->when));
	if (!t->heap || !t->pos || !t->when) {
		csl_timers_free(t);
		return -1;
	}
	for (unsigned int i = 0; i < n; i++)
		t->pos[i] = ABSENT;
	return 0;
}

void csl_timers_free(struct csl_timers *t)
{
	free(t->heap);
	free(t->pos);
	free(t->when);
	t->heap = t->pos = NULL;
	t->when = NULL;
	t->size = t->n = 0;
}

static bool before(const struct csl_timers *t, unsigned int a, unsigned int b)
{
	return t->when[t->heap[a]] < t->when[t->heap[b]];
}

static void swap(struct csl_timers *t, unsigned int a, unsigned int b)
{
	unsigned int ia = t->heap[a], ib = t->heap[b];
	t->heap[a] = ib;
	t->heap[b] = ia;
	t->pos[ib] = a;
	t->pos[ia] = b;
}

static void sift_up(struct csl_timers *t, unsigned int i)
{
	while (i > 0) {
		unsigned int parent = (i - 1) / 2;
		if (!before(t, i, parent))
			break;
		swap(t, i, parent);
		i = parent;
	}
}

static void sift_down(struct csl_timers *t, unsigned int i)
{
	for (;;) {
		unsigned int l = 2 * i + 1, r = l + 1, m = i;
		if (l < t->size && before(t, l, m))
			m = l;
		if (r < t->size && before(t, r, m))
			m = r;
		if (m == i)
			break;
		swap(t, i, m);
		i = m;
	}
}

void csl_timers_set(struct csl_timers *t, unsigned int id, uint64_t when)
{
	if (id >= t->n)
		return;
	if (t->pos[id] == ABSENT) {
		unsigned int i = t->size++;
		t->heap[i] = id;
		t->pos[id] = i;
		t->when[id] = when;
		sift_up(t, i);
		return;
	}
	uint64_t old = t->when[id];
	t->when[id] = when;
	if (when < old)
		sift_up(t, t->pos[id]);
	else
		sift_down(t, t->pos[id]);
}

void csl_timers_cancel(struct csl_timers *t, unsigned int id)
{
	if (id >= t->n || t->pos[id] == ABSENT)
		return;
	unsigned int i = t->pos[id], last = --t->size;
	if (i != last) {
		swap(t, i, last);
		t->pos[id] = ABSENT;
		/* The id moved into i may belong above or below. */
		sift_up(t, i);
		sift_down(t, i);
	} else {
		t->pos[id] = ABSENT;
	}
}

bool csl_timers_armed(const struct csl_timers *t, unsigned int id)
{
	return id < t->n && t->pos[id] != ABSENT;
}

bool csl_timers_peek(const struct csl_timers *t, unsigned int *id, uint64_t *when)
{
	if (t->size == 0)
		return false;
	*id = t->heap[0];
	*when = t->when[t->heap[0]];
	return true;
}
