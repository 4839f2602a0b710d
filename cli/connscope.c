// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope: the command line. The commands are the table below, each in
 * its own cli/cmd_*.c; 'connscope help' lists them from the table.
 *
 *   connscope attach --pid PID | --port PORT [--duration SEC] [--json]
 *
 * Data goes to stdout, diagnostics to stderr. Exit codes: 0 done,
 * 1 runtime failure (no such target, missing privilege or kernel feature),
 * 2 usage error.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "engine.h"
#include "version.h"

static int run_version(struct cs_cli *cli, int argc, char **argv);
static int run_help(struct cs_cli *cli, int argc, char **argv);

static const struct cs_cmd cmd_version = {
	.name = "version",
	.summary = "print the version",
	.run = run_version,
};
static const struct cs_cmd cmd_help = {
	.name = "help",
	.summary = "this help",
	.run = run_help,
};

static const struct cs_cmd *const commands[] = {
	&cs_cmd_attach, &cs_cmd_record, &cs_cmd_report, &cs_cmd_diff, &cs_cmd_flamegraph, &cs_cmd_status,
	&cs_cmd_snapshot, &cs_cmd_reset, &cs_cmd_top, &cmd_version, &cmd_help,
};
#define COMMAND_COUNT (sizeof(commands) / sizeof(commands[0]))

static void main_help(FILE *out)
{
	fprintf(out,
		"Usage: connscope COMMAND [options]\n"
		"\n"
		"Find why a TCP server's tail latency grows: accept-queue waits, full backlogs\n"
		"and SYN drops, slow or unfair accepting threads, idle timeouts, connection\n"
		"set-up, run-queue delay, a blocked event loop, slow handlers, send drain.\n"
		"\n"
		"Commands:\n");
	for (size_t i = 0; i < COMMAND_COUNT; i++)
		fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
	fprintf(out, "\n'connscope COMMAND --help' describes each command.\n");
}

static int run_version(struct cs_cli *cli, int argc, char **argv)
{
	(void)cli;
	if (argc > 1) {
		fprintf(stderr, "connscope version: unexpected argument '%s' (it takes none)\n"
			"Try 'connscope --help'.\n", argv[1]);
		return CS_EXIT_USAGE;
	}
	printf("connscope %s (wire format %d)\n", CS_VERSION, CS_WIRE_VERSION);
	return 0;
}

static int run_help(struct cs_cli *cli, int argc, char **argv)
{
	(void)cli;
	(void)argc;
	(void)argv;
	main_help(stdout);
	return 0;
}

/* The command named name (or its option form: --version, --help, -h), or NULL. */
static const struct cs_cmd *find_command(const char *name)
{
	if (!strcmp(name, "--version"))
		return &cmd_version;
	if (!strcmp(name, "--help") || !strcmp(name, "-h"))
		return &cmd_help;
	for (size_t i = 0; i < COMMAND_COUNT; i++)
		if (!strcmp(name, commands[i]->name))
			return commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		main_help(stderr);
		return CS_EXIT_USAGE;
	}
	const struct cs_cmd *cmd = find_command(argv[1]);
	if (!cmd) {
		fprintf(stderr, "connscope: unknown command '%s'\n", argv[1]);
		main_help(stderr);
		return CS_EXIT_USAGE;
	}
	struct cs_cli cli;
	char name[48];
	snprintf(name, sizeof(name), "connscope %s", cmd->name);
	cs_cli_init(&cli, cmd, name);
	return cmd->run(&cli, argc - 1, argv + 1);
}
