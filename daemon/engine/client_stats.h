/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The engine's statistics of the target's local clients (struct
 * cs_client_stats): processes on this host whose connections to a target
 * port the probes followed from their end (cs_ev_client_read). Their own
 * delay reading the answers is in every latency they measure and in none
 * of the server's figures. Filled by clients.c; read by the analysis and
 * the renderers.
 */
#ifndef CS_CLIENT_STATS_H
#define CS_CLIENT_STATS_H

#include <stdint.h>

#include "connscope.h"
#include "hist.h"

/* Client processes told apart; the reads of more are counted only. */
#define CS_CLIENTS_MAX 16
/* A client's threads whose CPU and run-queue time are followed; more are counted. */
#define CS_CLIENT_THREADS_MAX 32

/* One client thread: its totals at its first and its latest read. */
struct cs_client_thread {
	uint32_t tid;
	uint32_t reads;
	uint64_t first_ns, last_ns;
	uint64_t first_cpu_ns, last_cpu_ns;   /* its CPU time so far, then */
	uint64_t first_runq_ns, last_runq_ns; /* its run-queue time so far, then */
};

struct cs_client_stats {
	uint32_t tgid;
	uint32_t threads_seen;     /* threads that read: more than CS_CLIENT_THREADS_MAX are counted only */
	char comm[CS_COMM_LEN];    /* its reading thread's name (the latest) */
	uint64_t connections;      /* connections whose first answer's read was seen */
	uint64_t reads;            /* reads of answers */
	uint64_t joined;           /* of the server's timed requests, those joined to the client's read */
	struct cs_client_thread threads[CS_CLIENT_THREADS_MAX];
	struct cs_hist *read_delay_ns; /* an answer's arrival in its socket -> the client's read */
	struct cs_hist *runq_ns;       /* of that, the reading thread waiting for a CPU */
	struct cs_hist *seen_ns;       /* joined requests: the server's latency plus the read delay,
	                                  what the client measures */
	struct cs_hist *server_ns;     /* the same requests: the server's latency alone */
};

/* Its threads' CPU and run-queue time over the span their reads cover, summed. */
struct cs_client_load {
	uint64_t span_ns;       /* the longest of its threads' first read -> last read */
	uint64_t cpu_ns;        /* grown over each thread's span */
	uint64_t runq_ns;
	uint32_t threads;       /* followed, with two reads or more */
	double busiest_share;   /* the busiest thread's CPU over its span (0..1) */
	double busiest_runq_share; /* its run-queue time over its span */
};

void cs_client_load(const struct cs_client_stats *client, struct cs_client_load *load);

#endif /* CS_CLIENT_STATS_H */
