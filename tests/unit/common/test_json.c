// SPDX-License-Identifier: BSD-2-Clause
/*
 * daemon/common/json.c: what connscope adds to jansson. Numbers rounded as
 * printf rounds them, any bytes made a JSON string, the dump's order, and
 * a refusal that names the sender and where its JSON broke.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* value dumped as cs_json_dump writes it, without the newline (malloc'd). */
static char *dumped(json_t *value)
{
	size_t len = 0;
	char *text = cs_json_dumps(value, &len);
	cr_assert_not_null(text);
	cr_assert(len > 0 && text[len - 1] == '\n');
	text[len - 1] = '\0';
	return text;
}

Test(json, numbers_round_as_printf_rounds)
{
	char *text = dumped(json_pack("[o,o,o,o,o,o,o]", cs_json_3(1.23456), cs_json_4(1.0 / 3), cs_json_us(1234567),
				      cs_json_3(0.1), cs_json_3(-0.0004), cs_json_3(NAN), cs_json_3(1e300)));
	cr_expect_str_eq(text, "[1.235,0.3333,1234.567,0.1,-0.0,null,1e300]");
	free(text);
	/* What "%.3f" prints and what the dump prints are the same number. */
	for (uint64_t ns = 1; ns < 100000000000ull; ns = ns * 7 + 13) {
		char want[64];
		snprintf(want, sizeof(want), "%.3f", (double)ns / 1e3);
		json_t *got = json_loads((text = dumped(json_pack("[o]", cs_json_us(ns)))), 0, NULL);
		cr_expect_eq(json_real_value(json_array_get(got, 0)), strtod(want, NULL), "%s became %s", want, text);
		json_decref(got);
		free(text);
	}
}

Test(json, keys_keep_their_order)
{
	char *text = dumped(json_pack("{s:i,s:i,s:i,s:{s:n}}", "z", 1, "a", 2, "m", 3, "b", "y"));
	cr_expect_str_eq(text, "{\"z\":1,\"a\":2,\"m\":3,\"b\":{\"y\":null}}");
	free(text);
}

Test(json, text_is_made_utf8)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "caf\xc3\xa9-\xe2\x82\xac", "caf\xc3\xa9-\xe2\x82\xac" },
		{ "ab\xc3", "ab\xef\xbf\xbd" },                       /* cut mid-character */
		{ "\xff" "x\xe2\x82", "\xef\xbf\xbdx\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* a surrogate */
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd" },            /* overlong */
		{ "a\"b\\c\nd\x01\x7f", "a\"b\\c\nd\x01\x7f" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *s = cs_json_text(cases[i].in);
		cr_assert_not_null(s, "case %zu", i);
		cr_expect_str_eq(json_string_value(s), cases[i].out, "case %zu", i);
		json_decref(s);
	}
	json_t *empty = cs_json_text(NULL);
	cr_expect_str_eq(json_string_value(empty), "");
	json_decref(empty);
}

Test(json, dump_of_nothing_fails)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_expect_eq(cs_json_dump(out, NULL), -ENOMEM, "a value that could not be built");
	cr_expect_eq(cs_json_dump(out, json_pack("{s:b}", "ok", 1)), 0);
	fclose(out);
	cr_expect_str_eq(text, "{\"ok\":true}\n");
	free(text);
	cr_expect_null(cs_json_dumps(NULL, &len));
}

Test(json, invalid_json_is_refused_naming_where)
{
	static const char *const bad[] = {
		"", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "[01]", "[1.]", "[.5]", "[1e]", "[-]",
		"[NaN]", "[nan]", "[tru]", "\"\\x\"", "\"\\u12g4\"", "\"abc", "\"a\nb\"", "[1] [2]", "[1 2]",
		"{\"a\":1 \"b\":2}", "}", "12", "[\"\\u0000\"]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[256] = "";
		json_t *v = cs_json_load(bad[i], strlen(bad[i]), "peer x", err, sizeof(err));
		cr_expect_null(v, "accepted: %s", bad[i]);
		json_decref(v);
		cr_expect(!strncmp(err, "peer x: not valid JSON at line 1, column ", 41), "%s: %s", bad[i], err);
	}
	/* A reply cut short: where it ends, on which line. */
	char err[256];
	const char *cut = "{\"a\":\n[1,2";
	cr_expect_null(cs_json_load(cut, strlen(cut), "the daemon's reply", err, sizeof(err)));
	cr_expect(strstr(err, "the daemon's reply: not valid JSON at line 2, column "), "%s", err);
	/* Bounded: the library refuses to nest deeper than it can. */
	size_t depth = 100000;
	char *deep = malloc(2 * depth);
	memset(deep, '[', depth);
	memset(deep + depth, ']', depth);
	cr_expect_null(cs_json_load(deep, 2 * depth, "deep", err, sizeof(err)));
	free(deep);
}

Test(json, text_need_not_be_nul_terminated)
{
	/* The reader stops at len: "[12]" cut after "[1" is unterminated, not "[12]". */
	char err[128];
	cr_expect_null(cs_json_load("[12]", 2, "x", err, sizeof(err)));
	json_t *v = cs_json_load("[12]xyz", 4, "x", err, sizeof(err));
	cr_assert_not_null(v);
	cr_expect_eq(json_integer_value(json_array_get(v, 0)), 12);
	json_decref(v);
}

Test(json, lookups_fall_back)
{
	char err[128];
	const char *text = "{\"a\":1.5,\"b\":[true],\"s\":\"a\\u001bb\\u00e9\\u00e9\",\"n\":null}";
	json_t *v = cs_json_load(text, strlen(text), "x", err, sizeof(err));
	cr_assert_not_null(v, "%s", err);
	cr_expect_eq(cs_json_num(v, "a", 0), 1.5);
	cr_expect_eq(cs_json_num(v, "b", 7), 7, "not a number: the fallback");
	cr_expect_eq(cs_json_num(v, "nope", 7), 7);
	cr_expect_eq(cs_json_num(json_object_get(v, "b"), "a", 7), 7, "not an object");
	cr_expect_eq(cs_json_num(NULL, "a", 7), 7);
	char s[16];
	cr_expect(cs_json_str(v, "s", s, sizeof(s)));
	cr_expect_str_eq(s, "a?b\xc3\xa9\xc3\xa9", "control characters never reach a terminal");
	char small[6];
	cr_expect(cs_json_str(v, "s", small, sizeof(small)));
	cr_expect_str_eq(small, "a?b\xc3\xa9", "cut to fit, never inside a character");
	cr_expect_not(cs_json_str(v, "n", s, sizeof(s)));
	cr_expect_str_eq(s, "");
	cr_expect_not(cs_json_str(NULL, "n", s, sizeof(s)));
	json_decref(v);
}
