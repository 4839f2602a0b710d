// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope snapshot: the report of what connscoped has seen so far (since
 * it started or was reset), as `connscope attach` prints it; --json adds
 * the live view's "live" member to attach's JSON.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "ctl_client.h"
#include "ctl_commands.h"
#include "probes.h"

static void help(FILE *out)
{
	fprintf(out,
		"Usage: connscope snapshot [--json] [--tail P] [--slowest N] [--socket PATH]\n"
		"\n"
		"Print the connscope daemon's report of what it has seen since it started (or\n"
		"since 'connscope reset'): the same report 'connscope attach' prints.\n"
		"\n"
		"  -j, --json         one JSON object: attach's, plus \"live\" (the last minute\n"
		"                     second by second, per-thread rates; see the README)\n"
		"  -t, --tail P       the tail is the requests at or above percentile P (50-99.999,\n"
		"                     default 99)\n"
		"      --slowest N    also list the N slowest requests (1-512), one by one\n"
		"  -s, --socket PATH  the daemon's control socket (default " CS_CTL_DEFAULT_SOCKET ")\n"
		"  -h, --help         this help\n");
}

int cmd_snapshot(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "tail", required_argument, NULL, 't' },
		{ "slowest", required_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *path = CS_CTL_DEFAULT_SOCKET;
	struct cs_ctl_view_request view = { .format = CS_CTL_FORMAT_TEXT };
	double tail;
	int c;
	optind = 1;
	opterr = 0;
	long slowest;
	while ((c = getopt_long(argc, argv, ":s:jt:W:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			path = optarg;
			break;
		case 'j':
			view.format = CS_CTL_FORMAT_JSON;
			break;
		case 't':
			if (!parse_double(optarg, 50.0, 99.999, &tail))
				return cs_cli_usage("snapshot", "--tail expects a percentile from 50 to 99.999, not '%s'",
						    optarg);
			view.tail_milli_pct = (uint32_t)(tail * 1000.0 + 0.5);
			break;
		case 'W':
			if (!parse_long(optarg, 1, CS_CTL_SLOWEST_MAX, &slowest))
				return cs_cli_usage("snapshot", "--slowest expects 1 to %d, not '%s'", CS_CTL_SLOWEST_MAX, optarg);
			view.slowest = (uint16_t)slowest;
			break;
		case 'h':
			help(stdout);
			return 0;
		case ':':
			return cs_cli_usage("snapshot", "option '%s' needs a value", argv[optind - 1]);
		default:
			return cs_cli_usage("snapshot", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cs_cli_usage("snapshot", "unexpected argument '%s'", argv[optind]);

	char errmsg[CS_ERRMSG_LEN];
	struct cs_ctl_conn conn;
	if (cs_ctl_connect(&conn, path, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscope: %s\n", errmsg);
		return 1;
	}
	uint8_t request[CS_CTL_VIEW_LEN];
	cs_ctl_view_encode(request, &view);
	struct cs_ctl_header hdr;
	const uint8_t *reply;
	int rc = 0;
	if (cs_ctl_call(&conn, CS_CTL_SNAPSHOT, request, sizeof(request), &hdr, &reply, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscope: %s\n", errmsg);
		rc = 1;
	} else if (fwrite(reply, 1, hdr.length, stdout) != hdr.length || fflush(stdout)) {
		rc = 1;
	}
	cs_ctl_close(&conn);
	return rc;
}
