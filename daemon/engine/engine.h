/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The connscope engine: wire records in, statistics out.
 *
 * Pure code: no BPF, no I/O, no clock. Every record carries its own
 * timestamp, so the same engine serves the live daemon, offline replay of a
 * recorded trace, and unit tests feeding synthetic streams.
 */
#ifndef CS_ENGINE_H
#define CS_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "connscope.h"
#include "hist.h"
#include "pauses.h"
#include "records.h"
#include "u64map.h"
#include "units.h"

/* Where a request's time went. Order is the report's order. */
enum cs_cause {
	CS_CAUSE_ACCEPT_QUEUE,    /* ESTABLISHED -> accept() (first request on a connection) */
	CS_CAUSE_LISTEN_OVERFLOW, /* extra connect delay from SYN retransmits */
	CS_CAUSE_RUN_QUEUE,       /* the serving thread was runnable, not running */
	CS_CAUSE_EVENT_LOOP,      /* data ready, the thread busy elsewhere or not polling */
	CS_CAUSE_WORKER_POOL,     /* handed off by a poller, waiting for a free pool thread */
	CS_CAUSE_HANDLER,         /* first read -> first send, on CPU or blocked */
	CS_CAUSE_SEND_DRAIN,      /* first send -> the response's last byte left */
	CS_CAUSE_TLS_HANDSHAKE,   /* the TLS handshake's exchanges before the first request */
	CS_CAUSE_RUNTIME_PAUSE,   /* the runtime (a JVM's safepoint) had stopped the server's threads */
	CS_CAUSE_COUNT,
};

extern const char *const cs_cause_names[CS_CAUSE_COUNT];

/* One request's time, split by cause (they add up to total_ns). */
struct cs_request_split {
	uint64_t cause_ns[CS_CAUSE_COUNT];
	uint64_t total_ns;
};

/* A slow request kept whole, as evidence for the tail's causes. */
struct cs_exemplar {
	struct cs_request_split split;
	uint64_t end_ns;
	uint32_t reader_tid;
	uint32_t sender_tid;
	uint32_t tgid;
	uint32_t bytes_out;
	uint32_t send_eagain;
	uint16_t port;
	uint16_t flags;
	uint32_t index;       /* request number on its connection */
	uint16_t peer_family; /* 0: the connection's accept was not seen */
	uint16_t peer_port;
	uint8_t peer_addr[16];
};

#define CS_EXEMPLARS 512

/* A server thread: what it served and how long it waited for a CPU. */
struct cs_thread_stats {
	uint32_t tid;
	uint32_t tgid;
	char comm[CS_COMM_LEN];
	char runtime_name[CS_RUNTIME_NAME_LEN]; /* its JVM's name for it; "": none known */
	uint64_t requests;         /* requests it read */
	uint64_t cause_ns[CS_CAUSE_COUNT]; /* of the requests it read */
	uint64_t runq_total_ns;    /* from its samples: all its run-queue waits */
	uint64_t runq_max_ns;
	uint64_t runq_waits;
	uint32_t runq_per_request[CS_COARSE_BUCKETS]; /* each request's run-queue time (ns) */
	uint64_t cpu_ns;           /* from its samples: time on a CPU since attach */
	uint64_t cpu_sampled_ns;   /* when that was read; 0: never (a trace without it) */
	/* The epoll path (struct cs_ev_thread_polls, totals since attach). */
	uint64_t ready_polls;
	uint64_t reads_own;
	uint64_t reads_handed;
	uint64_t handed_out;
	uint64_t reads_blocking;
	uint64_t accepts;          /* connections it accepted, any listener */
	uint64_t serving_ns;       /* first read to last send of the requests it read */
	uint64_t first_read_ns;    /* the first of those requests' first read */
	uint64_t last_send_ns;     /* the last of their last sends */
	uint64_t handed_requests;  /* requests it read that a poller handed it */
	uint64_t executed;         /* parked requests whose handler it ran for their reader */
	uint64_t parked_out;       /* requests it read and another thread's handler answered */
};

/* What a thread does, from its behaviour (roles.c); a thread may have several. */
enum cs_thread_role {
	CS_ROLE_ACCEPTOR = 1 << 0,   /* calls accept() */
	CS_ROLE_POLLER = 1 << 1,     /* polls; other threads read what it polled */
	CS_ROLE_EVENT_LOOP = 1 << 2, /* polls and serves the sockets it polled */
	CS_ROLE_WORKER = 1 << 3,     /* serves sockets another thread polled, reads blocking,
	                                or runs handlers of requests a loop read (an executor) */
	CS_ROLE_CARRIER = 1 << 4,    /* a JVM's virtual-thread carrier that served requests: its
	                                virtual threads' polls and reads are the carrier's */
};
#define CS_ROLE_COUNT 5
extern const char *const cs_role_names[CS_ROLE_COUNT]; /* by bit position */

/* The roles of a thread. */
unsigned cs_thread_roles(const struct cs_thread_stats *thread);
/*
 * A JVM's virtual-thread carrier: the JVM names the virtual-thread
 * scheduler's threads ForkJoinPool-N-worker-M (known at the end of a run),
 * and one that served requests ran virtual threads (a ForkJoinPool of the
 * server's own that reads sockets is taken for one too).
 */
bool cs_thread_is_carrier(const struct cs_thread_stats *thread);
/* "acceptor,poller" (at most 48 bytes), "" for none. */
void cs_format_roles(char *out, size_t len, unsigned roles);

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
	uint16_t pad;
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
	uint8_t pad2[2];
	uint32_t first_flight_bytes; /* bytes the server sent in its first exchange: a TLS
	                                server's first flight */
	uint32_t bytes_data_us;      /* in that exchange, after the handshake's end: when its first
	                                application data was read, us after its start; 0: none */
	uint32_t request_start_us;   /* the same, for the request record being judged */
};

/* A parked request's hand-back (struct cs_ev_handback), until its request record. */
struct cs_handback {
	uint64_t start_ns;
	uint64_t handler_start_ns;
	uint64_t handler_end_ns;
	uint32_t worker_tid;
	uint32_t pad;
};

/* What one exchange (bytes in, then the answer) of a connection is. */
enum cs_exchange_kind {
	CS_EXCHANGE_REQUEST = 0,    /* a request: application bytes in, an answer out */
	CS_EXCHANGE_TLS_HANDSHAKE,  /* TLS handshake records only: connection set-up */
	CS_EXCHANGE_TLS_CONTROL,    /* TLS records after the handshake with no application
	                               data: alerts (close_notify), key updates */
	CS_EXCHANGE_MULTIPLEXED,    /* on a connection whose requests overlap: not one request */
};

/*
 * Where a TLS connection's handshake is, from the content types of the
 * records the client sent (exchanges.c has the rules and their limits).
 */
enum cs_tls_phase {
	CS_TLS_NONE = 0,        /* not TLS, or not seen from its start */
	CS_TLS_HELLO,           /* its first bytes were a handshake record: the ClientHello */
	CS_TLS_CLIENT_FLIGHT,   /* ClientHello read: the client's second flight next */
	CS_TLS_CLIENT_FLIGHT_CCS, /* ...which began with a ChangeCipherSpec */
	CS_TLS_12_FLIGHT,       /* TLS 1.2: handshake records until application data */
	CS_TLS_DONE,            /* handshake over: type 23 records are application data */
	CS_TLS_LOST,            /* records not followed: could not be told */
};

/* Why a connection counts as multiplexed. */
enum cs_multiplex_reason {
	CS_MUX_H2_PREFACE = 1, /* its first bytes were HTTP/2's "PRI * HTTP/2.0" */
	CS_MUX_OVERLAP,        /* bytes of a request were read after the previous answer began */
	CS_MUX_ONE_READ,       /* a read held a request and the next one (pipelined, read at once) */
};

/* One exchange's TLS records, walked (cs_tls_walk). */
struct cs_tls_exchange {
	bool handshake;      /* it carried handshake records (or ChangeCipherSpec) */
	bool app_data;       /* it carried application data */
	bool ended;          /* the handshake ended in it */
	bool resumed;        /* a TLS 1.2 abbreviated handshake (session resumption) */
	uint8_t version;     /* 12 or 13 when this exchange told it; 0: not told here */
	int data_record;     /* the first record of application data, by position; -1: none */
};

/*
 * Walk an exchange's record content types (kept of count; count > kept:
 * some were not kept) from phase, which moves on. lost: the probe lost the
 * framing in this exchange. Pure: unit tests drive it with synthetic types.
 */
void cs_tls_walk(uint8_t *phase, const uint8_t *types, size_t kept, size_t count, bool lost,
		 struct cs_tls_exchange *out);

/* The exchange's one record is a TLS 1.3 alert (19 bytes of type 23, after the handshake). */
bool cs_is_tls13_alert(const struct cs_ev_request_bytes *ev, size_t first_len);

/* The kind of exchange a walk makes. */
enum cs_exchange_kind cs_tls_exchange_kind(const struct cs_tls_exchange *walk, uint8_t phase);

/* What a ClientHello's ALPN extension offers (cs_client_hello_alpn). */
enum cs_alpn_offer {
	CS_ALPN_NOT_TOLD = 0, /* cut before its extensions ended, or malformed */
	CS_ALPN_NONE,         /* no ALPN extension: HTTP/1.x */
	CS_ALPN_NO_H2,        /* an ALPN list without "h2" */
	CS_ALPN_H2,           /* "h2" offered: the server may choose HTTP/2 */
};

/*
 * The ALPN offer of a ClientHello handshake message (len bytes of it, from
 * its type byte; total_len: the whole record's body). Pure.
 */
enum cs_alpn_offer cs_client_hello_alpn(const uint8_t *hello, size_t len, size_t total_len);

/* Whether a ClientHello offered to resume a TLS 1.3 session (cs_client_hello_psk). */
enum cs_psk_offer {
	CS_PSK_NOT_TOLD = 0, /* cut before its extensions ended (pre_shared_key is the last), or malformed */
	CS_PSK_NONE,         /* no pre_shared_key extension: a full handshake */
	CS_PSK_OFFERED,      /* a pre_shared_key extension: a session ticket offered */
};

/* The same walk as cs_client_hello_alpn, for the pre_shared_key extension (41). Pure. */
enum cs_psk_offer cs_client_hello_psk(const uint8_t *hello, size_t len, size_t total_len);

/*
 * A TLS 1.3 server's first flight when it resumed a session: ServerHello,
 * EncryptedExtensions and Finished, about 250 bytes. A full handshake's adds
 * a Certificate and CertificateVerify: even one Ed25519 certificate makes
 * it 600 bytes or more (RSA 2048: ~1 500).
 */
#define CS_TLS13_RESUMED_FLIGHT_MAX 512
/* Exchanges of closed connections interleaved from several CPUs, told apart at once. */
#define CS_ORPHAN_SLOTS 16

/* first_len bytes begin with HTTP/2's connection preface. */
bool cs_is_h2_preface(const uint8_t *first, size_t first_len);

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
	uint8_t pad;
};

/* Connection lifecycles and resets, over all listeners. */
struct cs_lifecycle_stats {
	uint64_t closed_by[4];          /* by enum cs_closer */
	uint64_t closed_partial;        /* connections older than the attach */
	uint64_t requests_on_closed;    /* requests carried by closed connections */
	uint64_t server_idle_closes;    /* the server closed after an idle gap */
	struct cs_hist *idle_gap_ns;    /* that gap */
	struct cs_hist *lifetime_ns;    /* ESTABLISHED -> close */
	uint64_t reconnects;            /* a client connected again soon after an idle close */
	uint64_t resets_sent;
	uint64_t resets_received;
	uint64_t keepalive_race_resets; /* sent because data hit a connection the server closed */
	uint64_t tls_close_resets;      /* ...when that data was a TLS client's close_notify
	                                   after the server closed: no request lost */
	uint64_t time_wait_created;     /* server-side closes: sockets left in TIME_WAIT */
	/* Server closes per second over the last 64 s, for TIME_WAIT still alive. */
	uint64_t server_close_second[64];
	uint64_t server_close_count[64];
};

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

/* What the connection's first request paid before it began. */
struct cs_request_setup {
	bool first;          /* it is the connection's first request */
	uint64_t began_ns;   /* the connection's first bytes came (its first exchange began) */
	uint64_t extra_ns;   /* SYN and last-ACK retries (cs_ev_handshake's extra delay) */
	bool tls;            /* a TLS handshake ran from began_ns to the request's start */
	uint64_t start_ns;   /* the request's own start when later than its record's (the
	                        handshake's end shared its exchange); 0: the record's */
};

/* All requests: latency, and per latency bucket the time of each cause. */
struct cs_request_stats {
	uint64_t requests;            /* requests with a full timeline */
	uint64_t first_on_connection; /* of which paid connection set-up */
	uint64_t unanswered;          /* closed before the server answered */
	uint64_t partial;             /* started before attach: no timeline */
	uint64_t connections_adopted; /* older than the attach, followed from their first idle moment */
	uint64_t adopted_tls;         /* ...of which TLS, re-synchronised at a record header there */
	uint64_t not_a_start;         /* older ones whose bytes at an idle moment started no message */
	uint64_t held_back;           /* response bytes held in the send queue */
	uint64_t send_eagain;
	struct cs_hist *latency_ns;
	uint64_t (*bucket_cause_ns)[CS_CAUSE_COUNT]; /* [CS_HIST_BUCKETS] */
	uint64_t (*bucket_dominant)[CS_CAUSE_COUNT]; /* requests whose largest cause it was */
	struct cs_hist *cause_ns[CS_CAUSE_COUNT];    /* each request's time in each cause */
	uint64_t setup_ns;            /* accept_queue + listen_overflow + tls_handshake of first requests */
	uint64_t setup_accept_ns;     /* of which the accept queue */
	uint64_t setup_tcp_ns;        /* ... SYN and last-ACK retries (listen_overflow) */
	uint64_t setup_tls_ns;        /* ... the TLS handshake */
	/* Connections that spoke TLS from their first bytes (exchanges.c). */
	uint64_t tls_connections;
	uint64_t tls_handshakes;      /* whose handshake ended before a request */
	uint64_t tls12, tls13;        /* versions told by the client's second flight */
	uint64_t tls_resumed;         /* TLS 1.2 abbreviated handshakes */
	uint64_t tls13_psk_offered;   /* TLS 1.3 connections whose ClientHello offered a session */
	uint64_t tls13_psk_resumed;   /* ...whose server's first flight had no room for a certificate */
	uint64_t tls_psk_not_told;    /* TLS 1.3 connections whose ClientHello was cut before its
	                                 extensions' end, and hellos of connections not followed
	                                 that offered one or were cut: a session offer not told */
	uint64_t tls13_hello_retries; /* second ClientHellos: the server asked for one (HelloRetryRequest) */
	uint64_t tls_handshake_exchanges; /* exchanges kept out of the requests as set-up */
	uint64_t tls_control_exchanges;   /* alerts, key updates: neither set-up nor requests */
	uint64_t tls_lost;            /* connections whose records could not be followed: counted as
	                                 requests from there on */
	uint64_t bytes_unreadable;    /* connections whose first read's bytes could not be seen */
	uint64_t bytes_unmatched;     /* bytes records of connections not followed (or closed) */
	/* The last request record fed: cs_engine_request_verdict. */
	uint64_t last_sk;
	uint32_t last_index;
	bool last_was_request;
	struct cs_request_setup last_setup;
	/*
	 * Such records awaiting their request records (exchanges.c): each
	 * comes just before its own, but records from several CPUs interleave.
	 */
	struct cs_orphan_exchange {
		uint64_t sk; /* 0: a free slot */
		uint32_t index;
		uint8_t kind;  /* enum cs_exchange_kind */
		uint8_t ended; /* its TLS handshake ended in that exchange */
	} orphans[CS_ORPHAN_SLOTS];
	uint32_t orphan_next; /* the slot to reuse when none is free */
	uint64_t unfollowed_full;     /* connections not followed whose exchanges could not be
	                                 remembered (table full): counted as requests */
	uint64_t tls_alpn_h2;         /* TLS connections whose ClientHello offered HTTP/2 */
	uint64_t tls_alpn_not_told;   /* ...whose ALPN offer could not be read (hello cut) */
	uint64_t connections_multiplexed; /* overlapping requests, or HTTP/2's preface */
	uint64_t multiplexed_h2;      /* of which by the preface */
	uint64_t multiplexed_one_read; /* ...by a read that held more than one request */
	uint64_t multiplexed_exchanges;   /* their exchanges from then on: not in any latency */
	struct cs_exemplar exemplars[CS_EXEMPLARS]; /* min-heap on total_ns */
	size_t exemplar_count;
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

/* Programs whose cost is kept apart; more are summed in the totals only. */
#define CS_COST_PROGRAMS 64

/* One of connscope's BPF programs: what the kernel counted of its runs. */
struct cs_prog_cost_stats {
	uint32_t prog_id;
	char name[CS_PROG_NAME_LEN];
	uint64_t run_ns;
	uint64_t runs;
};

/*
 * What connscope cost, summed from its cost records (cost.c): the BPF
 * programs' run time as the kernel counted it, and its own CPU time over
 * the wall time the readings covered.
 */
struct cs_cost_stats {
	uint64_t readings;         /* CS_EV_SELF_COST records: 0, the run's cost was not recorded */
	uint32_t bpf_stats;        /* enum cs_bpf_stats of the latest reading */
	int32_t bpf_stats_error;   /* its errno when the kernel refused */
	uint64_t bpf_unmeasured_readings; /* readings with the run-time counting off */
	uint64_t bpf_sampled_readings;     /* readings of sampled spans, held or not */
	uint64_t user_ns;
	uint64_t system_ns;
	uint64_t wall_ns;
	/*
	 * Sampling: spans of tracing windows are all measured; of the others,
	 * some. Each reading's run time goes to its span's kind (pending until
	 * the reading's CS_EV_SELF_COST says which), so that the spans measured
	 * outside windows stand for those outside windows only.
	 */
	uint64_t bpf_pending_run_ns;       /* program records since the last reading's self cost */
	uint64_t bpf_window_run_ns, bpf_window_wall_ns;
	uint64_t bpf_plain_run_ns;         /* outside windows, over the spans measured */
	uint64_t bpf_plain_measured_wall_ns, bpf_plain_wall_ns;
	uint64_t bpf_run_ns;       /* over every program */
	uint64_t bpf_runs;
	struct cs_prog_cost_stats programs[CS_COST_PROGRAMS];
	size_t program_count;
	uint64_t programs_unlisted; /* records of programs beyond CS_COST_PROGRAMS */
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
	uint64_t conns_evicted;            /* table full: the least recently seen forgotten */
	uint64_t conns_timed_out;          /* forgotten after CS_CONN_TIMEOUT_NS without a record */
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

/* Partial connections, summed over listeners: never split, never in a latency. */
struct cs_conn_partial cs_engine_partial(const struct cs_engine *engine);

/* Listener of a port, or NULL. */
const struct cs_listener_stats *cs_engine_listener(const struct cs_engine *engine, uint16_t port);

/*
 * Listen-overflow drops since attach, as the kernel's ListenOverflows counts
 * them: the listeners' sk_drops deltas, less the second count sk_drops
 * takes for each third ACK dropped on a full queue.
 */
uint64_t cs_listener_drops(const struct cs_listener_stats *listener);

/* The worker that took the most accepts, or NULL when none did. */
const struct cs_worker_stats *cs_listener_busiest_worker(const struct cs_listener_stats *listener);

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

/*
 * Share of its active span (first accept call to last return) a worker
 * spent outside accept(): near 1 for an accept thread that never waits for
 * connections, i.e. one that cannot keep up.
 */
double cs_worker_busy_share(const struct cs_worker_stats *worker);

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
	uint32_t acceptor_tid;
	char acceptor_comm[CS_COMM_LEN];
	double blocked_share;        /* of its time outside accept(); -1: CPU time unknown */
	double on_cpu_share;
	double handler_share;
};
void cs_listener_limit(const struct cs_engine *engine, const struct cs_listener_stats *listener,
		       struct cs_limit_evidence *evidence);

/* Threads that took at least one connection. */
size_t cs_listener_accepting_threads(const struct cs_listener_stats *listener);

#endif /* CS_ENGINE_H */
