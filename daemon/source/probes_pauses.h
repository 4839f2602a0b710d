/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A JVM target's pauses (probes_pauses.c): its safepoints, from HotSpot's
 * USDT probes or uprobes on its safepoint functions, as
 * CS_EV_RUNTIME_PAUSE records in the probes' ring buffer.
 */
#ifndef CS_PROBES_PAUSES_H
#define CS_PROBES_PAUSES_H

#include <stddef.h>
#include <sys/types.h>

#include "probes.h"

/* What cs_probes_watch_pauses found. */
enum cs_pause_watch {
	CS_PAUSES_NOT_JAVA, /* no libjvm.so in the process: nothing to follow */
	CS_PAUSES_OFF,      /* --no-pauses: never followed */
	CS_PAUSES_ALREADY,  /* followed already */
	CS_PAUSES_USDT,     /* HotSpot's USDT probes: pauses, their operations and collections */
	CS_PAUSES_UPROBES,  /* uprobes on SafepointSynchronize::begin/end: the pauses alone */
	CS_PAUSES_NONE,     /* a JVM whose pauses cannot be followed: why says so */
};

/*
 * Follow pid's pauses when it runs a JVM. Never fails the run: a JVM
 * whose pauses cannot be followed gets CS_PAUSES_NONE and one line in why.
 */
enum cs_pause_watch cs_probes_watch_pauses(struct cs_probes *probes, pid_t pid, char *why, size_t why_len);

struct bpf_object;
/* The pause probes' object, once loaded (their programs' cost is read with the others'); NULL before. */
struct bpf_object *cs_probes_pauses_object(const struct cs_probes *probes);

/* Detach every pause probe (the run's end, before the last drain). */
void cs_probes_pauses_detach(struct cs_probes *probes);
/* Detach, and free the object. */
void cs_probes_pauses_free(struct cs_probes *probes);

#endif /* CS_PROBES_PAUSES_H */
