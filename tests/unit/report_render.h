/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A report of an engine, as connscope prints it, in a test: the text
 * report or the JSON one, or the daemon's live snapshot (what `connscope
 * top` reads), in a buffer the caller frees.
 */
#ifndef CS_TEST_REPORT_RENDER_H
#define CS_TEST_REPORT_RENDER_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>

#include "live.h"
#include "report.h"
#include "window.h"

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

/* The live snapshot of a daemon 10 s up, as `connscope top` reads it. */
static inline char *render_snapshot(const struct cs_engine *engine, const struct cs_report_meta *meta)
{
	struct cs_window window;
	cr_assert_eq(cs_window_init(&window), 0);
	struct cs_live_info info = { .source = "daemon", .uptime_s = 10, .since_reset_s = 10 };
	char *snapshot = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&snapshot, &len);
	cr_assert_not_null(out);
	cr_assert_eq(cs_snapshot_json(out, engine, meta, &window, &info), 0);
	cr_assert_eq(fclose(out), 0);
	cs_window_free(&window);
	return snapshot;
}

#endif /* CS_TEST_REPORT_RENDER_H */
