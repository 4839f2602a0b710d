/* SPDX-License-Identifier: BSD-2-Clause */
/* The command line: parsing, range checks and --help. */
#ifndef CS_OPTIONS_H
#define CS_OPTIONS_H

#include <stdio.h>

#include "config.h"

enum cs_options_result {
	CS_OPTIONS_RUN,   /* cfg is filled: start the server */
	CS_OPTIONS_HELP,  /* help was printed to out: exit 0 */
	CS_OPTIONS_USAGE, /* a bad option was reported on err: exit 2 */
};

/* Fills cfg from argv. Messages go to out (help) and err (mistakes), so
 * that the parser can be driven without a terminal. */
enum cs_options_result cs_options_parse(int argc, char **argv, struct cs_config *cfg,
					FILE *out, FILE *err);

#endif /* CS_OPTIONS_H */
