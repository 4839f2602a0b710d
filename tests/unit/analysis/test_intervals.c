// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope report --interval on a recorded run whose backlog overflows
 * part-way (scenario 3): the lines add up to the run, and the late lines
 * name the cause that took over.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "report_intervals.h"
#include "trace_file.h"

struct feed {
	struct cs_engine *engine;
	struct cs_intervals *intervals;
};

static int feed(void *ctx, const void *record, size_t len)
{
	struct feed *f = ctx;
	cs_intervals_advance(f->intervals, f->engine, ((const struct cs_event_header *)record)->ts_ns);
	cs_engine_feed(f->engine, record, len);
	return 0;
}

static char *replay_intervals(const char *name, double width_s, struct cs_engine **engine_out,
			      struct cs_intervals *iv)
{
	const char *dir = getenv("CS_FIXTURES") ? getenv("CS_FIXTURES") : "tests/fixtures";
	char path[512], errmsg[256];
	snprintf(path, sizeof(path), "%s/%s.cstrace", dir, name);
	FILE *file = fopen(path, "rb");
	cr_assert_not_null(file, "cannot open %s: %s", path, strerror(errno));
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_eq(cs_intervals_init(iv, (uint64_t)(width_s * 1e9), 99.0, cs_interval_print, out), 0);
	struct feed f = { .engine = cs_engine_new(), .intervals = iv };
	static struct cs_trace_info info;
	cr_assert_eq(cs_trace_read(file, feed, &f, &info, errmsg, sizeof(errmsg)), 0, "%s", errmsg);
	fclose(file);
	cs_intervals_finish(iv, f.engine);
	fclose(out);
	*engine_out = f.engine;
	return text;
}

Test(intervals, the_lines_add_up_to_the_run)
{
	static const double widths[] = { 0.25, 1.0, 3.0, 100.0 };
	for (size_t w = 0; w < sizeof(widths) / sizeof(widths[0]); w++) {
		struct cs_engine *engine;
		struct cs_intervals iv;
		char *text = replay_intervals("s3", widths[w], &engine, &iv);
		uint64_t drops = 0;
		for (size_t i = 0; i < engine->listener_count; i++)
			drops += cs_listener_drops(&engine->listeners[i]);
		cr_expect_eq(iv.requests_in_lines, engine->requests.requests, "width %g: %lu of %lu requests", widths[w],
			     (unsigned long)iv.requests_in_lines, (unsigned long)engine->requests.requests);
		cr_expect_eq(iv.drops_in_lines, drops, "width %g", widths[w]);
		/* A header and a line per interval, the last one possibly shorter. */
		double span_s = (double)(engine->totals.last_ts_ns - engine->totals.first_ts_ns) / 1e9;
		uint64_t want = (uint64_t)(span_s / widths[w]) + 1;
		cr_expect(iv.lines == want || iv.lines + 1 == want, "width %g: %lu lines for %.2f s", widths[w],
			  (unsigned long)iv.lines, span_s);
		free(text);
		cs_intervals_free(&iv);
		cs_engine_free(engine);
	}
}

Test(intervals, the_overflow_takes_over_the_tail_part_way)
{
	struct cs_engine *engine;
	struct cs_intervals iv;
	char *text = replay_intervals("s3", 2.0, &engine, &iv);
	/* The first lines: the slow acceptor's queue; later, the dropped SYNs' retries. */
	char *first = strchr(text, '\n') + 1;
	char *last_line = NULL;
	for (char *line = first; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (strstr(line, "listen_overflow"))
			last_line = line;
	cr_expect(strstr(first, "accept_queue") && strstr(first, "accept_queue") < strchr(first, '\n'),
		  "first interval: %s", text);
	cr_expect_not_null(last_line, "no interval names listen_overflow: %s", text);
	free(text);
	cs_intervals_free(&iv);
	cs_engine_free(engine);
}
