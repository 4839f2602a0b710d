// SPDX-License-Identifier: BSD-2-Clause
#include "top_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json_read.h"

/* A snapshot of 256 threads and 1024 listeners is some 20 000 tokens. */
#define MAX_TOKENS 200000

/* A number made safe to draw: finite, within [lo, hi]. */
static double clamp(double v, double lo, double hi)
{
	if (!isfinite(v) || v < lo)
		return lo;
	return v > hi ? hi : v;
}

static double num(const struct cs_json *doc, int tok, const char *key)
{
	return clamp(cs_json_number(doc, cs_json_get(doc, tok, key), 0), 0, 1e18);
}

static uint64_t count(const struct cs_json *doc, int tok, const char *key)
{
	return (uint64_t)num(doc, tok, key);
}

static void latency(const struct cs_json *doc, int tok, struct cs_top_latency *out)
{
	out->p50_us = num(doc, tok, "p50");
	out->p90_us = num(doc, tok, "p90");
	out->p99_us = num(doc, tok, "p99");
	out->p999_us = num(doc, tok, "p999");
	out->max_us = num(doc, tok, "max");
	out->count = count(doc, tok, "count");
}

static void listeners(const struct cs_json *doc, int root, int live, struct cs_top_model *m)
{
	int arr = cs_json_get(doc, root, "listeners");
	int live_arr = cs_json_get(doc, live, "listeners");
	int l = cs_json_first(doc, arr);
	for (int i = 0; i < cs_json_size(doc, arr) && m->listener_count < CS_TOP_LISTENERS;
	     i++, l = cs_json_next(doc, l)) {
		struct cs_top_listener *out = &m->listeners[m->listener_count++];
		out->port = (uint16_t)clamp(cs_json_number(doc, cs_json_get(doc, l, "port"), 0), 0, 65535);
		out->backlog_max = (uint32_t)clamp(num(doc, l, "backlog_max"), 0, UINT32_MAX);
		out->backlog_limit = (uint32_t)clamp(num(doc, l, "backlog_limit"), 0, UINT32_MAX);
		out->drops = count(doc, l, "drops");
		out->accept_wait_p99_us = num(doc, cs_json_get(doc, l, "accept_wait_us"), "p99");
		/* The last second's figures are in live.listeners, by port. */
		int w = cs_json_first(doc, live_arr);
		for (int k = 0; k < cs_json_size(doc, live_arr) && k < 4096; k++, w = cs_json_next(doc, w)) {
			if (cs_json_number(doc, cs_json_get(doc, w, "port"), -1) != out->port)
				continue;
			out->accepts_per_s = num(doc, w, "accepts_per_s");
			out->backlog_now = (uint32_t)clamp(num(doc, w, "backlog_now"), 0, UINT32_MAX);
			break;
		}
	}
}

/* ["acceptor","worker"] -> "aw"; unknown names are skipped. */
static void role_letters(const struct cs_json *doc, int roles, char *out, size_t len)
{
	static const struct { const char *name; char letter; } known[] = {
		{ "acceptor", 'a' }, { "poller", 'p' }, { "event_loop", 'l' }, { "worker", 'w' },
	};
	size_t used = 0;
	int r = cs_json_first(doc, roles);
	for (int i = 0; i < cs_json_size(doc, roles) && used + 1 < len; i++, r = cs_json_next(doc, r)) {
		char name[16];
		if (!cs_json_string(doc, r, name, sizeof(name)))
			continue;
		for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			if (!strcmp(name, known[k].name))
				out[used++] = known[k].letter;
	}
	out[used] = '\0';
}

static void threads(const struct cs_json *doc, int live, struct cs_top_model *m)
{
	int arr = cs_json_get(doc, live, "threads");
	int t = cs_json_first(doc, arr);
	for (int i = 0; i < cs_json_size(doc, arr) && m->thread_count < CS_TOP_THREADS;
	     i++, t = cs_json_next(doc, t)) {
		struct cs_top_thread *out = &m->threads[m->thread_count++];
		out->tid = (uint32_t)clamp(num(doc, t, "tid"), 0, UINT32_MAX);
		out->pid = (uint32_t)clamp(num(doc, t, "pid"), 0, UINT32_MAX);
		cs_json_string(doc, cs_json_get(doc, t, "comm"), out->comm, sizeof(out->comm));
		out->requests_per_s = num(doc, t, "requests_per_s");
		out->requests = count(doc, t, "requests");
		out->accepts = count(doc, t, "accepts");
		out->runq_p99_us = num(doc, t, "runq_p99_us");
		out->busy_share = clamp(cs_json_number(doc, cs_json_get(doc, t, "busy_share"), 0), 0, 1);
		role_letters(doc, cs_json_get(doc, t, "roles"), out->roles, sizeof(out->roles));
	}
}

int cs_top_model_from_json(struct cs_top_model *m, const char *json, size_t len)
{
	memset(m, 0, sizeof(*m));
	struct cs_json doc;
	int err = cs_json_parse(&doc, json, len, MAX_TOKENS);
	if (err)
		return err;
	int root = 0;
	int live = cs_json_get(&doc, root, "live");

	cs_json_string(&doc, cs_json_get(&doc, root, "target"), m->target, sizeof(m->target));
	int labels = cs_json_get(&doc, root, "target_labels");
	if (labels >= 0) {
		double netns = num(&doc, labels, "netns");
		if (netns > 0)
			snprintf(m->netns, sizeof(m->netns), "%.0f", netns);
		cs_json_string(&doc, cs_json_get(&doc, labels, "container"), m->container, sizeof(m->container));
	}
	cs_json_string(&doc, cs_json_get(&doc, live, "source"), m->source, sizeof(m->source));
	m->duration_s = num(&doc, root, "duration_s");
	m->uptime_s = num(&doc, live, "uptime_s");
	int events = cs_json_get(&doc, root, "events");
	m->events = count(&doc, events, "received");
	m->lost = count(&doc, events, "lost");
	m->skipped = count(&doc, events, "skipped");
	m->requests = count(&doc, root, "requests");
	m->requests_per_s = num(&doc, cs_json_get(&doc, live, "last"), "requests_per_s");
	latency(&doc, cs_json_get(&doc, root, "latency_us"), &m->total);
	int window = cs_json_get(&doc, live, "window");
	latency(&doc, cs_json_get(&doc, window, "latency_us"), &m->window);
	m->window_seconds = (int)clamp(num(&doc, window, "seconds"), 0, CS_WINDOW_SECONDS);

	int seconds = cs_json_get(&doc, live, "seconds");
	int n = cs_json_size(&doc, seconds);
	/* The latest CS_WINDOW_SECONDS, should more come. */
	int s = cs_json_first(&doc, seconds);
	for (int i = 0; i < n; i++, s = cs_json_next(&doc, s)) {
		if (i < n - CS_WINDOW_SECONDS)
			continue;
		double requests = num(&doc, s, "requests");
		m->p99_series_us[m->series_len++] = requests > 0 ? num(&doc, s, "p99_us") : -1.0;
	}

	int tail = cs_json_get(&doc, root, "tail");
	m->tail_percentile = clamp(cs_json_number(&doc, cs_json_get(&doc, tail, "percentile"), 99), 0, 100);
	m->tail_threshold_us = num(&doc, tail, "threshold_us");
	m->tail_requests = count(&doc, tail, "requests");
	int causes = cs_json_get(&doc, tail, "causes");
	for (int i = 0; i < cs_json_size(&doc, causes) && m->cause_count < CS_CAUSE_COUNT; i++) {
		int c = cs_json_at(&doc, causes, i);
		cs_json_string(&doc, cs_json_get(&doc, c, "cause"), m->causes[m->cause_count].name,
			       sizeof(m->causes[0].name));
		m->causes[m->cause_count++].share = clamp(cs_json_number(&doc, cs_json_get(&doc, c, "share"), 0), 0, 1);
	}

	listeners(&doc, root, live, m);
	int conditions = cs_json_get(&doc, live, "conditions");
	for (int i = 0; i < cs_json_size(&doc, conditions) && m->condition_count < CS_TOP_CONDITIONS; i++) {
		int c = cs_json_at(&doc, conditions, i);
		struct cs_top_condition *out = &m->conditions[m->condition_count++];
		cs_json_string(&doc, cs_json_get(&doc, c, "name"), out->name, sizeof(out->name));
		cs_json_string(&doc, cs_json_get(&doc, c, "advice"), out->advice, sizeof(out->advice));
	}
	threads(&doc, live, m);
	cs_json_free(&doc);
	return 0;
}
