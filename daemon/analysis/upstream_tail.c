// SPDX-License-Identifier: BSD-2-Clause
#include "upstream_tail.h"

#include <string.h>

#include "addr.h"

/* The upstream cause's share of the tail, 0 when it has none. */
static double upstream_share(const struct cs_tail *tail)
{
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		if (tail->causes[c].cause == CS_CAUSE_UPSTREAM)
			return tail->causes[c].share;
	return 0.0;
}

void cs_upstream_tail_scan(const struct cs_engine *engine, const struct cs_tail *tail, struct cs_upstream_tail *scan)
{
	memset(scan, 0, sizeof(*scan));
	scan->top = -1;
	uint64_t all_ns = 0;
	for (size_t i = 0; tail->requests && i < engine->requests.exemplar_count; i++) {
		const struct cs_exemplar *e = &engine->requests.exemplars[i];
		const struct cs_upstream_use *use = &e->upstream;
		if (e->split.total_ns < tail->threshold_ns || !use->upstream || use->upstream > engine->upstream_count)
			continue;
		size_t u = use->upstream - 1;
		scan->ns[u] += e->split.cause_ns[CS_CAUSE_UPSTREAM] * e->commands;
		scan->requests[u] += e->commands;
		scan->loop_waits[u] += use->loop_blocked;
		scan->queue_ns[u] += use->queue_ns;
		scan->connect_ns[u] += use->connect_ns;
		scan->wait_ns[u] += use->wait_ns;
		scan->read_ns[u] += use->read_ns;
		scan->syn_retransmits[u] += use->syn_retransmits;
		all_ns += e->split.cause_ns[CS_CAUSE_UPSTREAM] * e->commands;
	}
	double share = upstream_share(tail);
	for (size_t u = 0; u < engine->upstream_count && all_ns; u++) {
		scan->share[u] = share * (double)scan->ns[u] / (double)all_ns;
		if (scan->ns[u] && (scan->top < 0 || scan->ns[u] > scan->ns[scan->top]))
			scan->top = (int)u;
	}
}

/*
 * The request the upstream saw for this exchange, when the upstream is a
 * target of the same run too: of the kept requests on its listener port
 * from the exchange's connection (its peer port), the one whose time
 * overlapped the exchange's send -> answer most. NULL: none kept.
 */
static const struct cs_exemplar *upstream_side(const struct cs_engine *engine, const struct cs_upstream_stats *u,
					       const struct cs_upstream_use *use)
{
	const struct cs_exemplar *best = NULL;
	uint64_t best_overlap = 0;
	for (size_t i = 0; use->local_port && i < engine->requests.exemplar_count; i++) {
		const struct cs_exemplar *b = &engine->requests.exemplars[i];
		if (b->port != u->port || b->peer_port != use->local_port || !b->peer_family)
			continue;
		uint64_t start = b->end_ns > b->split.total_ns ? b->end_ns - b->split.total_ns : 0;
		uint64_t from = start > use->exchange_send_ns ? start : use->exchange_send_ns;
		uint64_t to = b->end_ns < use->exchange_answer_ns ? b->end_ns : use->exchange_answer_ns;
		if (to > from && to - from > best_overlap) {
			best_overlap = to - from;
			best = b;
		}
	}
	return best;
}

/* The hop behind the tail's waits on upstream u: its own requests' time, by cause, and their two largest. */
static void chained_evidence(const struct cs_engine *engine, const struct cs_tail *tail, size_t u_index,
			     struct cs_figures *f)
{
	const struct cs_upstream_stats *u = &engine->upstreams[u_index];
	uint64_t chained = 0, cause_ns[CS_CAUSE_COUNT] = { 0 };
	for (size_t i = 0; tail->requests && i < engine->requests.exemplar_count; i++) {
		const struct cs_exemplar *e = &engine->requests.exemplars[i];
		if (e->split.total_ns < tail->threshold_ns || e->upstream.upstream != u_index + 1)
			continue;
		const struct cs_exemplar *b = upstream_side(engine, u, &e->upstream);
		if (!b)
			continue;
		chained++;
		for (int c = 0; c < CS_CAUSE_COUNT; c++)
			cause_ns[c] += b->split.cause_ns[c];
	}
	cs_figures_count(f, "chained_requests", chained);
	int first = -1, second = -1;
	for (int c = 0; c < CS_CAUSE_COUNT; c++) {
		if (!cause_ns[c])
			continue;
		if (first < 0 || cause_ns[c] > cause_ns[first]) {
			second = first;
			first = c;
		} else if (second < 0 || cause_ns[c] > cause_ns[second]) {
			second = c;
		}
	}
	if (first < 0)
		return;
	cs_figures_name(f, "chained_first_cause", cs_cause_names[first]);
	cs_figures_ns(f, "chained_first", cause_ns[first]);
	if (second >= 0) {
		cs_figures_name(f, "chained_second_cause", cs_cause_names[second]);
		cs_figures_ns(f, "chained_second", cause_ns[second]);
	}
}

void cs_upstream_evidence(const struct cs_engine *engine, const struct cs_tail *tail, struct cs_tail_cause *cause)
{
	struct cs_upstream_tail scan;
	cs_upstream_tail_scan(engine, tail, &scan);
	if (scan.top < 0)
		return;
	const struct cs_upstream_stats *u = &engine->upstreams[scan.top];
	char endpoint[CS_UPSTREAM_NAME_LEN];
	cs_upstream_name(endpoint, sizeof(endpoint), u);
	uint64_t others = 0;
	for (size_t i = 0; i < engine->upstream_count; i++)
		others += i != (size_t)scan.top && scan.ns[i];
	struct cs_figures *f = &cause->evidence;
	cs_figures_name(f, "upstream", endpoint);
	cs_figures_count(f, "upstream_port", u->port);
	cs_figures_count(f, "tail_requests", scan.requests[scan.top]);
	cs_figures_ns(f, "tail_wait", scan.ns[scan.top]);
	cs_figures_ns(f, "connection_wait", scan.queue_ns[scan.top]);
	cs_figures_flag(f, "mostly_connection_wait", 2 * scan.queue_ns[scan.top] >= scan.ns[scan.top]);
	cs_figures_ns(f, "connect", scan.connect_ns[scan.top]);
	cs_figures_count(f, "syn_retransmits", scan.syn_retransmits[scan.top]);
	cs_figures_ns(f, "first_byte_wait", scan.wait_ns[scan.top]);
	cs_figures_ns(f, "read", scan.read_ns[scan.top]);
	cs_figures_count(f, "loop_waits", scan.loop_waits[scan.top]);
	cs_figures_share(f, "upstream_share", scan.share[scan.top]);
	cs_figures_count(f, "other_upstreams", others);
	chained_evidence(engine, tail, (size_t)scan.top, f);
}
