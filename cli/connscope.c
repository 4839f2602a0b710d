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
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "report.h"
#include "session.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define PID_MAX_LIMIT 4194304 /* the kernel's upper bound for pid_max */

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

__attribute__((format(printf, 2, 3)))
static int usage_error(const char *command, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "connscope %s: ", command);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'connscope %s --help'.\n", command);
	return EXIT_USAGE;
}

/* Strict integer parse: the whole string, within [min, max]. */
static bool parse_long(const char *text, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long value = strtol(text, &end, 10);
	if (errno || end == text || *end || value < min || value > max)
		return false;
	*out = value;
	return true;
}

static bool parse_double(const char *text, double min, double max, double *out)
{
	char *end;
	errno = 0;
	double value = strtod(text, &end);
	if (errno || end == text || *end || !(value >= min && value <= max))
		return false;
	*out = value;
	return true;
}

static void attach_help(FILE *out)
{
	fprintf(out,
		"Usage: connscope attach (--pid PID | --port PORT)... [options]\n"
		"\n"
		"Attach to a running TCP server, without restarting it, and report where\n"
		"connections wait between the kernel's accept queue and the server's accept():\n"
		"accept-queue wait, backlog depth and drops, SYN retransmits of local clients,\n"
		"accepts per worker thread and wasted (EAGAIN) wake-ups.\n"
		"\n"
		"Targets (at least one; each repeatable):\n"
		"  -p, --pid PID        all threads of process PID and the TCP ports it listens on\n"
		"  -P, --port PORT      every process listening on PORT, and workers they fork later\n"
		"\n"
		"Options:\n"
		"  -d, --duration SEC   stop after SEC seconds (default: until Ctrl-C or the target exits)\n"
		"  -j, --json           print the report as one JSON object\n"
		"      --sample-hz N    listener backlog walks per second (1-1000, default 10)\n"
		"      --ring-mb N      ring buffer size in MiB, a power of two (1-1024, default 8)\n"
		"      --no-handshakes  do not follow local clients' SYN retransmits\n"
		"  -q, --quiet          no progress lines on stderr\n"
		"  -v, --verbose        show libbpf's log\n"
		"  -h, --help           this help\n"
		"\n"
		"Examples:\n"
		"  connscope attach --pid $(pgrep -o nginx) --duration 10\n"
		"  connscope attach --port 8080 --json > report.json\n");
}

static int cmd_attach(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "port", required_argument, NULL, 'P' },
		{ "duration", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "sample-hz", required_argument, NULL, 'S' },
		{ "ring-mb", required_argument, NULL, 'R' },
		{ "no-handshakes", no_argument, NULL, 'H' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct cs_session_options opts = {
		.sample_hz = 10,
		.probe = {
			.ring_bytes = 8u << 20,
			.wakeup_bytes = 256u << 10,
			.trace_handshakes = true,
		},
		.stop = &stop_requested,
	};
	bool json = false;
	long value;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:P:d:jqvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!parse_long(optarg, 1, PID_MAX_LIMIT, &value))
				return usage_error("attach", "--pid expects a process id (1-%d), not '%s'",
						   PID_MAX_LIMIT, optarg);
			if (opts.pid_count >= CS_MAX_TARGETS)
				return usage_error("attach", "at most %d --pid options", CS_MAX_TARGETS);
			opts.pids[opts.pid_count++] = (pid_t)value;
			break;
		case 'P':
			if (!parse_long(optarg, 1, 65535, &value))
				return usage_error("attach", "--port expects a TCP port (1-65535), not '%s'", optarg);
			if (opts.port_count >= CS_MAX_TARGETS)
				return usage_error("attach", "at most %d --port options", CS_MAX_TARGETS);
			opts.ports[opts.port_count++] = (uint16_t)value;
			break;
		case 'd':
			if (!parse_double(optarg, 0.1, 31536000.0, &opts.duration_s))
				return usage_error("attach", "--duration expects seconds (0.1-31536000), not '%s'", optarg);
			break;
		case 'j':
			json = true;
			break;
		case 'S':
			if (!parse_long(optarg, 1, 1000, &value))
				return usage_error("attach", "--sample-hz expects 1-1000, not '%s'", optarg);
			opts.sample_hz = (unsigned int)value;
			break;
		case 'R':
			if (!parse_long(optarg, 1, 1024, &value) || (value & (value - 1)))
				return usage_error("attach", "--ring-mb expects a power of two from 1 to 1024, not '%s'", optarg);
			opts.probe.ring_bytes = (uint32_t)value << 20;
			opts.probe.wakeup_bytes = opts.probe.ring_bytes / 32;
			break;
		case 'H':
			opts.probe.trace_handshakes = false;
			break;
		case 'q':
			opts.quiet = true;
			break;
		case 'v':
			opts.probe.verbose = true;
			break;
		case 'h':
			attach_help(stdout);
			return 0;
		case ':':
			return usage_error("attach", "option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("attach", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("attach", "unexpected argument '%s'", argv[optind]);
	if (opts.pid_count == 0 && opts.port_count == 0)
		return usage_error("attach", "name a target with --pid PID or --port PORT");

	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	struct cs_engine *engine = cs_engine_new();
	if (!engine) {
		fprintf(stderr, "connscope: out of memory\n");
		return EXIT_RUNTIME;
	}
	struct cs_session_result result;
	char errmsg[CS_ERRMSG_LEN];
	int rc = 0;
	if (cs_session_run(&opts, engine, &result, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscope: %s\n", errmsg);
		rc = EXIT_RUNTIME;
	} else if (json) {
		cs_report_json(stdout, engine, &result.meta);
	} else {
		cs_report_text(stdout, engine, &result.meta);
	}
	cs_engine_free(engine);
	return rc;
}

static void main_help(FILE *out)
{
	fprintf(out,
		"Usage: connscope COMMAND [options]\n"
		"\n"
		"Find why a TCP server's tail latency grows: accept-queue waits, full backlogs\n"
		"and SYN drops, slow or unfair accepting threads.\n"
		"\n"
		"Commands:\n"
		"  attach     attach to a running server (--pid or --port) and report\n"
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
	if (!strcmp(command, "version") || !strcmp(command, "--version")) {
		printf("connscope 0.1 (wire format %d)\n", CS_WIRE_VERSION);
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
