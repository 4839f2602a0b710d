/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A strict JSON syntax check (RFC 8259) for the fuzz targets: is the text
 * exactly one valid JSON value? No allocation, no Criterion (the unit
 * tests' json_check.h builds a tree and asserts with Criterion; a fuzz
 * target only needs yes or no). Rejects what printf can sneak into a
 * report: "nan", "inf", "-nan", a stray comma, raw control characters,
 * invalid UTF-8, bad escapes. Recursion depth is bounded by the caller's
 * input (reports nest a few levels).
 */
#ifndef CS_FUZZ_JSON_VALID_H
#define CS_FUZZ_JSON_VALID_H

#include <stdbool.h>
#include <stddef.h>

struct jv {
	const unsigned char *p, *end;
	int depth;
};

static bool jv_value(struct jv *j);

static void jv_ws(struct jv *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static bool jv_lit(struct jv *j, const char *lit)
{
	for (; *lit; lit++, j->p++)
		if (j->p == j->end || *j->p != (unsigned char)*lit)
			return false;
	return true;
}

static bool jv_is_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* One UTF-8 sequence at j->p (first byte >= 0x80): shortest form, no surrogates. */
static bool jv_utf8(struct jv *j)
{
	unsigned char c = *j->p;
	size_t len;
	unsigned int code, min;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, min = 0x80, code = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, min = 0x800, code = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, min = 0x10000, code = c & 0x07;
	else
		return false;
	if ((size_t)(j->end - j->p) < len)
		return false;
	for (size_t i = 1; i < len; i++) {
		if ((j->p[i] & 0xc0) != 0x80)
			return false;
		code = (code << 6) | (j->p[i] & 0x3f);
	}
	if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
		return false;
	j->p += len;
	return true;
}

static bool jv_string(struct jv *j)
{
	if (j->p == j->end || *j->p != '"')
		return false;
	j->p++;
	while (j->p < j->end) {
		unsigned char c = *j->p;
		if (c == '"') {
			j->p++;
			return true;
		}
		if (c < 0x20)
			return false;
		if (c == '\\') {
			j->p++;
			if (j->p == j->end)
				return false;
			c = *j->p++;
			if (c == 'u') {
				for (int i = 0; i < 4; i++, j->p++)
					if (j->p == j->end || !jv_is_hex(*j->p))
						return false;
			} else if (!(c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' ||
				     c == 'r' || c == 't')) {
				return false;
			}
		} else if (c >= 0x80) {
			if (!jv_utf8(j))
				return false;
		} else {
			j->p++;
		}
	}
	return false;
}

static bool jv_digits(struct jv *j)
{
	const unsigned char *start = j->p;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > start;
}

static bool jv_number(struct jv *j)
{
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0')
		j->p++;
	else if (!jv_digits(j))
		return false;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (!jv_digits(j))
			return false;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!jv_digits(j))
			return false;
	}
	return true;
}

/* [ ... ] or { ... }: members are "key": value when object. */
static bool jv_container(struct jv *j, unsigned char close, bool object)
{
	if (++j->depth > 64)
		return false;
	j->p++;
	jv_ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		j->depth--;
		return true;
	}
	for (;;) {
		jv_ws(j);
		if (object) {
			if (!jv_string(j))
				return false;
			jv_ws(j);
			if (j->p == j->end || *j->p != ':')
				return false;
			j->p++;
			jv_ws(j);
		}
		if (!jv_value(j))
			return false;
		jv_ws(j);
		if (j->p == j->end)
			return false;
		if (*j->p == close) {
			j->p++;
			j->depth--;
			return true;
		}
		if (*j->p != ',')
			return false;
		j->p++;
	}
}

static bool jv_value(struct jv *j)
{
	if (j->p == j->end)
		return false;
	switch (*j->p) {
	case '{':
		return jv_container(j, '}', true);
	case '[':
		return jv_container(j, ']', false);
	case '"':
		return jv_string(j);
	case 't':
		return jv_lit(j, "true");
	case 'f':
		return jv_lit(j, "false");
	case 'n':
		return jv_lit(j, "null");
	default:
		return jv_number(j);
	}
}

/* True when text[0..len) is one JSON value, whitespace around it allowed. */
static inline bool json_valid(const char *text, size_t len)
{
	struct jv j = { (const unsigned char *)text, (const unsigned char *)text + len, 0 };
	jv_ws(&j);
	if (!jv_value(&j))
		return false;
	jv_ws(&j);
	return j.p == j.end;
}

#endif /* CS_FUZZ_JSON_VALID_H */
