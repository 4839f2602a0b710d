/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What connscope cost the user over a run, from the engine's cost sums:
 * its BPF programs' run time per request and per connection the run saw,
 * and its own CPU time as a share of one CPU. Pure arithmetic; the
 * renderers print it.
 */
#ifndef CS_COST_H
#define CS_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "run_meta.h"

struct cs_cost {
	bool recorded;                 /* false: no cost readings (a trace from before them) */
	bool bpf_measured;             /* the kernel counted BPF run time for every reading */
	uint32_t bpf_stats;            /* enum cs_bpf_stats (0: not recorded) */
	int32_t bpf_stats_error;       /* CS_BPF_STATS_FAILED: the errno */
	uint64_t requests;             /* request records the run saw, partial ones too */
	double requests_served;        /* the per-request figure's divisor: requests, or (traced in
					* windows) every request the run served, estimated from them */
	bool requests_estimated;       /* requests_served is that estimate */
	uint64_t connections;          /* connections accepted */
	uint64_t bpf_run_ns;           /* every program's run time, while the counting was on */
	uint64_t bpf_runs;
	bool bpf_sampled;              /* on in sampled spans: the figures below are estimates */
	double bpf_measured_share;     /* the share of the time the counting was on (1: all of it) */
	double bpf_ns_per_request;     /* < 0: not measured, or no request */
	double bpf_ns_per_connection;  /* < 0: not measured, or no connection */
	uint64_t cpu_ns;               /* connscope's user + system CPU time */
	uint64_t wall_ns;              /* the time its readings covered */
	double cpu_share;              /* cpu_ns / wall_ns: share of one CPU; < 0: not recorded */
};

/*
 * meta: the run's; NULL, or not traced in windows: every request was seen.
 * Traced in windows, the lifecycle programs run all the time and the
 * request programs, for others' sockets too, in the windows: the cost is
 * shared over every request the run served, not over the traced ones.
 */
void cs_cost_of(const struct cs_engine *engine, const struct cs_report_meta *meta, struct cs_cost *cost);

/* Why the BPF run time was not measured: "turned off (--no-bpf-stats)", ... */
const char *cs_cost_unmeasured_reason(const struct cs_cost *cost);

/* A program's run time per run; < 0 when it has no runs. */
double cs_prog_ns_per_run(const struct cs_prog_cost_stats *prog);

/* "enabled", "already_on", "off", "failed", "sampled"; NULL when not recorded. */
const char *cs_bpf_stats_name(uint32_t bpf_stats);

#endif /* CS_COST_H */
