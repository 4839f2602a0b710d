/* SPDX-License-Identifier: BSD-2-Clause */
/* connscope's commands that talk to connscoped (cli/cmd_*.c). */
#ifndef CS_CLI_CTL_COMMANDS_H
#define CS_CLI_CTL_COMMANDS_H

int cmd_status(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_reset(int argc, char **argv);
int cmd_top(int argc, char **argv);

#endif /* CS_CLI_CTL_COMMANDS_H */
