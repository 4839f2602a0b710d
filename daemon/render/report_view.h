/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One report's model, built once from the engine and the analysis
 * (cs_report_view_new) and read by every renderer: the text and JSON
 * reports, the snapshot, the metrics. Renderers read the view, never the
 * engine. Read-only: its statistics point into the engine, which must not
 * take records while a renderer reads them.
 */
#ifndef CS_REPORT_VIEW_H
#define CS_REPORT_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "engine.h"
#include "run_meta.h"
#include "trace_windows.h"

struct cs_report_view {
	const struct cs_report_meta *meta;
	/* The engine's statistics. */
	const struct cs_engine_totals *totals;      /* records received, malformed, the last record's time */
	const struct cs_listener_stats *listeners;
	size_t listener_count;
	const struct cs_request_stats *requests;
	const struct cs_lifecycle_stats *lifecycle;
	const struct cs_cost_stats *bpf_cost;       /* the BPF programs' run time, as read */
	const struct cs_pause_stats *pauses;        /* the runtime's pauses (a JVM's safepoints) */
	const struct cs_u64map *threads;            /* tid -> struct cs_thread_stats */
	const struct cs_upstream_stats *upstreams;  /* [upstream_count]: the target's upstreams */
	size_t upstream_count;
	uint64_t upstream_untracked;                /* exchanges with upstreams past CS_UPSTREAMS_MAX */
	const struct cs_client_stats *clients;      /* [client_count]: the local clients */
	size_t client_count;
	uint64_t client_reads_untracked;            /* reads by clients past CS_CLIENTS_MAX */
	uint64_t remote_connections;                /* closed, their client's side never seen */
	struct cs_conn_partial partial;             /* connections not followed whole */
	uint64_t conns_followed;                    /* at the view's making */
	uint64_t conns_evicted, conns_timed_out, conns_forgotten_between;
	uint64_t handbacks_dropped;
	struct cs_traced_summary tracing;           /* what of the run was traced */
	/* The analysis of them: the tail, the findings, the conditions, the cost. */
	struct cs_analysis analysis;
};

/* The view of engine over the run meta describes; NULL: out of memory. Some 40 KiB: on the heap. */
struct cs_report_view *cs_report_view_new(const struct cs_engine *engine, const struct cs_report_meta *meta);
void cs_report_view_free(struct cs_report_view *view);

#endif /* CS_REPORT_VIEW_H */
