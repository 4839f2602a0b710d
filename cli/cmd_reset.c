// SPDX-License-Identifier: BSD-2-Clause
/* connscope reset: clear connscoped's statistics; it keeps watching. */
#include <getopt.h>
#include <stdio.h>

#include "ctl_client.h"
#include "ctl_commands.h"
#include "probes.h"

static void help(FILE *out)
{
	fprintf(out,
		"Usage: connscope reset [--socket PATH]\n"
		"\n"
		"Clear the connscope daemon's statistics: its reports, snapshots and top start\n"
		"again from now. The probes stay attached; Prometheus counters start from 0 again\n"
		"(Prometheus takes that as a counter reset).\n"
		"\n"
		"  -s, --socket PATH  the daemon's control socket (default " CS_CTL_DEFAULT_SOCKET ")\n"
		"  -h, --help         this help\n");
}

int cmd_reset(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *path = CS_CTL_DEFAULT_SOCKET;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			path = optarg;
			break;
		case 'h':
			help(stdout);
			return 0;
		case ':':
			return cs_cli_usage("reset", "option '%s' needs a value", argv[optind - 1]);
		default:
			return cs_cli_usage("reset", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cs_cli_usage("reset", "unexpected argument '%s'", argv[optind]);
	char errmsg[CS_ERRMSG_LEN];
	struct cs_ctl_conn conn;
	if (cs_ctl_connect(&conn, path, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscope: %s\n", errmsg);
		return 1;
	}
	struct cs_ctl_header hdr;
	const uint8_t *reply;
	int rc = 0;
	if (cs_ctl_call(&conn, CS_CTL_RESET, NULL, 0, &hdr, &reply, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscope: %s\n", errmsg);
		rc = 1;
	} else {
		printf("connscope: the daemon's statistics were reset\n");
	}
	cs_ctl_close(&conn);
	return rc;
}
