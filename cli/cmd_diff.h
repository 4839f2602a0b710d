/* SPDX-License-Identifier: BSD-2-Clause */
/* connscope diff BEFORE AFTER: what changed between two runs. */
#ifndef CS_CLI_CMD_DIFF_H
#define CS_CLI_CMD_DIFF_H

int cmd_diff(int argc, char **argv);

#endif /* CS_CLI_CMD_DIFF_H */
