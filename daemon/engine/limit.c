// SPDX-License-Identifier: BSD-2-Clause
/*
 * Connection limits, told apart from a slow acceptor. A server at its
 * connection limit (Tomcat's maxConnections, nginx's worker_connections,
 * Node's maxConnections) stops calling accept() while the limit's worth of
 * connections is open, blocked until one closes, and calls accept() again
 * right after that close. A slow acceptor also leaves connections queued,
 * but it comes back on its own schedule, whatever closes. So each accept
 * of a connection that queued while the acceptor was away is classified by
 * when the acceptor came back: around a close (a limit), or not. Around,
 * because a server may free a slot before it closes its socket: the close
 * can come just after the accept it allowed.
 */
#include "engine.h"
#include "engine_internal.h"
#include "units.h"

#include <string.h>

/*
 * "Soon after the close": within the last quarter of the acceptor's time
 * away. Relative, not absolute, so that it holds on a loaded machine where
 * a wake-up takes milliseconds: an acceptor woken by a close that freed a
 * slot after 300 ms comes back in the last 1 %; one that pauses 2 ms before
 * each accept sees a connection it handed off close ~0.2 ms into its pause.
 */
#define CAME_BACK_DIVISOR 4

static void advance(struct cs_listener_stats *listener, uint64_t now_ns)
{
	if (listener->open_changed_ns && now_ns > listener->open_changed_ns) {
		uint32_t level = listener->open_conns < CS_OPEN_LEVELS ? listener->open_conns : CS_OPEN_LEVELS - 1;
		listener->open_level_ns[level] += now_ns - listener->open_changed_ns;
	}
	if (now_ns > listener->open_changed_ns)
		listener->open_changed_ns = now_ns;
}

void cs_limit_on_open(struct cs_listener_stats *listener, uint64_t now_ns)
{
	advance(listener, now_ns);
	listener->open_conns++;
	if (listener->open_conns > listener->open_max)
		listener->open_max = listener->open_conns;
}

/* After a reset, connections opened before it close uncounted: never below 0. */
void cs_limit_on_forget(struct cs_listener_stats *listener, uint64_t now_ns)
{
	advance(listener, now_ns);
	if (listener->open_conns)
		listener->open_conns--;
}

/* A wait for the acceptor that ended with a close: the acceptor waited on a limit. */
static void count_limit_wait(struct cs_listener_stats *listener, uint64_t waited_ns, uint32_t open_before,
			     uint8_t kind)
{
	listener->limit_gaps++;
	listener->limit_gap_ns += waited_ns;
	if (!listener->limit_open_min || open_before < listener->limit_open_min)
		listener->limit_open_min = open_before;
	listener->limit_level_ns[open_before < CS_OPEN_LEVELS ? open_before : CS_OPEN_LEVELS - 1] += waited_ns;
	if (kind < 3)
		listener->limit_freed_by[kind]++;
}

/* Soon enough after the acceptor came back at enter_ns, or before it, to have freed its slot. */
static bool within_came_back(uint64_t close_ns, uint64_t enter_ns, uint64_t away_ns)
{
	uint64_t apart_ns = close_ns > enter_ns ? close_ns - enter_ns : enter_ns - close_ns;
	return apart_ns * CAME_BACK_DIVISOR <= away_ns;
}

/*
 * A close that may have ended a pending accept's wait: the oldest one it
 * can still have freed. A pending accept whose time for that has passed
 * is dropped: the closes come in time order.
 */
static bool claim_pending(struct cs_listener_stats *listener, uint64_t now_ns, uint64_t accepted_ns,
			  uint8_t kind, uint32_t closer_tid)
{
	bool claimed = false;
	uint32_t kept = 0;
	for (uint32_t i = 0; i < listener->limit_pending_count; i++) {
		const struct cs_limit_pending *pending = &listener->limit_pending[i];
		bool passed = now_ns >= pending->enter_ns && !within_came_back(now_ns, pending->enter_ns,
										  pending->away_ns);
		/*
		 * The acceptor itself closed a connection after its accept: it
		 * made room for the one it took (nginx, out of
		 * worker_connections, closes an idle or a new connection), and
		 * had no slot to wait for. That accept waited for nothing else.
		 */
		if (!claimed && !passed && closer_tid && closer_tid == pending->acceptor_tid &&
		    now_ns >= pending->accept_ns) {
			listener->limit_made_room++;
			claimed = true;
			continue;
		}
		/* The connection just accepted, served and closed at once, freed nothing for it. */
		if (!claimed && !passed && now_ns >= pending->enter_ns && accepted_ns < pending->accept_ns) {
			count_limit_wait(listener, pending->waited_ns, pending->open_before, kind);
			claimed = true;
			continue;
		}
		if (!passed)
			listener->limit_pending[kept++] = *pending;
	}
	listener->limit_pending_count = kept;
	return claimed;
}

void cs_limit_on_close(struct cs_listener_stats *listener, uint64_t now_ns, uint64_t accepted_ns,
		       enum cs_slot_freer kind, uint32_t closer_tid)
{
	/*
	 * A server may free the slot before it closes the socket (Tomcat
	 * counts its latch down, then closes), several at once: the acceptor
	 * is back in accept() before the close, once for each. Otherwise the
	 * close waits for the acceptor's next return; the latest few are kept.
	 */
	if (!claim_pending(listener, now_ns, accepted_ns, (uint8_t)kind, closer_tid)) {
		if (listener->limit_close_count == CS_LIMIT_UNMATCHED) {
			memmove(listener->limit_closes, listener->limit_closes + 1,
				(CS_LIMIT_UNMATCHED - 1) * sizeof(listener->limit_closes[0]));
			listener->limit_close_count--;
		}
		listener->limit_closes[listener->limit_close_count++] = (struct cs_limit_close){
			.ts_ns = now_ns, .open_before = listener->open_conns, .kind = (uint8_t)kind,
		};
	}
	cs_limit_on_forget(listener, now_ns);
}

/* The earliest close since the acceptor's last return that came soon before this one. */
static const struct cs_limit_close *close_before(const struct cs_listener_stats *listener, uint64_t enter_ns,
						 uint64_t away_ns)
{
	for (uint32_t i = 0; i < listener->limit_close_count; i++) {
		const struct cs_limit_close *close = &listener->limit_closes[i];
		if (close->ts_ns <= enter_ns && within_came_back(close->ts_ns, enter_ns, away_ns))
			return close;
	}
	return NULL;
}

static void add_pending(struct cs_listener_stats *listener, struct cs_limit_pending pending)
{
	if (listener->limit_pending_count == CS_LIMIT_UNMATCHED) {
		memmove(listener->limit_pending, listener->limit_pending + 1,
			(CS_LIMIT_UNMATCHED - 1) * sizeof(listener->limit_pending[0]));
		listener->limit_pending_count--;
	}
	listener->limit_pending[listener->limit_pending_count++] = pending;
}

/*
 * An accept of a connection queued before the call began, which waited
 * with the acceptor away: how long it waited, and how long the acceptor
 * was away. Every such wait counts in the share's whole.
 */
static bool queued_wait(struct cs_listener_stats *listener, uint64_t previous_return_ns,
			const struct cs_ev_accept *ev, uint64_t *waited_ns, uint64_t *away_ns)
{
	if (ev->ret < 0 || !ev->established_ns || !previous_return_ns)
		return false;
	uint64_t queued_from = ev->established_ns > previous_return_ns ? ev->established_ns : previous_return_ns;
	if (ev->enter_ns <= queued_from || ev->enter_ns <= previous_return_ns)
		return false;
	*waited_ns = ev->enter_ns - queued_from;
	*away_ns = ev->enter_ns - previous_return_ns;
	listener->queued_gaps++;
	listener->queued_gap_ns += *waited_ns;
	return true;
}

void cs_limit_on_accept(struct cs_listener_stats *listener, uint64_t previous_return_ns,
			const struct cs_ev_accept *ev)
{
	uint64_t waited_ns = 0, away_ns = 0;
	bool queued = queued_wait(listener, previous_return_ns, ev, &waited_ns, &away_ns);
	/*
	 * A connection that came in the acceptor's return window may be what
	 * it came back for (an event loop woken by the listener): only one
	 * that waited through that window, there to take and not taken, says
	 * the acceptor was held back until a close.
	 */
	bool held_back = queued && waited_ns * CAME_BACK_DIVISOR >= away_ns;
	const struct cs_limit_close *close = held_back ? close_before(listener, ev->enter_ns, away_ns) : NULL;
	if (close)
		count_limit_wait(listener, waited_ns, close->open_before, close->kind);
	listener->limit_close_count = 0; /* the acceptor is back: a new time away starts */
	if (!held_back || close)
		return;
	/*
	 * No close came soon before it: one may follow at once. Each accept
	 * still pending holds a slot freed whose close is still due, counted
	 * open all the same.
	 */
	uint32_t due = listener->limit_pending_count;
	add_pending(listener, (struct cs_limit_pending){
		.enter_ns = ev->enter_ns, .accept_ns = ev->hdr.ts_ns, .away_ns = away_ns,
		.waited_ns = waited_ns, .open_before = listener->open_conns > due ? listener->open_conns - due : 0,
		.acceptor_tid = ev->tid,
	});
}

void cs_acceptor_time(const struct cs_engine *engine, const struct cs_worker_stats *worker,
		      struct cs_acceptor_time *time)
{
	*time = (struct cs_acceptor_time){ 0 };
	if (worker->last_call_ns <= worker->first_call_ns)
		return;
	uint64_t span_ns = worker->last_call_ns - worker->first_call_ns;
	time->outside_ns = span_ns > worker->in_accept_ns ? span_ns - worker->in_accept_ns : 0;
	const struct cs_thread_stats *thread = cs_u64map_get(&engine->threads, worker->tid);
	uint64_t left_ns = time->outside_ns;
	if (thread) {
		time->cpu_known = thread->cpu_sampled_ns != 0;
		time->on_cpu_ns = thread->cpu_ns < left_ns ? thread->cpu_ns : left_ns;
		left_ns -= time->on_cpu_ns;
		/* A handler's time is partly on a CPU already counted: take what is left. */
		uint64_t handler_ns = cs_thread_in_handlers_ns(thread);
		time->handler_ns = handler_ns < left_ns ? handler_ns : left_ns;
		left_ns -= time->handler_ns;
		/* Runnable is not blocked: a CPU-starved acceptor is not waiting on a limit. */
		time->runq_ns = thread->runq_total_ns < left_ns ? thread->runq_total_ns : left_ns;
		left_ns -= time->runq_ns;
	}
	time->blocked_ns = left_ns;
}

/* Enough waits to call it a pattern: with the share by time below, a close
 * that happens to come just before the acceptor returns cannot make one. */
#define LIMIT_WAITS_MIN 3
/*
 * Most of the time connections waited for the acceptor ended with a close:
 * the acceptor's schedule was the closes'. By time, not count: after a
 * batch of closes it takes the next connections back to back, which
 * waited microseconds for it and say nothing either way.
 */
#define LIMIT_WAIT_SHARE 0.5
/* Its time away from accept() mostly blocked: not on a CPU, not in handlers. */
#define BLOCKED_SHARE_MIN 0.5
#define HANDLER_SHARE_MAX 0.2
/* Accept-queue waits above 1 ms at p99 are visible in client tails. */
#define LIMIT_WAIT_P99_MIN_NS NS_PER_MS

/*
 * The limit: the open count at which the acceptor spent the most time
 * waiting. Not the highest count seen: a server that frees its slot
 * before it closes the socket (Tomcat) can let two accepts in before
 * the two closes, and that wait, microseconds long, sees one more open.
 */
static uint32_t limit_level(const struct cs_listener_stats *listener)
{
	uint32_t best = 0;
	for (uint32_t level = 1; level < CS_OPEN_LEVELS; level++)
		if (listener->limit_level_ns[level] > listener->limit_level_ns[best])
			best = level;
	return listener->limit_level_ns[best] ? best : 0;
}

static double fraction(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

void cs_listener_limit(const struct cs_engine *engine, const struct cs_listener_stats *listener,
		       struct cs_limit_evidence *evidence)
{
	*evidence = (struct cs_limit_evidence){ .blocked_share = -1.0 };
	evidence->open_connections = limit_level(listener);
	evidence->open_min = listener->limit_open_min;
	evidence->waits = listener->limit_gaps;
	evidence->queued_waits = listener->queued_gaps;
	evidence->waited_ns = listener->limit_gap_ns;
	evidence->wait_share = fraction(listener->limit_gap_ns, listener->queued_gap_ns);
	for (int i = 0; i < 3; i++)
		evidence->freed_by[i] = listener->limit_freed_by[i];
	evidence->made_room = listener->limit_made_room;
	/* The plateau: time with at least the open connections the limit held. */
	for (uint32_t level = listener->limit_open_min; level && level < CS_OPEN_LEVELS; level++)
		evidence->plateau_ns += listener->open_level_ns[level];

	const struct cs_worker_stats *acceptor = cs_listener_busiest_worker(listener);
	if (!acceptor)
		return;
	evidence->acceptor_tid = acceptor->tid;
	memcpy(evidence->acceptor_comm, acceptor->comm, CS_COMM_LEN);
	struct cs_acceptor_time time;
	cs_acceptor_time(engine, acceptor, &time);
	evidence->handler_share = fraction(time.handler_ns, time.outside_ns);
	if (time.cpu_known) {
		evidence->on_cpu_share = fraction(time.on_cpu_ns, time.outside_ns);
		evidence->blocked_share = fraction(time.blocked_ns, time.outside_ns);
	}
	bool not_busy = evidence->handler_share <= HANDLER_SHARE_MAX &&
			(!time.cpu_known || evidence->blocked_share >= BLOCKED_SHARE_MIN);
	evidence->flagged = listener->limit_gaps >= LIMIT_WAITS_MIN &&
			    evidence->wait_share >= LIMIT_WAIT_SHARE &&
			    cs_hist_percentile(listener->accept_wait_ns, 99.0) >= LIMIT_WAIT_P99_MIN_NS &&
			    not_busy;
}
