/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The connscope engine: wire records in, statistics out.
 *
 * Pure code: no BPF, no I/O, no clock. Every record carries its own
 * timestamp, so the same engine serves the live daemon, offline replay of a
 * recorded trace, and unit tests feeding synthetic streams.
 *
 * This header is the engine's interface: make, feed and reset it, and the
 * queries over its tables. The statistics it keeps, which the analysis and
 * the renderers read, are in headers of their own: request_stats.h,
 * thread_stats.h, listener_stats.h, lifecycle_stats.h and cost_stats.h.
 */
#ifndef CS_ENGINE_H
#define CS_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client_stats.h"
#include "connscope.h"
#include "cost_stats.h"
#include "exchanges.h"
#include "hist.h"
#include "lifecycle_stats.h"
#include "listener_stats.h"
#include "pauses.h"
#include "records.h"
#include "request_stats.h"
#include "thread_stats.h"
#include "u64map.h"
#include "units.h"
#include "upstream_stats.h"


/* cs_conn.framing: a connection whose requests are counted from its messages (exchanges.c). */
enum cs_conn_framing {
	CS_FRAMING_COUNTED = 1 << 0,    /* Redis, PostgreSQL, MySQL: an overlap hides no request */
	CS_FRAMING_SETUP_SEEN = 1 << 1, /* its protocol's set-up exchanges were seen: its first request pays them */
	CS_FRAMING_GREETED = 1 << 2,    /* its server wrote first (a greeting): its set-up began at the accept */
};

/* A connection the engine follows from accept() to close. */
struct cs_conn {
	uint64_t established_ns;
	uint64_t accept_ns;
	uint64_t last_seen_ns;   /* its latest record: the accept or a request */
	uint32_t accept_tid;
	uint16_t port;
	uint16_t remote_port;
	uint32_t remote_addr_hash;
	uint16_t family;         /* AF_INET or AF_INET6 */
	uint16_t bytes_commands; /* the Redis commands that exchange read (bytes_valid) */
	uint8_t remote_addr[16]; /* the peer, for the slowest requests' list */
	/* Its exchanges (exchanges.c): set-up, TLS, overlap. */
	uint64_t first_bytes_ns;     /* its first exchange began (bytes came); 0: not yet */
	uint64_t handshake_extra_ns; /* that exchange's extra connect delay, for the first request */
	uint32_t requests_counted;   /* requests with a full timeline on it */
	uint32_t bytes_index;        /* the exchange the last bytes record was about */
	uint8_t bytes_kind;          /* enum cs_exchange_kind of that exchange */
	uint8_t bytes_valid;         /* 1: a bytes record waits for its request record */
	uint8_t bytes_ended;         /* 1: the TLS handshake ended in that exchange */
	uint8_t tls_phase;           /* enum cs_tls_phase; CS_TLS_NONE: not TLS (or unknown) */
	uint8_t multiplexed;         /* enum cs_multiplex_reason; 0: not seen */
	uint8_t hello_psk;           /* its ClientHello's session offer: 1 + enum cs_psk_offer; 0: no hello */
	uint8_t alpn_offer;          /* its ClientHello's ALPN offer: 1 + enum cs_alpn_offer; 0: no hello */
	uint8_t framing;             /* enum cs_conn_framing: its requests counted from its messages */
	uint8_t protocol;            /* 1 + enum cs_protocol of its first bytes; 0: not seen */
	uint32_t first_flight_bytes; /* bytes the server sent in its first exchange: a TLS
	                                server's first flight */
	uint32_t bytes_data_us;      /* in that exchange, after the handshake's end: when its first
	                                application data was read, us after its start; 0: none */
	uint32_t request_start_us;   /* the same, for the request record being judged */
};



struct cs_engine_totals {
	uint64_t records;                  /* records accepted */
	uint64_t by_type[CS_EV_TYPE_MAX];
	uint64_t malformed;                /* records rejected as malformed */
	uint64_t forks;
	uint64_t exits;
	uint64_t first_ts_ns;              /* earliest record */
	uint64_t last_ts_ns;               /* latest record */
};

#define CS_MAX_CONNS (1u << 20)  /* connections followed at once */
/*
 * A followed connection with no record for this long is forgotten (its
 * close was lost with a full ring buffer, or it idles): what the engine
 * keeps of it only serves its first request, which cannot have waited in
 * the accept queue that long. Checked every CS_CONN_SWEEP_NS of record time.
 */
#define CS_CONN_TIMEOUT_NS (300 * NS_PER_SEC)
#define CS_CONN_SWEEP_NS (10 * NS_PER_SEC)
/* A full table forgets the least recently seen of this many connections. */
#define CS_CONN_EVICT_SAMPLE 32

/* Records about connections the engine could not follow whole. */
struct cs_conn_partial {
	uint64_t accepts;        /* accepted, never seen entering the queue */
	uint64_t requests;       /* begun before attach: no timeline */
	uint64_t closes;         /* closed, never seen established */
};

struct cs_upstream_spans;

struct cs_engine {
	struct cs_listener_stats *listeners;
	size_t listener_count, listener_cap;
	struct cs_engine_totals totals;
	struct cs_request_stats requests;
	struct cs_lifecycle_stats lifecycle;
	struct cs_cost_stats cost;
	struct cs_pause_stats pauses;      /* runtime pauses (pauses.h) */
	struct cs_u64map conns;            /* sk -> struct cs_conn */
	struct cs_u64map threads;          /* tid -> struct cs_thread_stats */
	struct cs_u64map idle_closed_from; /* remote address -> struct cs_idle_closes */
	struct cs_u64map handbacks;        /* sk -> struct cs_handback of its latest parked request */
	uint64_t handbacks_dropped;        /* table full: a parked request's split not kept */
	struct cs_u64map tls_closed;       /* a TLS connection that closed: its peer and
	                                      ports (cs_tuple_key) -> the close's time, ns */
	struct cs_u64map unfollowed;       /* socket -> struct cs_unfollowed */
	struct cs_upstream_stats *upstreams; /* [upstream_count]: the target's upstreams (upstreams.c) */
	size_t upstream_count;
	uint64_t upstream_untracked;       /* exchanges with upstreams past CS_UPSTREAMS_MAX: counted only */
	struct cs_u64map upstream_pending; /* a request (its reader, its first read) -> its exchanges */
	struct cs_u64map upstream_blocked; /* tid -> the exchanges its thread last blocked in */
	struct cs_u64map upstream_turns;   /* tid -> the exchanges its loop read last (upstream_turns.c) */
	struct cs_upstream_spans *upstream_spans; /* per upstream, its latest exchanges (upstream_queue.c) */
	struct cs_client_stats *clients;   /* [client_count]: the local clients (clients.c) */
	size_t client_count;
	uint64_t client_reads_untracked;   /* reads by clients past CS_CLIENTS_MAX: counted only */
	struct cs_u64map client_pending;   /* client_key -> a read or a request waiting for the other */
	struct cs_u64map client_conns;     /* client_key -> whether its client's side was seen (clients.c) */
	uint64_t remote_connections;       /* closed with requests, their client's side never seen */
	uint64_t conns_evicted;            /* table full: the least recently seen forgotten */
	uint64_t conns_timed_out;          /* forgotten after CS_CONN_TIMEOUT_NS without a record */
	uint64_t conns_forgotten_between;  /* forgotten at a window's close (cs_engine_forget_connections) */
	uint64_t next_sweep_ns;            /* record time of the next time-out sweep */
	uint64_t records_since_sweep;
	size_t evict_cursor;               /* where the next eviction sample starts */
};

struct cs_engine *cs_engine_new(void);
void cs_engine_free(struct cs_engine *engine);

/*
 * Clear the statistics, keep following open connections (engine_reset.c).
 * Returns 0, or -ENOMEM with the engine unchanged.
 */
int cs_engine_reset(struct cs_engine *engine);

/*
 * Feed one raw wire record of len bytes. Returns 0, or -EINVAL when the
 * record is malformed (unknown type, wrong size): it is counted in
 * totals.malformed and otherwise ignored. -ENOMEM when the engine could not
 * grow a table (the record is counted as malformed too, never silently lost).
 */
int cs_engine_feed(struct cs_engine *engine, const void *record, size_t len);

/*
 * Between tracing windows where nothing of a connection is seen
 * (connscoped --between-windows counters), at a window's close: forget
 * every followed connection, which a close unseen would leave open until
 * its time-out. The next window adopts those still open.
 */
void cs_engine_forget_connections(struct cs_engine *engine, uint64_t now_ns);

/*
 * Connections closed with requests whose client's side was never seen:
 * remote clients (or in a namespace no target is in), those still waiting
 * a second for their client's read included (clients.c).
 */
uint64_t cs_engine_remote_connections(const struct cs_engine *engine);

/* Partial connections, summed over listeners: never split, never in a latency. */
struct cs_conn_partial cs_engine_partial(const struct cs_engine *engine);

/* Listener of a port, or NULL. */
const struct cs_listener_stats *cs_engine_listener(const struct cs_engine *engine, uint16_t port);

/* Split a request record into causes; false when it has no full timeline. */
bool cs_split_request(const struct cs_engine *engine, const struct cs_ev_request *req,
		      struct cs_request_split *split);

/*
 * What the engine made of the request record it was fed last (a reader
 * of the same stream after the engine, as flamegraph's): 1 a request,
 * with its set-up; 0 not one (a TLS handshake's exchange, a multiplexed
 * connection's); -1 it was not the last request record fed.
 */
int cs_engine_request_verdict(const struct cs_engine *engine, const struct cs_ev_request *req,
			      struct cs_request_setup *setup);

/* The set-up as a request record alone tells it: exchange 0 is the connection's first request. */
void cs_setup_from_record(const struct cs_ev_request *req, struct cs_request_setup *setup);

/* cs_split_request with the set-up given (the engine's own use). */
bool cs_split_request_setup(const struct cs_engine *engine, const struct cs_ev_request *req,
			    const struct cs_request_setup *setup, struct cs_request_split *split);

/* The handler a worker ran for a parked request's reader (handbacks.c), as its split takes it. */
struct cs_request_worker {
	uint64_t handler_start_ns;
	uint64_t handler_end_ns;
	uint32_t worker_tid;
	uint32_t pad;
};

/* The worker of request req (fed last): false when no thread ran its handler for its reader. */
bool cs_request_worker(const struct cs_engine *engine, const struct cs_ev_request *req,
		       struct cs_request_worker *worker);

/*
 * The acceptor's time outside accept(), split (limit.c): on a CPU (its
 * sampled CPU time), in handlers (requests it read), waiting for a CPU
 * (its run-queue total), and blocked: the rest.
 * cpu_known is false without CPU samples (a trace recorded before them).
 */
struct cs_acceptor_time {
	uint64_t outside_ns;
	uint64_t on_cpu_ns;
	uint64_t handler_ns;
	uint64_t runq_ns;
	uint64_t blocked_ns;
	bool cpu_known;
};
void cs_acceptor_time(const struct cs_engine *engine, const struct cs_worker_stats *worker,
		      struct cs_acceptor_time *time);

/*
 * A listener's server at its connection limit (limit.c): the evidence,
 * and flagged when its acceptor was away from accept() with connections
 * queued, came back right after a close in most of those waits, and was
 * blocked rather than busy meanwhile.
 */
struct cs_limit_evidence {
	bool flagged;
	uint32_t open_connections;   /* at the plateau: open when a close let the acceptor back */
	uint32_t open_min;           /* the lowest such count (== open_connections: a flat plateau) */
	uint64_t plateau_ns;         /* time open connections stayed at their highest */
	uint64_t waits;              /* accepts the acceptor came back to after a close */
	uint64_t queued_waits;       /* accepts of connections queued while it was away */
	uint64_t waited_ns;          /* the accept wait those connections had with it away */
	double wait_share;           /* of all the wait queued connections had with it away */
	uint64_t freed_by[3];        /* the closes that let it back, by enum cs_slot_freer */
	uint64_t made_room;          /* closes the acceptor made itself just after an accept */
	uint32_t acceptor_tid;
	char acceptor_comm[CS_COMM_LEN];
	double blocked_share;        /* of its time outside accept(); -1: CPU time unknown */
	double on_cpu_share;
	double handler_share;
};
void cs_listener_limit(const struct cs_engine *engine, const struct cs_listener_stats *listener,
		       struct cs_limit_evidence *evidence);

#endif /* CS_ENGINE_H */
