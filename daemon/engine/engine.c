// SPDX-License-Identifier: BSD-2-Clause
/*
 * The engine's top: its life (new, free), each wire record checked and
 * handed to its handler (the listener's records here; requests.c, roles.c
 * and limit.c for the rest), and the run's totals. Nothing in the engine
 * calls back up here: the handlers share the tables of tables.c.
 */
#include "engine.h"
#include "engine_internal.h"
#include "tables.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

struct cs_engine *cs_engine_new(void)
{
	struct cs_engine *engine = calloc(1, sizeof(struct cs_engine));
	if (engine && (cs_requests_init(engine) || cs_pauses_init(&engine->pauses) || cs_upstreams_init(engine) ||
		       cs_clients_init(engine))) {
		cs_engine_free(engine);
		return NULL;
	}
	return engine;
}

void cs_engine_free(struct cs_engine *engine)
{
	if (!engine)
		return;
	for (size_t i = 0; i < engine->listener_count; i++)
		cs_listener_free(&engine->listeners[i]);
	free(engine->listeners);
	cs_requests_free(engine);
	cs_pauses_free(&engine->pauses);
	cs_upstreams_free(engine);
	cs_clients_free(engine);
	free(engine);
}

static int on_accept(struct cs_engine *engine, const struct cs_ev_accept *ev)
{
	struct cs_listener_stats *listener = cs_get_listener(engine, ev->listener_port);
	if (!listener)
		return -ENOMEM;
	/*
	 * enter_ns 0: a call begun before the attach (a blocking acceptor
	 * waits in one). Its connection counts; its listener socket, the
	 * queue it saw and the time the call took are not known.
	 */
	bool call_seen = ev->enter_ns != 0;
	struct cs_worker_stats *worker = cs_get_worker(listener, ev->tid, ev->tgid, ev->comm);
	struct cs_listener_socket *socket =
		call_seen ? cs_get_socket(listener, ev->listener_sk, ev->listener_drops) : NULL;
	/* Every accepting thread is a thread of the report, even one that never reads. */
	struct cs_thread_stats *thread = cs_get_thread(engine, ev->tid, ev->tgid, ev->comm);
	if (!worker || (call_seen && !socket) || !thread)
		return -ENOMEM;
	if (call_seen) {
		socket->drops_last = ev->listener_drops;
		socket->backlog_limit = ev->backlog_limit;
		socket->backlog_last = ev->backlog;
		listener->backlog_limit = ev->backlog_limit;
		cs_limit_on_accept(listener, worker->last_call_ns, ev);
		if (ev->hdr.ts_ns >= ev->enter_ns)
			worker->in_accept_ns += ev->hdr.ts_ns - ev->enter_ns;
		if (!worker->first_call_ns || ev->enter_ns < worker->first_call_ns)
			worker->first_call_ns = ev->enter_ns;
	} else if (!worker->first_call_ns) {
		worker->first_call_ns = ev->hdr.ts_ns; /* its time from this return on */
	}
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
	listener->accepts_since_first_look += listener->queue_first_ns && ev->hdr.ts_ns >= listener->queue_first_ns;
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
	struct cs_listener_socket *socket = cs_get_socket(listener, ev->sk, ev->drops);
	if (!socket)
		return -ENOMEM;
	socket->drops_last = ev->drops;
	socket->backlog_limit = ev->backlog_limit;
	socket->backlog_last = ev->backlog;
	if (!socket->sampled) {
		socket->sampled = true;
		listener->queue_first_depth += ev->backlog;
		if (!listener->queue_first_ns)
			listener->queue_first_ns = ev->hdr.ts_ns;
	}
	if (ev->hdr.ts_ns > listener->queue_last_ns)
		listener->queue_last_ns = ev->hdr.ts_ns;

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

/* One record of any type, copied out of the caller's buffer. */
union any_record {
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
	struct cs_ev_handback handback;
	struct cs_ev_prog_cost prog_cost;
	struct cs_ev_self_cost self_cost;
	struct cs_ev_request_bytes bytes;
	struct cs_ev_client_hello hello;
	struct cs_ev_server_hello server_hello;
	struct cs_ev_runtime_pause pause;
	struct cs_ev_upstream upstream;
	struct cs_ev_upstream_path upstream_path;
	struct cs_ev_client_read client_read;
};

/*
 * A process's name, from its fork or exit record, for its main thread if
 * it served without one yet: a forked worker (a PostgreSQL backend, a
 * pre-fork pool's) that has exited by the end can no longer be named from
 * /proc.
 */
static int name_process(struct cs_engine *engine, const struct cs_ev_proc *ev)
{
	struct cs_thread_stats *thread = cs_u64map_get(&engine->threads, ev->pid);
	if (thread && !thread->comm[0] && ev->comm[0]) {
		memcpy(thread->comm, ev->comm, CS_COMM_LEN);
		thread->comm[CS_COMM_LEN - 1] = '\0';
	}
	return 0;
}

/* The header, checked against the type's size. Returns the record's size, or 0 when malformed. */
static size_t read_header(const void *record, size_t len, struct cs_event_header *hdr)
{
	if (len < sizeof(*hdr))
		return 0;
	memcpy(hdr, record, sizeof(*hdr));
	size_t expected = cs_record_size(hdr->type);
	if (!expected || hdr->size != expected || len < expected)
		return 0;
	return expected;
}

static int on_ack_overflow(struct cs_engine *engine, const struct cs_ev_ack_overflow *ev)
{
	struct cs_listener_stats *listener = cs_get_listener(engine, ev->tuple.local_port);
	if (!listener)
		return -ENOMEM;
	listener->ack_overflows++;
	return 0;
}

/* Hand the record to its type's handler. */
static int dispatch(struct cs_engine *engine, uint16_t type, const union any_record *ev)
{
	switch (type) {
	case CS_EV_ACCEPT:
		return on_accept(engine, &ev->accept);
	case CS_EV_LISTENER_SAMPLE:
		return on_listener_sample(engine, &ev->sample);
	case CS_EV_HANDSHAKE:
		return on_handshake(engine, &ev->handshake);
	case CS_EV_PROC_FORK:
		engine->totals.forks++;
		return name_process(engine, &ev->proc);
	case CS_EV_PROC_EXIT:
		engine->totals.exits++;
		return name_process(engine, &ev->proc);
	case CS_EV_REQUEST:
		return cs_on_request(engine, &ev->request);
	case CS_EV_CONN_CLOSE:
		return cs_on_conn_close(engine, &ev->close);
	case CS_EV_RESET:
		return cs_on_reset(engine, &ev->reset);
	case CS_EV_THREAD_SAMPLE:
		return cs_on_thread_sample(engine, &ev->thread);
	case CS_EV_THREAD_CPU:
		return cs_on_thread_cpu(engine, &ev->thread_cpu);
	case CS_EV_THREAD_POLLS:
		return cs_on_thread_polls(engine, &ev->polls);
	case CS_EV_THREAD_NAME:
		return cs_on_thread_name(engine, &ev->name);
	case CS_EV_REQUEST_BYTES:
		return cs_on_request_bytes(engine, &ev->bytes);
	case CS_EV_CLIENT_HELLO:
		return cs_on_client_hello(engine, &ev->hello);
	case CS_EV_SERVER_HELLO:
		return cs_on_server_hello(engine, &ev->server_hello);
	case CS_EV_RUNTIME_PAUSE:
		return cs_on_runtime_pause(engine, &ev->pause);
	case CS_EV_UPSTREAM:
		return cs_on_upstream(engine, &ev->upstream);
	case CS_EV_UPSTREAM_PATH:
		return cs_on_upstream_path(engine, &ev->upstream_path);
	case CS_EV_CLIENT_READ:
		return cs_on_client_read(engine, &ev->client_read);
	case CS_EV_ACK_OVERFLOW:
		return on_ack_overflow(engine, &ev->ack_overflow);
	case CS_EV_HANDBACK:
		return cs_on_request_handback(engine, &ev->handback);
	case CS_EV_PROG_COST:
		return cs_on_prog_cost(engine, &ev->prog_cost);
	case CS_EV_SELF_COST:
		return cs_on_self_cost(engine, &ev->self_cost);
	default:
		return -EINVAL;
	}
}

/*
 * Forget connections not heard of for a while. A sweep walks the whole
 * table, so it waits for CS_CONN_SWEEP_NS of record time and for one
 * record per SWEEP_SLOTS_PER_RECORD slots it walks: a hostile trace of
 * ever later timestamps cannot make every record pay a walk.
 */
#define SWEEP_SLOTS_PER_RECORD 64

static void sweep_when_due(struct cs_engine *engine, uint64_t ts_ns)
{
	engine->records_since_sweep++;
	if (ts_ns >= engine->next_sweep_ns &&
	    engine->records_since_sweep >=
		    (engine->conns.capacity + engine->idle_closed_from.capacity) / SWEEP_SLOTS_PER_RECORD) {
		cs_conns_sweep(engine, ts_ns);
		engine->next_sweep_ns = ts_ns + CS_CONN_SWEEP_NS;
		engine->records_since_sweep = 0;
	}
}

int cs_engine_feed(struct cs_engine *engine, const void *record, size_t len)
{
	struct cs_event_header hdr;
	size_t size = read_header(record, len, &hdr);
	if (!size) {
		engine->totals.malformed++;
		return -EINVAL;
	}
	/*
	 * A record is read where it lies when aligned, as the ring buffer's and
	 * the trace reader's are; one that may not be (a caller's byte buffer)
	 * is copied first.
	 */
	union any_record copy;
	const union any_record *ev = record;
	if ((uintptr_t)record % _Alignof(union any_record)) {
		memcpy(&copy, record, size);
		ev = &copy;
	}
	int err = dispatch(engine, hdr.type, ev);
	if (err) {
		engine->totals.malformed++;
		return err;
	}
	engine->totals.records++;
	engine->totals.by_type[hdr.type]++;
	sweep_when_due(engine, hdr.ts_ns);
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
