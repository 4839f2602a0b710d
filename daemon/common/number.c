// SPDX-License-Identifier: BSD-2-Clause
#include "number.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "errmsg.h"

/* Digits from *at on: how many. */
static size_t skip_digits(const char **at)
{
	const char *start = *at;
	while (isdigit((unsigned char)**at))
		(*at)++;
	return (size_t)(*at - start);
}

/*
 * The whole text is written as the rule says: -?DIGITS for an integer;
 * -?(DIGITS[.DIGITS]|.DIGITS)([eE][-+]?DIGITS)? for a real. strtol and
 * strtod would take more (blanks, '+', hex, "nan", "inf").
 */
static bool well_written(const char *text, bool integer)
{
	const char *at = text + (*text == '-');
	size_t whole = skip_digits(&at);
	if (integer)
		return whole > 0 && !*at;
	size_t fraction = 0;
	if (*at == '.') {
		at++;
		fraction = skip_digits(&at);
	}
	if (!whole && !fraction)
		return false;
	if (*at == 'e' || *at == 'E') {
		at++;
		at += *at == '-' || *at == '+';
		if (!skip_digits(&at))
			return false;
	}
	return !*at;
}

static bool in_range(const struct cs_number *number, double value)
{
	/* Written so that NaN fails every test. */
	if (!(value >= number->min && value <= number->max))
		return false;
	return !(number->flags & CS_NUMBER_ABOVE_MIN) || value > number->min;
}

static int refuse(const struct cs_number *number, const char *text, char *errmsg, size_t errlen)
{
	return cs_fail_code(-EINVAL, errmsg, errlen, "%s%sexpects %s, not '%s'", number->option ? number->option : "",
			    number->option ? " " : "", number->expects, text);
}

int cs_number_read_integer(const struct cs_number *number, const char *text, long long *out, char *errmsg,
			   size_t errlen)
{
	char *end;
	if (!well_written(text, true))
		return refuse(number, text, errmsg, errlen);
	errno = 0;
	long long value = strtoll(text, &end, 10);
	if (errno || *end || !in_range(number, (double)value))
		return refuse(number, text, errmsg, errlen);
	if (number->flags & CS_NUMBER_POW2 && (value < 1 || (value & (value - 1))))
		return refuse(number, text, errmsg, errlen);
	*out = value;
	return 0;
}

int cs_number_read(const struct cs_number *number, const char *text, double *out, char *errmsg, size_t errlen)
{
	if (number->flags & (CS_NUMBER_INTEGER | CS_NUMBER_POW2)) {
		long long whole = 0;
		int err = cs_number_read_integer(number, text, &whole, errmsg, errlen);
		if (!err)
			*out = (double)whole;
		return err;
	}
	char *end;
	if (!well_written(text, false))
		return refuse(number, text, errmsg, errlen);
	errno = 0;
	double value = strtod(text, &end);
	if (errno || *end || !in_range(number, value))
		return refuse(number, text, errmsg, errlen);
	*out = value;
	return 0;
}
