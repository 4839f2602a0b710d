// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope snapshot: the report of what connscoped has seen so far (since
 * it started or was reset), as `connscope attach` prints it; --json adds
 * the live view's "live" member to attach's JSON.
 */
#include <stdio.h>

#include "commands.h"
#include "ctl_client.h"
#include "engine.h"

static const char usage[] =
	"Usage: connscope snapshot [--json] [--tail P] [--slowest N] [--socket PATH]\n"
	"\n"
	"Print the connscope daemon's report of what it has seen since it started (or\n"
	"since 'connscope reset'): the same report 'connscope attach' prints.\n"
	"\n"
	"  -j, --json         one JSON object: attach's, plus \"live\" (the last minute\n"
	"                     second by second, per-thread rates; see docs/daemon.md)\n"
	"  -t, --tail P       the tail is the requests at or above percentile P (50-99.999,\n"
	"                     default 99)\n"
	"      --slowest N    also list the N slowest requests (1-512), one by one\n"
	"  -s, --socket PATH  the daemon's control socket (default " CS_CTL_DEFAULT_SOCKET ")\n"
	"  -h, --help         this help\n";

/* The daemon keeps as many slowest requests as the engine does: one --slowest range. */
_Static_assert(CS_CTL_SLOWEST_MAX == CS_EXEMPLARS, "snapshot's --slowest range is attach's");

struct snapshot_args {
	const char *path;
	struct cs_ctl_view_request view;
};

/* Its options, in the order a usage error lists them (cli.c defines each). */
static const char snapshot_options[] = "socket json tail slowest help";

static int take(struct cs_cli *cli, int opt, const char *arg, void *ctx)
{
	struct snapshot_args *args = ctx;
	double tail;
	long slowest;
	switch (opt) {
	case 's':
		args->path = arg;
		break;
	case 'j':
		args->view.format = CS_CTL_FORMAT_JSON;
		break;
	case 't':
		if (!cs_cli_real(cli, &cs_number_tail, arg, &tail))
			return CS_EXIT_USAGE;
		args->view.tail_milli_pct = (uint32_t)(tail * 1000.0 + 0.5);
		break;
	default: /* CS_OPT_SLOWEST */
		if (!cs_cli_integer(cli, &cs_number_slowest, arg, &slowest))
			return CS_EXIT_USAGE;
		args->view.slowest = (uint16_t)slowest;
		break;
	}
	return CS_CLI_GO_ON;
}

/* The daemon's report, as it is. */
static int show(const uint8_t *reply, size_t len, void *ctx)
{
	(void)ctx;
	return fwrite(reply, 1, len, stdout) != len || fflush(stdout) ? 1 : 0;
}

static int run(struct cs_cli *cli, int argc, char **argv)
{
	/* No --tail: tail_milli_pct 0, the daemon's own. */
	struct snapshot_args args = { .path = CS_CTL_DEFAULT_SOCKET, .view = { .format = CS_CTL_FORMAT_TEXT } };
	int rc = cs_cli_parse(cli, argc, argv, snapshot_options, take, &args);
	if (rc != CS_CLI_GO_ON)
		return rc;
	uint8_t request[CS_CTL_VIEW_LEN];
	cs_ctl_view_encode(request, &args.view);
	return cs_ctl_ask(args.path, CS_CTL_SNAPSHOT, request, sizeof(request), show, NULL);
}

/* Its entry in connscope.c's command table. */
const struct cs_cmd cs_cmd_snapshot = {
	"snapshot", "the daemon's report so far",
	run, usage, 0, NULL, false,
};
