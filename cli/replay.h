/* SPDX-License-Identifier: BSD-2-Clause */
/* A trace file replayed through the engine (connscope report, diff). */
#ifndef CS_CLI_REPLAY_H
#define CS_CLI_REPLAY_H

#include "engine.h"
#include "report.h"
#include "trace_file.h"

/* A replayed trace: its engine, and its report's metadata (whose strings point into info). */
struct cs_replay {
	struct cs_engine *engine;
	struct cs_report_meta meta;
	struct cs_trace_info *info; /* on the heap: a copy of the recording's metadata, large */
};

/*
 * Reads the trace at path into a new engine and its report metadata, for
 * cs_replay_free. A trace cut short is reported up to its last whole
 * record, with a line on stderr saying so. Returns 0, or -1 after saying
 * why on stderr (nothing to free then).
 */
int cs_replay_trace(const char *path, struct cs_replay *replay);
void cs_replay_free(struct cs_replay *replay);

/*
 * The same, telling watch each record's time before the engine takes it
 * (before_record may be NULL), and taking only the records from from_s to
 * to_s seconds after the first (to_s 0: to the end). A window is the run
 * as if connscope had attached at from_s and stopped at to_s: connections
 * older than it are partial, as at an attach.
 */
struct cs_replay_watch {
	void (*before_record)(void *ctx, const struct cs_engine *engine, uint64_t ts_ns);
	void *ctx;
	double from_s, to_s;
};
int cs_replay_trace_watched(const char *path, struct cs_replay *replay, const struct cs_replay_watch *watch);

#endif /* CS_CLI_REPLAY_H */
