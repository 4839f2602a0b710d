/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Attribution: where the tail's time went (tail.h, included), and the
 * conditions that shape the tail (non-persistent connections, idle
 * timeouts, listen overflow, accept contention, CPU saturation). Pure:
 * computed from the engine's state and the run's metadata. The
 * conditions read the diagnosis, which reads the tail: tail.c, then
 * diagnose.c, then attrib.c; cs_analyze (analysis.h) runs the three
 * once.
 */
#ifndef CS_ATTRIB_H
#define CS_ATTRIB_H

#include <stdbool.h>
#include <stdint.h>

#include "clients.h"
#include "diagnose.h"
#include "engine.h"
#include "figures.h"
#include "kinds.h"
#include "run_meta.h"
#include "tail.h"

/* What requests waited on when they waited for a pool (pool_saturation.wait_cause). */
enum cs_pool_wait_cause {
	CS_POOL_WAIT_NONE,       /* no wait for the pool worth a line in the tail */
	CS_POOL_WAIT_POOL,       /* the pool's threads were busy serving: saturated */
	CS_POOL_WAIT_RUN_QUEUE,  /* they were not busy, and the server's threads waited for CPUs */
	CS_POOL_WAIT_NOT_KNOWN,  /* they were not busy, and nothing else seen explains it */
	CS_POOL_WAIT_RUNTIME_PAUSE, /* they were not busy: the runtime had stopped them (runtime_pauses) */
	CS_POOL_WAIT_CAUSE_COUNT
};

/* "pool", "run_queue", "not_known", "runtime_pause", "none". */
extern const char *const cs_pool_wait_cause_names[CS_POOL_WAIT_CAUSE_COUNT];

struct cs_conditions {
	struct {
		bool flagged;
		uint64_t connections;           /* connections that carried requests */
		double requests_per_connection;
		double setup_share;             /* share of requests that paid set-up */
		double setup_cost_us;           /* mean set-up paid: accept queue + SYN retries + TLS */
		double setup_accept_us;         /* of which the accept queue */
		double setup_tcp_us;            /* ... SYN and last-ACK retries */
		double setup_tls_us;            /* ... the TLS handshake */
		double setup_protocol_us;       /* ... the protocol's set-up (a database backend's start-up) */
		double setup_time_share;        /* of the requests' summed latency, the set-up's */
		double median_latency_us;
	} non_persistent;
	struct {
		bool flagged;
		uint64_t server_idle_closes;
		double inferred_timeout_ms;     /* the idle gaps' mode */
		uint64_t reconnects;
		uint64_t keepalive_race_resets;
		uint64_t pool_closes;           /* of which a full hand-off pool's poller's, within a
		                                   request's serving time (pool_saturation.idle_closes) */
	} idle_timeout;
	struct {
		bool flagged;
		uint64_t drops;                 /* as the kernel's ListenOverflows: SYNs and ... */
		uint64_t ack_drops;             /* ... handshakes' last ACKs dropped on a full queue */
		uint64_t delayed_connections;   /* local clients delayed >= 1 s */
		uint64_t failed_connections;    /* local clients that gave up */
	} listen_overflow;
	struct {
		bool flagged;
		bool acceptor_bottleneck;
		bool unfair;
		bool thundering_herd;
		double busiest_worker_share;
		uint64_t eagain;
		double accept_wait_p99_us;
	} accept_contention;
	struct {
		bool flagged;
		uint16_t port;                  /* the listener (flagged, else the most waits) */
		uint32_t open_connections;      /* the plateau */
		double plateau_s;               /* time open connections stayed there */
		double blocked_share;           /* the acceptor's time outside accept(); -1: unknown */
		double on_cpu_share;
		double handler_share;
		uint64_t waits;                 /* accepts it came back to right after a close */
		uint64_t queued_waits;          /* accepts of connections queued while it was away */
		double wait_share;              /* of those connections' wait, the share that ended with a close */
		double accept_wait_p99_us;
		uint64_t freed_by_idle_close;   /* the closes that freed those slots */
		uint64_t freed_by_client;
		uint64_t freed_other;
		uint64_t made_room;             /* closes by the acceptor just after its accept: room made, not waited for */
		bool held_by_pool;              /* a limit the acceptor's own hand-off pool held (Apache's
		                                   event MPM): pool_saturation's, not flagged here */
	} connection_limit;
	struct {
		bool flagged;
		uint64_t runq_total_ns;         /* all server threads */
		uint32_t top_tid;
		char top_comm[CS_COMM_LEN];
		uint64_t top_runq_ns;
		double top_runq_share;          /* of the run's duration */
		uint64_t runq_max_ns;
		bool runq_max_is_mean; /* a thread's mean wait: the longest is at least that */
	} cpu_saturation;
	struct cs_pool_condition {
		bool flagged;
		enum cs_pool_kind kind;         /* handoff: a poller hands requests on; accept: workers accept */
		enum cs_pool_server server;     /* accept: the server, from its process name */
		uint16_t port;                  /* accept: the listener whose backlog is the pool's queue */
		uint32_t pool_threads;          /* handoff: threads that read requests a poller handed them;
		                                   accept: threads that accept and serve what they accept */
		uint32_t busy_threads;          /* accept: of which served most of their time away from accept() */
		bool busy;                      /* the pool was busy: its threads served (handoff: while the
		                                   tail's requests waited; accept: all of them) */
		enum cs_pool_wait_cause wait_cause; /* what the tail's wait for the pool was */
		uint32_t poller_tid;            /* handoff: the thread that handed out the most */
		char poller_comm[CS_COMM_LEN];
		double busy_share;              /* handoff: serving time over each thread's first request to its
		                                   last; accept: over their time away from accept() */
		double busy_while_waiting_share; /* handoff: of the tail's waits for the pool, the time the
		                                   threads that took the requests served others; -1: none */
		double on_cpu_share;            /* accept: of that time away, on a CPU (-1: not sampled), */
		double runq_share;              /* waiting for a CPU, */
		double blocked_share;           /* blocked off a CPU in handlers */
		double queue_nonempty_share;    /* accept: backlog samples that found connections waiting; -1: none */
		double tail_share;              /* the wait's share of the tail's time (worker_pool; accept_queue) */
		double tail_wait_mean_us;       /* a tail request's mean wait for the pool */
		double wait_p99_us;             /* over all requests (accept: the listener's accept wait) */
		/*
		 * handoff: its poller is its acceptor, and stopped accepting
		 * while no pool thread was free (connection_limit.held_by_pool):
		 * the accept queue's wait is the pool's too, in tail_share and
		 * tail_wait_mean_us; port and accept_wait_p99_us are the listener's.
		 */
		bool accept_held;
		double accept_wait_p99_us;
		uint64_t dropped_closes;        /* handoff: keep-alive connections closed with a request
		                                   waiting unread while the pool was saturated */
		double dropped_wait_mean_us;    /* how long those requests had waited */
		uint64_t idle_closes;           /* handoff: idle ones it closed within a request's serving
		                                   time (idle_timeout.pool_closes) */
		double idle_gap_max_us;         /* the longest of their gaps */
		double handler_p99_us;          /* the handlers' p99 it stayed within */
	} pool_saturation;
	struct cs_pauses_condition {
		bool flagged;
		uint64_t pauses;                /* the run's: the runtime stopped the server's threads */
		uint64_t gc_pauses;             /* of which a collection ran in */
		uint64_t other_pauses;          /* other VM operations (thread dumps, deoptimisation...); the
		                                   uprobes' pauses are neither: not told */
		uint64_t total_ns;
		uint64_t max_ns;
		uint64_t p50_ns;
		uint64_t reach_p50_ns;          /* time to stop every thread (time to safepoint); 0: not known */
		uint64_t reach_max_ns;
		double stopped_share;           /* of the run's duration, stopped */
		double tail_share;              /* runtime_pause's share of the tail's time */
		uint64_t tail_pauses;           /* pauses that overlapped requests of the tail */
		char top_gc_op[CS_PAUSE_OP_NAME_LEN];    /* the collections' VM operation ("G1CollectForAllocation") */
		char top_other_op[CS_PAUSE_OP_NAME_LEN]; /* the commonest other one ("ThreadDump"); "": none */
		uint64_t top_other_op_pauses;
		bool named;                     /* operations told (USDT); false: uprobes saw the pauses alone */
		uint64_t vm_cpu_wait_ns;        /* the VM thread's waits for a CPU inside the pauses */
		double vm_cpu_wait_share;       /* of those pauses' time; -1: not known (older traces). Who
		                                   held the CPUs is not told: in a parallel collection on few
		                                   cores, often the JVM's own collector threads */
	} runtime_pauses;
	struct cs_client_bound_condition {
		bool flagged;
		uint32_t clients;               /* local clients seen */
		uint32_t bound_clients;         /* of which their own delay bound */
		struct cs_client_view worst;    /* the one whose own delay weighs most */
	} client_bound;
	struct {
		uint64_t closed_by_server;
		uint64_t closed_by_client;
		uint64_t aborted;
		uint64_t time_wait_created;
		uint64_t time_wait_now;         /* server closes in the last 60 s of the run */
		uint64_t resets_sent;
		uint64_t resets_received;
		double lifetime_p50_ms;
		double lifetime_p99_ms;
		double lifetime_max_ms;
	} lifecycle;
	/* Each flagged condition's figures, by enum: the numbers its line quotes (none when not flagged). */
	struct cs_figures seen[CS_CONDITION_COUNT];
};

/* The conditions, from the tail and the diagnosis's findings (cs_analyze's last step). */
void cs_conditions_from(const struct cs_engine *engine, const struct cs_report_meta *meta,
			const struct cs_tail *tail, const struct cs_finding *findings, size_t finding_count,
			struct cs_conditions *conditions);

/* Fills conditions->seen from the conditions' fields (condition_figures.c; cs_conditions_from's last step). */
void cs_conditions_figures(struct cs_conditions *conditions);

/* runtime_pauses, from the engine's pauses and the tail (runtime_pauses.c); before pool_saturation. */
/* client_bound (analysis/clients.c). */
void cs_client_bound_condition(const struct cs_engine *engine, struct cs_conditions *conditions);
void cs_runtime_pauses_condition(const struct cs_engine *engine, const struct cs_report_meta *meta,
				 const struct cs_tail *tail, struct cs_conditions *conditions);

/* Whether condition is flagged: the conditions read by enum, never by name. */
bool cs_condition_flagged(const struct cs_conditions *conditions, enum cs_condition condition);

/*
 * The same conditions, computing the tail and the diagnosis first: a
 * wrapper over cs_analyze for the callers that want the conditions alone
 * (analysis.c).
 */
void cs_compute_conditions(const struct cs_engine *engine, const struct cs_report_meta *meta,
			   struct cs_conditions *conditions);

#endif /* CS_ATTRIB_H */
