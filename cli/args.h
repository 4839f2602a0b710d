/* SPDX-License-Identifier: BSD-2-Clause */
/* Strict number parsing for the command lines (connscope, connscoped). */
#ifndef CS_CLI_ARGS_H
#define CS_CLI_ARGS_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

/* The whole string is an integer within [min, max]. */
static inline bool parse_long(const char *text, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long value = strtol(text, &end, 10);
	if (errno || end == text || *end || value < min || value > max)
		return false;
	*out = value;
	return true;
}

/* The whole string is a number within [min, max] (NaN never is). */
static inline bool parse_double(const char *text, double min, double max, double *out)
{
	char *end;
	errno = 0;
	double value = strtod(text, &end);
	if (errno || end == text || *end || !(value >= min && value <= max))
		return false;
	*out = value;
	return true;
}

#endif /* CS_CLI_ARGS_H */
