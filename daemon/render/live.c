// SPDX-License-Identifier: BSD-2-Clause
#include "live.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "report.h"

/*
 * live.conditions' order, which snapshot readers (connscope top, scripts)
 * may rely on: cpu_saturation before connection_limit, unlike the text
 * report and the metrics. Every condition appears once (the static
 * assertion counts them).
 */
static const enum cs_condition live_order[] = {
	CS_COND_NON_PERSISTENT, CS_COND_IDLE_TIMEOUT, CS_COND_LISTEN_OVERFLOW, CS_COND_ACCEPT_CONTENTION,
	CS_COND_CPU_SATURATION, CS_COND_CONNECTION_LIMIT, CS_COND_POOL_SATURATION,
};
_Static_assert(sizeof(live_order) / sizeof(live_order[0]) == CS_CONDITION_COUNT, "a condition missing from live_order");

static double per_second(uint64_t count, uint64_t span_ns)
{
	return span_ns ? (double)count * 1e9 / (double)span_ns : 0.0;
}

static void percentiles_us(FILE *out, const struct cs_hist *hist)
{
	fprintf(out, "{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"p999\":%.3f,\"max\":%.3f,\"count\":%" PRIu64 "}",
		(double)cs_hist_percentile(hist, 50) / 1e3, (double)cs_hist_percentile(hist, 90) / 1e3,
		(double)cs_hist_percentile(hist, 99) / 1e3, (double)cs_hist_percentile(hist, 99.9) / 1e3,
		(double)hist->max / 1e3, hist->count);
}

/* The flagged conditions, each with its one short line of advice (advice.h's brief). */
static void live_conditions(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta)
{
	struct cs_analysis analysis;
	cs_analyze(engine, meta, &analysis);
	fputs("\"conditions\":[", out);
	int shown = 0;
	for (size_t i = 0; i < CS_CONDITION_COUNT; i++) {
		if (!cs_analysis_flagged(&analysis, live_order[i]))
			continue;
		fprintf(out, "%s{\"name\":\"%s\",\"advice\":\"%s\"}", shown++ ? "," : "",
			cs_condition_name(live_order[i]), cs_condition_brief(live_order[i]));
	}
	fputc(']', out);
}

void cs_live_json(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta,
		  const struct cs_window *window, const struct cs_live_info *info)
{
	fputs("{\"source\":", out);
	cs_json_write_string(out, info->source ? info->source : "");
	fprintf(out, ",\"uptime_s\":%.3f,\"since_reset_s\":%.3f,\"tick_s\":%.3f,", info->uptime_s,
		info->since_reset_s, (double)window->last_span_ns / 1e9);

	/* The last minute, oldest first; p99 of the requests that ended in each second. */
	fputs("\"seconds\":[", out);
	for (size_t back = window->filled; back-- > 0;) {
		const struct cs_window_second *s = cs_window_second(window, back);
		fprintf(out, "{\"ago_s\":%.3f,\"span_s\":%.3f,\"requests\":%" PRIu64 ",\"accepts\":%" PRIu64
			",\"drops\":%" PRIu64 ",\"p99_us\":%.3f}%s",
			(double)(window->last_tick_ns - s->end_ns) / 1e9, (double)s->span_ns / 1e9, s->requests,
			s->accepts, s->drops, (double)cs_hist_percentile(&s->latency_ns, 99) / 1e3,
			back ? "," : "");
	}
	fputs("],", out);

	struct cs_hist *merged = malloc(sizeof(*merged));
	uint64_t span_ns = 0, accepts = 0;
	if (merged) {
		cs_window_latency(window, merged, &span_ns);
		for (size_t back = 0; back < window->filled; back++)
			accepts += cs_window_second(window, back)->accepts;
		fprintf(out, "\"window\":{\"seconds\":%zu,\"span_s\":%.3f,\"requests_per_s\":%.3f,"
			"\"accepts_per_s\":%.3f,\"latency_us\":", window->filled, (double)span_ns / 1e9,
			per_second(merged->count, span_ns), per_second(accepts, span_ns));
		percentiles_us(out, merged);
		fputs("},", out);
		free(merged);
	}
	const struct cs_window_second *last = cs_window_second(window, 0);
	fprintf(out, "\"last\":{\"requests_per_s\":%.3f,\"accepts_per_s\":%.3f,\"drops_per_s\":%.3f},",
		last ? per_second(last->requests, last->span_ns) : 0.0,
		last ? per_second(last->accepts, last->span_ns) : 0.0,
		last ? per_second(last->drops, last->span_ns) : 0.0);

	fputs("\"listeners\":[", out);
	for (size_t i = 0; i < window->port_count; i++) {
		const struct cs_window_port *p = &window->ports[i];
		fprintf(out, "%s{\"port\":%u,\"accepts_per_s\":%.3f,\"drops_per_s\":%.3f,\"requests_per_s\":%.3f,"
			"\"backlog_now\":%u}", i ? "," : "", p->port, per_second(p->accepts, window->last_span_ns),
			per_second(p->drops, window->last_span_ns), per_second(p->requests, window->last_span_ns),
			p->backlog_now);
	}
	fputs("],\"threads\":[", out);
	int shown = 0;
	for (size_t i = 0; i < window->thread_count; i++) {
		const struct cs_window_thread *t = &window->threads[i];
		if (!t->seen)
			continue;
		const struct cs_thread_stats *stats = cs_u64map_get(&engine->threads, t->tid);
		uint64_t runq_p99_ns = stats ? cs_coarse_percentile(stats->runq_per_request, 99) : 0;
		double busy = window->last_span_ns ? (double)t->handler_ns / (double)window->last_span_ns : 0.0;
		if (busy > 1.0)
			busy = 1.0; /* handlers of concurrent requests overlap */
		fprintf(out, "%s{\"tid\":%u,\"pid\":%u,\"comm\":", shown++ ? "," : "", t->tid, t->tgid);
		cs_json_write_string(out, t->comm);
		if (stats)
			cs_json_roles(out, stats);
		fprintf(out, ",\"requests_per_s\":%.3f,\"accepts_per_s\":%.3f,\"requests\":%" PRIu64
			",\"accepts\":%" PRIu64 ",\"runq_p99_us\":%.3f,\"busy_share\":%.4f}",
			per_second(t->requests, window->last_span_ns), per_second(t->accepts, window->last_span_ns),
			t->prev_requests, t->total_accepts, (double)runq_p99_ns / 1e3, busy);
	}
	fprintf(out, "],\"threads_untracked\":%" PRIu64 ",", window->threads_untracked);
	live_conditions(out, engine, meta);
	fputc('}', out);
}

int cs_snapshot_json(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta,
		     const struct cs_window *window, const struct cs_live_info *info)
{
	char *report = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&report, &len);
	if (!mem)
		return -ENOMEM;
	cs_report_json(mem, engine, meta);
	if (fclose(mem)) {
		free(report);
		return -ENOMEM;
	}
	/* The report ends in "}\n": "live" goes in before that brace. */
	while (len && (report[len - 1] == '\n' || report[len - 1] == ' '))
		len--;
	if (!len || report[len - 1] != '}') {
		free(report);
		return -EINVAL;
	}
	fwrite(report, 1, len - 1, out);
	fputs(",\"live\":", out);
	cs_live_json(out, engine, meta, window, info);
	fputs("}\n", out);
	free(report);
	return 0;
}
