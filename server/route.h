/* SPDX-License-Identifier: BSD-2-Clause */
/* The reference server's routes: request-target to route, pure code. */
#ifndef CS_ROUTE_H
#define CS_ROUTE_H

#include <stddef.h>
#include <stdint.h>

enum cs_route {
	CS_ROUTE_NOT_FOUND,
	CS_ROUTE_ROOT,  /* /          "ok\n" */
	CS_ROUTE_BYTES, /* /bytes/N   N-byte body */
	CS_ROUTE_SLEEP, /* /sleep/MS  answer after MS ms, loop not blocked */
	CS_ROUTE_BLOCK, /* /block/MS  block the event loop MS ms (off-CPU) */
	CS_ROUTE_SPIN,  /* /spin/MS   burn CPU MS ms (on-CPU) */
	CS_ROUTE_SPLIT, /* /split/N   N-byte body, written apart from the header */
};

/* Largest arguments; a request above them gets a 400. */
#define CS_ROUTE_MAX_BYTES (64ull << 20)
#define CS_ROUTE_MAX_SLEEP_MS 600000ull
#define CS_ROUTE_MAX_BLOCK_MS 60000ull
#define CS_ROUTE_MAX_SPIN_MS 60000ull

/*
 * Matches target (the query string is ignored). Routes with a number need
 * 1 to 12 decimal digits and nothing after them, else CS_ROUTE_NOT_FOUND;
 * the number goes to *arg. Range checks are the handlers'.
 */
enum cs_route cs_route_match(const char *target, size_t len, uint64_t *arg);

#endif /* CS_ROUTE_H */
