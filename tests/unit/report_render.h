/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A report of an engine, as connscope prints it, in a test: the text
 * report or the JSON one, in a buffer the caller frees.
 */
#ifndef CS_TEST_REPORT_RENDER_H
#define CS_TEST_REPORT_RENDER_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>

#include "report.h"

static inline char *render_report(const struct cs_engine *engine, const struct cs_report_meta *meta, bool json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	cr_assert_not_null(out);
	if (json)
		cs_report_json(out, engine, meta);
	else
		cs_report_text(out, engine, meta);
	cr_assert_eq(fclose(out), 0);
	return buf;
}

#endif /* CS_TEST_REPORT_RENDER_H */
