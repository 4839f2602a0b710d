// SPDX-License-Identifier: BSD-2-Clause
/*
 * The gauges beyond the core counters and histograms: the sampled backlog,
 * which process serves each listener, the busiest threads, the pool, the
 * daemon's own diagnosis and the build. Cardinality stays bounded: one
 * series per listener, CS_METRICS_THREADS threads, a fixed set of
 * conditions.
 */
#include <inttypes.h>
#include <string.h>

#include "connscope.h"
#include "metrics.h"
#include "metrics_internal.h"
#include "version.h"

static void render_backlog(const struct cs_mx_out *w)
{
	const struct cs_report_view *view = w->view;
	char port[32];
	cs_mx_header(w, "connscope_backlog_depth", "gauge",
		     "Connections waiting in the accept queue at the latest sample (all sockets of the port).");
	for (size_t i = 0; i < view->listener_count; i++) {
		const struct cs_listener_stats *l = &view->listeners[i];
		uint64_t depth = 0;
		for (size_t s = 0; s < l->socket_count; s++)
			depth += l->sockets[s].backlog_last;
		snprintf(port, sizeof(port), "port=\"%u\"", l->port);
		cs_mx_sample(w, "connscope_backlog_depth", port, depth);
	}
}

/*
 * Which program serves a port, as a series of its own to join on port: the
 * name is known only from the first accept, and a label that appeared
 * then on the other series would split each of them in two.
 */
static void render_listener_info(const struct cs_mx_out *w)
{
	const struct cs_report_view *view = w->view;
	cs_mx_header(w, "connscope_listener_info", "gauge",
		     "The listener's server: the name (comm) of the first thread seen accepting on the port.");
	for (size_t i = 0; i < view->listener_count; i++) {
		const struct cs_listener_stats *l = &view->listeners[i];
		if (!l->worker_count)
			continue;
		char comm[CS_COMM_LEN + 1];
		memcpy(comm, l->workers[0].comm, CS_COMM_LEN);
		comm[CS_COMM_LEN] = '\0';
		cs_mx_series(w, "connscope_listener_info", NULL);
		fprintf(w->out, ",port=\"%u\",comm=\"", l->port);
		cs_mx_label_value(w->out, comm);
		fputs("\"} 1\n", w->out);
	}
}

struct top_threads {
	const struct cs_thread_stats *thread[CS_METRICS_THREADS];
	size_t count;
};

static bool reads_more(const struct cs_thread_stats *a, const struct cs_thread_stats *b)
{
	return a->requests != b->requests ? a->requests > b->requests : a->tid < b->tid;
}

/* Keep the CS_METRICS_THREADS threads that read the most requests, most first. */
static void consider_thread(uint64_t key, void *value, void *ctx)
{
	(void)key;
	const struct cs_thread_stats *t = value;
	struct top_threads *top = ctx;
	if (!t->requests)
		return;
	size_t at = top->count;
	while (at > 0 && reads_more(t, top->thread[at - 1]))
		at--;
	if (at >= CS_METRICS_THREADS)
		return;
	size_t last = top->count < CS_METRICS_THREADS ? top->count : CS_METRICS_THREADS - 1;
	for (size_t i = last; i > at; i--)
		top->thread[i] = top->thread[i - 1];
	top->thread[at] = t;
	if (top->count < CS_METRICS_THREADS)
		top->count++;
}

/* Share of its serving span (first read to last send) a thread spent serving, at most 1. */
static double busy_ratio(const struct cs_thread_stats *t)
{
	if (t->last_send_ns <= t->first_read_ns)
		return 0.0;
	double share = (double)t->serving_ns / (double)(t->last_send_ns - t->first_read_ns);
	return share > 1.0 ? 1.0 : share; /* handlers of concurrent requests overlap */
}

static void thread_labels(char *buf, size_t len, const struct cs_thread_stats *t)
{
	/* The comm escaped as a label value: at most two bytes for each of its own. */
	char name[CS_COMM_LEN + 1], comm[2 * CS_COMM_LEN + 1];
	memcpy(name, t->comm, CS_COMM_LEN);
	name[CS_COMM_LEN] = '\0';
	cs_mx_escape(comm, sizeof(comm), name);
	snprintf(buf, len, "tid=\"%" PRIu32 "\",comm=\"%s\"", t->tid, comm);
}

static void render_threads(const struct cs_mx_out *w)
{
	struct top_threads top = { .count = 0 };
	char labels[96];
	cs_u64map_each(w->view->threads, consider_thread, &top);
	cs_mx_header(w, "connscope_thread_run_queue_p99_seconds", "gauge",
		     "p99 of each request's wait for a CPU, per thread (the threads that read the most requests).");
	for (size_t i = 0; i < top.count; i++) {
		thread_labels(labels, sizeof(labels), top.thread[i]);
		cs_mx_sample_double(w, "connscope_thread_run_queue_p99_seconds", labels,
				    (double)cs_coarse_percentile(top.thread[i]->runq_per_request, 99) / 1e9);
	}
	cs_mx_header(w, "connscope_thread_busy_ratio", "gauge",
		     "Share of its span from first read to last send a thread spent serving requests.");
	for (size_t i = 0; i < top.count; i++) {
		thread_labels(labels, sizeof(labels), top.thread[i]);
		cs_mx_sample_double(w, "connscope_thread_busy_ratio", labels, busy_ratio(top.thread[i]));
	}
}

/* The pool and the conditions the daemon's own diagnosis flags (as in `connscope snapshot`). */
static void render_conditions(const struct cs_mx_out *w)
{
	const struct cs_conditions *c = &w->analysis->conditions;
	/* The pool's kind: handoff (a poller hands requests on) or accept (its workers accept). */
	char kind[40];
	snprintf(kind, sizeof(kind), "kind=\"%s\"", cs_pool_kind_name(c->pool_saturation.kind));
	cs_mx_header(w, "connscope_pool_threads", "gauge",
		     "The pool's threads: handed requests by a poller (handoff), or accepting their own (accept).");
	cs_mx_sample(w, "connscope_pool_threads", kind, c->pool_saturation.pool_threads);
	cs_mx_header(w, "connscope_pool_busy_ratio", "gauge",
		     "Pool threads' serving time over the span they served (accept: over their time away from accept()).");
	cs_mx_sample_double(w, "connscope_pool_busy_ratio", kind, c->pool_saturation.busy_share);
	cs_mx_header(w, "connscope_condition", "gauge",
		     "1 when the diagnosis flags the condition over what was seen since attach (or reset), else 0.");
	for (int i = 0; i < CS_CONDITION_COUNT; i++) {
		char label[48];
		snprintf(label, sizeof(label), "condition=\"%s\"", cs_condition_name((enum cs_condition)i));
		cs_mx_sample(w, "connscope_condition", label, cs_analysis_flagged(w->analysis, (enum cs_condition)i));
	}
}

void cs_mx_render_series(const struct cs_mx_out *w)
{
	render_backlog(w);
	render_listener_info(w);
	render_threads(w);
	render_conditions(w);
	char labels[64];
	snprintf(labels, sizeof(labels), "version=\"%s\",wire=\"%d\"", CS_VERSION, CS_WIRE_VERSION);
	cs_mx_header(w, "connscope_build_info", "gauge", "The connscope build: its version and wire format.");
	cs_mx_sample(w, "connscope_build_info", labels, 1);
}
