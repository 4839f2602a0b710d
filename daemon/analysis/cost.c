// SPDX-License-Identifier: BSD-2-Clause
#include "cost.h"

#include <string.h>

#include "trace_windows.h"

/* Requests of every kind cost probe runs, partial and unanswered ones too. */
static uint64_t requests_seen(const struct cs_engine *engine)
{
	return engine->totals.by_type[CS_EV_REQUEST];
}

static uint64_t connections_accepted(const struct cs_engine *engine)
{
	uint64_t accepts = 0;
	for (size_t i = 0; i < engine->listener_count; i++)
		accepts += engine->listeners[i].accepts;
	return accepts;
}

static double per(uint64_t ns, double count)
{
	return count > 0 ? (double)ns / count : -1.0;
}

/* Every request the run served: those seen, or, traced in windows, scaled up from them. */
static void requests_served(const struct cs_report_meta *meta, struct cs_cost *cost)
{
	cost->requests_served = (double)cost->requests;
	if (!meta || !meta->trace.sampled)
		return;
	struct cs_traced_summary summary;
	cs_traced_summarize(&meta->trace, meta->duration_s, cost->requests, cost->requests, &summary);
	cost->requests_served = summary.requests_estimated;
	cost->requests_estimated = summary.sampled;
}

void cs_cost_of(const struct cs_engine *engine, const struct cs_report_meta *meta, struct cs_cost *cost)
{
	const struct cs_cost_stats *sums = &engine->cost;
	memset(cost, 0, sizeof(*cost));
	cost->requests = requests_seen(engine);
	requests_served(meta, cost);
	cost->connections = connections_accepted(engine);
	cost->bpf_ns_per_request = -1.0;
	cost->bpf_ns_per_connection = -1.0;
	cost->cpu_share = -1.0;
	cost->recorded = sums->readings > 0;
	if (!cost->recorded)
		return;
	cost->bpf_stats = sums->bpf_stats;
	cost->bpf_stats_error = sums->bpf_stats_error;
	/*
	 * A reading with the counting off leaves a gap the sums cannot show;
	 * a sampled span let go does not: the spans held stand for the run.
	 */
	cost->bpf_sampled = sums->bpf_sampled_readings > 0;
	uint64_t measured_wall_ns = sums->bpf_window_wall_ns + sums->bpf_plain_measured_wall_ns;
	cost->bpf_measured_share = 1.0;
	if (cost->bpf_sampled && sums->wall_ns && measured_wall_ns < sums->wall_ns)
		cost->bpf_measured_share = (double)measured_wall_ns / (double)sums->wall_ns;
	/* Sampled: some span outside windows must be measured when there were any. */
	cost->bpf_measured = sums->bpf_unmeasured_readings == 0 &&
			     (!cost->bpf_sampled || sums->bpf_plain_measured_wall_ns || !sums->bpf_plain_wall_ns);
	cost->cpu_ns = sums->user_ns + sums->system_ns;
	cost->wall_ns = sums->wall_ns;
	if (sums->wall_ns)
		cost->cpu_share = (double)cost->cpu_ns / (double)sums->wall_ns;
	if (!cost->bpf_measured)
		return;
	cost->bpf_run_ns = sums->bpf_run_ns;
	cost->bpf_runs = sums->bpf_runs;
	/* Windows as measured, the rest scaled from its spans measured: the whole run's, estimated. */
	double whole_run_ns = (double)sums->bpf_run_ns;
	if (cost->bpf_sampled && sums->bpf_plain_measured_wall_ns)
		whole_run_ns = (double)sums->bpf_window_run_ns +
			       (double)sums->bpf_plain_run_ns * (double)sums->bpf_plain_wall_ns /
				       (double)sums->bpf_plain_measured_wall_ns;
	cost->bpf_ns_per_request = cost->requests_served > 0 ? whole_run_ns / cost->requests_served : -1.0;
	cost->bpf_ns_per_connection = cost->connections > 0 ? whole_run_ns / (double)cost->connections : -1.0;
}

const char *cs_cost_unmeasured_reason(const struct cs_cost *cost)
{
	if (!cost->recorded)
		return "not recorded (a trace from a connscope that did not record it)";
	switch (cost->bpf_stats) {
	case CS_BPF_STATS_OFF:
		return "not measured (BPF run-time statistics turned off with --no-bpf-stats)";
	case CS_BPF_STATS_FAILED:
		return "not measured (the kernel refused to turn BPF run-time statistics on)";
	case CS_BPF_STATS_ENABLED:
	case CS_BPF_STATS_ALREADY_ON:
		return cost->bpf_measured ? "" : "not measured (BPF run-time statistics were off for part of the run)";
	case CS_BPF_STATS_SAMPLED_ON:
	case CS_BPF_STATS_SAMPLED_OFF:
	case CS_BPF_STATS_SAMPLED_WINDOW:
		/* (a holder that failed leaves the latest reading CS_BPF_STATS_FAILED) */
		return cost->bpf_measured ? "" : "not measured yet (no sampled second outside a window so far)";
	default:
		return "not measured";
	}
}

double cs_prog_ns_per_run(const struct cs_prog_cost_stats *prog)
{
	return per(prog->run_ns, prog->runs);
}

const char *cs_bpf_stats_name(uint32_t bpf_stats)
{
	switch (bpf_stats) {
	case CS_BPF_STATS_ENABLED:
		return "enabled";
	case CS_BPF_STATS_ALREADY_ON:
		return "already_on";
	case CS_BPF_STATS_OFF:
		return "off";
	case CS_BPF_STATS_FAILED:
		return "failed";
	case CS_BPF_STATS_SAMPLED_ON:
	case CS_BPF_STATS_SAMPLED_OFF:
	case CS_BPF_STATS_SAMPLED_WINDOW:
		return "sampled";
	default:
		return NULL;
	}
}
