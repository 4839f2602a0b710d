/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The options every profiling command shares (attach, record, flamegraph,
 * top): the targets -p/--pid, -P/--port, -n/--name, -c/--cgroup,
 * -N/--netns, and the session's -d/--duration, -q/--quiet, -v/--verbose,
 * --no-jvm, with one wording of their errors.
 */
#ifndef CS_CLI_TARGET_ARGS_H
#define CS_CLI_TARGET_ARGS_H

#include <stdbool.h>

#include "cli.h"
#include "session.h"

/* The target options' names, in the order their commands list them (for cs_cli_parse). */
#define CS_TARGET_OPTIONS "pid port name cgroup netns"

/* opt is one of the shared options (a target or a session option). */
bool cs_target_option(int opt);

/* Store opt's argument in opts: CS_CLI_GO_ON, or the usage error's exit code. */
int cs_target_take(const struct cs_cli *cli, int opt, const char *arg, struct cs_session_options *opts);

/* At least one target was named: CS_CLI_GO_ON, or the usage error's exit code. */
int cs_target_named(const struct cs_cli *cli, const struct cs_session_options *opts);

/*
 * A profiling command's line (attach, record, flamegraph): opts from the
 * session's defaults, the shared options into opts, the command's own
 * through take, and at least one target. CS_CLI_GO_ON, or an exit code.
 */
int cs_target_parse(struct cs_cli *cli, int argc, char **argv, const char *options, cs_cli_take_fn take, void *ctx,
		    struct cs_session_options *opts);

#endif /* CS_CLI_TARGET_ARGS_H */
