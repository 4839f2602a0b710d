/* SPDX-License-Identifier: BSD-2-Clause */
/* Strict number parsing for the command lines (connscope, connscoped). */
#ifndef CS_CLI_ARGS_H
#define CS_CLI_ARGS_H

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* strtol and strtod skip leading blanks and take a '+': we do not. */
static inline bool starts_like_a_number(const char *text)
{
	return isdigit((unsigned char)text[0]) || (text[0] == '-' && isdigit((unsigned char)text[1])) ||
	       text[0] == '.';
}

/* The whole string is an integer within [min, max]. */
static inline bool parse_long(const char *text, long min, long max, long *out)
{
	char *end;
	if (!starts_like_a_number(text))
		return false;
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
	if (!starts_like_a_number(text))
		return false;
	errno = 0;
	double value = strtod(text, &end);
	if (errno || end == text || *end || !(value >= min && value <= max))
		return false;
	*out = value;
	return true;
}

/*
 * The message for an option getopt_long refused (c is ':' or '?', opterr 0,
 * optstring starting with ':'), naming it as the user wrote it and, for an
 * unknown one, the options there are:
 *   option '--pid' needs a value
 *   option '--json' takes no value
 *   unknown option '-x' (options: --pid, --port, ...)
 * glibc leaves optind past a refused long option, and optopt 0 for an
 * unknown long one (else the option's val); a short option inside a
 * cluster ("-qx") is named by optopt alone.
 */
static inline const char *cli_refused_option(int c, char **argv, const struct option *longopts, char *msg,
					     size_t len)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	bool is_long = !strncmp(arg, "--", 2);
	size_t name_len = is_long ? strcspn(arg, "=") : 0;
	char name[64];
	if (is_long && c == '?' && optopt) {
		/* A known long option: refused only when given a value it does not take. */
		is_long = false;
		for (const struct option *o = longopts; o->name; o++)
			if (o->val == optopt && strlen(o->name) == name_len - 2 &&
			    !strncmp(o->name, arg + 2, name_len - 2) && arg[name_len] == '=')
				is_long = true;
		if (is_long) {
			snprintf(msg, len, "option '%.*s' takes no value", (int)name_len, arg);
			return msg;
		}
	}
	if (is_long)
		snprintf(name, sizeof(name), "%.*s", (int)(name_len < 60 ? name_len : 60), arg);
	else
		snprintf(name, sizeof(name), "-%c", optopt ? optopt : '?');
	if (c == ':') {
		snprintf(msg, len, "option '%s' needs a value", name);
		return msg;
	}
	size_t used = (size_t)snprintf(msg, len, "unknown option '%s' (options:", name);
	for (const struct option *o = longopts; o->name && used < len; o++)
		used += (size_t)snprintf(msg + used, len - used, "%s --%s", o == longopts ? "" : ",", o->name);
	if (used < len)
		snprintf(msg + used, len - used, ")");
	return msg;
}

#endif /* CS_CLI_ARGS_H */
