// SPDX-License-Identifier: BSD-2-Clause
/*
 * Connection limits told apart from a slow or busy acceptor (daemon/engine/limit.c
 * and its use in the diagnosis and the conditions), on synthetic streams:
 * an acceptor that comes back to accept() right after a close while a
 * fixed number of connections is open, one that pauses on its own schedule
 * (the demo's), and one that is on a CPU between accepts.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrib.h"
#include "diagnose.h"
#include "engine.h"
#include "events.h"
#include "report.h"
#include "words.h"

#define PORT 8080
#define ACCEPTOR_TID 7
#define LIMIT 4
#define WAITS 20

static struct cs_engine *engine;
static struct cs_report_meta meta;
static uint64_t clock_ns;
static uint64_t open_sks[LIMIT]; /* the connections open now, oldest first */

static void setup(void)
{
	engine = cs_engine_new();
	cr_assert_not_null(engine);
	meta = (struct cs_report_meta){ .target = "pid 100 (server)", .duration_s = 10.0 };
	clock_ns = 1000 * SEC;
	memset(open_sks, 0, sizeof(open_sks));
}

static void teardown(void)
{
	cs_engine_free(engine);
}

TestSuite(limit, .init = setup, .fini = teardown);

static uint64_t next_sk = 0xffff888000000000ull;

/* The acceptor's accept() call from enter_ns to ts_ns of a connection queued since established_ns. */
static uint64_t accept_one(uint64_t established_ns, uint64_t enter_ns, uint64_t ts_ns)
{
	uint64_t sk = ++next_sk;
	struct cs_ev_accept ev = make_accept_of((struct accept_spec){ .port = PORT, .tgid = 100,
								      .tid = ACCEPTOR_TID, .ts_ns = ts_ns,
								      .enter_ns = enter_ns,
								      .established_ns = established_ns,
								      .backlog = 3, .backlog_limit = 128,
								      .comm = "acceptor" },
					  sk, 0x0a000002, (uint16_t)(40000 + sk % 1000));
	FEED_OK(engine, ev);
	return ev.sk;
}

/* LIMIT connections accepted 1 ms apart, each queued 10 us before its call. */
static void open_to_the_limit(void)
{
	for (int i = 0; i < LIMIT; i++) {
		clock_ns += MS;
		open_sks[i] = accept_one(clock_ns - 20 * US, clock_ns - 10 * US, clock_ns);
	}
}

/* The same, from a call begun before the attach: its entry, listener and queue not seen. */
static uint64_t accept_begun_before(uint64_t established_ns, uint64_t ts_ns)
{
	uint64_t sk = ++next_sk;
	struct cs_ev_accept ev = make_accept_of((struct accept_spec){ .port = PORT, .tgid = 100,
								      .tid = ACCEPTOR_TID, .ts_ns = ts_ns,
								      .established_ns = established_ns,
								      .comm = "acceptor" },
					  sk, 0x0a000002, (uint16_t)(40000 + sk % 1000));
	ev.enter_ns = 0;
	ev.listener_sk = 0;
	ev.backlog = ev.backlog_limit = ev.listener_drops = 0;
	FEED_OK(engine, ev);
	return ev.sk;
}

static void close_one(uint64_t sk, uint64_t ts_ns, uint64_t idle_ns, uint8_t closed_by)
{
	feed_conn_close(engine, (struct close_spec){ .sk = sk, .ts_ns = ts_ns, .established_ns = ts_ns - SEC,
						     .last_activity_ns = ts_ns - idle_ns, .requests = 1,
						     .port = PORT, .closed_by = closed_by });
}

/* The server closes its oldest open connection, idle for idle_ns; its place is taken at the end. */
static void close_oldest(uint64_t ts_ns, uint64_t idle_ns)
{
	close_one(open_sks[0], ts_ns, idle_ns, CS_CLOSED_BY_SERVER);
	memmove(open_sks, open_sks + 1, (LIMIT - 1) * sizeof(open_sks[0]));
	open_sks[LIMIT - 1] = 0;
}

static void thread_cpu(uint64_t cpu_ns)
{
	struct cs_ev_thread_cpu ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(CS_EV_THREAD_CPU, sizeof(ev), clock_ns);
	ev.cpu_ns = cpu_ns;
	ev.tid = ACCEPTOR_TID;
	ev.tgid = 100;
	FEED_OK(engine, ev);
}

/* The conditions, once the acceptor's CPU time (its thread's sample) is known. */
static struct cs_conditions conditions_with_cpu(uint64_t cpu_ns)
{
	struct cs_conditions c;
	thread_cpu(cpu_ns);
	cs_compute_conditions(engine, &meta, &c);
	return c;
}

/*
 * A server at LIMIT open connections: each time the server closes an idle
 * one (after 300 ms), its acceptor comes back 50 us later and takes a
 * connection that waited since 10 ms after the previous accept.
 */
static void scenario_at_limit_from(bool first_call_unseen)
{
	for (int i = 0; i < LIMIT; i++) {
		clock_ns += MS;
		open_sks[i] = i == 0 && first_call_unseen ? accept_begun_before(clock_ns - 20 * US, clock_ns)
							  : accept_one(clock_ns - 20 * US, clock_ns - 10 * US, clock_ns);
	}
	for (int w = 0; w < WAITS; w++) {
		uint64_t previous_return_ns = clock_ns;
		uint64_t close_ns = previous_return_ns + 300 * MS;
		close_oldest(close_ns, 300 * MS);
		clock_ns = close_ns + 60 * US;
		open_sks[LIMIT - 1] = accept_one(previous_return_ns + 10 * MS, close_ns + 50 * US, clock_ns);
	}
}

static void scenario_at_limit(void)
{
	scenario_at_limit_from(false);
}

/*
 * The demo's slow acceptor: it pauses 2 ms before each accept whatever
 * happens; each connection it hands off is served and closed 200 us later.
 */
static void scenario_pausing_acceptor(void)
{
	for (int i = 0; i < 200; i++) {
		uint64_t previous_return_ns = clock_ns;
		uint64_t sk = accept_one(clock_ns - 10 * MS, clock_ns + 2 * MS, clock_ns + 2 * MS + 10 * US);
		clock_ns += 2 * MS + 10 * US;
		close_one(sk, previous_return_ns + 2 * MS + 210 * US, 0, CS_CLOSED_BY_SERVER);
	}
}

static bool has_finding(const char *code)
{
	struct cs_finding findings[32];
	size_t n = cs_diagnose(engine, &meta, findings, 32);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(findings[i].code, code))
			continue;
		/* Its words quote only the figures the diagnosis gave. */
		char text[CS_SENTENCE_LEN];
		cs_finding_text(text, sizeof(text), &findings[i]);
		cr_expect_null(strstr(text, "?}"), "%s", text);
		return true;
	}
	return false;
}

Test(limit, flagged_when_the_acceptor_comes_back_after_closes)
{
	scenario_at_limit();
	struct cs_conditions c = conditions_with_cpu(2 * MS); /* blocked: 2 ms on a CPU in 6 s */
	cr_assert(c.connection_limit.flagged);
	cr_assert_eq(c.connection_limit.open_connections, LIMIT);
	cr_assert_eq(c.connection_limit.waits, WAITS);
	cr_assert_eq(c.connection_limit.freed_by_idle_close, WAITS);
	cr_assert_eq(c.connection_limit.freed_by_client, 0);
	cr_assert_gt(c.connection_limit.blocked_share, 0.99);
	/* Open connections stayed at LIMIT from the 4th accept to the end, but for 10 us per close. */
	cr_assert_gt(c.connection_limit.plateau_s, 5.9);
	cr_assert_not(c.accept_contention.acceptor_bottleneck);
	cr_assert(has_finding("connection_limit"));
	cr_assert_not(has_finding("accept_thread_bottleneck"));
	cr_assert_not(has_finding("accept_queue_wait"));
}

Test(limit, client_closes_are_told_from_idle_closes)
{
	open_to_the_limit();
	for (int w = 0; w < WAITS; w++) {
		uint64_t previous_return_ns = clock_ns;
		uint64_t close_ns = previous_return_ns + 100 * MS;
		close_one(open_sks[w % LIMIT], close_ns, 0, CS_CLOSED_BY_CLIENT);
		clock_ns = close_ns + 60 * US;
		open_sks[w % LIMIT] = accept_one(previous_return_ns + MS, close_ns + 50 * US, clock_ns);
	}
	struct cs_conditions c = conditions_with_cpu(MS);
	cr_assert(c.connection_limit.flagged);
	cr_assert_eq(c.connection_limit.freed_by_client, WAITS);
	cr_assert_eq(c.connection_limit.freed_by_idle_close, 0);
}

Test(limit, a_slot_freed_before_its_socket_closes_counts_too)
{
	/* Tomcat counts its latch down, then closes: the acceptor is back 20 us before the close. */
	open_to_the_limit();
	for (int w = 0; w < WAITS; w++) {
		uint64_t previous_return_ns = clock_ns;
		uint64_t enter_ns = previous_return_ns + 300 * MS;
		uint64_t sk = accept_one(previous_return_ns + 10 * MS, enter_ns, enter_ns + 10 * US);
		close_oldest(enter_ns + 20 * US, 300 * MS);
		open_sks[LIMIT - 1] = sk;
		clock_ns = enter_ns + 30 * US;
	}
	struct cs_conditions c = conditions_with_cpu(MS);
	cr_assert(c.connection_limit.flagged);
	cr_assert_eq(c.connection_limit.waits, WAITS);
	cr_assert_eq(c.connection_limit.open_connections, LIMIT);
	cr_assert_eq(c.connection_limit.freed_by_idle_close, WAITS);
	cr_assert_gt(c.connection_limit.plateau_s, 5.9);
	cr_assert(has_finding("connection_limit"));
}

/*
 * nginx out of worker_connections: it accepts, then closes an idle (or a
 * new, silent) connection to make room, in the same thread. On a busy
 * machine its accepts come late, as a limit's would; but the close came
 * from the acceptor after its own accept: room made, no slot waited for.
 */
Test(limit, an_acceptor_that_closes_after_its_accept_made_room_and_waited_on_no_limit)
{
	open_to_the_limit();
	for (int w = 0; w < WAITS; w++) {
		uint64_t previous_return_ns = clock_ns;
		uint64_t enter_ns = previous_return_ns + 5 * MS;
		uint64_t sk = accept_one(previous_return_ns + 1 * MS, enter_ns, enter_ns + 10 * US);
		feed_conn_close(engine, (struct close_spec){ .sk = open_sks[0], .ts_ns = enter_ns + 14 * US, .established_ns = enter_ns - SEC, .last_activity_ns = enter_ns - 200 * US, .requests = 0, .port = PORT, .closed_by = CS_CLOSED_BY_SERVER, .closer_tid = ACCEPTOR_TID });
		memmove(open_sks, open_sks + 1, (LIMIT - 1) * sizeof(open_sks[0]));
		open_sks[LIMIT - 1] = sk;
		clock_ns = enter_ns + 30 * US;
	}
	struct cs_conditions c = conditions_with_cpu(MS);
	cr_assert_not(c.connection_limit.flagged);
	cr_assert_eq(c.connection_limit.waits, 0);
	cr_assert_eq(c.connection_limit.made_room, WAITS);
	/* The same closes from another thread (Tomcat's latch, then its close) are a limit's. */
	teardown();
	setup();
	open_to_the_limit();
	for (int w = 0; w < WAITS; w++) {
		uint64_t previous_return_ns = clock_ns;
		uint64_t enter_ns = previous_return_ns + 300 * MS;
		uint64_t sk = accept_one(previous_return_ns + 10 * MS, enter_ns, enter_ns + 10 * US);
		feed_conn_close(engine, (struct close_spec){ .sk = open_sks[0], .ts_ns = enter_ns + 20 * US, .established_ns = enter_ns - SEC, .last_activity_ns = enter_ns - 300 * MS, .requests = 1, .port = PORT, .closed_by = CS_CLOSED_BY_SERVER, .closer_tid = ACCEPTOR_TID + 1 });
		memmove(open_sks, open_sks + 1, (LIMIT - 1) * sizeof(open_sks[0]));
		open_sks[LIMIT - 1] = sk;
		clock_ns = enter_ns + 30 * US;
	}
	c = conditions_with_cpu(MS);
	cr_assert(c.connection_limit.flagged);
	cr_assert_eq(c.connection_limit.made_room, 0);
}

/*
 * Tomcat's poller frees the slots of the idle connections it times out
 * (once a second), then closes them; with a CPU taken by others, its
 * acceptor takes two queued connections before either close lands, and
 * the second close comes after the acceptor's return is long past: it
 * belongs to that sweep, not to the next wait.
 */
Test(limit, slots_freed_in_a_batch_before_their_closes_count_each_wait_once)
{
	open_to_the_limit();
	for (int w = 0; w < WAITS; w++) {
		uint64_t previous_return_ns = clock_ns;
		uint64_t sweep_ns = previous_return_ns + SEC;
		uint64_t first = accept_one(previous_return_ns + 10 * MS, sweep_ns, sweep_ns + 10 * US);
		uint64_t second = accept_one(sweep_ns - 5 * MS, sweep_ns + 400 * US, sweep_ns + 410 * US);
		close_oldest(sweep_ns + 700 * US, SEC);
		close_oldest(sweep_ns + 900 * US, SEC);
		open_sks[LIMIT - 2] = first;
		open_sks[LIMIT - 1] = second;
		clock_ns = sweep_ns + 410 * US;
	}
	struct cs_conditions c = conditions_with_cpu(MS);
	cr_assert(c.connection_limit.flagged);
	/* The first accept of each sweep waited the second; the second, back to back, 390 us
	 * (and the first connections but the very first, 10 us each). */
	cr_assert_eq(c.connection_limit.waits, WAITS);
	cr_assert_eq(c.connection_limit.queued_waits, 2 * WAITS + LIMIT - 1, "%u", (unsigned)c.connection_limit.queued_waits);
	cr_assert_gt(c.connection_limit.wait_share, 0.99);
	cr_assert_eq(c.connection_limit.open_connections, LIMIT);
	cr_assert_eq(c.connection_limit.freed_by_idle_close, WAITS);
	cr_assert(has_finding("connection_limit"));
	cr_assert_not(has_finding("accept_thread_bottleneck"));
}

/*
 * An event loop that accepts and serves: woken by each new connection
 * (there 80 us before it comes), and closing an older one 220 us later.
 * The acceptor came for the connection, not after the close.
 */
Test(limit, an_acceptor_woken_by_the_connection_is_not_held_back_by_the_close_after)
{
	open_to_the_limit();
	for (int w = 0; w < WAITS; w++) {
		uint64_t enter_ns = clock_ns + 200 * MS;
		uint64_t sk = accept_one(enter_ns - 80 * US, enter_ns, enter_ns + 10 * US);
		close_oldest(enter_ns + 220 * US, 200 * MS);
		open_sks[LIMIT - 1] = sk;
		clock_ns = enter_ns + 230 * US;
	}
	struct cs_conditions c = conditions_with_cpu(MS);
	cr_assert_not(c.connection_limit.flagged);
	cr_assert_eq(c.connection_limit.waits, 0);
	cr_assert_eq(c.connection_limit.queued_waits, WAITS + LIMIT - 1);
	cr_assert_not(has_finding("connection_limit"));
}

Test(limit, a_short_wait_with_one_more_open_does_not_move_the_limit)
{
	/*
	 * Two slots freed before their sockets closed let two accepts in:
	 * LIMIT + 1 open for a moment, and the acceptor's next wait, 1.5 ms,
	 * ends with a close at that count. The limit is where it waited 6 s.
	 */
	scenario_at_limit();
	uint64_t extra = accept_one(clock_ns + 10 * US, clock_ns + 20 * US, clock_ns + 30 * US);
	uint64_t previous_return_ns = clock_ns + 30 * US;
	uint64_t close_ns = previous_return_ns + 1500 * US;
	close_one(extra, close_ns, 0, CS_CLOSED_BY_SERVER);
	clock_ns = close_ns + 60 * US;
	accept_one(previous_return_ns + 10 * US, close_ns + 50 * US, clock_ns);
	struct cs_conditions c = conditions_with_cpu(2 * MS);
	cr_assert(c.connection_limit.flagged);
	cr_assert_eq(c.connection_limit.waits, WAITS + 1);
	cr_assert_eq(c.connection_limit.open_connections, LIMIT);
}

Test(limit, not_flagged_for_an_acceptor_on_a_cpu)
{
	scenario_at_limit();
	struct cs_conditions c = conditions_with_cpu(5 * SEC); /* on a CPU most of its 6 s away from accept() */
	cr_assert_not(c.connection_limit.flagged);
	cr_assert_lt(c.connection_limit.blocked_share, 0.5);
	cr_assert(c.accept_contention.acceptor_bottleneck);
	cr_assert(has_finding("accept_thread_bottleneck"));
}

Test(limit, not_flagged_for_an_acceptor_pausing_on_its_own_schedule)
{
	scenario_pausing_acceptor();
	struct cs_conditions c = conditions_with_cpu(20 * MS);
	cr_assert_not(c.connection_limit.flagged);
	cr_assert_eq(c.connection_limit.waits, 0);
	cr_assert_gt(c.connection_limit.queued_waits, 190);
	cr_assert(c.accept_contention.acceptor_bottleneck);
	cr_assert(has_finding("accept_thread_bottleneck"));
	cr_assert_not(has_finding("connection_limit"));
}

Test(limit, without_cpu_samples_the_share_is_unknown_and_the_json_says_null)
{
	scenario_at_limit(); /* a trace recorded before CPU samples existed */
	struct cs_conditions c;
	cs_compute_conditions(engine, &meta, &c);
	cr_assert(c.connection_limit.flagged);
	cr_assert_lt(c.connection_limit.blocked_share, 0);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	cs_report_json(out, engine, &meta);
	fclose(out);
	cr_assert_not_null(strstr(text, "\"connection_limit\":{\"flagged\":true,\"port\":8080,\"open_connections\":4,"));
	cr_assert_not_null(strstr(text, "\"blocked_share\":null"));
	free(text);
}

Test(limit, open_connections_are_counted_down_by_closes_and_forgotten_connections)
{
	scenario_at_limit();
	const struct cs_listener_stats *l = cs_engine_listener(engine, PORT);
	cr_assert_eq(l->open_conns, LIMIT);
	cr_assert_eq(l->open_max, LIMIT);
	for (int i = 0; i < LIMIT; i++)
		close_one(open_sks[i], clock_ns += MS, 0, CS_CLOSED_BY_CLIENT);
	cr_assert_eq(l->open_conns, 0);
	/* A close of a connection never followed (older than the attach) counts nothing. */
	close_one(0xffff777000000001ull, clock_ns += MS, 0, CS_CLOSED_BY_CLIENT);
	cr_assert_eq(l->open_conns, 0);
	/* One left open past the time-out is forgotten by the sweep. */
	accept_one(clock_ns - 10 * US, clock_ns, clock_ns + 20 * US);
	cr_assert_eq(l->open_conns, 1);
	clock_ns += CS_CONN_TIMEOUT_NS + CS_CONN_SWEEP_NS;
	for (int i = 0; i < 200; i++) /* enough records to let the sweep run */
		feed_sample(engine, (struct sample_spec){ .port = PORT, .backlog_limit = 128, .ts_ns = clock_ns += MS });
	cr_assert_eq(l->open_conns, 0);
}

/*
 * A blocking acceptor waits in accept() when connscope attaches: the
 * connection that call returns is one of the open ones all the same, and
 * what the call did not show (its listener, the queue) stays unknown.
 */
Test(limit, an_accept_call_begun_before_the_attach_counts_its_connection)
{
	scenario_at_limit_from(true);
	struct cs_conditions c = conditions_with_cpu(2 * MS);
	cr_assert(c.connection_limit.flagged);
	cr_assert_eq(c.connection_limit.open_connections, LIMIT);
	cr_assert_eq(c.connection_limit.waits, WAITS);
	const struct cs_listener_stats *listener = &engine->listeners[0];
	cr_assert_eq(listener->accepts, LIMIT + WAITS);
	cr_assert_eq(listener->socket_count, 1);
	cr_assert_eq(listener->backlog_limit, 128);
}
