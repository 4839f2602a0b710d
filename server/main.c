// SPDX-License-Identifier: BSD-2-Clause
/*
 * csserver: connscope's reference HTTP/1.1 server. See --help, and
 * worker.h, conn.h and acceptor.h for how the pieces fit.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acceptor.h"
#include "conn_limit.h"
#include "config.h"
#include "conn.h"
#include "listener.h"
#include "log.h"
#include "options.h"
#include "pool.h"
#include "worker.h"

struct server {
	struct cs_config cfg;
	int listen_fds[CS_MAX_WORKERS]; /* one, or one per worker (reuseport) */
	int listen_count;
	int port; /* the bound port (the kernel's pick for --port 0) */
	struct cs_worker *workers;
	int workers_ready; /* initialised, to be destroyed */
	struct cs_acceptor acceptor;
	struct cs_pool pool;
};

static void set_port(struct sockaddr_storage *addr, int port)
{
	if (addr->ss_family == AF_INET6)
		((struct sockaddr_in6 *)addr)->sin6_port = htons((uint16_t)port);
	else
		((struct sockaddr_in *)addr)->sin_port = htons((uint16_t)port);
}

/* SIGTERM and SIGINT are blocked in every thread and taken by main in
 * sigwait(); SIGPIPE is ignored, so writing to a reset peer is EPIPE. */
static int setup_signals(sigset_t *stop_signals)
{
	struct sigaction ignore = { .sa_handler = SIG_IGN };
	int rc;

	if (sigaction(SIGPIPE, &ignore, NULL) != 0) {
		cs_log_error("sigaction(SIGPIPE): %s", strerror(errno));
		return -1;
	}
	sigemptyset(stop_signals);
	sigaddset(stop_signals, SIGTERM);
	sigaddset(stop_signals, SIGINT);
	rc = pthread_sigmask(SIG_BLOCK, stop_signals, NULL);
	if (rc) {
		cs_log_error("pthread_sigmask: %s", strerror(rc));
		return -1;
	}
	return 0;
}

static int open_listeners(struct server *s)
{
	const struct cs_config *cfg = &s->cfg;
	bool reuseport = cfg->accept_mode == CS_ACCEPT_REUSEPORT;
	/* The acceptor thread blocks in accept(); epoll listeners must not. */
	bool nonblocking = cfg->accept_mode != CS_ACCEPT_ACCEPTOR && cfg->accept_mode != CS_ACCEPT_POOL &&
			   cfg->accept_mode != CS_ACCEPT_PREFORK;
	struct sockaddr_storage addr = cfg->bind_addr;
	char err[256];

	s->port = cfg->port;
	s->listen_count = reuseport ? cfg->workers : 1;
	for (int i = 0; i < s->listen_count; i++) {
		int fd = cs_listener_open((struct sockaddr *)&addr, cfg->bind_addr_len, cfg->backlog,
					  nonblocking, reuseport, err, sizeof(err));
		if (fd < 0) {
			cs_log_error("cannot listen on %s:%d: %s", cfg->bind_text, s->port, err);
			return -1;
		}
		s->listen_fds[i] = fd;
		if (i == 0 && s->port == 0) {
			/* The other SO_REUSEPORT sockets join the port the
			 * kernel picked for the first. */
			s->port = cs_listener_port(fd, err, sizeof(err));
			if (s->port < 0) {
				cs_log_error("%s", err);
				return -1;
			}
			set_port(&addr, s->port);
		}
	}
	return 0;
}

static int start_workers(struct server *s)
{
	const struct cs_config *cfg = &s->cfg;
	char err[256];

	if (cfg->accept_mode == CS_ACCEPT_POOL || cfg->accept_mode == CS_ACCEPT_PREFORK) {
		if (cs_pool_start(&s->pool, cfg, s->listen_fds[0], err, sizeof(err)) != 0) {
			cs_log_error("pool: %s", err);
			return -1;
		}
		return 0;
	}
	s->workers = calloc((size_t)cfg->workers, sizeof(*s->workers));
	if (!s->workers) {
		cs_log_error("out of memory for %d workers", cfg->workers);
		return -1;
	}
	for (int i = 0; i < cfg->workers; i++) {
		int listen_fd;

		switch (cfg->accept_mode) {
		case CS_ACCEPT_REUSEPORT:
			listen_fd = s->listen_fds[i];
			break;
		case CS_ACCEPT_ACCEPTOR:
			listen_fd = -1;
			break;
		default:
			listen_fd = s->listen_fds[0];
			break;
		}
		if (cs_worker_init(&s->workers[i], i, cfg, listen_fd, err, sizeof(err)) != 0) {
			cs_log_error("worker %d: %s", i, err);
			return -1;
		}
		s->workers_ready = i + 1;
	}
	for (int i = 0; i < cfg->workers; i++) {
		if (cs_worker_start(&s->workers[i], err, sizeof(err)) != 0) {
			cs_log_error("worker %d: %s", i, err);
			return -1;
		}
	}
	if (cfg->accept_mode == CS_ACCEPT_ACCEPTOR) {
		s->acceptor = (struct cs_acceptor){
			.cfg = cfg,
			.listen_fd = s->listen_fds[0],
			.workers = s->workers,
			.worker_count = cfg->workers,
		};
		if (cs_acceptor_start(&s->acceptor, err, sizeof(err)) != 0) {
			cs_log_error("acceptor: %s", err);
			return -1;
		}
	}
	return 0;
}

/* Acceptor first, so that no hand-off lands in a worker that has gone. */
static void stop_threads(struct server *s)
{
	atomic_store(&cs_stop_requested, true);
	cs_acceptor_stop(&s->acceptor);
	if (s->cfg.accept_mode == CS_ACCEPT_POOL || s->cfg.accept_mode == CS_ACCEPT_PREFORK)
		cs_pool_stop(&s->pool);
	for (int i = 0; i < s->workers_ready; i++)
		cs_worker_wake(&s->workers[i]);
	for (int i = 0; i < s->workers_ready; i++)
		cs_worker_join(&s->workers[i]);
}

static void print_summary(const struct server *s)
{
	for (int i = 0; i < s->workers_ready; i++) {
		const struct cs_worker_stats *st = &s->workers[i].stats;
		cs_log_info("worker %d: accepted %llu (EAGAIN %llu, errors %llu), requests %llu, "
			    "bad %llu, header timeouts %llu, idle closes %llu, resets %llu",
			    i, (unsigned long long)st->accepted,
			    (unsigned long long)st->accept_eagain,
			    (unsigned long long)st->accept_errors,
			    (unsigned long long)st->requests,
			    (unsigned long long)st->bad_requests,
			    (unsigned long long)st->header_timeouts,
			    (unsigned long long)st->idle_closes,
			    (unsigned long long)st->resets);
	}
	if (s->cfg.accept_mode == CS_ACCEPT_POOL || s->cfg.accept_mode == CS_ACCEPT_PREFORK)
		cs_log_info("pool: accepted %llu, requests %llu, most connections queued for a pool thread %llu",
			    (unsigned long long)atomic_load(&s->pool.accepted),
			    (unsigned long long)atomic_load(&s->pool.requests),
			    (unsigned long long)atomic_load(&s->pool.queued_max));
	if (s->cfg.accept_mode == CS_ACCEPT_ACCEPTOR)
		cs_log_info("acceptor: accepted %llu, errors %llu, hand-off failures %llu",
			    (unsigned long long)s->acceptor.accepted,
			    (unsigned long long)s->acceptor.accept_errors,
			    (unsigned long long)s->acceptor.hand_off_failures);
}

static void cleanup(struct server *s)
{
	for (int i = 0; i < s->workers_ready; i++)
		cs_worker_destroy(&s->workers[i]);
	free(s->workers);
	for (int i = 0; i < s->listen_count; i++)
		if (s->listen_fds[i] >= 0)
			close(s->listen_fds[i]);
}

int main(int argc, char **argv)
{
	static struct server s;
	sigset_t stop_signals;
	int somaxconn, sig = 0, rc;

	/* 1. Options: mistakes exit 2, --help exits 0. */
	switch (cs_options_parse(argc, argv, &s.cfg, stdout, stderr)) {
	case CS_OPTIONS_HELP:
		return 0;
	case CS_OPTIONS_USAGE:
		return 2;
	case CS_OPTIONS_RUN:
		break;
	}
	cs_log_set_quiet(s.cfg.quiet);
	for (size_t i = 0; i < sizeof(s.listen_fds) / sizeof(s.listen_fds[0]); i++)
		s.listen_fds[i] = -1;

	/* 2. Signals, before any thread exists, so that all inherit the mask. */
	if (setup_signals(&stop_signals) != 0)
		return 1;
	cs_conn_init_pattern();
	cs_conn_limit_init(s.cfg.max_conns);

	/* 3. Listeners, then workers (and the acceptor) on them. */
	if (open_listeners(&s) != 0 || start_workers(&s) != 0) {
		stop_threads(&s);
		cleanup(&s);
		return 1;
	}
	somaxconn = cs_somaxconn();
	if (somaxconn > 0 && s.cfg.backlog > somaxconn)
		cs_log_info("--backlog %d is above net.core.somaxconn (%d): the kernel uses %d",
			    s.cfg.backlog, somaxconn, somaxconn);

	/* 4. Ready: the one line on stdout that scripts wait for. */
	printf("csserver: listening on %s:%d mode=%s workers=%d backlog=%d pid=%d\n",
	       s.cfg.bind_text, s.port, cs_accept_mode_name(s.cfg.accept_mode),
	       s.cfg.workers, s.cfg.backlog, (int)getpid());
	fflush(stdout);

	/* 5. Serve until SIGTERM/SIGINT (or a thread's fatal error). */
	rc = sigwait(&stop_signals, &sig);
	if (rc)
		cs_log_error("sigwait: %s", strerror(rc));
	else
		cs_log_info("stopping on %s", sig == SIGINT ? "SIGINT" : "SIGTERM");

	/* 6. Stop, report, release. */
	stop_threads(&s);
	print_summary(&s);
	if (s.cfg.max_conns)
		cs_log_info("acceptor: waited for a free slot (--max-conns %u) %llu time(s)",
			    s.cfg.max_conns, (unsigned long long)cs_conn_limit_waits());
	cleanup(&s);
	return rc ? 1 : atomic_load(&cs_exit_code);
}
