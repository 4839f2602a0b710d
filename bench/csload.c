// SPDX-License-Identifier: BSD-2-Clause
/*
 * csload: a small, precise HTTP/1.1 load generator for loopback servers.
 * See csload.h for the module map and `csload --help` for the options.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "csload.h"
#include "csload_net.h"
#include "csload_opts.h"
#include "csload_report.h"
#include "csload_stats.h"

int csl_self_test(FILE *out); /* csload_selftest.c */

#define START_DELAY_NS 10000000ull /* workers set up before the common start */

static atomic_uint workers_done;

struct thread_arg {
	struct csl_worker *worker;
	pthread_t tid;
	bool started;
};

static void *thread_main(void *p)
{
	struct thread_arg *arg = p;
	csl_worker_main(arg->worker);
	atomic_fetch_add(&workers_done, 1);
	return NULL;
}

/*
 * Each connection is a file descriptor: make sure the soft limit allows all
 * of them, raising the hard limit too if we may (root). 0 or -1.
 */
static int ensure_fd_limit(rlim_t needed)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		perror("csload: getrlimit(RLIMIT_NOFILE)");
		return -1;
	}
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= needed)
		return 0;
	if (rl.rlim_cur == RLIM_INFINITY)
		return 0;
	rlim_t old_max = rl.rlim_max;
	rl.rlim_cur = needed;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < needed)
		rl.rlim_max = needed;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		fprintf(stderr,
			"csload: need %llu file descriptors but RLIMIT_NOFILE allows %llu and raising it failed (%s); "
			"raise it (ulimit -n) or use fewer --connections\n",
			(unsigned long long)needed, (unsigned long long)old_max, strerror(errno));
		return -1;
	}
	return 0;
}

static FILE *open_output(const char *name, const char *what)
{
	if (strcmp(name, "-") == 0)
		return stdout;
	FILE *f = fopen(name, "w");
	if (!f)
		fprintf(stderr, "csload: cannot write %s file '%s': %s\n", what, name, strerror(errno));
	return f;
}

/* What main() sets up for a run, and tears down after it. */
struct load {
	struct csl_run *run;
	struct thread_arg *threads;
	struct csl_stats total;
	FILE *json;
	int log_fd;
	sigset_t sigs; /* SIGINT and SIGTERM, taken by sigtimedwait() */
};

/* The JSON report's file (or stdout) and the request log, if asked for. */
static int open_outputs(const struct csl_config *cfg, struct load *l)
{
	if (cfg->json_file && !(l->json = open_output(cfg->json_file, "JSON")))
		return -1;
	if (cfg->log_file) {
		l->log_fd = open(cfg->log_file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
		if (l->log_fd < 0) {
			fprintf(stderr, "csload: cannot write log file '%s': %s\n", cfg->log_file,
				strerror(errno));
			return -1;
		}
	}
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		perror("csload: signal(SIGPIPE)");
		return -1;
	}
	return 0;
}

/* Shared run state and one worker per thread, connections split evenly. */
static int create_workers(const struct csl_config *cfg, struct load *l)
{
	l->run = calloc(1, sizeof(*l->run));
	l->threads = calloc(cfg->threads, sizeof(*l->threads));
	if (!l->run || !l->threads || csl_stats_init(&l->total, cfg->npaths) < 0) {
		fprintf(stderr, "csload: out of memory\n");
		return -1;
	}
	if (csl_run_init(l->run, cfg, l->log_fd) < 0)
		return -1;
	for (unsigned int t = 0; t < cfg->threads; t++) {
		unsigned int n = cfg->connections / cfg->threads + (t < cfg->connections % cfg->threads);
		l->threads[t].worker = csl_worker_new(l->run, t, n);
		if (!l->threads[t].worker)
			return -1;
	}
	return 0;
}

/* Starts the workers and waits for them. -1 if not all of them started. */
static int run_workers(const struct csl_config *cfg, struct load *l)
{
	struct csl_run *run = l->run;

	/* Signals go to this thread only (sigtimedwait below); workers poll
	 * run->stop. Block them before the workers inherit the mask. */
	sigemptyset(&l->sigs);
	sigaddset(&l->sigs, SIGINT);
	sigaddset(&l->sigs, SIGTERM);
	if (pthread_sigmask(SIG_BLOCK, &l->sigs, NULL) != 0) {
		fprintf(stderr, "csload: pthread_sigmask failed\n");
		return -1;
	}

	/* A common start a little ahead, so every worker is ready for it. */
	run->start_ns = csl_now_ns() + START_DELAY_NS;
	run->time_limit_ns = run->start_ns + (uint64_t)(cfg->time_limit_s * 1e9);
	for (unsigned int t = 0; t < cfg->threads; t++) {
		int err = pthread_create(&l->threads[t].tid, NULL, thread_main, &l->threads[t]);
		if (err) {
			fprintf(stderr, "csload: pthread_create: %s\n", strerror(err));
			atomic_store(&run->stop, 1);
			break;
		}
		l->threads[t].started = true;
	}

	/* Wait for the workers; SIGINT/SIGTERM stop the run early. */
	unsigned int started = 0;
	for (unsigned int t = 0; t < cfg->threads; t++)
		started += l->threads[t].started;
	while (atomic_load(&workers_done) < started) {
		struct timespec tick = { .tv_sec = 0, .tv_nsec = 50000000 };
		if (sigtimedwait(&l->sigs, NULL, &tick) > 0)
			atomic_store(&run->stop, 1);
	}
	for (unsigned int t = 0; t < cfg->threads; t++)
		if (l->threads[t].started)
			pthread_join(l->threads[t].tid, NULL);
	return started < cfg->threads ? -1 : 0;
}

/* Merges the per-thread statistics and reports. Returns the exit status:
 * a failure only when nothing could run at all, or an output failed. */
static int report(const struct csl_config *cfg, struct load *l)
{
	struct csl_run *run = l->run;
	int ret = CSL_EXIT_OK;

	for (unsigned int t = 0; t < cfg->threads; t++)
		csl_stats_merge(&l->total, csl_worker_stats(l->threads[t].worker));
	if (!cfg->quiet)
		csl_report_text(l->json == stdout ? stderr : stdout, cfg, &l->total);
	if (l->json) {
		csl_report_json(l->json, cfg, &l->total);
		if (fflush(l->json) != 0 || ferror(l->json)) {
			fprintf(stderr, "csload: writing the JSON report failed: %s\n", strerror(errno));
			return CSL_EXIT_FAIL;
		}
	}
	if (atomic_load(&run->connect_ok) == 0) {
		int err = atomic_load(&run->first_connect_errno);
		fprintf(stderr, "csload: could not connect to %s port %u: %s\n", cfg->host, cfg->port,
			err ? strerror(err) : "no connection attempt succeeded");
		ret = CSL_EXIT_FAIL;
	}
	if (cfg->tls && atomic_load(&run->connect_ok) > 0 && atomic_load(&run->tls_ok) == 0) {
		fprintf(stderr, "csload: no TLS handshake with %s port %u succeeded: %s\n", cfg->host,
			cfg->port, run->tls_error[0] ? run->tls_error : "none completed");
		ret = CSL_EXIT_FAIL;
	}
	int log_err = atomic_load(&run->log_errno);
	if (log_err) {
		fprintf(stderr, "csload: writing the request log failed: %s\n", strerror(log_err));
		ret = CSL_EXIT_FAIL;
	}
	return ret;
}

/* Frees and closes what l holds; ret, or a failure if a close failed. */
static int close_load(const struct csl_config *cfg, struct load *l, int ret)
{
	if (l->threads) {
		for (unsigned int t = 0; t < cfg->threads; t++)
			csl_worker_free(l->threads[t].worker);
		free(l->threads);
	}
	csl_run_free(l->run);
	free(l->run);
	csl_stats_free(&l->total);
	if (l->json && l->json != stdout && fclose(l->json) != 0) {
		fprintf(stderr, "csload: closing the JSON report failed: %s\n", strerror(errno));
		ret = CSL_EXIT_FAIL;
	}
	if (l->log_fd >= 0 && close(l->log_fd) < 0) {
		fprintf(stderr, "csload: closing the request log failed: %s\n", strerror(errno));
		ret = CSL_EXIT_FAIL;
	}
	return ret;
}

int main(int argc, char **argv)
{
	struct csl_config cfg;
	struct load l = { .log_fd = -1 };
	int ret = CSL_EXIT_FAIL;

	/* Options; a target outside loopback is a usage error. */
	switch (csl_opts_parse(argc, argv, &cfg, stdout, stderr)) {
	case CSL_OPTS_HELP:
		return CSL_EXIT_OK;
	case CSL_OPTS_USAGE:
		return CSL_EXIT_USAGE;
	case CSL_OPTS_RUN:
		break;
	}
	if (cfg.self_test)
		return csl_self_test(stdout) == 0 ? CSL_EXIT_OK : CSL_EXIT_FAIL;

	/* File descriptors for every connection. */
	if (ensure_fd_limit((rlim_t)cfg.connections + 2 * cfg.threads + 64) < 0)
		return CSL_EXIT_FAIL;
	if (open_outputs(&cfg, &l) == 0 && create_workers(&cfg, &l) == 0 &&
	    run_workers(&cfg, &l) == 0)
		ret = report(&cfg, &l);
	return close_load(&cfg, &l, ret);
}
