// SPDX-License-Identifier: BSD-2-Clause
/*
 * What was traced: connscoped traces requests in windows (trace_windows.h)
 * and counts the connection lifecycle all the time. Every output says
 * which of its figures are exact and which come from the traced time.
 */
#include "report.h"

#include <inttypes.h>
#include <math.h>

#include "json.h"
#include "trace_windows.h"

/* Counted all the time by the lifecycle probes, windows or not. */
static const char *const exact_figures[] = { "accepts", "listen_drops", "resets", "closes", "backlog_samples" };
/* Seen only inside windows. */
static const char *const window_figures[] = { "requests", "latency", "causes", "threads" };
/* --between-windows counters: the listeners' samples only are exact; the rest comes from the windows. */
static const char *const exact_with_counters[] = { "backlog_samples" };
static const char *const window_figures_with_counters[] = { "requests", "latency", "causes", "threads",
							    "accepts", "listen_drops", "resets", "closes" };
#define COUNT_OF(list) (sizeof(list) / sizeof((list)[0]))

void cs_report_tracing_summary(const struct cs_engine *engine, const struct cs_report_meta *meta,
			       struct cs_traced_summary *summary)
{
	uint64_t traced = engine->requests.requests;
	cs_traced_summarize(&meta->trace, meta->duration_s, traced, traced + engine->requests.partial, summary);
}

static json_t *names(const char *const *list, size_t count)
{
	json_t *array = json_array();
	for (size_t i = 0; i < count; i++)
		json_array_append_new(array, json_string(list[i]));
	return array;
}

/* What the kernel counted in the gaps between windows: every port and process of one namespace. */
static json_t *between_counts_value(const struct cs_between_counts *between)
{
	const struct cs_tcp_counters *added = &between->added;
	return json_pack("{s:b,s:I,s:I,s:o,s:I,s:I,s:I,s:I,s:I}", "valid", between->valid, "netns",
			 (json_int_t)between->netns_ino, "gaps", (json_int_t)between->gaps, "gap_s",
			 cs_json_3(between->gap_s), "connections_opened", (json_int_t)added->passive_opens,
			 "listen_overflows", (json_int_t)added->listen_overflows, "listen_drops",
			 (json_int_t)added->listen_drops, "established_resets", (json_int_t)added->estab_resets,
			 "resets_sent", (json_int_t)added->out_rsts);
}

json_t *cs_report_tracing_value(const struct cs_traced_summary *traced, const struct cs_report_meta *meta)
{
	const struct cs_traced_summary summary = *traced;
	json_t *value = json_pack("{s:s,s:o,s:o,s:I,s:I,s:I}", "mode", summary.sampled ? "windows" : "always",
				  "traced_s", cs_json_3(summary.traced_s), "traced_share", cs_json_3(summary.share),
				  "requests_traced", (json_int_t)summary.requests_traced, "requests_estimated",
				  (json_int_t)llround(summary.requests_estimated), "requests_cut",
				  (json_int_t)meta->trace.requests_cut);
	if (!value)
		return NULL;
	if (summary.sampled) {
		json_object_set_new(value, "window_s", cs_json_3(meta->trace.window_s));
		json_object_set_new(value, "period_s", cs_json_3(meta->trace.period_s));
		json_object_set_new(value, "windows", json_integer((json_int_t)meta->trace.windows));
	}
	bool counters = meta->trace.counters_between;
	json_object_set_new(value, "between_windows", json_string(counters ? "counters" : "events"));
	if (counters) {
		json_object_set_new(value, "exact", names(exact_with_counters, COUNT_OF(exact_with_counters)));
		json_object_set_new(value, "from_windows",
				    names(window_figures_with_counters, COUNT_OF(window_figures_with_counters)));
		json_object_set_new(value, "between_counts", between_counts_value(&meta->trace.between));
		return value;
	}
	json_object_set_new(value, "exact", names(exact_figures, COUNT_OF(exact_figures)));
	json_object_set_new(value, "from_windows",
			    names(summary.sampled ? window_figures : NULL, summary.sampled ? COUNT_OF(window_figures) : 0));
	return value;
}

static void between_counts_text(FILE *out, const struct cs_between_counts *between)
{
	const struct cs_tcp_counters *added = &between->added;
	fputs("from the windows: requests, latencies, causes, threads, and accepts, listen drops, resets and "
	      "closes port by port; exact: backlog samples; between the windows nothing is followed", out);
	if (!between->valid) {
		fputs(" (the kernel's counters could not be read)", out);
		return;
	}
	fprintf(out, ", the kernel counted in network namespace %" PRIu32 " (every port and process in it) over %"
		PRIu64 " gap(s), %.1f s: %" PRIu64 " connection(s) opened, %" PRIu64 " listen overflow(s), %" PRIu64
		" listen drop(s), %" PRIu64 " established connection(s) reset, %" PRIu64 " reset(s) sent",
		between->netns_ino, between->gaps, between->gap_s, added->passive_opens, added->listen_overflows,
		added->listen_drops, added->estab_resets, added->out_rsts);
}

void cs_report_tracing_text(FILE *out, const struct cs_traced_summary *traced, const struct cs_report_meta *meta)
{
	const struct cs_traced_summary summary = *traced;
	if (!summary.sampled)
		return;
	char schedule[48] = "always since a reload";
	if (meta->trace.period_s > 0)
		snprintf(schedule, sizeof(schedule), "%g s windows every %g s", meta->trace.window_s,
			 meta->trace.period_s);
	fprintf(out, "traced %.1f s of %.1f s (%.1f %%: %s, %" PRIu64 " window(s)): %" PRIu64
		" request(s) traced of ~%.0f estimated; ",
		summary.traced_s, meta->duration_s, 100 * summary.share, schedule, meta->trace.windows,
		summary.requests_traced, summary.requests_estimated);
	if (meta->trace.counters_between)
		between_counts_text(out, &meta->trace.between);
	else
		fputs("exact: accepts, listen drops, resets, closes, backlog samples; "
		      "from the windows: requests, latencies, causes, threads", out);
	if (meta->trace.requests_cut)
		fprintf(out, "; %" PRIu64 " request(s) cut by a window's end", meta->trace.requests_cut);
	fputc('\n', out);
}
