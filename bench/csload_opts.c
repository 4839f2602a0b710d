// SPDX-License-Identifier: BSD-2-Clause
#include "csload_opts.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "number.h"

/* --help, in its sections: the target and the load. */
static void usage_load(FILE *out)
{
	fprintf(out,
		"Usage: csload --port N [options]\n"
		"\n"
		"A precise HTTP/1.1 load generator for loopback servers. It sends GET\n"
		"requests and measures each one from its *intended* send time, so a stalled\n"
		"server shows its full tail (no coordinated omission). Times are\n"
		"CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns().\n"
		"\n"
		"Target (loopback only: any address outside 127.0.0.0/8 and ::1 is refused):\n"
		"  -H, --host ADDR          numeric address or 'localhost' (default 127.0.0.1)\n"
		"  -p, --port N             TCP port (required)\n"
		"\n"
		"Load:\n"
		"  -c, --connections N      concurrent connections (default 10)\n"
		"  -t, --threads N          threads, each one epoll loop over its share of the\n"
		"                           connections (default 1, at most --connections)\n"
		"  -d, --duration SEC       run time, a float (default 10 s if -n is not given)\n"
		"  -n, --requests N         total requests; with -d, whichever ends first.\n"
		"                           Without -d the run is still cut at %.0f s.\n"
		"  -R, --rate R             open loop: R requests/s over all connections on a\n"
		"                           fixed schedule (wrk2-style). Each request is due\n"
		"                           at its intended time and goes out on the longest-\n"
		"                           idle connection; latency counts from the intended\n"
		"                           time, waiting for a free connection included.\n"
		"                           Requests due before the end that never went out\n"
		"                           are reported as unsent.\n"
		"                           Without -R: closed loop, each connection sends its\n"
		"                           next request when the previous response is done.\n"
		"      --gap-ms MS          closed loop: idle time between a response and the\n"
		"                           next request on the same connection (e.g. to reach\n"
		"                           a server's keep-alive timeout)\n"
		"      --no-keepalive       one request per connection (Connection: close);\n"
		"                           the connect is part of the request's latency\n"
		"      --tls                HTTPS: TLS (OpenSSL) over each connection, its\n"
		"                           version negotiated; no certificate is checked, no\n"
		"                           session reused (every connection a full handshake);\n"
		"                           a close sends a close_notify alert first.\n"
		"                           The handshake is part of the connect: in the first\n"
		"                           request's latency and service time, not in its\n"
		"                           time from the send\n"
		"      --tls-version V      with --tls (implied): only TLS V, 1.2 or 1.3\n"
		"\n",
		CSL_HARD_CAP_S);
}

static void usage_requests(FILE *out)
{
	fputs(
		"Requests:\n"
		"      --path PATH          request path (default /)\n"
		"      --mix PATH:FRACTION  send FRACTION (0..1) of the requests to PATH instead\n"
		"                           of --path; repeatable, fractions sum to at most 1\n"
		"      --seed N             seed of the PRNG that picks --mix paths (default 1)\n"
		"      --connect-timeout-ms MS  connect timeout (default 10000)\n"
		"      --timeout-ms MS      response timeout, from the send (default 10000)\n"
		"      --spin-us US         wake US early and busy-wait for each scheduled send\n"
		"                           (default 0). A sleeping thread wakes late (tens of\n"
		"                           us, more in VMs): that lag counts in the latency and\n"
		"                           is reported as send_lag; spinning removes it at the\n"
		"                           cost of CPU the server may need\n"
		"      --busy-poll          never sleep: poll the sockets, yielding the CPU when\n"
		"                           idle. Removes the client's wake-up lag from every\n"
		"                           response (on VMs, up to milliseconds at p99); costs\n"
		"                           a CPU the server may need"
		"\n",
		out);
}

static void usage_output(FILE *out)
{
	fputs(
		"Output:\n"
		"      --json FILE          write one JSON object to FILE ('-': stdout, and the\n"
		"                           human summary goes to stderr). latency_us counts\n"
		"                           from each request's intended time; service_us from\n"
		"                           when the client began it (connect, with --tls and\n"
		"                           its handshake, or send); from_send_us from the\n"
		"                           request fully written (with --tls, encrypted);\n"
		"                           from_send_running_us: the same less the client\n"
		"                           thread's own waits for a CPU meanwhile (schedstat\n"
		"                           run_delay: woken and not yet run); with --tls,\n"
		"                           tls_handshakes (count, per version, times) and\n"
		"                           tls_close_notify (alerts sent at closes)\n"
		"      --log FILE           one line per completed request:\n"
		"                           intended_ns sent_ns done_ns latency_ns local_port status path\n"
		"                           running_ns\n"
		"                           sent: request fully written; done: response\n"
		"                           complete; local_port: the server's remote port;\n"
		"                           running_ns: from the send less the client's own\n"
		"                           waits for a CPU (\"-\" when its schedstat is unread)\n"
		"  -q, --quiet              no human summary\n"
		"      --self-test          check the built-in parsers and statistics, then exit\n"
		"  -h, --help               this text\n"
		"\n"
		"Errors are counted by kind, never retried: connect_errors, connect_timeouts,\n"
		"tls_handshake_errors (failed, or longer than --connect-timeout-ms),\n"
		"timeouts, eof_before_response (the keep-alive race: request lost),\n"
		"eof_mid_response, resets, bad_responses, non_2xx, unfinished, other.\n"
		"After a server close csload reconnects (counted as reconnects). Connects\n"
		"are timed (non-blocking connect until writable) so SYN retransmits show.\n"
		"\n"
		"Exit status: 0 it ran (even with request errors), 1 it could not run (e.g.\n"
		"every connect refused), 2 usage error or non-loopback target.\n"
		"\n"
		"Examples:\n"
		"  csload -p 8080 -c 50 -t 2 -d 10                    closed loop, 10 s\n"
		"  csload -p 8080 -c 20 -R 2000 -d 30 --json out.json open loop, 2000 req/s\n"
		"  csload -p 8080 -n 1000 --no-keepalive --log req.log   1000 connections\n"
		"  csload -p 8080 --path /bytes/10240 --mix /block/50:0.02 -d 5\n"
		"  csload -p 8080 -c 4 --gap-ms 5100 -d 30            cross a 5 s idle timeout\n"
		"  csload -p 8443 --tls --tls-version 1.3 -c 10 -d 5  HTTPS, TLS 1.3 only\n",
		out);
}

void csl_opts_usage(FILE *out)
{
	usage_load(out);
	usage_requests(out);
	usage_output(out);
}

void csl_opts_defaults(struct csl_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	strcpy(cfg->host, "127.0.0.1");
	cfg->connections = 10;
	cfg->threads = 1;
	cfg->keepalive = true;
	cfg->seed = 1;
	cfg->connect_timeout_ms = 10000;
	cfg->timeout_ms = 10000;
	strcpy(cfg->paths[0].path, "/");
	cfg->paths[0].fraction = 1.0;
	cfg->npaths = 1;
}

static bool is_loopback4(const struct in_addr *a)
{
	return (ntohl(a->s_addr) >> 24) == 127;
}

int csl_target_parse(const char *host, uint16_t port, struct sockaddr_storage *addr,
		     socklen_t *addr_len, char *errbuf, size_t errlen)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)addr;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)addr;

	memset(addr, 0, sizeof(*addr));
	if (strcmp(host, "localhost") == 0)
		host = "127.0.0.1";
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		if (!is_loopback4(&sin->sin_addr))
			goto not_loopback;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		*addr_len = sizeof(*sin);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		const struct in6_addr *a = &sin6->sin6_addr;
		bool ok = IN6_IS_ADDR_LOOPBACK(a);
		if (IN6_IS_ADDR_V4MAPPED(a))
			ok = a->s6_addr[12] == 127;
		if (!ok)
			goto not_loopback;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		*addr_len = sizeof(*sin6);
		return 0;
	}
	snprintf(errbuf, errlen,
		 "'%s' is not a numeric IP address (csload never resolves names; use 127.0.0.1 or ::1)",
		 host);
	return -1;

not_loopback:
	snprintf(errbuf, errlen,
		 "refusing to send traffic to %s: csload only targets loopback (127.0.0.0/8, ::1)",
		 host);
	return -1;
}

bool csl_path_valid(const char *path)
{
	size_t len = strlen(path);
	if (len == 0 || len > CSL_MAX_PATH_LEN || path[0] != '/')
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)path[i];
		if (c <= ' ' || c >= 0x7f)
			return false;
	}
	return true;
}

/*
 * The whole string, in range (number.h's rule, connscope's own), or false;
 * the callers word the refusal.
 */
static bool parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	const struct cs_number number = { NULL, (double)min, (double)max, CS_NUMBER_INTEGER, "" };
	long long v;
	char why[128];

	if (cs_number_read_integer(&number, s, &v, why, sizeof(why)) || v < 0)
		return false;
	*out = (uint64_t)v;
	return true;
}

static bool parse_double(const char *s, double min, double max, double *out)
{
	const struct cs_number number = { NULL, min, max, 0, "" };
	char why[128];

	return cs_number_read(&number, s, out, why, sizeof(why)) == 0;
}

int csl_mix_parse(const char *arg, struct csl_path *out, char *errbuf, size_t errlen)
{
	const char *colon = strrchr(arg, ':');
	if (!colon || colon == arg) {
		snprintf(errbuf, errlen, "--mix '%s': expected PATH:FRACTION, e.g. /block/50:0.02", arg);
		return -1;
	}
	size_t plen = (size_t)(colon - arg);
	if (plen > CSL_MAX_PATH_LEN) {
		snprintf(errbuf, errlen, "--mix: path longer than %d bytes", CSL_MAX_PATH_LEN);
		return -1;
	}
	memcpy(out->path, arg, plen);
	out->path[plen] = '\0';
	if (!csl_path_valid(out->path)) {
		snprintf(errbuf, errlen,
			 "--mix '%s': the path must start with '/' and hold no spaces or control characters",
			 arg);
		return -1;
	}
	if (!parse_double(colon + 1, 0.0, 1.0, &out->fraction) || out->fraction <= 0.0) {
		snprintf(errbuf, errlen, "--mix '%s': FRACTION must be a number in (0, 1]", arg);
		return -1;
	}
	return 0;
}

enum {
	OPT_GAP = 256,
	OPT_NO_KEEPALIVE,
	OPT_PATH,
	OPT_MIX,
	OPT_SEED,
	OPT_CONNECT_TIMEOUT,
	OPT_TIMEOUT,
	OPT_JSON,
	OPT_LOG,
	OPT_SELF_TEST,
	OPT_SPIN,
	OPT_BUSY_POLL,
	OPT_TLS,
	OPT_TLS_VERSION,
};

static const struct option long_options[] = {
	{ "host", required_argument, NULL, 'H' },
	{ "port", required_argument, NULL, 'p' },
	{ "connections", required_argument, NULL, 'c' },
	{ "threads", required_argument, NULL, 't' },
	{ "duration", required_argument, NULL, 'd' },
	{ "requests", required_argument, NULL, 'n' },
	{ "rate", required_argument, NULL, 'R' },
	{ "gap-ms", required_argument, NULL, OPT_GAP },
	{ "no-keepalive", no_argument, NULL, OPT_NO_KEEPALIVE },
	{ "path", required_argument, NULL, OPT_PATH },
	{ "mix", required_argument, NULL, OPT_MIX },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "connect-timeout-ms", required_argument, NULL, OPT_CONNECT_TIMEOUT },
	{ "timeout-ms", required_argument, NULL, OPT_TIMEOUT },
	{ "spin-us", required_argument, NULL, OPT_SPIN },
	{ "busy-poll", no_argument, NULL, OPT_BUSY_POLL },
	{ "tls", no_argument, NULL, OPT_TLS },
	{ "tls-version", required_argument, NULL, OPT_TLS_VERSION },
	{ "json", required_argument, NULL, OPT_JSON },
	{ "log", required_argument, NULL, OPT_LOG },
	{ "quiet", no_argument, NULL, 'q' },
	{ "self-test", no_argument, NULL, OPT_SELF_TEST },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

#define BAD(...)                                                       \
	do {                                                           \
		fprintf(err, "csload: " __VA_ARGS__);                  \
		fprintf(err, "\n(csload --help lists the options)\n"); \
		return CSL_OPTS_USAGE;                                 \
	} while (0)

/* The paths asked for, timeouts, how the client waits, outputs, --help,
 * and getopt's word for a mistake: as parse_option(). */
static enum csl_opts_result parse_other_option(int c, char **argv, struct csl_config *cfg,
					       FILE *out, FILE *err)
{
	uint64_t u;
	char msg[256];

	switch (c) {
	case OPT_NO_KEEPALIVE:
		cfg->keepalive = false;
		break;
	case OPT_TLS:
		cfg->tls = true;
		break;
	case OPT_TLS_VERSION:
		if (strcmp(optarg, "1.2") != 0 && strcmp(optarg, "1.3") != 0)
			BAD("--tls-version '%s': expected 1.2 or 1.3", optarg);
		cfg->tls = true;
		cfg->tls_version = optarg[2] == '2' ? 12 : 13;
		break;
	case OPT_PATH:
		if (!csl_path_valid(optarg))
			BAD("--path '%s': must start with '/', at most %d bytes, no spaces or control characters",
			    optarg, CSL_MAX_PATH_LEN);
		strcpy(cfg->paths[0].path, optarg);
		break;
	case OPT_MIX:
		if (cfg->npaths >= CSL_MAX_PATHS)
			BAD("at most %d --mix entries", CSL_MAX_PATHS - 1);
		if (csl_mix_parse(optarg, &cfg->paths[cfg->npaths], msg, sizeof(msg)) < 0)
			BAD("%s", msg);
		cfg->npaths++;
		break;
	case OPT_SEED:
		if (!parse_u64(optarg, 0, INT64_MAX, &u))
			BAD("--seed '%s': expected 0..%lld", optarg, (long long)INT64_MAX);
		cfg->seed = u;
		break;
	case OPT_CONNECT_TIMEOUT:
		if (!parse_u64(optarg, 1, 3600000, &u))
			BAD("--connect-timeout-ms '%s': expected 1..3600000", optarg);
		cfg->connect_timeout_ms = (unsigned int)u;
		break;
	case OPT_TIMEOUT:
		if (!parse_u64(optarg, 1, 3600000, &u))
			BAD("--timeout-ms '%s': expected 1..3600000", optarg);
		cfg->timeout_ms = (unsigned int)u;
		break;
	case OPT_BUSY_POLL:
		cfg->busy_poll = true;
		break;
	case OPT_SPIN:
		if (!parse_u64(optarg, 0, 100000, &u))
			BAD("--spin-us '%s': expected 0..100000", optarg);
		cfg->spin_us = (unsigned int)u;
		break;
	case OPT_JSON:
		cfg->json_file = optarg;
		break;
	case OPT_LOG:
		cfg->log_file = optarg;
		break;
	case 'q':
		cfg->quiet = true;
		break;
	case OPT_SELF_TEST:
		cfg->self_test = true;
		break;
	case 'h':
		csl_opts_usage(out);
		return CSL_OPTS_HELP;
	case ':':
		BAD("option '%s' needs a value", argv[optind - 1]);
	default:
		BAD("unknown option '%s'", argv[optind - 1]);
	}
	return CSL_OPTS_RUN;
}

/* One option: CSL_OPTS_RUN to go on with the next, or the parse's result.
 * Here the target and the load's shape; the rest in parse_other_option(). */
static enum csl_opts_result parse_option(int c, char **argv, struct csl_config *cfg,
					 bool *have_port, FILE *out, FILE *err)
{
	uint64_t u;
	double d;

	switch (c) {
	case 'H':
		if (strlen(optarg) >= sizeof(cfg->host))
			BAD("--host '%s' is too long", optarg);
		strcpy(cfg->host, optarg);
		break;
	case 'p':
		if (!parse_u64(optarg, 1, 65535, &u))
			BAD("--port '%s': expected 1..65535", optarg);
		cfg->port = (uint16_t)u;
		*have_port = true;
		break;
	case 'c':
		if (!parse_u64(optarg, 1, CSL_MAX_CONNECTIONS, &u))
			BAD("--connections '%s': expected 1..%d", optarg, CSL_MAX_CONNECTIONS);
		cfg->connections = (unsigned int)u;
		break;
	case 't':
		if (!parse_u64(optarg, 1, CSL_MAX_THREADS, &u))
			BAD("--threads '%s': expected 1..%d", optarg, CSL_MAX_THREADS);
		cfg->threads = (unsigned int)u;
		break;
	case 'd':
		if (!parse_double(optarg, 0.001, CSL_MAX_DURATION_S, &d))
			BAD("--duration '%s': expected seconds, 0.001..%.0f", optarg,
			    CSL_MAX_DURATION_S);
		cfg->duration_s = d;
		break;
	case 'n':
		if (!parse_u64(optarg, 1, UINT64_C(1) << 40, &u))
			BAD("--requests '%s': expected a positive count", optarg);
		cfg->requests = u;
		break;
	case 'R':
		if (!parse_double(optarg, 0.001, 1e7, &d))
			BAD("--rate '%s': expected requests/s, 0.001..1e7", optarg);
		cfg->rate = d;
		break;
	case OPT_GAP:
		if (!parse_double(optarg, 0.0, 3600e3, &d))
			BAD("--gap-ms '%s': expected milliseconds, 0..3600000", optarg);
		cfg->gap_ms = d;
		break;
	default:
		return parse_other_option(c, argv, cfg, out, err);
	}
	return CSL_OPTS_RUN;
}

/* The checks that take more than one option into account, and the
 * values that follow from several. */
static enum csl_opts_result check_config(struct csl_config *cfg, bool have_port, FILE *err)
{
	char msg[256];

	if (!have_port)
		BAD("--port is required");
	if (csl_target_parse(cfg->host, cfg->port, &cfg->addr, &cfg->addr_len, msg, sizeof(msg)) < 0)
		BAD("%s", msg);
	if (cfg->threads > cfg->connections)
		BAD("--threads (%u) must not exceed --connections (%u)", cfg->threads,
		    cfg->connections);
	if (cfg->gap_ms > 0 && cfg->rate > 0)
		BAD("--gap-ms is for the closed loop; with --rate the schedule sets the gaps");
	double mixed = 0;
	for (unsigned int i = 1; i < cfg->npaths; i++)
		mixed += cfg->paths[i].fraction;
	if (mixed > 1.0 + 1e-9)
		BAD("--mix fractions sum to %.6g, more than 1", mixed);
	cfg->paths[0].fraction = mixed >= 1.0 ? 0.0 : 1.0 - mixed;

	/* The time bound: --duration, else the default, else the hard cap. */
	if (cfg->duration_s > 0)
		cfg->time_limit_s = cfg->duration_s;
	else if (cfg->requests > 0)
		cfg->time_limit_s = CSL_HARD_CAP_S;
	else
		cfg->time_limit_s = cfg->duration_s = CSL_DEFAULT_DURATION_S;
	return CSL_OPTS_RUN;
}

enum csl_opts_result csl_opts_parse(int argc, char **argv, struct csl_config *cfg,
				    FILE *out, FILE *err)
{
	bool have_port = false;

	csl_opts_defaults(cfg);
	optind = 1;
	opterr = 0;
	for (;;) {
		int c = getopt_long(argc, argv, ":H:p:c:t:d:n:R:qh", long_options, NULL);
		if (c == -1)
			break;
		enum csl_opts_result r = parse_option(c, argv, cfg, &have_port, out, err);
		if (r != CSL_OPTS_RUN)
			return r;
	}
	if (optind < argc)
		BAD("unexpected argument '%s'", argv[optind]);
	if (cfg->self_test)
		return CSL_OPTS_RUN;
	return check_config(cfg, have_port, err);
}
