/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --max-conns: a count of open connections the acceptor waits on before
 * each accept(), as Tomcat's acceptor waits on its LimitLatch. While N
 * connections are open the acceptor sleeps on a condition variable (off
 * its CPU, not in accept()), and new connections wait in the listen
 * queue; each close frees a slot and wakes it.
 */
#ifndef CS_CONN_LIMIT_H
#define CS_CONN_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

/* max 0: no limit (acquire and release do nothing). Call before any thread starts. */
void cs_conn_limit_init(uint32_t max_conns);
/* Blocks while max_conns connections are open; takes a slot. Returns false
 * (no slot taken) once cs_stop_requested is set and cs_conn_limit_stop ran. */
bool cs_conn_limit_acquire(void);
/* A connection (or a slot taken for one that never opened) is gone. */
void cs_conn_limit_release(void);
/* Wakes a waiting acceptor to see cs_stop_requested. */
void cs_conn_limit_stop(void);
/* Times the acceptor waited for a slot. */
uint64_t cs_conn_limit_waits(void);

#endif /* CS_CONN_LIMIT_H */
