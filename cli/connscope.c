// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope: the command line.
 *
 *   connscope attach --pid PID | --port PORT [--duration SEC] [--json]
 *
 * Data goes to stdout, diagnostics to stderr. Exit codes: 0 done,
 * 1 runtime failure (no such target, missing privilege or kernel feature),
 * 2 usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "ctl_client.h"
#include "target_args.h"
#include "cmd_diff.h"
#include "cmd_flamegraph.h"
#include "ctl_commands.h"
#include "engine.h"
#include "intervals.h"
#include "replay.h"
#include "report.h"
#include "session.h"
#include "trace_file.h"
#include "version.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static const char target_options_help[] =
	"Targets (at least one; each repeatable):\n"
	"  -p, --pid PID        all threads of process PID and the TCP ports it listens on\n"
	"  -P, --port PORT      every process listening on PORT, and workers they fork later\n"
	"  -n, --name NAME      processes whose command or executable is NAME, that listen\n"
	"  -c, --cgroup PATH    processes that listen, in cgroup v2 PATH (as\n"
	"                       /proc/PID/cgroup shows it) or below it\n"
	"  -N, --netns NS       --port's listeners are in network namespace NS: a name\n"
	"                       'ip netns list' shows, a PID, or a /proc/PID/ns/net\n"
	"                       (--pid, --name, --cgroup look in their process's own)\n"
	"\n"
	"Options:\n"
	"  -d, --duration SEC   stop after SEC seconds (default: until Ctrl-C or the target exits)\n"
	"  -t, --tail P         the tail is the requests at or above percentile P (default 99)\n"
	"      --slowest N      (attach) also list the N slowest requests (1-512): when, peer,\n"
	"                       listener, thread, index on the connection, split by cause\n"
	"      --sample-hz N    listener queue samples per second (1-1000, default 10)\n"
	"      --ring-mb N      ring buffer size in MiB, a power of two (1-1024, default 8)\n"
	"      --no-handshakes  do not follow local clients' SYN retransmits\n"
	"      --no-jvm         do not ask java targets for their thread names at the end\n"
	"                       (through the JVM's attach mechanism, as jcmd does)\n"
	"  -q, --quiet          no progress lines on stderr\n"
	"  -v, --verbose        show libbpf's log\n"
	"  -h, --help           this help\n";

static void attach_help(FILE *out)
{
	fprintf(out,
		"Usage: connscope attach (--pid PID | --port PORT | --name NAME | --cgroup PATH)... [options]\n"
		"\n"
		"Attach to a running TCP server, without restarting it, follow every connection\n"
		"and request, and report where the slowest requests' time went: accept queue,\n"
		"listen overflow (SYN retransmits), run queue, event loop, handler, send drain;\n"
		"with the conditions behind them (non-persistent connections, idle timeouts,\n"
		"listen overflow, accept contention, CPU saturation) and the accept path's\n"
		"figures: backlog depth and drops, accepts per worker, wasted wake-ups.\n"
		"\n%s"
		"  -j, --json           print the report as one JSON object\n"
		"\n"
		"Examples:\n"
		"  connscope attach --pid $(pgrep -o nginx) --duration 10\n"
		"  connscope attach --port 8080 --json > report.json\n", target_options_help);
}

static void record_help(FILE *out)
{
	fprintf(out,
		"Usage: connscope record (--pid PID | --port PORT | --name NAME | --cgroup PATH)... -o FILE\n"
		"       [options]\n"
		"\n"
		"Like attach, but write the raw event stream to FILE (mode 0600) for\n"
		"'connscope report FILE' to replay offline through the same engine.\n"
		"\n%s"
		"  -o, --output FILE    the trace file to write (required)\n"
		"\n"
		"Example:\n"
		"  connscope record --port 8080 --duration 30 -o incident.cstrace\n", target_options_help);
}

/* What attach and record share: targets, probes, duration. */
struct run_args {
	struct cs_session_options session;
	bool json;
	const char *output;
	double tail_percentile;
	size_t slowest;
};

/* --slowest N: list the N slowest requests (of the CS_EXEMPLARS the engine keeps). */
static bool parse_slowest(const char *command, const char *text, size_t *out)
{
	long value;
	if (parse_long(text, 1, CS_EXEMPLARS, &value)) {
		*out = (size_t)value;
		return true;
	}
	cs_cli_usage(command, "--slowest expects 1 to %d, not '%s'", CS_EXEMPLARS, text);
	return false;
}

/* --tail P: the tail is the requests at or above percentile P. */
static bool parse_tail(const char *command, const char *text, double *out)
{
	if (parse_double(text, 50.0, 99.999, out))
		return true;
	cs_cli_usage(command, "--tail expects a percentile from 50 to 99.999, not '%s'", text);
	return false;
}

/* Parse attach/record options. Returns -1 to go on, else an exit code. */
static int parse_run_args(const char *command, int argc, char **argv, struct run_args *args,
			  void (*help)(FILE *))
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "port", required_argument, NULL, 'P' },
		{ "name", required_argument, NULL, 'n' },
		{ "cgroup", required_argument, NULL, 'c' },
		{ "netns", required_argument, NULL, 'N' },
		{ "duration", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "output", required_argument, NULL, 'o' },
		{ "sample-hz", required_argument, NULL, 'S' },
		{ "ring-mb", required_argument, NULL, 'R' },
		{ "tail", required_argument, NULL, 't' },
		{ "slowest", required_argument, NULL, 'W' },
		{ "no-handshakes", no_argument, NULL, 'H' },
		{ "no-jvm", no_argument, NULL, 'J' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct cs_session_options *opts = &args->session;
	bool recording = !strcmp(command, "record");
	long value;
	int c;

	memset(args, 0, sizeof(*args));
	cs_session_defaults(opts, &stop_requested);

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:P:n:c:N:d:jo:t:qvh", longopts, NULL)) != -1) {
		char why[320];
		switch (cs_target_arg(c, optarg, opts, why, sizeof(why))) {
		case CS_TARGET_ARG_TAKEN:
			continue;
		case CS_TARGET_ARG_BAD:
			return cs_cli_usage(command, "%s", why);
		case CS_TARGET_ARG_NOT_MINE:
			break;
		}
		switch (c) {
		case 'j':
			if (recording)
				return cs_cli_usage(command, "unknown option '--json' (use 'connscope report --json')");
			args->json = true;
			break;
		case 'o':
			if (!recording)
				return cs_cli_usage(command, "-o/--output is for 'connscope record -o FILE', not %s",
						   command);
			if (!*optarg)
				return cs_cli_usage(command, "-o/--output expects a file name, not ''");
			args->output = optarg;
			break;
		case 't':
			if (!parse_tail(command, optarg, &args->tail_percentile))
				return EXIT_USAGE;
			break;
		case 'W':
			if (recording)
				return cs_cli_usage(command, "--slowest is for the report: 'connscope report --slowest N FILE'");
			if (!parse_slowest(command, optarg, &args->slowest))
				return EXIT_USAGE;
			break;
		case 'S':
			if (!parse_long(optarg, 1, 1000, &value))
				return cs_cli_usage(command, "--sample-hz expects 1-1000, not '%s'", optarg);
			opts->sample_hz = (unsigned int)value;
			break;
		case 'R':
			if (!parse_long(optarg, 1, 1024, &value) || (value & (value - 1)))
				return cs_cli_usage(command, "--ring-mb expects a power of two from 1 to 1024, not '%s'", optarg);
			opts->probe.ring_bytes = (uint32_t)value << 20;
			opts->probe.wakeup_bytes = opts->probe.ring_bytes / 32;
			break;
		case 'H':
			opts->probe.trace_handshakes = false;
			break;
		case 'J':
			opts->no_jvm = true;
			break;
		case 'q':
			opts->quiet = true;
			break;
		case 'v':
			opts->probe.verbose = true;
			break;
		case 'h':
			help(stdout);
			return 0;
		default: {
			char msg[512];
			return cs_cli_usage(command, "%s", cli_refused_option(c, argv, longopts, msg, sizeof(msg)));
		}
		}
	}
	if (optind < argc)
		return cs_cli_usage(command, "unexpected argument '%s'", argv[optind]);
	if (opts->pid_count == 0 && opts->port_count == 0 && !cs_target_match_any(&opts->match))
		return cs_cli_usage(command, "name a target with --pid PID, --port PORT, --name NAME or --cgroup PATH");
	if (recording && !args->output)
		return cs_cli_usage(command, "name the trace file with -o FILE");

	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	return -1;
}

static void print_report(const struct cs_engine *engine, const struct cs_report_meta *meta, bool json)
{
	if (json)
		cs_report_json(stdout, engine, meta);
	else
		cs_report_text(stdout, engine, meta);
}

static int cmd_attach(int argc, char **argv)
{
	struct run_args args;
	int rc = parse_run_args("attach", argc, argv, &args, attach_help);
	if (rc >= 0)
		return rc;

	struct cs_engine *engine = cs_engine_new();
	if (!engine) {
		fprintf(stderr, "connscope: out of memory\n");
		return EXIT_RUNTIME;
	}
	struct cs_session_result result;
	char errmsg[CS_ERRMSG_LEN];
	rc = 0;
	if (cs_session_run(&args.session, engine, &result, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscope: %s\n", errmsg);
		rc = EXIT_RUNTIME;
	} else {
		result.meta.tail_percentile = args.tail_percentile;
		result.meta.slowest = args.slowest;
		print_report(engine, &result.meta, args.json);
	}
	cs_engine_free(engine);
	return rc;
}

static int tee_to_trace(void *ctx, const void *record, size_t len)
{
	return cs_trace_write(ctx, record, len);
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmd_record(int argc, char **argv)
{
	struct run_args args;
	int rc = parse_run_args("record", argc, argv, &args, record_help);
	if (rc >= 0)
		return rc;

	struct cs_trace_writer writer;
	struct cs_run_stamp stamp;
	cs_run_stamp_now(&stamp);
	int err = cs_trace_create(&writer, args.output, "", monotonic_ns(), &stamp);
	if (err) {
		fprintf(stderr, "connscope: cannot create %s: %s%s\n", args.output, strerror(-err),
			err == -ELOOP ? " (it is a symlink: connscope does not write through links)" : "");
		return EXIT_RUNTIME;
	}
	struct cs_engine *engine = cs_engine_new();
	if (!engine) {
		fprintf(stderr, "connscope: out of memory\n");
		cs_trace_finish(&writer, &(struct cs_report_meta){ 0 });
		return EXIT_RUNTIME;
	}
	args.session.tee = tee_to_trace;
	args.session.tee_ctx = &writer;
	struct cs_session_result result;
	char errmsg[CS_ERRMSG_LEN];
	rc = 0;
	if (cs_session_run(&args.session, engine, &result, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscope: %s\n", errmsg);
		cs_trace_finish(&writer, &(struct cs_report_meta){ 0 });
		unlink(args.output);
		rc = EXIT_RUNTIME;
	} else {
		uint64_t records = writer.records;
		err = cs_trace_finish(&writer, &result.meta);
		if (err) {
			fprintf(stderr, "connscope: writing %s failed: %s\n", args.output, strerror(-err));
			rc = EXIT_RUNTIME;
		} else if (!args.session.quiet) {
			fprintf(stderr, "connscope: recorded %llu records (%llu lost) to %s\n",
				(unsigned long long)records, (unsigned long long)result.meta.events_lost,
				args.output);
		}
	}
	cs_engine_free(engine);
	return rc;
}

static void report_help(FILE *out)
{
	fprintf(out,
		"Usage: connscope report FILE [--json] [--tail P] [--slowest N] [--interval SEC]\n"
		"                        [--from SEC] [--to SEC]\n"
		"\n"
		"Replay a trace written by 'connscope record' through the engine and print\n"
		"the same report attach would have printed.\n"
		"\n"
		"  -j, --json    print the report as one JSON object\n"
		"  -t, --tail P  the tail is the requests at or above percentile P (default 99)\n"
		"      --slowest N  also list the N slowest requests (1-512), one by one\n"
		"      --from SEC, --to SEC\n"
		"                only the part of the recording from SEC to SEC seconds after\n"
		"                its start: as if attached then (older connections partial)\n"
		"  -i, --interval SEC\n"
		"                a line per SEC seconds of the run instead: requests/s, p50,\n"
		"                p99, the cause holding most of that interval's tail, drops\n"
		"  -h, --help    this help\n");
}

static void interval_before_record(void *ctx, const struct cs_engine *engine, uint64_t ts_ns)
{
	cs_intervals_advance(ctx, engine, ts_ns);
}

/* connscope report --interval: a line per interval, then the run's totals. */
static int report_intervals(const char *path, double interval_s, double tail, const struct cs_replay_watch *window)
{
	struct cs_intervals intervals;
	if (cs_intervals_init(&intervals, (uint64_t)(interval_s * 1e9), tail, stdout)) {
		fprintf(stderr, "connscope: out of memory\n");
		return EXIT_RUNTIME;
	}
	struct cs_replay_watch watch = { .before_record = interval_before_record, .ctx = &intervals,
					 .from_s = window->from_s, .to_s = window->to_s };
	struct cs_engine *engine;
	struct cs_report_meta meta;
	int rc = EXIT_RUNTIME;
	if (cs_replay_trace_watched(path, &engine, &meta, &watch) == 0) {
		cs_intervals_finish(&intervals, engine);
		printf("%s: %" PRIu64 " requests in %.1f s; %" PRIu64 " records lost (the trace counts them for the "
		       "whole run only)\n", window->to_s > 0 || window->from_s > 0 ? "the window" : "whole run",
		       engine->requests.requests, meta.duration_s, meta.events_lost);
		cs_engine_free(engine);
		rc = 0;
	}
	cs_intervals_free(&intervals);
	return rc;
}

static int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "tail", required_argument, NULL, 't' },
		{ "interval", required_argument, NULL, 'i' },
		{ "slowest", required_argument, NULL, 'W' },
		{ "from", required_argument, NULL, 'F' },
		{ "to", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct cs_replay_watch window = { 0 };
	bool json = false;
	double tail = 0, interval_s = 0;
	size_t slowest_count = 0;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jt:i:W:F:T:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 't':
			if (!parse_tail("report", optarg, &tail))
				return EXIT_USAGE;
			break;
		case 'W':
			if (!parse_slowest("report", optarg, &slowest_count))
				return EXIT_USAGE;
			break;
		case 'F':
			if (!parse_double(optarg, 0, 31536000, &window.from_s))
				return cs_cli_usage("report", "--from expects seconds into the recording (0 or more), not '%s'", optarg);
			break;
		case 'T':
			if (!parse_double(optarg, 0, 31536000, &window.to_s) || window.to_s <= 0)
				return cs_cli_usage("report", "--to expects seconds into the recording (above 0), not '%s'", optarg);
			break;
		case 'i':
			if (!parse_double(optarg, 0.001, 86400, &interval_s))
				return cs_cli_usage("report", "--interval expects seconds from 0.001 to 86400, not '%s'", optarg);
			break;
		case 'h':
			report_help(stdout);
			return 0;
		default: {
			char msg[512];
			return cs_cli_usage("report", "%s", cli_refused_option(c, argv, longopts, msg, sizeof(msg)));
		}
		}
	}
	if (optind != argc - 1)
		return cs_cli_usage("report", "name one trace file");
	if (window.to_s > 0 && window.to_s <= window.from_s)
		return cs_cli_usage("report", "--to (%g s) must come after --from (%g s)", window.to_s, window.from_s);
	if (interval_s > 0) {
		if (json)
			return cs_cli_usage("report", "--interval prints a table: it takes no --json");
		return report_intervals(argv[optind], interval_s, tail, &window);
	}
	struct cs_engine *engine;
	struct cs_report_meta meta;
	if (cs_replay_trace_watched(argv[optind], &engine, &meta, &window))
		return EXIT_RUNTIME;
	meta.tail_percentile = tail;
	meta.slowest = slowest_count;
	print_report(engine, &meta, json);
	cs_engine_free(engine);
	return 0;
}

static void main_help(FILE *out)
{
	fprintf(out,
		"Usage: connscope COMMAND [options]\n"
		"\n"
		"Find why a TCP server's tail latency grows: accept-queue waits, full backlogs\n"
		"and SYN drops, slow or unfair accepting threads, idle timeouts, connection\n"
		"set-up, run-queue delay, a blocked event loop, slow handlers, send drain.\n"
		"\n"
		"Commands:\n"
		"  attach     attach to a running server (--pid, --port, --name, --cgroup) and report\n"
		"  record     the same, writing the raw event stream to a file\n"
		"  report     replay a recorded file and report\n"
		"  diff       what changed between two runs (JSON reports or recorded files)\n"
		"  flamegraph where the tail requests' time went, as stacks (SVG or folded stacks)\n"
		"  status     is the daemon (connscoped) up, what does it watch\n"
		"  snapshot   the daemon's report so far\n"
		"  reset      clear the daemon's statistics\n"
		"  top        live full-screen view (from the daemon, or attached in-process)\n"
		"  version    print the version\n"
		"  help       this help\n"
		"\n"
		"'connscope COMMAND --help' describes each command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		main_help(stderr);
		return EXIT_USAGE;
	}
	const char *command = argv[1];
	if (!strcmp(command, "attach"))
		return cmd_attach(argc - 1, argv + 1);
	if (!strcmp(command, "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(command, "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(command, "diff"))
		return cmd_diff(argc - 1, argv + 1);
	if (!strcmp(command, "flamegraph"))
		return cmd_flamegraph(argc - 1, argv + 1);
	if (!strcmp(command, "status"))
		return cmd_status(argc - 1, argv + 1);
	if (!strcmp(command, "snapshot"))
		return cmd_snapshot(argc - 1, argv + 1);
	if (!strcmp(command, "reset"))
		return cmd_reset(argc - 1, argv + 1);
	if (!strcmp(command, "top"))
		return cmd_top(argc - 1, argv + 1);
	if (!strcmp(command, "version") || !strcmp(command, "--version")) {
		if (argc > 2) {
			fprintf(stderr, "connscope version: unexpected argument '%s' (it takes none)\n"
				"Try 'connscope --help'.\n", argv[2]);
			return EXIT_USAGE;
		}
		printf("connscope %s (wire format %d)\n", CS_VERSION, CS_WIRE_VERSION);
		return 0;
	}
	if (!strcmp(command, "help") || !strcmp(command, "--help") || !strcmp(command, "-h")) {
		main_help(stdout);
		return 0;
	}
	fprintf(stderr, "connscope: unknown command '%s'\n", command);
	main_help(stderr);
	return EXIT_USAGE;
}
