// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope status: is connscoped up, what does it watch, for how long,
 * how many events has it taken and lost. Exit 0 when it answers, 1 when
 * none runs (one line saying so).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "ctl_client.h"
#include "json_read.h"

static const char usage[] =
	"Usage: connscope status [--socket PATH] [--json]\n"
	"\n"
	"Ask the connscope daemon (connscoped) whether it is up, what it watches, since\n"
	"when, how many events it has taken in and lost, and how many probe runs the\n"
	"kernel skipped.\n"
	"\n"
	"  -s, --socket PATH  the daemon's control socket (default " CS_CTL_DEFAULT_SOCKET ")\n"
	"  -j, --json         print the daemon's answer as it is (one JSON object)\n"
	"  -h, --help         this help\n"
	"\n"
	"Exit status: 0 the daemon answered, 1 no daemon (or it failed), 2 usage error.\n";

struct status_args {
	const char *path;
	bool json;
};

/* Its options, in the order a usage error lists them (cli.c defines each). */
static const char status_options[] = "socket json help";

static int take(struct cs_cli *cli, int opt, const char *arg, void *ctx)
{
	struct status_args *args = ctx;
	(void)cli;
	if (opt == 's')
		args->path = arg;
	else
		args->json = true;
	return CS_CLI_GO_ON;
}

static void uptime(char *buf, size_t len, double seconds)
{
	uint64_t s = (uint64_t)seconds;
	if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
}

static double number(const struct cs_json *doc, int parent, const char *key)
{
	return cs_json_number(doc, cs_json_get(doc, parent, key), 0);
}

/* "  listeners  :80 :443", "  processes  12 (nginx)" */
static void print_targets(const struct cs_json *doc)
{
	int ports = cs_json_get(doc, 0, "ports");
	printf("  listeners ");
	if (cs_json_size(doc, ports) == 0)
		printf(" none seen yet");
	for (int i = 0; i < cs_json_size(doc, ports) && i < 64; i++)
		printf(" :%.0f", cs_json_number(doc, cs_json_at(doc, ports, i), 0));
	int processes = cs_json_get(doc, 0, "processes");
	printf("\n  processes ");
	if (cs_json_size(doc, processes) == 0)
		printf(" none seen yet");
	for (int i = 0; i < cs_json_size(doc, processes) && i < 32; i++) {
		int p = cs_json_at(doc, processes, i);
		char comm[64];
		cs_json_string(doc, cs_json_get(doc, p, "comm"), comm, sizeof(comm));
		/* A process names itself: no control characters reach the terminal. */
		for (char *ch = comm; *ch; ch++)
			if ((unsigned char)*ch < 0x20 || *ch == 0x7f)
				*ch = '?';
		printf(" %.0f (%s)", number(doc, p, "pid"), comm);
	}
	printf("\n");
}

static void print_status(const struct cs_json *doc, const char *path)
{
	char target[256], up[32], since[32];
	cs_json_string(doc, cs_json_get(doc, 0, "target"), target, sizeof(target));
	uptime(up, sizeof(up), number(doc, 0, "uptime_s"));
	uptime(since, sizeof(since), number(doc, 0, "since_reset_s"));
	printf("connscoped is up (pid %.0f, socket %s)\n", number(doc, 0, "daemon_pid"), path);
	printf("  target     %s\n", target);
	print_targets(doc);
	printf("  uptime     %s (statistics since %s ago)\n", up, since);
	printf("  events     %.0f taken in, %.0f lost, %.0f probe runs skipped by the kernel; %.0f requests\n",
	       number(doc, 0, "events"), number(doc, 0, "lost"), number(doc, 0, "skipped"),
	       number(doc, 0, "requests"));
	int control = cs_json_get(doc, 0, "control");
	printf("  control    %.0f connection(s), %.0f refused, %.0f request(s) rejected, %.0f stream(s) dropped\n",
	       number(doc, control, "connections"), number(doc, control, "refused"),
	       number(doc, control, "rejected"), number(doc, control, "streams_dropped"));
}

static int show(const uint8_t *reply, size_t len, void *ctx)
{
	const struct status_args *args = ctx;
	if (args->json) {
		fwrite(reply, 1, len, stdout);
		return 0;
	}
	struct cs_json doc;
	if (cs_json_parse(&doc, (const char *)reply, len, 10000)) {
		fprintf(stderr, "connscope: the daemon's status is not valid JSON\n");
		return 1;
	}
	print_status(&doc, args->path);
	cs_json_free(&doc);
	return 0;
}

static int run(struct cs_cli *cli, int argc, char **argv)
{
	struct status_args args = { .path = CS_CTL_DEFAULT_SOCKET };
	int rc = cs_cli_parse(cli, argc, argv, status_options, take, &args);
	if (rc != CS_CLI_GO_ON)
		return rc;
	return cs_ctl_ask(args.path, CS_CTL_STATUS, NULL, 0, show, &args);
}

/* Its entry in connscope.c's command table. */
const struct cs_cmd cs_cmd_status = {
	"status", "is the daemon (connscoped) up, what does it watch",
	run, usage, 0, NULL,
};
