/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The engine's statistics of a listening port (struct cs_listener_stats):
 * its accepts and their waits, its backlog, drops, local clients' slow
 * handshakes, the threads that accepted (struct cs_worker_stats), and the
 * open connections a connection limit is judged by (limit.c).
 */
#ifndef CS_LISTENER_STATS_H
#define CS_LISTENER_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "connscope.h"
#include "hist.h"

/* A thread that called accept() on a listener. */
struct cs_worker_stats {
	uint32_t tid;
	uint32_t pid;
	char comm[CS_COMM_LEN];
	uint64_t accepts;        /* connections it took */
	uint64_t eagain;         /* accept() calls that found the queue empty */
	uint64_t errors;         /* other accept() failures (EMFILE, ...) */
	uint64_t in_accept_ns;   /* time spent inside accept() calls */
	uint64_t first_call_ns;  /* its first accept() call began */
	uint64_t last_call_ns;   /* its last accept() call returned */
};

/* One listening socket of a port (SO_REUSEPORT gives several). */
struct cs_listener_socket {
	uint64_t sk;
	uint32_t drops_first;    /* sk_drops when first seen */
	uint32_t drops_last;     /* sk_drops when last seen */
	uint32_t backlog_limit;
	uint32_t backlog_last;
	bool sampled;            /* its depth was looked at (a sample, not an accept) */
};

/* Open-connection counts whose time is kept apart; more share the last. */
#define CS_OPEN_LEVELS 64

/*
 * Accepts and closes not yet matched with each other (limit.c): a server
 * may free a slot before it closes the socket, and free several at once,
 * so an accept's close may come before it or just after it.
 */
#define CS_LIMIT_UNMATCHED 8

/* An accept of a connection that queued while the acceptor was away. */
struct cs_limit_pending {
	uint64_t enter_ns;           /* the accept() call began */
	uint64_t accept_ns;          /* it returned */
	uint64_t away_ns;            /* the acceptor's time away before it */
	uint64_t waited_ns;          /* the connection's wait with the acceptor away */
	uint32_t open_before;        /* open when it came back, less the closes still due */
	uint32_t acceptor_tid;       /* the thread that accepted */
};

/* A close since the acceptor's last return that no accept has claimed. */
struct cs_limit_close {
	uint64_t ts_ns;
	uint32_t open_before;        /* open_conns just before it */
	uint8_t kind;                /* enum cs_slot_freer */
};

/* Everything known about one listening port. */
struct cs_listener_stats {
	uint16_t port;

	uint64_t accepts;            /* successful accept() calls */
	uint64_t accepts_unmatched;  /* accepted sockets whose handshake's end is
	                                unknown (no TCP stamp): no wait */
	uint64_t eagain;             /* accept() calls that returned EAGAIN */
	uint64_t accept_errors;      /* other failed accept() calls */
	uint64_t first_accept_ns;
	uint64_t last_accept_ns;
	struct cs_hist *accept_wait_ns; /* ESTABLISHED -> accept() return */
	uint64_t requests;              /* requests with a full timeline */
	struct cs_hist *latency_ns;     /* their server-side latency */

	/* queue depth seen by accept() calls (what was left behind) */
	uint64_t backlog_at_accept_sum;
	uint32_t backlog_at_accept_max;

	/* queue depth from the periodic listener samples (sock_diag) */
	uint64_t backlog_samples;        /* (socket, sample) pairs */
	uint64_t backlog_full_samples;   /* of which the queue was full */
	uint64_t backlog_nonempty_samples;
	uint64_t backlog_sample_sum;
	uint32_t backlog_max;
	uint32_t backlog_limit;
	/*
	 * The queue's first look (each socket's first sample) and the accepts
	 * since: the queue is FIFO and only accept() takes from it, so of the
	 * connections queued at the first look, all but as many as were
	 * accepted since are still there at the last (cs_listener_queued_through).
	 */
	uint64_t queue_first_ns;
	uint64_t queue_last_ns;
	uint64_t queue_first_depth;
	uint64_t accepts_since_first_look;

	uint64_t ack_overflows;          /* third ACKs dropped: queue full (see cs_listener_drops) */

	/* local clients' connects to this port that were slow */
	uint64_t handshakes_retransmitted; /* whose SYN was retransmitted */
	uint64_t handshakes_slow;        /* that got in, slowly (SYN or last-ACK drops) */
	uint64_t handshakes_failed;      /* the client gave up */
	uint64_t handshakes_delayed_1s;  /* delayed by >= 1 s */
	struct cs_hist *handshake_extra_ns; /* connect delay beyond one round trip */

	/*
	 * Open connections and the acceptor's waits with them (limit.c): a
	 * server at its connection limit stops calling accept() until one
	 * closes, and comes back right after that close.
	 */
	uint32_t open_conns;         /* followed: accepted, not yet closed or forgotten */
	uint32_t open_max;
	uint64_t open_changed_ns;    /* when open_conns last changed */
	uint64_t open_level_ns[CS_OPEN_LEVELS]; /* time with that many open (the last: or more) */
	struct cs_limit_close limit_closes[CS_LIMIT_UNMATCHED]; /* since the last return, oldest first */
	uint32_t limit_close_count;
	uint64_t queued_gaps;        /* accepts of a connection queued before the call began */
	uint64_t queued_gap_ns;      /* how long those waited with the acceptor out of accept() */
	uint64_t limit_gaps;         /* of which the acceptor came back just after a close */
	uint64_t limit_gap_ns;
	uint32_t limit_open_min;     /* open connections when those closes came: the plateau */
	uint64_t limit_level_ns[CS_OPEN_LEVELS]; /* those waits' time, by that open count */
	uint64_t limit_freed_by[3];  /* those closes, by enum cs_slot_freer */
	uint64_t limit_made_room;    /* closes by the acceptor just after its accept: room made, no
	                                slot waited for (nginx reusing connections) */
	struct cs_limit_pending limit_pending[CS_LIMIT_UNMATCHED]; /* oldest first */
	uint32_t limit_pending_count;

	struct cs_listener_socket *sockets;
	size_t socket_count, socket_cap;
	struct cs_worker_stats *workers;
	size_t worker_count, worker_cap;
};

/* What freed a slot: the close that ended a wait at a connection limit. */
enum cs_slot_freer {
	CS_FREED_BY_IDLE_CLOSE,   /* the server closed an idle keep-alive connection */
	CS_FREED_BY_CLIENT,       /* the client closed first */
	CS_FREED_BY_OTHER,        /* a server close after a response, or an abort */
};

/*
 * Listen-overflow drops since attach, as the kernel's ListenOverflows counts
 * them: the listeners' sk_drops deltas, less the second count sk_drops
 * takes for each third ACK dropped on a full queue.
 */
uint64_t cs_listener_drops(const struct cs_listener_stats *listener);

/*
 * Connections in the accept queue at its first look that were still there
 * at its last, never accepted while watched: they waited at least
 * *for_ns (the looks' span) each, their requests in no figure of the run.
 * The FIFO queue's count: those queued at the first look less the accepts
 * since, at most the queue's depth at the last look.
 */
uint64_t cs_listener_queued_through(const struct cs_listener_stats *listener, uint64_t *for_ns);

/* The worker that took the most accepts, or NULL when none did. */
const struct cs_worker_stats *cs_listener_busiest_worker(const struct cs_listener_stats *listener);

/*
 * Share of its active span (first accept call to last return) a worker
 * spent outside accept(): near 1 for an accept thread that never waits for
 * connections, i.e. one that cannot keep up.
 */
double cs_worker_busy_share(const struct cs_worker_stats *worker);

/* Threads that took at least one connection. */
size_t cs_listener_accepting_threads(const struct cs_listener_stats *listener);

#endif /* CS_LISTENER_STATS_H */
