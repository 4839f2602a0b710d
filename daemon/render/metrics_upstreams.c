// SPDX-License-Identifier: BSD-2-Clause
/*
 * The servers the target calls, as Prometheus series: one per upstream
 * address and port, or Unix socket path (at most CS_UPSTREAMS_MAX, the engine's bound; the
 * exchanges with any further upstream are counted in one series), so that
 * a fleet's dashboards can tell which backend its proxies wait on.
 */
#include "metrics_internal.h"

#include <stdio.h>

#include "addr.h"
#include "upstream_stats.h"

#define UPSTREAM_LABEL_LEN (2 * CS_UPSTREAM_NAME_LEN + 16)

static void upstream_label(char *buf, size_t len, const struct cs_upstream_stats *u)
{
	char endpoint[CS_UPSTREAM_NAME_LEN], escaped[2 * CS_UPSTREAM_NAME_LEN];
	cs_upstream_name(endpoint, sizeof(endpoint), u);
	cs_mx_escape(escaped, sizeof(escaped), endpoint);
	snprintf(buf, len, "upstream=\"%s\"", escaped);
}

static void per_upstream(const struct cs_mx_out *w, const char *name, const char *help,
			 uint64_t (*value)(const struct cs_upstream_stats *))
{
	char label[UPSTREAM_LABEL_LEN];
	cs_mx_header(w, name, "counter", help);
	for (size_t i = 0; i < w->view->upstream_count; i++) {
		upstream_label(label, sizeof(label), &w->view->upstreams[i]);
		cs_mx_sample(w, name, label, value(&w->view->upstreams[i]));
	}
}

static uint64_t u_exchanges(const struct cs_upstream_stats *u) { return u->exchanges; }
static uint64_t u_not_joined(const struct cs_upstream_stats *u) { return cs_upstream_not_joined(u); }
static uint64_t u_connects(const struct cs_upstream_stats *u) { return u->connects; }
static uint64_t u_retransmitted(const struct cs_upstream_stats *u) { return u->connects_retransmitted; }

void cs_mx_render_upstreams(const struct cs_mx_out *w)
{
	const struct cs_report_view *view = w->view;
	char label[UPSTREAM_LABEL_LEN];
	if (!view->upstream_count && !view->upstream_untracked)
		return; /* a target that calls nobody: no families to scrape */
	cs_mx_header(w, "connscope_upstream_wait_seconds", "histogram",
		     "Exchanges with each upstream the target called: its send to the answer's first byte.");
	for (size_t i = 0; i < view->upstream_count; i++) {
		upstream_label(label, sizeof(label), &view->upstreams[i]);
		cs_mx_histogram(w, "connscope_upstream_wait_seconds", label, view->upstreams[i].wait_ns, NULL);
	}
	cs_mx_header(w, "connscope_upstream_connect_seconds", "histogram",
		     "The target's connects to each upstream: SYN sent to established, SYN retransmits included.");
	for (size_t i = 0; i < view->upstream_count; i++) {
		upstream_label(label, sizeof(label), &view->upstreams[i]);
		cs_mx_histogram(w, "connscope_upstream_connect_seconds", label, view->upstreams[i].connect_ns, NULL);
	}
	per_upstream(w, "connscope_upstream_exchanges_total", "Exchanges whose answer the target read, per upstream.",
		     u_exchanges);
	per_upstream(w, "connscope_upstream_exchanges_not_joined_total",
		     "Exchanges not joined to the request they served (ambiguous, no request, unmatched, awaiting it).",
		     u_not_joined);
	per_upstream(w, "connscope_upstream_connects_total", "The target's connects timed, per upstream.", u_connects);
	per_upstream(w, "connscope_upstream_connects_retransmitted_total",
		     "Connects that waited for a SYN retransmit: the upstream's listen backlog overflowed.",
		     u_retransmitted);
	cs_mx_header(w, "connscope_upstream_tail_share", "gauge",
		     "Share of the tail's time the target's requests spent waiting on each upstream.");
	for (size_t i = 0; i < view->upstream_count; i++) {
		upstream_label(label, sizeof(label), &view->upstreams[i]);
		cs_mx_sample_double(w, "connscope_upstream_tail_share", label, w->analysis->upstreams.share[i]);
	}
	cs_mx_header(w, "connscope_upstream_untracked_exchanges_total", "counter",
		     "Exchanges with upstreams beyond the ones told apart, counted only.");
	cs_mx_sample(w, "connscope_upstream_untracked_exchanges_total", NULL, view->upstream_untracked);
}
