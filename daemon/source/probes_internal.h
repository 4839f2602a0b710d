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

#endif /* CS_PROBES_INTERNAL_H */
