// SPDX-License-Identifier: BSD-2-Clause
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * 15 significant digits: a number rounded to three or four decimals and
 * below 10^11 prints back exactly as "%.3f" wrote it, without the
 * trailing noise of the 17 digits a double may need.
 */
#define CS_JSON_DUMP_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))

json_t *cs_json_fixed(double value, int decimals)
{
	if (!isfinite(value))
		return json_null();
	/* From 2^53 on a double is whole: no decimals to round, and no 300-digit text. */
	if (fabs(value) >= 9007199254740992.0)
		return json_real(value);
	char text[64];
	snprintf(text, sizeof(text), "%.*f", decimals, value);
	return json_real(strtod(text, NULL));
}

/* Length of the UTF-8 character at s as the library judges it (1 to 4 bytes), 0 when none is. */
static size_t utf8_length(const char *s)
{
	for (size_t len = 1; len <= 4 && s[len - 1]; len++) {
		json_t *probe = json_stringn(s, len);
		if (probe) {
			json_decref(probe);
			return len;
		}
	}
	return 0;
}

json_t *cs_json_text(const char *text)
{
	json_t *value = json_string(text ? text : "");
	if (value || !text)
		return value;
	/* Not UTF-8 (a name cut mid-character): the slow way, a character at a time. */
	size_t len = strlen(text), used = 0;
	char *fixed = malloc(len * 3 + 1);
	if (!fixed)
		return NULL;
	static const char replacement[3] = { '\xef', '\xbf', '\xbd' }; /* U+FFFD */
	for (size_t at = 0; at < len;) {
		size_t n = utf8_length(text + at);
		const char *from = n ? text + at : replacement;
		size_t put = n ? n : sizeof(replacement);
		memcpy(fixed + used, from, put);
		used += put;
		at += n ? n : 1;
	}
	value = json_stringn(fixed, used);
	free(fixed);
	return value;
}

int cs_json_dump(FILE *out, json_t *value)
{
	int rc = value ? json_dumpf(value, out, CS_JSON_DUMP_FLAGS) : -1;
	if (rc == 0 && fputc('\n', out) == EOF)
		rc = -1;
	json_decref(value);
	return rc ? -ENOMEM : 0;
}

char *cs_json_dumps(json_t *value, size_t *len)
{
	char *text = value ? json_dumps(value, CS_JSON_DUMP_FLAGS) : NULL;
	json_decref(value);
	if (!text)
		return NULL;
	*len = strlen(text);
	char *line = realloc(text, *len + 2);
	if (!line) {
		free(text);
		return NULL;
	}
	line[(*len)++] = '\n';
	line[*len] = '\0';
	return line;
}

void cs_json_error(char *err, size_t err_len, const char *what, const json_error_t *error)
{
	snprintf(err, err_len, "%s: not valid JSON at line %d, column %d: %s", what, error->line, error->column,
		 error->text);
}

json_t *cs_json_load(const char *text, size_t len, const char *what, char *err, size_t err_len)
{
	json_error_t error;
	json_t *root = json_loadb(text, len, 0, &error);
	if (!root)
		cs_json_error(err, err_len, what, &error);
	return root;
}

double cs_json_num(const json_t *obj, const char *key, double fallback)
{
	const json_t *value = json_object_get(obj, key);
	return json_is_number(value) ? json_number_value(value) : fallback;
}

bool cs_json_str(const json_t *obj, const char *key, char *buf, size_t len)
{
	const char *text = json_string_value(json_object_get(obj, key));
	if (!len)
		return false;
	buf[0] = '\0';
	if (!text)
		return false;
	size_t n = strlen(text);
	if (n >= len) {
		n = len - 1;
		/* Back to the start of the character that did not fit (continuation bytes are 10xxxxxx). */
		while (n && ((unsigned char)text[n] & 0xc0) == 0x80)
			n--;
	}
	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)text[i] < 0x20 || text[i] == 0x7f ? '?' : text[i];
	buf[n] = '\0';
	return true;
}
