// SPDX-License-Identifier: BSD-2-Clause
/*
 * attach's and record's run: the session, and with -o FILE every record
 * the probes send written to a trace file (daemon/source/trace_file.h) as
 * the engine takes it, so that 'connscope report FILE' replays the same run.
 */
#include "run_session.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "trace_file.h"
#include "units.h"

static int tee_to_trace(void *ctx, const void *record, size_t len)
{
	return cs_trace_write(ctx, record, len);
}

static int run_plain(struct run_args *args, struct cs_engine *engine, struct cs_session_result *result)
{
	char errmsg[CS_ERRMSG_LEN];
	if (cs_session_run(&args->session, engine, result, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscope: %s\n", errmsg);
		return CS_EXIT_RUNTIME;
	}
	return 0;
}

/* The session into an open trace: 0, or CS_EXIT_RUNTIME with no file left behind. */
static int run_into(struct run_args *args, struct cs_trace_writer *writer, struct cs_engine *engine,
		    struct cs_session_result *result)
{
	args->session.tee = tee_to_trace;
	args->session.tee_ctx = writer;
	if (run_plain(args, engine, result)) {
		cs_trace_finish(writer, &(struct cs_report_meta){ 0 });
		unlink(args->output);
		return CS_EXIT_RUNTIME;
	}
	uint64_t records = writer->records;
	int err = cs_trace_finish(writer, &result->meta);
	if (err) {
		fprintf(stderr, "connscope: writing %s failed: %s\n", args->output, strerror(-err));
		return CS_EXIT_RUNTIME;
	}
	if (!args->session.quiet)
		fprintf(stderr, "connscope: recorded %llu records (%llu lost) to %s\n", (unsigned long long)records,
			(unsigned long long)result->meta.events_lost, args->output);
	return 0;
}

int cs_run_session(struct run_args *args, struct cs_engine *engine, struct cs_session_result *result)
{
	if (!args->output)
		return run_plain(args, engine, result);
	struct cs_trace_writer writer;
	struct cs_run_stamp stamp;
	cs_run_stamp_now(&stamp);
	int err = cs_trace_create(&writer, args->output, "", cs_monotonic_ns(), &stamp);
	if (err) {
		fprintf(stderr, "connscope: cannot create %s: %s%s\n", args->output, strerror(-err),
			err == -ELOOP ? " (it is a symlink: connscope does not write through links)" : "");
		return CS_EXIT_RUNTIME;
	}
	return run_into(args, &writer, engine, result);
}
