// SPDX-License-Identifier: BSD-2-Clause
/*
 * What connscope costs, as Prometheus series: its BPF programs' run time
 * (measured only while the kernel's BPF statistics are on) and its own
 * CPU time, over the statistics' span (since the start or the last reset).
 */
#include "metrics_internal.h"

#include <stdio.h>

#include "analysis.h"
#include "cost.h"

static void render_programs(const struct cs_mx_out *w)
{
	const struct cs_cost_stats *sums = w->view->bpf_cost;
	char label[64];
	cs_mx_header(w, "connscope_bpf_run_seconds_total", "counter",
		     "Time connscope's BPF programs ran, as the kernel counted it (while its BPF statistics were on: "
		     "connscope_bpf_stats_measured_ratio of the time), by program.");
	for (size_t i = 0; i < sums->program_count; i++) {
		snprintf(label, sizeof(label), "program=\"%s\"", sums->programs[i].name);
		cs_mx_sample_double(w, "connscope_bpf_run_seconds_total", label,
				    (double)sums->programs[i].run_ns / 1e9);
	}
	cs_mx_header(w, "connscope_bpf_runs_total", "counter",
		     "Runs of connscope's BPF programs while the kernel's BPF statistics were on, by program.");
	for (size_t i = 0; i < sums->program_count; i++) {
		snprintf(label, sizeof(label), "program=\"%s\"", sums->programs[i].name);
		cs_mx_sample(w, "connscope_bpf_runs_total", label, sums->programs[i].runs);
	}
}

void cs_mx_render_cost(const struct cs_mx_out *w)
{
	const struct cs_cost *cost = &w->analysis->cost;
	if (!cost->recorded)
		return;
	cs_mx_header(w, "connscope_bpf_stats_measured", "gauge",
		     "1 when the kernel counted connscope's BPF run time (kernel BPF statistics on), else 0.");
	cs_mx_sample(w, "connscope_bpf_stats_measured", NULL, cost->bpf_measured);
	if (cost->bpf_measured) {
		render_programs(w);
		cs_mx_header(w, "connscope_bpf_stats_measured_ratio", "gauge",
			     "The share of the time the kernel's BPF statistics were on (sampled by default; 1: always).");
		cs_mx_sample_double(w, "connscope_bpf_stats_measured_ratio", NULL, cost->bpf_measured_share);
		cs_mx_header(w, "connscope_bpf_seconds_per_request", "gauge",
			     "connscope's BPF run time per request served (traced in windows: estimated from them; "
			     "BPF statistics sampled: from the time they were on), over the statistics' span.");
		cs_mx_sample_double(w, "connscope_bpf_seconds_per_request", NULL,
				    cost->bpf_ns_per_request >= 0 ? cost->bpf_ns_per_request / 1e9 : 0);
		cs_mx_header(w, "connscope_bpf_seconds_per_connection", "gauge",
			     "connscope's BPF run time per connection accepted (BPF statistics sampled: from the time they "
			     "were on), over the statistics' span.");
		cs_mx_sample_double(w, "connscope_bpf_seconds_per_connection", NULL,
				    cost->bpf_ns_per_connection >= 0 ? cost->bpf_ns_per_connection / 1e9 : 0);
	}
	cs_mx_header(w, "connscope_self_cpu_seconds_total", "counter",
		     "CPU time connscope's own process used, by mode (user, system).");
	cs_mx_sample_double(w, "connscope_self_cpu_seconds_total", "mode=\"user\"",
			    (double)w->view->bpf_cost->user_ns / 1e9);
	cs_mx_sample_double(w, "connscope_self_cpu_seconds_total", "mode=\"system\"",
			    (double)w->view->bpf_cost->system_ns / 1e9);
	cs_mx_header(w, "connscope_self_cpu_ratio", "gauge",
		     "connscope's own CPU time as a share of one CPU, over the statistics' span.");
	cs_mx_sample_double(w, "connscope_self_cpu_ratio", NULL, cost->cpu_share >= 0 ? cost->cpu_share : 0);
}
