/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The connscope engine: wire records in, statistics out.
 *
 * Pure code: no BPF, no I/O, no clock. Every record carries its own
 * timestamp, so the same engine serves the live daemon, offline replay of a
 * recorded trace, and unit tests feeding synthetic streams.
 */
#ifndef CS_ENGINE_H
#define CS_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "connscope.h"
#include "hist.h"

/* A thread that called accept() on a listener. */
struct cs_worker_stats {
	uint32_t tid;
	uint32_t pid;
	char comm[CS_COMM_LEN];
	uint64_t accepts;        /* connections it took */
	uint64_t eagain;         /* accept() calls that found the queue empty */
	uint64_t errors;         /* other accept() failures (EMFILE, ...) */
	uint64_t in_accept_ns;   /* time spent inside accept() calls */
};

/* One listening socket of a port (SO_REUSEPORT gives several). */
struct cs_listener_socket {
	uint64_t sk;
	uint32_t drops_first;    /* sk_drops when first seen */
	uint32_t drops_last;     /* sk_drops when last seen */
	uint32_t backlog_limit;
	uint32_t backlog_last;
};

/* Everything known about one listening port. */
struct cs_listener_stats {
	uint16_t port;

	uint64_t accepts;            /* successful accept() calls */
	uint64_t accepts_unmatched;  /* accepted sockets never seen entering the
	                                queue (queued before attach): no wait */
	uint64_t eagain;             /* accept() calls that returned EAGAIN */
	uint64_t accept_errors;      /* other failed accept() calls */
	uint64_t first_accept_ns;
	uint64_t last_accept_ns;
	struct cs_hist *accept_wait_ns; /* ESTABLISHED -> accept() return */

	/* queue depth seen by accept() calls (what was left behind) */
	uint64_t backlog_at_accept_sum;
	uint32_t backlog_at_accept_max;

	/* queue depth from the periodic walk of listening sockets */
	uint64_t backlog_samples;        /* (socket, sample) pairs */
	uint64_t backlog_full_samples;   /* of which the queue was full */
	uint64_t backlog_nonempty_samples;
	uint64_t backlog_sample_sum;
	uint32_t backlog_max;
	uint32_t backlog_limit;

	/* local clients whose SYNs to this port were retransmitted */
	uint64_t handshakes_retransmitted;
	uint64_t handshakes_failed;      /* the client gave up */
	uint64_t handshakes_delayed_1s;  /* delayed by >= 1 s */
	struct cs_hist *handshake_extra_ns; /* first SYN -> the SYN that got in */

	struct cs_listener_socket *sockets;
	size_t socket_count, socket_cap;
	struct cs_worker_stats *workers;
	size_t worker_count, worker_cap;
};

struct cs_engine_totals {
	uint64_t records;                  /* records accepted */
	uint64_t by_type[CS_EV_TYPE_MAX];
	uint64_t malformed;                /* records rejected as malformed */
	uint64_t forks;
	uint64_t exits;
	uint64_t first_ts_ns;              /* earliest record */
	uint64_t last_ts_ns;               /* latest record */
};

struct cs_engine {
	struct cs_listener_stats *listeners;
	size_t listener_count, listener_cap;
	struct cs_engine_totals totals;
};

struct cs_engine *cs_engine_new(void);
void cs_engine_free(struct cs_engine *engine);

/*
 * Feed one raw wire record of len bytes. Returns 0, or -EINVAL when the
 * record is malformed (unknown type, wrong size): it is counted in
 * totals.malformed and otherwise ignored. -ENOMEM when the engine could not
 * grow a table (the record is counted as malformed too, never silently lost).
 */
int cs_engine_feed(struct cs_engine *engine, const void *record, size_t len);

/* Expected size of a record type, 0 if unknown. */
size_t cs_record_size(uint16_t type);

/* Listener of a port, or NULL. */
const struct cs_listener_stats *cs_engine_listener(const struct cs_engine *engine, uint16_t port);

/* Sum of drops over a listener's sockets since each was first seen. */
uint64_t cs_listener_drops(const struct cs_listener_stats *listener);

/* The worker that took the most accepts, or NULL when none did. */
const struct cs_worker_stats *cs_listener_busiest_worker(const struct cs_listener_stats *listener);

/* Threads that took at least one connection. */
size_t cs_listener_accepting_threads(const struct cs_listener_stats *listener);

#endif /* CS_ENGINE_H */
