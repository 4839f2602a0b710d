// SPDX-License-Identifier: BSD-2-Clause
#include "json_read.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct parser {
	struct cs_json *doc;
	size_t pos;
	int cap;
	int max_tokens;
	int err;
};

static int fail(struct parser *p, const char *why)
{
	if (!p->err) {
		p->err = -EINVAL;
		p->doc->error = why;
		p->doc->error_at = p->pos;
	}
	return -1;
}

static void skip_ws(struct parser *p)
{
	const char *t = p->doc->text;
	while (p->pos < p->doc->len && (t[p->pos] == ' ' || t[p->pos] == '\t' || t[p->pos] == '\n' ||
					t[p->pos] == '\r'))
		p->pos++;
}

static int new_token(struct parser *p, enum cs_json_type type, size_t start)
{
	struct cs_json *doc = p->doc;
	if (doc->count >= p->max_tokens) {
		if (!p->err) {
			p->err = -E2BIG;
			doc->error = "too many values";
			doc->error_at = p->pos;
		}
		return -1;
	}
	if (doc->count == p->cap) {
		int cap = p->cap ? p->cap * 2 : 64;
		if (cap > p->max_tokens)
			cap = p->max_tokens;
		struct cs_json_token *bigger = realloc(doc->tokens, (size_t)cap * sizeof(*bigger));
		if (!bigger) {
			p->err = -ENOMEM;
			doc->error = "out of memory";
			return -1;
		}
		doc->tokens = bigger;
		p->cap = cap;
	}
	int index = doc->count++;
	doc->tokens[index] = (struct cs_json_token){ .type = type, .start = start, .end = start,
						     .next = index + 1 };
	return index;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A string at p->pos (on its quote): validated, not decoded. */
static int parse_string(struct parser *p)
{
	const struct cs_json *doc = p->doc;
	const unsigned char *t = (const unsigned char *)doc->text;
	int index = new_token(p, CS_JSON_STRING, p->pos + 1);
	if (index < 0)
		return -1;
	p->pos++;
	for (;;) {
		if (p->pos >= doc->len)
			return fail(p, "unterminated string");
		unsigned char c = t[p->pos];
		if (c == '"')
			break;
		if (c < 0x20)
			return fail(p, "control character in a string");
		if (c == '\\') {
			if (p->pos + 1 >= doc->len)
				return fail(p, "unterminated string");
			char e = (char)t[p->pos + 1];
			if (e == 'u') {
				if (p->pos + 6 > doc->len)
					return fail(p, "short \\u escape");
				for (int i = 2; i < 6; i++)
					if (hex_digit((char)t[p->pos + i]) < 0)
						return fail(p, "bad \\u escape");
				p->pos += 6;
				continue;
			}
			if (!strchr("\"\\/bfnrt", e) || e == '\0')
				return fail(p, "bad escape");
			p->pos += 2;
			continue;
		}
		p->pos++;
	}
	p->doc->tokens[index].end = p->pos;
	p->pos++;
	return index;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int parse_number(struct parser *p)
{
	const struct cs_json *doc = p->doc;
	const char *t = doc->text;
	size_t start = p->pos;
	if (p->pos < doc->len && t[p->pos] == '-')
		p->pos++;
	if (p->pos >= doc->len || !is_digit(t[p->pos]))
		return fail(p, "bad number");
	if (t[p->pos] == '0')
		p->pos++;
	else
		while (p->pos < doc->len && is_digit(t[p->pos]))
			p->pos++;
	if (p->pos < doc->len && t[p->pos] == '.') {
		p->pos++;
		if (p->pos >= doc->len || !is_digit(t[p->pos]))
			return fail(p, "bad number");
		while (p->pos < doc->len && is_digit(t[p->pos]))
			p->pos++;
	}
	if (p->pos < doc->len && (t[p->pos] == 'e' || t[p->pos] == 'E')) {
		p->pos++;
		if (p->pos < doc->len && (t[p->pos] == '+' || t[p->pos] == '-'))
			p->pos++;
		if (p->pos >= doc->len || !is_digit(t[p->pos]))
			return fail(p, "bad number");
		while (p->pos < doc->len && is_digit(t[p->pos]))
			p->pos++;
	}
	int index = new_token(p, CS_JSON_NUMBER, start);
	if (index >= 0)
		p->doc->tokens[index].end = p->pos;
	return index;
}

static int parse_literal(struct parser *p, const char *word, enum cs_json_type type)
{
	size_t n = strlen(word);
	if (p->doc->len - p->pos < n || memcmp(p->doc->text + p->pos, word, n) != 0)
		return fail(p, "unexpected character");
	int index = new_token(p, type, p->pos);
	p->pos += n;
	if (index >= 0)
		p->doc->tokens[index].end = p->pos;
	return index;
}

static int parse_value(struct parser *p, int depth);

/* An array or object at p->pos (on its bracket). */
static int parse_container(struct parser *p, int depth, bool object)
{
	if (depth >= CS_JSON_MAX_DEPTH)
		return fail(p, "nested too deeply");
	int index = new_token(p, object ? CS_JSON_OBJECT : CS_JSON_ARRAY, p->pos);
	if (index < 0)
		return -1;
	char close = object ? '}' : ']';
	int children = 0;
	p->pos++;
	skip_ws(p);
	if (p->pos < p->doc->len && p->doc->text[p->pos] == close) {
		p->pos++;
	} else {
		for (;;) {
			skip_ws(p);
			if (object) {
				if (p->pos >= p->doc->len || p->doc->text[p->pos] != '"')
					return fail(p, "expected a member name");
				if (parse_string(p) < 0)
					return -1;
				skip_ws(p);
				if (p->pos >= p->doc->len || p->doc->text[p->pos] != ':')
					return fail(p, "expected ':'");
				p->pos++;
			}
			if (parse_value(p, depth + 1) < 0)
				return -1;
			children++;
			skip_ws(p);
			if (p->pos >= p->doc->len)
				return fail(p, "unterminated array or object");
			char c = p->doc->text[p->pos++];
			if (c == close)
				break;
			if (c != ',')
				return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
		}
	}
	struct cs_json_token *tok = &p->doc->tokens[index];
	tok->children = children;
	tok->end = p->pos;
	tok->next = p->doc->count;
	return index;
}

static int parse_value(struct parser *p, int depth)
{
	skip_ws(p);
	if (p->pos >= p->doc->len)
		return fail(p, "expected a value");
	char c = p->doc->text[p->pos];
	switch (c) {
	case '{':
		return parse_container(p, depth, true);
	case '[':
		return parse_container(p, depth, false);
	case '"':
		return parse_string(p);
	case 't':
		return parse_literal(p, "true", CS_JSON_TRUE);
	case 'f':
		return parse_literal(p, "false", CS_JSON_FALSE);
	case 'n':
		return parse_literal(p, "null", CS_JSON_NULL);
	default:
		if (c == '-' || is_digit(c))
			return parse_number(p);
		return fail(p, "unexpected character");
	}
}

int cs_json_parse(struct cs_json *doc, const char *text, size_t len, int max_tokens)
{
	memset(doc, 0, sizeof(*doc));
	doc->text = text;
	doc->len = len;
	struct parser p = { .doc = doc, .max_tokens = max_tokens > 0 ? max_tokens : 1 };
	if (parse_value(&p, 0) >= 0) {
		skip_ws(&p);
		if (p.pos != len)
			fail(&p, "text after the value");
	}
	if (p.err) {
		free(doc->tokens);
		doc->tokens = NULL;
		doc->count = 0;
		return p.err;
	}
	return 0;
}

void cs_json_free(struct cs_json *doc)
{
	free(doc->tokens);
	doc->tokens = NULL;
	doc->count = 0;
}

static bool valid(const struct cs_json *doc, int tok)
{
	return tok >= 0 && tok < doc->count;
}

int cs_json_get(const struct cs_json *doc, int obj, const char *key)
{
	if (!valid(doc, obj) || doc->tokens[obj].type != CS_JSON_OBJECT)
		return -1;
	size_t key_len = strlen(key);
	int member = obj + 1;
	for (int i = 0; i < doc->tokens[obj].children; i++) {
		const struct cs_json_token *name = &doc->tokens[member];
		int value = member + 1;
		/* Keys are compared raw: ours never need escapes. */
		if (name->end - name->start == key_len && memcmp(doc->text + name->start, key, key_len) == 0)
			return value;
		member = doc->tokens[value].next;
	}
	return -1;
}

int cs_json_at(const struct cs_json *doc, int arr, int i)
{
	if (!valid(doc, arr) || doc->tokens[arr].type != CS_JSON_ARRAY || i < 0 ||
	    i >= doc->tokens[arr].children)
		return -1;
	int element = arr + 1;
	for (int k = 0; k < i; k++)
		element = doc->tokens[element].next;
	return element;
}

int cs_json_first(const struct cs_json *doc, int arr)
{
	if (!valid(doc, arr) || doc->tokens[arr].type != CS_JSON_ARRAY || doc->tokens[arr].children == 0)
		return -1;
	return arr + 1;
}

int cs_json_next(const struct cs_json *doc, int tok)
{
	return valid(doc, tok) ? doc->tokens[tok].next : -1;
}

int cs_json_size(const struct cs_json *doc, int tok)
{
	return valid(doc, tok) ? doc->tokens[tok].children : 0;
}

double cs_json_number(const struct cs_json *doc, int tok, double fallback)
{
	if (!valid(doc, tok) || doc->tokens[tok].type != CS_JSON_NUMBER)
		return fallback;
	char buf[64];
	size_t n = doc->tokens[tok].end - doc->tokens[tok].start;
	if (n >= sizeof(buf))
		n = sizeof(buf) - 1; /* digits past 63 change nothing a view shows */
	memcpy(buf, doc->text + doc->tokens[tok].start, n);
	buf[n] = '\0';
	return strtod(buf, NULL);
}

bool cs_json_bool(const struct cs_json *doc, int tok, bool fallback)
{
	if (!valid(doc, tok))
		return fallback;
	if (doc->tokens[tok].type == CS_JSON_TRUE)
		return true;
	if (doc->tokens[tok].type == CS_JSON_FALSE)
		return false;
	return fallback;
}

/* Append code point cp as UTF-8 if it fits whole; false when it does not. */
static bool put_utf8(char *buf, size_t len, size_t *n, uint32_t cp)
{
	char tmp[4];
	size_t k;
	if (cp < 0x20)
		tmp[0] = '?', k = 1;
	else if (cp < 0x80)
		tmp[0] = (char)cp, k = 1;
	else if (cp < 0x800)
		tmp[0] = (char)(0xc0 | (cp >> 6)), tmp[1] = (char)(0x80 | (cp & 0x3f)), k = 2;
	else if (cp < 0x10000)
		tmp[0] = (char)(0xe0 | (cp >> 12)), tmp[1] = (char)(0x80 | ((cp >> 6) & 0x3f)),
		tmp[2] = (char)(0x80 | (cp & 0x3f)), k = 3;
	else
		tmp[0] = (char)(0xf0 | (cp >> 18)), tmp[1] = (char)(0x80 | ((cp >> 12) & 0x3f)),
		tmp[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), tmp[3] = (char)(0x80 | (cp & 0x3f)), k = 4;
	if (*n + k >= len)
		return false;
	memcpy(buf + *n, tmp, k);
	*n += k;
	return true;
}

static uint32_t hex4(const char *s)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++)
		v = v * 16 + (uint32_t)hex_digit(s[i]);
	return v;
}

bool cs_json_string(const struct cs_json *doc, int tok, char *buf, size_t len)
{
	if (len == 0)
		return false;
	buf[0] = '\0';
	if (!valid(doc, tok) || doc->tokens[tok].type != CS_JSON_STRING)
		return false;
	const char *s = doc->text + doc->tokens[tok].start;
	const char *end = doc->text + doc->tokens[tok].end;
	size_t n = 0;
	while (s < end) {
		unsigned char c = (unsigned char)*s;
		uint32_t cp;
		if (c == '\\') {
			char e = s[1];
			s += 2;
			switch (e) {
			case 'b': case 'f': case 'n': case 'r': case 't':
				cp = '?';
				break;
			case 'u':
				cp = hex4(s);
				s += 4;
				/* A surrogate pair makes one code point; a lone half is U+FFFD. */
				if (cp >= 0xd800 && cp <= 0xdbff && end - s >= 6 && s[0] == '\\' && s[1] == 'u') {
					uint32_t low = hex4(s + 2);
					if (low >= 0xdc00 && low <= 0xdfff) {
						cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
						s += 6;
					}
				}
				if (cp >= 0xd800 && cp <= 0xdfff)
					cp = 0xfffd;
				break;
			default:
				cp = (unsigned char)e; /* \" \\ \/ */
				break;
			}
			if (!put_utf8(buf, len, &n, cp))
				break;
			continue;
		}
		/* Raw bytes are copied by whole UTF-8 sequences, so a cut never splits one. */
		size_t k = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
		if (k > (size_t)(end - s))
			k = (size_t)(end - s);
		if (n + k >= len)
			break;
		memcpy(buf + n, s, k);
		n += k;
		s += k;
	}
	buf[n] = '\0';
	return true;
}

int cs_json_path(const struct cs_json *doc, int tok, ...)
{
	va_list ap;
	va_start(ap, tok);
	const char *key;
	while (tok >= 0 && (key = va_arg(ap, const char *)) != NULL)
		tok = cs_json_get(doc, tok, key);
	va_end(ap);
	return tok;
}
