// SPDX-License-Identifier: BSD-2-Clause
#include "options.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "number.h"
#include "route.h"

#define MAX_BACKLOG 65535
#define MAX_CONNS_LIMIT 1000000
#define MAX_ACCEPT_DELAY_US 10000000 /* 10 s */
#define MAX_TIMEOUT_MS 3600000       /* 1 hour */
#define MIN_HEADER_BYTES 256
#define MAX_HEADER_BYTES (1 << 20)

static const char *const mode_names[] = {
	[CS_ACCEPT_SHARED] = "shared",
	[CS_ACCEPT_EXCLUSIVE] = "exclusive",
	[CS_ACCEPT_REUSEPORT] = "reuseport",
	[CS_ACCEPT_ACCEPTOR] = "acceptor",
	[CS_ACCEPT_POOL] = "pool",
	[CS_ACCEPT_PREFORK] = "prefork",
};

const char *cs_accept_mode_name(enum cs_accept_mode mode)
{
	return mode_names[mode];
}

/* --help, in its sections: listening and the accept path. */
static void print_help_accept(FILE *out)
{
	fprintf(out,
		"Usage: csserver [OPTION]...\n"
		"connscope's reference HTTP/1.1 server: an epoll server that reproduces\n"
		"accept-path pathologies on demand, as a target for the profiler.\n"
		"\n"
		"Listening:\n"
		"  -p, --port N            TCP port, 0-65535, 0 = kernel's pick (default 8080)\n"
		"      --bind ADDR         numeric IPv4 or IPv6 address (default 127.0.0.1)\n"
		"  -w, --workers N         threads with an epoll loop each, 1-%d (default 2)\n"
		"      --backlog N         listen() backlog, 1-%d (default 511); the kernel\n"
		"                          caps it at net.core.somaxconn\n"
		"\n"
		"Accept path:\n"
		"      --accept MODE       how connections reach the workers (default shared):\n"
		"          shared      every worker's epoll watches the one listener, level-\n"
		"                      triggered: a thundering herd, the losers' accept4()\n"
		"                      fails with EAGAIN\n"
		"          exclusive   the same with EPOLLEXCLUSIVE\n"
		"          reuseport   one SO_REUSEPORT listener per worker\n"
		"          acceptor    one thread (cs-acceptor) blocks in accept4() and hands\n"
		"                      connections to the workers in turn\n"
		"          pool        Tomcat's NIO connector: cs-acceptor accepts, one\n"
		"                      thread (cs-poller) waits in epoll_wait() and queues\n"
		"                      ready connections, --workers pool threads (cs-pool-N)\n"
		"                      read and serve them (/, /block/MS, /spin/MS; a\n"
		"                      /block holds its pool thread)\n"
		"          prefork     gunicorn's sync workers, Apache's prefork: --workers\n"
		"                      threads (cs-prefork-N) each block in accept4(), then\n"
		"                      serve that connection to its end before the next\n"
		"                      (same routes as pool)\n"
		"      --multi-accept      epoll modes: accept until EAGAIN on each readiness\n"
		"                          event (default: one per event, like nginx's\n"
		"                          multi_accept off)\n"
		"      --accept-delay-us N pause N us before every accept call (a slow or\n"
		"                          starved acceptor), 0-%d (default 0)\n"
		"      --max-conns N       acceptor mode: while N connections are open the\n"
		"                          acceptor waits (off-CPU) for one to close before\n"
		"                          it calls accept() again, as Tomcat's\n"
		"                          maxConnections does; 1-%d, 0 = no limit\n"
		"                          (default 0)\n"
		"\n",
		CS_MAX_WORKERS, MAX_BACKLOG, MAX_ACCEPT_DELAY_US, MAX_CONNS_LIMIT);
}

static void print_help_connections(FILE *out)
{
	fprintf(out,
		"Connections:\n"
		"      --no-keepalive      Connection: close on every response, then close\n"
		"      --nagle             leave Nagle's algorithm on (no TCP_NODELAY): with\n"
		"                          /split, the body waits for the client's delayed ACK\n"
		"      --idle-timeout-ms N close keep-alive connections idle for N ms, and\n"
		"                          responses that make no progress for N ms;\n"
		"                          0-%d, 0 = never (default 0; a stalled response\n"
		"                          is then dropped after 60 s)\n"
		"      --header-timeout-ms N\n"
		"                          408 and close when a request header is not\n"
		"                          complete N ms after its first byte (or after\n"
		"                          connecting); 0-%d, 0 = no limit (default 5000)\n"
		"      --max-header-bytes N\n"
		"                          413 and close for a larger request header,\n"
		"                          %d-%d (default 8192)\n"
		"      --block-worker K    /block/MS blocks only on worker K, other workers\n"
		"                          answer it at once; -1 = all (default -1)\n"
		"\n"
		"Other:\n"
		"  -q, --quiet             no informational messages (the listening line stays)\n"
		"  -h, --help              this text\n"
		"\n",
		MAX_TIMEOUT_MS, MAX_TIMEOUT_MS, MIN_HEADER_BYTES, MAX_HEADER_BYTES);
}

static void print_help_routes(FILE *out)
{
	fprintf(out,
		"Routes (GET and HEAD; other methods get 405; query strings are ignored):\n"
		"  /            200 \"ok\\n\"\n"
		"  /bytes/N     N-byte body, N <= %llu (64 MiB)\n"
		"  /sleep/MS    answer after MS ms without blocking the loop, MS <= %llu\n"
		"  /block/MS    block the worker's loop MS ms in one nanosleep (off-CPU, in\n"
		"               handle_block), MS <= %llu\n"
		"  /spin/MS     burn CPU on the worker for MS ms (on-CPU, in handle_spin),\n"
		"               MS <= %llu\n"
		"  /split/N     like /bytes/N, but the body goes in a write of its own\n"
		"\n"
		"Once listening, one line goes to stdout:\n"
		"  csserver: listening on 127.0.0.1:PORT mode=MODE workers=N backlog=B pid=PID\n"
		"SIGTERM or SIGINT stops the server (exit 0) once running handlers return;\n"
		"a per-worker summary goes to stderr. Bad options exit 2.\n"
		"\n",
		(unsigned long long)CS_ROUTE_MAX_BYTES, (unsigned long long)CS_ROUTE_MAX_SLEEP_MS,
		(unsigned long long)CS_ROUTE_MAX_BLOCK_MS, (unsigned long long)CS_ROUTE_MAX_SPIN_MS);
}

static void print_help_examples(FILE *out)
{
	fputs(
		"Examples:\n"
		"  csserver --port 8080\n"
		"      two workers share one listener: see the herd under wrk -t2 -c100 -d10s\n"
		"  csserver --accept reuseport --block-worker 0\n"
		"      then GET /block/200: one SO_REUSEPORT queue stalls, the other drains\n"
		"  csserver --accept acceptor --accept-delay-us 2000 --backlog 16\n"
		"      a slow dedicated acceptor and a short queue: the accept queue overflows\n"
		"  csserver --accept acceptor --max-conns 4 --idle-timeout-ms 300\n"
		"      at 4 open connections new ones wait in the queue for an idle close\n"
		"  csserver --no-keepalive --workers 1\n"
		"      a new connection per request (ab -n 10000 -c 50, without -k)\n"
		"  csserver --idle-timeout-ms 200 --header-timeout-ms 300\n"
		"      server-side closes of idle keep-alive connections and of slow headers\n",
		out);
}

static void print_help(FILE *out)
{
	print_help_accept(out);
	print_help_connections(out);
	print_help_routes(out);
	print_help_examples(out);
}

/* An integer in [min, max] (number.h's rule), or a message naming the
 * option and the range. */
static int parse_int_option(const char *option, const char *arg, long long min,
			    long long max, long long *out, FILE *err)
{
	char expects[64], why[256];

	snprintf(expects, sizeof(expects), "an integer from %lld to %lld", min, max);
	const struct cs_number number = { option, (double)min, (double)max,
					  CS_NUMBER_INTEGER, expects };
	if (cs_number_read_integer(&number, arg, out, why, sizeof(why)) == 0)
		return 0;
	fprintf(err, "csserver: %s\n", why);
	return -1;
}

static int parse_accept_mode(const char *arg, enum cs_accept_mode *mode, FILE *err)
{
	for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++) {
		if (strcmp(arg, mode_names[i]) == 0) {
			*mode = (enum cs_accept_mode)i;
			return 0;
		}
	}
	fprintf(err, "csserver: --accept: '%s' is not a mode "
		     "(allowed: shared, exclusive, reuseport, acceptor, pool, prefork)\n",
		arg);
	return -1;
}

/* Fills cfg's socket address from the --bind text and the port. */
static int resolve_bind(struct cs_config *cfg, const char *text, FILE *err)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&cfg->bind_addr;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&cfg->bind_addr;

	memset(&cfg->bind_addr, 0, sizeof(cfg->bind_addr));
	if (inet_pton(AF_INET, text, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)cfg->port);
		cfg->bind_addr_len = sizeof(*sin);
		snprintf(cfg->bind_text, sizeof(cfg->bind_text), "%s", text);
		return 0;
	}
	if (inet_pton(AF_INET6, text, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)cfg->port);
		cfg->bind_addr_len = sizeof(*sin6);
		snprintf(cfg->bind_text, sizeof(cfg->bind_text), "[%s]", text);
		return 0;
	}
	fprintf(err, "csserver: --bind: '%s' is not a numeric IPv4 or IPv6 address "
		     "(e.g. 127.0.0.1 or ::1)\n",
		text);
	return -1;
}

enum {
	OPT_BIND = 256,
	OPT_BACKLOG,
	OPT_ACCEPT,
	OPT_MULTI_ACCEPT,
	OPT_ACCEPT_DELAY_US,
	OPT_MAX_CONNS,
	OPT_NO_KEEPALIVE,
	OPT_NAGLE,
	OPT_IDLE_TIMEOUT_MS,
	OPT_HEADER_TIMEOUT_MS,
	OPT_MAX_HEADER_BYTES,
	OPT_BLOCK_WORKER,
};

static const struct option long_options[] = {
	{ "port", required_argument, NULL, 'p' },
	{ "bind", required_argument, NULL, OPT_BIND },
	{ "workers", required_argument, NULL, 'w' },
	{ "backlog", required_argument, NULL, OPT_BACKLOG },
	{ "accept", required_argument, NULL, OPT_ACCEPT },
	{ "multi-accept", no_argument, NULL, OPT_MULTI_ACCEPT },
	{ "accept-delay-us", required_argument, NULL, OPT_ACCEPT_DELAY_US },
	{ "max-conns", required_argument, NULL, OPT_MAX_CONNS },
	{ "no-keepalive", no_argument, NULL, OPT_NO_KEEPALIVE },
	{ "nagle", no_argument, NULL, OPT_NAGLE },
	{ "idle-timeout-ms", required_argument, NULL, OPT_IDLE_TIMEOUT_MS },
	{ "header-timeout-ms", required_argument, NULL, OPT_HEADER_TIMEOUT_MS },
	{ "max-header-bytes", required_argument, NULL, OPT_MAX_HEADER_BYTES },
	{ "block-worker", required_argument, NULL, OPT_BLOCK_WORKER },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static void set_defaults(struct cs_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->port = 8080;
	cfg->workers = 2;
	cfg->backlog = 511;
	cfg->accept_mode = CS_ACCEPT_SHARED;
	cfg->keepalive = true;
	cfg->header_timeout_ms = 5000;
	cfg->max_header_bytes = 8192;
	cfg->block_worker = -1;
}

/* An option that takes a value: 0, -1 after a message (a bad value), or 1
 * when opt is not one of them. */
static int parse_value_option(int opt, const char *arg, struct cs_config *cfg,
			      const char **bind_text, FILE *err)
{
	long long v = 0; /* read into cfg even when the value was bad */
	int bad = 0;

	switch (opt) {
	case 'p':
		bad = parse_int_option("--port", arg, 0, 65535, &v, err);
		cfg->port = (int)v;
		break;
	case OPT_BIND:
		*bind_text = arg;
		break;
	case 'w':
		bad = parse_int_option("--workers", arg, 1, CS_MAX_WORKERS, &v, err);
		cfg->workers = (int)v;
		break;
	case OPT_BACKLOG:
		bad = parse_int_option("--backlog", arg, 1, MAX_BACKLOG, &v, err);
		cfg->backlog = (int)v;
		break;
	case OPT_ACCEPT:
		bad = parse_accept_mode(arg, &cfg->accept_mode, err);
		break;
	case OPT_ACCEPT_DELAY_US:
		bad = parse_int_option("--accept-delay-us", arg, 0, MAX_ACCEPT_DELAY_US, &v, err);
		cfg->accept_delay_us = (uint32_t)v;
		break;
	case OPT_MAX_CONNS:
		bad = parse_int_option("--max-conns", arg, 0, MAX_CONNS_LIMIT, &v, err);
		cfg->max_conns = (uint32_t)v;
		break;
	case OPT_IDLE_TIMEOUT_MS:
		bad = parse_int_option("--idle-timeout-ms", arg, 0, MAX_TIMEOUT_MS, &v, err);
		cfg->idle_timeout_ms = (uint32_t)v;
		break;
	case OPT_HEADER_TIMEOUT_MS:
		bad = parse_int_option("--header-timeout-ms", arg, 0, MAX_TIMEOUT_MS, &v, err);
		cfg->header_timeout_ms = (uint32_t)v;
		break;
	case OPT_MAX_HEADER_BYTES:
		bad = parse_int_option("--max-header-bytes", arg, MIN_HEADER_BYTES,
				       MAX_HEADER_BYTES, &v, err);
		cfg->max_header_bytes = (uint32_t)v;
		break;
	case OPT_BLOCK_WORKER:
		/* Range checked in check_config(), against --workers, which
		 * may come later on the line. */
		bad = parse_int_option("--block-worker", arg, INT_MIN, INT_MAX, &v, err);
		cfg->block_worker = (int)v;
		break;
	default:
		return 1;
	}
	return bad ? -1 : 0;
}

/* An option without a value, or getopt's word for a mistake: how the
 * parse goes on (CS_OPTIONS_RUN: with the next option). */
static enum cs_options_result parse_flag_option(int opt, char **argv, struct cs_config *cfg,
						FILE *out, FILE *err)
{
	switch (opt) {
	case OPT_MULTI_ACCEPT:
		cfg->multi_accept = true;
		break;
	case OPT_NAGLE:
		cfg->nagle = true;
		break;
	case OPT_NO_KEEPALIVE:
		cfg->keepalive = false;
		break;
	case 'q':
		cfg->quiet = true;
		break;
	case 'h':
		print_help(out);
		return CS_OPTIONS_HELP;
	case ':':
		fprintf(err, "csserver: %s needs a value (see --help)\n", argv[optind - 1]);
		return CS_OPTIONS_USAGE;
	default:
		fprintf(err, "csserver: unknown option '%s' (see --help)\n", argv[optind - 1]);
		return CS_OPTIONS_USAGE;
	}
	return CS_OPTIONS_RUN;
}

/* The checks that take more than one option into account. */
static enum cs_options_result check_config(struct cs_config *cfg, const char *bind_text, FILE *err)
{
	if (cfg->block_worker < -1 || cfg->block_worker >= cfg->workers) {
		fprintf(err, "csserver: --block-worker: %d is out of range (allowed: -1..%d "
			     "with --workers %d)\n",
			cfg->block_worker, cfg->workers - 1, cfg->workers);
		return CS_OPTIONS_USAGE;
	}
	/* Only the acceptor thread can stop accepting on its own: in the epoll
	 * modes every worker accepts, and a limit would be a per-worker one. */
	if (cfg->max_conns && cfg->accept_mode != CS_ACCEPT_ACCEPTOR) {
		fprintf(err, "csserver: --max-conns needs --accept acceptor (given: --accept %s)\n",
			cs_accept_mode_name(cfg->accept_mode));
		return CS_OPTIONS_USAGE;
	}
	if (resolve_bind(cfg, bind_text, err) != 0)
		return CS_OPTIONS_USAGE;
	return CS_OPTIONS_RUN;
}

enum cs_options_result cs_options_parse(int argc, char **argv, struct cs_config *cfg,
					FILE *out, FILE *err)
{
	const char *bind_text = "127.0.0.1";
	int opt;

	set_defaults(cfg);
	opterr = 0; /* our own messages, which name the option */
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":p:w:qh", long_options, NULL)) != -1) {
		int valued = parse_value_option(opt, optarg, cfg, &bind_text, err);

		if (valued < 0)
			return CS_OPTIONS_USAGE;
		if (valued == 0)
			continue;
		enum cs_options_result r = parse_flag_option(opt, argv, cfg, out, err);
		if (r != CS_OPTIONS_RUN)
			return r;
	}
	if (optind < argc) {
		fprintf(err, "csserver: unexpected argument '%s' (see --help)\n", argv[optind]);
		return CS_OPTIONS_USAGE;
	}
	return check_config(cfg, bind_text, err);
}
