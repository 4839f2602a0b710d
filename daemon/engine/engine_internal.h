/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The record handlers of requests.c, roles.c and limit.c, which engine.c
 * dispatches to; not for the engine's users. The tables they share are
 * tables.h.
 */
#ifndef CS_ENGINE_INTERNAL_H
#define CS_ENGINE_INTERNAL_H

#include "engine.h"
#include "exchanges.h"
#include "slowest.h"

/* A parked request's hand-back (struct cs_ev_handback), until its request record. */
struct cs_handback {
	uint64_t start_ns;
	uint64_t handler_start_ns;
	uint64_t handler_end_ns;
	uint32_t worker_tid;
	uint32_t pad;
};

/* A new connection from the same client this soon after an idle close is a reconnect. */
#define CS_RECONNECT_WINDOW_NS NS_PER_SEC
/*
 * A connection's peer and ports as one key (never 0). local_port: the
 * tuple's, or the listener's when the tuple lost it (an aborted socket's
 * is cleared before its close record is written).
 */
uint64_t cs_tuple_key(const struct cs_tuple *tuple, uint16_t listener_port);

/* A client address's recent idle closes, waiting to be answered by reconnects. */
struct cs_idle_closes {
	uint64_t last_close_ns;
	uint64_t pending;
};

/*
 * A connection the engine does not follow (its accept was not seen) or no
 * longer follows (closed, and its server still reads what came before):
 * where its TLS records were, for its exchanges' kinds.
 */
struct cs_unfollowed {
	uint64_t last_ns;        /* its last record: the entry goes a second later */
	uint64_t first_bytes_ns; /* its first exchange began; 0: not seen */
	uint32_t requests_counted;
	uint8_t phase;           /* enum cs_tls_phase */
	uint8_t multiplexed;     /* its requests overlapped: so do the exchanges it still has */
	uint8_t closed;          /* it closed: forgotten a second after its last record
	                            (an open one after CS_CONN_TIMEOUT_NS, as followed ones) */
	uint8_t counted;     /* Redis, PostgreSQL: its exchanges' requests are counted */
};

int cs_requests_init(struct cs_engine *engine);
void cs_requests_free(struct cs_engine *engine);
void cs_conn_accepted(struct cs_engine *engine, const struct cs_ev_accept *ev);
int cs_on_request(struct cs_engine *engine, const struct cs_ev_request *req);
/* exemplars.c: keep candidate if it is among the CS_EXEMPLARS slowest requests. */
void cs_keep_exemplar(struct cs_request_stats *stats, const struct cs_exemplar *candidate);
/* Whether it would keep a request of total_ns: most it would not, and they need not be built. */
static inline bool cs_exemplar_admits(const struct cs_request_stats *stats, uint64_t total_ns)
{
	return cs_slowest_admits(stats->exemplars, stats->exemplar_count, CS_EXEMPLARS, total_ns);
}
/* handbacks.c: a parked request's hand-back, kept for the request record that follows it. */
int cs_on_request_handback(struct cs_engine *engine, const struct cs_ev_handback *ev);
/* The request's hand-back, if one came for it and its times lie within its read -> send. */
const struct cs_handback *cs_handback_of(const struct cs_engine *engine, const struct cs_ev_request *req);
/* Its first read -> first send split into worker_pool, handler and event_loop (runq: the reader's). */
void cs_split_handed_back(const struct cs_ev_request *req, const struct cs_handback *hb, uint64_t runq,
			  struct cs_request_split *split);
/* Credit the worker that ran a parked request, and its reader's parked_out. */
void cs_note_worker(struct cs_engine *engine, const struct cs_ev_request *req);
/* A span a thread served, into its ring of recent ones (pool_waits.c). */
void cs_note_served(struct cs_thread_stats *thread, uint64_t from_ns, uint64_t to_ns);
/*
 * Of a request's wait for a pool thread (split's worker_pool), the time the
 * thread that took it was serving others: from pickup_from to its first
 * read, or, for a parked request (hb), from its read to its handler's start.
 */
uint64_t cs_pool_wait_busy_ns(const struct cs_engine *engine, const struct cs_ev_request *req,
			      const struct cs_handback *hb, uint64_t pickup_from, const struct cs_request_split *split);
/* exchanges.c: what the server read in a connection's first exchanges, and what each exchange is. */
int cs_on_request_bytes(struct cs_engine *engine, const struct cs_ev_request_bytes *ev);
/* protocols.c: a connection's first exchange, counted by what it speaks. */
enum cs_protocol cs_count_protocol(struct cs_request_stats *stats, const struct cs_ev_request_bytes *ev);
int cs_on_client_hello(struct cs_engine *engine, const struct cs_ev_client_hello *ev);
int cs_on_server_hello(struct cs_engine *engine, const struct cs_ev_server_hello *ev);
/* exchanges.c: the connection's requests overlap (or are HTTP/2's streams): no request is timed on it. */
void cs_mark_multiplexed(struct cs_request_stats *stats, struct cs_conn *conn, enum cs_multiplex_reason why);
/* Whether an exchange is a request, and what it paid before it began when it is its connection's first. */
bool cs_exchange_is_request(struct cs_engine *engine, struct cs_conn *conn, const struct cs_ev_request *req,
			    struct cs_request_setup *setup);

int cs_on_conn_close(struct cs_engine *engine, const struct cs_ev_conn_close *ev);
int cs_on_reset(struct cs_engine *engine, const struct cs_ev_reset *ev);
void cs_conns_sweep(struct cs_engine *engine, uint64_t now_ns);
int cs_on_thread_sample(struct cs_engine *engine, const struct cs_ev_thread_sample *ev);
int cs_on_thread_cpu(struct cs_engine *engine, const struct cs_ev_thread_cpu *ev);

/* limit.c: open connections per listener, and waits at a connection limit. */
void cs_limit_on_open(struct cs_listener_stats *listener, uint64_t now_ns);
void cs_limit_on_close(struct cs_listener_stats *listener, uint64_t now_ns, uint64_t accepted_ns,
		       enum cs_slot_freer kind, uint32_t closer_tid);
void cs_limit_on_forget(struct cs_listener_stats *listener, uint64_t now_ns);
void cs_limit_on_accept(struct cs_listener_stats *listener, uint64_t previous_return_ns,
			const struct cs_ev_accept *ev);
int cs_on_thread_polls(struct cs_engine *engine, const struct cs_ev_thread_polls *ev);
int cs_on_thread_name(struct cs_engine *engine, const struct cs_ev_thread_name *ev);
/* Runtime pauses (pauses.c): the tables, each record, and the requests each overlapped. */
int cs_pauses_init(struct cs_pause_stats *stats);
void cs_pauses_free(struct cs_pause_stats *stats);
int cs_on_runtime_pause(struct cs_engine *engine, const struct cs_ev_runtime_pause *ev);
/* A request's phases as spans of time, for the pauses that overlap them. */
struct cs_phase_spans {
	uint32_t tgid;
	enum cs_cause waited;         /* what the wait before the first read was: event_loop or worker_pool */
	bool handed_back;             /* first read to first send split by a hand-back (cs_split_handed_back) */
	bool loop_turned;             /* ... or by its loop's turn to other requests (handler, then event_loop) */
	uint64_t accept_from_ns, accept_to_ns; /* the accept queue; 0: none */
	uint64_t tls_from_ns, tls_to_ns;       /* the TLS handshake or the protocol's set-up; 0: none */
	enum cs_cause setup_cause;             /* which of the two: tls_handshake or protocol_setup */
	uint64_t pickup_from_ns, first_read_ns, first_send_ns, drain_end_ns;
};
/* Each phase's overlap with the process's pauses moved to runtime_pause: the sum stays. */
void cs_take_pauses(const struct cs_engine *engine, const struct cs_ev_request *req, struct cs_phase_spans *spans,
		    uint64_t pickup_from, uint64_t drain_end, enum cs_cause waited, struct cs_request_split *split);
/* The pauses a request of split waited in remember it (the tail's evidence). */
void cs_note_pauses(struct cs_engine *engine, const struct cs_ev_request *req, const struct cs_request_split *split);
/* Upstreams (upstreams.c): an exchange as a request's split takes it. */
struct cs_upstream_exchange {
	uint64_t start_ns;      /* its connect, or its first send */
	uint64_t connect_ns;    /* its connect's time, when the exchange began with it; else 0 */
	uint64_t send_ns;
	uint64_t first_byte_ns; /* 0: not seen */
	uint64_t first_read_ns;
	uint64_t sk;            /* its connection */
	uint32_t syn_retransmits;
	uint16_t upstream;      /* index + 1 into engine->upstreams */
	uint16_t local_port;    /* the target's end of the connection: the upstream's peer port */
	uint8_t blocked;        /* its thread blocked in it: read no request, mostly off its CPU */
	uint8_t pad[7];
};
/* A request's exchanges, taken when its record comes (more: unmatched). */
#define CS_UPSTREAM_CLAIM_MAX 4
struct cs_upstream_claim {
	size_t count;
	struct cs_upstream_exchange exchanges[CS_UPSTREAM_CLAIM_MAX];
};
int cs_upstreams_init(struct cs_engine *engine);
void cs_upstreams_free(struct cs_engine *engine);
int cs_on_upstream(struct cs_engine *engine, const struct cs_ev_upstream *ev);
int cs_on_upstream_path(struct cs_engine *engine, const struct cs_ev_upstream_path *ev);
/* The upstream at the tuple's remote end (a Unix socket's: its path's hash), added on first sight; NULL: the table is full. */
struct cs_upstream_stats *cs_get_upstream(struct cs_engine *engine, const struct cs_tuple *tuple);
/* The exchanges joined to req, taken from those waiting (claim->count 0: none). */
void cs_upstream_claim(struct cs_engine *engine, const struct cs_ev_request *req, struct cs_upstream_claim *claim);
/* Its request turned out not to be one the engine times: its exchanges are not joined. */
void cs_upstream_unclaimed(struct cs_engine *engine, const struct cs_upstream_claim *claim);
/*
 * Of split, the time of claim's exchanges out of handler, and of its wait
 * for its loop (from pickup_from) the time the loop blocked in one, out of
 * event_loop: into upstream, told in use.
 */
void cs_upstream_take(struct cs_engine *engine, const struct cs_ev_request *req, const struct cs_upstream_claim *claim,
		      uint64_t pickup_from, struct cs_request_split *split, struct cs_upstream_use *use);
/* Forget exchanges whose request's record has not come for long: unmatched. */
void cs_upstreams_sweep(struct cs_engine *engine, uint64_t now_ns);
/* An event loop's exchanges by its turns (upstream_turns.c): each noted as it comes, */
int cs_upstream_turns_init(struct cs_engine *engine);
void cs_upstream_turns_free(struct cs_engine *engine);
void cs_upstream_turn_note(struct cs_engine *engine, const struct cs_ev_upstream *ev, const struct cs_upstream_exchange *x,
			   bool ambiguous);
/* and at each request's record, an ambiguous one claimed by the turn that answered it (when claim is empty). */
void cs_upstream_turn_claim(struct cs_engine *engine, const struct cs_ev_request *req, struct cs_upstream_claim *claim);
void cs_upstream_turns_sweep(struct cs_engine *engine, uint64_t now_ns);
/* A request's wait for a free connection to its upstream (upstream_queue.c): each exchange noted as it comes, */
int cs_upstream_queue_init(struct cs_engine *engine);
void cs_upstream_queue_free(struct cs_engine *engine);
void cs_upstream_queue_note(struct cs_engine *engine, const struct cs_upstream_exchange *x);
/* and of a request read at read_ns, the time before exchange x began that it waited for one. */
uint64_t cs_upstream_queued(const struct cs_engine *engine, uint64_t read_ns, const struct cs_upstream_exchange *x);
/* connscope's cost readings (cost.c). */
int cs_on_prog_cost(struct cs_engine *engine, const struct cs_ev_prog_cost *ev);
int cs_on_self_cost(struct cs_engine *engine, const struct cs_ev_self_cost *ev);

/* Local clients (clients.c): their reads of answers, each joined to the request it answered. */
int cs_clients_init(struct cs_engine *engine);
void cs_clients_free(struct cs_engine *engine);
int cs_on_client_read(struct cs_engine *engine, const struct cs_ev_client_read *ev);
/* A request record: joined to its client's read (split NULL: not timed, its read is dropped). */
void cs_clients_on_request(struct cs_engine *engine, const struct cs_ev_request *req,
			   const struct cs_request_split *split);
void cs_clients_sweep(struct cs_engine *engine, uint64_t now_ns);
/* A server connection closed: its client local (its side seen) or, a second later, remote. */
void cs_clients_on_close(struct cs_engine *engine, const struct cs_ev_conn_close *ev);

#endif /* CS_ENGINE_INTERNAL_H */
