// SPDX-License-Identifier: BSD-2-Clause
/*
 * client_bound: a local client whose own delay reading its answers is a
 * large part of the latency it measures. A load generator that waits for
 * a CPU, or whose event loop reads each answer only after the others of
 * its pass, prints its own delay as the server's.
 */
#include <string.h>

#include "attrib.h"
#include "clients.h"

/* Fewer answers read than this say nothing of a client's tail. */
#define CLIENT_READS_MIN 100
/* A read delay p99 under this is no client's problem, whatever the server's p99. */
#define CLIENT_DELAY_MIN_NS 50000ull
/*
 * On a CPU or waiting for one this much of its time: the thread never
 * rests. It is saturated when it is behind too, one answer in ten read
 * this late or later: a thread that busy-polls never rests either, yet
 * reads nearly every answer at once (its last percent may still be late:
 * the machine's own stalls, a vCPU descheduled, are not its doing). The
 * median will not do: a loop at its limit (ab) reads half its answers
 * within 25 us, those that came while it was waiting, and the rest late.
 */
#define CLIENT_DEMAND_MIN 0.9
#define CLIENT_BEHIND_P90_NS 50000ull
/* A saturated client is bound when its delay is at least this share of the server's p99. */
#define CLIENT_SATURATED_DELAY_SHARE 0.25

void cs_client_view_of(const struct cs_client_stats *client, uint64_t run_p99_ns, struct cs_client_view *view)
{
	memset(view, 0, sizeof(*view));
	view->tgid = client->tgid;
	memcpy(view->comm, client->comm, sizeof(view->comm));
	view->threads = client->threads_seen;
	view->connections = client->connections;
	view->reads = client->reads;
	view->joined = client->joined;
	view->read_delay_p50_ns = cs_hist_percentile(client->read_delay_ns, 50.0);
	view->read_delay_p90_ns = cs_hist_percentile(client->read_delay_ns, 90.0);
	view->read_delay_p99_ns = cs_hist_percentile(client->read_delay_ns, 99.0);
	view->read_delay_max_ns = client->read_delay_ns->max;
	view->runq_p50_ns = cs_hist_percentile(client->runq_ns, 50.0);
	view->runq_p99_ns = cs_hist_percentile(client->runq_ns, 99.0);
	view->seen_p50_ns = cs_hist_percentile(client->seen_ns, 50.0);
	view->seen_p99_ns = cs_hist_percentile(client->seen_ns, 99.0);
	view->server_p50_ns = cs_hist_percentile(client->server_ns, 50.0);
	view->server_p99_ns = cs_hist_percentile(client->server_ns, 99.0);
	uint64_t server_p99_ns = client->joined ? view->server_p99_ns : run_p99_ns;
	struct cs_client_load load;
	cs_client_load(client, &load);
	view->busy_share = load.busiest_share > 1.0 ? 1.0 : load.busiest_share;
	view->runq_share = load.busiest_runq_share > 1.0 ? 1.0 : load.busiest_runq_share;
	view->cpu_cores = load.span_ns ? (double)load.cpu_ns / (double)load.span_ns : 0.0;
	if (view->reads < CLIENT_READS_MIN || view->read_delay_p99_ns < CLIENT_DELAY_MIN_NS)
		return;
	bool saturated = view->busy_share + view->runq_share >= CLIENT_DEMAND_MIN &&
			 view->read_delay_p90_ns >= CLIENT_BEHIND_P90_NS;
	view->bound = view->read_delay_p99_ns > server_p99_ns ||
		      (saturated && (double)view->read_delay_p99_ns >=
					    CLIENT_SATURATED_DELAY_SHARE * (double)server_p99_ns);
}

/* The client whose own delay weighs most: flagged ones first, then by read delay p99. */
void cs_client_bound_condition(const struct cs_engine *engine, struct cs_conditions *conditions)
{
	struct cs_client_bound_condition *c = &conditions->client_bound;
	c->clients = (uint32_t)engine->client_count;
	uint64_t run_p99_ns = cs_hist_percentile(engine->requests.latency_ns, 99.0);
	for (size_t i = 0; i < engine->client_count; i++) {
		struct cs_client_view view;
		cs_client_view_of(&engine->clients[i], run_p99_ns, &view);
		c->bound_clients += view.bound;
		bool better = !c->worst.tgid || (view.bound && !c->worst.bound) ||
			      (view.bound == c->worst.bound && view.read_delay_p99_ns > c->worst.read_delay_p99_ns);
		if (better)
			c->worst = view;
	}
	c->flagged = c->bound_clients > 0;
}
