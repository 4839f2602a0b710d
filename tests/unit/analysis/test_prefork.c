// SPDX-License-Identifier: BSD-2-Clause
/*
 * Accept pools: workers that each accept a connection and serve it before
 * they accept again (gunicorn's sync workers, Apache's prefork MPM,
 * csserver --accept prefork). Their queue is the listen backlog: a
 * saturated one is pool_saturation of kind accept, never an acceptor
 * bottleneck. Synthetic records with known answers.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "attrib.h"
#include "diagnose.h"
#include "engine.h"
#include "events.h"
#include "figures_check.h"
#include "json_check.h"
#include "live.h"
#include "report.h"
#include "report_render.h"
#include "words.h"

#define PORT 8000
#define T0 (100 * SEC)
#define SK(n) (0xffff888400000000ull + (n))
#define WORKER_FIRST 51
#define CONNECTIONS 300

CS_ENGINE_FIXTURE

static struct cs_report_meta meta;

static void start(void)
{
	setup();
	meta = (struct cs_report_meta){ .target = "pid 50 (gunicorn)", .duration_s = 10.0 };
}

TestSuite(prefork, .init = start, .fini = teardown);

/* One record to feed, in time order. */
struct timed {
	uint64_t ts_ns;
	bool accept;
	struct accept_spec a;
	struct request_spec r;
	uint64_t sk;
};

static int by_time(const void *x, const void *y)
{
	const struct timed *a = x, *b = y;
	return a->ts_ns < b->ts_ns ? -1 : a->ts_ns > b->ts_ns;
}

/*
 * clients connect in a loop (each again 100 us after its answer), with
 * one request per connection; workers each accept the oldest waiting
 * connection, serve it for handler_ns and close it. With more clients
 * than workers, connections wait in the backlog for a free worker.
 * pause_ns: every worker stops that long outside accept() before each
 * accept, serving nothing (a pause, not the pool's work).
 */
static void feed_pool(uint32_t workers, uint32_t clients, uint64_t handler_ns, uint64_t pause_ns, const char *comm)
{
	struct timed *records = calloc(2 * CONNECTIONS, sizeof(*records));
	cr_assert_not_null(records);
	uint64_t next_connect[16], free_at[8];
	for (uint32_t c = 0; c < clients; c++)
		next_connect[c] = T0 + c * 10 * US;
	for (uint32_t w = 0; w < workers; w++)
		free_at[w] = T0;
	for (uint32_t i = 0; i < CONNECTIONS; i++) {
		uint32_t c = 0, w = 0;
		for (uint32_t k = 1; k < clients; k++)
			c = next_connect[k] < next_connect[c] ? k : c;
		for (uint32_t k = 1; k < workers; k++)
			w = free_at[k] < free_at[w] ? k : w;
		uint64_t established = next_connect[c], enter = free_at[w] + pause_ns;
		uint64_t accepted = (enter > established ? enter : established) + 20 * US;
		uint64_t read = accepted + 10 * US, sent = read + handler_ns;
		records[2 * i] = (struct timed){ .ts_ns = accepted, .accept = true, .sk = SK(i),
			.a = { .port = PORT, .tgid = WORKER_FIRST + w, .tid = WORKER_FIRST + w, .established_ns = established,
			       .enter_ns = enter, .ts_ns = accepted, .backlog_limit = 128, .comm = comm } };
		records[2 * i + 1] = (struct timed){ .ts_ns = sent, .sk = SK(i),
			.r = { .sk = SK(i), .port = PORT, .index = 0, .start_ns = established + 50 * US,
			       .first_read_ns = read, .first_send_ns = sent, .last_send_ns = sent, .drain_end_ns = sent,
			       .tgid = WORKER_FIRST + w, .reader_tid = WORKER_FIRST + w } };
		free_at[w] = sent + 30 * US;
		next_connect[c] = sent + 100 * US;
	}
	qsort(records, 2 * CONNECTIONS, sizeof(*records), by_time);
	for (uint32_t i = 0; i < 2 * CONNECTIONS; i++) {
		if (records[i].accept)
			FEED_OK(engine, make_accept_of(records[i].a, records[i].sk, 0x7f000001, (uint16_t)(30000 + i)));
		else
			feed_request(engine, records[i].r);
	}
	/* Blocking reads in processes that never poll: the workers read their own. */
	for (uint32_t w = 0; w < workers; w++)
		FEED_OK(engine, make_thread_polls(records[2 * CONNECTIONS - 1].ts_ns, WORKER_FIRST + w, 0, 0, 0, 0,
						  CONNECTIONS / workers));
	free(records);
}

static double cause_share(const struct cs_tail *tail, enum cs_cause cause)
{
	for (int i = 0; i < CS_CAUSE_COUNT; i++)
		if (tail->causes[i].cause == cause)
			return tail->causes[i].share;
	return -1;
}

static char *render(bool json)
{
	return render_report(engine, &meta, json);
}

/* gunicorn's shape: 2 sync workers, 40 ms handlers, 6 clients. */
Test(prefork, a_saturated_accept_pool_is_pool_saturation_not_an_acceptor_bottleneck)
{
	feed_pool(2, 6, 40 * MS, 0, "gunicorn");
	struct cs_tail tail;
	cs_compute_tail(engine, 99.0, &tail);
	cr_assert_eq(tail.causes[0].cause, CS_CAUSE_ACCEPT_QUEUE, "leads: %s", cs_cause_names[tail.causes[0].cause]);
	/* Each connection waits for the two ahead of it: ~80 ms queued, 40 ms served. */
	cr_assert_float_eq(cause_share(&tail, CS_CAUSE_ACCEPT_QUEUE), 2.0 / 3.0, 0.02);

	struct cs_conditions cond;
	cs_compute_conditions(engine, &meta, &cond);
	cr_assert(cond.pool_saturation.flagged);
	cr_assert_eq(cond.pool_saturation.kind, CS_POOL_ACCEPT);
	cr_assert_eq(cond.pool_saturation.server, CS_POOL_SERVER_GUNICORN);
	cr_assert_eq(cond.pool_saturation.pool_threads, 2);
	cr_assert_eq(cond.pool_saturation.busy_threads, 2);
	cr_assert_eq(cond.pool_saturation.wait_cause, CS_POOL_WAIT_POOL);
	cr_assert_gt(cond.pool_saturation.busy_share, 0.95, "%f", cond.pool_saturation.busy_share);
	cr_assert_float_eq(cond.pool_saturation.tail_share, 2.0 / 3.0, 0.02);
	cr_assert_not(cond.accept_contention.acceptor_bottleneck, "a worker that serves what it accepts");
	cr_assert_not(cond.accept_contention.flagged);

	char *text = render(false);
	cr_assert(strstr(text, "! pool_saturation: (accept pool)"), "%s", text);
	cr_assert(strstr(text, "2 of 2 workers that accept and serve were busy"), "%s", text);
	cr_assert(strstr(text, "--workers"), "the advice names gunicorn's knob: %s", text);
	cr_assert(strstr(text, ":8000 connections waited in the accept queue for a free worker: 2 of 2"), "%s", text);
	cr_assert_null(strstr(text, "accept thread is the bottleneck"), "%s", text);
	cr_assert_null(strstr(text, "accept_contention"), "%s", text);
	free(text);

	text = render(true);
	struct json *root = json_parse(text);
	const struct json *pool = member(member(root, "conditions", J_OBJECT), "pool_saturation", J_OBJECT);
	cr_assert_str_eq(member(pool, "kind", J_STRING)->string, "accept");
	cr_assert_eq(number(pool, "workers"), 2);
	cr_assert_eq(number(pool, "busy_workers"), 2);
	cr_assert_eq(number(pool, "port"), PORT);
	cr_assert_str_eq(member(pool, "server", J_STRING)->string, "gunicorn");
	json_free(root);
	free(text);

	/* The live view (connscope top): the pool's kind, its workers busy, gunicorn's knob. */
	char *snapshot = render_snapshot(engine, &meta);
	cr_assert(strstr(snapshot, "\"advice\":\"accept pool, 2 of 2 busy: gunicorn: more --workers"), "%s", snapshot);
	free(snapshot);
}

/* csserver --accept prefork: the same, the advice in general words. */
Test(prefork, a_pool_of_another_server_gets_the_general_advice)
{
	feed_pool(4, 12, 20 * MS, 0, "cs-prefork-0");
	struct cs_analysis *a = malloc(sizeof(*a));
	cr_assert_not_null(a);
	cs_analyze(engine, &meta, a);
	cr_assert(a->conditions.pool_saturation.flagged);
	cr_assert_eq(a->conditions.pool_saturation.kind, CS_POOL_ACCEPT);
	cr_assert_eq(a->conditions.pool_saturation.pool_threads, 4);
	cr_assert_eq(a->conditions.pool_saturation.server, CS_POOL_SERVER_OTHER);
	cr_assert_not(a->conditions.accept_contention.flagged);
	cr_assert(strstr(cs_pool_advice(CS_POOL_ACCEPT, CS_POOL_SERVER_OTHER), "more workers"));
	free(a);
}

/*
 * The same workers stopped 40 ms before each accept by something that is
 * not serving (a pause): connections wait as long, but the pool was not
 * busy serving. Not pool_saturation; the acceptors were held elsewhere.
 */
Test(prefork, a_wait_for_workers_that_were_not_serving_is_not_pool_saturation)
{
	feed_pool(2, 6, 1 * MS, 40 * MS, "gunicorn");
	struct cs_conditions cond;
	cs_compute_conditions(engine, &meta, &cond);
	cr_assert_eq(cond.pool_saturation.kind, CS_POOL_ACCEPT);
	cr_assert_not(cond.pool_saturation.flagged, "busy %f", cond.pool_saturation.busy_share);
	cr_assert_lt(cond.pool_saturation.busy_share, 0.1);
	cr_assert_eq(cond.pool_saturation.wait_cause, CS_POOL_WAIT_NOT_KNOWN);
	cr_assert(cond.accept_contention.acceptor_bottleneck, "away from accept(), not serving");
	struct cs_finding findings[16];
	size_t n = cs_diagnose(engine, &meta, findings, 16);
	bool said = false;
	for (size_t i = 0; i < n; i++) {
		char text[CS_SENTENCE_LEN];
		cs_finding_text(text, sizeof(text), &findings[i]);
		cr_assert_neq(findings[i].kind, CS_FINDING_ACCEPT_POOL_FULL, "%s", text);
		if (!cs_figures_get(&findings[i].figures, "workers"))
			continue;
		cr_assert_eq(figure_count(&findings[i].figures, "busy_workers"), 0);
		cr_assert_eq(figure_count(&findings[i].figures, "workers"), 2);
		said |= strstr(text, "0 of 2 workers that accept and serve") != NULL;
	}
	cr_assert(said, "the finding says the workers were not busy serving");
}

/*
 * Go's shape: one thread accepts 16 persistent connections once, each
 * accept loop ending in EAGAIN, then serves for seconds. No herd (one
 * thread), and accept waits no part of the tail: nothing flagged.
 */
Test(prefork, one_thread_s_eagains_on_connections_accepted_once_flag_nothing)
{
	uint64_t clock_ns = T0;
	for (uint32_t i = 0; i < 16; i++) {
		clock_ns += 100 * US;
		FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tgid = 60, .tid = 61,
								     .established_ns = clock_ns - 3 * MS, .ts_ns = clock_ns,
								     .backlog_limit = 128, .comm = "server" },
						SK(500 + i), 0x7f000001, (uint16_t)(41000 + i)));
		if (i % 3 != 2)
			feed_eagains(engine, PORT, 61, 1, &clock_ns);
	}
	for (uint32_t i = 0; i < 2000; i++) {
		uint64_t t = clock_ns + i * 4 * MS;
		feed_request(engine, (struct request_spec){ .sk = SK(500 + i % 16), .port = PORT, .index = 1 + i / 16,
							    .start_ns = t, .first_read_ns = t + 20 * US,
							    .first_send_ns = t + (i % 50 == 0 ? 5 * MS : 300 * US),
							    .last_send_ns = t + (i % 50 == 0 ? 5 * MS : 300 * US),
							    .tgid = 60, .reader_tid = 62 + i % 3 });
	}
	struct cs_analysis *a = malloc(sizeof(*a));
	cr_assert_not_null(a);
	cs_analyze(engine, &meta, a);
	cr_assert_not(a->conditions.accept_contention.flagged);
	cr_assert_not(a->conditions.accept_contention.thundering_herd);
	cr_assert_not(a->conditions.pool_saturation.flagged);
	for (size_t f = 0; f < a->finding_count; f++)
		cr_assert_neq(a->findings[f].kind, CS_FINDING_THUNDERING_HERD, "%s", a->findings[f].code);
	free(a);
}

/*
 * Apache defers its accepts (TCP_DEFER_ACCEPT): the kernel discards each
 * connection's bare handshake ACK, and the listener's sk_drops counts it.
 * No queue overflowed: the drops given never exceed ListenOverflows.
 */
Test(prefork, drops_never_exceed_the_kernel_s_listen_overflows)
{
	uint64_t clock_ns = T0;
	feed_samples(engine, PORT, 5, 0, 511, 0, &clock_ns);
	feed_samples(engine, PORT, 5, 1, 511, 150, &clock_ns);
	const struct cs_listener_stats *l = cs_engine_listener(engine, PORT);
	cr_assert_not_null(l);
	cr_assert_eq(cs_listener_drops(l), 150, "sk_drops moved by 150");

	meta.netstat = (struct cs_netstat_delta){ .valid = true, .listen_overflows = 0 };
	cr_assert_eq(cs_listener_drops_seen(l, &meta), 0);
	struct cs_conditions cond;
	cs_compute_conditions(engine, &meta, &cond);
	cr_assert_not(cond.listen_overflow.flagged, "%llu drops", (unsigned long long)cond.listen_overflow.drops);

	/* Without the kernel's counters, the listener's own count stands. */
	meta.netstat.valid = false;
	cr_assert_eq(cs_listener_drops_seen(l, &meta), 150);
	cs_compute_conditions(engine, &meta, &cond);
	cr_assert(cond.listen_overflow.flagged);
}

/*
 * csserver --accept shared: two epoll workers each woken for every
 * connection, the loser's accept() failing with EAGAIN, and accept waits
 * a good part of a tail of short requests: a thundering herd, flagged.
 */
Test(prefork, a_herd_over_several_threads_that_the_tail_feels_stays_flagged)
{
	uint64_t clock_ns = T0;
	for (uint32_t i = 0; i < 200; i++) {
		clock_ns += 1 * MS;
		uint32_t winner = 71 + i % 2;
		uint64_t established = clock_ns, accepted = clock_ns + 300 * US;
		FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tgid = 70, .tid = winner,
								     .established_ns = established, .ts_ns = accepted,
								     .backlog_limit = 511, .comm = "csw" },
						SK(1000 + i), 0x7f000001, (uint16_t)(20000 + i)));
		FEED_OK(engine, make_accept((struct accept_spec){ .port = PORT, .tgid = 70, .tid = 71 + (i + 1) % 2,
								  .ret = -EAGAIN, .ts_ns = accepted + 5 * US,
								  .backlog_limit = 511, .comm = "csw" }));
		feed_request(engine, (struct request_spec){
			.sk = SK(1000 + i), .port = PORT, .index = 0, .start_ns = established + 20 * US,
			.first_read_ns = accepted + 10 * US, .first_send_ns = accepted + 110 * US,
			.last_send_ns = accepted + 110 * US, .tgid = 70, .reader_tid = winner });
	}
	struct cs_analysis *a = malloc(sizeof(*a));
	cr_assert_not_null(a);
	cs_analyze(engine, &meta, a);
	cr_assert_not(a->accept_path_negligible);
	cr_assert(a->conditions.accept_contention.thundering_herd);
	cr_assert(a->conditions.accept_contention.flagged);
	free(a);
}
