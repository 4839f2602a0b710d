/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef CS_CLI_RUN_SESSION_H
#define CS_CLI_RUN_SESSION_H

#include "run_args.h"

/*
 * The session of attach or record, into result: 0, or CS_EXIT_RUNTIME
 * after saying why on stderr. With args->output, every record is written
 * to that trace file too (none is left behind when the run fails).
 */
int cs_run_session(struct run_args *args, struct cs_engine *engine, struct cs_session_result *result);

#endif
