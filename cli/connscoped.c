// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscoped: connscope as a daemon beside the servers it watches.
 *
 *   connscoped --port 8080 --metrics 127.0.0.1:9464
 *
 * Runs in the foreground (for systemd), logs to stderr, serves Prometheus
 * metrics when asked to, follows its targets across restarts (a server
 * restarted on the same port is picked up again), exits cleanly on SIGTERM
 * and looks for targets at once on SIGHUP. Exit codes as connscope's:
 * 0 done, 1 run-time failure, 2 usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "ctl_proto.h"
#include "ctl_server.h"
#include "engine.h"
#include "metrics_server.h"
#include "report.h"
#include "session.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define PID_MAX_LIMIT 4194304

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t rescan_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void on_hangup(int sig)
{
	(void)sig;
	rescan_requested = 1;
}

__attribute__((format(printf, 1, 2)))
static int usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("connscoped: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'connscoped --help'.\n", stderr);
	return EXIT_USAGE;
}

static void help(FILE *out)
{
	fprintf(out,
		"Usage: connscoped (--port PORT | --pid PID)... [--metrics ADDR:PORT] [options]\n"
		"\n"
		"connscope's daemon: watches TCP servers continuously with the same probes and\n"
		"engine as 'connscope attach', follows them across restarts, and serves\n"
		"Prometheus metrics. Runs in the foreground; logs to stderr.\n"
		"\n"
		"Targets (at least one; each repeatable):\n"
		"  -P, --port PORT        every process listening on PORT, now and later (a\n"
		"                         server restarted on the port is picked up again)\n"
		"  -p, --pid PID          process PID and the ports it listens on\n"
		"\n"
		"Options:\n"
		"  -m, --metrics ADDR:PORT  serve /metrics (Prometheus text format) there;\n"
		"                         PORT alone means 127.0.0.1:PORT (default: off)\n"
		"      --socket PATH      the control socket for connscope status, snapshot,\n"
		"                         reset and top (default " CS_CTL_DEFAULT_SOCKET ")\n"
		"      --sample-hz N      listener backlog walks per second (1-1000, default 10)\n"
		"      --ring-mb N        ring buffer size in MiB, a power of two (default 8)\n"
		"  -v, --verbose          show libbpf's log\n"
		"  -h, --help             this help\n"
		"\n"
		"Signals: SIGTERM/SIGINT stop (exit 0); SIGHUP looks for target processes now.\n"
		"\n"
		"Example:\n"
		"  connscoped --port 8080 --metrics 9464 &\n"
		"  curl -s 127.0.0.1:9464/metrics | grep connscope_request_duration_seconds\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'P' },
		{ "pid", required_argument, NULL, 'p' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "socket", required_argument, NULL, 'C' },
		{ "sample-hz", required_argument, NULL, 'S' },
		{ "ring-mb", required_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct cs_session_options opts = {
		.sample_hz = 10,
		.probe = { .ring_bytes = 8u << 20, .wakeup_bytes = 256u << 10, .trace_handshakes = true },
		.stop = &stop_requested,
		.rescan = &rescan_requested,
		.follow = true,
	};
	const char *metrics_address = NULL;
	const char *socket_path = CS_CTL_DEFAULT_SOCKET;
	long value;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":P:p:m:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'P':
			if (!parse_long(optarg, 1, 65535, &value))
				return usage_error("--port expects a TCP port (1-65535), not '%s'", optarg);
			if (opts.port_count >= CS_MAX_TARGETS)
				return usage_error("at most %d --port options", CS_MAX_TARGETS);
			opts.ports[opts.port_count++] = (uint16_t)value;
			break;
		case 'p':
			if (!parse_long(optarg, 1, PID_MAX_LIMIT, &value))
				return usage_error("--pid expects a process id (1-%d), not '%s'", PID_MAX_LIMIT, optarg);
			if (opts.pid_count >= CS_MAX_TARGETS)
				return usage_error("at most %d --pid options", CS_MAX_TARGETS);
			opts.pids[opts.pid_count++] = (pid_t)value;
			break;
		case 'm':
			metrics_address = optarg;
			break;
		case 'C':
			socket_path = optarg;
			break;
		case 'S':
			if (!parse_long(optarg, 1, 1000, &value))
				return usage_error("--sample-hz expects 1-1000, not '%s'", optarg);
			opts.sample_hz = (unsigned int)value;
			break;
		case 'R':
			if (!parse_long(optarg, 1, 1024, &value) || (value & (value - 1)))
				return usage_error("--ring-mb expects a power of two from 1 to 1024, not '%s'", optarg);
			opts.probe.ring_bytes = (uint32_t)value << 20;
			opts.probe.wakeup_bytes = opts.probe.ring_bytes / 32;
			break;
		case 'v':
			opts.probe.verbose = true;
			break;
		case 'h':
			help(stdout);
			return 0;
		case ':':
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (opts.pid_count == 0 && opts.port_count == 0)
		return usage_error("name a target with --port PORT or --pid PID");

	struct sigaction stop_action = { .sa_handler = on_stop };
	struct sigaction hangup_action = { .sa_handler = on_hangup };
	sigaction(SIGTERM, &stop_action, NULL);
	sigaction(SIGINT, &stop_action, NULL);
	sigaction(SIGHUP, &hangup_action, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* 1. the engine, shared with the metrics thread under one lock */
	static pthread_mutex_t engine_lock = PTHREAD_MUTEX_INITIALIZER;
	static struct cs_report_meta live_meta;
	struct cs_engine *engine = cs_engine_new();
	if (!engine) {
		fprintf(stderr, "connscoped: out of memory\n");
		return EXIT_RUNTIME;
	}
	opts.engine_lock = &engine_lock;
	opts.live_meta = &live_meta;

	/* 2. the metrics endpoint, before the probes: a taken port fails fast */
	/* static: live_meta, static, points to it for the whole run */
	static char target_label[64];
	if (opts.port_count)
		snprintf(target_label, sizeof(target_label), "port %u", opts.ports[0]);
	else
		snprintf(target_label, sizeof(target_label), "pid %d", (int)opts.pids[0]);
	live_meta.target = target_label;
	struct cs_metrics_server metrics = { .listen_fd = -1 };
	char errmsg[CS_ERRMSG_LEN];
	if (metrics_address) {
		int err = cs_metrics_server_start(&metrics, metrics_address, &engine_lock, engine,
						  &live_meta, target_label, errmsg, sizeof(errmsg));
		if (err) {
			fprintf(stderr, "connscoped: %s\n", errmsg);
			cs_engine_free(engine);
			return err == -EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
		}
		fprintf(stderr, "connscoped: serving metrics on http://%s/metrics\n", metrics_address);
	}

	/* 2b. the control socket (connscope status, snapshot, reset, top) */
	static struct cs_ctl_server control;
	if (cs_ctl_server_start(&control, socket_path, &engine_lock, engine, &live_meta, target_label,
				errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscoped: %s\n", errmsg);
		cs_metrics_server_stop(&metrics);
		cs_engine_free(engine);
		return EXIT_RUNTIME;
	}
	fprintf(stderr, "connscoped: control socket %s\n", socket_path);

	/* 3. the run: until SIGTERM */
	struct cs_session_result result;
	int rc = 0;
	if (cs_session_run(&opts, engine, &result, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscoped: %s\n", errmsg);
		rc = EXIT_RUNTIME;
	} else {
		fprintf(stderr, "connscoped: stopped after %.1f s: %llu requests, %llu events, %llu lost, "
			"%llu scrapes\n", result.meta.duration_s,
			(unsigned long long)engine->requests.requests,
			(unsigned long long)engine->totals.records,
			(unsigned long long)result.meta.events_lost, (unsigned long long)metrics.scrapes);
	}
	cs_ctl_server_stop(&control);
	cs_metrics_server_stop(&metrics);
	cs_engine_free(engine);
	return rc;
}
