// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope record (--pid PID | --port PORT | ...)... -o FILE
 *
 * attach's run, with every record the probes send written to a trace file
 * (daemon/source/trace_file.h) for 'connscope report FILE' to replay.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "cost_render.h"
#include "run_args.h"
#include "trace_file.h"

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

static int tee_to_trace(void *ctx, const void *record, size_t len)
{
	return cs_trace_write(ctx, record, len);
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The session into an open trace: 0, or CS_EXIT_RUNTIME with no file left behind. */
static int record_into(struct run_args *args, struct cs_trace_writer *writer, struct cs_engine *engine)
{
	args->session.tee = tee_to_trace;
	args->session.tee_ctx = writer;
	struct cs_session_result result;
	char errmsg[CS_ERRMSG_LEN];
	if (cs_session_run(&args->session, engine, &result, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscope: %s\n", errmsg);
		cs_trace_finish(writer, &(struct cs_report_meta){ 0 });
		unlink(args->output);
		return CS_EXIT_RUNTIME;
	}
	uint64_t records = writer->records;
	int err = cs_trace_finish(writer, &result.meta);
	if (err) {
		fprintf(stderr, "connscope: writing %s failed: %s\n", args->output, strerror(-err));
		return CS_EXIT_RUNTIME;
	}
	if (!args->session.quiet) {
		fprintf(stderr, "connscope: recorded %llu records (%llu lost) to %s\n", (unsigned long long)records,
			(unsigned long long)result.meta.events_lost, args->output);
		/* The recording's own cost, as 'connscope report FILE' shows it from the file. */
		struct cs_cost cost;
		char line[256];
		cs_cost_of(engine, &result.meta, &cost);
		cs_cost_line(line, sizeof(line), &cost);
		fprintf(stderr, "connscope: cost: %s\n", line);
	}
	return 0;
}

static int run(struct cs_cli *cli, int argc, char **argv)
{
	struct run_args args;
	int rc = cs_run_args_parse(cli, argc, argv, &args);
	if (rc != CS_CLI_GO_ON)
		return rc;

	struct cs_trace_writer writer;
	struct cs_run_stamp stamp;
	cs_run_stamp_now(&stamp);
	int err = cs_trace_create(&writer, args.output, "", monotonic_ns(), &stamp);
	if (err) {
		fprintf(stderr, "connscope: cannot create %s: %s%s\n", args.output, strerror(-err),
			err == -ELOOP ? " (it is a symlink: connscope does not write through links)" : "");
		return CS_EXIT_RUNTIME;
	}
	struct cs_engine *engine = cs_cli_engine_new();
	if (!engine) {
		cs_trace_finish(&writer, &(struct cs_report_meta){ 0 });
		return CS_EXIT_RUNTIME;
	}
	rc = record_into(&args, &writer, engine);
	cs_engine_free(engine);
	return rc;
}

/* Its entry in connscope.c's command table. */
const struct cs_cmd cs_cmd_record = {
	"record", "the same, writing the raw event stream to a file",
	run, usage, 0, NULL, false,
};
