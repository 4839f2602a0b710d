/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Hash table from a non-zero 64-bit key to a fixed-size value. An index
 * of slots (linear probing with backward-shift deletion, no tombstones, so
 * a table under churn never degrades) points into dense arrays of the
 * entries' keys and values: the empty slots a load of at most one half
 * leaves cost 4 bytes each, not a whole value. Pure code.
 *
 * A value's address holds until the next put that creates an entry or the
 * next removal: either may move entries.
 */
#ifndef CS_U64MAP_H
#define CS_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct cs_u64map {
	uint32_t *slots;       /* capacity of them: 0 empty, else the entry's index + 1 */
	uint64_t *keys;        /* the entries' keys, [0, count) */
	unsigned char *values; /* the entries' values, [0, count), value_size each */
	size_t value_size;
	size_t count;
	size_t capacity;       /* slots: a power of two, at least twice count */
	size_t max_count;      /* refuse inserts beyond this (bounded memory) */
};

/* max_count 0: no bound. Returns 0 or -ENOMEM. */
int cs_u64map_init(struct cs_u64map *map, size_t value_size, size_t max_count);
void cs_u64map_free(struct cs_u64map *map);

/* The value of key, or NULL. */
void *cs_u64map_get(const struct cs_u64map *map, uint64_t key);

/*
 * The value of key, inserted zero-filled when missing. NULL when the table
 * is at max_count or memory runs out. *created says which happened.
 */
void *cs_u64map_put(struct cs_u64map *map, uint64_t key, int *created);

/* Remove key; returns 1 if it was there. */
int cs_u64map_remove(struct cs_u64map *map, uint64_t key);

/*
 * Remove every entry for which stale(key, value, ctx) is true, in one pass
 * over the table; returns how many went.
 */
size_t cs_u64map_remove_if(struct cs_u64map *map, int (*stale)(uint64_t key, const void *value, void *ctx),
			   void *ctx);

/* The entry in slot (0 <= slot < capacity): its value and *key, or NULL when empty. */
void *cs_u64map_slot(const struct cs_u64map *map, size_t slot, uint64_t *key);

/* Visit every entry, in slot order; the callback must not modify the table. */
void cs_u64map_each(const struct cs_u64map *map, void (*visit)(uint64_t key, void *value, void *ctx),
		    void *ctx);

#endif /* CS_U64MAP_H */
