// SPDX-License-Identifier: BSD-2-Clause
#include "u64map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define INITIAL_CAPACITY 64
/* A slot holds an entry's index + 1 in 32 bits. */
#define ENTRIES_MAX (UINT32_MAX - 1u)

/* Kernel pointers and ports share low bits: mix before masking. */
static size_t slot_of(uint64_t key, size_t capacity)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (size_t)key & (capacity - 1);
}

/* The entries' arrays hold at most half the slots: the load never exceeds it. */
static size_t entries_for(size_t capacity)
{
	return capacity / 2;
}

static unsigned char *value_at(const struct cs_u64map *map, size_t entry)
{
	return map->values + entry * map->value_size;
}

/* Slots for capacity, entry arrays for half of it; the entries kept (realloc). */
static int allocate(struct cs_u64map *map, size_t capacity)
{
	uint32_t *slots = calloc(capacity, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	uint64_t *keys = realloc(map->keys, entries_for(capacity) * sizeof(*keys));
	if (keys)
		map->keys = keys;
	size_t values_bytes = entries_for(capacity) * map->value_size;
	unsigned char *values = keys ? realloc(map->values, values_bytes ? values_bytes : 1) : NULL;
	if (!values) {
		free(slots);
		return -ENOMEM;
	}
	map->values = values;
	free(map->slots);
	map->slots = slots;
	map->capacity = capacity;
	return 0;
}

int cs_u64map_init(struct cs_u64map *map, size_t value_size, size_t max_count)
{
	memset(map, 0, sizeof(*map));
	map->value_size = value_size;
	map->max_count = max_count;
	if (allocate(map, INITIAL_CAPACITY)) {
		cs_u64map_free(map);
		return -ENOMEM;
	}
	return 0;
}

void cs_u64map_free(struct cs_u64map *map)
{
	free(map->slots);
	free(map->keys);
	free(map->values);
	memset(map, 0, sizeof(*map));
}

/* key's slot, or the empty slot where it would go. Inline: every get, put and remove probes through it. */
static inline size_t find(const struct cs_u64map *map, uint64_t key)
{
	size_t mask = map->capacity - 1;
	for (size_t slot = slot_of(key, map->capacity);; slot = (slot + 1) & mask) {
		uint32_t index = map->slots[slot];
		if (!index || map->keys[index - 1] == key)
			return slot;
	}
}

void *cs_u64map_get(const struct cs_u64map *map, uint64_t key)
{
	/* An empty table holds nothing (and a freed one has no slots): the engine asks many that stay empty. */
	if (!key || !map->count)
		return NULL;
	uint32_t index = map->slots[find(map, key)];
	return index ? value_at(map, index - 1) : NULL;
}

/*
 * Twice the slots, the entries where they are: the index is rebuilt from
 * the old slots in their order, so the new layout is the one a table of
 * inline entries would have had.
 */
static int grow(struct cs_u64map *map)
{
	uint32_t *old_slots = map->slots;
	size_t old_capacity = map->capacity;
	map->slots = NULL; /* allocate() must not free the old index: it is read below */
	if (allocate(map, old_capacity * 2)) {
		map->slots = old_slots;
		map->capacity = old_capacity;
		return -ENOMEM;
	}
	for (size_t i = 0; i < old_capacity; i++)
		if (old_slots[i])
			map->slots[find(map, map->keys[old_slots[i] - 1])] = old_slots[i];
	free(old_slots);
	return 0;
}

void *cs_u64map_put(struct cs_u64map *map, uint64_t key, int *created)
{
	if (created)
		*created = 0;
	if (!key || !map->slots)
		return NULL;
	size_t slot = find(map, key);
	if (map->slots[slot])
		return value_at(map, map->slots[slot] - 1);
	if ((map->max_count && map->count >= map->max_count) || map->count >= ENTRIES_MAX)
		return NULL;
	/* Keep the load at or under one half: probes stay short. */
	if ((map->count + 1) * 2 > map->capacity) {
		if (grow(map))
			return NULL;
		slot = find(map, key);
	}
	size_t entry = map->count++;
	map->keys[entry] = key;
	memset(value_at(map, entry), 0, map->value_size);
	map->slots[slot] = (uint32_t)entry + 1;
	if (created)
		*created = 1;
	return value_at(map, entry);
}

/* The last entry moves into the hole entry left: the entries stay dense. */
static void fill_entry_hole(struct cs_u64map *map, size_t hole)
{
	size_t last = map->count - 1;
	if (hole != last) {
		uint64_t key = map->keys[last];
		size_t mask = map->capacity - 1, slot = slot_of(key, map->capacity);
		while (map->slots[slot] != last + 1)
			slot = (slot + 1) & mask;
		map->slots[slot] = (uint32_t)hole + 1;
		map->keys[hole] = key;
		memcpy(value_at(map, hole), value_at(map, last), map->value_size);
	}
	map->count--;
}

int cs_u64map_remove(struct cs_u64map *map, uint64_t key)
{
	if (!key || !map->count)
		return 0;
	size_t mask = map->capacity - 1;
	size_t hole = find(map, key);
	uint32_t removed = map->slots[hole];
	if (!removed)
		return 0;
	/* Backward shift: pull later members of the probe run into the hole. */
	for (size_t next = (hole + 1) & mask; map->slots[next]; next = (next + 1) & mask) {
		size_t home = slot_of(map->keys[map->slots[next] - 1], map->capacity);
		/* Move next into hole unless its home lies cyclically in (hole, next]. */
		int home_after_hole = hole <= next ? (home > hole && home <= next)
						   : (home > hole || home <= next);
		if (home_after_hole)
			continue;
		map->slots[hole] = map->slots[next];
		hole = next;
	}
	map->slots[hole] = 0;
	fill_entry_hole(map, removed - 1);
	return 1;
}

void cs_u64map_each(const struct cs_u64map *map, void (*visit)(uint64_t key, void *value, void *ctx),
		    void *ctx)
{
	for (size_t i = 0; i < map->capacity; i++)
		if (map->slots[i])
			visit(map->keys[map->slots[i] - 1], value_at(map, map->slots[i] - 1), ctx);
}

size_t cs_u64map_remove_if(struct cs_u64map *map, int (*stale)(uint64_t key, const void *value, void *ctx),
			   void *ctx)
{
	size_t removed = 0;
	/*
	 * After a removal the slot is checked again: the backward shift may
	 * have pulled a later entry into it. An entry only moves towards its
	 * home, into the hole, so no entry at or after the cursor can move
	 * behind it unseen; entries that wrap around from the table's start
	 * were seen already and are merely checked twice.
	 */
	for (size_t slot = 0; map->slots && slot < map->capacity;) {
		uint32_t index = map->slots[slot];
		if (index && stale(map->keys[index - 1], value_at(map, index - 1), ctx)) {
			cs_u64map_remove(map, map->keys[index - 1]);
			removed++;
			continue;
		}
		slot++;
	}
	return removed;
}

void *cs_u64map_slot(const struct cs_u64map *map, size_t slot, uint64_t *key)
{
	if (!map->slots || slot >= map->capacity || !map->slots[slot])
		return NULL;
	*key = map->keys[map->slots[slot] - 1];
	return value_at(map, map->slots[slot] - 1);
}
