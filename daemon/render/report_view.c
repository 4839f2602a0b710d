// SPDX-License-Identifier: BSD-2-Clause
#include "report_view.h"

#include <stdlib.h>

#include "report.h"

struct cs_report_view *cs_report_view_new(const struct cs_engine *engine, const struct cs_report_meta *meta)
{
	struct cs_report_view *view = calloc(1, sizeof(*view));
	if (!view)
		return NULL;
	view->meta = meta;
	view->totals = &engine->totals;
	view->listeners = engine->listeners;
	view->listener_count = engine->listener_count;
	view->requests = &engine->requests;
	view->lifecycle = &engine->lifecycle;
	view->bpf_cost = &engine->cost;
	view->pauses = &engine->pauses;
	view->threads = &engine->threads;
	view->upstreams = engine->upstreams;
	view->upstream_count = engine->upstream_count;
	view->upstream_untracked = engine->upstream_untracked;
	view->clients = engine->clients;
	view->client_count = engine->client_count;
	view->client_reads_untracked = engine->client_reads_untracked;
	view->remote_connections = cs_engine_remote_connections(engine);
	view->partial = cs_engine_partial(engine);
	view->conns_followed = engine->conns.count;
	view->conns_evicted = engine->conns_evicted;
	view->conns_timed_out = engine->conns_timed_out;
	view->conns_forgotten_between = engine->conns_forgotten_between;
	view->handbacks_dropped = engine->handbacks_dropped;
	cs_report_tracing_summary(engine, meta, &view->tracing);
	cs_analyze(engine, meta, &view->analysis);
	return view;
}

void cs_report_view_free(struct cs_report_view *view)
{
	free(view);
}
