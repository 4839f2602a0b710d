// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope report FILE: a trace written by 'connscope record' replayed
 * through the engine, and the same report attach would have printed; or,
 * with --interval, a line per interval of the run.
 */
#include <inttypes.h>
#include <stdio.h>

#include "commands.h"
#include "cost_render.h"
#include "report_intervals.h"
#include "replay.h"
#include "run_args.h"

static const char usage[] =
	"Usage: connscope report FILE [--json] [--tail P] [--slowest N] [--interval SEC]\n"
	"                        [--from SEC] [--to SEC]\n"
	"\n"
	"Replay a trace written by 'connscope record' through the engine and print\n"
	"the same report attach would have printed.\n"
	"\n"
	"  -j, --json    print the report as one JSON object\n"
	"  -t, --tail P  the tail is the requests at or above percentile P (default " CS_STR(CS_TAIL_DEFAULT) ")\n"
	"      --slowest N  also list the N slowest requests (1-512), one by one\n"
	"      --from SEC, --to SEC\n"
	"                only the part of the recording from SEC to SEC seconds after\n"
	"                its start: as if attached then (older connections partial)\n"
	"  -i, --interval SEC\n"
	"                a line per SEC seconds of the run instead: requests/s, p50,\n"
	"                p99, the cause holding most of that interval's tail, drops\n"
	"  -h, --help    this help\n";

struct report_args {
	struct cs_replay_watch window; /* --from, --to */
	bool json;
	double tail;
	double interval_s;             /* 0: the whole report */
	size_t slowest;
};

static const struct cs_number number_from = { "--from", 0, 31536000, 0,
					      "seconds into the recording (0 or more)" };
static const struct cs_number number_to = { "--to", 0, 31536000, CS_NUMBER_ABOVE_MIN,
					    "seconds into the recording (above 0)" };
static const struct cs_number number_interval = { "--interval", 0.001, 86400, 0,
						  "seconds from 0.001 to 86400" };

/* Its options, in the order a usage error lists them (cli.c defines each). */
static const char report_options[] = "json tail interval slowest from to help";

static int take(struct cs_cli *cli, int opt, const char *arg, void *ctx)
{
	struct report_args *args = ctx;
	long slowest;
	bool ok = true;
	switch (opt) {
	case 'j':
		args->json = true;
		break;
	case 't':
		ok = cs_cli_real(cli, &cs_number_tail, arg, &args->tail);
		break;
	case CS_OPT_SLOWEST:
		ok = cs_cli_integer(cli, &cs_number_slowest, arg, &slowest);
		args->slowest = ok ? (size_t)slowest : 0;
		break;
	case CS_OPT_FROM:
		ok = cs_cli_real(cli, &number_from, arg, &args->window.from_s);
		break;
	case CS_OPT_TO:
		ok = cs_cli_real(cli, &number_to, arg, &args->window.to_s);
		break;
	default: /* 'i' */
		ok = cs_cli_real(cli, &number_interval, arg, &args->interval_s);
		break;
	}
	return ok ? CS_CLI_GO_ON : CS_EXIT_USAGE;
}

static void interval_before_record(void *ctx, const struct cs_engine *engine, uint64_t ts_ns)
{
	cs_intervals_advance(ctx, engine, ts_ns);
}

/* connscope report --interval: a line per interval, then the run's totals. */
static int report_intervals(const char *path, const struct report_args *args)
{
	struct cs_intervals intervals;
	if (cs_intervals_init(&intervals, (uint64_t)(args->interval_s * 1e9), args->tail, cs_interval_print, stdout)) {
		fprintf(stderr, "connscope: out of memory\n");
		return CS_EXIT_RUNTIME;
	}
	const struct cs_replay_watch *window = &args->window;
	struct cs_replay_watch watch = { .before_record = interval_before_record, .ctx = &intervals,
					 .from_s = window->from_s, .to_s = window->to_s };
	struct cs_replay replay;
	int rc = CS_EXIT_RUNTIME;
	if (cs_replay_trace_watched(path, &replay, &watch) == 0) {
		cs_intervals_finish(&intervals, replay.engine);
		printf("%s: %" PRIu64 " requests in %.1f s; %" PRIu64 " records lost (the trace counts them for the "
		       "whole run only)\n", window->to_s > 0 || window->from_s > 0 ? "the window" : "whole run",
		       replay.engine->requests.requests, replay.meta.duration_s, replay.meta.events_lost);
		struct cs_cost cost;
		char line[256];
		cs_cost_of(replay.engine, &replay.meta, &cost);
		cs_cost_line(line, sizeof(line), &cost);
		printf("cost: %s\n", line);
		cs_replay_free(&replay);
		rc = 0;
	}
	cs_intervals_free(&intervals);
	return rc;
}

static int run(struct cs_cli *cli, int argc, char **argv)
{
	struct report_args args = { .tail = CS_TAIL_DEFAULT };
	int rc = cs_cli_parse(cli, argc, argv, report_options, take, &args);
	if (rc != CS_CLI_GO_ON)
		return rc;
	const char *path = argv[cli->operand];
	const struct cs_replay_watch *window = &args.window;
	if (window->to_s > 0 && window->to_s <= window->from_s)
		return cs_cli_usage(cli, "--to (%g s) must come after --from (%g s)", window->to_s, window->from_s);
	if (args.interval_s > 0) {
		if (args.json)
			return cs_cli_usage(cli, "--interval prints a table: it takes no --json");
		return report_intervals(path, &args);
	}
	struct cs_replay replay;
	if (cs_replay_trace_watched(path, &replay, window))
		return CS_EXIT_RUNTIME;
	replay.meta.tail_percentile = args.tail;
	replay.meta.slowest = args.slowest;
	cs_print_report(replay.engine, &replay.meta, args.json);
	cs_replay_free(&replay);
	return 0;
}

/* Its entry in connscope.c's command table. */
const struct cs_cmd cs_cmd_report = {
	"report", "replay a recorded file and report",
	run, usage, 1, "name one trace file", true,
};
