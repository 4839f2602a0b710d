// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of daemon/common/number.c: the one rule by which connscope,
 * connscoped's config, csserver and csload read a number, and its message.
 */
#include <criterion/criterion.h>
#include <errno.h>

#include "number.h"

static const struct cs_number port = { "--port", 1, 65535, CS_NUMBER_INTEGER, "a TCP port (1-65535)" };
static const struct cs_number seconds = { "--duration", 0.1, 100, 0, "seconds (0.1-100)" };
static const struct cs_number ring = { "--ring-mb", 1, 1024, CS_NUMBER_POW2, "a power of two from 1 to 1024" };
static const struct cs_number above = { "--to", 0, 10, CS_NUMBER_ABOVE_MIN, "more than 0" };
static const struct cs_number signed_range = { "--block", -5, 5, CS_NUMBER_INTEGER, "-5 to 5" };

static bool reads_integer(const struct cs_number *number, const char *text, long long want)
{
	char why[256] = "";
	long long got = -12345;
	return cs_number_read_integer(number, text, &got, why, sizeof(why)) == 0 && got == want;
}

static bool reads_real(const struct cs_number *number, const char *text, double want)
{
	char why[256] = "";
	double got = -1;
	return cs_number_read(number, text, &got, why, sizeof(why)) == 0 && got == want;
}

static void refused(const struct cs_number *number, const char *text)
{
	char why[256] = "";
	double got = 42;
	cr_assert_eq(cs_number_read(number, text, &got, why, sizeof(why)), -EINVAL, "'%s' was read", text);
	cr_assert_eq(got, 42, "'%s' wrote its out on refusal", text);
	cr_assert_neq(why[0], '\0', "'%s': no message", text);
}

Test(number, integers_whole_decimal_in_range)
{
	cr_assert(reads_integer(&port, "1", 1));
	cr_assert(reads_integer(&port, "65535", 65535));
	cr_assert(reads_integer(&port, "080", 80), "leading zeros are decimal, not octal");
	cr_assert(reads_integer(&signed_range, "-5", -5));
	const char *bad[] = { "",	"0",	 "65536", "-1",	 "+80",	 " 80", "80 ", "0x50",
			      "8080.5", "80e1", "1e3",   "abc", "12x", "-",	 "99999999999999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		refused(&port, bad[i]);
}

Test(number, reals_with_fraction_and_exponent)
{
	cr_assert(reads_real(&seconds, "10", 10));
	cr_assert(reads_real(&seconds, "0.5", 0.5));
	cr_assert(reads_real(&seconds, ".5", 0.5));
	cr_assert(reads_real(&seconds, "5.", 5));
	cr_assert(reads_real(&seconds, "1e1", 10));
	cr_assert(reads_real(&seconds, "2.5E-1", 0.25));
	const char *bad[] = { "",     ".",    "-1",  "0.05", "101", "nan", "inf", "-inf", "+1",
			      " 1",   "1 ",   "10s", "1e",   "1e+", "0x1p3", "1..2", "1e999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		refused(&seconds, bad[i]);
}

Test(number, powers_of_two_and_above_min)
{
	cr_assert(reads_integer(&ring, "1", 1));
	cr_assert(reads_integer(&ring, "1024", 1024));
	refused(&ring, "3");
	refused(&ring, "0");
	refused(&ring, "2048");
	cr_assert(reads_real(&above, "0.001", 0.001));
	refused(&above, "0");
}

Test(number, the_message_names_the_option_and_what_it_expects)
{
	char why[256];
	double got;
	cr_assert_eq(cs_number_read(&port, "0x50", &got, why, sizeof(why)), -EINVAL);
	cr_assert_str_eq(why, "--port expects a TCP port (1-65535), not '0x50'");
	const struct cs_number keyed = { NULL, 1, 1000, CS_NUMBER_INTEGER, "1-1000" };
	cr_assert_eq(cs_number_read(&keyed, "1001", &got, why, sizeof(why)), -EINVAL);
	cr_assert_str_eq(why, "expects 1-1000, not '1001'", "the caller names a config key itself");
}
