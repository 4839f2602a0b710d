// SPDX-License-Identifier: BSD-2-Clause
/*
 * The target's local clients as Prometheus series, one per client
 * process (comm and pid): their own delay reading the answers, and what
 * they measured beside what the server took, so that a fleet's dashboards
 * can tell a load generator's delay from the server's.
 */
#include "metrics_internal.h"

#include <inttypes.h>
#include <stdio.h>

#include "client_stats.h"

#define CLIENT_LABEL_LEN (2 * CS_COMM_LEN + 40)

static void client_label(char *buf, size_t len, const struct cs_client_stats *c)
{
	char escaped[2 * CS_COMM_LEN];
	cs_mx_escape(escaped, sizeof(escaped), c->comm);
	snprintf(buf, len, "client=\"%s\",pid=\"%" PRIu32 "\"", escaped, c->tgid);
}

static void per_client_histogram(const struct cs_mx_out *w, const char *name, const char *help,
				 const struct cs_hist *(*hist)(const struct cs_client_stats *))
{
	char label[CLIENT_LABEL_LEN];
	cs_mx_header(w, name, "histogram", help);
	for (size_t i = 0; i < w->view->client_count; i++) {
		client_label(label, sizeof(label), &w->view->clients[i]);
		cs_mx_histogram(w, name, label, hist(&w->view->clients[i]), NULL);
	}
}

static const struct cs_hist *c_read_delay(const struct cs_client_stats *c) { return c->read_delay_ns; }
static const struct cs_hist *c_runq(const struct cs_client_stats *c) { return c->runq_ns; }
static const struct cs_hist *c_seen(const struct cs_client_stats *c) { return c->seen_ns; }

void cs_mx_render_clients(const struct cs_mx_out *w)
{
	const struct cs_report_view *view = w->view;
	char label[CLIENT_LABEL_LEN];
	if (!view->client_count)
		return; /* no local client seen: no families to scrape */
	per_client_histogram(w, "connscope_client_read_delay_seconds",
			     "Each local client's answers: arrived in its socket to its read (its own delay).",
			     c_read_delay);
	per_client_histogram(w, "connscope_client_read_delay_runq_seconds",
			     "Of each read delay, the client's thread waiting for a CPU.", c_runq);
	per_client_histogram(w, "connscope_client_measured_seconds",
			     "Requests joined to their client's read: the server's latency plus the read delay, what "
			     "the client measures.",
			     c_seen);
	cs_mx_header(w, "connscope_client_busy_share", "gauge",
		     "Each local client's busiest thread: its CPU time over the span of its reads.");
	for (size_t i = 0; i < view->client_count; i++) {
		struct cs_client_load load;
		cs_client_load(&view->clients[i], &load);
		client_label(label, sizeof(label), &view->clients[i]);
		cs_mx_sample_double(w, "connscope_client_busy_share", label, load.busiest_share);
	}
	cs_mx_header(w, "connscope_client_reads_total", "counter", "Answers each local client read.");
	for (size_t i = 0; i < view->client_count; i++) {
		client_label(label, sizeof(label), &view->clients[i]);
		cs_mx_sample(w, "connscope_client_reads_total", label, view->clients[i].reads);
	}
}
