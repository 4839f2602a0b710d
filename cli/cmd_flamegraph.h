/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef CS_CMD_FLAMEGRAPH_H
#define CS_CMD_FLAMEGRAPH_H

/* connscope flamegraph: where the tail requests' time went, as stacks. */
int cmd_flamegraph(int argc, char **argv);

#endif /* CS_CMD_FLAMEGRAPH_H */
