// SPDX-License-Identifier: BSD-2-Clause
/*
 * The target's local clients: the processes on this host whose
 * connections the probes followed from their end, what they measured,
 * and their own part of it (their delay reading the answers, their
 * threads' wait for a CPU). Beside the server's figures, never in them.
 */
#include <inttypes.h>

#include "json.h"
#include "report.h"
#include "report_view.h"

#define JI(x) ((json_int_t)(x))
/* Clients named one by one in the text; more are counted. */
#define TEXT_CLIENTS_MAX 4

static void text_client(FILE *out, const struct cs_client_view *c, bool first)
{
	char delay[32], runq[32], seen[32], server[32];
	cs_format_duration(delay, sizeof(delay), c->read_delay_p99_ns);
	cs_format_duration(runq, sizeof(runq), c->runq_p99_ns);
	fprintf(out, "%-11s %s (pid %" PRIu32 ", %" PRIu32 " thread(s), %" PRIu64 " connection(s)): answers read %s late at p99 (waiting for a CPU %s); busiest thread on a CPU %.0f%%",
		first ? "clients" : "", c->comm, c->tgid, c->threads, c->connections, delay, runq, c->busy_share * 100.0);
	if (c->joined) {
		cs_format_duration(seen, sizeof(seen), c->seen_p99_ns);
		cs_format_duration(server, sizeof(server), c->server_p99_ns);
		fprintf(out, "; it measured p99 %s, the server's own p99 %s", seen, server);
	}
	fputs(c->bound ? " [client_bound]\n" : "\n", out);
}

void cs_report_clients_text(FILE *out, const struct cs_report_view *view)
{
	uint64_t run_p99_ns = cs_hist_percentile(view->requests->latency_ns, 99.0);
	for (size_t i = 0; i < view->client_count && i < TEXT_CLIENTS_MAX; i++) {
		struct cs_client_view c;
		cs_client_view_of(&view->clients[i], run_p99_ns, &c);
		text_client(out, &c, i == 0);
	}
	if (view->client_count > TEXT_CLIENTS_MAX)
		fprintf(out, "%-11s and %zu more local client(s)\n", "", view->client_count - TEXT_CLIENTS_MAX);
	if (view->client_reads_untracked)
		fprintf(out, "%-11s and %" PRIu64 " read(s) by clients past the %d told apart\n", "",
			view->client_reads_untracked, CS_CLIENTS_MAX);
	if (view->remote_connections)
		fprintf(out, "%-11s %" PRIu64 " connection(s) from remote clients: their side is not seen\n",
			view->client_count ? "" : "clients", view->remote_connections);
}

static json_t *client_value(const struct cs_client_stats *s, const struct cs_client_view *c)
{
	json_t *o = json_pack("{s:I,s:o,s:I,s:I,s:I,s:I}", "pid", JI(c->tgid), "comm", cs_json_text(c->comm), "threads",
			      JI(c->threads), "connections", JI(c->connections), "reads", JI(c->reads), "joined",
			      JI(c->joined));
	json_object_set_new(o, "read_delay_us", cs_report_percentiles_us(s->read_delay_ns));
	json_object_set_new(o, "run_queue_us", cs_report_percentiles_us(s->runq_ns));
	json_object_set_new(o, "measured_us", cs_report_percentiles_us(s->seen_ns));
	/* Whole, for a client's own arithmetic on it (wrk's correction of its percentiles). */
	json_object_set_new(o, "measured_buckets_us", cs_report_buckets_us(s->seen_ns));
	json_object_set_new(o, "server_us", cs_report_percentiles_us(s->server_ns));
	json_object_set_new(o, "busy_share", cs_json_4(c->busy_share));
	json_object_set_new(o, "runq_share", cs_json_4(c->runq_share));
	json_object_set_new(o, "cpu_cores", cs_json_4(c->cpu_cores));
	json_object_set_new(o, "bound", json_boolean(c->bound));
	return o;
}

json_t *cs_report_clients_value(const struct cs_report_view *view)
{
	json_t *list = json_array();
	uint64_t run_p99_ns = cs_hist_percentile(view->requests->latency_ns, 99.0);
	for (size_t i = 0; i < view->client_count; i++) {
		struct cs_client_view c;
		cs_client_view_of(&view->clients[i], run_p99_ns, &c);
		json_array_append_new(list, client_value(&view->clients[i], &c));
	}
	return list;
}

/* conditions.client_bound: the client whose own delay weighs most. */
json_t *cs_report_client_bound_value(const struct cs_client_bound_condition *c)
{
	const struct cs_client_view *w = &c->worst;
	json_t *o = json_pack("{s:b,s:I,s:I}", "flagged", c->flagged, "clients", JI(c->clients), "bound_clients",
			      JI(c->bound_clients));
	json_object_set_new(o, "pid", w->tgid ? json_integer(JI(w->tgid)) : json_null());
	json_object_set_new(o, "comm", w->tgid ? cs_json_text(w->comm) : json_null());
	json_object_set_new(o, "read_delay_p99_us", cs_json_us(w->read_delay_p99_ns));
	json_object_set_new(o, "runq_p99_us", cs_json_us(w->runq_p99_ns));
	json_object_set_new(o, "measured_p99_us", cs_json_us(w->seen_p99_ns));
	json_object_set_new(o, "server_p99_us", cs_json_us(w->server_p99_ns));
	json_object_set_new(o, "busy_share", cs_json_4(w->busy_share));
	json_object_set_new(o, "runq_share", cs_json_4(w->runq_share));
	return o;
}
