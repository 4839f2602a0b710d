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

int main(int argc, char **argv)
{
	struct csl_config cfg;
	struct csl_run *run = NULL;
	struct thread_arg *threads = NULL;
	struct csl_stats total = { 0 };
	FILE *json = NULL;
	int log_fd = -1;
	int ret = CSL_EXIT_FAIL;
	sigset_t sigs;

	/* 1. Options; a target outside loopback is a usage error. */
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

	/* 2. Resources: file descriptors for every connection, output files. */
	if (ensure_fd_limit((rlim_t)cfg.connections + 2 * cfg.threads + 64) < 0)
		return CSL_EXIT_FAIL;
	if (cfg.json_file && !(json = open_output(cfg.json_file, "JSON")))
		goto out;
	if (cfg.log_file) {
		log_fd = open(cfg.log_file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
		if (log_fd < 0) {
			fprintf(stderr, "csload: cannot write log file '%s': %s\n", cfg.log_file,
				strerror(errno));
			goto out;
		}
	}
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		perror("csload: signal(SIGPIPE)");
		goto out;
	}

	/* 3. Shared run state and one worker per thread, connections split evenly. */
	run = malloc(sizeof(*run));
	threads = calloc(cfg.threads, sizeof(*threads));
	if (!run || !threads || csl_stats_init(&total, cfg.npaths) < 0) {
		fprintf(stderr, "csload: out of memory\n");
		goto out;
	}
	if (csl_run_init(run, &cfg, log_fd) < 0) {
		fprintf(stderr, "csload: cannot build the request\n");
		goto out;
	}
	for (unsigned int t = 0; t < cfg.threads; t++) {
		unsigned int n = cfg.connections / cfg.threads + (t < cfg.connections % cfg.threads);
		threads[t].worker = csl_worker_new(run, t, n);
		if (!threads[t].worker)
			goto out;
	}

	/* 4. Signals go to this thread only (sigtimedwait below); workers poll
	 *    run->stop. Block them before the workers inherit the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	if (pthread_sigmask(SIG_BLOCK, &sigs, NULL) != 0) {
		fprintf(stderr, "csload: pthread_sigmask failed\n");
		goto out;
	}

	/* 5. A common start a little ahead, so every worker is ready for it. */
	run->start_ns = csl_now_ns() + START_DELAY_NS;
	run->time_limit_ns = run->start_ns + (uint64_t)(cfg.time_limit_s * 1e9);
	for (unsigned int t = 0; t < cfg.threads; t++) {
		int err = pthread_create(&threads[t].tid, NULL, thread_main, &threads[t]);
		if (err) {
			fprintf(stderr, "csload: pthread_create: %s\n", strerror(err));
			atomic_store(&run->stop, 1);
			break;
		}
		threads[t].started = true;
	}

	/* 6. Wait for the workers; SIGINT/SIGTERM stop the run early. */
	unsigned int started = 0;
	for (unsigned int t = 0; t < cfg.threads; t++)
		started += threads[t].started;
	while (atomic_load(&workers_done) < started) {
		struct timespec tick = { .tv_sec = 0, .tv_nsec = 50000000 };
		if (sigtimedwait(&sigs, NULL, &tick) > 0)
			atomic_store(&run->stop, 1);
	}
	for (unsigned int t = 0; t < cfg.threads; t++)
		if (threads[t].started)
			pthread_join(threads[t].tid, NULL);
	if (started < cfg.threads)
		goto out;

	/* 7. Merge the per-thread statistics and report. */
	for (unsigned int t = 0; t < cfg.threads; t++)
		csl_stats_merge(&total, csl_worker_stats(threads[t].worker));
	if (!cfg.quiet)
		csl_report_text(json == stdout ? stderr : stdout, &cfg, &total);
	if (json) {
		csl_report_json(json, &cfg, &total);
		if (fflush(json) != 0 || ferror(json)) {
			fprintf(stderr, "csload: writing the JSON report failed: %s\n", strerror(errno));
			goto out;
		}
	}

	/* 8. Exit status: 1 only when nothing could run at all. */
	ret = CSL_EXIT_OK;
	if (atomic_load(&run->connect_ok) == 0) {
		int err = atomic_load(&run->first_connect_errno);
		fprintf(stderr, "csload: could not connect to %s port %u: %s\n", cfg.host, cfg.port,
			err ? strerror(err) : "no connection attempt succeeded");
		ret = CSL_EXIT_FAIL;
	}
	int log_err = atomic_load(&run->log_errno);
	if (log_err) {
		fprintf(stderr, "csload: writing the request log failed: %s\n", strerror(log_err));
		ret = CSL_EXIT_FAIL;
	}

out:
	if (threads) {
		for (unsigned int t = 0; t < cfg.threads; t++)
			csl_worker_free(threads[t].worker);
		free(threads);
	}
	free(run);
	csl_stats_free(&total);
	if (json && json != stdout && fclose(json) != 0) {
		fprintf(stderr, "csload: closing the JSON report failed: %s\n", strerror(errno));
		ret = CSL_EXIT_FAIL;
	}
	if (log_fd >= 0 && close(log_fd) < 0) {
		fprintf(stderr, "csload: closing the request log failed: %s\n", strerror(errno));
		ret = CSL_EXIT_FAIL;
	}
	return ret;
}
