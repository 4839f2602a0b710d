// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope record (--pid PID | --port PORT | ...)... -o FILE
 *
 * attach's run, with every record the probes send written to a trace file
 * (daemon/source/trace_file.h) for 'connscope report FILE' to replay.
 */
#include <stdio.h>

#include "commands.h"
#include "cost_render.h"
#include "run_session.h"

static const char usage[] =
	"Usage: connscope record (--pid PID | --port PORT | --name NAME | --cgroup PATH)... -o FILE\n"
	"       [options]\n"
	"\n"
	"Like attach, but write the raw event stream to FILE (mode 0600) for\n"
	"'connscope report FILE' to replay offline through the same engine.\n"
	"\n" CS_RUN_OPTIONS_HELP
	"  -o, --output FILE    the trace file to write (required)\n"
	"\n"
	"Example:\n"
	"  connscope record --port 8080 --duration 30 -o incident.cstrace\n";

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
	if (!rc && !args.session.quiet) {
		/* The recording's own cost, as 'connscope report FILE' shows it from the file. */
		struct cs_cost cost;
		char line[256];
		cs_cost_of(engine, &result.meta, &cost);
		cs_cost_line(line, sizeof(line), &cost);
		fprintf(stderr, "connscope: cost: %s\n", line);
	}
	cs_engine_free(engine);
	return rc;
}

/* Its entry in connscope.c's command table. */
const struct cs_cmd cs_cmd_record = {
	"record", "the same, writing the raw event stream to a file",
	run, usage, 0, NULL, false,
};
