// SPDX-License-Identifier: BSD-2-Clause
/*
 * Connection ends and resets: who closed, an idle close and the client's
 * reconnect after it, a request dropped unread, the resets the kernel
 * sends for data that reached a closed connection (the keep-alive race).
 */
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "tables.h"
#include "units.h"

/*
 * A server close this long after the last bytes is an idle close, less
 * the closing thread's run-queue wait meanwhile: a close the machine
 * delayed came right after the answer, not after waiting for a request.
 */
#define IDLE_CLOSE_MIN_NS (5 * NS_PER_MS)
_Static_assert(IDLE_CLOSE_MIN_NS >= CS_CLOSE_RUNQ_FROM_NS, "closer_runq_ns is kept for every close that may be idle");
/* Resets the kernel sends when data reaches a connection the server closed. */
#define RST_REASON_ABORT_ON_DATA 8
#define RST_REASON_TIMEWAIT_SOCKET 9
/* ...and when the server closes with a request that arrived but was never read. */
#define RST_REASON_ABORT_ON_CLOSE 11

static uint64_t span(uint64_t from, uint64_t to)
{
	return to > from ? to - from : 0;
}

/* A server's close: TIME_WAIT, and an idle close or a dropped request; what it freed. */
static enum cs_slot_freer server_close(struct cs_engine *engine, const struct cs_ev_conn_close *ev)
{
	struct cs_lifecycle_stats *life = &engine->lifecycle;
	/* The side that closes first keeps the socket in TIME_WAIT. */
	life->time_wait_created++;
	uint64_t second = ev->hdr.ts_ns / NS_PER_SEC;
	if (life->server_close_second[second % 64] != second) {
		life->server_close_second[second % 64] = second;
		life->server_close_count[second % 64] = 0;
	}
	life->server_close_count[second % 64]++;
	uint64_t gap_ns = span(ev->last_activity_ns, ev->hdr.ts_ns);
	/* An unfollowed connection's requests were not counted: that it received data tells. */
	bool had_requests = ev->requests > 0 || (ev->flags & CS_CLOSE_RECEIVED_DATA);
	uint64_t waited_ns = gap_ns - (ev->closer_runq_ns < gap_ns ? ev->closer_runq_ns : gap_ns);
	/* Its last activity a request it never read, however recent: not idle, that request dropped. */
	if (life->unread_sk == ev->sk) {
		life->server_unread_closes++;
		life->unread_close_wait_ns += gap_ns;
		return CS_FREED_BY_OTHER;
	}
	if (!had_requests || !ev->last_activity_ns || waited_ns < IDLE_CLOSE_MIN_NS)
		return CS_FREED_BY_OTHER;
	life->server_idle_closes++;
	cs_hist_record(life->idle_gap_ns, gap_ns);
	struct cs_idle_closes *closes = cs_u64map_put(&engine->idle_closed_from, cs_addr_hash(ev->tuple.remote_addr), NULL);
	if (closes) {
		/* Closes older than the window can no longer be answered. */
		if (ev->hdr.ts_ns - closes->last_close_ns > CS_RECONNECT_WINDOW_NS)
			closes->pending = 0;
		closes->pending++;
		closes->last_close_ns = ev->hdr.ts_ns;
	}
	return CS_FREED_BY_IDLE_CLOSE;
}

int cs_on_conn_close(struct cs_engine *engine, const struct cs_ev_conn_close *ev)
{
	struct cs_lifecycle_stats *life = &engine->lifecycle;
	if (ev->closed_by < 4)
		life->closed_by[ev->closed_by]++;
	if (ev->partial)
		life->closed_partial++;
	life->requests_on_closed += ev->requests;
	cs_clients_on_close(engine, ev);
	const struct cs_conn *conn = cs_u64map_get(&engine->conns, ev->sk);
	/*
	 * Its accept's start, where it was seen: a connection established
	 * between tracing windows closes with TCP's stamp, which its reads may
	 * have moved later.
	 */
	uint64_t established_ns = conn && conn->established_ns ? conn->established_ns : ev->established_ns;
	if (established_ns && ev->hdr.ts_ns >= established_ns)
		cs_hist_record(life->lifetime_ns, ev->hdr.ts_ns - established_ns);

	enum cs_slot_freer freer = ev->closed_by == CS_CLOSED_BY_CLIENT ? CS_FREED_BY_CLIENT : CS_FREED_BY_OTHER;
	if (ev->closed_by == CS_CLOSED_BY_SERVER)
		freer = server_close(engine, ev);
	/* Its client's close_notify may come after (or with) the close, and draw a reset. */
	struct cs_unfollowed *unfollowed = conn ? NULL : cs_u64map_get(&engine->unfollowed, ev->sk);
	if (unfollowed)
		unfollowed->closed = 1;
	if ((conn && conn->tls_phase != CS_TLS_NONE) || (unfollowed && unfollowed->phase != CS_TLS_NONE)) {
		uint64_t *close_ns = cs_u64map_put(&engine->tls_closed, cs_tuple_key(&ev->tuple, ev->listener_port), NULL);
		if (close_ns)
			*close_ns = ev->hdr.ts_ns;
	}
	/* The server may read what came before the close after it: where its records were. */
	if (conn && (conn->requests_counted == 0 || conn->multiplexed)) {
		struct cs_unfollowed *u = cs_u64map_put(&engine->unfollowed, ev->sk, NULL);
		if (u) {
			memset(u, 0, sizeof(*u));
			u->last_ns = ev->hdr.ts_ns;
			u->first_bytes_ns = conn->first_bytes_ns;
			u->phase = conn->tls_phase;
			u->multiplexed = conn->multiplexed != 0;
			u->closed = 1;
		}
	}
	if (conn) {
		struct cs_listener_stats *listener = cs_get_listener(engine, conn->port);
		if (listener)
			cs_limit_on_close(listener, ev->hdr.ts_ns, conn->accept_ns, freer, ev->closer_tid);
	}
	cs_u64map_remove(&engine->conns, ev->sk);
	cs_u64map_remove(&engine->handbacks, ev->sk);
	return 0;
}

int cs_on_reset(struct cs_engine *engine, const struct cs_ev_reset *ev)
{
	struct cs_lifecycle_stats *life = &engine->lifecycle;
	if (ev->direction == CS_RESET_RECEIVED) {
		life->resets_received++;
		return 0;
	}
	life->resets_sent++;
	if (ev->reason == RST_REASON_ABORT_ON_DATA || ev->reason == RST_REASON_TIMEWAIT_SOCKET ||
	    (ev->reason == RST_REASON_ABORT_ON_CLOSE && (ev->flags & CS_RESET_UNREAD_REQUEST))) {
		/*
		 * A TLS client that closes with close_notify sends it after the
		 * server's close: that alert, not a request, drew the reset
		 * (the bytes are encrypted: a request lost the same way looks
		 * the same, and is counted here too).
		 */
		uint64_t key = cs_tuple_key(&ev->tuple, ev->tuple.local_port);
		const uint64_t *close_ns = cs_u64map_get(&engine->tls_closed, key);
		const struct cs_conn *open = ev->sk ? cs_u64map_get(&engine->conns, ev->sk) : NULL;
		/* Kept for the next: the alert and the client's FIN may each draw one. */
		if (close_ns && ev->hdr.ts_ns >= *close_ns && ev->hdr.ts_ns - *close_ns <= CS_RECONNECT_WINDOW_NS) {
			life->tls_close_resets++;
			return 0;
		}
		/*
		 * The close that aborts on the unread alert comes before its
		 * close record. (Over TLS a request that hit the close cannot be
		 * told from a close_notify: both are counted here.)
		 */
		if (open && open->tls_phase != CS_TLS_NONE) {
			life->tls_close_resets++;
			return 0;
		}
		life->keepalive_race_resets++;
	}
	return 0;
}
