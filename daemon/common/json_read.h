/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A small strict JSON reader (RFC 8259) for what the daemon sends: the
 * text is parsed once into a flat array of tokens (no copies, no tree of
 * allocations); lookups walk the array. Bounded: at most max_tokens
 * tokens and CS_JSON_MAX_DEPTH levels, so hostile input costs at most
 * what the caller allows. Pure code, fuzzed by fuzz_ctl_proto.
 *
 *   struct cs_json doc;
 *   if (cs_json_parse(&doc, text, len, 100000) == 0) {
 *       int tail = cs_json_get(&doc, 0, "tail");
 *       double p = cs_json_number(&doc, cs_json_get(&doc, tail, "percentile"), 99);
 *   }
 *   cs_json_free(&doc);
 */
#ifndef CS_JSON_READ_H
#define CS_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>

#define CS_JSON_MAX_DEPTH 64

enum cs_json_type { CS_JSON_NULL, CS_JSON_FALSE, CS_JSON_TRUE, CS_JSON_NUMBER, CS_JSON_STRING,
		    CS_JSON_ARRAY, CS_JSON_OBJECT };

struct cs_json_token {
	enum cs_json_type type;
	size_t start, end;  /* the value's bytes (a string's without its quotes) */
	int children;       /* arrays: elements; objects: members */
	int next;           /* index of the token after this value's subtree */
};

struct cs_json {
	const char *text;
	size_t len;
	struct cs_json_token *tokens; /* tokens[0] is the root; a member is its key, then its value */
	int count;
	const char *error;            /* why parsing failed */
	size_t error_at;              /* at which byte */
};

/* Returns 0, -EINVAL (not valid JSON: doc->error says why), -E2BIG, -ENOMEM. */
int cs_json_parse(struct cs_json *doc, const char *text, size_t len, int max_tokens);
void cs_json_free(struct cs_json *doc);

/* Index of member key of object obj, -1 when obj is not an object or has no such key. */
int cs_json_get(const struct cs_json *doc, int obj, const char *key);
/* Index of element i of array arr, or -1. */
int cs_json_at(const struct cs_json *doc, int arr, int i);
/* For walking an array in O(1) a step: its first element, and the value after tok. */
int cs_json_first(const struct cs_json *doc, int arr);
int cs_json_next(const struct cs_json *doc, int tok);
/* Elements or members of tok (0 for scalars and -1). */
int cs_json_size(const struct cs_json *doc, int tok);
/* Value of a number token, fallback for anything else (and -1). */
double cs_json_number(const struct cs_json *doc, int tok, double fallback);
bool cs_json_bool(const struct cs_json *doc, int tok, bool fallback);
/*
 * A string token decoded into buf (NUL-terminated, cut at a character
 * boundary to fit; control characters become '?'). Returns false (buf = "")
 * for anything but a string.
 */
bool cs_json_string(const struct cs_json *doc, int tok, char *buf, size_t len);

/* Path shorthand: cs_json_path(doc, root, "tail", "causes", NULL). */
int cs_json_path(const struct cs_json *doc, int tok, ...);

#endif /* CS_JSON_READ_H */
