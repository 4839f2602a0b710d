// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of recorded traces (daemon/source/trace_file.c): a trace written with
 * cs_trace_create/write/finish reads back record for record with its
 * summary and target; a file cut at any byte, or with a corrupt header,
 * record header or trailer, is reported (never a crash, never a record
 * invented); cs_trace_create does not follow symlinks or block on a FIFO,
 * and makes the file private.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "events.h"
#include "records.h"
#include "trace_file.h"

static char dir[64];
static char path[128];

static void setup(void)
{
	strcpy(dir, "/tmp/cs-trace-test-XXXXXX");
	cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/run.cstrace", dir);
}

static int remove_entry(const char *file, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(file);
}

static void teardown(void)
{
	nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

TestSuite(trace, .init = setup, .fini = teardown);

/* ---- a small trace -------------------------------------------------------------- */

/* The records of the trace, in order, as bytes. */
struct recording {
	unsigned char bytes[4096];
	size_t len[16];
	size_t offset[16]; /* in bytes[] */
	size_t n;
};

static void add(struct recording *r, const void *record, size_t len)
{
	cr_assert_lt(r->n, 16);
	size_t at = r->n ? r->offset[r->n - 1] + r->len[r->n - 1] : 0;
	cr_assert_leq(at + len, sizeof(r->bytes));
	memcpy(r->bytes + at, record, len);
	r->offset[r->n] = at;
	r->len[r->n++] = len;
}

static struct recording sample_records(void)
{
	struct recording r = { .n = 0 };
	struct cs_ev_accept accept = make_accept((struct accept_spec){ .port = 8080, .tid = 7, .tgid = 6,
								       .established_ns = 5 * SEC, .ts_ns = 5 * SEC + 40 * US,
								       .backlog_limit = 128 });
	add(&r, &accept, sizeof(accept));
	struct cs_ev_request request = make_request((struct request_spec){
		.sk = accept.sk, .port = 8080, .start_ns = 5 * SEC + 10 * US, .first_read_ns = 5 * SEC + 50 * US,
		.first_send_ns = 5 * SEC + 150 * US, .last_send_ns = 5 * SEC + 150 * US, .bytes_out = 512 });
	add(&r, &request, sizeof(request));
	struct cs_ev_thread_sample thread = make_thread_sample(5 * SEC + 200 * US, 7, "worker", 3 * MS, 1 * MS, 12);
	add(&r, &thread, sizeof(thread));
	struct cs_ev_reset reset = make_reset(5 * SEC + 300 * US, 8080, CS_RESET_SENT, 9);
	add(&r, &reset, sizeof(reset));
	/* Grown in version 20: an older trace's pause reads with its CPU waits 0, as here. */
	struct cs_ev_runtime_pause pause = make_pause(6, 5 * SEC + 400 * US, 5 * SEC + 900 * US, "ThreadDump", 0);
	add(&r, &pause, sizeof(pause));
	struct cs_ev_conn_close close = make_conn_close((struct close_spec){
		.sk = accept.sk, .port = 8080, .ts_ns = 6 * SEC, .established_ns = 5 * SEC,
		.last_activity_ns = 5 * SEC + 150 * US, .requests = 1, .closed_by = CS_CLOSED_BY_SERVER });
	add(&r, &close, sizeof(close));
	return r;
}

static const struct cs_report_meta sample_meta = {
	.target = "pid 42 (csserver)",
	.duration_s = 12.5,
	.events_lost = 3,
	.table_full = 4,
	.probe_runs_skipped = 5,
	.netstat = { .valid = true, .listen_overflows = 11, .listen_drops = 12, .syncookies_sent = 13 },
	.stamp = { .start_unix_ns = 1764586819123000000, .host = "build-7", .kernel = "6.18.0-test" },
};

/* The file's header and its run record: what comes before the first wire record. */
#define HEADERS_SIZE (sizeof(struct cs_trace_header) + sizeof(struct cs_trace_run))

static void write_trace(const char *file, const struct recording *r, const char *target,
			const struct cs_report_meta *meta)
{
	struct cs_trace_writer w;
	cr_assert_eq(cs_trace_create(&w, file, target, 4 * SEC, &meta->stamp), 0);
	for (size_t i = 0; i < r->n; i++)
		cr_assert_eq(cs_trace_write(&w, r->bytes + r->offset[i], r->len[i]), 0);
	cr_assert_eq(w.records, r->n);
	cr_assert_eq(cs_trace_finish(&w, meta), 0);
	cr_assert_null(w.file);
}

/* The whole file, in memory. */
static unsigned char *slurp(const char *file, size_t *len)
{
	FILE *f = fopen(file, "rb");
	cr_assert_not_null(f, "%s: %s", file, strerror(errno));
	static unsigned char buf[8192];
	*len = fread(buf, 1, sizeof(buf), f);
	cr_assert_lt(*len, sizeof(buf));
	fclose(f);
	return buf;
}

/* What a read delivered. */
struct delivered {
	struct recording records;
	int stop_after;    /* > 0: return -ECANCELED after this many */
};

static int collect(void *ctx, const void *record, size_t len)
{
	struct delivered *d = ctx;
	add(&d->records, record, len);
	if (d->stop_after && (int)d->records.n >= d->stop_after)
		return -ECANCELED;
	return 0;
}

struct read_result {
	int ret;
	struct cs_trace_info info;
	struct delivered got;
	char errmsg[256];
};

/* Read a trace held in memory (len may be 0). */
static void read_bytes(const unsigned char *bytes, size_t len, struct read_result *out)
{
	memset(out, 0, sizeof(*out));
	FILE *f = len ? fmemopen((void *)bytes, len, "rb") : fopen("/dev/null", "rb");
	cr_assert_not_null(f);
	out->ret = cs_trace_read(f, collect, &out->got, &out->info, out->errmsg, sizeof(out->errmsg));
	fclose(f);
}

static void expect_records(const struct recording *got, const struct recording *want, size_t n)
{
	cr_assert_eq(got->n, n, "%zu records delivered, want %zu", got->n, n);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(got->len[i], want->len[i], "record %zu: %zu bytes, want %zu", i, got->len[i],
			     want->len[i]);
		cr_assert_eq(memcmp(got->bytes + got->offset[i], want->bytes + want->offset[i], want->len[i]), 0,
			     "record %zu differs", i);
	}
}

static void expect_offset_named(const char *errmsg, size_t offset)
{
	char needle[48];
	snprintf(needle, sizeof(needle), "offset %zu", offset);
	cr_assert_not_null(strstr(errmsg, needle), "\"%s\" does not name %s", errmsg, needle);
}

/* ---- round trip ------------------------------------------------------------------- */

Test(trace, round_trip)
{
	struct recording r = sample_records();
	write_trace(path, &r, "port 8080", &sample_meta);

	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f);
	struct delivered got = { .stop_after = 0 };
	struct cs_trace_info info;
	char errmsg[256] = "";
	int ret = cs_trace_read(f, collect, &got, &info, errmsg, sizeof(errmsg));
	fclose(f);
	cr_assert_eq(ret, 0, "read: %d %s", ret, errmsg);
	expect_records(&got.records, &r, r.n);
	cr_assert_eq(info.records, r.n);
	cr_assert_eq(info.start_ns, 4 * SEC);
	cr_assert(info.has_summary);
	cr_assert_str_eq(info.target, "pid 42 (csserver)", "the target named at the end wins");
	cr_assert_eq(info.meta.target, info.target);
	cr_assert_float_eq(info.meta.duration_s, 12.5, 1e-9);
	cr_assert_eq(info.meta.events_lost, 3);
	cr_assert_eq(info.meta.table_full, 4);
	cr_assert_eq(info.meta.probe_runs_skipped, 5);
	cr_assert(info.meta.netstat.valid);
	cr_assert_eq(info.meta.netstat.listen_overflows, 11);
	cr_assert_eq(info.meta.netstat.listen_drops, 12);
	cr_assert_eq(info.meta.netstat.syncookies_sent, 13);

	/* When and where: the run record's stamp, as written. */
	cr_assert_eq(info.meta.stamp.start_unix_ns, sample_meta.stamp.start_unix_ns);
	cr_assert_str_eq(info.meta.stamp.host, "build-7");
	cr_assert_str_eq(info.meta.stamp.kernel, "6.18.0-test");

	/* The file is the header, the run record, the records, the summary: nothing else. */
	size_t len;
	slurp(path, &len);
	cr_assert_eq(len, HEADERS_SIZE + r.offset[r.n - 1] + r.len[r.n - 1] + sizeof(struct cs_trace_summary));
}

Test(trace, the_targets_labels_round_trip)
{
	struct recording r = sample_records();
	static const struct cs_target_labels labels = {
		.netns_ino = 4026532301u, .cgroup = "/system.slice/docker-3f2a9c1b7d4e.scope", .container = "docker:3f2a9c1b7d4e"
	};
	struct cs_report_meta meta = sample_meta;
	meta.labels = &labels;
	write_trace(path, &r, "port 8080", &meta);
	size_t len;
	const unsigned char *bytes = slurp(path, &len);
	struct read_result res;
	read_bytes(bytes, len, &res);
	cr_assert_eq(res.ret, 0, "%s", res.errmsg);
	cr_assert(res.info.has_summary);
	cr_assert_eq(res.info.meta.labels, &res.info.labels);
	cr_assert_eq(res.info.labels.netns_ino, 4026532301u);
	cr_assert_str_eq(res.info.labels.cgroup, labels.cgroup);
	cr_assert_str_eq(res.info.labels.container, labels.container);
	expect_records(&res.got.records, &r, r.n);
	/* Without labels (a trace of a run that found none), none are read back. */
	write_trace(path, &r, "port 8080", &sample_meta);
	bytes = slurp(path, &len);
	read_bytes(bytes, len, &res);
	cr_assert_eq(res.ret, 0, "%s", res.errmsg);
	cr_assert_null(res.info.meta.labels);
}

Test(trace, target_from_create_when_the_run_names_none)
{
	struct recording r = sample_records();
	struct cs_report_meta meta = sample_meta;
	meta.target = NULL;
	meta.netstat.valid = false;
	write_trace(path, &r, "port 8080", &meta);
	size_t len;
	const unsigned char *bytes = slurp(path, &len);
	struct read_result res;
	read_bytes(bytes, len, &res);
	cr_assert_eq(res.ret, 0, "%s", res.errmsg);
	cr_assert_str_eq(res.info.target, "port 8080");
	cr_assert_not(res.info.meta.netstat.valid);
}

Test(trace, long_targets_are_cut_and_terminated)
{
	char target[400];
	memset(target, 'x', sizeof(target) - 1);
	target[sizeof(target) - 1] = '\0';
	struct recording r = { .n = 0 };
	struct cs_report_meta meta = sample_meta;
	meta.target = target;
	write_trace(path, &r, target, &meta);
	size_t len;
	const unsigned char *bytes = slurp(path, &len);
	struct read_result res;
	read_bytes(bytes, len, &res);
	cr_assert_eq(res.ret, 0, "%s", res.errmsg);
	cr_assert_eq(strlen(res.info.target), CS_TRACE_TARGET_LEN - 1);

	/* A header whose target fills every byte, without a NUL. */
	unsigned char copy[8192];
	memcpy(copy, bytes, len);
	memset(copy + offsetof(struct cs_trace_header, target), 'y', CS_TRACE_TARGET_LEN);
	read_bytes(copy, len, &res);
	cr_assert_eq(res.ret, 0, "%s", res.errmsg);
	cr_assert_eq(strlen(res.info.target), CS_TRACE_TARGET_LEN - 1);
}

Test(trace, empty_trace)
{
	struct recording r = { .n = 0 };
	write_trace(path, &r, "port 8080", &sample_meta);
	size_t len;
	const unsigned char *bytes = slurp(path, &len);
	struct read_result res;
	read_bytes(bytes, len, &res);
	cr_assert_eq(res.ret, 0, "%s", res.errmsg);
	cr_assert_eq(res.info.records, 0);
	cr_assert_eq(res.got.records.n, 0);
	cr_assert(res.info.has_summary);
}

static int feed_engine(void *ctx, const void *record, size_t len)
{
	return cs_engine_feed(ctx, record, len);
}

Test(trace, replay_feeds_the_engine_like_the_live_run)
{
	struct recording r = sample_records();
	write_trace(path, &r, "port 8080", &sample_meta);

	struct cs_engine *live = cs_engine_new(), *replayed = cs_engine_new();
	cr_assert(live && replayed);
	for (size_t i = 0; i < r.n; i++)
		cr_assert_eq(cs_engine_feed(live, r.bytes + r.offset[i], r.len[i]), 0);
	FILE *f = fopen(path, "rb");
	struct cs_trace_info info;
	char errmsg[256];
	cr_assert_eq(cs_trace_read(f, feed_engine, replayed, &info, errmsg, sizeof(errmsg)),
		     0, "%s", errmsg);
	fclose(f);
	cr_assert_eq(replayed->totals.records, live->totals.records);
	cr_assert_eq(replayed->totals.malformed, 0);
	cr_assert_eq(replayed->requests.requests, 1);
	cr_assert_eq(replayed->requests.exemplars[0].split.total_ns, live->requests.exemplars[0].split.total_ns);
	cr_assert_eq(replayed->lifecycle.keepalive_race_resets, 1);
	cs_engine_free(live);
	cs_engine_free(replayed);
}

/*
 * An upstream exchange replays as the probes wrote it, before the record
 * of the request it served: the engine joins the two as in the live run.
 */
Test(trace, an_upstream_exchange_replays_before_its_request_and_joins_it)
{
	struct recording r = { .n = 0 };
	uint64_t read = 5 * SEC;
	struct cs_ev_upstream exchange = make_upstream((struct upstream_spec){
		.send_ns = read + 10 * US, .first_byte_ns = read + 20 * MS, .first_read_ns = read + 20 * MS + 5 * US,
		.open = 1, .request_read_ns = read });
	add(&r, &exchange, sizeof(exchange));
	struct cs_ev_request request = make_request((struct request_spec){
		.sk = 0xffff999000000001ull, .port = 8080, .index = 1, .start_ns = read - 10 * US, .first_read_ns = read,
		.first_send_ns = read + 21 * MS, .last_send_ns = read + 21 * MS });
	add(&r, &request, sizeof(request));
	write_trace(path, &r, "port 8080", &sample_meta);

	struct cs_engine *replayed = cs_engine_new();
	cr_assert_not_null(replayed);
	FILE *f = fopen(path, "rb");
	struct cs_trace_info info;
	char errmsg[256];
	cr_assert_eq(cs_trace_read(f, feed_engine, replayed, &info, errmsg, sizeof(errmsg)), 0, "%s", errmsg);
	fclose(f);
	cr_assert_eq(replayed->totals.malformed, 0);
	cr_assert_eq(replayed->upstream_count, 1);
	cr_assert_eq(replayed->upstreams[0].joined, 1);
	cr_assert_eq(replayed->requests.exemplars[0].split.cause_ns[CS_CAUSE_UPSTREAM], 20 * MS - 5 * US);
	cs_engine_free(replayed);
}

Test(trace, the_cost_readings_replay_to_the_same_cost)
{
	struct recording r = sample_records();
	struct cs_ev_prog_cost prog = make_prog_cost(6 * SEC, 42, "on_recv", 5000, 25);
	struct cs_ev_self_cost self = make_self_cost(6 * SEC, 3 * MS, 2 * MS, 2 * SEC, CS_BPF_STATS_ENABLED);
	add(&r, &prog, sizeof(prog));
	add(&r, &self, sizeof(self));
	write_trace(path, &r, "port 8080", &sample_meta);

	struct cs_engine *live = cs_engine_new(), *replayed = cs_engine_new();
	cr_assert(live && replayed);
	for (size_t i = 0; i < r.n; i++)
		cr_assert_eq(cs_engine_feed(live, r.bytes + r.offset[i], r.len[i]), 0);
	FILE *f = fopen(path, "rb");
	struct cs_trace_info info;
	char errmsg[256];
	cr_assert_eq(cs_trace_read(f, feed_engine, replayed, &info, errmsg, sizeof(errmsg)), 0, "%s", errmsg);
	fclose(f);
	cr_assert_eq(replayed->cost.readings, 1);
	cr_assert_eq(memcmp(&replayed->cost, &live->cost, sizeof(live->cost)), 0);
	cr_assert_eq(replayed->cost.bpf_run_ns, 5000);
	cr_assert_str_eq(replayed->cost.programs[0].name, "on_recv");
	cs_engine_free(live);
	cs_engine_free(replayed);
}

Test(trace, a_callback_error_stops_the_read)
{
	struct recording r = sample_records();
	write_trace(path, &r, "port 8080", &sample_meta);
	size_t len;
	const unsigned char *bytes = slurp(path, &len);
	struct read_result res;
	memset(&res, 0, sizeof(res));
	res.got.stop_after = 2;
	FILE *f = fmemopen((void *)bytes, len, "rb");
	res.ret = cs_trace_read(f, collect, &res.got, &res.info, res.errmsg, sizeof(res.errmsg));
	fclose(f);
	cr_assert_eq(res.ret, -ECANCELED);
	cr_assert_eq(res.got.records.n, 2);
}

/* ---- files cut short -------------------------------------------------------------------- */

Test(trace, cut_at_every_byte)
{
	struct recording r = sample_records();
	write_trace(path, &r, "port 8080", &sample_meta);
	size_t len;
	const unsigned char *bytes = slurp(path, &len);
	const size_t header = HEADERS_SIZE;
	const size_t summary_at = header + r.offset[r.n - 1] + r.len[r.n - 1];

	for (size_t cut = 0; cut <= len; cut++) {
		struct read_result res;
		read_bytes(bytes, cut, &res);
		if (cut < sizeof(struct cs_trace_header)) {
			cr_assert_eq(res.ret, -EINVAL, "cut at %zu (in the header): %d", cut, res.ret);
			cr_assert_eq(res.got.records.n, 0);
			cr_assert_neq(res.errmsg[0], '\0', "cut at %zu: no message", cut);
			continue;
		}
		if (cut < header) { /* after the header: in the run record, or just before it */
			cr_assert_eq(res.ret, cut == sizeof(struct cs_trace_header) ? 0 : -ENODATA, "cut at %zu: %d", cut,
				     res.ret);
			cr_assert_eq(res.got.records.n, 0);
			continue;
		}
		/* Whole records before the cut, and where the cut one began. */
		size_t whole = 0, record_at = summary_at;
		for (size_t i = 0; i < r.n; i++) {
			if (header + r.offset[i] + r.len[i] <= cut) {
				whole++;
			} else {
				record_at = header + r.offset[i];
				break;
			}
		}
		expect_records(&res.got.records, &r, whole);
		cr_assert_eq(res.info.records, whole, "cut at %zu", cut);
		cr_assert_str_eq(res.info.target, "pid 42 (csserver)");
		bool at_boundary = cut == record_at || cut == len;
		if (at_boundary) {
			cr_assert_eq(res.ret, 0, "cut at %zu (a record boundary): %d %s", cut, res.ret, res.errmsg);
			cr_assert_eq(res.info.has_summary, cut == len, "cut at %zu", cut);
		} else {
			cr_assert_eq(res.ret, -ENODATA, "cut at %zu (inside the record at %zu): %d %s", cut,
				     record_at, res.ret, res.errmsg);
			cr_assert_not(res.info.has_summary, "cut at %zu", cut);
			expect_offset_named(res.errmsg, record_at);
		}
	}
}

/* ---- corrupt files --------------------------------------------------------------------- */

static unsigned char corrupt_copy[8192];

static const unsigned char *written(struct recording *r, size_t *len)
{
	*r = sample_records();
	write_trace(path, r, "port 8080", &sample_meta);
	const unsigned char *bytes = slurp(path, len);
	memcpy(corrupt_copy, bytes, *len);
	return bytes;
}

Test(trace, bad_magic)
{
	struct recording r;
	size_t len;
	written(&r, &len);
	for (size_t i = 0; i < 8; i++) {
		unsigned char saved = corrupt_copy[i];
		corrupt_copy[i] ^= 0x20;
		struct read_result res;
		read_bytes(corrupt_copy, len, &res);
		cr_assert_eq(res.ret, -EINVAL, "magic byte %zu", i);
		cr_assert_not_null(strstr(res.errmsg, "magic"), "%s", res.errmsg);
		cr_assert_eq(res.got.records.n, 0);
		corrupt_copy[i] = saved;
	}
	/* Not a trace at all. */
	static const char text[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	struct read_result res;
	read_bytes((const unsigned char *)text, sizeof(text) - 1, &res);
	cr_assert_eq(res.ret, -EINVAL);
}

Test(trace, other_versions_and_header_sizes)
{
	struct recording r;
	size_t len;
	written(&r, &len);
	static const struct { size_t offset; uint32_t value; const char *what; } fields[] = {
		{ offsetof(struct cs_trace_header, file_version), CS_TRACE_VERSION + 1, "file version" },
		{ offsetof(struct cs_trace_header, file_version), 0, "file version 0" },
		{ offsetof(struct cs_trace_header, wire_version), CS_WIRE_VERSION + 1, "wire version" },
		{ offsetof(struct cs_trace_header, wire_version), CS_WIRE_VERSION_MIN - 1, "wire version below the oldest" },
		{ offsetof(struct cs_trace_header, header_size), sizeof(struct cs_trace_header) + 8, "header size" },
	};
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		unsigned char copy[8192];
		memcpy(copy, corrupt_copy, len);
		memcpy(copy + fields[i].offset, &fields[i].value, sizeof(uint32_t));
		struct read_result res;
		read_bytes(copy, len, &res);
		cr_assert_eq(res.ret, -EINVAL, "%s: %d", fields[i].what, res.ret);
		cr_assert_neq(res.errmsg[0], '\0', "%s: no message", fields[i].what);
		cr_assert_eq(res.got.records.n, 0, "%s: records delivered", fields[i].what);
	}
}

/*
 * The sample trace as an older wire version wrote it, in out: each record
 * that has grown since (a request, the close) without the fields added
 * since. Returns its length.
 */
static size_t as_wire_version(uint32_t version, unsigned char *out, struct recording *r)
{
	size_t len;
	const unsigned char *bytes = written(r, &len);
	size_t from = 0, to = 0;
	for (size_t k = 0; k < r->n; k++) {
		const size_t at = HEADERS_SIZE + r->offset[k];
		struct cs_event_header hdr;
		memcpy(&hdr, bytes + at, sizeof(hdr));
		memcpy(out + to, bytes + from, at - from);
		to += at - from;
		const size_t old_size = cs_record_size_in(hdr.type, version);
		memcpy(out + to, bytes + at, old_size);
		uint16_t size16 = (uint16_t)old_size;
		memcpy(out + to + offsetof(struct cs_event_header, size), &size16, sizeof(size16));
		to += old_size;
		from = at + r->len[k];
	}
	memcpy(out + to, bytes + from, len - from);
	to += len - from;
	memcpy(out + offsetof(struct cs_trace_header, wire_version), &version, sizeof(version));
	return to;
}

Test(trace, an_older_wire_version_reads)
{
	/* Wire versions add record types and grow records at their end: older traces read whole. */
	const uint32_t versions[] = { CS_WIRE_VERSION_MIN, 8, 13, 15, 16, 17, 18, 19 };
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		struct recording r;
		unsigned char copy[8192];
		size_t len = as_wire_version(versions[v], copy, &r);
		cr_assert_lt(len, sizeof(corrupt_copy) - sizeof(struct cs_ev_conn_close), "the sample grew");
		struct read_result res;
		read_bytes(copy, len, &res);
		cr_assert_eq(res.ret, 0, "wire version %u: %d (%s)", versions[v], res.ret, res.errmsg);
		cr_assert(res.info.has_summary, "wire version %u: the summary after the grown record", versions[v]);
		/* Delivered at today's size, the added field 0: as the sample, which has it 0. */
		expect_records(&res.got.records, &r, r.n);
	}
}

Test(trace, a_record_at_an_older_size_in_a_current_trace_is_corrupt)
{
	struct recording r;
	unsigned char copy[8192];
	size_t len = as_wire_version(8, copy, &r);
	uint32_t current = CS_WIRE_VERSION;
	memcpy(copy + offsetof(struct cs_trace_header, wire_version), &current, sizeof(current));
	struct read_result res;
	read_bytes(copy, len, &res);
	cr_assert_eq(res.ret, -EINVAL, "%d", res.ret);
	/* The first record that has grown since: everything before it read. */
	size_t first_grown = 0;
	for (struct cs_event_header hdr; first_grown < r.n; first_grown++) {
		memcpy(&hdr, r.bytes + r.offset[first_grown], sizeof(hdr));
		if (r.len[first_grown] != cs_record_size_in(hdr.type, 8))
			break;
	}
	cr_assert_lt(first_grown, r.n, "the sample has a record grown since version 8");
	expect_offset_named(res.errmsg, HEADERS_SIZE + r.offset[first_grown]);
	expect_records(&res.got.records, &r, first_grown);
}

Test(trace, flipped_bits_in_a_record_type_or_size)
{
	struct recording r;
	size_t len;
	const unsigned char *bytes = written(&r, &len);
	const size_t header = HEADERS_SIZE;
	const size_t summary_at = header + r.offset[r.n - 1] + r.len[r.n - 1];
	int checked = 0;

	for (size_t k = 0; k <= r.n; k++) { /* every record, then the summary */
		size_t at = k < r.n ? header + r.offset[k] : summary_at;
		size_t field_at = at + offsetof(struct cs_event_header, type); /* type, then size */
		for (size_t bit = 0; bit < 32; bit++) {
			memcpy(corrupt_copy, bytes, len);
			corrupt_copy[field_at + bit / 8] ^= (unsigned char)(1u << (bit % 8));
			struct cs_event_header hdr;
			memcpy(&hdr, corrupt_copy + at, sizeof(hdr));
			/* Some types differ by one bit and share a size: undetectable, skip them. */
			size_t size = hdr.type == CS_TRACE_SUMMARY_TYPE ? sizeof(struct cs_trace_summary)
									: cs_record_size(hdr.type);
			if (size && size == hdr.size)
				continue;
			struct read_result res;
			read_bytes(corrupt_copy, len, &res);
			cr_assert_eq(res.ret, -EINVAL, "record %zu, bit %zu: %d %s", k, bit, res.ret, res.errmsg);
			expect_offset_named(res.errmsg, at);
			expect_records(&res.got.records, &r, k);
			cr_assert_not(res.info.has_summary);
			checked++;
		}
	}
	cr_assert_geq(checked, 6 * 16 + 6 * 12, "%d corruptions checked", checked);
}

Test(trace, data_after_the_summary)
{
	struct recording r;
	size_t len;
	const unsigned char *bytes = written(&r, &len);
	/* A whole record, a second summary, or any stray bytes after the summary. */
	struct cs_trace_summary summary;
	memcpy(&summary, bytes + len - sizeof(summary), sizeof(summary));
	const struct { const void *data; size_t len; const char *what; } extra[] = {
		{ r.bytes, r.len[0], "a record" },
		{ &summary, sizeof(summary), "a second summary" },
		{ r.bytes, 1, "one byte" },
		{ r.bytes, sizeof(struct cs_event_header) - 1, "15 bytes" },
		{ r.bytes, sizeof(struct cs_event_header) + 3, "19 bytes" },
	};
	for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
		memcpy(corrupt_copy, bytes, len);
		memcpy(corrupt_copy + len, extra[i].data, extra[i].len);
		struct read_result res;
		read_bytes(corrupt_copy, len + extra[i].len, &res);
		cr_expect_eq(res.ret, -EINVAL, "%s after the summary: %d \"%s\"", extra[i].what, res.ret,
			     res.errmsg);
		if (res.ret == -EINVAL)
			expect_offset_named(res.errmsg, len);
		expect_records(&res.got.records, &r, r.n);
	}
}

/* ---- creating the file --------------------------------------------------------------- */

static mode_t file_mode(const char *file)
{
	struct stat st;
	cr_assert_eq(lstat(file, &st), 0, "%s: %s", file, strerror(errno));
	return st.st_mode;
}

Test(trace, created_private)
{
	mode_t old = umask(0);
	struct cs_trace_writer w;
	int ret = cs_trace_create(&w, path, "x", 1, NULL);
	umask(old);
	cr_assert_eq(ret, 0);
	cr_assert_eq(cs_trace_finish(&w, &sample_meta), 0);
	mode_t mode = file_mode(path);
	cr_assert(S_ISREG(mode));
	cr_assert_eq(mode & 07777, 0600, "mode %o", mode & 07777);
}

Test(trace, refuses_to_follow_a_symlink)
{
	char real[160], link[160];
	snprintf(real, sizeof(real), "%s/precious", dir);
	snprintf(link, sizeof(link), "%s/trace-link", dir);
	FILE *f = fopen(real, "w");
	fputs("keep me", f);
	fclose(f);
	cr_assert_eq(symlink(real, link), 0);

	struct cs_trace_writer w;
	int ret = cs_trace_create(&w, link, "x", 1, NULL);
	cr_assert_eq(ret, -ELOOP, "create through a symlink: %d", ret);
	cr_assert_null(w.file);
	size_t len;
	const unsigned char *bytes = slurp(real, &len);
	cr_assert_eq(len, 7);
	cr_assert_eq(memcmp(bytes, "keep me", 7), 0, "the link's target was written");

	/* A dangling link must not create its target either. */
	char missing[160], dangling[160];
	snprintf(missing, sizeof(missing), "%s/not-there", dir);
	snprintf(dangling, sizeof(dangling), "%s/dangling", dir);
	cr_assert_eq(symlink(missing, dangling), 0);
	cr_assert_eq(cs_trace_create(&w, dangling, "x", 1, NULL), -ELOOP);
	cr_assert_neq(access(missing, F_OK), 0, "created through a dangling symlink");
}

Test(trace, refuses_what_is_not_a_regular_file)
{
	struct cs_trace_writer w;
	cr_assert_eq(cs_trace_create(&w, dir, "x", 1, NULL), -EISDIR);
	cr_assert_eq(cs_trace_create(&w, "/dev/null", "x", 1, NULL), -EINVAL);
	cr_assert_null(w.file);
	char missing_dir[160];
	snprintf(missing_dir, sizeof(missing_dir), "%s/no/such/dir/trace", dir);
	cr_assert_eq(cs_trace_create(&w, missing_dir, "x", 1, NULL), -ENOENT);
}

/* The kernel function a thread sleeps in (/proc/PID/wchan), or "" if it runs or has gone. */
static void wchan_of(pid_t pid, char *out, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
	out[0] = '\0';
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	if (!fgets(out, (int)len, f))
		out[0] = '\0';
	fclose(f);
}

Test(trace, refuses_a_fifo_without_blocking)
{
	/*
	 * Opening a FIFO for writing blocks until a reader comes: try it in a
	 * child, and tell blocked from slow by where the child sleeps (the
	 * kernel's wait_for_partner, in the FIFO's open), not by a deadline:
	 * a fork of a sanitized test process on a busy machine takes its time.
	 */
	char fifo[160];
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		struct cs_trace_writer w;
		int ret = cs_trace_create(&w, fifo, "x", 1, NULL);
		_exit(ret < 0 ? (-ret & 0x7f) : 100);
	}
	int status = 0;
	pid_t done = 0;
	bool blocked = false;
	for (int i = 0; i < 6000 && !done && !blocked; i++) { /* a minute at most: a hung child is a failure too */
		done = waitpid(child, &status, WNOHANG);
		if (done)
			break;
		char wchan[64];
		wchan_of(child, wchan, sizeof(wchan));
		blocked = strcmp(wchan, "wait_for_partner") == 0;
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	}
	if (!done) {
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
		cr_assert_fail("cs_trace_create %s on a FIFO (open without O_NONBLOCK) instead of refusing it",
			       blocked ? "blocked in its open" : "did not return in a minute");
	}
	cr_assert(WIFEXITED(status));
	cr_assert_neq(WEXITSTATUS(status), 100, "a FIFO was accepted as a trace file");
}

Test(trace, overwrites_an_old_trace)
{
	struct recording r = sample_records();
	write_trace(path, &r, "port 8080", &sample_meta);
	struct recording shorter = r;
	shorter.n = 1;
	write_trace(path, &shorter, "port 8080", &sample_meta);
	size_t len;
	const unsigned char *bytes = slurp(path, &len);
	struct read_result res;
	read_bytes(bytes, len, &res);
	cr_assert_eq(res.ret, 0, "%s", res.errmsg);
	expect_records(&res.got.records, &r, 1);
	cr_assert(res.info.has_summary);
}
