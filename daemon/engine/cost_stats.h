/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What connscope cost, as the engine sums it from its cost records
 * (struct cs_cost_stats, cost.c): its BPF programs' run time and its own
 * CPU time.
 */
#ifndef CS_COST_STATS_H
#define CS_COST_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "connscope.h"

/* Programs whose cost is kept apart; more are summed in the totals only. */
#define CS_COST_PROGRAMS 64

/* One of connscope's BPF programs: what the kernel counted of its runs. */
struct cs_prog_cost_stats {
	uint32_t prog_id;
	char name[CS_PROG_NAME_LEN];
	uint64_t run_ns;
	uint64_t runs;
};

/*
 * What connscope cost, summed from its cost records (cost.c): the BPF
 * programs' run time as the kernel counted it, and its own CPU time over
 * the wall time the readings covered.
 */
struct cs_cost_stats {
	uint64_t readings;         /* CS_EV_SELF_COST records: 0, the run's cost was not recorded */
	uint32_t bpf_stats;        /* enum cs_bpf_stats of the latest reading */
	int32_t bpf_stats_error;   /* its errno when the kernel refused */
	uint64_t bpf_unmeasured_readings; /* readings with the run-time counting off */
	uint64_t bpf_sampled_readings;     /* readings of sampled spans, held or not */
	uint64_t user_ns;
	uint64_t system_ns;
	uint64_t wall_ns;
	/*
	 * Sampling: spans of tracing windows are all measured; of the others,
	 * some. Each reading's run time goes to its span's kind (pending until
	 * the reading's CS_EV_SELF_COST says which), so that the spans measured
	 * outside windows stand for those outside windows only.
	 */
	uint64_t bpf_pending_run_ns;       /* program records since the last reading's self cost */
	uint64_t bpf_window_run_ns, bpf_window_wall_ns;
	uint64_t bpf_plain_run_ns;         /* outside windows, over the spans measured */
	uint64_t bpf_plain_measured_wall_ns, bpf_plain_wall_ns;
	uint64_t bpf_run_ns;       /* over every program */
	uint64_t bpf_runs;
	struct cs_prog_cost_stats programs[CS_COST_PROGRAMS];
	size_t program_count;
	uint64_t programs_unlisted; /* records of programs beyond CS_COST_PROGRAMS */
};

#endif /* CS_COST_STATS_H */
