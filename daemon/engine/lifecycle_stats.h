/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The engine's statistics of connections' lives (struct cs_lifecycle_stats):
 * who closed, idle closes and the reconnects after them, resets, lifetimes,
 * TIME_WAIT left behind.
 */
#ifndef CS_LIFECYCLE_STATS_H
#define CS_LIFECYCLE_STATS_H

#include <stdint.h>

#include "hist.h"

/* Connection lifecycles and resets, over all listeners. */
struct cs_lifecycle_stats {
	uint64_t closed_by[4];          /* by enum cs_closer */
	uint64_t closed_partial;        /* connections older than the attach */
	uint64_t requests_on_closed;    /* requests carried by closed connections */
	uint64_t server_idle_closes;    /* the server closed after an idle gap */
	struct cs_hist *idle_gap_ns;    /* that gap */
	/*
	 * The server closed with a request waiting that it never read: the
	 * connection was not idle, the request was dropped (Apache's event MPM
	 * closes its keep-alive connections when no worker is free). Not an
	 * idle close, whatever the gap (the request's wait); nor the client's
	 * choice of one request per connection.
	 */
	uint64_t server_unread_closes;
	uint64_t unread_close_wait_ns;  /* those requests' waits, summed */
	uint64_t unread_sk;             /* the connection of the latest request closed unread
	                                   (adopted ones too): its close record is next */
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

#endif /* CS_LIFECYCLE_STATS_H */
