// SPDX-License-Identifier: BSD-2-Clause
/* Human and JSON renderings of the engine's statistics. */
#include <inttypes.h>
#include <string.h>

#include "report.h"

#define MAX_FINDINGS 32

static const double report_percentiles[] = { 50.0, 90.0, 99.0, 99.9 };
static const char *const report_percentile_names[] = { "p50", "p90", "p99", "p999" };
#define PERCENTILE_COUNT (sizeof(report_percentiles) / sizeof(report_percentiles[0]))

void cs_format_duration(char *buf, size_t len, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, len, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.0f us", (double)ns / 1e3);
	else if (ns < 100000000)
		snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.0f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", (double)ns / 1e9);
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

static double per_second(uint64_t count, double seconds)
{
	return seconds > 0 ? (double)count / seconds : 0.0;
}

/* ---- text ---------------------------------------------------------------- */

static void text_percentiles(FILE *out, const struct cs_hist *hist)
{
	char value[32];
	for (size_t i = 0; i < PERCENTILE_COUNT; i++) {
		cs_format_duration(value, sizeof(value), cs_hist_percentile(hist, report_percentiles[i]));
		fprintf(out, "  %s %s", i == PERCENTILE_COUNT - 1 ? "p99.9" : report_percentile_names[i], value);
	}
	cs_format_duration(value, sizeof(value), hist->max);
	fprintf(out, "  max %s\n", value);
}

static void text_workers(FILE *out, const struct cs_listener_stats *l)
{
	fprintf(out, "  %-11s %8s %8s %-16s %9s %7s %8s\n", "workers", "pid", "tid", "comm",
		"accepts", "share", "EAGAIN");
	for (size_t i = 0; i < l->worker_count; i++) {
		const struct cs_worker_stats *w = &l->workers[i];
		fprintf(out, "  %-11s %8u %8u %-16s %9" PRIu64 " %6.1f%% %8" PRIu64 "\n", "", w->pid,
			w->tid, w->comm, w->accepts, 100.0 * share(w->accepts, l->accepts), w->eagain);
	}
}

static void text_listener(FILE *out, const struct cs_listener_stats *l, const struct cs_report_meta *meta)
{
	fprintf(out, "listener :%u  (%zu socket%s, backlog limit %u)\n", l->port, l->socket_count,
		l->socket_count == 1 ? "" : "s", l->backlog_limit);
	fprintf(out, "  %-11s %" PRIu64 " (%.1f/s)   EAGAIN %" PRIu64 "   errors %" PRIu64, "accepts",
		l->accepts, per_second(l->accepts, meta->duration_s), l->eagain, l->accept_errors);
	if (l->accepts_unmatched)
		fprintf(out, "   partial %" PRIu64 " (queued before attach)", l->accepts_unmatched);
	fputc('\n', out);
	fprintf(out, "  %-11s", "accept wait");
	text_percentiles(out, l->accept_wait_ns);
	fprintf(out, "  %-11s max %u / limit %u   full %.1f%% of %" PRIu64 " samples   non-empty %.1f%%   "
		"mean %.1f\n", "backlog", l->backlog_max, l->backlog_limit,
		100.0 * share(l->backlog_full_samples, l->backlog_samples), l->backlog_samples,
		100.0 * share(l->backlog_nonempty_samples, l->backlog_samples),
		l->backlog_samples ? (double)l->backlog_sample_sum / (double)l->backlog_samples : 0.0);
	fprintf(out, "  %-11s %" PRIu64 " SYN(s) dropped on this listener", "drops", cs_listener_drops(l));
	if (meta->netstat.valid)
		fprintf(out, "  (kernel: ListenOverflows +%" PRIu64 ", ListenDrops +%" PRIu64
			", SyncookiesSent +%" PRIu64 ")", meta->netstat.listen_overflows,
			meta->netstat.listen_drops, meta->netstat.syncookies_sent);
	fputc('\n', out);
	if (l->handshakes_retransmitted) {
		char max[32] = "-";
		if (l->handshake_extra_ns->count)
			cs_format_duration(max, sizeof(max), l->handshake_extra_ns->max);
		fprintf(out, "  %-11s %" PRIu64 " local connect(s) retransmitted SYNs: %" PRIu64
			" delayed >= 1 s (max %s), %" PRIu64 " gave up\n", "handshakes",
			l->handshakes_retransmitted, l->handshakes_delayed_1s, max, l->handshakes_failed);
	}
	text_workers(out, l);
}

void cs_report_text(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta)
{
	fprintf(out, "connscope: %s, %.1f s, %" PRIu64 " events, %" PRIu64 " lost\n\n", meta->target,
		meta->duration_s, engine->totals.records, meta->events_lost);
	if (engine->listener_count == 0)
		fprintf(out, "no accept activity seen on the target's listeners\n");
	for (size_t i = 0; i < engine->listener_count; i++) {
		text_listener(out, &engine->listeners[i], meta);
		fputc('\n', out);
	}

	struct cs_finding findings[MAX_FINDINGS];
	size_t n = cs_diagnose(engine, meta, findings, MAX_FINDINGS);
	fprintf(out, "diagnosis\n");
	if (n == 0)
		fprintf(out, "  no accept-path problem found\n");
	for (size_t i = 0; i < n; i++) {
		if (findings[i].port)
			fprintf(out, "  ! :%u %s\n", findings[i].port, findings[i].text);
		else
			fprintf(out, "  ! %s\n", findings[i].text);
		if (findings[i].advice[0])
			fprintf(out, "      -> %s\n", findings[i].advice);
	}
	if (engine->totals.malformed || meta->table_full)
		fprintf(out, "\nnote: %" PRIu64 " malformed record(s), %" PRIu64
			" in-kernel table insert(s) failed\n", engine->totals.malformed, meta->table_full);
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

/* {"p50":..,"p90":..,"p99":..,"p999":..,"max":..} in microseconds. */
static void json_percentiles_us(FILE *out, const struct cs_hist *hist)
{
	fputc('{', out);
	for (size_t i = 0; i < PERCENTILE_COUNT; i++)
		fprintf(out, "\"%s\":%.3f,", report_percentile_names[i],
			(double)cs_hist_percentile(hist, report_percentiles[i]) / 1e3);
	fprintf(out, "\"max\":%.3f,\"count\":%" PRIu64 "}", (double)hist->max / 1e3, hist->count);
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
		json_string(out, w->comm);
		fprintf(out, ",\"accepts\":%" PRIu64 ",\"eagain\":%" PRIu64 ",\"errors\":%" PRIu64 "}",
			w->accepts, w->eagain, w->errors);
	}
	fputs("]}", out);
}

void cs_report_json(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta)
{
	fputs("{\"target\":", out);
	json_string(out, meta->target);
	fprintf(out, ",\"duration_s\":%.3f,\"events\":{\"received\":%" PRIu64 ",\"lost\":%" PRIu64
		",\"malformed\":%" PRIu64 ",\"table_full\":%" PRIu64 "},", meta->duration_s,
		engine->totals.records, meta->events_lost, engine->totals.malformed, meta->table_full);
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
	fputs("],\"findings\":[", out);
	struct cs_finding findings[MAX_FINDINGS];
	size_t n = cs_diagnose(engine, meta, findings, MAX_FINDINGS);
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "%s{\"code\":", i ? "," : "");
		json_string(out, findings[i].code);
		fprintf(out, ",\"port\":%u,\"text\":", findings[i].port);
		json_string(out, findings[i].text);
		fputs(",\"advice\":", out);
		json_string(out, findings[i].advice);
		fputc('}', out);
	}
	fputs("]}\n", out);
}
