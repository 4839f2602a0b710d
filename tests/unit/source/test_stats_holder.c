// SPDX-License-Identifier: BSD-2-Clause
/*
 * When the BPF run-time counting is held on (daemon/source/stats_holder.c):
 * about one span in ten, the first one among them, and spread over every
 * phase of a tracing period rather than stuck on one.
 */
#include <criterion/criterion.h>

#include "stats_holder.h"

Test(stats_holder, about_one_span_in_ten_is_held_the_first_among_them)
{
	cr_assert(cs_bpf_stats_span_sampled(0));
	uint64_t held = 0;
	for (uint64_t span = 0; span < 10000; span++)
		held += cs_bpf_stats_span_sampled(span);
	cr_assert_geq(held, 1000);
	cr_assert_leq(held, 1001); /* the first span's block may hold two */
}

Test(stats_holder, held_spans_fall_on_every_phase_of_a_period)
{
	/* A 1 s window every 10 s, readings once a second: each phase of the period gets its share. */
	for (uint64_t period = 2; period <= 60; period++) {
		uint64_t by_phase[60] = { 0 };
		for (uint64_t span = 0; span < 60000; span++)
			if (cs_bpf_stats_span_sampled(span))
				by_phase[span % period]++;
		for (uint64_t phase = 0; phase < period; phase++)
			cr_assert_geq(by_phase[phase], 6000 / period / 2, "period %lu: phase %lu held %lu times",
				      (unsigned long)period, (unsigned long)phase, (unsigned long)by_phase[phase]);
	}
}

Test(stats_holder, no_long_run_of_spans_goes_unheld)
{
	uint64_t gap = 0, longest = 0;
	for (uint64_t span = 0; span < 100000; span++) {
		gap = cs_bpf_stats_span_sampled(span) ? 0 : gap + 1;
		if (gap > longest)
			longest = gap;
	}
	cr_assert_leq(longest, 2 * CS_BPF_STATS_SAMPLE_EVERY - 2, "%lu spans in a row unheld", (unsigned long)longest);
}
