/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A strict JSON parser (RFC 8259), just enough to check a report in a test:
 * a stray comma, a NaN, a duplicate key or a bad escape fails the test.
 * Shared by the test files that check JSON.
 *
 *   struct json *root = json_parse(text);        // asserts the text is valid
 *   double n = number(member(root, "tail", J_OBJECT), "threshold_us");
 *   json_free(root);
 */
#ifndef CS_TEST_JSON_CHECK_H
#define CS_TEST_JSON_CHECK_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum json_type { J_NULL, J_BOOL, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT };

struct json {
	enum json_type type;
	char *key;          /* member name inside an object */
	double number;      /* J_NUMBER, J_BOOL */
	char *string;       /* J_STRING, decoded */
	struct json *child; /* J_ARRAY, J_OBJECT: first element */
	struct json *next;  /* next sibling */
};

struct json_parser {
	const char *p;
	const char *error;
};

static inline void json_free(struct json *node)
{
	while (node) {
		struct json *next = node->next;
		json_free(node->child);
		free(node->key);
		free(node->string);
		free(node);
		node = next;
	}
}

static inline void skip_ws(struct json_parser *jp)
{
	while (*jp->p == ' ' || *jp->p == '\t' || *jp->p == '\n' || *jp->p == '\r')
		jp->p++;
}

static inline int hex4(const char *s)
{
	int v = 0;
	for (int i = 0; i < 4; i++) {
		char c = s[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/* A string at jp->p (on its opening quote), decoded into UTF-8. */
static inline char *json_parse_string(struct json_parser *jp)
{
	size_t cap = strlen(jp->p) * 3 + 1, n = 0;
	char *out = malloc(cap);
	jp->p++;
	for (;;) {
		unsigned char c = (unsigned char)*jp->p;
		if (c)
			jp->p++;
		if (c == '"')
			break;
		if (c < 0x20) {
			jp->error = c ? "raw control character in a string" : "unterminated string";
			free(out);
			return NULL;
		}
		if (c != '\\') {
			out[n++] = (char)c;
			continue;
		}
		char e = *jp->p;
		if (e)
			jp->p++;
		const char *simple = strchr("\"\\/bfnrt", e);
		if (e && simple) {
			out[n++] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
			continue;
		}
		int cp = e == 'u' ? hex4(jp->p) : -1;
		if (cp < 0 || (cp >= 0xd800 && cp <= 0xdfff)) { /* no surrogates in our output */
			jp->error = "bad escape";
			free(out);
			return NULL;
		}
		jp->p += 4;
		if (cp < 0x80) {
			out[n++] = (char)cp;
		} else if (cp < 0x800) {
			out[n++] = (char)(0xc0 | cp >> 6);
			out[n++] = (char)(0x80 | (cp & 0x3f));
		} else {
			out[n++] = (char)(0xe0 | cp >> 12);
			out[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
			out[n++] = (char)(0x80 | (cp & 0x3f));
		}
	}
	out[n] = '\0';
	return out;
}

static inline bool json_parse_number(struct json_parser *jp, double *value)
{
	const char *start = jp->p, *s = jp->p;
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (*s >= '0' && *s <= '9')
			s++;
	else
		return false;
	if (*s == '.') {
		if (!(*++s >= '0' && *s <= '9'))
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	*value = strtod(start, NULL);
	jp->p = s;
	return true;
}

/* An object member's name and its ':', the name new among OBJECT's. */
static inline char *json_parse_member_name(struct json_parser *jp, const struct json *object)
{
	skip_ws(jp);
	if (*jp->p != '"') {
		jp->error = "expected a member name";
		return NULL;
	}
	char *key = json_parse_string(jp);
	if (!key)
		return NULL;
	for (const struct json *m = object->child; m; m = m->next)
		if (!strcmp(m->key, key)) {
			jp->error = "duplicate member name";
			free(key);
			return NULL;
		}
	skip_ws(jp);
	if (*jp->p != ':') {
		jp->error = "expected ':'";
		free(key);
		return NULL;
	}
	jp->p++;
	return key;
}

static inline struct json *json_parse_value(struct json_parser *jp, int depth)
{
	skip_ws(jp);
	if (depth > 32) {
		jp->error = "nested too deep";
		return NULL;
	}
	struct json *node = calloc(1, sizeof(*node));
	char c = *jp->p;
	if (c == '{' || c == '[') {
		node->type = c == '{' ? J_OBJECT : J_ARRAY;
		char close = c == '{' ? '}' : ']';
		jp->p++;
		skip_ws(jp);
		struct json **tail = &node->child;
		if (*jp->p == close) {
			jp->p++;
			return node;
		}
		for (;;) {
			char *key = NULL;
			if (node->type == J_OBJECT && !(key = json_parse_member_name(jp, node)))
				goto fail;
			struct json *item = json_parse_value(jp, depth + 1);
			if (!item) {
				free(key);
				goto fail;
			}
			item->key = key;
			*tail = item;
			tail = &item->next;
			skip_ws(jp);
			if (*jp->p == ',') {
				jp->p++;
				continue;
			}
			if (*jp->p == close) {
				jp->p++;
				return node;
			}
			jp->error = "expected ',' or a closing bracket";
			goto fail;
		}
	}
	if (c == '"') {
		node->type = J_STRING;
		if (!(node->string = json_parse_string(jp)))
			goto fail;
		return node;
	}
	if (!strncmp(jp->p, "true", 4) || !strncmp(jp->p, "false", 5) || !strncmp(jp->p, "null", 4)) {
		node->type = c == 'n' ? J_NULL : J_BOOL;
		node->number = c == 't';
		jp->p += c == 'f' ? 5 : 4;
		return node;
	}
	node->type = J_NUMBER;
	if (json_parse_number(jp, &node->number))
		return node;
	jp->error = "expected a value";
fail:
	json_free(node);
	return NULL;
}

/* The document, or a failed assertion that shows where parsing stopped. */
static inline struct json *json_parse(const char *text)
{
	struct json_parser jp = { .p = text };
	struct json *root = json_parse_value(&jp, 0);
	if (root) {
		skip_ws(&jp);
		if (*jp.p) {
			jp.error = "trailing characters";
			json_free(root);
			root = NULL;
		}
	}
	cr_assert_not_null(root, "invalid JSON (%s) at offset %td: ...%.40s\nin:\n%s", jp.error,
			   jp.p - text, jp.p, text);
	return root;
}

/* Member of an object that must be there, of the given type. */
static inline const struct json *member(const struct json *obj, const char *key, enum json_type type)
{
	cr_assert_eq(obj->type, J_OBJECT, "looking up \"%s\" in a non-object", key);
	for (const struct json *m = obj->child; m; m = m->next)
		if (!strcmp(m->key, key)) {
			cr_assert_eq(m->type, type, "\"%s\" has type %d, want %d", key, m->type, type);
			return m;
		}
	cr_assert_fail("missing \"%s\"", key);
	return NULL;
}

static inline double number(const struct json *obj, const char *key)
{
	return member(obj, key, J_NUMBER)->number;
}

static inline const struct json *element(const struct json *array, size_t index)
{
	cr_assert_eq(array->type, J_ARRAY);
	const struct json *e = array->child;
	for (size_t i = 0; e && i < index; i++)
		e = e->next;
	cr_assert_not_null(e, "no element %zu", index);
	return e;
}

static inline size_t length(const struct json *array)
{
	size_t n = 0;
	for (const struct json *e = array->child; e; e = e->next)
		n++;
	return n;
}

#endif /* CS_TEST_JSON_CHECK_H */
