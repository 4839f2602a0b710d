/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared by the two halves of a connection: conn.c (the state machine,
 * reading, timers, open and close) and conn_response.c (responses,
 * formatted and written). Not for the rest of the server: conn.h is.
 */
#ifndef CS_CONN_INTERNAL_H
#define CS_CONN_INTERNAL_H

#include <stdint.h>

#include "clock.h"
#include "conn.h"

/* Outcome of one step of the state machine. */
enum step {
	STEP_AGAIN,  /* progress made: step again */
	STEP_WAIT,   /* wait for a socket edge or the timer */
	STEP_CLOSED, /* the connection is gone: do not touch it */
};

static inline uint64_t conn_ms_after(uint64_t start_ns, uint32_t ms)
{
	return start_ns + (uint64_t)ms * CS_NS_PER_MS;
}

/* WRITING: sends what it can of the response; when it is all out, reads
 * the next request or finishes the connection. */
enum step conn_step_write(struct cs_conn *c);

#endif /* CS_CONN_INTERNAL_H */
