// SPDX-License-Identifier: BSD-2-Clause
/*
 * trace_amplify: make a large, valid connscope trace out of a recorded one,
 * for the engine-speed benchmark.
 *
 *   trace_amplify IN OUT MIN_RECORDS
 *
 * Writes IN's records again and again until at least MIN_RECORDS are
 * written. Copy k is shifted in time by k times (IN's span + 1 s), and its
 * connections get socket cookies of their own (copy number in the top 16
 * bits, where kernel addresses are all ones), so the engine sees one long
 * run of distinct connections rather than the same ones over and over.
 * Listener sockets keep their cookies: it is the same server throughout.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connscope.h"
#include "trace_file.h"
#include "units.h"

struct records {
	unsigned char *data;
	size_t used, cap;
	uint64_t count;
	uint64_t first_ns, last_ns;
};

static int keep_record(void *ctx, const void *record, size_t len)
{
	struct records *r = ctx;
	if (r->used + len > r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 1 << 20;
		unsigned char *bigger = realloc(r->data, cap);
		if (!bigger)
			return -ENOMEM;
		r->data = bigger;
		r->cap = cap;
	}
	memcpy(r->data + r->used, record, len);
	r->used += len;
	r->count++;
	const struct cs_event_header *hdr = record;
	if (hdr->ts_ns && (!r->first_ns || hdr->ts_ns < r->first_ns))
		r->first_ns = hdr->ts_ns;
	if (hdr->ts_ns > r->last_ns)
		r->last_ns = hdr->ts_ns;
	return 0;
}

static void shift(__u64 *ns, uint64_t by)
{
	if (*ns)
		*ns += by;
}

static void recookie(__u64 *sk, uint64_t copy)
{
	if (*sk)
		*sk = (*sk & 0x0000ffffffffffffull) | ((0xffffull - copy) << 48);
}

/* One record of copy `copy`, shifted by `by` ns, in place. */
static void remap(void *record, uint64_t copy, uint64_t by)
{
	struct cs_event_header *hdr = record;
	shift(&hdr->ts_ns, by);
	switch (hdr->type) {
	case CS_EV_ACCEPT: {
		struct cs_ev_accept *ev = record;
		recookie(&ev->sk, copy);
		shift(&ev->established_ns, by);
		shift(&ev->enter_ns, by);
		break;
	}
	case CS_EV_HANDSHAKE: {
		struct cs_ev_handshake *ev = record;
		recookie(&ev->sk, copy);
		shift(&ev->syn_sent_ns, by);
		shift(&ev->last_syn_ns, by);
		shift(&ev->client_established_ns, by);
		break;
	}
	case CS_EV_REQUEST: {
		struct cs_ev_request *ev = record;
		recookie(&ev->sk, copy);
		shift(&ev->start_ns, by);
		shift(&ev->first_read_ns, by);
		shift(&ev->first_send_ns, by);
		shift(&ev->last_send_ns, by);
		shift(&ev->drain_end_ns, by);
		break;
	}
	case CS_EV_CONN_CLOSE: {
		struct cs_ev_conn_close *ev = record;
		recookie(&ev->sk, copy);
		shift(&ev->established_ns, by);
		shift(&ev->last_activity_ns, by);
		break;
	}
	case CS_EV_RESET: {
		struct cs_ev_reset *ev = record;
		recookie(&ev->sk, copy);
		break;
	}
	default: /* listener and thread samples, processes, ACK overflows: times only */
		break;
	}
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: trace_amplify IN OUT MIN_RECORDS\n");
		return 2;
	}
	uint64_t want = strtoull(argv[3], NULL, 10);
	FILE *in = fopen(argv[1], "rb");
	if (!in) {
		fprintf(stderr, "trace_amplify: cannot open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	struct records r = { 0 };
	static struct cs_trace_info info;
	char errmsg[256];
	int err = cs_trace_read(in, keep_record, &r, &info, errmsg, sizeof(errmsg));
	fclose(in);
	if ((err && err != -ENODATA) || !r.count) {
		fprintf(stderr, "trace_amplify: %s: %s\n", argv[1], err ? errmsg : "no records");
		return 1;
	}
	uint64_t period = r.last_ns - r.first_ns + NS_PER_SEC;
	uint64_t copies = (want + r.count - 1) / r.count;
	if (copies > 0xfffe) {
		fprintf(stderr, "trace_amplify: %" PRIu64 " copies needed, at most 65534\n", copies);
		return 1;
	}

	struct cs_trace_writer writer;
	err = cs_trace_create(&writer, argv[2], info.target, info.start_ns, &info.meta.stamp);
	if (err) {
		fprintf(stderr, "trace_amplify: cannot create %s: %s\n", argv[2], strerror(-err));
		return 1;
	}
	unsigned char record[4096];
	for (uint64_t copy = 0; copy < copies && !writer.error; copy++) {
		for (size_t off = 0; off < r.used;) {
			const struct cs_event_header *hdr = (const void *)(r.data + off);
			size_t len = hdr->size;
			memcpy(record, r.data + off, len);
			remap(record, copy, copy * period);
			cs_trace_write(&writer, record, len);
			off += len;
		}
	}
	uint64_t written = writer.records;
	struct cs_report_meta meta = info.meta;
	meta.target = info.target;
	meta.duration_s = (double)(copies * period) / 1e9;
	meta.events_lost *= copies;
	meta.table_full *= copies;
	meta.probe_runs_skipped *= copies;
	err = cs_trace_finish(&writer, &meta);
	if (err) {
		fprintf(stderr, "trace_amplify: writing %s failed: %s\n", argv[2], strerror(-err));
		return 1;
	}
	printf("trace_amplify: %" PRIu64 " records (%" PRIu64 " copies of %" PRIu64 ") to %s\n", written,
	       copies, r.count, argv[2]);
	return 0;
}
