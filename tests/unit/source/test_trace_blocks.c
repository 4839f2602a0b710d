// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of the trace reader's blocks (daemon/source/trace_file.c): it takes
 * the file CS_TRACE_READ_BLOCK_BYTES at a time and hands records on where
 * they lie, so records straddle its blocks' ends. Traces of several blocks,
 * shifted so that the first block's end falls between two records, in a
 * record's header and in its body, read back record for record; cut at any
 * byte near a multiple of the block's size, they give every whole record
 * before the cut and name the offset of the one cut short.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events.h"
#include "trace_file.h"

/*
 * Records of five sizes in turn, each with its own time (a record in the
 * wrong place shows), after shift resets that move them along the file.
 */
#define RECORDS 3000
#define SHIFTS 24      /* at least; more until the block's end fell in each place */
#define SHIFTS_MAX 512 /* the records' sizes are multiples of 8: a few dozen suffice */

struct big_trace {
	size_t shift;
	unsigned char *bytes; /* the whole file */
	size_t len;
	size_t at[RECORDS + 1]; /* each record's offset in the file, then the summary's */
	size_t longest;         /* bytes of the longest record */
};

static size_t append(unsigned char *out, size_t used, const void *record, size_t len)
{
	memcpy(out + used, record, len);
	return used + len;
}

/* Record i of a trace shifted by shift, in out; returns its length. */
static size_t record_of(size_t i, size_t shift, unsigned char *out)
{
	uint64_t ts_ns = 5 * SEC + i * US;
	switch (i < shift ? 1 : (i - shift) % 5) {
	case 0: {
		struct cs_ev_request ev = make_request((struct request_spec){
			.sk = 0x1000 + i, .port = 8080, .start_ns = ts_ns - 50 * US, .first_read_ns = ts_ns - 40 * US,
			.first_send_ns = ts_ns, .last_send_ns = ts_ns, .bytes_out = (uint32_t)i });
		return append(out, 0, &ev, sizeof(ev));
	}
	case 1: {
		struct cs_ev_reset ev = make_reset(ts_ns, 8080, CS_RESET_SENT, (uint32_t)i);
		return append(out, 0, &ev, sizeof(ev));
	}
	case 2: {
		struct cs_ev_thread_sample ev = make_thread_sample(ts_ns, (uint32_t)i, "worker", i, 1, 2);
		return append(out, 0, &ev, sizeof(ev));
	}
	case 3: {
		struct cs_ev_accept ev = make_accept((struct accept_spec){ .port = 8080, .tid = (uint32_t)i, .tgid = 6,
									   .established_ns = ts_ns - US, .ts_ns = ts_ns });
		return append(out, 0, &ev, sizeof(ev));
	}
	default: {
		struct cs_ev_conn_close ev = make_conn_close((struct close_spec){
			.sk = 0x1000 + i, .port = 8080, .ts_ns = ts_ns, .established_ns = ts_ns - MS, .requests = 1 });
		return append(out, 0, &ev, sizeof(ev));
	}
	}
}

/* Written by the trace writer, then read into memory whole. */
static void write_big_trace(struct big_trace *t, size_t shift)
{
	t->shift = shift;
	char dir[] = "/tmp/cs-trace-blocks-XXXXXX", path[64];
	cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/run.cstrace", dir);
	struct cs_trace_writer w;
	cr_assert_eq(cs_trace_create(&w, path, "port 8080", 4 * SEC, NULL), 0);
	size_t at = sizeof(struct cs_trace_header) + sizeof(struct cs_trace_run);
	t->longest = 0;
	for (size_t i = 0; i < RECORDS; i++) {
		unsigned char record[4096];
		size_t len = record_of(i, shift, record);
		cr_assert_eq(cs_trace_write(&w, record, len), 0);
		t->at[i] = at;
		at += len;
		t->longest = len > t->longest ? len : t->longest;
	}
	t->at[RECORDS] = at;
	const struct cs_report_meta meta = { .target = "port 8080", .duration_s = 1 };
	cr_assert_eq(cs_trace_finish(&w, &meta), 0);

	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f);
	t->bytes = malloc(at + 4096);
	cr_assert_not_null(t->bytes);
	t->len = fread(t->bytes, 1, at + 4096, f);
	fclose(f);
	unlink(path);
	rmdir(dir);
	cr_assert_eq(t->len, at + sizeof(struct cs_trace_summary));
	cr_assert_gt(t->len, 3 * CS_TRACE_READ_BLOCK_BYTES, "the trace spans several blocks");
}

/* Each record delivered is checked against the one written at its place. */
struct checked {
	size_t n;
	size_t shift;
};

static int check_record(void *ctx, const void *record, size_t len)
{
	struct checked *c = ctx;
	unsigned char want[4096];
	size_t want_len = record_of(c->n, c->shift, want);
	cr_assert_eq(len, want_len, "record %zu: %zu bytes, want %zu", c->n, len, want_len);
	cr_assert_eq(memcmp(record, want, len), 0, "record %zu differs", c->n);
	c->n++;
	return 0;
}

/* Read the first len bytes of the trace; returns cs_trace_read's answer. */
static int read_first(const struct big_trace *t, size_t len, struct checked *got, struct cs_trace_info *info,
		      char *errmsg, size_t errlen)
{
	memset(got, 0, sizeof(*got));
	got->shift = t->shift;
	FILE *f = fmemopen(t->bytes, len, "rb");
	cr_assert_not_null(f);
	int ret = cs_trace_read(f, check_record, got, info, errmsg, errlen);
	fclose(f);
	return ret;
}

/* Where the first block's end falls in the record across it: 0 between two records, else how far in. */
static size_t first_end_into_record(const struct big_trace *t)
{
	size_t k = 0;
	while (t->at[k + 1] <= CS_TRACE_READ_BLOCK_BYTES)
		k++;
	return CS_TRACE_READ_BLOCK_BYTES - t->at[k];
}

Test(trace_blocks, traces_of_several_blocks_read_back_record_for_record)
{
	static struct big_trace t;
	bool between = false, in_header = false, in_body = false;
	for (size_t shift = 0; shift < SHIFTS_MAX && (shift < SHIFTS || !(between && in_header && in_body)); shift++) {
		write_big_trace(&t, shift);
		size_t into = first_end_into_record(&t);
		between |= into == 0;
		in_header |= into > 0 && into < sizeof(struct cs_event_header);
		in_body |= into >= sizeof(struct cs_event_header);
		struct checked got;
		struct cs_trace_info info;
		char errmsg[256] = "";
		cr_assert_eq(read_first(&t, t.len, &got, &info, errmsg, sizeof(errmsg)), 0, "shift %zu: %s", shift,
			     errmsg);
		cr_assert_eq(got.n, RECORDS);
		cr_assert_eq(info.records, RECORDS);
		cr_assert(info.has_summary);
		cr_assert_str_eq(info.target, "port 8080");
		free(t.bytes);
	}
	cr_assert(between && in_header && in_body, "the shifts put the first block's end between records (%d), in a "
		  "header (%d) and in a body (%d)", between, in_header, in_body);
}

Test(trace_blocks, cut_at_any_byte_near_a_multiple_of_the_block)
{
	static struct big_trace t;
	write_big_trace(&t, 0);
	for (size_t end = CS_TRACE_READ_BLOCK_BYTES; end < t.len; end += CS_TRACE_READ_BLOCK_BYTES) {
		for (size_t cut = end - t.longest; cut <= end + t.longest; cut++) {
			size_t whole = 0; /* records wholly before the cut */
			while (whole < RECORDS && t.at[whole + 1] <= cut)
				whole++;
			struct checked got;
			struct cs_trace_info info;
			char errmsg[256] = "";
			int ret = read_first(&t, cut, &got, &info, errmsg, sizeof(errmsg));
			cr_assert_eq(got.n, whole, "cut at %zu: %zu records, want %zu", cut, got.n, whole);
			cr_assert_eq(info.records, whole);
			cr_assert_not(info.has_summary);
			if (cut == t.at[whole]) {
				cr_assert_eq(ret, 0, "cut at %zu (a record boundary): %d %s", cut, ret, errmsg);
				continue;
			}
			cr_assert_eq(ret, -ENODATA, "cut at %zu (inside the record at %zu): %d %s", cut, t.at[whole],
				     ret, errmsg);
			char needle[48];
			snprintf(needle, sizeof(needle), "offset %zu", t.at[whole]);
			cr_assert_not_null(strstr(errmsg, needle), "\"%s\" does not name %s", errmsg, needle);
		}
	}
	free(t.bytes);
}
