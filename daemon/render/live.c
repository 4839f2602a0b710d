// SPDX-License-Identifier: BSD-2-Clause
#include "live.h"

#include <stdlib.h>

#include "analysis.h"
#include "json.h"
#include "report.h"
#include "report_view.h"
#include "words.h"

/*
 * live.conditions' order, which snapshot readers (connscope top, scripts)
 * may rely on: cpu_saturation before connection_limit, unlike the text
 * report and the metrics. Every condition appears once (the static
 * assertion counts them).
 */
static const enum cs_condition live_order[] = {
	CS_COND_NON_PERSISTENT, CS_COND_IDLE_TIMEOUT, CS_COND_LISTEN_OVERFLOW, CS_COND_ACCEPT_CONTENTION,
	CS_COND_CPU_SATURATION, CS_COND_CONNECTION_LIMIT, CS_COND_POOL_SATURATION, CS_COND_RUNTIME_PAUSES,
	CS_COND_CLIENT_BOUND,
};
_Static_assert(sizeof(live_order) / sizeof(live_order[0]) == CS_CONDITION_COUNT, "a condition missing from live_order");

static double per_second(uint64_t count, uint64_t span_ns)
{
	return span_ns ? (double)count * 1e9 / (double)span_ns : 0.0;
}

/* A condition's brief; pool_saturation's says the pool's kind, its workers and their server's knob. */
static const char *live_brief(const struct cs_analysis *analysis, enum cs_condition condition)
{
	static _Thread_local char text[160];
	const struct cs_pool_condition *pool = &analysis->conditions.pool_saturation;
	if (condition != CS_COND_POOL_SATURATION)
		return cs_condition_brief(condition);
	if (pool->kind == CS_POOL_ACCEPT)
		snprintf(text, sizeof(text), "accept pool, %u of %u busy: %s", pool->busy_threads, pool->pool_threads,
			 cs_pool_brief(pool->kind, pool->server));
	else
		snprintf(text, sizeof(text), "handoff pool of %u: %s", pool->pool_threads,
			 cs_pool_brief(pool->kind, pool->server));
	return text;
}

/* The flagged conditions, each with its one short line of advice (words.h's brief). */
static json_t *live_conditions(const struct cs_analysis *analysis)
{
	json_t *list = json_array();
	for (size_t i = 0; i < CS_CONDITION_COUNT; i++)
		if (cs_analysis_flagged(analysis, live_order[i]))
			json_array_append_new(list, json_pack("{s:s,s:s}", "name", cs_condition_name(live_order[i]),
							      "advice", live_brief(analysis, live_order[i])));
	return list;
}

/* The last minute, oldest first; p99 of the requests that ended in each second. */
static json_t *seconds(const struct cs_window *window)
{
	json_t *list = json_array();
	for (size_t back = window->filled; back-- > 0;) {
		const struct cs_window_second *s = cs_window_second(window, back);
		json_array_append_new(list, json_pack("{s:o,s:o,s:I,s:I,s:I,s:o}", "ago_s",
						      cs_json_3((double)(window->last_tick_ns - s->end_ns) / 1e9),
						      "span_s", cs_json_3((double)s->span_ns / 1e9), "requests",
						      (json_int_t)s->requests, "accepts", (json_int_t)s->accepts,
						      "drops", (json_int_t)s->drops, "p99_us",
						      cs_json_us(cs_hist_percentile(&s->latency_ns, 99))));
	}
	return list;
}

/* The minute's latency and rates; NULL when there is no memory for the merged histogram. */
static json_t *window_summary(const struct cs_window *window)
{
	struct cs_hist *merged = malloc(sizeof(*merged));
	if (!merged)
		return NULL;
	uint64_t span_ns = 0, accepts = 0;
	cs_window_latency(window, merged, &span_ns);
	for (size_t back = 0; back < window->filled; back++)
		accepts += cs_window_second(window, back)->accepts;
	json_t *summary = json_pack("{s:I,s:o,s:o,s:o,s:o}", "seconds", (json_int_t)window->filled, "span_s",
				    cs_json_3((double)span_ns / 1e9), "requests_per_s",
				    cs_json_3(per_second(merged->count, span_ns)), "accepts_per_s",
				    cs_json_3(per_second(accepts, span_ns)), "latency_us",
				    cs_report_percentiles_us(merged));
	free(merged);
	return summary;
}

static json_t *last_second(const struct cs_window *window)
{
	const struct cs_window_second *last = cs_window_second(window, 0);
	return json_pack("{s:o,s:o,s:o}", "requests_per_s",
			 cs_json_3(last ? per_second(last->requests, last->span_ns) : 0.0), "accepts_per_s",
			 cs_json_3(last ? per_second(last->accepts, last->span_ns) : 0.0), "drops_per_s",
			 cs_json_3(last ? per_second(last->drops, last->span_ns) : 0.0));
}

static json_t *listeners(const struct cs_window *window)
{
	json_t *list = json_array();
	uint64_t span = window->last_span_ns;
	for (size_t i = 0; i < window->port_count; i++) {
		const struct cs_window_port *p = &window->ports[i];
		json_array_append_new(list, json_pack("{s:I,s:o,s:o,s:o,s:I}", "port", (json_int_t)p->port,
						      "accepts_per_s", cs_json_3(per_second(p->accepts, span)),
						      "drops_per_s", cs_json_3(per_second(p->drops, span)),
						      "requests_per_s", cs_json_3(per_second(p->requests, span)),
						      "backlog_now", (json_int_t)p->backlog_now));
	}
	return list;
}

static json_t *threads(const struct cs_report_view *view, const struct cs_window *window)
{
	json_t *list = json_array();
	uint64_t span = window->last_span_ns;
	for (size_t i = 0; i < window->thread_count; i++) {
		const struct cs_window_thread *t = &window->threads[i];
		if (!t->seen)
			continue;
		const struct cs_thread_stats *stats = cs_u64map_get(view->threads, t->tid);
		uint64_t runq_p99_ns = stats ? cs_coarse_percentile(stats->runq_per_request, 99) : 0;
		double busy = span ? (double)t->handler_ns / (double)span : 0.0;
		if (busy > 1.0)
			busy = 1.0; /* handlers of concurrent requests overlap */
		json_t *o = json_pack("{s:I,s:I,s:o}", "tid", (json_int_t)t->tid, "pid", (json_int_t)t->tgid, "comm",
				      cs_json_text(t->comm));
		if (stats)
			json_object_set_new(o, "roles", cs_report_roles(stats));
		json_object_set_new(o, "requests_per_s", cs_json_3(per_second(t->requests, span)));
		json_object_set_new(o, "accepts_per_s", cs_json_3(per_second(t->accepts, span)));
		json_object_set_new(o, "requests", json_integer((json_int_t)t->prev_requests));
		json_object_set_new(o, "accepts", json_integer((json_int_t)t->total_accepts));
		json_object_set_new(o, "runq_p99_us", cs_json_us(runq_p99_ns));
		json_object_set_new(o, "busy_share", cs_json_4(busy));
		json_array_append_new(list, o);
	}
	return list;
}

json_t *cs_live_value(const struct cs_report_view *view, const struct cs_window *window,
		      const struct cs_live_info *info)
{
	json_t *live = json_pack("{s:o,s:o,s:o,s:o,s:o}", "source", cs_json_text(info->source), "uptime_s",
				 cs_json_3(info->uptime_s), "since_reset_s", cs_json_3(info->since_reset_s), "tick_s",
				 cs_json_3((double)window->last_span_ns / 1e9), "seconds", seconds(window));
	json_t *summary = window_summary(window);
	if (summary)
		json_object_set_new(live, "window", summary);
	json_object_set_new(live, "last", last_second(window));
	json_object_set_new(live, "listeners", listeners(window));
	json_object_set_new(live, "threads", threads(view, window));
	json_object_set_new(live, "threads_untracked", json_integer((json_int_t)window->threads_untracked));
	json_object_set_new(live, "conditions", live_conditions(&view->analysis));
	return live;
}

json_t *cs_snapshot_value(const struct cs_engine *engine, const struct cs_report_meta *meta,
			  const struct cs_window *window, const struct cs_live_info *info)
{
	/* One view for the report's part and the live part. */
	struct cs_report_view *view = cs_report_view_new(engine, meta);
	if (!view)
		return NULL;
	json_t *snapshot = cs_report_view_value(view);
	/* Without its "live" a snapshot would pass for a report: nothing then. */
	if (snapshot && json_object_set_new(snapshot, "live", cs_live_value(view, window, info))) {
		json_decref(snapshot);
		snapshot = NULL;
	}
	cs_report_view_free(view);
	return snapshot;
}

int cs_snapshot_json(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta,
		     const struct cs_window *window, const struct cs_live_info *info)
{
	return cs_json_dump(out, cs_snapshot_value(engine, meta, window, info));
}
