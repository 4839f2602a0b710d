// SPDX-License-Identifier: BSD-2-Clause
#include "target_args.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

bool cs_target_option(int opt)
{
	return opt == 'p' || opt == 'P' || opt == 'n' || opt == 'c' || opt == 'N' || opt == 'd' || opt == 'q' ||
	       opt == 'v' || opt == CS_OPT_NO_JVM;
}

/* --pid or --port: one more of CS_MAX_TARGETS. */
static int take_id(const struct cs_cli *cli, const struct cs_number *number, const char *arg, long *out,
		   size_t count)
{
	if (!cs_cli_integer(cli, number, arg, out))
		return CS_EXIT_USAGE;
	if (count >= CS_MAX_TARGETS)
		return cs_cli_usage(cli, "at most %d %s options", CS_MAX_TARGETS, number->option);
	return CS_CLI_GO_ON;
}

int cs_target_take(const struct cs_cli *cli, int opt, const char *arg, struct cs_session_options *opts)
{
	long value;
	int rc = CS_CLI_GO_ON;
	char reason[256];

	switch (opt) {
	case 'p':
		rc = take_id(cli, &cs_number_pid, arg, &value, opts->pid_count);
		if (rc == CS_CLI_GO_ON)
			opts->pids[opts->pid_count++] = (pid_t)value;
		return rc;
	case 'P':
		rc = take_id(cli, &cs_number_port, arg, &value, opts->port_count);
		if (rc == CS_CLI_GO_ON)
			opts->ports[opts->port_count++] = (uint16_t)value;
		return rc;
	case 'n':
		if (cs_target_add_name(&opts->match, arg, reason, sizeof(reason)))
			return cs_cli_usage(cli, "--name %s", reason);
		return rc;
	case 'c':
		if (cs_target_add_cgroup(&opts->match, arg, reason, sizeof(reason)))
			return cs_cli_usage(cli, "--cgroup %s", reason);
		return rc;
	case 'N':
		if (!*arg || strlen(arg) >= sizeof(opts->netns))
			return cs_cli_usage(cli, "--netns expects a pid, a /proc/PID/ns/net or an 'ip netns' name, "
					    "not '%s'", arg);
		strcpy(opts->netns, arg);
		return rc;
	case 'd':
		return cs_cli_real(cli, &cs_number_duration, arg, &opts->duration_s) ? rc : CS_EXIT_USAGE;
	case 'q':
		opts->quiet = true;
		return rc;
	case 'v':
		opts->probe.verbose = true;
		return rc;
	default: /* CS_OPT_NO_JVM */
		opts->no_jvm = true;
		return rc;
	}
}

int cs_target_named(const struct cs_cli *cli, const struct cs_session_options *opts)
{
	if (opts->pid_count == 0 && opts->port_count == 0 && !cs_target_match_any(&opts->match))
		return cs_cli_usage(cli, "name a target with --pid PID, --port PORT, --name NAME or --cgroup PATH");
	return CS_CLI_GO_ON;
}

/* cs_target_parse's take: the shared options here, the command's to its own take. */
struct target_parse {
	cs_cli_take_fn take;
	void *ctx;
	struct cs_session_options *opts;
};

static int take_shared(struct cs_cli *cli, int opt, const char *arg, void *ctx)
{
	struct target_parse *parse = ctx;
	if (cs_target_option(opt))
		return cs_target_take(cli, opt, arg, parse->opts);
	return parse->take(cli, opt, arg, parse->ctx);
}

int cs_target_parse(struct cs_cli *cli, int argc, char **argv, const char *options, cs_cli_take_fn take, void *ctx,
		    struct cs_session_options *opts)
{
	struct target_parse parse = { .take = take, .ctx = ctx, .opts = opts };
	cs_cli_session_defaults(opts);
	int rc = cs_cli_parse(cli, argc, argv, options, take_shared, &parse);
	return rc == CS_CLI_GO_ON ? cs_target_named(cli, opts) : rc;
}
