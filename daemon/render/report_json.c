// SPDX-License-Identifier: BSD-2-Clause
/* The JSON rendering of the engine's statistics (report.c: the text one). */
#include <inttypes.h>
#include <string.h>

#include "report.h"
#include "attrib.h"
#include "diagnose.h"
#include "report_internal.h"

/* Length of the valid UTF-8 sequence at s, or 0. */
static size_t utf8_sequence(const unsigned char *s)
{
	size_t len;
	uint32_t min;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, min = 0x80;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, min = 0x800;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, min = 0x10000;
	else
		return 0;
	uint32_t code = s[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		code = (code << 6) | (s[i] & 0x3f);
	}
	if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
		return 0;
	return len;
}

/*
 * A JSON string: control characters escaped, valid UTF-8 kept as it is,
 * invalid bytes (a name cut mid-character) replaced by U+FFFD.
 */
void cs_json_write_string(FILE *out, const char *text)
{
	const unsigned char *s = (const unsigned char *)text;
	fputc('"', out);
	while (*s) {
		unsigned char c = *s;
		if (c == '"' || c == '\\') {
			fprintf(out, "\\%c", c);
			s++;
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(out, "\\u%04x", c);
			s++;
		} else if (c < 0x80) {
			fputc(c, out);
			s++;
		} else {
			size_t len = utf8_sequence(s);
			if (len) {
				fwrite(s, 1, len, out);
				s += len;
			} else {
				fputs("\\ufffd", out);
				s++;
			}
		}
	}
	fputc('"', out);
}

struct thread_json_ctx {
	FILE *out;
	int count;
};

static void json_thread(uint64_t key, void *value, void *ctx_ptr);

/* {"p50":..,"p90":..,"p99":..,"p999":..,"max":..} in microseconds. */
static void json_percentiles_us(FILE *out, const struct cs_hist *hist)
{
	fputc('{', out);
	for (size_t i = 0; i < PERCENTILE_COUNT; i++)
		fprintf(out, "\"%s\":%.3f,", report_percentile_names[i],
			(double)cs_hist_percentile(hist, report_percentiles[i]) / 1e3);
	fprintf(out, "\"max\":%.3f,\"count\":%" PRIu64 "}", (double)hist->max / 1e3, hist->count);
}

/*
 * The histogram itself, its non-empty buckets as [lowest_us, highest_us,
 * count]: two reports can then be compared at any percentile
 * (connscope diff), not only at the ones printed.
 */
static void json_buckets_us(FILE *out, const struct cs_hist *hist)
{
	fputs("[", out);
	const char *sep = "";
	for (size_t b = 0; b < CS_HIST_BUCKETS; b++) {
		if (!hist->buckets[b])
			continue;
		fprintf(out, "%s[%.3f,%.3f,%" PRIu64 "]", sep, (double)cs_hist_bucket_lowest(b) / 1e3,
			(double)cs_hist_bucket_highest(b) / 1e3, hist->buckets[b]);
		sep = ",";
	}
	fputs("]", out);
}

static void json_listener(FILE *out, const struct cs_listener_stats *l, const struct cs_report_meta *meta)
{
	fprintf(out, "{\"port\":%u,\"sockets\":%zu,\"accepts\":%" PRIu64 ",\"accepts_per_s\":%.3f,"
		"\"accepts_partial\":%" PRIu64 ",\"accept_errors\":%" PRIu64 ",\"accept_wait_us\":",
		l->port, l->socket_count, l->accepts, per_second(l->accepts, meta->duration_s),
		l->accepts_unmatched, l->accept_errors);
	json_percentiles_us(out, l->accept_wait_ns);
	fprintf(out, ",\"backlog_max\":%u,\"backlog_limit\":%u,\"backlog_full_share\":%.4f,"
		"\"backlog_nonempty_share\":%.4f,\"backlog_samples\":%" PRIu64 ",\"drops\":%" PRIu64
		",\"eagain\":%" PRIu64 ",",
		l->backlog_max, l->backlog_limit, share(l->backlog_full_samples, l->backlog_samples),
		share(l->backlog_nonempty_samples, l->backlog_samples), l->backlog_samples,
		cs_listener_drops(l), l->eagain);
	fprintf(out, "\"handshakes\":{\"retransmitted\":%" PRIu64 ",\"delayed_1s\":%" PRIu64
		",\"failed\":%" PRIu64 ",\"extra_us\":", l->handshakes_retransmitted,
		l->handshakes_delayed_1s, l->handshakes_failed);
	json_percentiles_us(out, l->handshake_extra_ns);
	const struct cs_worker_stats *busiest = cs_listener_busiest_worker(l);
	fprintf(out, "},\"busiest_worker_share\":%.4f,\"workers\":[",
		busiest ? share(busiest->accepts, l->accepts) : 0.0);
	for (size_t i = 0; i < l->worker_count; i++) {
		const struct cs_worker_stats *w = &l->workers[i];
		fprintf(out, "%s{\"pid\":%u,\"tid\":%u,\"comm\":", i ? "," : "", w->pid, w->tid);
		cs_json_write_string(out, w->comm);
		fprintf(out, ",\"accepts\":%" PRIu64 ",\"eagain\":%" PRIu64 ",\"errors\":%" PRIu64 "}",
			w->accepts, w->eagain, w->errors);
	}
	fputs("]}", out);
}

/* ,"roles":["acceptor",...]: what the thread does, from its behaviour. */
void cs_json_roles(FILE *out, const struct cs_thread_stats *t)
{
	unsigned roles = cs_thread_roles(t);
	fputs(",\"roles\":[", out);
	for (int i = 0, shown = 0; i < CS_ROLE_COUNT; i++)
		if (roles & (1u << i))
			fprintf(out, "%s\"%s\"", shown++ ? "," : "", cs_role_names[i]);
	fputc(']', out);
}
static void json_thread(uint64_t key, void *value, void *ctx_ptr)
{
	(void)key;
	struct thread_json_ctx *ctx = ctx_ptr;
	const struct cs_thread_stats *t = value;
	fprintf(ctx->out, "%s{\"tid\":%u,\"pid\":%u,\"comm\":", ctx->count++ ? "," : "", t->tid, t->tgid);
	cs_json_write_string(ctx->out, t->comm);
	/* Only what a runtime named (a JVM's threads): null for the others. */
	fputs(",\"java_name\":", ctx->out);
	if (t->runtime_name[0])
		cs_json_write_string(ctx->out, t->runtime_name);
	else
		fputs("null", ctx->out);
	fprintf(ctx->out, ",\"requests\":%" PRIu64 ",\"runq_total_us\":%.3f,\"runq_max_us\":%.3f",
		t->requests, (double)t->runq_total_ns / 1e3, (double)t->runq_max_ns / 1e3);
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		fprintf(ctx->out, ",\"%s_us\":%.3f", cs_cause_names[c], (double)t->cause_ns[c] / 1e3);
	cs_json_roles(ctx->out, t);
	fprintf(ctx->out, ",\"accepts\":%" PRIu64 ",\"ready_polls\":%" PRIu64 ",\"reads_own\":%" PRIu64
		",\"reads_handed\":%" PRIu64 ",\"handed_out\":%" PRIu64 ",\"reads_blocking\":%" PRIu64 "}",
		t->accepts, t->ready_polls, t->reads_own, t->reads_handed, t->handed_out, t->reads_blocking);
}

static void json_connection_limit(FILE *out, const struct cs_conditions *conditions)
{
	const typeof(conditions->connection_limit) *c = &conditions->connection_limit;
	fprintf(out, "\"connection_limit\":{\"flagged\":%s,\"port\":%u,\"open_connections\":%u,"
		"\"plateau_s\":%.3f,\"blocked_share\":", c->flagged ? "true" : "false", c->port,
		c->open_connections, c->plateau_s);
	if (c->blocked_share >= 0)
		fprintf(out, "%.4f,\"on_cpu_share\":%.4f", c->blocked_share, c->on_cpu_share);
	else
		fputs("null,\"on_cpu_share\":null", out); /* no CPU time in this trace */
	fprintf(out, ",\"handler_share\":%.4f,\"waits\":%" PRIu64 ",\"queued_waits\":%" PRIu64
		",\"wait_share\":%.4f,\"accept_wait_p99_us\":%.3f,\"freed_by_idle_close\":%" PRIu64 ",\"freed_by_client\":%" PRIu64
		",\"freed_other\":%" PRIu64 "},", c->handler_share, c->waits, c->queued_waits,
		c->wait_share, c->accept_wait_p99_us, c->freed_by_idle_close, c->freed_by_client, c->freed_other);
}

static void json_requests(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta)
{
	const struct cs_request_stats *r = &engine->requests;
	struct cs_tail tail;
	struct cs_conditions c;
	cs_compute_tail(engine, tail_percentile(meta), &tail);
	cs_compute_conditions(engine, meta, &c);

	fprintf(out, ",\"requests\":%" PRIu64 ",\"requests_unanswered\":%" PRIu64
		",\"requests_partial\":%" PRIu64 ",\"connections\":%" PRIu64 ",\"latency_us\":",
		r->requests, r->unanswered, r->partial, r->first_on_connection);
	json_percentiles_us(out, r->latency_ns);
	fputs(",\"latency_buckets_us\":", out);
	json_buckets_us(out, r->latency_ns);
	fprintf(out, ",\"tail\":{\"percentile\":%g,\"threshold_us\":%.3f,\"requests\":%" PRIu64
		",\"causes\":[", tail.percentile, (double)tail.threshold_ns / 1e3, tail.requests);
	int shown = 0;
	for (int i = 0; i < CS_CAUSE_COUNT; i++) {
		const struct cs_tail_cause *cause = &tail.causes[i];
		if (!tail.requests)
			break;
		fprintf(out, "%s{\"cause\":\"%s\",\"share\":%.4f,\"time_us\":%.3f,\"requests\":%" PRIu64
			",\"evidence\":", shown++ ? "," : "", cs_cause_names[cause->cause], cause->share,
			(double)cause->ns / 1e3, cause->requests);
		cs_json_write_string(out, cause->evidence);
		fputc('}', out);
	}
	fprintf(out, "]},\"conditions\":{");
	fprintf(out, "\"non_persistent\":{\"flagged\":%s,\"requests_per_connection\":%.3f,"
		"\"setup_share\":%.4f,\"setup_cost_us\":%.3f,\"median_latency_us\":%.3f},",
		c.non_persistent.flagged ? "true" : "false", c.non_persistent.requests_per_connection,
		c.non_persistent.setup_share, c.non_persistent.setup_cost_us, c.non_persistent.median_latency_us);
	fprintf(out, "\"idle_timeout\":{\"flagged\":%s,\"server_idle_closes\":%" PRIu64
		",\"inferred_timeout_ms\":%.3f,\"reconnects\":%" PRIu64 ",\"keepalive_race_resets\":%" PRIu64 "},",
		c.idle_timeout.flagged ? "true" : "false", c.idle_timeout.server_idle_closes,
		c.idle_timeout.inferred_timeout_ms, c.idle_timeout.reconnects, c.idle_timeout.keepalive_race_resets);
	fprintf(out, "\"listen_overflow\":{\"flagged\":%s,\"drops\":%" PRIu64 ",\"delayed_connections\":%" PRIu64
		",\"failed_connections\":%" PRIu64 "},", c.listen_overflow.flagged ? "true" : "false",
		c.listen_overflow.drops, c.listen_overflow.delayed_connections, c.listen_overflow.failed_connections);
	fprintf(out, "\"accept_contention\":{\"flagged\":%s,\"acceptor_bottleneck\":%s,\"unfair\":%s,"
		"\"thundering_herd\":%s,\"busiest_worker_share\":%.4f,\"eagain\":%" PRIu64
		",\"accept_wait_p99_us\":%.3f},", c.accept_contention.flagged ? "true" : "false",
		c.accept_contention.acceptor_bottleneck ? "true" : "false", c.accept_contention.unfair ? "true" : "false",
		c.accept_contention.thundering_herd ? "true" : "false", c.accept_contention.busiest_worker_share,
		c.accept_contention.eagain, c.accept_contention.accept_wait_p99_us);
	json_connection_limit(out, &c);
	fprintf(out, "\"cpu_saturation\":{\"flagged\":%s,\"runq_total_us\":%.3f,\"top_tid\":%u,\"top_comm\":",
		c.cpu_saturation.flagged ? "true" : "false", (double)c.cpu_saturation.runq_total_ns / 1e3,
		c.cpu_saturation.top_tid);
	cs_json_write_string(out, c.cpu_saturation.top_comm);
	fprintf(out, ",\"top_runq_us\":%.3f,\"top_runq_share\":%.4f,\"runq_max_us\":%.3f},",
		(double)c.cpu_saturation.top_runq_ns / 1e3, c.cpu_saturation.top_runq_share,
		(double)c.cpu_saturation.runq_max_ns / 1e3);
	fprintf(out, "\"pool_saturation\":{\"flagged\":%s,\"pool_threads\":%u,\"poller_tid\":%u,\"poller_comm\":",
		c.pool_saturation.flagged ? "true" : "false", c.pool_saturation.pool_threads, c.pool_saturation.poller_tid);
	cs_json_write_string(out, c.pool_saturation.poller_comm);
	fprintf(out, ",\"busy_share\":%.4f,\"tail_share\":%.4f,\"tail_wait_mean_us\":%.3f,\"wait_p99_us\":%.3f}",
		c.pool_saturation.busy_share, c.pool_saturation.tail_share, c.pool_saturation.tail_wait_mean_us,
		c.pool_saturation.wait_p99_us);
	fputs("},", out); /* end of conditions */
	fprintf(out, "\"lifecycle\":{\"closed_by_server\":%" PRIu64 ",\"closed_by_client\":%" PRIu64
		",\"aborted\":%" PRIu64 ",\"time_wait_created\":%" PRIu64 ",\"time_wait_now\":%" PRIu64
		",\"resets_sent\":%" PRIu64 ",\"resets_received\":%" PRIu64 ",\"lifetime_p50_ms\":%.3f"
		",\"lifetime_p99_ms\":%.3f,\"lifetime_max_ms\":%.3f}",
		c.lifecycle.closed_by_server, c.lifecycle.closed_by_client, c.lifecycle.aborted,
		c.lifecycle.time_wait_created, c.lifecycle.time_wait_now, c.lifecycle.resets_sent,
		c.lifecycle.resets_received, c.lifecycle.lifetime_p50_ms, c.lifecycle.lifetime_p99_ms,
		c.lifecycle.lifetime_max_ms);
	fprintf(out, ",\"threads\":[");
	struct thread_json_ctx ctx = { out, 0 };
	cs_u64map_each(&engine->threads, json_thread, &ctx);
	fputc(']', out);
}

/* When and where the run started: "run":{start_utc, host, kernel}, nulls when unknown (older traces). */
static void json_run_stamp(FILE *out, const struct cs_run_stamp *stamp)
{
	if (stamp->start_unix_ns <= 0) {
		fputs(",\"run\":{\"start_utc\":null,\"host\":null,\"kernel\":null}", out);
		return;
	}
	char started[48];
	cs_run_stamp_format_utc(stamp, started, sizeof(started));
	fprintf(out, ",\"run\":{\"start_utc\":\"%s\",\"host\":", started);
	cs_json_write_string(out, stamp->host);
	fputs(",\"kernel\":", out);
	cs_json_write_string(out, stamp->kernel);
	fputc('}', out);
}

void cs_report_json(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta)
{
	fputs("{\"target\":", out);
	cs_json_write_string(out, meta->target);
	json_run_stamp(out, &meta->stamp);
	if (meta->window_to_s > 0)
		fprintf(out, ",\"window\":{\"from_s\":%.3f,\"to_s\":%.3f}", meta->window_from_s, meta->window_to_s);
	if (meta->labels && meta->labels->netns_ino) {
		fprintf(out, ",\"target_labels\":{\"netns\":%" PRIu32 ",\"cgroup\":", meta->labels->netns_ino);
		cs_json_write_string(out, meta->labels->cgroup);
		fputs(",\"container\":", out);
		cs_json_write_string(out, meta->labels->container);
		fputc('}', out);
	}
	struct cs_conn_partial partial = cs_engine_partial(engine);
	fprintf(out, ",\"duration_s\":%.3f,\"events\":{\"received\":%" PRIu64 ",\"lost\":%" PRIu64
		",\"malformed\":%" PRIu64 ",\"table_full\":%" PRIu64 ",\"partial\":%" PRIu64
		",\"partial_accepts\":%" PRIu64 ",\"partial_requests\":%" PRIu64 ",\"partial_closes\":%" PRIu64
		",\"evicted\":%" PRIu64 ",\"timed_out\":%" PRIu64 ",\"followed\":%zu,\"skipped\":%" PRIu64 "},",
		meta->duration_s, engine->totals.records, meta->events_lost, engine->totals.malformed,
		meta->table_full, partial.accepts + partial.requests + partial.closes, partial.accepts,
		partial.requests, partial.closes, engine->conns_evicted, engine->conns_timed_out,
		engine->conns.count, meta->probe_runs_skipped);
	if (meta->netstat.valid)
		fprintf(out, "\"kernel\":{\"listen_overflows\":%" PRIu64 ",\"listen_drops\":%" PRIu64
			",\"syncookies_sent\":%" PRIu64 "},", meta->netstat.listen_overflows,
			meta->netstat.listen_drops, meta->netstat.syncookies_sent);
	fputs("\"listeners\":[", out);
	for (size_t i = 0; i < engine->listener_count; i++) {
		if (i)
			fputc(',', out);
		json_listener(out, &engine->listeners[i], meta);
	}
	fputc(']', out);
	json_requests(out, engine, meta);
	fputs(",\"findings\":[", out);
	struct cs_finding findings[MAX_FINDINGS];
	size_t n = cs_diagnose(engine, meta, findings, MAX_FINDINGS);
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "%s{\"code\":", i ? "," : "");
		cs_json_write_string(out, findings[i].code);
		fprintf(out, ",\"port\":%u,\"text\":", findings[i].port);
		cs_json_write_string(out, findings[i].text);
		fputs(",\"advice\":", out);
		cs_json_write_string(out, findings[i].advice);
		fputc('}', out);
	}
	fputc(']', out);
	if (meta->slowest)
		cs_report_slowest_json(out, engine, meta);
	fputs("}\n", out);
}
