// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: cs_engine_feed on raw record bytes, as the live daemon
 * hands it what the ring buffer delivers. The input is a sequence of
 * records, each as long as its header's size field says (at least one
 * byte, at most what is left), so the fuzzer controls types, sizes,
 * lengths that disagree with the size field, and every field's value.
 * Each record is copied into a buffer of exactly its length: ASan sees
 * any read past it. The reports are rendered at the end, as after a run.
 *
 * Checked beyond "no crash, no sanitizer report, no leak": every record
 * is counted once, as accepted or as malformed; accepted records add up
 * by type; the JSON report is valid JSON.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "parses_as_json.h"
#include "report.h"

static void render_and_check(const struct cs_engine *engine, const struct cs_report_meta *meta)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	if (!out)
		abort();
	cs_report_text(out, engine, meta);
	if (fclose(out))
		abort();
	free(text);

	out = open_memstream(&text, &len);
	if (!out)
		abort();
	cs_report_json(out, engine, meta);
	if (fclose(out))
		abort();
	if (!parses_as_json(text, len)) {
		fprintf(stderr, "invalid JSON report:\n%s\n", text);
		abort();
	}
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cs_engine *engine = cs_engine_new();
	if (!engine)
		abort();

	uint64_t fed = 0;
	size_t at = 0;
	while (at < size) {
		size_t left = size - at, len = left;
		if (left >= sizeof(struct cs_event_header)) {
			struct cs_event_header hdr;
			memcpy(&hdr, data + at, sizeof(hdr));
			if (hdr.size > 0 && hdr.size < left)
				len = hdr.size;
		}
		unsigned char *record = malloc(len);
		if (!record)
			abort();
		memcpy(record, data + at, len);
		cs_engine_feed(engine, record, len);
		free(record);
		fed++;
		at += len;
	}

	if (engine->totals.records + engine->totals.malformed != fed)
		abort();
	uint64_t by_type = 0;
	for (size_t t = 0; t < CS_EV_TYPE_MAX; t++)
		by_type += engine->totals.by_type[t];
	if (by_type != engine->totals.records)
		abort();

	struct cs_report_meta meta = {
		.target = "fuzz",
		.duration_s = (double)(engine->totals.last_ts_ns - engine->totals.first_ts_ns) / 1e9,
		.records_read = fed,
		.tail_percentile = size ? 50.0 + 49.999 * (double)data[0] / 255.0 : 99.0,
	};
	render_and_check(engine, &meta);
	cs_engine_free(engine);
	return 0;
}
