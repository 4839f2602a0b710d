/* SPDX-License-Identifier: BSD-2-Clause */
/* connscope's commands, one file each (cli/cmd_*.c), in the order 'connscope help' lists them. */
#ifndef CS_CLI_COMMANDS_H
#define CS_CLI_COMMANDS_H

#include "cli.h"

extern const struct cs_cmd cs_cmd_attach;     /* cmd_attach.c */
extern const struct cs_cmd cs_cmd_record;     /* cmd_record.c */
extern const struct cs_cmd cs_cmd_report;     /* cmd_report.c */
extern const struct cs_cmd cs_cmd_diff;       /* cmd_diff.c */
extern const struct cs_cmd cs_cmd_flamegraph; /* cmd_flamegraph.c */
extern const struct cs_cmd cs_cmd_status;     /* cmd_status.c */
extern const struct cs_cmd cs_cmd_snapshot;   /* cmd_snapshot.c */
extern const struct cs_cmd cs_cmd_reset;      /* cmd_reset.c */
extern const struct cs_cmd cs_cmd_top;        /* cmd_top.c */

#endif /* CS_CLI_COMMANDS_H */
