// SPDX-License-Identifier: BSD-2-Clause
#include "run_args.h"

#include <string.h>

#include "target_args.h"

/* Its options, in the order a usage error lists them (cli.c defines each). */
static const char run_options[] = CS_TARGET_OPTIONS " duration json output sample-hz ring-mb trace tail slowest no-handshakes no-pauses no-clients bpf-stats no-bpf-stats no-jvm quiet "
	"verbose help";

/* The options that are attach's or record's alone. */
static int take_own(const struct cs_cli *cli, int opt, const char *arg, struct run_args *args)
{
	long value;
	switch (opt) {
	case 'j':
		if (args->recording)
			return cs_cli_usage(cli, "unknown option '--json' (use 'connscope report --json')");
		args->json = true;
		return CS_CLI_GO_ON;
	case 'o':
		if (!*arg)
			return cs_cli_usage(cli, "-o/--output expects a file name, not ''");
		args->output = arg;
		return CS_CLI_GO_ON;
	default: /* CS_OPT_SLOWEST */
		if (args->recording)
			return cs_cli_usage(cli, "--slowest is for the report: 'connscope report --slowest N FILE'");
		if (!cs_cli_integer(cli, &cs_number_slowest, arg, &value))
			return CS_EXIT_USAGE;
		args->slowest = (size_t)value;
		return CS_CLI_GO_ON;
	}
}

/* The probes' and the session's options. */
static int take_probe(const struct cs_cli *cli, int opt, const char *arg, struct cs_session_options *opts)
{
	long value;
	switch (opt) {
	case CS_OPT_SAMPLE_HZ:
		if (!cs_cli_integer(cli, &cs_number_sample_hz, arg, &value))
			return CS_EXIT_USAGE;
		opts->sample_hz = (unsigned int)value;
		break;
	case CS_OPT_RING_MB:
		if (!cs_cli_integer(cli, &cs_number_ring_mb, arg, &value))
			return CS_EXIT_USAGE;
		opts->probe.ring_bytes = (uint32_t)value << 20;
		opts->probe.wakeup_bytes = opts->probe.ring_bytes / 32;
		break;
	case CS_OPT_NO_BPF_STATS:
		opts->probe.no_bpf_stats = true;
		break;
	case CS_OPT_BPF_STATS:
		if (strcmp(arg, "yes") != 0 && strcmp(arg, "always") != 0 && strcmp(arg, "no") != 0)
			return cs_cli_usage(cli, "--bpf-stats expects yes, always or no, not '%s'", arg);
		opts->probe.no_bpf_stats = !strcmp(arg, "no");
		opts->probe.bpf_stats_always = !strcmp(arg, "always");
		break;
	case CS_OPT_NO_PAUSES:
		opts->probe.no_pauses = true;
		break;
	case CS_OPT_NO_CLIENTS:
		opts->probe.follow_clients = false;
		break;
	default: /* CS_OPT_NO_HANDSHAKES */
		opts->probe.trace_handshakes = false;
		break;
	}
	return CS_CLI_GO_ON;
}

/* attach --trace: requests in windows, as connscoped by default (a recording keeps them all). */
static int take_trace(const struct cs_cli *cli, const char *arg, struct run_args *args)
{
	char why[256];
	if (args->recording)
		return cs_cli_usage(cli, "--trace is for attach and connscoped: a recording keeps every request");
	if (cs_trace_schedule_parse(arg, &args->session.trace, why, sizeof(why)))
		return cs_cli_usage(cli, "--trace %s", why);
	return CS_CLI_GO_ON;
}

static int take(struct cs_cli *cli, int opt, const char *arg, void *ctx)
{
	struct run_args *args = ctx;
	if (opt == 't')
		return cs_cli_real(cli, &cs_number_tail, arg, &args->tail_percentile) ? CS_CLI_GO_ON : CS_EXIT_USAGE;
	if (opt == 'j' || opt == 'o' || opt == CS_OPT_SLOWEST)
		return take_own(cli, opt, arg, args);
	if (opt == CS_OPT_TRACE)
		return take_trace(cli, arg, args);
	return take_probe(cli, opt, arg, &args->session);
}

int cs_run_args_parse(struct cs_cli *cli, int argc, char **argv, struct run_args *args)
{
	memset(args, 0, sizeof(*args));
	args->recording = !strcmp(cli->cmd->name, "record");
	args->tail_percentile = CS_TAIL_DEFAULT;
	int rc = cs_target_parse(cli, argc, argv, run_options, take, args, &args->session);
	if (rc != CS_CLI_GO_ON)
		return rc;
	if (args->recording && !args->output)
		return cs_cli_usage(cli, "name the trace file with -o FILE");
	cs_cli_catch_stop();
	return CS_CLI_GO_ON;
}

void cs_print_report(const struct cs_engine *engine, const struct cs_report_meta *meta, bool json)
{
	if (json)
		cs_report_json(stdout, engine, meta);
	else
		cs_report_text(stdout, engine, meta);
}

struct cs_engine *cs_cli_engine_new(void)
{
	struct cs_engine *engine = cs_engine_new();
	if (!engine)
		fprintf(stderr, "connscope: out of memory\n");
	return engine;
}
