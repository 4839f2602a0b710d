// SPDX-License-Identifier: BSD-2-Clause
/*
 * The slowest requests one by one (--slowest N): when each ended, on the
 * wall clock, who sent it, which listener and thread served it, which of
 * its connection's requests it was, and where its time went. Enough to
 * find it in the server's access log. They come from the engine's kept
 * exemplars (the CS_EXEMPLARS slowest of the run).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "json.h"
#include "report.h"
#include "report_internal.h"
#include "report_view.h"

static int slower_first(const void *a, const void *b)
{
	const struct cs_exemplar *x = a, *y = b;
	return x->split.total_ns < y->split.total_ns ? 1 : x->split.total_ns > y->split.total_ns ? -1 : 0;
}

/* The n slowest kept, slowest first, in a new array (NULL: none, or out of memory). */
static struct cs_exemplar *slowest(const struct cs_report_view *view, size_t want, size_t *n)
{
	size_t kept = view->requests->exemplar_count;
	*n = want < kept ? want : kept;
	if (!*n)
		return NULL;
	struct cs_exemplar *sorted = malloc(kept * sizeof(*sorted));
	if (!sorted) {
		*n = 0;
		return NULL;
	}
	memcpy(sorted, view->requests->exemplars, kept * sizeof(*sorted));
	qsort(sorted, kept, sizeof(*sorted), slower_first);
	return sorted;
}

/*
 * "127.0.0.1" or "::1"; "?" when the connection's accept was not seen. The
 * wire stores IPv4 addresses IPv4-mapped (::ffff:a.b.c.d): shown as IPv4.
 */
static void peer_text(const struct cs_exemplar *e, char *buf, size_t len)
{
	if (e->peer_family)
		cs_format_addr(buf, len, e->peer_addr);
	else
		snprintf(buf, len, "?");
}

/* The upstream a slow request waited on, or NULL. */
static const struct cs_upstream_stats *upstream_of(const struct cs_report_view *view, const struct cs_exemplar *e)
{
	uint16_t u = e->upstream.upstream;
	return u && u <= view->upstream_count ? &view->upstreams[u - 1] : NULL;
}

/* "    upstream 127.0.0.1:8081: connect 0 ns, first byte 30.0 ms, read 40 us" */
static void upstream_text(FILE *out, const struct cs_report_view *view, const struct cs_exemplar *e)
{
	const struct cs_upstream_stats *u = upstream_of(view, e);
	if (!u)
		return;
	char endpoint[CS_UPSTREAM_NAME_LEN], queue[32], connect[32], wait[32], read[32];
	cs_upstream_name(endpoint, sizeof(endpoint), u);
	cs_format_duration(queue, sizeof(queue), e->upstream.queue_ns);
	cs_format_duration(connect, sizeof(connect), e->upstream.connect_ns);
	cs_format_duration(wait, sizeof(wait), e->upstream.wait_ns);
	cs_format_duration(read, sizeof(read), e->upstream.read_ns);
	fprintf(out, "    upstream %s: %s%s%sconnect %s, first byte %s, read %s%s\n", endpoint,
		e->upstream.queue_ns ? "waiting for a connection " : "", e->upstream.queue_ns ? queue : "",
		e->upstream.queue_ns ? ", " : "", connect, wait, read,
		e->upstream.loop_blocked ? " (of its wait for its loop, blocked on it)" : "");
}

static json_t *upstream_value(const struct cs_report_view *view, const struct cs_exemplar *e)
{
	const struct cs_upstream_stats *u = upstream_of(view, e);
	if (!u)
		return json_null();
	char address[CS_UPSTREAM_NAME_LEN];
	cs_upstream_address(address, sizeof(address), u);
	return json_pack("{s:o,s:I,s:o,s:o,s:o,s:o,s:b}", "address", cs_json_text(address), "port", (json_int_t)u->port,
			 "connection_wait_us", cs_json_us(e->upstream.queue_ns), "connect_us",
			 cs_json_us(e->upstream.connect_ns), "wait_us", cs_json_us(e->upstream.wait_ns), "read_us",
			 cs_json_us(e->upstream.read_ns), "loop_blocked", e->upstream.loop_blocked != 0);
}

static const char *comm_of(const struct cs_report_view *view, uint32_t tid)
{
	const struct cs_thread_stats *t = cs_u64map_get(view->threads, tid);
	return t && t->comm[0] ? t->comm : "?";
}

void cs_report_slowest_text(FILE *out, const struct cs_report_view *view)
{
	const struct cs_report_meta *meta = view->meta;
	size_t n;
	struct cs_exemplar *list = slowest(view, meta->slowest, &n);
	fprintf(out, "slowest %zu request(s) (of the %zu slowest kept)\n", n, view->requests->exemplar_count);
	for (size_t i = 0; i < n; i++) {
		const struct cs_exemplar *e = &list[i];
		char when[48], total[32], peer[64];
		cs_run_stamp_format_at(&meta->stamp, e->end_ns, when, sizeof(when));
		cs_format_duration(total, sizeof(total), e->split.total_ns);
		peer_text(e, peer, sizeof(peer));
		fprintf(out, "  %s %9s  %s:%u -> :%u  tid %u (%s)  %s%srequest #%u on its connection", when, total, peer,
			e->peer_port, e->port, e->reader_tid, comm_of(view, e->reader_tid),
			e->protocol ? cs_protocol_names[e->protocol - 1] : "", e->protocol ? " " : "", e->index + 1);
		if (e->commands > 1)
			fprintf(out, ", %u pipelined commands read at once, each this long", e->commands);
		fputs("\n    ", out);
		/* Its causes, largest first. */
		bool used[CS_CAUSE_COUNT] = { false };
		for (int shown = 0; shown < CS_CAUSE_COUNT; shown++) {
			int top = -1;
			for (int c = 0; c < CS_CAUSE_COUNT; c++)
				if (!used[c] && e->split.cause_ns[c] && (top < 0 || e->split.cause_ns[c] > e->split.cause_ns[top]))
					top = c;
			if (top < 0)
				break;
			used[top] = true;
			char part[32];
			cs_format_duration(part, sizeof(part), e->split.cause_ns[top]);
			fprintf(out, "%s%s %s", shown ? ", " : "", cs_cause_names[top], part);
		}
		fputc('\n', out);
		upstream_text(out, view, e);
	}
	fputc('\n', out);
	free(list);
}

json_t *cs_report_slowest_value(const struct cs_report_view *view)
{
	const struct cs_report_meta *meta = view->meta;
	size_t n;
	struct cs_exemplar *list = slowest(view, meta->slowest, &n);
	json_t *out = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct cs_exemplar *e = &list[i];
		char when[48], peer[64];
		cs_run_stamp_format_at(&meta->stamp, e->end_ns, when, sizeof(when));
		peer_text(e, peer, sizeof(peer));
		json_t *causes = json_object();
		for (int c = 0; c < CS_CAUSE_COUNT; c++)
			json_object_set_new(causes, cs_cause_names[c], cs_json_us(e->split.cause_ns[c]));
		json_t *o = json_pack("{s:o,s:o,s:o,s:I,s:I,s:I,s:o,s:I,s:o}", "end_utc",
				      strcmp(when, "unknown") ? cs_json_text(when) : json_null(), "total_us",
				      cs_json_us(e->split.total_ns), "peer", cs_json_text(peer), "peer_port",
				      (json_int_t)e->peer_port, "port", (json_int_t)e->port, "tid", (json_int_t)e->reader_tid,
				      "comm", cs_json_text(comm_of(view, e->reader_tid)), "index", (json_int_t)e->index,
				      "causes_us", causes);
		json_object_set_new(o, "upstream", upstream_value(view, e));
		json_object_set_new(o, "commands", json_integer(e->commands));
		json_object_set_new(o, "protocol",
				    e->protocol ? cs_json_text(cs_protocol_names[e->protocol - 1]) : json_null());
		json_array_append_new(out, o);
	}
	free(list);
	return out;
}
