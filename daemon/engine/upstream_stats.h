/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The engine's statistics of the target's upstreams (struct
 * cs_upstream_stats): the servers it called on connections it opened
 * itself, each exchange's parts, and how many of them were joined to the
 * request they served. Filled by upstreams.c; read by the analysis and the
 * renderers.
 */
#ifndef CS_UPSTREAM_STATS_H
#define CS_UPSTREAM_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "connscope.h"
#include "hist.h"

/* Upstreams told apart, by address and port; the exchanges of more are counted only. */
#define CS_UPSTREAMS_MAX 32

/* Why an exchange was not joined to a request. */
enum cs_upstream_unjoined {
	CS_UNJOINED_NO_REQUEST, /* its thread had no request open over the whole exchange */
	CS_UNJOINED_AMBIGUOUS,  /* several had (an event loop serving many at once), or more
	                           than the probes follow */
	CS_UNJOINED_UNMATCHED,  /* its request was not timed (unanswered, partial, cut, a TLS
	                           handshake's exchange), its record never came, or the exchange
	                           did not lie within its read -> send */
	CS_UNJOINED_COUNT,
};

extern const char *const cs_unjoined_names[CS_UNJOINED_COUNT];

/* One upstream: an address and port the target connected to, or a Unix socket's path. */
struct cs_upstream_stats {
	uint8_t addr[16];          /* IPv4 v4-mapped, as in cs_tuple; AF_UNIX: its path's hash */
	uint16_t port;
	uint16_t family;           /* AF_INET, AF_INET6 or AF_UNIX */
	uint16_t path_len;         /* AF_UNIX: path's bytes; 0: not named (its record was lost) */
	uint16_t pad;
	char path[CS_UNIX_PATH_LEN]; /* AF_UNIX: the path its peer listens on (abstract: a 0 byte first) */
	uint64_t exchanges;        /* whose answer the target read */
	uint64_t unread;           /* the connection closed before the target read the answer */
	uint64_t connects;         /* first exchanges with their connect timed */
	uint64_t syn_retransmits;  /* of those connects */
	uint64_t connects_retransmitted; /* of those connects, those that waited for one or more */
	uint64_t joined;           /* exchanges joined to the request they served */
	uint64_t joined_by_turn;   /* of those, an event loop's, told by the turn that answered the
	                              request (upstream_turns.c) */
	uint64_t joined_alike;     /* of those, one of alike exchanges read in that turn */
	uint64_t not_joined[CS_UNJOINED_COUNT];
	uint64_t pending;          /* joined to a request whose record has not come yet */
	uint64_t requests_waited;  /* requests whose time it took: joined, or waiting behind a
	                              loop blocked on it */
	uint64_t loop_waits;       /* of which waiting behind a loop blocked on it */
	uint64_t waited_ns;        /* the time it took of those requests */
	uint64_t queued_requests;  /* of those, requests that waited for a free connection to it */
	uint64_t queued_ns;        /* ... that long in all (upstream_queue.c) */
	struct cs_hist *connect_ns; /* SYN sent -> established */
	struct cs_hist *wait_ns;    /* sent -> the answer's first byte */
	struct cs_hist *read_ns;    /* first byte -> the target's first read */
};

/* Its exchanges not joined, for whatever reason, those still waiting for their request included. */
static inline uint64_t cs_upstream_not_joined(const struct cs_upstream_stats *u)
{
	uint64_t n = u->pending;
	for (int i = 0; i < CS_UNJOINED_COUNT; i++)
		n += u->not_joined[i];
	return n;
}

/*
 * How an upstream is written: "127.0.0.1:6379", "[::1]:8081", a Unix
 * socket's path ("/run/redis.sock"; an abstract name as "@name"; "unix
 * socket #hash" when its name was not seen). address: without the port.
 */
#define CS_UPSTREAM_NAME_LEN (CS_UNIX_PATH_LEN + 24)
void cs_upstream_name(char *buf, size_t len, const struct cs_upstream_stats *u);
void cs_upstream_address(char *buf, size_t len, const struct cs_upstream_stats *u);

/* A request's time taken by its upstream exchanges (upstreams.c), kept with the slowest requests. */
struct cs_upstream_use {
	uint64_t queue_ns;        /* the parts of its upstream time: waiting for a free connection, */
	uint64_t connect_ns;      /* connecting, */
	uint64_t wait_ns;
	uint64_t read_ns;
	uint64_t upstream_ns;     /* of them, upstream's: the one that took the most */
	/* Of that upstream's exchanges, the one that took the most: its send -> answer, on which connection. */
	uint64_t exchange_take_ns;
	uint64_t exchange_send_ns;
	uint64_t exchange_answer_ns; /* the answer's first byte (its first read, when not seen) */
	uint32_t syn_retransmits;
	uint16_t upstream;        /* index + 1 into the engine's upstreams; 0: none */
	uint16_t local_port;      /* the target's end of that exchange's connection */
	uint8_t exchanges;        /* joined to it */
	uint8_t loop_blocked;     /* its wait for its loop, which was blocked on the upstream */
	uint8_t pad[6];
};

#endif /* CS_UPSTREAM_STATS_H */
