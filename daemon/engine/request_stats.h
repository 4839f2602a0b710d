/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The engine's statistics of requests (struct cs_request_stats): their
 * latency, each one's time split by cause (enum cs_cause), the slowest kept
 * whole, and what their connections' exchanges were. Filled by the engine
 * (requests.c, exchanges.c, exemplars.c); read by the analysis and the
 * renderers.
 */
#ifndef CS_REQUEST_STATS_H
#define CS_REQUEST_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "connscope.h"
#include "hist.h"
#include "upstream_stats.h"

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
	CS_CAUSE_PROTOCOL_SETUP,  /* the protocol's own set-up exchanges before the first request
	                             (PostgreSQL's start-up and authentication) */
	CS_CAUSE_RUNTIME_PAUSE,   /* the runtime (a JVM's safepoint) had stopped the server's threads */
	CS_CAUSE_UPSTREAM,        /* waiting on a server it called: its exchanges (out of handler),
	                             or a loop blocked on one (out of event_loop) */
	CS_CAUSE_COUNT,
};

extern const char *const cs_cause_names[CS_CAUSE_COUNT];

/* What a connection's first bytes spoke (cs_protocol_of, exchanges.c). */
enum cs_protocol {
	CS_PROTOCOL_HTTP1,      /* an HTTP/1.x request line */
	CS_PROTOCOL_H2,         /* HTTP/2's preface, in the clear */
	CS_PROTOCOL_TLS,        /* a TLS handshake record (HTTPS and anything else over TLS) */
	CS_PROTOCOL_RESP,       /* Redis: a RESP array, or an inline command */
	CS_PROTOCOL_POSTGRESQL, /* a PostgreSQL start-up, SSL or GSS request, or cancel */
	CS_PROTOCOL_MYSQL,      /* MySQL, MariaDB: a handshake response after the server's greeting */
	CS_PROTOCOL_OTHER,      /* none of these, or its bytes could not be seen */
	CS_PROTOCOL_COUNT,
};

/* Their names in the JSON and the metrics ("http1", "resp", ...). */
extern const char *const cs_protocol_names[CS_PROTOCOL_COUNT];

/* One request's time, split by cause (they add up to total_ns). */
struct cs_request_split {
	uint64_t cause_ns[CS_CAUSE_COUNT];
	uint64_t total_ns;
	uint64_t pool_busy_ns; /* of cause_ns[CS_CAUSE_WORKER_POOL]: the thread that took the
	                          request was serving others meanwhile, or polling for the pool
	                          (a taker that hands out what it polls): the pool was busy */
	uint64_t loop_after_read_ns; /* of cause_ns[CS_CAUSE_EVENT_LOOP] before the upstreams' and pauses'
	                                takes: after its read, while its loop ran requests it read later
	                                in the same pass */
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
	uint32_t index;    /* request number on its connection */
	uint32_t commands; /* requests its exchange carried (a Redis pipeline's commands), each this long */
	uint8_t protocol;  /* 1 + enum cs_protocol of its connection's first bytes; 0: not seen */
	uint8_t pad[3];
	uint16_t peer_family; /* 0: the connection's accept was not seen */
	uint16_t peer_port;
	uint8_t peer_addr[16];
	struct cs_upstream_use upstream; /* its time taken by upstreams */
};

#define CS_EXEMPLARS 512

/* Exchanges of closed connections interleaved from several CPUs, told apart at once. */
#define CS_ORPHAN_SLOTS 16

/* What the connection's first request paid before it began. */
struct cs_request_setup {
	bool first;          /* it is the connection's first request */
	uint64_t began_ns;   /* the connection's first bytes came (its first exchange began) */
	uint64_t extra_ns;   /* SYN and last-ACK retries (cs_ev_handshake's extra delay) */
	bool tls;            /* a TLS handshake ran from began_ns to the request's start */
	uint64_t start_ns;   /* the request's own start when later than its record's (the
	                        handshake's end shared its exchange); 0: the record's */
	uint32_t commands; /* requests the exchange carried: a Redis pipeline's commands, each
	                        timed as the exchange (its answers left in its writes); 1 otherwise */
	bool protocol;     /* the protocol's set-up exchanges ran from began_ns to the request's start */
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
	uint64_t *bucket_pool_busy_ns;               /* [CS_HIST_BUCKETS]: their pool_busy_ns */
	struct cs_hist *cause_ns[CS_CAUSE_COUNT];    /* each request's time in each cause */
	uint64_t setup_ns;            /* accept_queue + listen_overflow + tls_handshake of first requests */
	uint64_t setup_accept_ns;     /* of which the accept queue */
	uint64_t setup_tcp_ns;        /* ... SYN and last-ACK retries (listen_overflow) */
	uint64_t setup_tls_ns;        /* ... the TLS handshake */
	uint64_t setup_protocol_ns;   /* ... the protocol's set-up (PostgreSQL's start-up) */
	uint64_t protocol_setups;     /* first requests that paid one */
	uint64_t protocol_setup_exchanges; /* exchanges kept out of the requests as that set-up */
	uint64_t goodbye_exchanges;   /* the client's goodbyes (PostgreSQL's Terminate, MySQL's COM_QUIT): no request */
	uint64_t greetings;           /* connections whose server wrote before its first read (MySQL's greeting) */
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
		uint8_t kind;      /* enum cs_exchange_kind */
		uint8_t ended;     /* its TLS handshake ended in that exchange */
		uint16_t commands; /* a Redis exchange's commands; 0: not said (one) */
	} orphans[CS_ORPHAN_SLOTS];
	uint32_t orphan_next; /* the slot to reuse when none is free */
	uint64_t unfollowed_full;     /* connections not followed whose exchanges could not be
	                                 remembered (table full): counted as requests */
	uint64_t tls_alpn_h2;         /* TLS connections whose ClientHello offered HTTP/2 */
	uint64_t tls_alpn_not_told;   /* ...whose ALPN offer could not be read (hello cut) */
	uint64_t tls_alpn_h2_chosen;  /* of those that offered h2: the server chose it (a TLS 1.2 ServerHello) */
	uint64_t tls_alpn_h2_declined; /* ...the server chose another protocol, or none */
	uint64_t connections_multiplexed; /* overlapping requests, or HTTP/2's preface */
	uint64_t multiplexed_h2;      /* of which by the preface */
	uint64_t multiplexed_h2_alpn; /* ...by the TLS server's ALPN choice */
	uint64_t multiplexed_one_read; /* ...by a read that held more than one request */
	uint64_t multiplexed_uncounted; /* ...by a Redis read whose commands could not be counted */
	uint64_t multiplexed_exchanges;   /* their exchanges from then on: not in any latency */
	uint64_t pipelined_exchanges; /* Redis exchanges that read more than one command */
	uint64_t pipelined_commands;  /* ...their commands: each a request, timed as its exchange */
	/* Connections by what their first bytes spoke (enum cs_protocol), those seen from their start. */
	uint64_t connections_by_protocol[CS_PROTOCOL_COUNT];
	struct cs_exemplar exemplars[CS_EXEMPLARS]; /* min-heap on total_ns */
	size_t exemplar_count;
};

/* Multiplexed connections told by timing alone: a read after an answer began. */
static inline uint64_t cs_multiplexed_by_timing(const struct cs_request_stats *r)
{
	return r->connections_multiplexed - r->multiplexed_h2 - r->multiplexed_h2_alpn - r->multiplexed_one_read -
	       r->multiplexed_uncounted;
}

#endif /* CS_REQUEST_STATS_H */
