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

void cs_upstream_evidence(const struct cs_engine *engine, const struct cs_tail *tail, struct cs_tail_cause *cause)
{
	struct cs_upstream_tail scan;
	cs_upstream_tail_scan(engine, tail, &scan);
	if (scan.top < 0)
		return;
	const struct cs_upstream_stats *u = &engine->upstreams[scan.top];
	char endpoint[CS_ENDPOINT_LEN];
	cs_format_endpoint(endpoint, sizeof(endpoint), u->addr, u->port);
	uint64_t others = 0;
	for (size_t i = 0; i < engine->upstream_count; i++)
		others += i != (size_t)scan.top && scan.ns[i];
	struct cs_figures *f = &cause->evidence;
	cs_figures_name(f, "upstream", endpoint);
	cs_figures_count(f, "upstream_port", u->port);
	cs_figures_count(f, "tail_requests", scan.requests[scan.top]);
	cs_figures_ns(f, "tail_wait", scan.ns[scan.top]);
	cs_figures_ns(f, "connect", scan.connect_ns[scan.top]);
	cs_figures_count(f, "syn_retransmits", scan.syn_retransmits[scan.top]);
	cs_figures_ns(f, "first_byte_wait", scan.wait_ns[scan.top]);
	cs_figures_ns(f, "read", scan.read_ns[scan.top]);
	cs_figures_count(f, "loop_waits", scan.loop_waits[scan.top]);
	cs_figures_share(f, "upstream_share", scan.share[scan.top]);
	cs_figures_count(f, "other_upstreams", others);
}
