// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope diff BEFORE AFTER: what changed between two runs. Each is a
 * JSON report (attach/report --json, snapshot) or a trace file (record),
 * which is replayed through the engine first.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "json.h"
#include "replay.h"
#include "report.h"
#include "report_diff.h"

static const char usage[] =
	"Usage: connscope diff BEFORE AFTER [--json] [--percentile P]\n"
	"\n"
	"What changed between two runs, side by side: the latency percentiles, the\n"
	"tail's causes and their time per tail request, the conditions that appeared\n"
	"or went away, and each listener's accept wait, drops and backlog.\n"
	"BEFORE and AFTER are JSON reports ('connscope attach|report --json') or\n"
	"trace files ('connscope record').\n"
	"\n"
	"  -j, --json          print the comparison as one JSON object\n"
	"  -P, --percentile P  also compare percentile P (0-100), from the reports'\n"
	"                      histograms\n"
	"  -h, --help          this help\n";

static const struct cs_number number_percentile = { "--percentile", 0, 100, CS_NUMBER_ABOVE_MIN,
						     "a number above 0 and up to 100" };

/* Its options, in the order a usage error lists them (cli.c defines each). */
static const char diff_options[] = "json percentile help";

static int take(struct cs_cli *cli, int opt, const char *arg, void *ctx)
{
	struct cs_diff_options *options = ctx;
	if (opt == 'j') {
		options->as_json = true;
		return CS_CLI_GO_ON;
	}
	return cs_cli_real(cli, &number_percentile, arg, &options->extra_percentile) ? CS_CLI_GO_ON : CS_EXIT_USAGE;
}

/*
 * A trace file starts with its magic; JSON with '{' or '[' (after blanks):
 * an array is JSON too, refused then as no report rather than as no trace.
 */
static bool looks_like_json(FILE *file)
{
	int c;
	while ((c = fgetc(file)) == ' ' || c == '\n' || c == '\t' || c == '\r')
		;
	rewind(file);
	return c == '{' || c == '[';
}

/* The report of a trace file, built as report --json builds it. */
static json_t *replayed_report(const char *path)
{
	struct cs_replay replay;
	if (cs_replay_trace(path, &replay))
		return NULL;
	json_t *report = cs_report_value(replay.engine, &replay.meta);
	if (!report)
		fprintf(stderr, "connscope: %s: out of memory for its report\n", path);
	cs_replay_free(&replay);
	return report;
}

static json_t *load_run(const char *path)
{
	FILE *file = fopen(path, "rb");
	if (!file) {
		fprintf(stderr, "connscope: cannot open %s: %s\n", path, strerror(errno));
		return NULL;
	}
	bool json = looks_like_json(file);
	json_t *report = NULL;
	if (json) {
		json_error_t error;
		report = json_loadf(file, 0, &error);
		if (!report) {
			char err[512];
			cs_json_error(err, sizeof(err), path, &error);
			fprintf(stderr, "connscope: %s\n", err);
		}
	}
	fclose(file);
	return json ? report : replayed_report(path);
}

static int run(struct cs_cli *cli, int argc, char **argv)
{
	struct cs_diff_options options = { 0 };
	int rc = cs_cli_parse(cli, argc, argv, diff_options, take, &options);
	if (rc != CS_CLI_GO_ON)
		return rc;
	options.before_name = argv[cli->operand];
	options.after_name = argv[cli->operand + 1];
	json_t *before = load_run(argv[cli->operand]);
	json_t *after = before ? load_run(argv[cli->operand + 1]) : NULL;
	rc = CS_EXIT_RUNTIME;
	if (before && after) {
		char err[512];
		if (cs_report_diff(stdout, before, after, &options, err, sizeof(err)) == 0)
			rc = 0;
		else
			fprintf(stderr, "connscope: %s\n", err);
	}
	json_decref(before);
	json_decref(after);
	return rc;
}

/* Its entry in connscope.c's command table. */
const struct cs_cmd cs_cmd_diff = {
	"diff", "what changed between two runs (JSON reports or recorded files)",
	run, usage, 2, "name two runs: BEFORE and AFTER (JSON reports or trace files)", false,
};
