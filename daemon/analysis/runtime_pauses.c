// SPDX-License-Identifier: BSD-2-Clause
/*
 * The pauses that overlapped the tail, from the engine's ring of recent
 * pauses: each pause remembers the slowest request it overlapped.
 */
#include "runtime_pauses.h"
#include "attrib.h"

#include <stdlib.h>
#include <string.h>

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The median of n values (sorted in place); 0 for none. */
static uint64_t median(uint64_t *values, size_t n)
{
	if (!n)
		return 0;
	qsort(values, n, sizeof(*values), compare_u64);
	return values[n / 2];
}

/* The operation of the scanned pauses with the most of them, GC or not. */
static void top_ops(const struct cs_pause_stats *stats, const uint64_t *per_op, struct cs_pause_scan *scan)
{
	for (size_t op = 0; op < stats->op_count; op++) {
		const struct cs_pause_op *o = &stats->ops[op];
		if (o->gc && per_op[op] > scan->top_gc_op_pauses) {
			scan->top_gc_op_pauses = per_op[op];
			memcpy(scan->top_gc_op, o->name, sizeof(scan->top_gc_op));
		} else if (!o->gc && per_op[op] > scan->top_other_op_pauses) {
			scan->top_other_op_pauses = per_op[op];
			memcpy(scan->top_other_op, o->name, sizeof(scan->top_other_op));
		}
	}
}

void cs_scan_pauses(const struct cs_engine *engine, uint64_t min_request_ns, struct cs_pause_scan *scan)
{
	const struct cs_pause_stats *stats = &engine->pauses;
	uint64_t per_op[CS_PAUSE_OPS + 1] = { 0 };
	size_t reach_count = 0;
	memset(scan, 0, sizeof(*scan));
	if (!stats->recent_count)
		return;
	/* Too large for a stack; without them, the medians stay 0 (not known). */
	uint64_t *lengths = malloc(stats->recent_count * sizeof(*lengths));
	uint64_t *reaches = malloc(stats->recent_count * sizeof(*reaches));
	scan->named = stats->pauses > stats->uprobe_pauses;
	for (size_t i = 0; i < stats->recent_count; i++) {
		const struct cs_pause *pause = cs_pause_kept(stats, i);
		if (min_request_ns && pause->worst_request_ns < min_request_ns)
			continue;
		uint64_t length = cs_pause_ns(pause), reach = cs_pause_reach_ns(pause);
		if (lengths)
			lengths[scan->pauses] = length;
		scan->pauses++;
		scan->total_ns += length;
		if (length > scan->max_ns)
			scan->max_ns = length;
		if (reach && reaches)
			reaches[reach_count++] = reach;
		if (reach > scan->reach_max_ns)
			scan->reach_max_ns = reach;
		if (pause->flags & CS_PAUSE_GC)
			scan->gc_pauses++;
		else if (!(pause->flags & CS_PAUSE_UPROBE))
			scan->other_pauses++;
		per_op[pause->op]++;
	}
	scan->p50_ns = lengths ? median(lengths, scan->pauses) : 0;
	scan->reach_p50_ns = median(reaches, reach_count);
	free(lengths);
	free(reaches);
	top_ops(stats, per_op, scan);
}

/*
 * runtime_pauses: the runtime stopped the server's threads for a large
 * share of the tail's time, or of the run. The same shares as
 * pool_saturation's and cpu_saturation's.
 */
#define PAUSE_TAIL_SHARE_MIN 0.2
#define PAUSE_STOPPED_SHARE_MIN 0.05

void cs_runtime_pauses_condition(const struct cs_engine *engine, const struct cs_report_meta *meta,
				 const struct cs_tail *tail, struct cs_conditions *conditions)
{
	const struct cs_pause_stats *stats = &engine->pauses;
	struct cs_pauses_condition *c = &conditions->runtime_pauses;
	struct cs_pause_scan run, in_tail;
	cs_scan_pauses(engine, 0, &run);
	cs_scan_pauses(engine, tail->requests ? tail->threshold_ns : UINT64_MAX, &in_tail);
	c->pauses = stats->pauses;
	c->gc_pauses = stats->gc_pauses;
	c->other_pauses = stats->pauses - stats->gc_pauses - stats->uprobe_pauses; /* the uprobes tell neither */
	c->total_ns = stats->total_ns;
	c->max_ns = stats->max_ns;
	c->p50_ns = run.p50_ns;
	c->reach_p50_ns = run.reach_p50_ns;
	c->reach_max_ns = stats->reach_max_ns;
	c->stopped_share = meta->duration_s > 0 ? (double)stats->total_ns / (meta->duration_s * 1e9) : 0.0;
	if (c->stopped_share > 1.0)
		c->stopped_share = 1.0;
	for (int i = 0; i < CS_CAUSE_COUNT; i++)
		if (tail->causes[i].cause == CS_CAUSE_RUNTIME_PAUSE)
			c->tail_share = tail->causes[i].share;
	c->tail_pauses = in_tail.pauses;
	memcpy(c->top_gc_op, run.top_gc_op, sizeof(c->top_gc_op));
	memcpy(c->top_other_op, run.top_other_op, sizeof(c->top_other_op));
	c->top_other_op_pauses = run.top_other_op_pauses;
	c->named = run.named;
	c->vm_cpu_wait_ns = stats->vm_runq_total_ns;
	c->vm_cpu_wait_share = stats->runq_pause_total_ns
				       ? (double)stats->vm_runq_total_ns / (double)stats->runq_pause_total_ns
				       : -1.0;
	c->flagged = stats->pauses &&
		     (c->tail_share >= PAUSE_TAIL_SHARE_MIN || c->stopped_share >= PAUSE_STOPPED_SHARE_MIN);
}
