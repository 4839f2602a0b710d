// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscoped: connscope as a daemon beside the servers it watches.
 *
 *   connscoped --port 8080 --metrics 127.0.0.1:9464
 *
 * Runs in the foreground (for systemd), logs to stderr, serves Prometheus
 * metrics when asked to, follows its targets across restarts (a server
 * restarted on the same port is picked up again), exits cleanly on SIGTERM
 * and re-reads its config file (config.h) and looks for targets at once on
 * SIGHUP. Once attached it keeps only the capabilities that following needs
 * (privileges.h). Exit codes as connscope's: 0 done, 1 run-time failure
 * (a bad config file too), 2 usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "config_file.h"
#include "ctl_proto.h"
#include "ctl_server.h"
#include "engine.h"
#include "metrics_server.h"
#include "privileges.h"
#include "procfs.h"
#include "report.h"
#include "session.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

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
		"Usage: connscoped [--config FILE] [TARGET]... [--metrics ADDR:PORT] [options]\n"
		"\n"
		"connscope's daemon: watches TCP servers continuously with the same probes and\n"
		"engine as 'connscope attach', follows them across restarts, and serves\n"
		"Prometheus metrics. Runs in the foreground; logs to stderr.\n"
		"\n"
		"Targets (at least one, here or in the config file; each repeatable):\n"
		"  -P, --port PORT        every process listening on PORT, now and later (a\n"
		"                         server restarted on the port is picked up again)\n"
		"  -p, --pid PID          process PID and the ports it listens on\n"
		"  -n, --name NAME        processes whose command (comm) or executable's\n"
		"                         basename is NAME and that listen on TCP ports, now\n"
		"                         and later\n"
		"  -c, --cgroup PATH      processes that listen on TCP ports in cgroup v2 PATH\n"
		"                         (as /proc/PID/cgroup shows it, e.g. /system.slice/\n"
		"                         nginx.service) or below it, now and later\n"
		"  -N, --netns NS         --port's listeners are in network namespace NS (an\n"
		"                         'ip netns' name, PID or /proc/PID/ns/net); --pid,\n"
		"                         --name, --cgroup look in their process's own\n"
		"\n"
		"Options:\n"
		"  -C, --config FILE      read settings from FILE (default " CS_CONFIG_DEFAULT_PATH "\n"
		"                         when it exists); options given here override it,\n"
		"                         targets given here replace its targets\n"
		"  -m, --metrics ADDR:PORT  serve /metrics (Prometheus text format) there;\n"
		"                         PORT alone means 127.0.0.1:PORT (default: off)\n"
		"      --socket PATH      the control socket for connscope status, snapshot,\n"
		"                         reset and top (default " CS_CTL_DEFAULT_SOCKET ")\n"
		"      --sample-hz N      listener queue samples per second (1-1000, default 10)\n"
		"      --ring-mb N        ring buffer size in MiB, a power of two (default 8)\n"
		"  -v, --verbose          show libbpf's log\n"
		"  -h, --help             this help\n"
		"\n"
		"Config file: 'key = value' lines with the long options' names as keys (port,\n"
		"pid, name, cgroup, metrics, sample-hz, ring-mb, verbose = yes|no), '#' comment\n"
		"lines. It must be root's and writable only by root.\n"
		"\n"
		"Signals: SIGTERM/SIGINT stop (exit 0); SIGHUP re-reads the config file (new\n"
		"targets and sample-hz apply at once; a bad file is logged and the running\n"
		"settings kept) and looks for target processes now.\n"
		"\n"
		"Once attached, connscoped keeps only CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH\n"
		"(to find the processes behind its targets) and sets no_new_privs.\n"
		"\n"
		"Exit status: 0 stopped by a signal, 1 run-time error (bad config file,\n"
		"missing capability, probes refused), 2 usage error.\n"
		"\n"
		"Examples:\n"
		"  connscoped --port 8080 --metrics 9464 &\n"
		"  curl -s 127.0.0.1:9464/metrics | grep connscope_request_duration_seconds\n"
		"  connscoped --name nginx --cgroup /system.slice/api.service --metrics 9464\n");
}

/* What the daemon was told: the command line, over the config file. */
struct daemon_setup {
	const char *config_path;           /* NULL: no file */
	struct cs_daemon_config cli;
	struct cs_daemon_config running;   /* in force: file + command line */
};

/* The session options from a config. */
static void apply_targets(const struct cs_daemon_config *config, struct cs_session_options *opts)
{
	memcpy(opts->ports, config->ports, sizeof(config->ports));
	opts->port_count = config->port_count;
	memcpy(opts->pids, config->pids, sizeof(config->pids));
	opts->pid_count = config->pid_count;
	opts->match = config->match;
	memcpy(opts->netns, config->netns, sizeof(opts->netns));
	opts->sample_hz = config->sample_hz;
}

/* The file, then the command line over it. */
static int load_settings(struct daemon_setup *setup, struct cs_daemon_config *out, char *errmsg, size_t errlen)
{
	cs_config_init(out);
	if (setup->config_path && cs_config_load(setup->config_path, out, errmsg, errlen))
		return -1;
	cs_config_merge(out, &setup->cli);
	return 0;
}

/* A cgroup target that is not there is waited for: say so, it may be a typo. */
static void warn_missing_cgroups(const struct cs_daemon_config *config)
{
	for (size_t i = 0; i < config->match.cgroup_count; i++)
		if (!cs_cgroup_exists(config->match.cgroups[i]))
			fprintf(stderr, "connscoped: cgroup %s does not exist (yet) in the cgroup v2 hierarchy%s%s; "
				"watching for it\n", config->match.cgroups[i], cs_cgroup2_mount() ? " at " : "",
				cs_cgroup2_mount() ? cs_cgroup2_mount() : " (none is mounted)");
}

/* SIGHUP: the config file again; targets and sample-hz change now. */
static int reload(void *ctx, struct cs_session_options *next)
{
	struct daemon_setup *setup = ctx;
	static struct cs_daemon_config fresh;
	char errmsg[CS_ERRMSG_LEN];
	if (!setup->config_path)
		return -1;
	if (load_settings(setup, &fresh, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscoped: reload: %s; keeping the running settings\n", errmsg);
		return -1;
	}
	if (!cs_config_has_targets(&fresh)) {
		fprintf(stderr, "connscoped: reload: %s names no target; keeping the running settings\n",
			setup->config_path);
		return -1;
	}
	if (strcmp(fresh.metrics, setup->running.metrics) != 0 || fresh.ring_mb != setup->running.ring_mb ||
	    fresh.verbose != setup->running.verbose)
		fprintf(stderr, "connscoped: reload: metrics, ring-mb and verbose changes take effect at "
			"the next start\n");
	fresh.ring_mb = setup->running.ring_mb;
	fresh.verbose = setup->running.verbose;
	memcpy(fresh.metrics, setup->running.metrics, sizeof(fresh.metrics));
	setup->running = fresh;
	apply_targets(&fresh, next);
	warn_missing_cgroups(&fresh);
	fprintf(stderr, "connscoped: reloaded %s\n", setup->config_path);
	return 0;
}

/* Once the probes are in: give up what following the targets does not need. */
static int drop_privileges(void *ctx, char *errmsg, size_t errlen)
{
	(void)ctx;
	if (cs_privileges_drop(errmsg, errlen))
		return -1;
	char kept[128];
	cs_caps_describe(CS_KEPT_CAPS, kept, sizeof(kept));
	fprintf(stderr, "connscoped: capabilities dropped; keeping %s\n", kept);
	return 0;
}

/* "port 8080", "name nginx": the metrics' target label, from the first target. */
static void target_label(const struct cs_daemon_config *config, char *out, size_t len)
{
	if (config->port_count)
		snprintf(out, len, "port %u", config->ports[0]);
	else if (config->pid_count)
		snprintf(out, len, "pid %d", (int)config->pids[0]);
	else if (config->match.name_count)
		snprintf(out, len, "name %s", config->match.names[0]);
	else
		snprintf(out, len, "cgroup %s", config->match.cgroups[0]);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'P' },
		{ "pid", required_argument, NULL, 'p' },
		{ "name", required_argument, NULL, 'n' },
		{ "cgroup", required_argument, NULL, 'c' },
		{ "netns", required_argument, NULL, 'N' },
		{ "config", required_argument, NULL, 'C' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "socket", required_argument, NULL, 'K' },
		{ "sample-hz", required_argument, NULL, 'S' },
		{ "ring-mb", required_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct cs_session_options opts = {
		.probe = { .wakeup_bytes = 256u << 10, .trace_handshakes = true },
		.stop = &stop_requested,
		.rescan = &rescan_requested,
		.follow = true,
	};
	static struct daemon_setup setup;
	char errmsg[CS_ERRMSG_LEN];
	bool config_given = false;
	const char *socket_path = CS_CTL_DEFAULT_SOCKET;
	int c, longindex;

	cs_config_init(&setup.cli);
	setup.cli.last_wins = true; /* as getopt users expect: --sample-hz 5 --sample-hz 6 is 6 */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":P:p:n:c:N:C:m:vh", longopts, &longindex)) != -1) {
		switch (c) {
		case 'C':
			setup.config_path = optarg;
			config_given = true;
			break;
		case 'K':
			socket_path = optarg;
			break;
		case 'h':
			help(stdout);
			return 0;
		case ':':
		case '?': {
			char msg[512];
			return usage_error("%s", cli_refused_option(c, argv, longopts, msg, sizeof(msg)));
		}
		default: {
			/* Every other option is a config key of the same name. */
			const char *key = NULL;
			for (const struct option *o = longopts; o->name; o++)
				if (o->val == c)
					key = o->name;
			if (!key) {
				char msg[512];
				return usage_error("%s", cli_refused_option('?', argv, longopts, msg, sizeof(msg)));
			}
			if (cs_config_set(&setup.cli, key, optarg ? optarg : "yes", errmsg, sizeof(errmsg)))
				return usage_error("--%s %s", key, errmsg);
		}
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (!config_given && access(CS_CONFIG_DEFAULT_PATH, F_OK) == 0)
		setup.config_path = CS_CONFIG_DEFAULT_PATH;
	if (load_settings(&setup, &setup.running, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscoped: %s\n", errmsg);
		return EXIT_RUNTIME;
	}
	if (!cs_config_has_targets(&setup.running))
		return usage_error("name a target with --port PORT, --pid PID, --name NAME or --cgroup PATH%s%s%s",
				   setup.config_path ? " (or in " : "", setup.config_path ? setup.config_path : "",
				   setup.config_path ? ")" : "");
	if (setup.config_path)
		fprintf(stderr, "connscoped: settings from %s\n", setup.config_path);
	apply_targets(&setup.running, &opts);
	warn_missing_cgroups(&setup.running);
	opts.probe.ring_bytes = setup.running.ring_mb << 20;
	opts.probe.wakeup_bytes = opts.probe.ring_bytes / 32;
	opts.probe.verbose = setup.running.verbose;
	opts.reload = reload;
	opts.attached = drop_privileges;
	opts.hooks_ctx = &setup;
	const char *metrics_address = setup.running.metrics[0] ? setup.running.metrics : NULL;
	if (cs_privileges_check(errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscoped: %s\n", errmsg);
		return EXIT_RUNTIME;
	}

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
	static char label[CS_CGROUP_PATH_LEN + 16];
	target_label(&setup.running, label, sizeof(label));
	live_meta.target = label;
	struct cs_metrics_server metrics = { .listen_fd = -1 };
	if (metrics_address) {
		int err = cs_metrics_server_start(&metrics, metrics_address, &engine_lock, engine,
						  &live_meta, label, errmsg, sizeof(errmsg));
		if (err) {
			cs_engine_free(engine);
			if (err == -EINVAL) /* the address's form: a usage error */
				return usage_error("%s", errmsg);
			fprintf(stderr, "connscoped: %s\n", errmsg);
			return EXIT_RUNTIME;
		}
		fprintf(stderr, "connscoped: serving metrics on http://%s/metrics\n", metrics_address);
	}

	/* 2b. the control socket (connscope status, snapshot, reset, top) */
	static struct cs_ctl_server control;
	if (cs_ctl_server_start(&control, socket_path, &engine_lock, engine, &live_meta, label, errmsg,
				sizeof(errmsg))) {
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
