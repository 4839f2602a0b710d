/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Numbers people write on a command line or in a config file, read one way
 * everywhere (connscope's options, connscoped's config, csserver, csload):
 * the whole text, in decimal, no blanks, no '+', no hex, no NaN or
 * infinity; an integer is digits only (a '-' first for a negative one),
 * a real may have a fraction and an exponent. A refusal is one
 * message: "OPTION expects EXPECTS, not 'TEXT'" (without OPTION when the
 * caller names it).
 */
#ifndef CS_NUMBER_H
#define CS_NUMBER_H

#include <stdbool.h>
#include <stddef.h>

/* What a number option takes: its range, and how the refusal words it. */
struct cs_number {
	const char *option;  /* "--tail"; NULL: the caller names it (a config file's key) */
	double min, max;     /* integers: within 2^53 either way */
	unsigned int flags;  /* CS_NUMBER_* */
	const char *expects; /* with the unit: "a percentile from 50 to 99.999" */
};
#define CS_NUMBER_INTEGER 1u   /* decimal digits only */
#define CS_NUMBER_POW2 2u      /* an integer that is a power of two */
#define CS_NUMBER_ABOVE_MIN 4u /* min itself is refused */

#define CS_STR_(x) #x
#define CS_STR(x) CS_STR_(x) /* a number macro in a help or error text */

/* text as number says into *out: 0, or -EINVAL with the message in errmsg. */
int cs_number_read(const struct cs_number *number, const char *text, double *out, char *errmsg, size_t errlen);

/* The same for an integer option (CS_NUMBER_INTEGER or CS_NUMBER_POW2 in its flags). */
int cs_number_read_integer(const struct cs_number *number, const char *text, long long *out, char *errmsg,
			   size_t errlen);

#endif /* CS_NUMBER_H */
