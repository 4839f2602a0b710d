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
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config_file.h"
#include "ctl_proto.h"
#include "ctl_server.h"
#include "engine.h"
#include "metrics_server.h"
#include "privileges.h"
#include "procfs.h"
#include "report.h"
#include "session.h"

/* Set by SIGHUP: the session looks for targets (and reload re-reads the file). */
static volatile sig_atomic_t rescan_requested;

static void on_hangup(int sig)
{
	(void)sig;
	rescan_requested = 1;
}

static const struct cs_cmd daemon_cmd = {
	.name = "connscoped",
	.usage =
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
	"      --trace always|W/P per-request tracing W seconds at the start of every\n"
	"                         P seconds (default 1/10), its probes detached in\n"
	"                         between; accepts, drops, resets and closes are\n"
	"                         counted all the time; always: trace everything\n"
	"      --between-windows events|counters  between tracing windows: events\n"
	"                         (default) counts accepts, drops, resets and closes\n"
	"                         port by port, a few probe runs a connection; counters\n"
	"                         runs no probe for a connection and reads the kernel's\n"
	"                         TCP counters of the target's network namespace at\n"
	"                         each window's edges instead (every port and process\n"
	"                         of it: connections opened, listen drops, resets)\n"
	"  -v, --verbose          show libbpf's log\n"
	"      --bpf-stats yes|always|no  the kernel's BPF run-time statistics, for the\n"
	"                         probes' cost in status and /metrics: yes (default)\n"
	"                         turns them on in sampled seconds (about 1 in 10) and\n"
	"                         estimates from those; always, the whole run (they\n"
	"                         cost every BPF run on the machine two clock reads);\n"
	"                         no, never: the cost is not measured\n"
	"      --no-pauses        do not attach the JVM pause probes (uprobes on a java\n"
	"                         target's libjvm) (config: pauses = no)\n"
	"      --no-clients       do not follow local clients' reads of their answers\n"
	"                         (their own delay, client_bound) (config: clients = no)\n"
	"  -h, --help             this help\n"
	"\n"
	"Config file: 'key = value' lines with the long options' names as keys (port,\n"
	"pid, name, cgroup, metrics, sample-hz, ring-mb, trace, verbose = yes|no, bpf-stats =\n"
	"yes|always|no, pauses = yes|no, clients = yes|no, between-windows = events|counters), '#' comment lines. It must be root's and writable only by root.\n"
	"\n"
	"Signals: SIGTERM/SIGINT stop (exit 0); SIGHUP re-reads the config file (new\n"
	"targets, sample-hz and trace apply at once; a bad file is logged and the running\n"
	"settings kept) and looks for target processes now.\n"
	"\n"
	"Once attached, connscoped keeps only CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH\n"
	"(to find the processes behind its targets), with CAP_BPF and CAP_PERFMON when\n"
	"tracing in windows, and sets no_new_privs. Its child connscope-stats keeps\n"
	"CAP_SYS_ADMIN alone, to turn the BPF statistics on and off (bpf-stats yes).\n"
	"\n"
	"Exit status: 0 stopped by a signal, 1 run-time error (bad config file,\n"
	"missing capability, probes refused), 2 usage error.\n"
	"\n"
	"Examples:\n"
	"  connscoped --port 8080 --metrics 9464 &\n"
	"  curl -s 127.0.0.1:9464/metrics | grep connscope_request_duration_seconds\n"
	"  connscoped --name nginx --cgroup /system.slice/api.service --metrics 9464\n",
	.lists_kinds = true,
};

/* The daemon's run: what it was told (the command line, over the config file) and what it serves. */
struct daemon {
	struct cs_cli cli;                 /* usage errors */
	const char *config_path;           /* NULL: no file */
	bool config_given;                 /* --config: the file must be there */
	const char *socket_path;
	struct cs_daemon_config given;     /* the command line's settings */
	struct cs_daemon_config running;   /* in force: file + command line */
	struct cs_daemon_config fresh;     /* a reload's, until it is taken */
	struct cs_session_options opts;
	pthread_mutex_t engine_lock;       /* the engine, shared with the servers' threads */
	struct cs_engine *engine;
	struct cs_report_meta live_meta;   /* kept current by the session, read by the servers */
	char label[CS_CGROUP_PATH_LEN + 16]; /* the first target, as the metrics name it */
	struct cs_metrics_server metrics;
	struct cs_ctl_server control;
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
	opts->trace = config->trace;
}

/* The file, then the command line over it. */
static int load_settings(const struct daemon *setup, struct cs_daemon_config *out, char *errmsg,
			 size_t errlen)
{
	cs_config_init(out);
	if (setup->config_path && cs_config_load(setup->config_path, out, errmsg, errlen))
		return -1;
	cs_config_merge(out, &setup->given);
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

/* SIGHUP: the config file again; targets, sample-hz and trace change now. */
static int reload(void *ctx, struct cs_session_options *next)
{
	struct daemon *setup = ctx;
	struct cs_daemon_config *fresh = &setup->fresh;
	char errmsg[CS_ERRMSG_LEN];
	if (!setup->config_path)
		return -1;
	if (load_settings(setup, fresh, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscoped: reload: %s; keeping the running settings\n", errmsg);
		return -1;
	}
	if (!cs_config_has_targets(fresh)) {
		fprintf(stderr, "connscoped: reload: %s names no target; keeping the running settings\n",
			setup->config_path);
		return -1;
	}
	if (strcmp(fresh->metrics, setup->running.metrics) != 0 || fresh->ring_mb != setup->running.ring_mb ||
	    fresh->verbose != setup->running.verbose || fresh->bpf_stats != setup->running.bpf_stats ||
	    fresh->bpf_stats_always != setup->running.bpf_stats_always || fresh->pauses != setup->running.pauses ||
	    fresh->between_counters != setup->running.between_counters)
		fprintf(stderr, "connscoped: reload: metrics, ring-mb, verbose, bpf-stats, pauses and between-windows "
			"changes take effect at the next start\n");
	fresh->ring_mb = setup->running.ring_mb;
	fresh->pauses = setup->running.pauses;
	fresh->between_counters = setup->running.between_counters;
	fresh->verbose = setup->running.verbose;
	fresh->bpf_stats = setup->running.bpf_stats;
	fresh->bpf_stats_always = setup->running.bpf_stats_always;
	memcpy(fresh->metrics, setup->running.metrics, sizeof(fresh->metrics));
	setup->running = *fresh;
	apply_targets(fresh, next);
	warn_missing_cgroups(fresh);
	fprintf(stderr, "connscoped: reloaded %s\n", setup->config_path);
	return 0;
}

/* Once the probes are in: give up what following the targets does not need. */
static int drop_privileges(void *ctx, char *errmsg, size_t errlen)
{
	struct daemon *d = ctx;
	/*
	 * Probes are attached while it runs: the request probes at each tracing
	 * window's start, the per-packet one while an answer drains, the
	 * wake-up one once a request is parked.
	 */
	(void)d;
	uint64_t keep = CS_KEPT_CAPS | CS_ATTACH_CAPS;
	if (cs_privileges_drop(keep, errmsg, errlen))
		return -1;
	char kept[128];
	cs_caps_describe(keep, kept, sizeof(kept));
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

/* Its options, in the order a usage error lists them (cli.c defines each). */
static const char daemon_options[] =
	"port pid name cgroup netns config metrics --socket sample-hz ring-mb trace between-windows verbose --bpf-stats no-pauses "
	"no-clients help";

static int take(struct cs_cli *cli, int opt, const char *arg, void *ctx)
{
	struct daemon *d = ctx;
	char errmsg[CS_ERRMSG_LEN];
	if (opt == 'C') {
		d->config_path = arg;
		d->config_given = true;
		return CS_CLI_GO_ON;
	}
	if (opt == 's') {
		d->socket_path = arg;
		return CS_CLI_GO_ON;
	}
	/* The flag attach and record share; its config key says it the other way round. */
	if (opt == CS_OPT_NO_PAUSES) {
		if (cs_config_set(&d->given, "pauses", "no", errmsg, sizeof(errmsg)))
			return cs_cli_usage(cli, "--no-pauses %s", errmsg);
		return CS_CLI_GO_ON;
	}
	if (opt == CS_OPT_NO_CLIENTS) {
		if (cs_config_set(&d->given, "clients", "no", errmsg, sizeof(errmsg)))
			return cs_cli_usage(cli, "--no-clients %s", errmsg);
		return CS_CLI_GO_ON;
	}
	/* Every other option is a config key of the same name: one parser for both. */
	const char *key = cs_cli_option_name(cli, opt);
	if (key && cs_config_set(&d->given, key, arg ? arg : "yes", errmsg, sizeof(errmsg)))
		return cs_cli_usage(cli, "--%s %s", key, errmsg);
	return CS_CLI_GO_ON;
}

/* The command line, then the config file under it: CS_CLI_GO_ON, or an exit code. */
static int configure(struct daemon *d, int argc, char **argv)
{
	char errmsg[CS_ERRMSG_LEN];
	cs_config_init(&d->given);
	d->given.last_wins = true; /* as getopt users expect: --sample-hz 5 --sample-hz 6 is 6 */
	d->socket_path = CS_CTL_DEFAULT_SOCKET;
	int rc = cs_cli_parse(&d->cli, argc, argv, daemon_options, take, d);
	if (rc != CS_CLI_GO_ON)
		return rc;
	if (!d->config_given && access(CS_CONFIG_DEFAULT_PATH, F_OK) == 0)
		d->config_path = CS_CONFIG_DEFAULT_PATH;
	if (load_settings(d, &d->running, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscoped: %s\n", errmsg);
		return CS_EXIT_RUNTIME;
	}
	if (!cs_config_has_targets(&d->running))
		return cs_cli_usage(&d->cli, "name a target with --port PORT, --pid PID, --name NAME or --cgroup PATH%s%s%s",
				    d->config_path ? " (or in " : "", d->config_path ? d->config_path : "",
				    d->config_path ? ")" : "");
	if (d->config_path)
		fprintf(stderr, "connscoped: settings from %s\n", d->config_path);
	return CS_CLI_GO_ON;
}

/* The session's options from the settings in force, with the daemon's hooks. */
static void session_options(struct daemon *d)
{
	struct cs_session_options *opts = &d->opts;
	cs_cli_session_defaults(opts);
	opts->rescan = &rescan_requested;
	opts->follow = true;
	apply_targets(&d->running, opts);
	warn_missing_cgroups(&d->running);
	opts->probe.ring_bytes = d->running.ring_mb << 20;
	opts->probe.wakeup_bytes = opts->probe.ring_bytes / 32;
	opts->probe.verbose = d->running.verbose;
	opts->probe.no_bpf_stats = !d->running.bpf_stats;
	opts->probe.bpf_stats_always = d->running.bpf_stats_always;
	opts->probe.no_pauses = !d->running.pauses;
	opts->probe.follow_clients = d->running.clients;
	opts->probe.between_counters = d->running.between_counters;
	opts->reload = reload;
	opts->attached = drop_privileges;
	opts->hooks_ctx = d;
	opts->engine_lock = &d->engine_lock;
	opts->live_meta = &d->live_meta;
	/* The servers start before the probes: a scrape meanwhile sees the configured mode. */
	cs_trace_meta_configured(&opts->trace, &d->live_meta.trace);
	d->live_meta.trace.counters_between = opts->probe.between_counters && d->live_meta.trace.sampled;
}

/*
 * The metrics endpoint, before the probes (a taken port fails fast), and the
 * control socket (connscope status, snapshot, reset, top): CS_CLI_GO_ON, or
 * an exit code after saying why.
 */
static int start_servers(struct daemon *d)
{
	char errmsg[CS_ERRMSG_LEN];
	const char *metrics_address = d->running.metrics[0] ? d->running.metrics : NULL;
	target_label(&d->running, d->label, sizeof(d->label));
	d->live_meta.target = d->label;
	d->metrics.listen_fd = d->metrics.epoll_fd = -1;
	if (metrics_address) {
		int err = cs_metrics_server_start(&d->metrics, metrics_address, &d->engine_lock, d->engine,
						  &d->live_meta, d->label, errmsg, sizeof(errmsg));
		if (err == -EINVAL) /* the address's form: a usage error */
			return cs_cli_usage(&d->cli, "%s", errmsg);
		if (err) {
			fprintf(stderr, "connscoped: %s\n", errmsg);
			return CS_EXIT_RUNTIME;
		}
		fprintf(stderr, "connscoped: serving metrics on http://%s/metrics\n", metrics_address);
	}
	if (cs_ctl_server_start(&d->control, d->socket_path, &d->engine_lock, d->engine, &d->live_meta, d->label,
				errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscoped: %s\n", errmsg);
		cs_metrics_server_stop(&d->metrics);
		return CS_EXIT_RUNTIME;
	}
	fprintf(stderr, "connscoped: control socket %s\n", d->socket_path);
	return CS_CLI_GO_ON;
}

/* The run, until SIGTERM: 0, or CS_EXIT_RUNTIME after saying why. */
static int run_session(struct daemon *d)
{
	char errmsg[CS_ERRMSG_LEN];
	struct cs_session_result result;
	int rc = 0;
	if (cs_session_run(&d->opts, d->engine, &result, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscoped: %s\n", errmsg);
		rc = CS_EXIT_RUNTIME;
	} else {
		fprintf(stderr, "connscoped: stopped after %.1f s: %llu requests, %llu events, %llu lost, "
			"%llu scrapes\n", result.meta.duration_s,
			(unsigned long long)d->engine->requests.requests,
			(unsigned long long)d->engine->totals.records,
			(unsigned long long)result.meta.events_lost, (unsigned long long)d->metrics.scrapes);
	}
	cs_ctl_server_stop(&d->control);
	bool metrics_served = d->metrics.running;
	cs_metrics_server_stop(&d->metrics);
	if (metrics_served)
		fprintf(stderr, "connscoped: metrics: %llu scrapes, %llu requests refused, %llu connections dropped "
			"at the cap, %llu at a deadline\n", (unsigned long long)d->metrics.scrapes,
			(unsigned long long)d->metrics.rejected, (unsigned long long)d->metrics.evicted,
			(unsigned long long)d->metrics.timed_out);
	return rc;
}

static int run_daemon(struct daemon *d, int argc, char **argv)
{
	char errmsg[CS_ERRMSG_LEN];
	int rc = configure(d, argc, argv);
	if (rc != CS_CLI_GO_ON)
		return rc;
	session_options(d);
	if (cs_privileges_check(errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscoped: %s\n", errmsg);
		return CS_EXIT_RUNTIME;
	}
	cs_cli_catch_stop();
	struct sigaction hangup_action = { .sa_handler = on_hangup };
	sigaction(SIGHUP, &hangup_action, NULL);
	signal(SIGPIPE, SIG_IGN);

	pthread_mutex_init(&d->engine_lock, NULL);
	d->engine = cs_engine_new();
	if (!d->engine) {
		fprintf(stderr, "connscoped: out of memory\n");
		return CS_EXIT_RUNTIME;
	}
	rc = start_servers(d);
	if (rc == CS_CLI_GO_ON)
		rc = run_session(d);
	cs_engine_free(d->engine);
	return rc;
}

int main(int argc, char **argv)
{
	/* On the heap: the settings, three times over, and the servers' state. */
	struct daemon *d = calloc(1, sizeof(*d));
	if (!d) {
		fprintf(stderr, "connscoped: out of memory\n");
		return CS_EXIT_RUNTIME;
	}
	cs_cli_init(&d->cli, &daemon_cmd, "connscoped");
	int rc = run_daemon(d, argc, argv);
	free(d);
	return rc;
}
