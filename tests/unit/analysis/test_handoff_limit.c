// SPDX-License-Identifier: BSD-2-Clause
/*
 * A connection limit that is the acceptor's own hand-off pool, full
 * (Apache's event MPM: each child's listener thread accepts, polls the
 * keep-alive connections and hands each ready one to a worker, and stops
 * accepting while no worker is free), told from a real connection limit
 * (the acceptor stops at N open connections while its pool is idle), on
 * synthetic records with explicit times.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "attrib.h"
#include "diagnose.h"
#include "engine.h"
#include "events.h"
#include "live.h"
#include "report_render.h"
#include "words.h"

#define PORT 8080
#define T0 (1000 * SEC)
#define SK(n) (0xffff888400000000ull + (n))
#define LISTENER 3      /* accepts; in the Apache shape, also the poller */
#define POLLER_ELSE 4   /* the poller when it is another thread (Tomcat's shape) */
#define WORKER_FIRST 11 /* two pool threads, 11 and 12 */
#define CYCLE (40 * MS) /* a worker frees, the listener accepts, once a cycle */
#define CYCLES 30

static struct cs_engine *engine;
static struct cs_report_meta meta;

static void setup(void)
{
	engine = cs_engine_new();
	cr_assert_not_null(engine);
	meta = (struct cs_report_meta){ .target = "pid 100 (apache2)", .duration_s = 1.3 };
}

static void teardown(void)
{
	cs_engine_free(engine);
}

TestSuite(handoff_limit, .init = setup, .fini = teardown);

struct shape {
	uint64_t serve_ns;    /* each request's handler time, on one of the two workers */
	uint32_t poller_tid;  /* the thread that hands requests to the workers */
	bool sends_next;      /* the client sends its next request at once (else it stays idle) */
};

static uint64_t at(int cycle)
{
	return T0 + (uint64_t)cycle * CYCLE;
}

/* Connection n accepted at the start of its cycle, after 60 ms in the queue (40 ms with the listener away). */
static void accept_conn(int n)
{
	FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tgid = 100, .tid = LISTENER,
							     .established_ns = at(n) - 60 * MS,
							     .enter_ns = at(n) - 50 * US, .ts_ns = at(n),
							     .backlog = 3, .backlog_limit = 511, .comm = "apache2" },
					SK(n), 0x7f000001, (uint16_t)(40000 + n)));
}

/* Connection n's first request, handed to a worker just after its accept. */
static void first_request(int n, const struct shape *s, uint64_t ts_ns)
{
	uint64_t read_ns = at(n) + 50 * US;
	feed_request(engine, (struct request_spec){
		.sk = SK(n), .port = PORT, .index = 0, .ts_ns = ts_ns, .start_ns = at(n) - 60 * MS + 20 * US,
		.first_read_ns = read_ns, .first_send_ns = read_ns + s->serve_ns, .last_send_ns = read_ns + s->serve_ns,
		.drain_end_ns = read_ns + s->serve_ns, .reader_tid = WORKER_FIRST + (uint32_t)(n % 2),
		.bytes_in = 76, .bytes_out = 136, .flags = CS_REQ_HANDED_OFF });
}

/*
 * The listener closes connection n at the end of cycle n + 2, as a worker
 * frees. With the client's next request sent at once, that request
 * waited ~80 ms unread (the records the probes write: an unread request,
 * then the close); otherwise the connection was idle since its answer.
 */
static void close_conn(int n, const struct shape *s)
{
	uint64_t close_ns = at(n + 3) - 100 * US;
	uint64_t answered_ns = at(n) + 50 * US + s->serve_ns;
	uint64_t next_ns = at(n + 1) + 20 * US;
	if (s->sends_next) {
		first_request(n, s, next_ns);
		feed_request(engine, (struct request_spec){
			.sk = SK(n), .port = PORT, .index = 1, .ts_ns = close_ns, .start_ns = next_ns,
			.flags = CS_REQ_UNREAD | CS_REQ_NO_RESPONSE });
	} else {
		first_request(n, s, close_ns);
	}
	feed_conn_close(engine, (struct close_spec){ .sk = SK(n), .ts_ns = close_ns, .established_ns = at(n) - 60 * MS,
						     .last_activity_ns = s->sends_next ? next_ns : answered_ns,
						     .requests = s->sends_next ? 2 : 1, .client_port = (uint16_t)(40000 + n),
						     .client_ipv4 = 0x7f000001, .port = PORT,
						     .closed_by = CS_CLOSED_BY_SERVER });
}

/* The threads' own records at the end: who polled and handed out, who read what was handed. */
static void thread_records(const struct shape *s)
{
	uint64_t end_ns = at(CYCLES + 1);
	FEED_OK(engine, make_thread_polls(end_ns, s->poller_tid, 3 * CYCLES, 0, 0, CYCLES, 0));
	for (uint32_t w = 0; w < 2; w++) {
		FEED_OK(engine, make_thread_polls(end_ns, WORKER_FIRST + w, 0, 0, CYCLES / 2, 0, 0));
		FEED_OK(engine, make_thread_sample(end_ns, WORKER_FIRST + w, "apache2", 0, 0, 0));
	}
	FEED_OK(engine, make_thread_sample(end_ns, s->poller_tid, "apache2", 0, 0, 0));
	/* The listener spent its time away from accept() blocked: 1 ms on a CPU in 1.2 s. */
	struct cs_ev_thread_cpu cpu;
	memset(&cpu, 0, sizeof(cpu));
	cpu.hdr = make_header(CS_EV_THREAD_CPU, sizeof(cpu), end_ns);
	cpu.cpu_ns = MS;
	cpu.tid = LISTENER;
	cpu.tgid = 100;
	FEED_OK(engine, cpu);
}

/*
 * Three connections open at each close: two served by the workers, one
 * waiting for a worker. Each cycle the listener closes the oldest and
 * accepts one that waited 40 ms with it away from accept().
 */
static void run(const struct shape *s)
{
	for (int n = 0; n < CYCLES; n++) {
		if (n >= 3)
			close_conn(n - 3, s);
		accept_conn(n);
	}
	thread_records(s);
}

static bool has_finding(const char *code)
{
	struct cs_finding findings[32];
	size_t n = cs_diagnose(engine, &meta, findings, 32);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(findings[i].code, code))
			return true;
	return false;
}

static const struct shape apache_event = {
	.serve_ns = 2 * CYCLE - 250 * US, .poller_tid = LISTENER, .sends_next = true,
};

Test(handoff_limit, a_limit_held_by_the_acceptors_own_busy_pool_is_pool_saturation)
{
	run(&apache_event);
	struct cs_conditions c;
	cs_compute_conditions(engine, &meta, &c);
	cr_assert(c.connection_limit.held_by_pool, "the limit the listener held is its pool's");
	cr_assert_not(c.connection_limit.flagged);
	cr_assert(c.pool_saturation.flagged);
	cr_assert_eq(c.pool_saturation.kind, CS_POOL_HANDOFF);
	cr_assert(c.pool_saturation.accept_held);
	cr_assert_eq(c.pool_saturation.pool_threads, 2);
	cr_assert_eq(c.pool_saturation.poller_tid, LISTENER);
	cr_assert_eq(c.pool_saturation.port, PORT);
	cr_assert_eq(c.pool_saturation.server, CS_POOL_SERVER_APACHE);
	/* The accept queue's wait (60 ms of each 140 ms request) is the pool's now. */
	cr_assert_gt(c.pool_saturation.tail_share, 0.4, "tail share %f", c.pool_saturation.tail_share);
	cr_assert_eq(c.pool_saturation.wait_cause, CS_POOL_WAIT_POOL);
	cr_assert(has_finding("handoff_pool_full"));
	cr_assert_not(has_finding("connection_limit"));
}

Test(handoff_limit, closes_with_a_request_waiting_are_the_pools_not_idle_timeouts)
{
	run(&apache_event);
	struct cs_conditions c;
	cs_compute_conditions(engine, &meta, &c);
	cr_assert_not(c.idle_timeout.flagged);
	cr_assert_eq(c.idle_timeout.server_idle_closes, 0);
	cr_assert_eq(c.pool_saturation.dropped_closes, CYCLES - 3);
	cr_assert_float_eq(c.pool_saturation.dropped_wait_mean_us, 79880.0, 1.0);
	/* The words: Apache's settings, no timeout or limit to raise. */
	char *text = render_report(engine, &meta, false);
	cr_assert_not_null(strstr(text, "ThreadsPerChild"), "%s", text);
	cr_assert_not_null(strstr(text, "MaxRequestWorkers"), "%s", text);
	cr_assert_not_null(strstr(text, "with a request waiting"), "%s", text);
	/* Its waits are in the accept queue: the pool is judged busy over its serving, and says only that. */
	cr_assert_not_null(strstr(text, "pool thread(s) (busy "), "%s", text);
	cr_assert_null(strstr(text, "of the time requests waited for one"), "%s", text);
	cr_assert_null(strstr(text, "idle timeout longer"), "%s", text);
	cr_assert_null(strstr(text, "raise the connection limit"), "%s", text);
	cr_assert_null(strstr(text, "?}"), "%s", text);
	free(text);
}

/* The JSON and the live view (connscope top) say the pool's kind, its size, its listener and Apache's knobs. */
Test(handoff_limit, the_json_and_the_live_view_say_a_handoff_pool_of_two_and_apaches_knobs)
{
	run(&apache_event);
	char *json = render_report(engine, &meta, true);
	cr_assert_not_null(strstr(json, "\"kind\":\"handoff\",\"pool_threads\":2,"), "%s", json);
	cr_assert_not_null(strstr(json, "\"server\":\"apache\",\"accept_held\":true,"), "%s", json);
	cr_assert_not_null(strstr(json, "\"held_by_pool\":true"), "%s", json);
	cr_assert_not_null(strstr(json, "\"code\":\"handoff_pool_full\""), "%s", json);
	free(json);
	char *snapshot = render_snapshot(engine, &meta);
	cr_assert_not_null(strstr(snapshot, "\"advice\":\"handoff pool of 2: Apache: raise ThreadsPerChild and "
					    "MaxRequestWorkers\""), "%s", snapshot);
	free(snapshot);
}

/* A real limit: the listener stops at three open connections, idle ones, while its workers are idle. */
Test(handoff_limit, a_limit_held_while_the_pool_is_idle_stays_a_connection_limit)
{
	run(&(struct shape){ .serve_ns = MS, .poller_tid = LISTENER, .sends_next = false });
	struct cs_conditions c;
	cs_compute_conditions(engine, &meta, &c);
	cr_assert(c.connection_limit.flagged);
	cr_assert_not(c.connection_limit.held_by_pool);
	cr_assert_eq(c.connection_limit.open_connections, 3);
	cr_assert_eq(c.connection_limit.freed_by_idle_close, CYCLES - 3);
	cr_assert_not(c.pool_saturation.flagged);
	cr_assert_not(c.pool_saturation.accept_held);
	/* Those closes were idle ones: the idle timeout is the other thing to look at. */
	cr_assert(c.idle_timeout.flagged);
	cr_assert(has_finding("connection_limit"));
	cr_assert_not(has_finding("handoff_pool_full"));
}

/* Tomcat's shape: the Acceptor hands nothing on (its Poller is another thread): a limit, pool busy or not. */
Test(handoff_limit, a_limit_whose_acceptor_is_not_the_pools_poller_stays_a_connection_limit)
{
	run(&(struct shape){ .serve_ns = 2 * CYCLE - 250 * US, .poller_tid = POLLER_ELSE, .sends_next = true });
	struct cs_conditions c;
	cs_compute_conditions(engine, &meta, &c);
	cr_assert(c.connection_limit.flagged);
	cr_assert_not(c.connection_limit.held_by_pool);
	cr_assert_not(c.pool_saturation.accept_held);
	cr_assert(has_finding("connection_limit"));
}

/*
 * The listener also closes idle keep-alive connections while no worker is
 * free (the client had not sent its next request): ~40 ms after their
 * answers, within a request's 80 ms serving time. A worker freeing, not a
 * timer: the pool's closes, not idle_timeout.
 */
Test(handoff_limit, idle_closes_within_a_requests_serving_time_are_the_full_pools)
{
	run(&(struct shape){ .serve_ns = 2 * CYCLE - 250 * US, .poller_tid = LISTENER, .sends_next = false });
	struct cs_conditions c;
	cs_compute_conditions(engine, &meta, &c);
	cr_assert(c.pool_saturation.flagged);
	cr_assert(c.pool_saturation.accept_held);
	cr_assert_eq(c.idle_timeout.server_idle_closes, CYCLES - 3);
	cr_assert_eq(c.idle_timeout.pool_closes, CYCLES - 3);
	cr_assert_not(c.idle_timeout.flagged);
	cr_assert_eq(c.pool_saturation.idle_closes, CYCLES - 3);
	cr_assert_eq(c.pool_saturation.dropped_closes, 0);
	/* Closed 40.1 ms after their answers, the handlers 79.75 ms. */
	cr_assert_float_eq(c.pool_saturation.idle_gap_max_us, 40100.0, 400.0);
	cr_assert_float_eq(c.pool_saturation.handler_p99_us, 79750.0, 800.0);
	cr_assert_not(c.non_persistent.flagged);
	char *text = render_report(engine, &meta, false);
	cr_assert_not_null(strstr(text, "idle keep-alive connection(s) within a request's serving time"), "%s", text);
	cr_assert_null(strstr(text, "idle timeout longer"), "%s", text);
	free(text);
}
