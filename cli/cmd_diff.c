// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope diff BEFORE AFTER: what changed between two runs. Each is a
 * JSON report (attach/report --json, snapshot) or a trace file (record),
 * which is replayed through the engine first.
 */
#include "cmd_diff.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "ctl_client.h"
#include "replay.h"
#include "report.h"
#include "report_diff.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

static void diff_help(FILE *out)
{
	fprintf(out,
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
		"  -h, --help          this help\n");
}

/* A trace file starts with its magic; a JSON report with '{' (after blanks). */
static bool looks_like_json(FILE *file)
{
	int c;
	while ((c = fgetc(file)) == ' ' || c == '\n' || c == '\t' || c == '\r')
		;
	rewind(file);
	return c == '{';
}

/* The report of a trace file, as JSON, through the same writer as report --json. */
static json_t *replayed_report(const char *path)
{
	struct cs_engine *engine;
	struct cs_report_meta meta;
	if (cs_replay_trace(path, &engine, &meta))
		return NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	json_t *report = NULL;
	if (mem) {
		cs_report_json(mem, engine, &meta);
		fclose(mem);
		json_error_t error;
		report = json_loadb(text, len, 0, &error);
		if (!report)
			fprintf(stderr, "connscope: %s: its report did not parse: %s\n", path, error.text);
	}
	free(text);
	cs_engine_free(engine);
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
		if (!report)
			fprintf(stderr, "connscope: %s: not valid JSON at line %d: %s\n", path, error.line, error.text);
	}
	fclose(file);
	return json ? report : replayed_report(path);
}

int cmd_diff(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "percentile", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct cs_diff_options options = { 0 };
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jP:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			options.as_json = true;
			break;
		case 'P':
			if (!parse_double(optarg, 0.0, 100.0, &options.extra_percentile) || options.extra_percentile <= 0)
				return cs_cli_usage("diff", "--percentile expects a number above 0 and up to 100, not '%s'",
						    optarg);
			break;
		case 'h':
			diff_help(stdout);
			return 0;
		default: {
			char msg[512];
			return cs_cli_usage("diff", "%s", cli_refused_option(c, argv, longopts, msg, sizeof(msg)));
		}
		}
	}
	if (argc - optind != 2)
		return cs_cli_usage("diff", "name two runs: BEFORE and AFTER (JSON reports or trace files)");
	json_t *before = load_run(argv[optind]);
	json_t *after = before ? load_run(argv[optind + 1]) : NULL;
	int rc = EXIT_RUNTIME;
	if (before && after) {
		char err[256];
		if (cs_report_diff(stdout, before, after, &options, err, sizeof(err)) == 0)
			rc = 0;
		else
			fprintf(stderr, "connscope: %s\n", err);
	}
	json_decref(before);
	json_decref(after);
	return rc;
}
