/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The options every profiling command shares (attach, record, flamegraph):
 * the session's defaults, and the target options -p/--pid, -P/--port,
 * -n/--name, -c/--cgroup, -d/--duration, with one wording of their errors.
 */
#ifndef CS_CLI_TARGET_ARGS_H
#define CS_CLI_TARGET_ARGS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "session.h"

#define PID_MAX_LIMIT 4194304 /* the kernel's upper bound for pid_max */

/* Zeroes opts and sets what a profiling command starts from. */
void cs_session_defaults(struct cs_session_options *opts, const volatile sig_atomic_t *stop);

enum cs_target_arg {
	CS_TARGET_ARG_NOT_MINE = 0, /* not one of the shared options */
	CS_TARGET_ARG_TAKEN,        /* stored in opts */
	CS_TARGET_ARG_BAD,          /* refused: why says so, naming the option */
};

/* getopt's option c with its argument: store it in opts, or say why not. */
enum cs_target_arg cs_target_arg(int c, const char *arg, struct cs_session_options *opts, char *why,
				 size_t why_len);

#endif /* CS_CLI_TARGET_ARGS_H */
