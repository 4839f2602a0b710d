// SPDX-License-Identifier: BSD-2-Clause
/*
 * Connection limits, told apart from a slow acceptor. A server at its
 * connection limit (Tomcat's maxConnections, nginx's worker_connections,
 * Node's maxConnections) stops calling accept() while the limit's worth of
 * connections is open, blocked until one closes, and calls accept() again
 * right after that close. A slow acceptor also leaves connections queued,
 * but it comes back on its own schedule, whatever closes. So each accept
 * of a connection that queued while the acceptor was away is classified by
 * when the acceptor came back: soon after the first close since its last
 * accept (a limit), or not.
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

void cs_limit_on_close(struct cs_listener_stats *listener, uint64_t now_ns, uint64_t accepted_ns,
		       enum cs_slot_freer kind)
{
	/*
	 * A server may free the slot before it closes the socket (Tomcat
	 * counts its latch down, then closes): the acceptor is back in
	 * accept() a few microseconds before the close. So a close soon after
	 * an accept that no close preceded ends that wait too, if it closes
	 * a connection accepted before it (the connection just accepted,
	 * served and closed at once, freed nothing for it).
	 */
	struct cs_limit_pending *pending = &listener->limit_pending;
	if (pending->enter_ns && accepted_ns < pending->accept_ns && now_ns >= pending->enter_ns &&
	    (now_ns - pending->enter_ns) * CAME_BACK_DIVISOR <= pending->away_ns) {
		/* Counted open: the connection just accepted too. */
		uint32_t open_before = listener->open_conns > 1 ? listener->open_conns - 1 : 0;
		count_limit_wait(listener, pending->waited_ns, open_before, (uint8_t)kind);
		pending->enter_ns = 0;
	} else if (!listener->first_close_ns) {
		listener->first_close_ns = now_ns;
		listener->open_before_close = listener->open_conns;
		listener->first_close_kind = (uint8_t)kind;
	}
	cs_limit_on_forget(listener, now_ns);
}

void cs_limit_on_accept(struct cs_listener_stats *listener, uint64_t previous_return_ns,
			const struct cs_ev_accept *ev)
{
	uint64_t first_close_ns = listener->first_close_ns;
	listener->first_close_ns = 0; /* the acceptor is back: a new time away starts */
	listener->limit_pending.enter_ns = 0;
	if (ev->ret < 0 || !ev->established_ns || !previous_return_ns)
		return;
	/* Queued before the call began: it waited with the acceptor away. */
	uint64_t queued_from = ev->established_ns > previous_return_ns ? ev->established_ns : previous_return_ns;
	if (ev->enter_ns <= queued_from || ev->enter_ns <= previous_return_ns)
		return;
	uint64_t waited_ns = ev->enter_ns - queued_from;
	listener->queued_gaps++;
	listener->queued_gap_ns += waited_ns;

	uint64_t away_ns = ev->enter_ns - previous_return_ns;
	if (!first_close_ns) {
		/* No close yet: one may follow at once (see cs_limit_on_close). */
		listener->limit_pending = (struct cs_limit_pending){
			.enter_ns = ev->enter_ns, .accept_ns = ev->hdr.ts_ns,
			.away_ns = away_ns, .waited_ns = waited_ns,
		};
		return;
	}
	if (first_close_ns > ev->enter_ns || (ev->enter_ns - first_close_ns) * CAME_BACK_DIVISOR > away_ns)
		return;
	count_limit_wait(listener, waited_ns, listener->open_before_close, listener->first_close_kind);
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
		uint64_t handler_ns = thread->cause_ns[CS_CAUSE_HANDLER];
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
