// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of the open-addressing table (daemon/common/u64map.c): put/get/remove
 * against a plain reference array under random churn, backward-shift
 * deletion inside crafted collision runs (also across the wrap-around),
 * growth, the max_count bound, key 0, and the visitor.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "u64map.h"

struct value {
	uint64_t key;   /* the key it was stored under: catches a value moved apart from its key */
	uint64_t data;
	uint32_t small; /* odd-sized tail: values are not just 8-byte words */
};

static struct cs_u64map map;

static void setup(void)
{
	cr_assert_eq(cs_u64map_init(&map, sizeof(struct value), 0), 0);
}

static void teardown(void)
{
	cs_u64map_free(&map);
}

TestSuite(u64map, .init = setup, .fini = teardown);

static uint64_t rng_state = 0x853c49e6748fea9bull;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static struct value *put(struct cs_u64map *m, uint64_t key, uint64_t data, int want_created)
{
	int created = -1;
	struct value *v = cs_u64map_put(m, key, &created);
	cr_assert_not_null(v, "put %#llx refused", (unsigned long long)key);
	cr_assert_eq(created, want_created, "put %#llx: created %d", (unsigned long long)key, created);
	if (created) {
		static const struct value zero;
		cr_assert_eq(memcmp(v, &zero, sizeof(zero)), 0, "new value not zero-filled");
	}
	v->key = key;
	v->data = data;
	v->small = (uint32_t)data;
	return v;
}

static void expect_value(const struct cs_u64map *m, uint64_t key, uint64_t data)
{
	const struct value *v = cs_u64map_get(m, key);
	cr_assert_not_null(v, "key %#llx lost", (unsigned long long)key);
	cr_assert_eq(v->key, key, "key %#llx holds the value of %#llx", (unsigned long long)key,
		     (unsigned long long)v->key);
	cr_assert_eq(v->data, data, "key %#llx: data %llu, want %llu", (unsigned long long)key,
		     (unsigned long long)v->data, (unsigned long long)data);
	cr_assert_eq(v->small, (uint32_t)data);
}

/* ---- basics ------------------------------------------------------------------- */

Test(u64map, put_get_remove)
{
	cr_assert_null(cs_u64map_get(&map, 42));
	put(&map, 42, 1, 1);
	expect_value(&map, 42, 1);
	cr_assert_eq(map.count, 1);

	/* Putting an existing key returns its value, untouched. */
	struct value *v = cs_u64map_put(&map, 42, NULL);
	cr_assert_not_null(v);
	cr_assert_eq(v->data, 1);
	put(&map, 42, 2, 0);
	expect_value(&map, 42, 2);
	cr_assert_eq(map.count, 1);

	cr_assert_eq(cs_u64map_remove(&map, 42), 1);
	cr_assert_null(cs_u64map_get(&map, 42));
	cr_assert_eq(cs_u64map_remove(&map, 42), 0, "removed twice");
	cr_assert_eq(cs_u64map_remove(&map, 43), 0, "removed a key never put");
	cr_assert_eq(map.count, 0);
	/* Back again: zero-filled, not the old value. */
	put(&map, 42, 3, 1);
}

Test(u64map, key_zero_is_rejected)
{
	int created = 7;
	cr_assert_null(cs_u64map_put(&map, 0, &created));
	cr_assert_eq(created, 0);
	cr_assert_null(cs_u64map_get(&map, 0));
	cr_assert_eq(cs_u64map_remove(&map, 0), 0);
	cr_assert_eq(map.count, 0);
	/* Empty slots are 0 too: a table with entries still has no key 0. */
	for (uint64_t k = 1; k <= 10; k++)
		put(&map, k, k, 1);
	cr_assert_null(cs_u64map_get(&map, 0));
	cr_assert_eq(cs_u64map_remove(&map, 0), 0);
	cr_assert_eq(map.count, 10);
}

Test(u64map, extreme_keys)
{
	const uint64_t keys[] = { 1, UINT64_MAX, 1ull << 63, 0xffff888000000000ull, 0x100000000ull };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		put(&map, keys[i], i, 1);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		expect_value(&map, keys[i], i);
}

Test(u64map, a_freed_map_is_empty_and_safe)
{
	put(&map, 5, 5, 1);
	cs_u64map_free(&map);
	cr_assert_null(cs_u64map_get(&map, 5));
	cr_assert_null(cs_u64map_put(&map, 5, NULL));
	cr_assert_eq(cs_u64map_remove(&map, 5), 0);
	cs_u64map_free(&map); /* twice: the teardown frees it again */
}

/* ---- growth and bounds ------------------------------------------------------------ */

Test(u64map, grows_and_keeps_every_entry)
{
	const uint64_t n = 50000;
	size_t capacity = map.capacity;
	int growths = 0;
	for (uint64_t i = 1; i <= n; i++) {
		/* Kernel-pointer-like keys: common high bits, 64-byte aligned. */
		put(&map, 0xffff888000000000ull + i * 64, i, 1);
		if (map.capacity != capacity) {
			cr_assert_eq(map.capacity, capacity * 2, "grew from %zu to %zu", capacity, map.capacity);
			capacity = map.capacity;
			growths++;
		}
		cr_assert_leq(map.count * 2, map.capacity, "load above one half");
	}
	cr_assert_eq(map.count, n);
	cr_assert_eq(map.capacity & (map.capacity - 1), 0, "capacity %zu not a power of two", map.capacity);
	cr_assert_geq(growths, 10);
	for (uint64_t i = 1; i <= n; i++)
		expect_value(&map, 0xffff888000000000ull + i * 64, i);
	cr_assert_null(cs_u64map_get(&map, 0xffff888000000000ull + (n + 1) * 64));
}

Test(u64map, max_count_refuses_new_keys_only)
{
	struct cs_u64map bounded;
	cr_assert_eq(cs_u64map_init(&bounded, sizeof(struct value), 100), 0);
	for (uint64_t k = 1; k <= 100; k++)
		put(&bounded, k * 7919, k, 1);
	int created = 7;
	cr_assert_null(cs_u64map_put(&bounded, 101 * 7919, &created), "the 101st key was let in");
	cr_assert_eq(created, 0);
	cr_assert_eq(bounded.count, 100);
	cr_assert_null(cs_u64map_get(&bounded, 101 * 7919));

	/* Existing keys are still served at the bound. */
	put(&bounded, 50 * 7919, 5000, 0);
	expect_value(&bounded, 50 * 7919, 5000);

	/* A removal makes room for one. */
	cr_assert_eq(cs_u64map_remove(&bounded, 1 * 7919), 1);
	put(&bounded, 101 * 7919, 101, 1);
	cr_assert_null(cs_u64map_put(&bounded, 102 * 7919, NULL));
	for (uint64_t k = 2; k <= 101; k++)
		expect_value(&bounded, k * 7919, k == 50 ? 5000 : k);
	cs_u64map_free(&bounded);
}

/* ---- churn against a reference ------------------------------------------------------ */

Test(u64map, random_churn_matches_a_reference_array)
{
	/*
	 * 100000 random operations on keys 1..4000 (many hits, long probe
	 * runs, growth and shrinkage through deletions), checked against a
	 * plain array after each step and in full every 5000 steps.
	 */
	enum { KEYS = 4000, OPS = 100000 };
	static uint64_t ref[KEYS + 1];
	static bool present[KEYS + 1];
	size_t count = 0;
	/* Keys spread over the 64-bit range but fixed per index. */
#define KEY(i) ((uint64_t)(i) * 0x9e3779b97f4a7c15ull | 1)
	for (int op = 0; op < OPS; op++) {
		uint64_t i = 1 + rng() % KEYS;
		uint64_t key = KEY(i);
		unsigned what = (unsigned)(rng() % 10);
		if (what < 5) { /* put */
			int created;
			struct value *v = cs_u64map_put(&map, key, &created);
			cr_assert_not_null(v);
			cr_assert_eq(created, !present[i], "op %d: created %d for key %llu", op, created,
				     (unsigned long long)i);
			if (created)
				count++;
			else
				cr_assert_eq(v->data, ref[i], "op %d: key %llu", op, (unsigned long long)i);
			ref[i] = rng();
			present[i] = true;
			v->key = key;
			v->data = ref[i];
			v->small = (uint32_t)ref[i];
		} else if (what < 9) { /* remove */
			cr_assert_eq(cs_u64map_remove(&map, key), present[i], "op %d: remove key %llu", op,
				     (unsigned long long)i);
			if (present[i])
				count--;
			present[i] = false;
		} else { /* get */
			const struct value *v = cs_u64map_get(&map, key);
			cr_assert_eq(v != NULL, present[i], "op %d: get key %llu", op, (unsigned long long)i);
		}
		cr_assert_eq(map.count, count, "op %d", op);
		if (op % 5000 == 4999) {
			for (uint64_t k = 1; k <= KEYS; k++) {
				if (present[k])
					expect_value(&map, KEY(k), ref[k]);
				else
					cr_assert_null(cs_u64map_get(&map, KEY(k)), "op %d: key %llu back from the dead",
						       op, (unsigned long long)k);
			}
		}
	}
#undef KEY
}

/* ---- backward-shift deletion ------------------------------------------------------- */

/* The slot a key lands in when alone in a fresh table of the default capacity. */
static size_t home_slot(uint64_t key)
{
	struct cs_u64map probe;
	cr_assert_eq(cs_u64map_init(&probe, 1, 0), 0);
	cr_assert_not_null(cs_u64map_put(&probe, key, NULL));
	size_t home = probe.capacity;
	for (size_t i = 0; i < probe.capacity; i++)
		if (probe.slots[i] && probe.keys[probe.slots[i] - 1] == key)
			home = i;
	cs_u64map_free(&probe);
	cr_assert_lt(home, 64);
	return home;
}

/* n keys whose home slot is home (in a 64-slot table), from start upwards. */
static size_t keys_with_home(size_t home, uint64_t *out, size_t n, uint64_t *next)
{
	size_t found = 0;
	while (found < n) {
		uint64_t key = (*next)++;
		if (home_slot(key) == home)
			out[found++] = key;
	}
	return found;
}

static void check_all(const struct cs_u64map *m, const uint64_t *keys, const bool *gone, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (gone[i])
			cr_assert_null(cs_u64map_get(m, keys[i]), "removed key %#llx still found",
				       (unsigned long long)keys[i]);
		else
			expect_value(m, keys[i], keys[i] * 3);
	}
}

/*
 * A crafted run of colliding keys: 4 keys at home 61, 3 at home 62, 2 at
 * home 0, 2 at home 2. Linear probing packs them into slots 61..63, 0..7,
 * wrapping around the end of the table. Every removal order of every key
 * must keep all the others findable.
 */
Test(u64map, backward_shift_keeps_colliding_runs_findable)
{
	static const struct { size_t home, n; } groups[] = { { 61, 4 }, { 62, 3 }, { 0, 2 }, { 2, 2 } };
	uint64_t keys[16];
	size_t n = 0;
	uint64_t next = 1;
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
		n += keys_with_home(groups[g].home, keys + n, groups[g].n, &next);
	cr_assert_eq(n, 11);

	for (int trial = 0; trial < 300; trial++) {
		struct cs_u64map m;
		cr_assert_eq(cs_u64map_init(&m, sizeof(struct value), 0), 0);
		/* Insert in a random order: the run's layout changes with it. */
		uint64_t order[16];
		memcpy(order, keys, sizeof(keys));
		for (size_t i = n - 1; i > 0; i--) {
			size_t j = rng() % (i + 1);
			uint64_t t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		for (size_t i = 0; i < n; i++)
			put(&m, order[i], order[i] * 3, 1);
		cr_assert_eq(m.capacity, 64, "the table grew: the crafted homes no longer hold");
		if (trial == 0) {
			/* The run really wraps: the last slot and the first are both taken. */
			cr_assert_neq(m.slots[63], 0);
			cr_assert_neq(m.slots[0], 0);
		}
		/* Remove in another random order, checking every key after each removal. */
		bool gone[16] = { false };
		for (size_t left = n; left > 0; left--) {
			size_t pick = rng() % left, idx = 0;
			for (size_t i = 0, seen = 0; i < n; i++)
				if (!gone[i] && seen++ == pick)
					idx = i;
			cr_assert_eq(cs_u64map_remove(&m, keys[idx]), 1);
			gone[idx] = true;
			check_all(&m, keys, gone, n);
			cr_assert_eq(m.count, left - 1);
		}
		for (size_t i = 0; i < m.capacity; i++)
			cr_assert_eq(m.slots[i], 0, "slot %zu not emptied", i);
		cs_u64map_free(&m);
	}
}

Test(u64map, removals_at_half_load_keep_everything_findable)
{
	/* Random keys at the highest load before growth: 32 in 64 slots, many runs. */
	for (int trial = 0; trial < 500; trial++) {
		struct cs_u64map m;
		cr_assert_eq(cs_u64map_init(&m, sizeof(struct value), 0), 0);
		uint64_t keys[32];
		bool gone[32] = { false };
		for (size_t i = 0; i < 32; i++) {
			do
				keys[i] = rng() | 1;
			while (cs_u64map_get(&m, keys[i]));
			put(&m, keys[i], keys[i] * 3, 1);
		}
		cr_assert_eq(m.capacity, 64);
		for (size_t r = 0; r < 32; r++) {
			size_t idx = rng() % 32;
			while (gone[idx])
				idx = (idx + 1) % 32;
			cr_assert_eq(cs_u64map_remove(&m, keys[idx]), 1);
			gone[idx] = true;
			check_all(&m, keys, gone, 32);
		}
		cs_u64map_free(&m);
	}
}

/* ---- the visitor -------------------------------------------------------------------- */

struct visit_log {
	uint64_t keys[2000];
	size_t n;
	bool bad_value;
};

static void log_visit(uint64_t key, void *value, void *ctx)
{
	struct visit_log *log = ctx;
	const struct value *v = value;
	if (v->key != key || v->data != key * 3)
		log->bad_value = true;
	if (log->n < 2000)
		log->keys[log->n] = key;
	log->n++;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

Test(u64map, each_visits_every_entry_once)
{
	struct visit_log log = { .n = 0 };
	cs_u64map_each(&map, log_visit, &log);
	cr_assert_eq(log.n, 0, "visited an empty table");

	for (uint64_t k = 1; k <= 1500; k++)
		put(&map, k * 1000003, k * 1000003 * 3, 1);
	for (uint64_t k = 1; k <= 1500; k += 3)
		cr_assert_eq(cs_u64map_remove(&map, k * 1000003), 1);
	cs_u64map_each(&map, log_visit, &log);
	cr_assert_eq(log.n, 1000);
	cr_assert_not(log.bad_value, "a value was handed with another key");
	qsort(log.keys, log.n, sizeof(log.keys[0]), compare_u64);
	size_t i = 0;
	for (uint64_t k = 1; k <= 1500; k++) {
		if (k % 3 == 1)
			continue;
		cr_assert_eq(log.keys[i], k * 1000003, "visit %zu: %llu", i, (unsigned long long)log.keys[i]);
		i++;
	}
}

Test(u64map, each_visits_the_first_and_the_last_slot)
{
	/* Keys whose home is slot 0 and slot 63 of a fresh table. */
	uint64_t first[2], last[1], next = 1;
	keys_with_home(0, first, 2, &next);
	next = 1;
	keys_with_home(63, last, 1, &next);
	put(&map, first[0], first[0] * 3, 1);
	put(&map, first[1], first[1] * 3, 1);
	put(&map, last[0], last[0] * 3, 1);
	cr_assert_eq(map.capacity, 64);
	cr_assert(map.slots[0] && map.slots[1] && map.slots[63], "the crafted slots are not taken");
	struct visit_log log = { .n = 0 };
	cs_u64map_each(&map, log_visit, &log);
	cr_assert_eq(log.n, 3);
	cr_assert_not(log.bad_value);
}

static int data_is_odd(uint64_t key, const void *value, void *ctx)
{
	const struct value *v = value;
	(*(size_t *)ctx)++;
	cr_assert_eq(v->key, key, "value moved apart from its key");
	return v->data & 1;
}

/* remove_if at half load, with runs across the wrap-around: every stale entry
 * goes, every other stays findable, whatever the backward shifts move. */
Test(u64map, remove_if_removes_exactly_the_stale_entries)
{
	for (int round = 0; round < 20; round++) {
		size_t n = 16 + rng() % 4000, asked = 0, want_removed = 0;
		uint64_t *keys = calloc(n, sizeof(*keys));
		cr_assert_not_null(keys);
		for (size_t i = 0; i < n; i++) {
			do
				keys[i] = rng();
			while (!keys[i] || cs_u64map_get(&map, keys[i]));
			struct value *v = cs_u64map_put(&map, keys[i], NULL);
			cr_assert_not_null(v);
			v->key = keys[i];
			v->data = rng();
			want_removed += v->data & 1;
		}
		size_t removed = cs_u64map_remove_if(&map, data_is_odd, &asked);
		cr_assert_eq(removed, want_removed);
		cr_assert_geq(asked, n, "every entry asked about");
		cr_assert_eq(map.count, n - want_removed);
		for (size_t i = 0; i < n; i++) {
			const struct value *v = cs_u64map_get(&map, keys[i]);
			if (v) {
				cr_assert_eq(v->key, keys[i]);
				cr_assert_eq(v->data & 1, 0, "a stale entry stayed");
			}
		}
		/* Empty the table for the next round. */
		for (size_t i = 0; i < n; i++)
			cs_u64map_remove(&map, keys[i]);
		cr_assert_eq(map.count, 0);
		free(keys);
	}
}

Test(u64map, slot_reads_entries_and_empty_slots)
{
	struct value *v = cs_u64map_put(&map, 77, NULL);
	v->key = 77;
	size_t found = 0;
	uint64_t key = 0;
	for (size_t slot = 0; slot < map.capacity; slot++) {
		struct value *at = cs_u64map_slot(&map, slot, &key);
		if (at) {
			found++;
			cr_assert_eq(key, 77);
			cr_assert_eq(at, v);
		}
	}
	cr_assert_eq(found, 1);
	cr_assert_null(cs_u64map_slot(&map, map.capacity, &key), "past the end");
}

/*
 * The values are dense: removals move the last entry into the hole, so
 * the entries that stay are the first count of the values array, wherever
 * their slots are, and each keeps its own value.
 */
Test(u64map, removals_keep_the_values_dense)
{
	for (uint64_t k = 1; k <= 100; k++)
		put(&map, k * 7919, k * 7919 * 3, 1);
	for (uint64_t k = 1; k <= 100; k++)
		if (k % 10)
			cr_assert_eq(cs_u64map_remove(&map, k * 7919), 1);
	cr_assert_eq(map.count, 10);
	for (uint64_t k = 10; k <= 100; k += 10) {
		expect_value(&map, k * 7919, k * 7919 * 3);
		const unsigned char *at = cs_u64map_get(&map, k * 7919);
		cr_assert_lt((size_t)(at - map.values), map.count * map.value_size, "key %llu's value past the dense entries",
			     (unsigned long long)(k * 7919));
	}
}
