/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The kernel's BPF run-time counting, turned on and off while connscope
 * runs. It costs two clock reads around every run of every BPF program on
 * the machine (about 90 ns a run on a KVM guest, as much as the run of an
 * empty program), so connscope keeps it on only in sampled spans.
 *
 * bpf_enable_stats() holds it on while the descriptor it returns is open,
 * and takes CAP_SYS_ADMIN, which connscoped gives up once its probes are
 * in. So a holder is a small child process, forked while the capability
 * is still there, that keeps only that capability and no descriptor but
 * its end of a socket pair: it turns the counting on or off when asked,
 * and exits (the kernel then lets the counting go) when the parent's end
 * closes, the parent dies included.
 */
#ifndef CS_STATS_HOLDER_H
#define CS_STATS_HOLDER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct cs_stats_holder {
	int sock;  /* the parent's end; -1: no holder */
	pid_t pid; /* the child */
	bool on;   /* the counting is held on */
};

/*
 * Fork the holder with the counting on. Returns 0, or a negative errno:
 * the kernel refused (-EPERM without CAP_SYS_ADMIN), or no child could be
 * made; holder->sock is then -1.
 */
int cs_stats_holder_start(struct cs_stats_holder *holder);

/* Hold the counting on or let it go. Returns 0 or a negative errno (the holder is then stopped). */
int cs_stats_holder_set(struct cs_stats_holder *holder, bool on);

/* Stop the holder and wait for it: the counting is let go. */
void cs_stats_holder_stop(struct cs_stats_holder *holder);

/* The counting is held on in one span between cost readings of every this many, by default. */
#define CS_BPF_STATS_SAMPLE_EVERY 10

/* Is the counting held on over span number span (0: up to the first reading)? Pure. */
bool cs_bpf_stats_span_sampled(uint64_t span);

#endif /* CS_STATS_HOLDER_H */
