// SPDX-License-Identifier: BSD-2-Clause
#include "hist.h"

#include <string.h>

uint64_t cs_hist_bucket_lowest(size_t index)
{
	if (index < 2 * CS_HIST_SUB_COUNT)
		return index;
	size_t above = index - 2 * CS_HIST_SUB_COUNT;
	unsigned int shift = (unsigned int)(above / CS_HIST_SUB_COUNT) + 1;
	uint64_t sub = above % CS_HIST_SUB_COUNT;
	return (CS_HIST_SUB_COUNT + sub) << shift;
}

uint64_t cs_hist_bucket_highest(size_t index)
{
	if (index + 1 >= CS_HIST_BUCKETS)
		return UINT64_MAX;
	return cs_hist_bucket_lowest(index + 1) - 1;
}

void cs_hist_init(struct cs_hist *hist)
{
	memset(hist, 0, sizeof(*hist));
	hist->min = UINT64_MAX;
}

void cs_hist_merge(struct cs_hist *into, const struct cs_hist *from)
{
	if (from->count == 0)
		return;
	for (size_t i = 0; i < CS_HIST_BUCKETS; i++)
		into->buckets[i] += from->buckets[i];
	into->count += from->count;
	into->sum += from->sum;
	if (from->min < into->min)
		into->min = from->min;
	if (from->max > into->max)
		into->max = from->max;
}

/* Parts per million: the percentile's unit in the rank's integer arithmetic. */
#define PPM 1000000u

uint64_t cs_hist_percentile(const struct cs_hist *hist, double pct)
{
	if (hist->count == 0)
		return 0;
	if (pct >= 100.0)
		return hist->max;
	if (pct <= 0.0)
		return hist->min;
	/*
	 * Nearest rank: ceil(pct/100 * count), at least 1, in integers: in
	 * floating point 99.9/100 * 1000 is 999.0000000000001 and would round
	 * up a whole rank. pct is taken to parts per million.
	 */
	unsigned __int128 ppm = (unsigned __int128)(pct * (PPM / 100.0) + 0.5);
	uint64_t rank = (uint64_t)((ppm * hist->count + PPM - 1) / PPM);
	if (rank == 0)
		rank = 1;

	uint64_t seen = 0;
	for (size_t i = 0; i < CS_HIST_BUCKETS; i++) {
		seen += hist->buckets[i];
		if (seen < rank)
			continue;
		uint64_t low = cs_hist_bucket_lowest(i);
		uint64_t high = cs_hist_bucket_highest(i);
		uint64_t mid = low + (high - low) / 2;
		if (mid < hist->min)
			mid = hist->min;
		if (mid > hist->max)
			mid = hist->max;
		return mid;
	}
	return hist->max;
}

uint64_t cs_hist_count_at_or_below(const struct cs_hist *hist, uint64_t limit)
{
	uint64_t total = 0;
	size_t last = cs_hist_bucket_index(limit);
	for (size_t i = 0; i <= last; i++)
		total += hist->buckets[i];
	return total;
}

/* Bucket 2k holds [2^k, 1.5 * 2^k), bucket 2k+1 [1.5 * 2^k, 2^(k+1)); 0 and 1 their own. */
static size_t coarse_index(uint64_t value)
{
	if (value < 2)
		return (size_t)value;
	unsigned int top = cs_hist_highest_bit(value);
	size_t index = 2 * (size_t)top + ((value >> (top - 1)) & 1);
	return index < CS_COARSE_BUCKETS ? index : CS_COARSE_BUCKETS - 1;
}

void cs_coarse_record(uint32_t *buckets, uint64_t value)
{
	size_t index = coarse_index(value);
	if (buckets[index] < UINT32_MAX)
		buckets[index]++;
}

uint64_t cs_coarse_percentile(const uint32_t *buckets, double pct)
{
	uint64_t total = 0;
	for (size_t i = 0; i < CS_COARSE_BUCKETS; i++)
		total += buckets[i];
	if (total == 0)
		return 0;
	uint64_t rank = (uint64_t)(pct / 100.0 * (double)total + 0.999999);
	if (rank == 0)
		rank = 1;
	if (rank > total)
		rank = total;
	uint64_t seen = 0;
	for (size_t i = 0; i < CS_COARSE_BUCKETS; i++) {
		seen += buckets[i];
		if (seen < rank)
			continue;
		if (i < 2)
			return i; /* 0 and 1 are exact */
		uint64_t low = 1ull << (i / 2);
		if (i & 1)
			low += low / 2;
		uint64_t width = (1ull << (i / 2)) / 2;
		return low + width / 2;
	}
	return 0;
}
