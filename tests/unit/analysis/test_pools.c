// SPDX-License-Identifier: BSD-2-Clause
/*
 * Thread pools: requests a poller handed to a pool thread (worker_pool),
 * pool_saturation, thread roles from behaviour, and accept_contention
 * judged against the tail. Synthetic records with known answers.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attrib.h"
#include "engine.h"
#include "events.h"
#include "figures_check.h"
#include "json_check.h"
#include "jvm.h"
#include "pool_sim.h"
#include "report.h"
#include "report_render.h"

#define PORT 8080
#define T0 (100 * SEC)
#define SK(n) (0xffff888300000000ull + (n))
#define ACCEPTOR 2
#define POLLER 3
#define POOL_FIRST 11
#define POOL_THREADS 4

static struct cs_engine *engine;
static struct cs_report_meta meta;
static uint64_t clock_ns;

static void setup(void)
{
	engine = cs_engine_new();
	cr_assert_not_null(engine);
	meta = (struct cs_report_meta){ .target = "pid 100 (java)", .duration_s = 10.0 };
	clock_ns = T0;
}

static void teardown(void)
{
	cs_engine_free(engine);
}

TestSuite(pools, .init = setup, .fini = teardown);

static double cause_share(const struct cs_tail *tail, enum cs_cause cause)
{
	for (int i = 0; i < CS_CAUSE_COUNT; i++)
		if (tail->causes[i].cause == cause)
			return tail->causes[i].share;
	return -1;
}

Test(pools, a_handed_off_wait_is_worker_pool_and_the_parts_add_up)
{
	struct cs_ev_request req = make_request((struct request_spec){
		.sk = SK(1), .port = PORT, .index = 1, .start_ns = T0, .first_read_ns = T0 + 8 * MS,
		.first_send_ns = T0 + 10 * MS, .last_send_ns = T0 + 10 * MS, .drain_end_ns = T0 + 10 * MS,
		.pickup_runq_ns = 1 * MS, .flags = CS_REQ_HANDED_OFF });
	struct cs_request_split split;
	cr_assert(cs_split_request(engine, &req, &split));
	cr_assert_eq(split.cause_ns[CS_CAUSE_WORKER_POOL], 7 * MS);
	cr_assert_eq(split.cause_ns[CS_CAUSE_EVENT_LOOP], 0);
	cr_assert_eq(split.cause_ns[CS_CAUSE_RUN_QUEUE], 1 * MS);
	cr_assert_eq(split.cause_ns[CS_CAUSE_HANDLER], 2 * MS);
	uint64_t sum = 0;
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		sum += split.cause_ns[c];
	cr_assert_eq(sum, split.total_ns);
	cr_assert_eq(split.total_ns, 10 * MS);

	/* The same request read by the thread that polled it: the loop was busy. */
	req.flags = 0;
	cr_assert(cs_split_request(engine, &req, &split));
	cr_assert_eq(split.cause_ns[CS_CAUSE_EVENT_LOOP], 7 * MS);
	cr_assert_eq(split.cause_ns[CS_CAUSE_WORKER_POOL], 0);
}

/*
 * Tomcat's shape: one acceptor took 32 connections once, each after 2 ms
 * in the queue; one poller; four pool threads, 10 ms a request. Ten times
 * a burst of 16 requests comes at once: four are taken, twelve wait behind
 * them (10, 20 and 30 ms), their pool threads busy all along; between the
 * bursts 84 requests 5 ms apart find a free thread.
 */
#define BURSTS 10
#define BURST 16
#define BETWEEN 84

static void accept_tomcat_connections(void)
{
	for (uint32_t i = 0; i < 32; i++) {
		clock_ns += 100 * US;
		FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tgid = 100, .tid = ACCEPTOR,
								     .established_ns = clock_ns - 2 * MS,
								     .ts_ns = clock_ns, .backlog_limit = 100,
								     .comm = "nio-Acceptor" },
						SK(1000 + i), 0x7f000001, (uint16_t)(40000 + i)));
	}
}

static void note_tomcat_threads(void)
{
	FEED_OK(engine, make_thread_polls(clock_ns, POLLER, 990, 0, 0, 1000, 0));
	for (uint32_t t = 0; t < POOL_THREADS; t++)
		FEED_OK(engine, make_thread_polls(clock_ns, POOL_FIRST + t, 0, 0, 250, 0, 0));
	FEED_OK(engine, make_thread_sample(clock_ns, POLLER, "nio-8080-Poll", 0, 0, 0));
}

static void tomcat_population(void)
{
	accept_tomcat_connections();
	static struct pool_job jobs[BURSTS * (BURST + BETWEEN)];
	size_t n = 0;
	uint64_t at = clock_ns;
	for (int b = 0; b < BURSTS; b++) {
		for (int i = 0; i < BURST; i++)
			jobs[n++] = (struct pool_job){ .arrive_ns = at, .service_ns = 10 * MS, .bound_thread = -1 };
		at += 50 * MS;
		for (int i = 0; i < BETWEEN; i++, at += 5 * MS)
			jobs[n++] = (struct pool_job){ .arrive_ns = at, .service_ns = 10 * MS, .bound_thread = -1 };
		at += 50 * MS;
	}
	pool_simulate(jobs, n, POOL_THREADS);
	for (size_t i = 0; i < n; i++) {
		const struct pool_job *j = &jobs[i];
		feed_request(engine, (struct request_spec){
			.sk = SK(1000 + j->order % 32), .port = PORT, .index = 1 + j->order / 32,
			.start_ns = j->arrive_ns, .first_read_ns = j->start_ns, .first_send_ns = j->end_ns,
			.last_send_ns = j->end_ns, .drain_end_ns = j->end_ns, .reader_tid = POOL_FIRST + j->thread,
			.flags = CS_REQ_HANDED_OFF });
	}
	clock_ns = at;
	note_tomcat_threads();
}

Test(pools, a_saturated_pool_leads_the_tail_with_its_evidence)
{
	tomcat_population();
	struct cs_tail tail;
	cs_compute_tail(engine, 99.0, &tail);
	cr_assert_eq(tail.causes[0].cause, CS_CAUSE_WORKER_POOL, "leads: %s", cs_cause_names[tail.causes[0].cause]);
	/* The tail: the 40 last of each burst, 30 ms waiting and 10 ms served each. */
	cr_assert_eq(tail.requests, BURSTS * 4);
	cr_assert_float_eq(cause_share(&tail, CS_CAUSE_WORKER_POOL), 0.75, 0.01);
	cr_assert_float_eq(cause_share(&tail, CS_CAUSE_HANDLER), 0.25, 0.01);
	cr_assert_float_eq(figure_share(&tail.causes[0].evidence, "busy_while_waiting_share"),
			   1.0, 0.001);
	cr_assert_str_eq(figure_of(&tail.causes[0].evidence, "poller_comm", CS_FIG_COMM)->comm, "nio-8080-Poll");
	cr_assert_eq(figure_count(&tail.causes[0].evidence, "poller_tid"), POLLER);
	cr_assert_eq(figure_count(&tail.causes[0].evidence, "pool_threads"), POOL_THREADS);

	struct cs_conditions cond;
	cs_compute_conditions(engine, &meta, &cond);
	cr_assert(cond.pool_saturation.flagged);
	cr_assert_eq(cond.pool_saturation.pool_threads, POOL_THREADS);
	cr_assert_eq(cond.pool_saturation.poller_tid, POLLER);
	cr_assert_float_eq(cond.pool_saturation.tail_wait_mean_us, 30000.0, 1.0);
	/* Each waited while the thread that took it served the one before. */
	cr_assert_float_eq(cond.pool_saturation.busy_while_waiting_share, 1.0, 0.001);
	cr_assert_eq(cond.pool_saturation.wait_cause, CS_POOL_WAIT_POOL);
	/* 1000 x 10 ms served by 4 threads, each serving from about 0 to 5.1 s: busy in bursts. */
	cr_assert_float_eq(cond.pool_saturation.busy_share, 10.0 / 4 / 5.1, 0.02);
	/* 2 ms accept waits on connections accepted once: no part of this tail. */
	cr_assert_not(cond.accept_contention.flagged);
}

static char *render(bool json)
{
	return render_report(engine, &meta, json);
}

/* The roles of thread tid in the JSON threads[], comma-joined; NULL when it is not there. */
static bool thread_roles(const struct json *threads, uint32_t tid, char *out, size_t len)
{
	for (size_t i = 0; i < length(threads); i++) {
		const struct json *t = element(threads, i);
		if (number(t, "tid") != tid)
			continue;
		const struct json *roles = member(t, "roles", J_ARRAY);
		out[0] = '\0';
		for (size_t k = 0; k < length(roles); k++)
			snprintf(out + strlen(out), len - strlen(out), "%s%s", k ? "," : "", element(roles, k)->string);
		return true;
	}
	return false;
}

Test(pools, roles_come_from_behaviour_in_json_and_text)
{
	tomcat_population();
	/* An event loop of another kind in the same run: polls, reads what it polled. */
	FEED_OK(engine, make_thread_polls(clock_ns, 21, 500, 480, 0, 0, 0));
	char *text = render(true);
	struct json *root = json_parse(text);
	const struct json *threads = member(root, "threads", J_ARRAY);
	char roles[64];
	cr_assert(thread_roles(threads, ACCEPTOR, roles, sizeof(roles)));
	cr_assert_str_eq(roles, "acceptor");
	cr_assert(thread_roles(threads, POLLER, roles, sizeof(roles)));
	cr_assert_str_eq(roles, "poller");
	for (uint32_t t = 0; t < POOL_THREADS; t++) {
		cr_assert(thread_roles(threads, POOL_FIRST + t, roles, sizeof(roles)));
		cr_assert_str_eq(roles, "worker");
	}
	cr_assert(thread_roles(threads, 21, roles, sizeof(roles)));
	cr_assert_str_eq(roles, "event_loop");
	/* Every accepting thread of listeners[] is in threads[]. */
	const struct json *workers = member(element(member(root, "listeners", J_ARRAY), 0), "workers", J_ARRAY);
	for (size_t i = 0; i < length(workers); i++)
		cr_assert(thread_roles(threads, (uint32_t)number(element(workers, i), "tid"), roles, sizeof(roles)));
	const struct json *pool = member(member(root, "conditions", J_OBJECT), "pool_saturation", J_OBJECT);
	cr_assert_eq(member(pool, "flagged", J_BOOL)->number, 1.0);
	cr_assert_eq(number(pool, "pool_threads"), POOL_THREADS);
	cr_assert_str_eq(member(member(root, "tail", J_OBJECT), "causes", J_ARRAY)->child->child->string, "worker_pool");
	json_free(root);
	free(text);

	text = render(false);
	cr_assert(strstr(text, "! pool_saturation:"), "%s", text);
	cr_assert(strstr(text, "Tomcat maxThreads"), "the advice names the pool's knob");
	cr_assert(strstr(text, "poller"), "%s", text);
	cr_assert_null(strstr(text, "accept_contention"), "%s", text);
	cr_assert_null(strstr(text, "accept thread is the bottleneck"));
	free(text);
}

/* The acceptor bottleneck: connections wait 20 ms to be accepted, then are served at once. */
Test(pools, a_slow_acceptor_is_still_flagged_when_the_tail_is_its)
{
	for (uint32_t i = 0; i < 200; i++) {
		clock_ns += 1 * MS;
		uint64_t established = clock_ns, accepted = clock_ns + (i % 4 == 3 ? 20 * MS : 100 * US);
		FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tgid = 100, .tid = ACCEPTOR,
								     .established_ns = established, .enter_ns = accepted - 10 * US,
								     .ts_ns = accepted, .backlog = 3, .backlog_limit = 16 },
						SK(i), 0x7f000001, (uint16_t)(30000 + i)));
		feed_request(engine, (struct request_spec){
			.sk = SK(i), .port = PORT, .index = 0, .start_ns = established + 10 * US,
			.first_read_ns = accepted + 20 * US, .first_send_ns = accepted + 120 * US,
			.last_send_ns = accepted + 120 * US, .drain_end_ns = accepted + 120 * US, .reader_tid = 7 });
	}
	struct cs_tail tail;
	cs_compute_tail(engine, 99.0, &tail);
	cr_assert_eq(tail.causes[0].cause, CS_CAUSE_ACCEPT_QUEUE);
	cr_assert_not(cs_accept_path_negligible(engine, &meta));
	struct cs_conditions cond;
	cs_compute_conditions(engine, &meta, &cond);
	cr_assert(cond.accept_contention.flagged);
	cr_assert(cond.accept_contention.acceptor_bottleneck);
	cr_assert_not(cond.pool_saturation.flagged);
}

/* Thread per connection: nobody polls, each thread reads its connection blocking. */
Test(pools, a_blocking_reader_is_a_worker_and_a_trace_without_polls_names_no_reader)
{
	feed_request(engine, (struct request_spec){ .sk = SK(1), .port = PORT, .index = 1, .start_ns = T0,
						    .first_read_ns = T0 + 10 * US, .first_send_ns = T0 + MS,
						    .last_send_ns = T0 + MS, .reader_tid = 31 });
	feed_request(engine, (struct request_spec){ .sk = SK(2), .port = PORT, .index = 1, .start_ns = T0,
						    .first_read_ns = T0 + 10 * US, .first_send_ns = T0 + MS,
						    .last_send_ns = T0 + MS, .reader_tid = 32 });
	/* Before the epoll path's records (a version 1 trace): no role from reads alone. */
	const struct cs_thread_stats *t31 = cs_u64map_get(&engine->threads, 31);
	cr_assert_not_null(t31);
	cr_assert_eq(cs_thread_roles(t31), 0);
	FEED_OK(engine, make_thread_polls(T0 + SEC, 31, 0, 0, 0, 0, 1));
	cr_assert_eq(cs_thread_roles(t31), CS_ROLE_WORKER);
	char names[64];
	cs_format_roles(names, sizeof(names), CS_ROLE_ACCEPTOR | CS_ROLE_EVENT_LOOP | CS_ROLE_WORKER);
	cr_assert_str_eq(names, "acceptor,event_loop,worker");
}

/*
 * Netty with an executor group: 2 loops (21, 22) read every request and
 * park it; 2 executor threads (41, 42) run the handlers and hand the answers
 * back, each channel bound to one executor. A request a millisecond, 300 us
 * of work; four times a handler blocks its executor 40 ms, and the requests
 * bound to it queue behind. The wait is the pool's, the executors are its
 * threads, a loop is named as the thread that handed the requests on.
 */
Test(pools, an_executor_group_s_wait_is_pool_saturation)
{
	static struct pool_job jobs[1000];
	for (uint32_t i = 0; i < 1000; i++)
		jobs[i] = (struct pool_job){ .arrive_ns = clock_ns + i * MS + 50 * US,
					     .service_ns = i % 250 == 1 ? 40 * MS : 300 * US,
					     .bound_thread = (int)(i % 2) };
	pool_simulate(jobs, 1000, 2);
	for (uint32_t i = 0; i < 1000; i++) {
		const struct pool_job *j = &jobs[i];
		uint64_t sk = SK(2000 + j->order % 32), start = j->arrive_ns - 50 * US;
		FEED_OK(engine, make_handback(sk, start, j->start_ns, j->end_ns, 41 + j->thread));
		feed_request(engine, (struct request_spec){
			.sk = sk, .port = PORT, .index = 1 + j->order / 32, .start_ns = start,
			.first_read_ns = j->arrive_ns, .first_send_ns = j->end_ns + 20 * US,
			.last_send_ns = j->end_ns + 20 * US, .reader_tid = 21 + j->order % 2, .flags = CS_REQ_PARKED });
	}
	clock_ns += 1000 * MS;
	FEED_OK(engine, make_thread_polls(clock_ns, 21, 600, 500, 0, 0, 0));
	FEED_OK(engine, make_thread_polls(clock_ns, 22, 600, 500, 0, 0, 0));
	struct cs_tail tail;
	cs_compute_tail(engine, 99.0, &tail);
	cr_assert_eq(tail.causes[0].cause, CS_CAUSE_WORKER_POOL, "leads: %s", cs_cause_names[tail.causes[0].cause]);
	cr_assert_gt(cause_share(&tail, CS_CAUSE_WORKER_POOL), 0.5, "%f", cause_share(&tail, CS_CAUSE_WORKER_POOL));
	struct cs_conditions cond;
	cs_compute_conditions(engine, &meta, &cond);
	cr_assert(cond.pool_saturation.flagged);
	cr_assert_gt(cond.pool_saturation.busy_while_waiting_share, 0.99, "%f",
		     cond.pool_saturation.busy_while_waiting_share);
	cr_assert_eq(cond.pool_saturation.pool_threads, 2, "the 2 executors, not the loops");
	cr_assert(cond.pool_saturation.poller_tid == 21 || cond.pool_saturation.poller_tid == 22);
	const struct cs_thread_stats *loop = cs_u64map_get(&engine->threads, 21);
	const struct cs_thread_stats *executor = cs_u64map_get(&engine->threads, 41);
	cr_assert_eq(cs_thread_roles(loop), CS_ROLE_EVENT_LOOP);
	cr_assert_eq(cs_thread_roles(executor), CS_ROLE_WORKER);
}

/* Thread.print as JDK 17 writes it (nid in hex), a JDK 19+ line (decimal), VM threads. */
static const char thread_print[] =
	"2026-12-01 12:00:00\nFull thread dump OpenJDK 64-Bit Server VM (17.0.13+11-Debian-2deb12u1 mixed mode):\n\n"
	"\"http-nio-8080-Acceptor\" #31 daemon prio=5 os_prio=0 cpu=1.20ms elapsed=9.10s tid=0x00007f00 nid=0x2 runnable  [0x7f]\n"
	"   java.lang.Thread.State: RUNNABLE\n\tat sun.nio.ch.Net.accept(java.base@17/Native Method)\n\n"
	"\"http-nio-8080-Poller\" #30 daemon prio=5 os_prio=0 cpu=9.01ms elapsed=9.10s tid=0x00007f01 nid=0x3 runnable\n"
	"\"http-nio-8080-exec-1\" #20 daemon prio=5 os_prio=0 cpu=50ms elapsed=9.2s tid=0x00007f02 nid=0xb waiting on condition\n"
	"\"http-nio-8080-exec-2\" #21 daemon prio=5 os_prio=0 cpu=50ms elapsed=9.2s tid=0x00007f03 nid=0xc waiting\n"
	"\"say \"hi\" exec-3\" #22 daemon prio=5 os_prio=0 cpu=50ms elapsed=9.2s tid=0x00007f04 nid=13 waiting\n"
	"\"VM Thread\" os_prio=0 cpu=5.00ms elapsed=9.50s tid=0x00007f05 nid=0x0 runnable\n"
	"\"GC Thread#0\" os_prio=0 cpu=1.00ms elapsed=9.50s tid=0x00007f06 nid=0x63 runnable\n"
	"JNI global refs: 15, weak refs: 0\n";

static int feed_name(void *ctx, const void *record, size_t len)
{
	(void)ctx;
	cs_engine_feed(engine, record, len);
	return 0;
}

struct names_seen {
	uint32_t tids[16];
	char names[16][CS_RUNTIME_NAME_LEN];
	size_t count;
};

static void keep_name(void *ctx, uint32_t tid, const char *name)
{
	struct names_seen *seen = ctx;
	cr_assert_lt(seen->count, 16);
	seen->tids[seen->count] = tid;
	snprintf(seen->names[seen->count++], CS_RUNTIME_NAME_LEN, "%s", name);
}

/* The JSON threads[] member name of thread tid, NULL when null or absent. */
static const char *java_name_of(const struct json *threads, uint32_t tid)
{
	for (size_t i = 0; i < length(threads); i++) {
		const struct json *t = element(threads, i);
		if (number(t, "tid") != tid)
			continue;
		for (const struct json *m = t->child; m; m = m->next)
			if (!strcmp(m->key, "java_name"))
				return m->type == J_STRING ? m->string : NULL;
		cr_assert_fail("thread %u has no java_name", tid);
	}
	return NULL;
}

Test(pools, a_jvm_s_thread_names_are_shown_beside_the_tids)
{
	/* The same pid namespace as this process: a nid is the tid. */
	struct names_seen seen = { .count = 0 };
	cr_assert_eq(cs_jvm_parse_threads(thread_print, getpid(), keep_name, &seen), 6);
	cr_assert_eq(seen.tids[0], ACCEPTOR);
	cr_assert_str_eq(seen.names[0], "http-nio-8080-Acceptor");
	cr_assert_eq(seen.tids[4], 13);
	cr_assert_str_eq(seen.names[4], "say \"hi\" exec-3", "a name holding quotes ends at the last one");
	cr_assert_eq(seen.tids[5], 99);

	tomcat_population();
	for (size_t i = 0; i < seen.count; i++) {
		struct cs_ev_thread_name ev = {
			.hdr = { .ts_ns = clock_ns, .type = CS_EV_THREAD_NAME, .size = sizeof(ev) },
			.tid = seen.tids[i], .tgid = 100,
		};
		memcpy(ev.name, seen.names[i], sizeof(ev.name));
		feed_name(NULL, &ev, sizeof(ev));
	}
	char *text = render(true);
	struct json *root = json_parse(text);
	const struct json *threads = member(root, "threads", J_ARRAY);
	cr_assert_str_eq(java_name_of(threads, ACCEPTOR), "http-nio-8080-Acceptor");
	cr_assert_str_eq(java_name_of(threads, POLLER), "http-nio-8080-Poller");
	cr_assert_str_eq(java_name_of(threads, POOL_FIRST), "http-nio-8080-exec-1");
	cr_assert_null(java_name_of(threads, POOL_FIRST + 3), "a thread the JVM did not name has none");
	json_free(root);
	free(text);
	text = render(false);
	cr_assert(strstr(text, "http-nio-8080-Poller"), "%s", text);
	free(text);
}
