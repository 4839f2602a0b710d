// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: a recorded trace file, end to end, as `connscope report`
 * replays it. cs_trace_read parses the bytes and feeds every whole record
 * to the engine; then the text and the JSON reports are rendered into
 * memory, so the engine, the attribution and both renderers also see
 * hostile-but-well-formed records (any size, any time, any counter).
 *
 * Checked beyond "no crash, no sanitizer report, no leak":
 *   - cs_trace_read returns 0, -ENODATA or -EINVAL, with a message for
 *     the last two, and never counts more records than the input can hold;
 *   - the engine counts every record it was given, accepted or malformed;
 *   - the JSON report is one valid JSON value (no "nan", no stray comma).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "parses_as_json.h"
#include "report.h"
#include "trace_file.h"

static int feed_engine(void *ctx, const void *record, size_t len)
{
	cs_engine_feed(ctx, record, len);
	return 0;
}

/* Render one report into memory; returns the text (caller frees) and its length. */
static char *render(const struct cs_engine *engine, const struct cs_report_meta *meta, bool json,
		    size_t *len)
{
	char *text = NULL;
	FILE *out = open_memstream(&text, len);
	if (!out)
		abort();
	if (json)
		cs_report_json(out, engine, meta);
	else
		cs_report_text(out, engine, meta);
	if (fclose(out))
		abort();
	return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* fmemopen refuses an empty buffer; an empty file is "bad magic" anyway. */
	if (size == 0)
		return 0;
	FILE *file = fmemopen((void *)data, size, "rb");
	if (!file)
		abort();
	struct cs_engine *engine = cs_engine_new();
	if (!engine)
		abort();

	struct cs_trace_info info;
	char errmsg[256] = "";
	int err = cs_trace_read(file, feed_engine, engine, &info, errmsg, sizeof(errmsg));
	fclose(file);
	if (err != 0 && err != -ENODATA && err != -EINVAL)
		abort();
	if (err && !errmsg[0])
		abort();
	/* Each record is at least a header; the file header comes first. */
	if (info.records > size / sizeof(struct cs_event_header))
		abort();
	if (engine->totals.records + engine->totals.malformed != info.records)
		abort();

	if (err != -EINVAL) {
		/* As cmd_report does: without a summary, the records' own span. */
		if (err == -ENODATA || !info.has_summary)
			info.meta.duration_s =
				(double)(engine->totals.last_ts_ns - engine->totals.first_ts_ns) / 1e9;
		info.meta.records_read = info.records;
		/* The tail percentile as --tail may set it (50 to 99.999), from the last byte. */
		info.meta.tail_percentile = 50.0 + 49.999 * (double)data[size - 1] / 255.0;

		size_t len;
		char *text = render(engine, &info.meta, false, &len);
		if (len == 0)
			abort();
		free(text);
		char *json = render(engine, &info.meta, true, &len);
		if (!parses_as_json(json, len)) {
			fprintf(stderr, "invalid JSON report:\n%s\n", json);
			abort();
		}
		free(json);
	}
	cs_engine_free(engine);
	return 0;
}
