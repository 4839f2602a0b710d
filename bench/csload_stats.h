/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * csload statistics: one struct per worker thread, merged at the end.
 * Pure code: no I/O, no clock; callers pass the values.
 */
#ifndef CSLOAD_STATS_H
#define CSLOAD_STATS_H

#include <stdint.h>

#include "csload.h"
#include "hist.h"

#define CSL_SLOW_CONNECT_NS 1000000000ull /* a connect this slow met a SYN retransmit */

struct csl_stats {
	unsigned int npaths;
	struct cs_hist *latency;           /* completed responses, ns from intended */
	struct cs_hist *connect;           /* successful connects, ns */
	struct cs_hist *send_lag;          /* request fully written - intended, ns */
	struct cs_hist *service;           /* completed responses, ns from when the
	                                             client began the request (connect or send) */
	struct cs_hist *from_send;         /* completed responses, ns from the
	                                             request's last byte written */
	struct cs_hist *from_send_running; /* the same, less the client thread's own
	                                             waits for a CPU meanwhile (--busy-poll) */
	struct cs_hist *handshake;         /* --tls: completed handshakes, ns from
	                                             the TCP connect's end */
	struct cs_hist *path_latency[CSL_MAX_PATHS];
	uint64_t path_requests[CSL_MAX_PATHS]; /* completed responses per path */
	uint64_t path_errors[CSL_MAX_PATHS];   /* failed requests per path */

	uint64_t requests; /* completed responses, any status */
	uint64_t errors[CSL_ERR__COUNT];
	uint64_t attempts; /* requests started (completed + failed) */
	uint64_t connects; /* successful connects */
	uint64_t connects_over_1s;
	uint64_t reconnects;        /* keep-alive: connects after the slot's first */
	uint64_t tls12, tls13;      /* --tls: handshakes completed at each version */
	uint64_t tls_close_notify;  /* --tls: closes with the client's close_notify */
	uint64_t idle_closes;       /* the server closed an idle keep-alive connection */
	uint64_t unexpected_bytes;  /* bytes after a complete response */
	uint64_t unsent;            /* open loop: due before the end but never sent */
	uint64_t status_classes[6]; /* [1] 1xx .. [5] 5xx; [0] anything else */
	uint64_t start_ns;          /* first intended time */
	uint64_t end_ns;            /* last completion, or the time issuing stopped */
};

/* The numbers a report shows, computed from a merged csl_stats. */
struct csl_summary {
	double duration_s;
	double rate_rps;
	uint64_t errors_total; /* every kind but non_2xx (those completed) */
	struct {
		double p50, p75, p90, p99, p999, p9999, max, mean, min;
	} latency_us;
	struct {
		double p50, p99, max;
		uint64_t count;
	} connect_us;
	struct {
		double p50, p99, max;
	} send_lag_us;
	struct {
		double p50, p99, max;
		uint64_t count;
	} handshake_us;
	struct csl_span_us {
		double p50, p90, p99, p999, max;
	} service_us, from_send_us, from_send_running_us;
	uint64_t from_send_running_count; /* 0: not measured (no --busy-poll) */
	struct {
		double p50, p99, max;
	} path_us[CSL_MAX_PATHS];
};

/* Returns 0 or -1 (out of memory; nothing left allocated). */
int csl_stats_init(struct csl_stats *st, unsigned int npaths);
void csl_stats_free(struct csl_stats *st);
void csl_stats_merge(struct csl_stats *into, const struct csl_stats *from);

void csl_stats_response(struct csl_stats *st, unsigned int path, uint64_t latency_ns, int status);
/*
 * The same response timed from when the client began the request (its
 * connect, or its send on an open connection), and from when the request
 * was fully written. A server sees at most the first (without the client's
 * own timer and scheduling lag) and at least the second: on a new
 * connection, the client's time between its connect and its send is its
 * own, unless the connection waited in the accept queue meanwhile.
 */
void csl_stats_service(struct csl_stats *st, uint64_t service_ns, uint64_t from_send_ns);
/*
 * The same from_send, less the time the client's thread itself waited for
 * a CPU meanwhile (its schedstat run_delay): on a busy machine a client
 * that is not running reads a response late, and no server sees that. A
 * server's own time lies between this and from_send.
 */
void csl_stats_from_send_running(struct csl_stats *st, uint64_t ns);
/* A request to path failed (every kind but non_2xx, which completes). */
void csl_stats_error(struct csl_stats *st, unsigned int path, enum csl_err kind);
void csl_stats_connect(struct csl_stats *st, uint64_t connect_ns);
/* --tls: a handshake completed in handshake_ns at TLS 1.`minor` (2 or 3). */
void csl_stats_handshake(struct csl_stats *st, uint64_t handshake_ns, unsigned int minor);
/* The request was written lag_ns after its intended time: client-side
 * delay (timer wake-up, a busy connection, the connect), not the server's. */
void csl_stats_sent(struct csl_stats *st, uint64_t lag_ns);
void csl_stats_span(struct csl_stats *st, uint64_t start_ns, uint64_t end_ns);

void csl_stats_summarize(const struct csl_stats *st, struct csl_summary *out);

/* JSON key of an error kind ("connect_errors", "eof_before_response", ...). */
const char *csl_err_name(enum csl_err kind);

#endif /* CSLOAD_STATS_H */
