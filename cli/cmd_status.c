// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope status: is connscoped up, what does it watch, for how long,
 * how many events has it taken and lost. Exit 0 when it answers, 1 when
 * none runs (one line saying so).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ctl_client.h"
#include "ctl_commands.h"
#include "json_read.h"
#include "probes.h"

static void help(FILE *out)
{
	fprintf(out,
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
		"Exit status: 0 the daemon answered, 1 no daemon (or it failed), 2 usage error.\n");
}

static void uptime(char *buf, size_t len, double seconds)
{
	uint64_t s = (uint64_t)seconds;
	if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
}

int cmd_status(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *path = CS_CTL_DEFAULT_SOCKET;
	bool json = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:jh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			path = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			help(stdout);
			return 0;
		case ':':
			return cs_cli_usage("status", "option '%s' needs a value", argv[optind - 1]);
		default:
			return cs_cli_usage("status", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cs_cli_usage("status", "unexpected argument '%s'", argv[optind]);

	char errmsg[CS_ERRMSG_LEN];
	struct cs_ctl_conn conn;
	if (cs_ctl_connect(&conn, path, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscope: %s\n", errmsg);
		return 1;
	}
	struct cs_ctl_header hdr;
	const uint8_t *reply;
	int rc = 0;
	if (cs_ctl_call(&conn, CS_CTL_STATUS, NULL, 0, &hdr, &reply, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscope: %s\n", errmsg);
		rc = 1;
		goto out;
	}
	if (json) {
		fwrite(reply, 1, hdr.length, stdout);
		goto out;
	}
	struct cs_json doc;
	if (cs_json_parse(&doc, (const char *)reply, hdr.length, 10000)) {
		fprintf(stderr, "connscope: the daemon's status is not valid JSON\n");
		rc = 1;
		goto out;
	}
	char target[256], up[32], since[32];
	cs_json_string(&doc, cs_json_get(&doc, 0, "target"), target, sizeof(target));
	uptime(up, sizeof(up), cs_json_number(&doc, cs_json_get(&doc, 0, "uptime_s"), 0));
	uptime(since, sizeof(since), cs_json_number(&doc, cs_json_get(&doc, 0, "since_reset_s"), 0));
	printf("connscoped is up (pid %.0f, socket %s)\n", cs_json_number(&doc, cs_json_get(&doc, 0, "daemon_pid"), 0),
	       path);
	printf("  target     %s\n", target);
	int ports = cs_json_get(&doc, 0, "ports");
	printf("  listeners ");
	if (cs_json_size(&doc, ports) == 0)
		printf(" none seen yet");
	for (int i = 0; i < cs_json_size(&doc, ports) && i < 64; i++)
		printf(" :%.0f", cs_json_number(&doc, cs_json_at(&doc, ports, i), 0));
	int processes = cs_json_get(&doc, 0, "processes");
	printf("\n  processes ");
	if (cs_json_size(&doc, processes) == 0)
		printf(" none seen yet");
	for (int i = 0; i < cs_json_size(&doc, processes) && i < 32; i++) {
		int p = cs_json_at(&doc, processes, i);
		char comm[64];
		cs_json_string(&doc, cs_json_get(&doc, p, "comm"), comm, sizeof(comm));
		for (char *ch = comm; *ch; ch++)
			if ((unsigned char)*ch < 0x20 || *ch == 0x7f)
				*ch = '?';
		printf(" %.0f (%s)", cs_json_number(&doc, cs_json_get(&doc, p, "pid"), 0), comm);
	}
	printf("\n  uptime     %s (statistics since %s ago)\n", up, since);
	printf("  events     %.0f taken in, %.0f lost, %.0f probe runs skipped by the kernel; %.0f requests\n",
	       cs_json_number(&doc, cs_json_get(&doc, 0, "events"), 0),
	       cs_json_number(&doc, cs_json_get(&doc, 0, "lost"), 0),
	       cs_json_number(&doc, cs_json_get(&doc, 0, "skipped"), 0),
	       cs_json_number(&doc, cs_json_get(&doc, 0, "requests"), 0));
	int control = cs_json_get(&doc, 0, "control");
	printf("  control    %.0f connection(s), %.0f refused, %.0f request(s) rejected, %.0f stream(s) dropped\n",
	       cs_json_number(&doc, cs_json_get(&doc, control, "connections"), 0),
	       cs_json_number(&doc, cs_json_get(&doc, control, "refused"), 0),
	       cs_json_number(&doc, cs_json_get(&doc, control, "rejected"), 0),
	       cs_json_number(&doc, cs_json_get(&doc, control, "streams_dropped"), 0));
	cs_json_free(&doc);
out:
	cs_ctl_close(&conn);
	return rc;
}
