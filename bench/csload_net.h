/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * csload's network side: a run shared by the worker threads, and one
 * worker per thread, each an epoll loop over its share of the connections.
 */
#ifndef CSLOAD_NET_H
#define CSLOAD_NET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "csload.h"
#include "csload_stats.h"

#define CSL_REQ_MAX (CSL_MAX_PATH_LEN + 256)

struct ssl_ctx_st; /* OpenSSL's SSL_CTX */

/* What all workers share. Set up by csl_run_init(), read-only afterwards
 * except for the atomics. */
struct csl_run {
	const struct csl_config *cfg;
	uint64_t start_ns;      /* common start: the first intended time */
	uint64_t time_limit_ns; /* start + the run's time bound */
	int log_fd;             /* --log, or -1 */
	char host_header[80];
	char request[CSL_MAX_PATHS][CSL_REQ_MAX];
	int request_len[CSL_MAX_PATHS];
	struct ssl_ctx_st *tls_ctx; /* --tls: the context of every connection's SSL */

	atomic_int stop;              /* 1: stop issuing (signal, or nothing connects) */
	atomic_uint_fast64_t tickets; /* closed loop with --requests */
	atomic_uint_fast64_t connect_ok;
	atomic_uint_fast64_t connect_fail;
	atomic_int first_connect_errno; /* why the first connect failed */
	atomic_int emfile_reported;
	atomic_int log_errno;        /* a failed --log write */
	atomic_uint_fast64_t tls_ok; /* --tls: handshakes completed */
	atomic_uint_fast64_t tls_fail;
	atomic_int tls_error_taken; /* tls_error is being or was written */
	char tls_error[192];        /* why the first handshake failed */
};

struct csl_worker;

/* Prepares the shared state (request texts, Host header, --tls's
 * context). 0, or -1 with a message on stderr. */
int csl_run_init(struct csl_run *run, const struct csl_config *cfg, int log_fd);
/* Frees what csl_run_init() allocated (not run itself). */
void csl_run_free(struct csl_run *run);

/* csload_tls.c: the client context of --tls (no certificate check, every
 * connection a full handshake, --tls-version). NULL with a message on
 * stderr when OpenSSL cannot make it. */
struct ssl_ctx_st *csl_tls_ctx_new(const struct csl_config *cfg);
void csl_tls_ctx_free(struct ssl_ctx_st *ctx);

/*
 * Creates worker `index` (of cfg->threads) for `nslots` connections. Returns
 * NULL with a message on stderr when it cannot (memory, epoll, timerfd).
 */
struct csl_worker *csl_worker_new(struct csl_run *run, unsigned int index, unsigned int nslots);
/* Thread body: waits for run->start_ns, runs, returns NULL. */
void *csl_worker_main(void *arg);
/* The worker's statistics, valid after its thread was joined. */
struct csl_stats *csl_worker_stats(struct csl_worker *w);
void csl_worker_free(struct csl_worker *w);

uint64_t csl_now_ns(void);

#endif /* CSLOAD_NET_H */
