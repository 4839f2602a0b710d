/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The engine's tables, found or added (tables.c); not for the engine's
 * users. Each returns NULL when its table cannot grow.
 */
#ifndef CS_TABLES_H
#define CS_TABLES_H

#include <stdint.h>

#include "engine.h"

/* The listener of port, added on its first record (at most 1024). */
struct cs_listener_stats *cs_get_listener(struct cs_engine *engine, uint16_t port);
/* A listening socket of listener, and a thread that accepts on it. */
struct cs_listener_socket *cs_get_socket(struct cs_listener_stats *listener, uint64_t sk, uint32_t drops_now);
struct cs_worker_stats *cs_get_worker(struct cs_listener_stats *listener, uint32_t tid, uint32_t pid,
				      const char *comm);
/* Free what a listener holds (not the listener itself: it is in an array). */
void cs_listener_free(struct cs_listener_stats *listener);

struct cs_thread_stats *cs_get_thread(struct cs_engine *engine, uint32_t tid, uint32_t tgid,
				      const char *comm);

/* A client address, hashed (never 0). */
uint32_t cs_addr_hash(const uint8_t addr[16]);

#endif /* CS_TABLES_H */
