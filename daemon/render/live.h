/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The live view's data, for the control socket's SNAPSHOT and STREAM and
 * for connscope top: the report JSON of `connscope attach --json`, with one
 * more member, "live", holding what a once-a-second view needs beyond the
 * cumulative report: the last minute second by second (requests, accepts,
 * drops, p99), the window's latency, the last second's rates per listener
 * and per thread, each thread's run-queue p99 and busy share, and the
 * flagged conditions with one line of advice each. Pure: builds jansson
 * values, and renders into a FILE *.
 */
#ifndef CS_LIVE_H
#define CS_LIVE_H

#include <jansson.h>
#include <stdio.h>

#include "engine.h"
#include "run_meta.h"
#include "window.h"

struct cs_live_info {
	const char *source;    /* "daemon" or "in-process" */
	double uptime_s;       /* since the probes were attached */
	double since_reset_s;  /* since the statistics began (the last RESET) */
};

/* The "live" object alone, its conditions from the view's analysis (NULL: out of memory). */
struct cs_report_view;
json_t *cs_live_value(const struct cs_report_view *view, const struct cs_window *window,
		      const struct cs_live_info *info);

/*
 * The whole snapshot: the report's value (cs_report_value) with "live"
 * added as its last member (NULL: out of memory); and the same dumped as
 * one line (0 or -ENOMEM).
 */
json_t *cs_snapshot_value(const struct cs_engine *engine, const struct cs_report_meta *meta,
			  const struct cs_window *window, const struct cs_live_info *info);
int cs_snapshot_json(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta,
		     const struct cs_window *window, const struct cs_live_info *info);

#endif /* CS_LIVE_H */
