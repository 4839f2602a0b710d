/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The stack probes of `connscope flamegraph` (bpf/stacks.bpf.c): on-CPU
 * samples from a perf event on every CPU and off-CPU intervals from the
 * scheduler, of the main probes' target processes. Loaded beside a running
 * struct cs_probes: it shares its target map and its ring-buffer poller.
 */
#ifndef CS_STACKS_H
#define CS_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "connscope.h"
#include "probes.h"

struct stacks_bpf;

struct cs_stack_options {
	unsigned int hz;             /* on-CPU samples per second per CPU */
	uint64_t min_off_cpu_ns;     /* shorter off-CPU intervals are only counted */
	bool verbose;
};

struct cs_stack_probes {
	struct stacks_bpf *skel;
	struct bpf_link **perf_links;
	int *perf_fds;
	int cpu_count;               /* possible CPUs: the arrays' length */
	int cpus_sampled;            /* CPUs with a perf event attached */
	const char *event_name;      /* "cycles" (hardware) or "cpu-clock" (software) */
	cs_record_fn on_record;
	void *ctx;
};

/*
 * Loads the stack probes, shares probes' target map, attaches the perf
 * events (hardware cycles, else the software CPU clock: VMs often have no
 * PMU) and scheduler hooks, and adds their ring buffer to probes' poller:
 * each record (struct cs_ev_cpu_sample or cs_ev_off_cpu) goes to on_record.
 */
int cs_stacks_start(struct cs_stack_probes *stacks, const struct cs_stack_options *opts, struct cs_probes *probes,
		    cs_record_fn on_record, void *ctx, char *errmsg, size_t errlen);

/* Sum the per-CPU counters (enum cs_stack_counter). */
int cs_stacks_counters(struct cs_stack_probes *stacks, uint64_t counters[CS_STK_CTR_MAX]);

/* The target processes now (the shared map): up to max, how many in *count. */
int cs_stacks_targets(struct cs_stack_probes *stacks, uint32_t *tgids, size_t max, size_t *count);

/* Detach and free; safe on a zeroed or partly started struct. */
void cs_stacks_stop(struct cs_stack_probes *stacks);

#endif /* CS_STACKS_H */
