// SPDX-License-Identifier: BSD-2-Clause
#include "cost_render.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "units.h"

void cs_cost_format_ns(char *buf, size_t len, double ns)
{
	if (ns < 0)
		snprintf(buf, len, "-");
	else if (ns < 1e4)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e7)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else
		snprintf(buf, len, "%.2f ms", ns / 1e6);
}

void cs_cost_line(char *buf, size_t len, const struct cs_cost *cost)
{
	if (!cost->recorded) {
		snprintf(buf, len, "%s", cs_cost_unmeasured_reason(cost));
		return;
	}
	char cpu[64];
	if (cost->cpu_share >= 0)
		snprintf(cpu, sizeof(cpu), "connscope %.2f%% of one CPU", 100.0 * cost->cpu_share);
	else
		snprintf(cpu, sizeof(cpu), "connscope's CPU time not measured");
	if (!cost->bpf_measured) {
		if (cost->bpf_stats == CS_BPF_STATS_FAILED && cost->bpf_stats_error > 0)
			snprintf(buf, len, "BPF not measured (the kernel refused to turn BPF run-time statistics on: %s); %s",
				 strerror(cost->bpf_stats_error), cpu);
		else
			snprintf(buf, len, "BPF %s; %s", cs_cost_unmeasured_reason(cost), cpu);
		return;
	}
	char request[32], connection[32], sampled[64] = "";
	cs_cost_format_ns(request, sizeof(request), cost->bpf_ns_per_request);
	cs_cost_format_ns(connection, sizeof(connection), cost->bpf_ns_per_connection);
	if (cost->bpf_sampled)
		snprintf(sampled, sizeof(sampled), ", BPF statistics on %.1f %% of the time",
			 100.0 * cost->bpf_measured_share);
	snprintf(buf, len, "BPF %s per request%s, %s per connection (%.3f s in %" PRIu64 " runs%s); %s", request,
		 cost->requests_estimated ? " served (estimated from the windows)" : "", connection,
		 (double)cost->bpf_run_ns / NS_PER_SEC, cost->bpf_runs, sampled, cpu);
}

/* A figure, or null when it is not known. */
static json_t *known(double value, int decimals)
{
	return value >= 0 ? cs_json_fixed(value, decimals) : json_null();
}

static json_t *programs_value(const struct cs_cost_stats *sums)
{
	json_t *list = json_array();
	for (size_t i = 0; i < sums->program_count; i++) {
		const struct cs_prog_cost_stats *prog = &sums->programs[i];
		json_array_append_new(list, json_pack("{s:o,s:I,s:I,s:o,s:I}", "name", cs_json_text(prog->name), "id",
						      (json_int_t)prog->prog_id, "calls", (json_int_t)prog->runs,
						      "ns_per_call", known(cs_prog_ns_per_run(prog), 1), "total_ns",
						      (json_int_t)prog->run_ns));
	}
	return list;
}

json_t *cs_cost_value(const struct cs_cost_stats *bpf_cost, const struct cs_cost *cost, bool programs)
{
	const char *stats = cs_bpf_stats_name(cost->bpf_stats);
	bool measured = cost->recorded && cost->bpf_measured;
	json_t *value = json_pack(
		"{s:b,s:o,s:b,s:o,s:o,s:o,s:o,s:I,s:I,s:o,s:o,s:o}", "recorded", cost->recorded, "bpf_stats",
		stats ? json_string(stats) : json_null(), "bpf_measured", measured, "bpf_ns_per_request",
		measured ? known(cost->bpf_ns_per_request, 1) : json_null(), "bpf_ns_per_connection",
		measured ? known(cost->bpf_ns_per_connection, 1) : json_null(), "bpf_total_ns",
		measured ? json_integer((json_int_t)cost->bpf_run_ns) : json_null(), "bpf_runs",
		measured ? json_integer((json_int_t)cost->bpf_runs) : json_null(), "requests",
		(json_int_t)cost->requests, "connections", (json_int_t)cost->connections, "cpu_s",
		cost->recorded ? cs_json_fixed((double)cost->cpu_ns / NS_PER_SEC, 3) : json_null(), "wall_s",
		cost->recorded ? cs_json_fixed((double)cost->wall_ns / NS_PER_SEC, 3) : json_null(), "cpu_share",
		cost->recorded ? known(cost->cpu_share, 5) : json_null());
	/* Sampled: the run time and runs are the spans measured; per request and connection, the whole run's. */
	json_object_set_new(value, "bpf_sampled", json_boolean(measured && cost->bpf_sampled));
	json_object_set_new(value, "bpf_measured_share",
			    measured ? cs_json_fixed(cost->bpf_measured_share, 4) : json_null());
	/* Traced in windows: the per-request figure's requests are every one served, estimated. */
	json_object_set_new(value, "requests_served", cs_json_fixed(cost->requests_served, 0));
	json_object_set_new(value, "requests_estimated", json_boolean(cost->requests_estimated));
	if (!measured)
		json_object_set_new(value, "note", cs_json_text(cs_cost_unmeasured_reason(cost)));
	if (cost->bpf_stats == CS_BPF_STATS_FAILED && cost->bpf_stats_error > 0)
		json_object_set_new(value, "bpf_stats_error", cs_json_text(strerror(cost->bpf_stats_error)));
	if (programs)
		json_object_set_new(value, "programs", measured ? programs_value(bpf_cost) : json_array());
	return value;
}
