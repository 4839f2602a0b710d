/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Between probes.c (the probes' life) and probes_samples.c (the samples
 * the loop asks for): the samples' tables and room, made at the start and
 * freed at the stop. Not for the probes' users.
 */
#ifndef CS_PROBES_INTERNAL_H
#define CS_PROBES_INTERNAL_H

#include "probes.h"

/* The samples' tables (thread baselines, listener identities) and room; 0 or -ENOMEM. */
int cs_probes_samples_init(struct cs_probes *probes);
void cs_probes_samples_free(struct cs_probes *probes);

/*
 * The kernel's BPF run-time counting for the run (probes_cost.c): left as
 * it is when kernel.bpf_stats_enabled is already 1, else turned on unless
 * the options say not to. Never fails the run: a refusal is recorded.
 */
void cs_probes_cost_init(struct cs_probes *probes, const struct cs_probe_options *opts);
/* Hand the counting back: the kernel restores its state when the last holder lets go. */
void cs_probes_cost_free(struct cs_probes *probes);

/*
 * Between the probes' open and their load: nothing in connscope and
 * connscoped; build/connscope-test's (tests/hooks/probes_hooks.c) sets
 * what the tests ask for.
 */
void cs_probes_test_hooks(struct cs_probes *probes);

#endif /* CS_PROBES_INTERNAL_H */
