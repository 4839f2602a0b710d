// SPDX-License-Identifier: BSD-2-Clause
#include "u64map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define INITIAL_CAPACITY 64

/* Kernel pointers and ports share low bits: mix before masking. */
static size_t slot_of(uint64_t key, size_t capacity)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (size_t)key & (capacity - 1);
}

static int allocate(struct cs_u64map *map, size_t capacity)
{
	map->keys = calloc(capacity, sizeof(*map->keys));
	map->values = calloc(capacity, map->value_size);
	if (!map->keys || !map->values) {
		free(map->keys);
		free(map->values);
		map->keys = NULL;
		map->values = NULL;
		return -ENOMEM;
	}
	map->capacity = capacity;
	return 0;
}

int cs_u64map_init(struct cs_u64map *map, size_t value_size, size_t max_count)
{
	memset(map, 0, sizeof(*map));
	map->value_size = value_size;
	map->max_count = max_count;
	return allocate(map, INITIAL_CAPACITY);
}

void cs_u64map_free(struct cs_u64map *map)
{
	free(map->keys);
	free(map->values);
	memset(map, 0, sizeof(*map));
}

static size_t find(const struct cs_u64map *map, uint64_t key)
{
	size_t mask = map->capacity - 1;
	for (size_t slot = slot_of(key, map->capacity);; slot = (slot + 1) & mask) {
		if (map->keys[slot] == key || map->keys[slot] == 0)
			return slot;
	}
}

void *cs_u64map_get(const struct cs_u64map *map, uint64_t key)
{
	if (!key || !map->keys)
		return NULL;
	size_t slot = find(map, key);
	return map->keys[slot] ? map->values + slot * map->value_size : NULL;
}

static int grow(struct cs_u64map *map)
{
	struct cs_u64map old = *map;
	if (allocate(map, old.capacity * 2)) {
		*map = old;
		return -ENOMEM;
	}
	for (size_t i = 0; i < old.capacity; i++) {
		if (!old.keys[i])
			continue;
		size_t slot = find(map, old.keys[i]);
		map->keys[slot] = old.keys[i];
		memcpy(map->values + slot * map->value_size, old.values + i * old.value_size, old.value_size);
	}
	free(old.keys);
	free(old.values);
	return 0;
}

void *cs_u64map_put(struct cs_u64map *map, uint64_t key, int *created)
{
	if (created)
		*created = 0;
	if (!key || !map->keys)
		return NULL;
	size_t slot = find(map, key);
	if (map->keys[slot])
		return map->values + slot * map->value_size;
	if (map->max_count && map->count >= map->max_count)
		return NULL;
	/* Keep the load at or under one half: probes stay short. */
	if ((map->count + 1) * 2 > map->capacity) {
		if (grow(map))
			return NULL;
		slot = find(map, key);
	}
	map->keys[slot] = key;
	memset(map->values + slot * map->value_size, 0, map->value_size);
	map->count++;
	if (created)
		*created = 1;
	return map->values + slot * map->value_size;
}

int cs_u64map_remove(struct cs_u64map *map, uint64_t key)
{
	if (!key || !map->keys)
		return 0;
	size_t mask = map->capacity - 1;
	size_t hole = find(map, key);
	if (!map->keys[hole])
		return 0;
	/* Backward shift: pull later members of the probe run into the hole. */
	for (size_t next = (hole + 1) & mask; map->keys[next]; next = (next + 1) & mask) {
		size_t home = slot_of(map->keys[next], map->capacity);
		/* Move next into hole unless its home lies cyclically in (hole, next]. */
		int home_after_hole = hole <= next ? (home > hole && home <= next)
						   : (home > hole || home <= next);
		if (home_after_hole)
			continue;
		map->keys[hole] = map->keys[next];
		memcpy(map->values + hole * map->value_size, map->values + next * map->value_size,
		       map->value_size);
		hole = next;
	}
	map->keys[hole] = 0;
	map->count--;
	return 1;
}

void cs_u64map_each(const struct cs_u64map *map, void (*visit)(uint64_t key, void *value, void *ctx),
		    void *ctx)
{
	for (size_t i = 0; i < map->capacity; i++)
		if (map->keys[i])
			visit(map->keys[i], map->values + i * map->value_size, ctx);
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
	for (size_t slot = 0; map->keys && slot < map->capacity;) {
		uint64_t key = map->keys[slot];
		if (key && stale(key, map->values + slot * map->value_size, ctx)) {
			cs_u64map_remove(map, key);
			removed++;
			continue;
		}
		slot++;
	}
	return removed;
}

void *cs_u64map_slot(const struct cs_u64map *map, size_t slot, uint64_t *key)
{
	if (!map->keys || slot >= map->capacity || !map->keys[slot])
		return NULL;
	*key = map->keys[slot];
	return map->values + slot * map->value_size;
}
