/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Recorded traces: the raw record stream of a run, replayable offline
 * through the same engine.
 *
 * Layout (little-endian, this host's): a fixed header, then wire records
 * exactly as the probes emitted them (each starts with cs_event_header and
 * says its own size), then one summary record with what only the end of
 * the run knows (duration, lost records, kernel counter deltas).
 */
#ifndef CS_TRACE_FILE_H
#define CS_TRACE_FILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "connscope.h"
#include "run_meta.h"

#define CS_TRACE_MAGIC "CSTRACE\0"
/*
 * 2: a run record (wall clock, host, kernel) after the header, and the
 * target's labels before the summary; version 1 files still read.
 */
#define CS_TRACE_VERSION 2
#define CS_TRACE_VERSION_MIN 1
#define CS_TRACE_TARGET_LEN 256
/* A record type only files carry: the run's summary, last in the file. */
#define CS_TRACE_SUMMARY_TYPE 0x7f01
/* Another: when and where the run started, first after the header. */
#define CS_TRACE_RUN_TYPE 0x7f02
/* And the target's namespace, cgroup and container, just before the summary. */
#define CS_TRACE_LABELS_TYPE 0x7f03

struct cs_trace_header {
	char magic[8];
	__u32 file_version;
	__u32 wire_version;
	__u64 start_ns;
	__u32 header_size;
	__u32 pad;
	char target[CS_TRACE_TARGET_LEN];
};

struct cs_trace_summary {
	struct cs_event_header hdr;
	__u64 duration_ns;
	__u64 events_lost;
	__u64 table_full;
	__u64 listen_overflows;
	__u64 listen_drops;
	__u64 syncookies_sent;
	__u32 netstat_valid;
	__u32 probe_runs_skipped; /* saturates at 2^32 - 1 */
};

struct cs_trace_run {
	struct cs_event_header hdr;
	__s64 start_unix_ns;
	__u64 start_mono_ns;
	char host[CS_RUN_STAMP_NAME_LEN];
	char kernel[CS_RUN_STAMP_NAME_LEN];
	char pad[6];
};

struct cs_trace_labels {
	struct cs_event_header hdr;
	__u32 netns_ino;
	char cgroup[512];
	char container[80];
	__u32 pad;
};

_Static_assert(sizeof(struct cs_trace_header) == 288, "trace header size");
_Static_assert(sizeof(struct cs_trace_labels) == 616, "trace labels record size");
_Static_assert(sizeof(struct cs_trace_run) == 168, "trace run record size");
_Static_assert(sizeof(struct cs_trace_summary) == 72, "trace summary size");

struct cs_trace_writer {
	FILE *file;
	uint64_t records;
	int error;              /* first write error (negative errno), sticky */
};

/*
 * Create path for writing: refuses to follow a symlink or to overwrite
 * anything but a regular file, mode 0600. Returns 0 or -errno.
 */
int cs_trace_create(struct cs_trace_writer *writer, const char *path, const char *target,
		    uint64_t start_ns, const struct cs_run_stamp *stamp);
/* Append one wire record (buffered: no syscall per record). */
int cs_trace_write(struct cs_trace_writer *writer, const void *record, size_t len);
/* Write the summary and meta->target, close; returns the file's first error. */
int cs_trace_finish(struct cs_trace_writer *writer, const struct cs_report_meta *meta);

typedef int (*cs_trace_record_fn)(void *ctx, const void *record, size_t len);

/* The reader's block: it takes the file this many bytes at a time. */
#define CS_TRACE_READ_BLOCK_BYTES (64u << 10)

struct cs_trace_info {
	char target[CS_TRACE_TARGET_LEN];
	uint64_t start_ns;
	uint64_t records;
	bool has_summary;       /* false: the file was cut short (run killed?) */
	struct cs_target_labels labels; /* meta.labels points here when the file has them */
	struct cs_report_meta meta; /* from the summary; meta.target -> target */
};

/*
 * Read a trace from file, calling on_record for each wire record. Returns 0;
 * -ENODATA when the file ends inside a record (cut short: every whole
 * record before was delivered); -EINVAL when it is not a trace, of another
 * version, or corrupt; errmsg names the offset and the problem; -ENOMEM
 * without memory for its read buffer; else on_record's first error. A file
 * without its summary record is not an error: info->has_summary says so.
 * The file is read ahead in blocks: its position afterwards is not the
 * end of the last record. A record handed to on_record lies in the
 * reader's buffer, valid only during the call.
 */
int cs_trace_read(FILE *file, cs_trace_record_fn on_record, void *ctx, struct cs_trace_info *info,
		  char *errmsg, size_t errlen);

#endif /* CS_TRACE_FILE_H */
