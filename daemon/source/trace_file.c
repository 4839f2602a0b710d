// SPDX-License-Identifier: BSD-2-Clause
#include "trace_file.h"
#include "errmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "records.h"
#include "units.h"

#define WRITE_BUFFER_BYTES (1u << 20)
/* Largest record any wire version may carry; anything bigger is corrupt. */
#define MAX_RECORD_BYTES 4096

int cs_trace_create(struct cs_trace_writer *writer, const char *path, const char *target,
		    uint64_t start_ns, const struct cs_run_stamp *stamp)
{
	memset(writer, 0, sizeof(*writer));
	/*
	 * O_NOFOLLOW: never write through a symlink planted in a shared
	 * directory. O_NONBLOCK: a FIFO without a reader fails at once (ENXIO)
	 * instead of hanging; the regular-file check below refuses it anyway.
	 */
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	writer->file = fdopen(fd, "wb");
	if (!writer->file) {
		int err = -errno;
		close(fd);
		return err;
	}
	setvbuf(writer->file, NULL, _IOFBF, WRITE_BUFFER_BYTES);

	struct cs_trace_header header = {
		.file_version = CS_TRACE_VERSION,
		.wire_version = CS_WIRE_VERSION,
		.start_ns = start_ns,
		.header_size = sizeof(header),
	};
	memcpy(header.magic, CS_TRACE_MAGIC, sizeof(header.magic));
	snprintf(header.target, sizeof(header.target), "%s", target ? target : "");
	struct cs_trace_run run = {
		.hdr = { .ts_ns = start_ns, .type = CS_TRACE_RUN_TYPE, .size = sizeof(run) },
		.start_unix_ns = stamp ? stamp->start_unix_ns : 0,
		.start_mono_ns = stamp ? stamp->start_mono_ns : 0,
	};
	if (stamp) {
		memcpy(run.host, stamp->host, sizeof(run.host));
		memcpy(run.kernel, stamp->kernel, sizeof(run.kernel));
	}
	if (fwrite(&header, sizeof(header), 1, writer->file) != 1 || fwrite(&run, sizeof(run), 1, writer->file) != 1)
		writer->error = -EIO;
	return writer->error;
}

int cs_trace_write(struct cs_trace_writer *writer, const void *record, size_t len)
{
	if (writer->error)
		return writer->error;
	if (fwrite(record, len, 1, writer->file) != 1)
		writer->error = errno ? -errno : -EIO;
	else
		writer->records++;
	return writer->error;
}

int cs_trace_finish(struct cs_trace_writer *writer, const struct cs_report_meta *meta)
{
	if (meta->labels && meta->labels->netns_ino) {
		struct cs_trace_labels labels = {
			.hdr = { .type = CS_TRACE_LABELS_TYPE, .size = sizeof(labels) },
			.netns_ino = meta->labels->netns_ino,
		};
		snprintf(labels.cgroup, sizeof(labels.cgroup), "%s", meta->labels->cgroup);
		snprintf(labels.container, sizeof(labels.container), "%s", meta->labels->container);
		cs_trace_write(writer, &labels, sizeof(labels));
	}
	struct cs_trace_summary summary = {
		.hdr = { .type = CS_TRACE_SUMMARY_TYPE, .size = sizeof(summary) },
		.duration_ns = (uint64_t)(meta->duration_s * NS_PER_SEC),
		.events_lost = meta->events_lost,
		.table_full = meta->table_full,
		.listen_overflows = meta->netstat.listen_overflows,
		.listen_drops = meta->netstat.listen_drops,
		.syncookies_sent = meta->netstat.syncookies_sent,
		.netstat_valid = meta->netstat.valid,
		.probe_runs_skipped = meta->probe_runs_skipped > UINT32_MAX ? UINT32_MAX
									     : (uint32_t)meta->probe_runs_skipped,
	};
	cs_trace_write(writer, &summary, sizeof(summary));
	/* The target is named once the run has found it: fill it in now. */
	if (!writer->error && meta->target) {
		char target[CS_TRACE_TARGET_LEN] = "";
		snprintf(target, sizeof(target), "%s", meta->target);
		if (fseek(writer->file, (long)offsetof(struct cs_trace_header, target), SEEK_SET) ||
		    fwrite(target, sizeof(target), 1, writer->file) != 1)
			writer->error = -EIO;
	}
	if (fclose(writer->file) && !writer->error)
		writer->error = -errno;
	writer->file = NULL;
	return writer->error;
}

/* The run's wall clock, host and kernel; the names NUL-terminated whatever the file says. */
static void apply_run(struct cs_trace_info *info, const struct cs_trace_run *run)
{
	struct cs_run_stamp *stamp = &info->meta.stamp;
	stamp->start_unix_ns = run->start_unix_ns;
	stamp->start_mono_ns = run->start_mono_ns;
	memcpy(stamp->host, run->host, sizeof(stamp->host));
	memcpy(stamp->kernel, run->kernel, sizeof(stamp->kernel));
	stamp->host[sizeof(stamp->host) - 1] = '\0';
	stamp->kernel[sizeof(stamp->kernel) - 1] = '\0';
}

/* The target's labels; the names NUL-terminated whatever the file says. */
static void apply_labels(struct cs_trace_info *info, const struct cs_trace_labels *record)
{
	info->labels.netns_ino = record->netns_ino;
	memcpy(info->labels.cgroup, record->cgroup, sizeof(info->labels.cgroup));
	memcpy(info->labels.container, record->container, sizeof(info->labels.container));
	info->labels.cgroup[sizeof(info->labels.cgroup) - 1] = '\0';
	info->labels.container[sizeof(info->labels.container) - 1] = '\0';
	info->meta.labels = &info->labels;
}

static void apply_summary(struct cs_trace_info *info, const struct cs_trace_summary *summary)
{
	info->has_summary = true;
	info->meta.duration_s = (double)summary->duration_ns / NS_PER_SEC;
	info->meta.events_lost = summary->events_lost;
	info->meta.table_full = summary->table_full;
	info->meta.probe_runs_skipped = summary->probe_runs_skipped;
	info->meta.netstat.valid = summary->netstat_valid != 0;
	info->meta.netstat.listen_overflows = summary->listen_overflows;
	info->meta.netstat.listen_drops = summary->listen_drops;
	info->meta.netstat.syncookies_sent = summary->syncookies_sent;
}

/* A record's size as the file's wire version wrote it; 0 if unknown. */
static size_t stored_size(uint16_t type, uint32_t wire_version)
{
	switch (type) {
	case CS_TRACE_SUMMARY_TYPE:
		return sizeof(struct cs_trace_summary);
	case CS_TRACE_RUN_TYPE:
		return sizeof(struct cs_trace_run);
	case CS_TRACE_LABELS_TYPE:
		return sizeof(struct cs_trace_labels);
	default:
		/* A current trace's records are at today's sizes: no older version to look up. */
		return wire_version == CS_WIRE_VERSION ? cs_record_size(type) : cs_record_size_in(type, wire_version);
	}
}

/*
 * A record of an older wire version that has grown since, in the record
 * buffer (MAX_RECORD_BYTES): its new fields zeroed and its header saying
 * the current size, which the engine expects. Returns that size.
 */
static size_t grown_to_current(unsigned char *record, size_t stored)
{
	struct cs_event_header hdr;
	memcpy(&hdr, record, sizeof(hdr));
	size_t current = cs_record_size(hdr.type);
	if (current <= stored)
		return stored;
	memset(record + stored, 0, current - stored);
	hdr.size = (__u16)current;
	memcpy(record, &hdr, sizeof(hdr));
	return current;
}

/*
 * The file read in blocks: a replay goes through millions of records of
 * some hundred bytes, and two freads a record (its header, then the rest)
 * cost some fifth of what the engine does with it. Each record is handed
 * on where it lies in the block; one the block holds only in part is
 * first moved to the block's start, and the file read on after it.
 */
struct block_reader {
	FILE *file;
	unsigned char *block; /* CS_TRACE_READ_BLOCK_BYTES */
	size_t at, len;       /* the next byte to take, and the bytes in block */
};

_Static_assert(CS_TRACE_READ_BLOCK_BYTES >= MAX_RECORD_BYTES && CS_TRACE_READ_BLOCK_BYTES >= sizeof(struct cs_trace_header),
	       "a block holds any record whole");

/* The bytes from at moved to the block's start, and the file read after them until it holds want. */
static size_t refill(struct block_reader *reader, size_t want)
{
	size_t left = reader->len - reader->at;
	memmove(reader->block, reader->block + reader->at, left);
	reader->at = 0;
	reader->len = left;
	while (reader->len < want) {
		size_t got = fread(reader->block + reader->len, 1, CS_TRACE_READ_BLOCK_BYTES - reader->len, reader->file);
		if (!got)
			break;
		reader->len += got;
	}
	return reader->len < want ? reader->len : want;
}

/*
 * Of the want bytes from the reader's position (want at most a block),
 * how many the block holds at reader->block + reader->at, reading on if
 * it must: fewer than want only at the file's end or on a read error.
 */
static inline size_t holds(struct block_reader *reader, size_t want)
{
	return reader->len - reader->at >= want ? want : refill(reader, want);
}

/* The file's header, checked; fills info's target and start. Returns 0 or -EINVAL. */
static int read_header(struct block_reader *reader, struct cs_trace_header *header, struct cs_trace_info *info,
		       char *errmsg, size_t errlen)
{
	size_t got = holds(reader, sizeof(*header));
	memcpy(header, reader->block + reader->at, got);
	reader->at += got;
	if (got < sizeof(header->magic) || memcmp(header->magic, CS_TRACE_MAGIC, sizeof(header->magic)) != 0)
		return cs_fail_code(-EINVAL, errmsg, errlen, "not a connscope trace (bad magic)");
	if (got < sizeof(*header))
		return cs_fail_code(-EINVAL, errmsg, errlen, "truncated header (%zu of %zu bytes)", got, sizeof(*header));
	/* Wire versions only add record types and grow records at their end: older ones still read. */
	if (header->file_version < CS_TRACE_VERSION_MIN || header->file_version > CS_TRACE_VERSION ||
	    header->wire_version < CS_WIRE_VERSION_MIN ||
	    header->wire_version > CS_WIRE_VERSION)
		return cs_fail_code(-EINVAL, errmsg, errlen,
			       "trace format %u (wire %u) is not one this connscope reads (%u to %u, wire %u to %u)",
			       header->file_version, header->wire_version, CS_TRACE_VERSION_MIN, CS_TRACE_VERSION,
			       CS_WIRE_VERSION_MIN, CS_WIRE_VERSION);
	if (header->header_size != sizeof(*header))
		return cs_fail_code(-EINVAL, errmsg, errlen, "header size %u, expected %zu", header->header_size,
				    sizeof(*header));
	memcpy(info->target, header->target, sizeof(info->target));
	info->target[sizeof(info->target) - 1] = '\0';
	info->start_ns = header->start_ns;
	return 0;
}

/*
 * A whole record of expected bytes: the file's own into info, a wire
 * record to on_record. One of an older wire version is grown in grown (a
 * copy: the block holds the next record after it).
 */
static int deliver(const unsigned char *record, size_t expected, uint32_t wire_version, unsigned char *grown,
		   cs_trace_record_fn on_record, void *ctx, struct cs_trace_info *info)
{
	struct cs_event_header hdr;
	memcpy(&hdr, record, sizeof(hdr));
	if (hdr.type == CS_TRACE_SUMMARY_TYPE) {
		struct cs_trace_summary summary;
		memcpy(&summary, record, sizeof(summary));
		apply_summary(info, &summary);
	} else if (hdr.type == CS_TRACE_RUN_TYPE) {
		struct cs_trace_run run;
		memcpy(&run, record, sizeof(run));
		apply_run(info, &run);
	} else if (hdr.type == CS_TRACE_LABELS_TYPE) {
		struct cs_trace_labels labels;
		memcpy(&labels, record, sizeof(labels));
		apply_labels(info, &labels);
	} else {
		info->records++;
		if (wire_version == CS_WIRE_VERSION)
			return on_record(ctx, record, expected);
		memcpy(grown, record, expected);
		return on_record(ctx, grown, grown_to_current(grown, expected));
	}
	return 0;
}

/* The records after the header, to the file's end or the first error. */
static int read_records(struct block_reader *reader, uint32_t wire_version, cs_trace_record_fn on_record,
			void *ctx, struct cs_trace_info *info, char *errmsg, size_t errlen)
{
	uint64_t offset = sizeof(struct cs_trace_header);
	unsigned char grown[MAX_RECORD_BYTES];
	for (;;) {
		struct cs_event_header hdr;
		size_t got = holds(reader, sizeof(hdr));
		if (got == 0)
			break;
		if (info->has_summary)
			return cs_fail_code(-EINVAL, errmsg, errlen, "data after the summary at offset %" PRIu64, offset);
		if (got < sizeof(hdr))
			return cs_fail_code(-ENODATA, errmsg, errlen, "truncated record header at offset %" PRIu64, offset);
		memcpy(&hdr, reader->block + reader->at, sizeof(hdr));
		size_t expected = stored_size(hdr.type, wire_version);
		if (!expected)
			return cs_fail_code(-EINVAL, errmsg, errlen, "unknown record type %u at offset %" PRIu64, hdr.type, offset);
		if (hdr.size != expected)
			return cs_fail_code(-EINVAL, errmsg, errlen, "record type %u at offset %" PRIu64 " says %u bytes, expected %zu",
				       hdr.type, offset, hdr.size, expected);
		if (holds(reader, expected) < expected)
			return cs_fail_code(-ENODATA, errmsg, errlen, "truncated record at offset %" PRIu64, offset);
		const unsigned char *record = reader->block + reader->at;
		reader->at += expected;
		int err = deliver(record, expected, wire_version, grown, on_record, ctx, info);
		if (err)
			return err;
		offset += expected;
	}
	if (ferror(reader->file))
		return cs_fail_code(-EINVAL, errmsg, errlen, "read error at offset %" PRIu64 ": %s", offset, strerror(errno));
	return 0;
}

int cs_trace_read(FILE *file, cs_trace_record_fn on_record, void *ctx, struct cs_trace_info *info,
		  char *errmsg, size_t errlen)
{
	memset(info, 0, sizeof(*info));
	info->meta.target = info->target;
	struct block_reader reader = { .file = file, .block = malloc(CS_TRACE_READ_BLOCK_BYTES) };
	if (!reader.block)
		return cs_fail_code(-ENOMEM, errmsg, errlen, "out of memory for a %u-byte read buffer", CS_TRACE_READ_BLOCK_BYTES);
	/* Zeroed: clang's analyzer does not see that read_header never fails with 0. */
	struct cs_trace_header header = { .file_version = 0 };
	int err = read_header(&reader, &header, info, errmsg, errlen);
	if (!err)
		err = read_records(&reader, header.wire_version, on_record, ctx, info, errmsg, errlen);
	free(reader.block);
	return err;
}
