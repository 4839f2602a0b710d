// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope attach (--pid PID | --port PORT | --name NAME | --cgroup PATH)...
 *
 * Attaches the probes to a running server, runs the engine until the
 * duration ends, Ctrl-C or the target exits, and prints the report.
 */
#include <stdio.h>

#include "commands.h"
#include "run_session.h"

static const char usage[] =
	"Usage: connscope attach (--pid PID | --port PORT | --name NAME | --cgroup PATH)... [options]\n"
	"\n"
	"Attach to a running TCP server, without restarting it, follow every connection\n"
	"and request, and report where the slowest requests' time went, cause by cause,\n"
	"with the conditions behind them (both listed below) and the accept path's\n"
	"figures: backlog depth and drops, accepts per worker, wasted wake-ups.\n"
	"\n" CS_RUN_OPTIONS_HELP
	"  -j, --json           print the report as one JSON object\n"
	"  -o, --output FILE    also write the raw event stream to FILE (mode 0600), for\n"
	"                       'connscope report FILE' to replay the same run later\n"
	"\n"
	"Examples:\n"
	"  connscope attach --pid $(pgrep -o nginx) --duration 10\n"
	"  connscope attach --port 8080 --json > report.json\n"
	"  connscope attach --port 8080 --duration 30 -o incident.cstrace\n";

static int run(struct cs_cli *cli, int argc, char **argv)
{
	struct run_args args;
	int rc = cs_run_args_parse(cli, argc, argv, &args);
	if (rc != CS_CLI_GO_ON)
		return rc;

	struct cs_engine *engine = cs_cli_engine_new();
	if (!engine)
		return CS_EXIT_RUNTIME;
	struct cs_session_result result;
	rc = cs_run_session(&args, engine, &result);
	if (!rc) {
		result.meta.tail_percentile = args.tail_percentile;
		result.meta.slowest = args.slowest;
		cs_print_report(engine, &result.meta, args.json);
	}
	cs_engine_free(engine);
	return rc;
}

/* Its entry in connscope.c's command table. */
const struct cs_cmd cs_cmd_attach = {
	"attach", "attach to a running server (--pid, --port, --name, --cgroup) and report",
	run, usage, 0, NULL, true,
};
