// SPDX-License-Identifier: BSD-2-Clause
/* The JSON reader (daemon/common/json_read.c). */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "json_read.h"

static int parse(struct cs_json *doc, const char *text)
{
	return cs_json_parse(doc, text, strlen(text), 1000);
}

Test(json_read, members_elements_and_values)
{
	struct cs_json doc;
	const char *text = "{\"a\":1.5,\"b\":[true,false,null,\"x\"],\"c\":{\"d\":-2e3,\"e\":{}},\"f\":[]}";
	cr_assert_eq(parse(&doc, text), 0);
	cr_expect_float_eq(cs_json_number(&doc, cs_json_get(&doc, 0, "a"), 0), 1.5, 1e-12);
	int b = cs_json_get(&doc, 0, "b");
	cr_expect_eq(cs_json_size(&doc, b), 4);
	cr_expect(cs_json_bool(&doc, cs_json_at(&doc, b, 0), false));
	cr_expect_not(cs_json_bool(&doc, cs_json_at(&doc, b, 1), true));
	cr_expect_eq(doc.tokens[cs_json_at(&doc, b, 2)].type, CS_JSON_NULL);
	char s[8];
	cr_expect(cs_json_string(&doc, cs_json_at(&doc, b, 3), s, sizeof(s)));
	cr_expect_str_eq(s, "x");
	cr_expect_eq(cs_json_at(&doc, b, 4), -1);
	cr_expect_float_eq(cs_json_number(&doc, cs_json_path(&doc, 0, "c", "d", NULL), 0), -2000, 1e-9);
	/* Members after a nested object are found: the walk skips whole subtrees. */
	cr_expect_eq(cs_json_size(&doc, cs_json_get(&doc, 0, "f")), 0);
	cr_expect_eq(cs_json_get(&doc, 0, "nope"), -1);
	cr_expect_eq(cs_json_get(&doc, b, "a"), -1, "not an object");
	cr_expect_float_eq(cs_json_number(&doc, -1, 7), 7, 1e-12);
	cr_expect_float_eq(cs_json_number(&doc, b, 7), 7, 1e-12, "not a number: the fallback");
	int k = 0;
	for (int e = cs_json_first(&doc, b); k < cs_json_size(&doc, b); k++, e = cs_json_next(&doc, e))
		cr_expect_eq(e, cs_json_at(&doc, b, k));
	cs_json_free(&doc);
}

Test(json_read, string_escapes_decode_to_utf8)
{
	struct cs_json doc;
	cr_assert_eq(parse(&doc, "[\"a\\\"b\\\\c\\/d\\u00e9\\ud83d\\ude00\\n\"]"), 0);
	char s[64];
	cs_json_string(&doc, cs_json_at(&doc, 0, 0), s, sizeof(s));
	cr_expect_str_eq(s, "a\"b\\c/d\xc3\xa9\xf0\x9f\x98\x80?");
	/* Cut to fit, never inside a character. */
	char small[10];
	cs_json_string(&doc, cs_json_at(&doc, 0, 0), small, sizeof(small));
	cr_expect_str_eq(small, "a\"b\\c/d\xc3\xa9");
	cs_json_free(&doc);
	cr_assert_eq(parse(&doc, "[\"\\ud800x\"]"), 0);
	cs_json_string(&doc, cs_json_at(&doc, 0, 0), s, sizeof(s));
	cr_expect_str_eq(s, "\xef\xbf\xbdx", "a lone surrogate is U+FFFD");
	cs_json_free(&doc);
}

Test(json_read, invalid_json_is_refused_with_a_reason)
{
	static const char *const bad[] = {
		"", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "[01]", "[1.]", "[.5]", "[1e]", "[-]",
		"[NaN]", "[nan]", "[tru]", "\"\\x\"", "\"\\u12g4\"", "\"abc", "\"a\nb\"", "[1] [2]", "[1 2]",
		"{\"a\":1 \"b\":2}", "}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cs_json doc;
		cr_expect_eq(parse(&doc, bad[i]), -EINVAL, "accepted: %s", bad[i]);
		cr_expect_not_null(doc.error);
		cr_expect_null(doc.tokens);
	}
}

Test(json_read, depth_and_size_are_bounded)
{
	char deep[200];
	memset(deep, '[', 100);
	memset(deep + 100, ']', 100);
	struct cs_json doc;
	cr_expect_eq(cs_json_parse(&doc, deep, sizeof(deep), 1000), -EINVAL);
	cr_expect_str_eq(doc.error, "nested too deeply");
	cr_expect_eq(cs_json_parse(&doc, deep + 100 - CS_JSON_MAX_DEPTH, 2 * CS_JSON_MAX_DEPTH, 1000), 0);
	cs_json_free(&doc);
	const char *many = "[1,2,3,4,5,6,7,8,9,10]";
	cr_expect_eq(cs_json_parse(&doc, many, strlen(many), 5), -E2BIG);
	cr_expect_eq(cs_json_parse(&doc, many, strlen(many), 11), 0);
	cs_json_free(&doc);
}

Test(json_read, text_need_not_be_nul_terminated)
{
	/* The reader stops at len: "[12]" cut after "[1" is unterminated, not "[12]". */
	struct cs_json doc;
	cr_expect_eq(cs_json_parse(&doc, "[12]", 2, 100), -EINVAL);
	cr_expect_eq(cs_json_parse(&doc, "12345", 2, 100), 0);
	cr_expect_float_eq(cs_json_number(&doc, 0, 0), 12, 1e-12);
	cs_json_free(&doc);
}
