// SPDX-License-Identifier: BSD-2-Clause
#include "top_model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* A number made safe to draw: finite, within [lo, hi]. */
static double clamp(double v, double lo, double hi)
{
	if (!isfinite(v) || v < lo)
		return lo;
	return v > hi ? hi : v;
}

static double num(const json_t *obj, const char *key)
{
	return clamp(cs_json_num(obj, key, 0), 0, 1e18);
}

static uint64_t count(const json_t *obj, const char *key)
{
	return (uint64_t)num(obj, key);
}

static void latency(const json_t *obj, struct cs_top_latency *out)
{
	out->p50_us = num(obj, "p50");
	out->p90_us = num(obj, "p90");
	out->p99_us = num(obj, "p99");
	out->p999_us = num(obj, "p999");
	out->max_us = num(obj, "max");
	out->count = count(obj, "count");
}

static void listeners(const json_t *root, const json_t *live, struct cs_top_model *m)
{
	const json_t *live_list = json_object_get(live, "listeners");
	size_t i, k;
	const json_t *l, *w;
	json_array_foreach(json_object_get(root, "listeners"), i, l) {
		if (m->listener_count == CS_TOP_LISTENERS)
			break;
		struct cs_top_listener *out = &m->listeners[m->listener_count++];
		out->port = (uint16_t)clamp(cs_json_num(l, "port", 0), 0, 65535);
		out->backlog_max = (uint32_t)clamp(num(l, "backlog_max"), 0, UINT32_MAX);
		out->backlog_limit = (uint32_t)clamp(num(l, "backlog_limit"), 0, UINT32_MAX);
		out->drops = count(l, "drops");
		out->accept_wait_p99_us = num(json_object_get(l, "accept_wait_us"), "p99");
		/* The last second's figures are in live.listeners, by port. */
		json_array_foreach(live_list, k, w) {
			if (k >= 4096)
				break;
			if (cs_json_num(w, "port", -1) != out->port)
				continue;
			out->accepts_per_s = num(w, "accepts_per_s");
			out->backlog_now = (uint32_t)clamp(num(w, "backlog_now"), 0, UINT32_MAX);
			break;
		}
	}
}

static int more_of_the_tail(const void *a, const void *b)
{
	const struct cs_top_upstream *x = a, *y = b;
	if (x->tail_share != y->tail_share)
		return x->tail_share < y->tail_share ? 1 : -1;
	return (x->exchanges < y->exchanges) - (x->exchanges > y->exchanges);
}

/* The local clients, as the snapshot lists them: the first CS_TOP_CLIENTS kept. */
static void clients(const json_t *root, struct cs_top_model *m)
{
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(root, "clients"), i, c) {
		if (m->client_count == CS_TOP_CLIENTS) {
			m->clients_more++;
			continue;
		}
		struct cs_top_client *out = &m->clients[m->client_count++];
		memset(out, 0, sizeof(*out));
		cs_json_str(c, "comm", out->comm, sizeof(out->comm));
		out->pid = (uint32_t)clamp(cs_json_num(c, "pid", 0), 0, UINT32_MAX);
		out->connections = count(c, "connections");
		out->read_delay_p99_us = num(json_object_get(c, "read_delay_us"), "p99");
		out->runq_p99_us = num(json_object_get(c, "run_queue_us"), "p99");
		out->measured_p99_us = num(json_object_get(c, "measured_us"), "p99");
		out->server_p99_us = num(json_object_get(c, "server_us"), "p99");
		out->busy_share = clamp(cs_json_num(c, "busy_share", 0), 0, 1);
		out->bound = json_is_true(json_object_get(c, "bound"));
	}
}

/* The upstreams that took most of the tail, then the busiest: the first CS_TOP_UPSTREAMS kept. */
static void upstreams(const json_t *root, struct cs_top_model *m)
{
	struct cs_top_upstream all[CS_TOP_UPSTREAMS * 8];
	size_t i, n = 0;
	const json_t *u;
	json_array_foreach(json_object_get(root, "upstreams"), i, u) {
		if (n == sizeof(all) / sizeof(all[0])) {
			m->upstreams_more++;
			continue;
		}
		struct cs_top_upstream *out = &all[n++];
		memset(out, 0, sizeof(*out));
		char address[sizeof(out->endpoint)] = "", transport[8] = "";
		cs_json_str(u, "address", address, sizeof(address));
		cs_json_str(u, "transport", transport, sizeof(transport));
		unsigned port = (unsigned)clamp(cs_json_num(u, "port", 0), 0, 65535);
		if (!strcmp(transport, "unix")) /* a path: no port */
			snprintf(out->endpoint, sizeof(out->endpoint), "%s", address);
		else
			snprintf(out->endpoint, sizeof(out->endpoint), strchr(address, ':') ? "[%s]:%u" : "%s:%u", address,
				 port);
		out->exchanges = count(u, "exchanges");
		out->not_joined = count(u, "not_joined");
		out->connects_retransmitted = count(u, "connects_retransmitted");
		out->wait_p50_us = num(json_object_get(u, "wait_us"), "p50");
		out->wait_p99_us = num(json_object_get(u, "wait_us"), "p99");
		out->connect_p99_us = num(json_object_get(u, "connect_us"), "p99");
		out->tail_share = clamp(cs_json_num(u, "tail_share", 0), 0, 1);
	}
	qsort(all, n, sizeof(all[0]), more_of_the_tail);
	m->upstream_count = n < CS_TOP_UPSTREAMS ? (int)n : CS_TOP_UPSTREAMS;
	memcpy(m->upstreams, all, (size_t)m->upstream_count * sizeof(all[0]));
	m->upstreams_more += n - (size_t)m->upstream_count;
}

/* ["acceptor","worker"] -> "aw"; unknown names are skipped. */
static void role_letters(const json_t *roles, char *out, size_t len)
{
	static const struct { const char *name; char letter; } known[] = {
		{ "acceptor", 'a' }, { "poller", 'p' }, { "event_loop", 'l' }, { "worker", 'w' }, { "carrier", 'c' },
	};
	size_t used = 0, i;
	const json_t *r;
	json_array_foreach(roles, i, r) {
		const char *name = json_string_value(r);
		for (size_t k = 0; name && k < sizeof(known) / sizeof(known[0]) && used + 1 < len; k++)
			if (!strcmp(name, known[k].name))
				out[used++] = known[k].letter;
	}
	out[used] = '\0';
}

static void threads(const json_t *live, struct cs_top_model *m)
{
	size_t i;
	const json_t *t;
	json_array_foreach(json_object_get(live, "threads"), i, t) {
		if (m->thread_count == CS_TOP_THREADS)
			break;
		struct cs_top_thread *out = &m->threads[m->thread_count++];
		out->tid = (uint32_t)clamp(num(t, "tid"), 0, UINT32_MAX);
		out->pid = (uint32_t)clamp(num(t, "pid"), 0, UINT32_MAX);
		cs_json_str(t, "comm", out->comm, sizeof(out->comm));
		out->requests_per_s = num(t, "requests_per_s");
		out->requests = count(t, "requests");
		out->accepts = count(t, "accepts");
		out->runq_p99_us = num(t, "runq_p99_us");
		out->busy_share = clamp(cs_json_num(t, "busy_share", 0), 0, 1);
		role_letters(json_object_get(t, "roles"), out->roles, sizeof(out->roles));
	}
}

/* The latest CS_WINDOW_SECONDS of live.seconds, should more come; -1 for a second without requests. */
static void p99_series(const json_t *live, struct cs_top_model *m)
{
	const json_t *seconds = json_object_get(live, "seconds"), *s;
	size_t n = json_array_size(seconds), i;
	json_array_foreach(seconds, i, s) {
		if (i + CS_WINDOW_SECONDS < n)
			continue;
		m->p99_series_us[m->series_len++] = num(s, "requests") > 0 ? num(s, "p99_us") : -1.0;
	}
}

static void tail(const json_t *root, struct cs_top_model *m)
{
	const json_t *tail = json_object_get(root, "tail"), *c;
	size_t i;
	m->tail_percentile = clamp(cs_json_num(tail, "percentile", 99), 0, 100);
	m->tail_threshold_us = num(tail, "threshold_us");
	m->tail_requests = count(tail, "requests");
	json_array_foreach(json_object_get(tail, "causes"), i, c) {
		if (m->cause_count == CS_CAUSE_COUNT)
			break;
		cs_json_str(c, "cause", m->causes[m->cause_count].name, sizeof(m->causes[0].name));
		m->causes[m->cause_count++].share = clamp(cs_json_num(c, "share", 0), 0, 1);
	}
}

static void conditions(const json_t *live, struct cs_top_model *m)
{
	const json_t *list = json_object_get(live, "conditions");
	size_t n = json_array_size(list);
	m->condition_count = n < CS_TOP_CONDITIONS ? (int)n : CS_TOP_CONDITIONS;
	for (int i = 0; i < m->condition_count; i++) {
		cs_json_str(json_array_get(list, (size_t)i), "name", m->conditions[i].name, sizeof(m->conditions[i].name));
		cs_json_str(json_array_get(list, (size_t)i), "advice", m->conditions[i].advice,
			    sizeof(m->conditions[i].advice));
	}
}

static void cost(const json_t *cost, struct cs_top_model *m)
{
	m->cost_recorded = json_is_true(json_object_get(cost, "recorded"));
	const json_t *per_request = json_object_get(cost, "bpf_ns_per_request");
	m->bpf_ns_per_request = json_is_number(per_request) ? clamp(json_number_value(per_request), 0, 1e12) : -1;
	m->cpu_share = clamp(cs_json_num(cost, "cpu_share", 0), 0, 1e3);
}

void cs_top_model_from_value(struct cs_top_model *m, const json_t *root)
{
	memset(m, 0, sizeof(*m));
	const json_t *live = json_object_get(root, "live");
	cs_json_str(root, "target", m->target, sizeof(m->target));
	const json_t *labels = json_object_get(root, "target_labels");
	double netns = num(labels, "netns");
	if (netns > 0)
		snprintf(m->netns, sizeof(m->netns), "%.0f", netns);
	cs_json_str(labels, "container", m->container, sizeof(m->container));
	cs_json_str(live, "source", m->source, sizeof(m->source));
	m->duration_s = num(root, "duration_s");
	m->uptime_s = num(live, "uptime_s");
	const json_t *events = json_object_get(root, "events");
	m->events = count(events, "received");
	m->lost = count(events, "lost");
	m->skipped = count(events, "skipped");
	cost(json_object_get(root, "cost"), m);
	m->requests = count(root, "requests");
	m->multiplexed = count(root, "connections_multiplexed");
	m->adopted = count(root, "connections_adopted");
	m->in_flight_at_attach = count(root, "requests_in_flight_at_attach");
	m->requests_per_s = num(json_object_get(live, "last"), "requests_per_s");
	const json_t *tracing = json_object_get(root, "tracing");
	char mode[16];
	cs_json_str(tracing, "mode", mode, sizeof(mode));
	m->tracing.sampled = !strcmp(mode, "windows");
	m->tracing.window_s = num(tracing, "window_s");
	m->tracing.period_s = num(tracing, "period_s");
	m->tracing.share = num(tracing, "traced_share");
	m->tracing.requests_traced = count(tracing, "requests_traced");
	m->tracing.requests_estimated = num(tracing, "requests_estimated");
	char between[16];
	cs_json_str(tracing, "between_windows", between, sizeof(between));
	m->tracing.counters_between = !strcmp(between, "counters");
	const json_t *counts = json_object_get(tracing, "between_counts");
	m->tracing.between_valid = json_is_true(json_object_get(counts, "valid"));
	m->tracing.between_netns = count(counts, "netns");
	m->tracing.between_opened = count(counts, "connections_opened");
	m->tracing.between_drops = count(counts, "listen_drops");
	m->tracing.between_resets = count(counts, "established_resets");
	latency(json_object_get(root, "latency_us"), &m->total);
	const json_t *window = json_object_get(live, "window");
	latency(json_object_get(window, "latency_us"), &m->window);
	m->window_seconds = (int)clamp(num(window, "seconds"), 0, CS_WINDOW_SECONDS);
	p99_series(live, m);
	tail(root, m);
	listeners(root, live, m);
	upstreams(root, m);
	clients(root, m);
	conditions(live, m);
	threads(live, m);
}

int cs_top_model_read(struct cs_top_model *m, const char *json, size_t len, const char *what, char *err,
		      size_t err_len)
{
	json_t *root = cs_json_load(json, len, what, err, err_len);
	if (!root) {
		memset(m, 0, sizeof(*m));
		return -EINVAL;
	}
	cs_top_model_from_value(m, root);
	json_decref(root);
	return 0;
}
