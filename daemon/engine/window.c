// SPDX-License-Identifier: BSD-2-Clause
#include "window.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int cs_window_init(struct cs_window *window)
{
	memset(window, 0, sizeof(*window));
	window->seconds = calloc(CS_WINDOW_SECONDS, sizeof(*window->seconds));
	window->prev_latency = malloc(sizeof(*window->prev_latency));
	if (!window->seconds || !window->prev_latency) {
		cs_window_free(window);
		return -ENOMEM;
	}
	cs_window_reset(window);
	return 0;
}

void cs_window_free(struct cs_window *window)
{
	free(window->seconds);
	free(window->prev_latency);
	memset(window, 0, sizeof(*window));
}

void cs_window_reset(struct cs_window *window)
{
	struct cs_window_second *seconds = window->seconds;
	struct cs_hist *prev = window->prev_latency;
	memset(window, 0, sizeof(*window));
	window->seconds = seconds;
	window->prev_latency = prev;
	memset(seconds, 0, CS_WINDOW_SECONDS * sizeof(*seconds));
	cs_hist_init(prev);
}

void cs_hist_delta(struct cs_hist *out, const struct cs_hist *later, const struct cs_hist *earlier)
{
	cs_hist_init(out);
	size_t first = CS_HIST_BUCKETS, last = 0;
	for (size_t i = 0; i < CS_HIST_BUCKETS; i++) {
		uint64_t added = later->buckets[i] > earlier->buckets[i] ? later->buckets[i] - earlier->buckets[i] : 0;
		out->buckets[i] = added;
		out->count += added;
		if (added) {
			if (first == CS_HIST_BUCKETS)
				first = i;
			last = i;
		}
	}
	if (!out->count)
		return;
	out->sum = later->sum > earlier->sum ? later->sum - earlier->sum : 0;
	out->min = cs_hist_bucket_lowest(first);
	uint64_t high = cs_hist_bucket_highest(last);
	out->max = high < later->max ? high : later->max;
	if (out->min > out->max)
		out->min = out->max;
}

static uint64_t delta(uint64_t now, uint64_t before)
{
	return now > before ? now - before : 0;
}

static struct cs_window_port *find_port(struct cs_window *window, uint16_t port)
{
	for (size_t i = 0; i < window->port_count; i++)
		if (window->ports[i].port == port)
			return &window->ports[i];
	if (window->port_count == CS_WINDOW_PORTS)
		return NULL;
	struct cs_window_port *slot = &window->ports[window->port_count++];
	memset(slot, 0, sizeof(*slot));
	slot->port = port;
	return slot;
}

static struct cs_window_thread *find_thread(struct cs_window *window, uint32_t tid, uint32_t tgid)
{
	for (size_t i = 0; i < window->thread_count; i++)
		if (window->threads[i].tid == tid && window->threads[i].tgid == tgid)
			return &window->threads[i];
	/* Full: take the place of a thread gone from the engine (never happens
	 * today: the engine forgets no thread until a reset). */
	struct cs_window_thread *slot = NULL;
	if (window->thread_count < CS_WINDOW_THREADS) {
		slot = &window->threads[window->thread_count++];
	} else {
		for (size_t i = 0; i < window->thread_count && !slot; i++)
			if (!window->threads[i].seen)
				slot = &window->threads[i];
		if (!slot) {
			window->threads_untracked++;
			return NULL;
		}
	}
	memset(slot, 0, sizeof(*slot));
	slot->tid = tid;
	slot->tgid = tgid;
	return slot;
}

struct tick_ctx {
	struct cs_window *window;
};

static void tick_thread(uint64_t key, void *value, void *ctx_ptr)
{
	(void)key;
	struct tick_ctx *ctx = ctx_ptr;
	const struct cs_thread_stats *t = value;
	/* Threads that neither served a request nor took a role are not the view's business. */
	if (!t->requests && !cs_thread_roles(t))
		return;
	struct cs_window_thread *w = find_thread(ctx->window, t->tid, t->tgid);
	if (!w)
		return;
	memcpy(w->comm, t->comm, CS_COMM_LEN);
	w->comm[CS_COMM_LEN - 1] = '\0';
	uint64_t handler_ns = cs_thread_in_handlers_ns(t);
	w->requests = delta(t->requests, w->prev_requests);
	w->handler_ns = delta(handler_ns, w->prev_handler_ns);
	w->prev_requests = t->requests;
	w->prev_handler_ns = handler_ns;
	w->seen = true;
}

void cs_window_tick(struct cs_window *window, const struct cs_engine *engine, uint64_t now_ns)
{
	if (window->last_tick_ns && now_ns <= window->last_tick_ns)
		return;
	/* The first tick sets the baselines: a second needs a beginning. */
	bool baseline_only = window->last_tick_ns == 0;
	uint64_t span_ns = baseline_only ? 0 : now_ns - window->last_tick_ns;

	/* 1. the ring: the second that just ended */
	size_t slot_index = window->filled ? (window->newest + 1) % CS_WINDOW_SECONDS : 0;
	struct cs_window_second *slot = &window->seconds[slot_index];
	cs_hist_delta(&slot->latency_ns, engine->requests.latency_ns, window->prev_latency);
	memcpy(window->prev_latency, engine->requests.latency_ns, sizeof(*window->prev_latency));
	slot->end_ns = now_ns;
	slot->span_ns = span_ns;
	slot->requests = slot->latency_ns.count;

	uint64_t accepts = 0, drops = 0;
	for (size_t i = 0; i < engine->listener_count; i++) {
		const struct cs_listener_stats *l = &engine->listeners[i];
		uint64_t l_drops = cs_listener_drops(l);
		accepts += l->accepts;
		drops += l_drops;
		struct cs_window_port *port = find_port(window, l->port);
		if (!port)
			continue;
		port->accepts = delta(l->accepts, port->prev_accepts);
		port->drops = delta(l_drops, port->prev_drops);
		port->requests = delta(l->requests, port->prev_requests);
		port->prev_accepts = l->accepts;
		port->prev_drops = l_drops;
		port->prev_requests = l->requests;
		port->backlog_now = 0;
		for (size_t s = 0; s < l->socket_count; s++)
			port->backlog_now += l->sockets[s].backlog_last;
	}
	slot->accepts = delta(accepts, window->prev_accepts);
	slot->drops = delta(drops, window->prev_drops);
	window->prev_accepts = accepts;
	window->prev_drops = drops;
	if (!baseline_only) {
		window->newest = slot_index;
		if (window->filled < CS_WINDOW_SECONDS)
			window->filled++;
	}

	/* 2. threads: requests and handler time from the engine's threads,
	 *    accepts from the listeners' workers */
	for (size_t i = 0; i < window->thread_count; i++)
		window->threads[i].seen = false;
	struct tick_ctx ctx = { window };
	cs_u64map_each(&engine->threads, tick_thread, &ctx);
	for (size_t i = 0; i < window->thread_count; i++)
		window->threads[i].total_accepts = 0;
	for (size_t i = 0; i < engine->listener_count; i++) {
		const struct cs_listener_stats *l = &engine->listeners[i];
		for (size_t k = 0; k < l->worker_count; k++) {
			const struct cs_worker_stats *worker = &l->workers[k];
			if (!worker->accepts)
				continue;
			struct cs_window_thread *w = find_thread(window, worker->tid, worker->pid);
			if (!w)
				continue;
			if (!w->comm[0]) {
				memcpy(w->comm, worker->comm, CS_COMM_LEN);
				w->comm[CS_COMM_LEN - 1] = '\0';
			}
			w->total_accepts += worker->accepts;
			w->seen = true;
		}
	}
	for (size_t i = 0; i < window->thread_count; i++) {
		struct cs_window_thread *w = &window->threads[i];
		w->accepts = delta(w->total_accepts, w->prev_accepts);
		w->prev_accepts = w->total_accepts;
	}
	window->last_tick_ns = now_ns;
	window->last_span_ns = span_ns;
}

const struct cs_window_second *cs_window_second(const struct cs_window *window, size_t back)
{
	if (back >= window->filled)
		return NULL;
	size_t index = (window->newest + CS_WINDOW_SECONDS - back) % CS_WINDOW_SECONDS;
	return &window->seconds[index];
}

void cs_window_latency(const struct cs_window *window, struct cs_hist *out, uint64_t *span_ns)
{
	cs_hist_init(out);
	*span_ns = 0;
	for (size_t back = 0; back < window->filled; back++) {
		const struct cs_window_second *second = cs_window_second(window, back);
		cs_hist_merge(out, &second->latency_ns);
		*span_ns += second->span_ns;
	}
}
