/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Route handlers. handle_block and handle_spin are the two pathologies a
 * profiler should find by name in a worker's stack, so they are external,
 * noinline and noclone (no "handle_block.constprop.0" in a stack trace).
 */
#ifndef CS_HANDLERS_H
#define CS_HANDLERS_H

#include <stdint.h>

#include "conn.h"
#include "http_parse.h"

/* Routes a parsed request (framing already checked) and sets up c's
 * response; never closes c. */
void cs_handle_request(struct cs_conn *c, const struct cs_http_request *req);

/* A /sleep request's timer expired: answer it. */
void cs_handle_wake(struct cs_conn *c);

/* gcc may clone a function it can specialise; clang has no such clones
 * and no noclone attribute. */
#if defined(__GNUC__) && !defined(__clang__)
#define CS_IN_STACKS __attribute__((noinline, noclone))
#else
#define CS_IN_STACKS __attribute__((noinline))
#endif

/* Blocks the calling thread (its event loop) for ms, off-CPU. */
void handle_block(uint64_t ms) CS_IN_STACKS;
/* Keeps the calling thread on-CPU for ms. */
void handle_spin(uint64_t ms) CS_IN_STACKS;

#endif /* CS_HANDLERS_H */
