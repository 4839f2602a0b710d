/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * connscope's JSON, read and written through jansson: what every writer
 * and reader needs beyond the library itself.
 *
 * Writing: values are built as json_t and dumped compact, in insertion
 * order. Numbers are rounded to the reports' precision (three decimals
 * for times and rates, four for shares, as "%.3f" and "%.4f" print
 * them): a reader sees the figures the text report shows. Strings may
 * hold any bytes (the kernel cuts thread names mid-character): what is
 * not UTF-8 becomes U+FFFD instead of making the library refuse the
 * string.
 *
 * Reading: a failed parse says who sent the text (a file, the daemon) and
 * where it broke (line, column); lookups on a missing or mistyped member
 * give the caller's fallback, so any JSON, valid or hostile, is safe to
 * walk.
 */
#ifndef CS_JSON_H
#define CS_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * value rounded as "%.*f" prints it with that many decimals (a real); JSON
 * null for NaN and infinities, which JSON cannot spell.
 */
json_t *cs_json_fixed(double value, int decimals);

/* Times and rates to three decimals, shares to four: the reports' precision. */
static inline json_t *cs_json_3(double value)
{
	return cs_json_fixed(value, 3);
}
static inline json_t *cs_json_4(double value)
{
	return cs_json_fixed(value, 4);
}
/* Nanoseconds as microseconds, to the nanosecond. */
static inline json_t *cs_json_us(uint64_t ns)
{
	return cs_json_fixed((double)ns / 1e3, 3);
}

/* text as a JSON string; bytes that are not UTF-8 become U+FFFD. NULL: "". */
json_t *cs_json_text(const char *text);

/*
 * Writes value compact, keys in the order they were set, and a newline;
 * takes the reference. Returns 0, or -ENOMEM when value is NULL (building
 * it ran out of memory) or it could not be written.
 */
int cs_json_dump(FILE *out, json_t *value);
/* The same into a string (malloc'd, its length in *len); takes the reference. NULL: out of memory. */
char *cs_json_dumps(json_t *value, size_t *len);

/*
 * Parses len bytes of text. On failure returns NULL with err reading
 * "WHAT: not valid JSON at line L, column C: why" (what names the file or
 * the peer the text came from).
 */
json_t *cs_json_load(const char *text, size_t len, const char *what, char *err, size_t err_len);
/* The same message for a parse done elsewhere (json_loadf). */
void cs_json_error(char *err, size_t err_len, const char *what, const json_error_t *error);

/* Member key of obj as a number; fallback when obj or the member is missing or not a number. */
double cs_json_num(const json_t *obj, const char *key, double fallback);
/*
 * Member key of obj copied into buf (NUL-terminated, cut at a character
 * boundary to fit, control characters as '?'). Returns false (buf = "")
 * when it is not a string.
 */
bool cs_json_str(const json_t *obj, const char *key, char *buf, size_t len);

#endif /* CS_JSON_H */
