// SPDX-License-Identifier: BSD-2-Clause
#include "replay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes.h"
#include "trace_file.h"

struct replay_feed {
	struct cs_engine *engine;
	const struct cs_replay_watch *watch;
	uint64_t first_ns, last_ns; /* of every record, in the window or not */
	uint64_t from_ns, to_ns;    /* the window, from the first record's time */
};

static int feed_engine(void *ctx, const void *record, size_t len)
{
	struct replay_feed *feed = ctx;
	const struct cs_event_header *hdr = record;
	if (!feed->first_ns && feed->watch) {
		feed->from_ns = hdr->ts_ns + (uint64_t)(feed->watch->from_s * 1e9);
		feed->to_ns = feed->watch->to_s > 0 ? hdr->ts_ns + (uint64_t)(feed->watch->to_s * 1e9) : UINT64_MAX;
	}
	if (!feed->first_ns)
		feed->first_ns = hdr->ts_ns;
	if (hdr->ts_ns > feed->last_ns)
		feed->last_ns = hdr->ts_ns;
	/*
	 * Records fed from user space (the first walk's, the threads' first
	 * samples) come before ring-buffer records of earlier times, so a
	 * record may be older than the first: only a window that begins later
	 * leaves such records out.
	 */
	if (feed->watch && ((feed->watch->from_s > 0 && hdr->ts_ns < feed->from_ns) || hdr->ts_ns >= feed->to_ns))
		return 0;
	if (feed->watch && feed->watch->before_record)
		feed->watch->before_record(feed->watch->ctx, feed->engine, hdr->ts_ns);
	cs_engine_feed(feed->engine, record, len);
	return 0;
}

int cs_replay_trace(const char *path, struct cs_replay *replay)
{
	return cs_replay_trace_watched(path, replay, NULL);
}

void cs_replay_free(struct cs_replay *replay)
{
	cs_engine_free(replay->engine);
	free(replay->info);
	replay->engine = NULL;
	replay->info = NULL;
}

/* The duration and window the report shows, once every record is in. */
static void set_span(struct cs_trace_info *info, const struct replay_feed *feed, bool cut_short)
{
	const struct cs_replay_watch *watch = feed->watch;
	const struct cs_engine *engine = feed->engine;
	/* Without a summary, the records' own span is the best duration. */
	if (cut_short)
		info->meta.duration_s = (double)(engine->totals.last_ts_ns - engine->totals.first_ts_ns) / 1e9;
	info->meta.records_read = info->records;
	if (watch && (watch->from_s > 0 || watch->to_s > 0) && feed->first_ns) {
		/* The window's own span, within the records there are. */
		uint64_t to_ns = feed->to_ns < feed->last_ns ? feed->to_ns : feed->last_ns;
		info->meta.duration_s = to_ns > feed->from_ns ? (double)(to_ns - feed->from_ns) / 1e9 : 0;
		info->meta.window_from_s = watch->from_s;
		info->meta.window_to_s = (double)(to_ns - feed->first_ns) / 1e9;
	}
}

int cs_replay_trace_watched(const char *path, struct cs_replay *replay, const struct cs_replay_watch *watch)
{
	memset(replay, 0, sizeof(*replay));
	FILE *file = fopen(path, "rb");
	if (!file) {
		fprintf(stderr, "connscope: cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	replay->engine = cs_engine_new();
	replay->info = calloc(1, sizeof(*replay->info));
	if (!replay->engine || !replay->info) {
		fclose(file);
		cs_replay_free(replay);
		fprintf(stderr, "connscope: out of memory\n");
		return -1;
	}
	struct cs_trace_info *info = replay->info;
	char errmsg[CS_ERRMSG_LEN];
	struct replay_feed feed = { .engine = replay->engine, .watch = watch };
	int err = cs_trace_read(file, feed_engine, &feed, info, errmsg, sizeof(errmsg));
	fclose(file);
	if (err && err != -ENODATA) {
		fprintf(stderr, "connscope: %s: %s\n", path, errmsg);
		cs_replay_free(replay);
		return -1;
	}
	bool cut_short = err == -ENODATA || !info->has_summary;
	if (cut_short)
		fprintf(stderr, "connscope: %s: %s; reporting the %llu whole records before it\n", path,
			err ? errmsg : "no summary at the end (the recording was cut short)",
			(unsigned long long)info->records);
	set_span(info, &feed, cut_short);
	replay->meta = info->meta;
	return 0;
}
