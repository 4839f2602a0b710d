// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of the log-linear histogram (daemon/engine/hist.c).
 *
 * Percentiles are checked against a sorted copy of the same values, with the
 * nearest-rank definition of hist.h computed in exact integer arithmetic:
 * rank = ceil(pct * n / 100), at least 1, and the answer is sorted[rank - 1].
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "hist.h"

/* hist.h: a reported percentile is within 0.4 % of the true value. */
#define REL_ERR 0.004

/* The percentiles a report shows, in thousandths of a percent. */
static const unsigned int report_pcts_milli[] = { 50000, 90000, 99000, 99900 };
#define REPORT_PCTS (sizeof(report_pcts_milli) / sizeof(report_pcts_milli[0]))

static struct cs_hist *hist_new(void)
{
	struct cs_hist *hist = malloc(sizeof(*hist));
	cr_assert_not_null(hist);
	cs_hist_init(hist);
	return hist;
}

/* Nearest rank (1-based) of pct_milli / 1000 % among n values, exactly. */
static uint64_t nearest_rank(unsigned int pct_milli, uint64_t n)
{
	uint64_t rank = (pct_milli * n + 100000 - 1) / 100000;
	return rank ? rank : 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* xorshift64*: deterministic, so a failure reproduces. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static double rng_unit(void) /* (0, 1] */
{
	return ((double)(rng_next() >> 11) + 1.0) / 9007199254740992.0;
}

static double rng_gauss(void)
{
	return sqrt(-2.0 * log(rng_unit())) * cos(2.0 * M_PI * rng_unit());
}

/*
 * Record values[], then compare every report percentile with the sorted
 * values: within REL_ERR, and exact for values below 256. min and max exact.
 */
static void check_against_sorted(uint64_t *values, size_t n, const char *what)
{
	struct cs_hist *hist = hist_new();
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		cs_hist_record(hist, values[i]);
		sum += values[i];
	}
	qsort(values, n, sizeof(*values), cmp_u64);

	cr_assert_eq(hist->count, n, "%s: count", what);
	cr_assert_eq(hist->sum, sum, "%s: sum", what);
	cr_assert_eq(hist->min, values[0], "%s: min", what);
	cr_assert_eq(hist->max, values[n - 1], "%s: max", what);
	cr_assert_eq(cs_hist_percentile(hist, 100.0), values[n - 1], "%s: p100 is the max", what);

	for (size_t i = 0; i < REPORT_PCTS; i++) {
		double pct = report_pcts_milli[i] / 1000.0;
		uint64_t want = values[nearest_rank(report_pcts_milli[i], n) - 1];
		uint64_t got = cs_hist_percentile(hist, pct);
		if (want < 256) {
			cr_expect_eq(got, want, "%s: p%g = %llu, want exactly %llu", what, pct,
				     (unsigned long long)got, (unsigned long long)want);
			continue;
		}
		double err = fabs((double)got - (double)want) / (double)want;
		cr_expect_leq(err, REL_ERR, "%s: p%g = %llu, want %llu (error %.3f%%)", what, pct,
			      (unsigned long long)got, (unsigned long long)want, err * 100.0);
	}
	free(hist);
}

#define N_VALUES 20000

Test(hist, empty)
{
	struct cs_hist *hist = hist_new();
	cr_assert_eq(hist->count, 0);
	cr_assert_eq(hist->min, UINT64_MAX);
	cr_assert_eq(hist->max, 0);
	for (size_t i = 0; i < REPORT_PCTS; i++)
		cr_assert_eq(cs_hist_percentile(hist, report_pcts_milli[i] / 1000.0), 0);
	cr_assert_eq(cs_hist_percentile(hist, 100.0), 0);
	cr_assert_eq(cs_hist_count_at_or_below(hist, UINT64_MAX), 0);
	free(hist);
}

Test(hist, record_n_zero_times_is_a_no_op)
{
	struct cs_hist *hist = hist_new();
	cs_hist_record_n(hist, 5000, 0);
	cr_assert_eq(hist->count, 0);
	cr_assert_eq(hist->min, UINT64_MAX, "an empty histogram keeps min = UINT64_MAX");
	cr_assert_eq(hist->max, 0);
	free(hist);
}

Test(hist, record_n_equals_n_records)
{
	struct cs_hist *a = hist_new(), *b = hist_new();
	const uint64_t values[] = { 0, 7, 300, 123456, 99999999 };
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		cs_hist_record_n(a, values[i], i + 3);
		for (size_t k = 0; k < i + 3; k++)
			cs_hist_record(b, values[i]);
	}
	cr_assert_eq(memcmp(a, b, sizeof(*a)), 0, "record_n(v, n) differs from n x record(v)");
	free(a);
	free(b);
}

Test(hist, exact_below_256)
{
	/* For every n up to 256, values 0..n-1: percentiles are exact ranks. */
	static const unsigned int pcts_milli[] = { 1000, 25000, 33300, 50000, 66700, 75000,
						   90000, 99000, 99900, 100000 };
	struct cs_hist *hist = hist_new();
	for (uint64_t n = 1; n <= 256; n++) {
		cs_hist_init(hist);
		for (uint64_t v = 0; v < n; v++)
			cs_hist_record(hist, v);
		for (size_t i = 0; i < sizeof(pcts_milli) / sizeof(pcts_milli[0]); i++) {
			uint64_t want = nearest_rank(pcts_milli[i], n) - 1;
			uint64_t got = cs_hist_percentile(hist, pcts_milli[i] / 1000.0);
			cr_assert_eq(got, want, "n=%llu p%g = %llu, want %llu", (unsigned long long)n,
				     pcts_milli[i] / 1000.0, (unsigned long long)got,
				     (unsigned long long)want);
		}
	}
	free(hist);
}

/*
 * Nearest rank at the exact boundary: rank values of 10 then the rest 200.
 * The percentile must be 10 with rank lows, and 200 with one low fewer. A
 * rank computed in floating point (99.9 / 100 * 1000 = 999.0000000000001)
 * is one too high and reports 200: the p99.9 of 999 x 1 ms and 1 x 100 ms
 * would be 100 ms.
 */
Test(hist, nearest_rank_at_the_boundary)
{
	static const unsigned int pcts_milli[] = { 50000, 90000, 99000, 99900, 99990 };
	struct cs_hist *hist = hist_new();
	for (size_t i = 0; i < sizeof(pcts_milli) / sizeof(pcts_milli[0]); i++) {
		double pct = pcts_milli[i] / 1000.0;
		for (uint64_t n = 1; n <= 20000; n += n < 2000 ? 1 : 1000) {
			uint64_t rank = nearest_rank(pcts_milli[i], n);
			cs_hist_init(hist);
			cs_hist_record_n(hist, 10, rank);
			cs_hist_record_n(hist, 200, n - rank);
			uint64_t got = cs_hist_percentile(hist, pct);
			cr_expect_eq(got, 10, "p%g of %llu x 10 then %llu x 200: want 10 (rank %llu), got %llu",
				     pct, (unsigned long long)rank, (unsigned long long)(n - rank),
				     (unsigned long long)rank, (unsigned long long)got);
			if (got != 10)
				break; /* one message per percentile is enough */
			if (rank < 2)
				continue;
			cs_hist_init(hist);
			cs_hist_record_n(hist, 10, rank - 1);
			cs_hist_record_n(hist, 200, n - rank + 1);
			cr_expect_eq(cs_hist_percentile(hist, pct), 200,
				     "p%g of %llu x 10 then %llu x 200: want 200", pct,
				     (unsigned long long)(rank - 1), (unsigned long long)(n - rank + 1));
		}
	}
	free(hist);
}

Test(hist, p999_of_a_single_outlier_in_1000)
{
	struct cs_hist *hist = hist_new();
	cs_hist_record_n(hist, 1 * 1000000, 999);
	cs_hist_record(hist, 100 * 1000000);
	uint64_t p999 = cs_hist_percentile(hist, 99.9);
	cr_expect_leq(p999, 1004000, "p99.9 of 999 x 1 ms + 1 x 100 ms is 1 ms, got %llu ns",
		      (unsigned long long)p999);
	cr_expect_eq(cs_hist_percentile(hist, 100.0), 100 * 1000000);
	free(hist);
}

Test(hist, uniform)
{
	static uint64_t values[N_VALUES];
	for (size_t i = 0; i < N_VALUES; i++)
		values[i] = 1 + rng_next() % 1000000;
	check_against_sorted(values, N_VALUES, "uniform 1 ns..1 ms");
}

Test(hist, uniform_wide)
{
	/* Uniform in the exponent: every octave from 1 ns to 2^43 ns. */
	static uint64_t values[N_VALUES];
	for (size_t i = 0; i < N_VALUES; i++)
		values[i] = (uint64_t)ldexp(1.0, (int)(rng_next() % 43)) + rng_next() % 1000;
	check_against_sorted(values, N_VALUES, "log-uniform 1 ns..2^43 ns");
}

Test(hist, log_normal)
{
	static uint64_t values[N_VALUES];
	for (size_t i = 0; i < N_VALUES; i++)
		values[i] = (uint64_t)exp(log(200e3) + 1.2 * rng_gauss()); /* median 200 us */
	check_against_sorted(values, N_VALUES, "log-normal, median 200 us");
}

Test(hist, bimodal_with_a_1_percent_tail_of_100x)
{
	static uint64_t values[N_VALUES];
	for (size_t i = 0; i < N_VALUES; i++) {
		uint64_t base = 50000 + rng_next() % 10000;  /* 50..60 us */
		values[i] = i % 100 == 0 ? base * 100 : base; /* 1 %: 5..6 ms */
	}
	check_against_sorted(values, N_VALUES, "bimodal, 1 % tail at 100x");

	/* The tail must show at p99.9, not at p99. */
	struct cs_hist *hist = hist_new();
	for (size_t i = 0; i < N_VALUES; i++)
		cs_hist_record(hist, values[i]);
	cr_assert_lt(cs_hist_percentile(hist, 99.0), 61000);
	cr_assert_gt(cs_hist_percentile(hist, 99.9), 4900000);
	free(hist);
}

Test(hist, constant)
{
	static const uint64_t constants[] = { 0, 1, 255, 256, 257, 1000, 123456789, 1ull << 40 };
	for (size_t c = 0; c < sizeof(constants) / sizeof(constants[0]); c++) {
		struct cs_hist *hist = hist_new();
		cs_hist_record_n(hist, constants[c], 1000);
		/* Clamped to [min, max]: a constant comes back exactly. */
		for (size_t i = 0; i < REPORT_PCTS; i++)
			cr_assert_eq(cs_hist_percentile(hist, report_pcts_milli[i] / 1000.0), constants[c],
				     "constant %llu", (unsigned long long)constants[c]);
		cr_assert_eq(hist->min, constants[c]);
		cr_assert_eq(hist->max, constants[c]);
		free(hist);
	}
}

Test(hist, zeros)
{
	static uint64_t values[1000];
	for (size_t i = 0; i < 1000; i++)
		values[i] = i < 995 ? 0 : 3;
	check_against_sorted(values, 1000, "mostly zeros");
}

Test(hist, values_at_bucket_edges)
{
	/* Lowest, highest and one past each of a spread of buckets. */
	static uint64_t values[3 * CS_HIST_BUCKETS];
	size_t n = 0;
	for (size_t i = 200; i + 1 < CS_HIST_BUCKETS; i += 7) {
		values[n++] = cs_hist_bucket_lowest(i);
		values[n++] = cs_hist_bucket_highest(i);
		values[n++] = cs_hist_bucket_highest(i) + 1;
	}
	check_against_sorted(values, n, "bucket edges");

	/* A constant at a bucket's edge, alone or with its neighbour. */
	for (size_t i = 256; i + 1 < CS_HIST_BUCKETS; i += 131) {
		uint64_t high = cs_hist_bucket_highest(i);
		values[0] = high;
		values[1] = high + 1;
		values[2] = high;
		check_against_sorted(values, 3, "bucket edge pair");
	}
}

Test(hist, huge_values)
{
	const uint64_t huge = 1ull << 44;
	struct cs_hist *hist = hist_new();
	cs_hist_record_n(hist, huge + 12345, 10);
	cr_assert_eq(cs_hist_bucket_index(huge), CS_HIST_BUCKETS - 1);
	cr_assert_eq(cs_hist_bucket_index(UINT64_MAX), CS_HIST_BUCKETS - 1);
	cr_assert_eq(cs_hist_percentile(hist, 50.0), huge + 12345, "a constant huge value is exact");
	cr_assert_eq(cs_hist_percentile(hist, 99.9), huge + 12345);

	/* The exact maximum is kept, and percentiles stay within [min, max]. */
	cs_hist_record(hist, UINT64_MAX / 4);
	cr_assert_eq(hist->max, UINT64_MAX / 4);
	cr_assert_eq(cs_hist_percentile(hist, 100.0), UINT64_MAX / 4);
	uint64_t p50 = cs_hist_percentile(hist, 50.0);
	cr_assert(p50 >= huge + 12345 && p50 <= UINT64_MAX / 4);
	free(hist);

	/* Huge outliers do not disturb values below the last bucket. */
	static uint64_t values[1000];
	for (size_t i = 0; i < 1000; i++)
		values[i] = i < 990 ? 3000000000ull + i * 1000000 : (1ull << 50) + i;
	check_against_sorted(values, 1000, "seconds with 1 % above 2^44");
}

Test(hist, bucket_layout_sweep)
{
	/* Buckets tile [0, UINT64_MAX] in order, each within 1/128 of its start. */
	cr_assert_eq(cs_hist_bucket_lowest(0), 0);
	for (size_t i = 0; i < CS_HIST_BUCKETS; i++) {
		uint64_t low = cs_hist_bucket_lowest(i), high = cs_hist_bucket_highest(i);
		cr_assert_leq(low, high, "bucket %zu: [%llu, %llu]", i, (unsigned long long)low,
			      (unsigned long long)high);
		cr_assert_eq(cs_hist_bucket_index(low), i, "index(lowest(%zu))", i);
		cr_assert_eq(cs_hist_bucket_index(high), i, "index(highest(%zu))", i);
		if (i < 256) {
			cr_assert_eq(low, i, "values below 256 have their own bucket");
			cr_assert_eq(high, i);
		} else if (i + 1 < CS_HIST_BUCKETS) {
			cr_assert_leq((double)(high - low + 1) / (double)low, 1.0 / 128.0,
				      "bucket %zu too wide", i);
		}
		if (i + 1 < CS_HIST_BUCKETS)
			cr_assert_eq(cs_hist_bucket_lowest(i + 1), high + 1, "gap after bucket %zu", i);
	}
	cr_assert_eq(cs_hist_bucket_highest(CS_HIST_BUCKETS - 1), UINT64_MAX);

	/* The index never decreases as values grow, and stays in range. */
	size_t previous = 0;
	for (uint64_t v = 0; v < 300000; v++) {
		size_t index = cs_hist_bucket_index(v);
		cr_assert(index == previous || index == previous + 1, "index jumps at %llu",
			  (unsigned long long)v);
		previous = index;
	}
	for (double x = 3e5; x < 1.8e19; x *= 1.001) {
		size_t index = cs_hist_bucket_index((uint64_t)x);
		cr_assert_geq(index, previous, "index decreases at %.0f", x);
		cr_assert_lt(index, CS_HIST_BUCKETS);
		previous = index;
	}
}

static void record_uniform(struct cs_hist *hist, size_t n, uint64_t from, uint64_t span)
{
	for (size_t i = 0; i < n; i++)
		cs_hist_record(hist, from + rng_next() % span);
}

Test(hist, merge_equals_recording_both)
{
	struct cs_hist *a = hist_new(), *b = hist_new(), *both = hist_new();
	rng_state = 42;
	record_uniform(a, 5000, 100, 100000);
	record_uniform(b, 3000, 5000000, 1000000);
	rng_state = 42;
	record_uniform(both, 5000, 100, 100000);
	record_uniform(both, 3000, 5000000, 1000000);

	cs_hist_merge(a, b);
	cr_assert_eq(memcmp(a, both, sizeof(*a)), 0, "merge(a, b) differs from recording both");
	cr_assert_eq(a->count, 8000);

	/* Merging into an empty histogram copies; merging an empty one changes nothing. */
	struct cs_hist *empty = hist_new();
	cs_hist_merge(empty, both);
	cr_assert_eq(memcmp(empty, both, sizeof(*empty)), 0);
	cs_hist_init(empty);
	cs_hist_merge(a, empty);
	cr_assert_eq(memcmp(a, both, sizeof(*a)), 0);
	cr_assert_eq(empty->min, UINT64_MAX);
	free(a);
	free(b);
	free(both);
	free(empty);
}

Test(hist, count_at_or_below)
{
	struct cs_hist *hist = hist_new();
	for (uint64_t v = 0; v < 256; v++)
		cs_hist_record(hist, v);
	for (uint64_t limit = 0; limit < 256; limit++)
		cr_assert_eq(cs_hist_count_at_or_below(hist, limit), limit + 1, "exact below 256");

	/* 1000 lands in [1000, 1003]: counted from 1000 on, not at 999. */
	cs_hist_init(hist);
	cs_hist_record(hist, 1000);
	cs_hist_record(hist, 2000);
	cs_hist_record(hist, 3000);
	cr_assert_eq(cs_hist_count_at_or_below(hist, 999), 0);
	cr_assert_eq(cs_hist_count_at_or_below(hist, 1000), 1);
	cr_assert_eq(cs_hist_count_at_or_below(hist, 1999), 1);
	cr_assert_eq(cs_hist_count_at_or_below(hist, 2000), 2);
	cr_assert_eq(cs_hist_count_at_or_below(hist, UINT64_MAX), 3);

	/* Random values: within the rounding of the limit's bucket. */
	static uint64_t values[5000];
	cs_hist_init(hist);
	for (size_t i = 0; i < 5000; i++) {
		values[i] = rng_next() % 10000000;
		cs_hist_record(hist, values[i]);
	}
	qsort(values, 5000, sizeof(values[0]), cmp_u64);
	for (uint64_t limit = 1; limit < 20000000; limit = limit * 3 + 1) {
		size_t bucket = cs_hist_bucket_index(limit);
		uint64_t at_most = 0, at_least = 0;
		for (size_t i = 0; i < 5000; i++) {
			at_least += values[i] <= limit;
			at_most += values[i] <= cs_hist_bucket_highest(bucket);
		}
		uint64_t got = cs_hist_count_at_or_below(hist, limit);
		cr_assert(got >= at_least && got <= at_most, "limit %llu: %llu not in [%llu, %llu]",
			  (unsigned long long)limit, (unsigned long long)got,
			  (unsigned long long)at_least, (unsigned long long)at_most);
	}
	free(hist);
}
