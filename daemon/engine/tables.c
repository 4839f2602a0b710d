// SPDX-License-Identifier: BSD-2-Clause
/*
 * The engine's tables: listeners (with their sockets and accepting
 * workers) and threads, found or added, and what is read off a listener.
 * Below every other file of the engine: the record handlers (engine.c,
 * requests.c, roles.c, limit.c) call in here, never the other way.
 */
#include "tables.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Listening ports followed: the size of the probes' target_ports map. */
#define CS_ENGINE_MAX_LISTENERS 1024

/* Grow *array (of elem_size items) so that one more fits. */
static int grow(void **array, size_t *cap, size_t count, size_t elem_size)
{
	if (count < *cap)
		return 0;
	size_t new_cap = *cap ? *cap * 2 : 8;
	void *bigger = realloc(*array, new_cap * elem_size);
	if (!bigger)
		return -ENOMEM;
	memset((char *)bigger + *cap * elem_size, 0, (new_cap - *cap) * elem_size);
	*array = bigger;
	*cap = new_cap;
	return 0;
}

static struct cs_hist *new_hist(void)
{
	struct cs_hist *hist = malloc(sizeof(*hist));
	if (hist)
		cs_hist_init(hist);
	return hist;
}

void cs_listener_free(struct cs_listener_stats *listener)
{
	free(listener->accept_wait_ns);
	free(listener->latency_ns);
	free(listener->handshake_extra_ns);
	free(listener->sockets);
	free(listener->workers);
}

static struct cs_listener_stats *find_listener(const struct cs_engine *engine, uint16_t port)
{
	for (size_t i = 0; i < engine->listener_count; i++)
		if (engine->listeners[i].port == port)
			return &engine->listeners[i];
	return NULL;
}

const struct cs_listener_stats *cs_engine_listener(const struct cs_engine *engine, uint16_t port)
{
	return find_listener(engine, port);
}

struct cs_listener_stats *cs_get_listener(struct cs_engine *engine, uint16_t port)
{
	struct cs_listener_stats *listener = find_listener(engine, port);
	if (listener)
		return listener;
	/*
	 * Each listener costs three histograms (~120 KB). The probes follow at
	 * most 1024 target ports (target_ports in bpf/connscope.bpf.c), so a
	 * stream with more is a corrupt or hostile trace: without this bound a
	 * 3.6 MB trace of one record per port took 7.5 GB to replay. Refused
	 * like any table that cannot grow: the record counts as malformed.
	 */
	if (engine->listener_count >= CS_ENGINE_MAX_LISTENERS)
		return NULL;
	if (grow((void **)&engine->listeners, &engine->listener_cap, engine->listener_count,
		 sizeof(*engine->listeners)))
		return NULL;
	listener = &engine->listeners[engine->listener_count];
	memset(listener, 0, sizeof(*listener));
	listener->port = port;
	listener->accept_wait_ns = new_hist();
	listener->latency_ns = new_hist();
	listener->handshake_extra_ns = new_hist();
	if (!listener->accept_wait_ns || !listener->latency_ns || !listener->handshake_extra_ns) {
		cs_listener_free(listener);
		return NULL;
	}
	engine->listener_count++;
	return listener;
}

struct cs_listener_socket *cs_get_socket(struct cs_listener_stats *listener, uint64_t sk, uint32_t drops_now)
{
	for (size_t i = 0; i < listener->socket_count; i++)
		if (listener->sockets[i].sk == sk)
			return &listener->sockets[i];
	if (grow((void **)&listener->sockets, &listener->socket_cap, listener->socket_count,
		 sizeof(*listener->sockets)))
		return NULL;
	struct cs_listener_socket *socket = &listener->sockets[listener->socket_count++];
	socket->sk = sk;
	socket->drops_first = drops_now;
	socket->drops_last = drops_now;
	return socket;
}

struct cs_worker_stats *cs_get_worker(struct cs_listener_stats *listener, uint32_t tid, uint32_t pid,
				      const char *comm)
{
	for (size_t i = 0; i < listener->worker_count; i++)
		if (listener->workers[i].tid == tid && listener->workers[i].pid == pid)
			return &listener->workers[i];
	if (grow((void **)&listener->workers, &listener->worker_cap, listener->worker_count,
		 sizeof(*listener->workers)))
		return NULL;
	struct cs_worker_stats *worker = &listener->workers[listener->worker_count++];
	worker->tid = tid;
	worker->pid = pid;
	memcpy(worker->comm, comm, CS_COMM_LEN);
	worker->comm[CS_COMM_LEN - 1] = '\0';
	return worker;
}

uint32_t cs_addr_hash(const uint8_t addr[16])
{
	uint32_t hash = 2166136261u; /* FNV-1a */
	for (int i = 0; i < 16; i++)
		hash = (hash ^ addr[i]) * 16777619u;
	return hash ? hash : 1;
}

struct cs_thread_stats *cs_get_thread(struct cs_engine *engine, uint32_t tid, uint32_t tgid,
				      const char *comm)
{
	int created;
	struct cs_thread_stats *thread = cs_u64map_put(&engine->threads, tid, &created);
	if (!thread)
		return NULL;
	if (created) {
		thread->tid = tid;
		thread->tgid = tgid;
	}
	if (comm && comm[0]) {
		memcpy(thread->comm, comm, CS_COMM_LEN);
		thread->comm[CS_COMM_LEN - 1] = '\0';
	}
	return thread;
}

uint64_t cs_listener_drops(const struct cs_listener_stats *listener)
{
	uint64_t drops = 0;
	for (size_t i = 0; i < listener->socket_count; i++) {
		const struct cs_listener_socket *socket = &listener->sockets[i];
		/* Unsigned difference also spans a 32-bit wrap. */
		drops += (uint32_t)(socket->drops_last - socket->drops_first);
	}
	return drops > listener->ack_overflows ? drops - listener->ack_overflows : 0;
}

uint64_t cs_listener_queued_through(const struct cs_listener_stats *listener, uint64_t *for_ns)
{
	*for_ns = 0;
	uint64_t last_depth = 0;
	for (size_t i = 0; i < listener->socket_count; i++)
		if (listener->sockets[i].sampled)
			last_depth += listener->sockets[i].backlog_last;
	if (listener->queue_first_depth <= listener->accepts_since_first_look ||
	    listener->queue_last_ns <= listener->queue_first_ns)
		return 0;
	uint64_t through = listener->queue_first_depth - listener->accepts_since_first_look;
	if (through > last_depth)
		through = last_depth;
	if (through)
		*for_ns = listener->queue_last_ns - listener->queue_first_ns;
	return through;
}

const struct cs_worker_stats *cs_listener_busiest_worker(const struct cs_listener_stats *listener)
{
	const struct cs_worker_stats *busiest = NULL;
	for (size_t i = 0; i < listener->worker_count; i++) {
		const struct cs_worker_stats *worker = &listener->workers[i];
		if (worker->accepts && (!busiest || worker->accepts > busiest->accepts))
			busiest = worker;
	}
	return busiest;
}

size_t cs_listener_accepting_threads(const struct cs_listener_stats *listener)
{
	size_t threads = 0;
	for (size_t i = 0; i < listener->worker_count; i++)
		threads += listener->workers[i].accepts > 0;
	return threads;
}

double cs_worker_busy_share(const struct cs_worker_stats *worker)
{
	if (worker->last_call_ns <= worker->first_call_ns)
		return 0.0;
	double span = (double)(worker->last_call_ns - worker->first_call_ns);
	double outside = span - (double)worker->in_accept_ns;
	return outside > 0 ? outside / span : 0.0;
}
