/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * csload: a small, precise HTTP/1.1 load generator, the ground truth for
 * connscope's tests and benchmarks.
 *
 * Module map (each file has one job):
 *   csload.c          main(): options -> run -> report, as a list of steps
 *   csload_opts.c     command line and target parsing (pure, no I/O but the
 *                     FILE * it reports errors to)
 *   csload_http.c     request builder and incremental response parser (pure)
 *   csload_stats.c    histograms and counters (pure, no I/O)
 *   csload_report.c   human and JSON renderers, to a FILE *
 *   csload_timer.c    indexed min-heap of deadlines (pure)
 *   csload_net.c      one worker thread: epoll loop over its connections,
 *                     and the worker's life (csload_worker.h: its state)
 *   csload_slot.c     a connection slot's requests: connect, send, complete
 *   csload_events.c   what the worker's epoll set and timers report
 *   csload_tls.c      --tls: the OpenSSL context, a slot's handshake, and
 *                     the reads and writes of every connection, plain or TLS
 *   csload_selftest.c `--self-test`: checks of the pure modules
 *
 * Every time is CLOCK_MONOTONIC nanoseconds, the clock of
 * bpf_ktime_get_ns(), so a request line of `--log` can be matched with what
 * the probes saw.
 */
#ifndef CSLOAD_H
#define CSLOAD_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#define CSL_MAX_PATHS 16 /* --path plus up to 15 --mix entries */
#define CSL_MAX_PATH_LEN 1024
#define CSL_MAX_CONNECTIONS 100000
#define CSL_MAX_THREADS 256
#define CSL_DEFAULT_DURATION_S 10.0 /* when neither --duration nor --requests */
#define CSL_HARD_CAP_S 60.0         /* time bound of a --requests-only run */
#define CSL_MAX_DURATION_S 86400.0
#define CSL_DRAIN_NS 2000000000ull /* wait for in-flight requests after the time is up */

/* Exit codes. */
enum {
	CSL_EXIT_OK = 0,    /* it ran (request errors are reported, not fatal) */
	CSL_EXIT_FAIL = 1,  /* it could not run at all */
	CSL_EXIT_USAGE = 2, /* bad command line, or a target outside loopback */
};

/* What can go wrong with one request. Order is the order of the reports. */
enum csl_err {
	CSL_ERR_CONNECT,         /* connect failed (refused, unreachable, EMFILE...) */
	CSL_ERR_CONNECT_TIMEOUT, /* connect took longer than --connect-timeout-ms */
	CSL_ERR_TLS_HANDSHAKE,   /* --tls: handshake failed, or took longer than
	                          * --connect-timeout-ms */
	CSL_ERR_TIMEOUT,         /* no complete response within --timeout-ms */
	CSL_ERR_EOF_BEFORE,      /* request sent, EOF before any response byte */
	CSL_ERR_EOF_MID,         /* EOF inside a response */
	CSL_ERR_RESET,           /* ECONNRESET (or EPIPE) on a request */
	CSL_ERR_BAD_RESPONSE,    /* unparsable response */
	CSL_ERR_NON_2XX,         /* complete response, status not 2xx */
	CSL_ERR_UNFINISHED,      /* still in flight when the run ended */
	CSL_ERR_OTHER,           /* any other socket error */
	CSL_ERR__COUNT,
};

struct csl_path {
	char path[CSL_MAX_PATH_LEN + 1];
	double fraction; /* share of requests sent to this path */
};

struct csl_config {
	/* target: numeric loopback address, checked by csl_target_parse() */
	char host[64];
	uint16_t port;
	unsigned int tls_version; /* --tls-version: 12 or 13; 0: negotiated */
	struct sockaddr_storage addr;
	socklen_t addr_len;

	unsigned int connections;
	unsigned int threads;
	double duration_s;   /* 0: not given */
	uint64_t requests;   /* 0: not given */
	double time_limit_s; /* the run's time bound, always > 0 */
	double rate;         /* 0: closed loop; else requests/s over all connections */
	double gap_ms;       /* closed loop: idle time between requests on a connection */
	bool keepalive;
	bool tls; /* HTTPS: TLS over each connection (OpenSSL) */
	uint64_t seed;
	unsigned int connect_timeout_ms;
	unsigned int timeout_ms; /* response timeout, from the moment the request is sent */
	unsigned int spin_us;    /* busy-wait this long before a scheduled send */
	bool busy_poll;          /* never sleep: poll sockets, yield the CPU when idle */

	struct csl_path paths[CSL_MAX_PATHS];
	unsigned int npaths; /* paths[0] is --path, the rest --mix */

	const char *json_file; /* NULL, a file name, or "-" for stdout */
	const char *log_file;
	bool quiet;
	bool self_test;
};

#endif /* CSLOAD_H */
