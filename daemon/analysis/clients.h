/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The local clients as the analysis sees them: each client's own delay
 * reading its answers, what it measured of the server's requests against
 * what the server took, how busy its threads were; and the condition
 * client_bound. Numbers and names only (the words are the renderers').
 * Pure: from the engine's client statistics.
 */
#ifndef CS_ANALYSIS_CLIENTS_H
#define CS_ANALYSIS_CLIENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"

/* One client, in figures. */
struct cs_client_view {
	uint32_t tgid;
	char comm[CS_COMM_LEN];
	uint32_t threads;            /* threads that read answers */
	uint64_t connections;
	uint64_t reads;              /* answers read */
	uint64_t joined;             /* of the server's requests, joined to their client's read */
	uint64_t read_delay_p50_ns, read_delay_p90_ns, read_delay_p99_ns, read_delay_max_ns;
	uint64_t runq_p50_ns, runq_p99_ns; /* of the read delay, waiting for a CPU */
	uint64_t seen_p50_ns, seen_p99_ns;     /* joined requests: what the client measured */
	uint64_t server_p50_ns, server_p99_ns; /* the same requests: the server's own latency */
	double busy_share;           /* its busiest thread: CPU time over the span of its reads */
	double runq_share;           /* that thread's run-queue time over the same span */
	double cpu_cores;            /* all its threads' CPU time over the longest span */
	bool bound;                  /* its own delay is a large part of what it measured */
};

/*
 * A client's view from its statistics. run_p99_ns: the server's p99 over
 * the run, for a client none of whose reads was joined to its request.
 */
void cs_client_view_of(const struct cs_client_stats *client, uint64_t run_p99_ns, struct cs_client_view *view);

#endif /* CS_ANALYSIS_CLIENTS_H */
