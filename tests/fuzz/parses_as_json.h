/* SPDX-License-Identifier: BSD-2-Clause */
/* For the fuzz targets that render a JSON report: does it read back? */
#ifndef CS_FUZZ_PARSES_AS_JSON_H
#define CS_FUZZ_PARSES_AS_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The report reads back as one JSON value (jansson wrote it; a key it dropped would not show here). */
static inline bool parses_as_json(const char *text, size_t len)
{
	json_error_t error;
	json_t *value = json_loadb(text, len, JSON_REJECT_DUPLICATES, &error);
	bool parsed = value != NULL;
	json_decref(value);
	return parsed;
}

#endif /* CS_FUZZ_PARSES_AS_JSON_H */
