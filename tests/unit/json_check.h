/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A report's JSON as a tree to check in a test, read by jansson (the
 * library that writes it) with duplicate keys refused: a member that must
 * be there, of a type, fails the test when it is not.
 *
 *   struct json *root = json_parse(text);        // asserts the text is JSON
 *   double n = number(member(root, "tail", J_OBJECT), "threshold_us");
 *   json_free(root);
 */
#ifndef CS_TEST_JSON_CHECK_H
#define CS_TEST_JSON_CHECK_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum json_type { J_NULL, J_BOOL, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT };

struct json {
	enum json_type type;
	char *key;          /* member name inside an object */
	double number;      /* J_NUMBER, J_BOOL */
	char *string;       /* J_STRING */
	struct json *child; /* J_ARRAY, J_OBJECT: first element */
	struct json *next;  /* next sibling */
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

static inline struct json *json_tree(const json_t *value, const char *key);

/* The children of an array or object, in their order, linked. */
static inline void json_tree_children(struct json *node, const json_t *value)
{
	struct json **tail = &node->child;
	if (json_is_array(value)) {
		size_t index;
		const json_t *item;
		json_array_foreach (value, index, item) {
			*tail = json_tree(item, NULL);
			tail = &(*tail)->next;
		}
		return;
	}
	const char *name;
	const json_t *item;
	json_object_foreach ((json_t *)value, name, item) {
		*tail = json_tree(item, name);
		tail = &(*tail)->next;
	}
}

static inline struct json *json_tree(const json_t *value, const char *key)
{
	struct json *node = calloc(1, sizeof(*node));
	cr_assert_not_null(node);
	node->key = key ? strdup(key) : NULL;
	switch (json_typeof(value)) {
	case JSON_OBJECT:
	case JSON_ARRAY:
		node->type = json_is_object(value) ? J_OBJECT : J_ARRAY;
		json_tree_children(node, value);
		break;
	case JSON_STRING:
		node->type = J_STRING;
		node->string = strdup(json_string_value(value));
		break;
	case JSON_INTEGER:
	case JSON_REAL:
		node->type = J_NUMBER;
		node->number = json_number_value(value);
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		node->type = J_BOOL;
		node->number = json_is_true(value);
		break;
	default:
		node->type = J_NULL;
	}
	return node;
}

/* The document, or a failed assertion that says where reading stopped. */
static inline struct json *json_parse(const char *text)
{
	json_error_t error;
	json_t *value = json_loads(text, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &error);
	cr_assert_not_null(value, "invalid JSON (%s) at line %d, column %d\nin:\n%s", error.text, error.line,
			   error.column, text);
	struct json *root = json_tree(value, NULL);
	json_decref(value);
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
