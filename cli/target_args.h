/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The options every profiling command shares (attach, record, flamegraph,
 * top): the targets -p/--pid, -P/--port, -n/--name, -c/--cgroup,
 * -N/--netns, and -d/--duration, with one wording of their errors.
 */
#ifndef CS_CLI_TARGET_ARGS_H
#define CS_CLI_TARGET_ARGS_H

#include <stdbool.h>

#include "cli.h"
#include "session.h"

/* The target options' longopts entries, in the order their commands list them. */
#define CS_TARGET_LONGOPTS                                   \
	{ "pid", required_argument, NULL, 'p' },             \
	{ "port", required_argument, NULL, 'P' },            \
	{ "name", required_argument, NULL, 'n' },            \
	{ "cgroup", required_argument, NULL, 'c' },          \
	{ "netns", required_argument, NULL, 'N' }

/* opt is one of the shared options (a target, or -d/--duration). */
bool cs_target_option(int opt);

/* Store opt's argument in opts: CS_CLI_GO_ON, or the usage error's exit code. */
int cs_target_take(const struct cs_cli *cli, int opt, const char *arg, struct cs_session_options *opts);

/* At least one target was named: CS_CLI_GO_ON, or the usage error's exit code. */
int cs_target_named(const struct cs_cli *cli, const struct cs_session_options *opts);

#endif /* CS_CLI_TARGET_ARGS_H */
