/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Log-linear latency histogram (HdrHistogram-style), pure code, no I/O.
 *
 * Values below 256 are counted exactly. Above, every power of two is cut
 * into 128 equal sub-buckets, so a bucket is at most 1/128 of its lower
 * bound wide: a reported percentile (the bucket's midpoint) is within 0.4 %
 * of the true value. Values are usually nanoseconds; anything at or above
 * 2^CS_HIST_MAX_BITS lands in the last bucket (its exact maximum is kept).
 */
#ifndef CS_HIST_H
#define CS_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CS_HIST_SUB_BITS 7                       /* 128 sub-buckets per octave */
#define CS_HIST_SUB_COUNT (1u << CS_HIST_SUB_BITS)
#define CS_HIST_MAX_BITS 44                      /* 2^44 ns: about 4.9 hours */
#define CS_HIST_BUCKETS \
	(2 * CS_HIST_SUB_COUNT + (CS_HIST_MAX_BITS - CS_HIST_SUB_BITS - 1) * CS_HIST_SUB_COUNT)

struct cs_hist {
	uint64_t count;   /* values recorded */
	uint64_t sum;     /* their sum, for means and Prometheus _sum */
	uint64_t min;     /* exact smallest value (UINT64_MAX when empty) */
	uint64_t max;     /* exact largest value */
	uint64_t buckets[CS_HIST_BUCKETS];
};

void cs_hist_init(struct cs_hist *hist);
static inline void cs_hist_record_n(struct cs_hist *hist, uint64_t value, uint64_t times);
static inline void cs_hist_record(struct cs_hist *hist, uint64_t value);
void cs_hist_merge(struct cs_hist *into, const struct cs_hist *from);

/*
 * The value at percentile pct (0 < pct <= 100), nearest-rank definition:
 * the smallest recorded value v such that at least pct % of values are <= v,
 * reported as its bucket's midpoint clamped to [min, max]. 0 when empty.
 */
uint64_t cs_hist_percentile(const struct cs_hist *hist, double pct);

/* Number of values <= limit (exact below 256, bucket-rounded above). */
uint64_t cs_hist_count_at_or_below(const struct cs_hist *hist, uint64_t limit);

static inline size_t cs_hist_bucket_index(uint64_t value);
uint64_t cs_hist_bucket_lowest(size_t index);  /* smallest value in bucket */
uint64_t cs_hist_bucket_highest(size_t index); /* largest value in bucket */

/*
 * A coarse histogram small enough to keep per thread: two buckets per power
 * of two (a percentile within ~20 %), 32-bit counts, values up to 2^47.
 * The caller owns the array of CS_COARSE_BUCKETS counts.
 */
#define CS_COARSE_BUCKETS 96
void cs_coarse_record(uint32_t *buckets, uint64_t value);
/* Nearest-rank percentile as its bucket's midpoint; 0 when empty. */
uint64_t cs_coarse_percentile(const uint32_t *buckets, double pct);

/*
 * Recording is inline: a request records some twenty values, most of them
 * 0 (its causes'), and a call for each added some ten instructions to the
 * twenty of the recording.
 */

/* Index of the highest set bit; value must not be 0. */
static inline unsigned int cs_hist_highest_bit(uint64_t value)
{
	return 63u - (unsigned int)__builtin_clzll(value);
}

static inline size_t cs_hist_bucket_index(uint64_t value)
{
	if (value < 2 * CS_HIST_SUB_COUNT)
		return (size_t)value;
	unsigned int top = cs_hist_highest_bit(value);
	if (top >= CS_HIST_MAX_BITS)
		return CS_HIST_BUCKETS - 1;
	/* Octave 2^top is cut into 128 buckets 2^shift wide. */
	unsigned int shift = top - CS_HIST_SUB_BITS;
	uint64_t sub = (value >> shift) - CS_HIST_SUB_COUNT; /* 0..127 */
	return 2 * CS_HIST_SUB_COUNT + (size_t)(shift - 1) * CS_HIST_SUB_COUNT + (size_t)sub;
}

static inline void cs_hist_record_n(struct cs_hist *hist, uint64_t value, uint64_t times)
{
	if (times == 0)
		return;
	hist->buckets[cs_hist_bucket_index(value)] += times;
	hist->count += times;
	hist->sum += value * times;
	if (value < hist->min)
		hist->min = value;
	if (value > hist->max)
		hist->max = value;
}

static inline void cs_hist_record(struct cs_hist *hist, uint64_t value)
{
	cs_hist_record_n(hist, value, 1);
}

#endif /* CS_HIST_H */
