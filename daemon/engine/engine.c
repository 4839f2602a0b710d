// SPDX-License-Identifier: BSD-2-Clause
#include "engine.h"
#include "engine_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

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

struct cs_engine *cs_engine_new(void)
{
	struct cs_engine *engine = calloc(1, sizeof(struct cs_engine));
	if (engine && cs_requests_init(engine)) {
		cs_engine_free(engine);
		return NULL;
	}
	return engine;
}

static void free_listener(struct cs_listener_stats *listener)
{
	free(listener->accept_wait_ns);
	free(listener->latency_ns);
	free(listener->handshake_extra_ns);
	free(listener->sockets);
	free(listener->workers);
}

void cs_engine_free(struct cs_engine *engine)
{
	if (!engine)
		return;
	for (size_t i = 0; i < engine->listener_count; i++)
		free_listener(&engine->listeners[i]);
	free(engine->listeners);
	cs_requests_free(engine);
	free(engine);
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
		free_listener(listener);
		return NULL;
	}
	engine->listener_count++;
	return listener;
}

static struct cs_listener_socket *get_socket(struct cs_listener_stats *listener, uint64_t sk,
					     uint32_t drops_now)
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

static struct cs_worker_stats *get_worker(struct cs_listener_stats *listener, uint32_t tid,
					  uint32_t pid, const char *comm)
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

static int on_accept(struct cs_engine *engine, const struct cs_ev_accept *ev)
{
	struct cs_listener_stats *listener = cs_get_listener(engine, ev->listener_port);
	if (!listener)
		return -ENOMEM;
	struct cs_worker_stats *worker = get_worker(listener, ev->tid, ev->tgid, ev->comm);
	struct cs_listener_socket *socket =
		get_socket(listener, ev->listener_sk, ev->listener_drops);
	/* Every accepting thread is a thread of the report, even one that never reads. */
	struct cs_thread_stats *thread = cs_get_thread(engine, ev->tid, ev->tgid, ev->comm);
	if (!worker || !socket || !thread)
		return -ENOMEM;
	socket->drops_last = ev->listener_drops;
	socket->backlog_limit = ev->backlog_limit;
	socket->backlog_last = ev->backlog;
	listener->backlog_limit = ev->backlog_limit;

	cs_limit_on_accept(listener, worker->last_call_ns, ev);
	if (ev->hdr.ts_ns >= ev->enter_ns)
		worker->in_accept_ns += ev->hdr.ts_ns - ev->enter_ns;
	if (!worker->first_call_ns || ev->enter_ns < worker->first_call_ns)
		worker->first_call_ns = ev->enter_ns;
	if (ev->hdr.ts_ns > worker->last_call_ns)
		worker->last_call_ns = ev->hdr.ts_ns;
	if (ev->ret < 0) {
		if (ev->ret == -EAGAIN) {
			worker->eagain++;
			listener->eagain++;
		} else {
			worker->errors++;
			listener->accept_errors++;
		}
		return 0;
	}

	worker->accepts++;
	thread->accepts++;
	listener->accepts++;
	if (!listener->first_accept_ns)
		listener->first_accept_ns = ev->hdr.ts_ns;
	listener->last_accept_ns = ev->hdr.ts_ns;
	listener->backlog_at_accept_sum += ev->backlog;
	if (ev->backlog > listener->backlog_at_accept_max)
		listener->backlog_at_accept_max = ev->backlog;
	/* A full queue seen by accept() counts as a backlog observation too. */
	if (ev->backlog > listener->backlog_max)
		listener->backlog_max = ev->backlog;

	if (ev->established_ns && ev->established_ns <= ev->hdr.ts_ns)
		cs_hist_record(listener->accept_wait_ns, ev->hdr.ts_ns - ev->established_ns);
	else
		listener->accepts_unmatched++;
	cs_conn_accepted(engine, ev);
	return 0;
}

static int on_listener_sample(struct cs_engine *engine, const struct cs_ev_listener_sample *ev)
{
	struct cs_listener_stats *listener = cs_get_listener(engine, ev->port);
	if (!listener)
		return -ENOMEM;
	struct cs_listener_socket *socket = get_socket(listener, ev->sk, ev->drops);
	if (!socket)
		return -ENOMEM;
	socket->drops_last = ev->drops;
	socket->backlog_limit = ev->backlog_limit;
	socket->backlog_last = ev->backlog;

	listener->backlog_limit = ev->backlog_limit;
	listener->backlog_samples++;
	listener->backlog_sample_sum += ev->backlog;
	/* The kernel's test (sk_acceptq_is_full): the queue holds limit + 1. */
	if (ev->backlog > ev->backlog_limit)
		listener->backlog_full_samples++;
	if (ev->backlog > 0)
		listener->backlog_nonempty_samples++;
	if (ev->backlog > listener->backlog_max)
		listener->backlog_max = ev->backlog;
	return 0;
}

static int on_handshake(struct cs_engine *engine, const struct cs_ev_handshake *ev)
{
	struct cs_listener_stats *listener = cs_get_listener(engine, ev->tuple.local_port);
	if (!listener)
		return -ENOMEM;
	listener->handshakes_retransmitted += ev->syn_retransmits > 0;
	if (!ev->established) {
		listener->handshakes_failed++;
		return 0;
	}
	listener->handshakes_slow++;
	cs_hist_record(listener->handshake_extra_ns, ev->extra_ns);
	if (ev->extra_ns >= NS_PER_SEC)
		listener->handshakes_delayed_1s++;
	return 0;
}

int cs_engine_feed(struct cs_engine *engine, const void *record, size_t len)
{
	struct cs_event_header hdr;
	int err;

	if (len < sizeof(hdr)) {
		engine->totals.malformed++;
		return -EINVAL;
	}
	memcpy(&hdr, record, sizeof(hdr));
	size_t expected = cs_record_size(hdr.type);
	if (!expected || hdr.size != expected || len < expected) {
		engine->totals.malformed++;
		return -EINVAL;
	}

	/* Records may be unaligned (replay buffers): copy before use. */
	union {
		struct cs_ev_accept accept;
		struct cs_ev_listener_sample sample;
		struct cs_ev_handshake handshake;
		struct cs_ev_proc proc;
		struct cs_ev_request request;
		struct cs_ev_conn_close close;
		struct cs_ev_reset reset;
		struct cs_ev_thread_sample thread;
		struct cs_ev_ack_overflow ack_overflow;
		struct cs_ev_thread_cpu thread_cpu;
		struct cs_ev_thread_polls polls;
		struct cs_ev_thread_name name;
	} ev;
	memcpy(&ev, record, expected);

	switch (hdr.type) {
	case CS_EV_ACCEPT:
		err = on_accept(engine, &ev.accept);
		break;
	case CS_EV_LISTENER_SAMPLE:
		err = on_listener_sample(engine, &ev.sample);
		break;
	case CS_EV_HANDSHAKE:
		err = on_handshake(engine, &ev.handshake);
		break;
	case CS_EV_PROC_FORK:
		engine->totals.forks++;
		err = 0;
		break;
	case CS_EV_PROC_EXIT:
		engine->totals.exits++;
		err = 0;
		break;
	case CS_EV_REQUEST:
		err = cs_on_request(engine, &ev.request);
		break;
	case CS_EV_CONN_CLOSE:
		err = cs_on_conn_close(engine, &ev.close);
		break;
	case CS_EV_RESET:
		err = cs_on_reset(engine, &ev.reset);
		break;
	case CS_EV_THREAD_SAMPLE:
		err = cs_on_thread_sample(engine, &ev.thread);
		break;
	case CS_EV_THREAD_CPU:
		err = cs_on_thread_cpu(engine, &ev.thread_cpu);
		break;
	case CS_EV_THREAD_POLLS:
		err = cs_on_thread_polls(engine, &ev.polls);
		break;
	case CS_EV_THREAD_NAME:
		err = cs_on_thread_name(engine, &ev.name);
		break;
	case CS_EV_ACK_OVERFLOW: {
		struct cs_listener_stats *listener = cs_get_listener(engine, ev.ack_overflow.tuple.local_port);
		err = listener ? 0 : -ENOMEM;
		if (listener)
			listener->ack_overflows++;
		break;
	}
	default:
		err = -EINVAL;
		break;
	}
	if (err) {
		engine->totals.malformed++;
		return err;
	}
	engine->totals.records++;
	engine->totals.by_type[hdr.type]++;
	/*
	 * Forget connections not heard of for a while. A sweep walks the whole
	 * table, so it waits for CS_CONN_SWEEP_NS of record time and for as
	 * many records as 1/64 of the slots it walks: a hostile trace of ever
	 * later timestamps cannot make every record pay a walk.
	 */
	engine->records_since_sweep++;
	if (hdr.ts_ns >= engine->next_sweep_ns &&
	    engine->records_since_sweep >= (engine->conns.capacity + engine->idle_closed_from.capacity) / 64) {
		cs_conns_sweep(engine, hdr.ts_ns);
		engine->next_sweep_ns = hdr.ts_ns + CS_CONN_SWEEP_NS;
		engine->records_since_sweep = 0;
	}
	if (!engine->totals.first_ts_ns || hdr.ts_ns < engine->totals.first_ts_ns)
		engine->totals.first_ts_ns = hdr.ts_ns;
	if (hdr.ts_ns > engine->totals.last_ts_ns)
		engine->totals.last_ts_ns = hdr.ts_ns;
	return 0;
}

struct cs_conn_partial cs_engine_partial(const struct cs_engine *engine)
{
	struct cs_conn_partial partial = {
		.requests = engine->requests.partial,
		.closes = engine->lifecycle.closed_partial,
	};
	for (size_t i = 0; i < engine->listener_count; i++)
		partial.accepts += engine->listeners[i].accepts_unmatched;
	return partial;
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
