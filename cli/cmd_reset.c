// SPDX-License-Identifier: BSD-2-Clause
/* connscope reset: clear connscoped's statistics; it keeps watching. */
#include <stdio.h>

#include "commands.h"
#include "ctl_client.h"

static const char usage[] =
	"Usage: connscope reset [--socket PATH]\n"
	"\n"
	"Clear the connscope daemon's statistics: its reports, snapshots and top start\n"
	"again from now. The probes stay attached; Prometheus counters start from 0 again\n"
	"(Prometheus takes that as a counter reset).\n"
	"\n"
	"  -s, --socket PATH  the daemon's control socket (default " CS_CTL_DEFAULT_SOCKET ")\n"
	"  -h, --help         this help\n";

/* Its options, in the order a usage error lists them (cli.c defines each). */
static const char reset_options[] = "socket help";

/* Its one option: -s/--socket. */
static int take_socket(struct cs_cli *cli, int opt, const char *arg, void *ctx)
{
	(void)cli;
	(void)opt;
	*(const char **)ctx = arg;
	return CS_CLI_GO_ON;
}

static int show(const uint8_t *reply, size_t len, void *ctx)
{
	(void)reply;
	(void)len;
	(void)ctx;
	printf("connscope: the daemon's statistics were reset\n");
	return 0;
}

static int run(struct cs_cli *cli, int argc, char **argv)
{
	const char *path = CS_CTL_DEFAULT_SOCKET;
	int rc = cs_cli_parse(cli, argc, argv, reset_options, take_socket, &path);
	if (rc != CS_CLI_GO_ON)
		return rc;
	return cs_ctl_ask(path, CS_CTL_RESET, NULL, 0, show, NULL);
}

/* Its entry in connscope.c's command table. */
const struct cs_cmd cs_cmd_reset = {
	"reset", "clear the daemon's statistics",
	run, usage, 0, NULL, false,
};
