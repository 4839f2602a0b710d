// SPDX-License-Identifier: BSD-2-Clause
/*
 * A JVM's pauses as the analysis names them: runtime_pause leads a tail
 * made of requests that arrived while the JVM was stopped, the condition
 * runtime_pauses says how many and what they were, and a pool that was
 * idle while its requests waited is not saturated.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "engine.h"
#include "events.h"
#include "figures_check.h"
#include "json_check.h"
#include "report.h"
#include "report_render.h"
#include "words.h"

#define PORT 8080
#define JVM 100
#define T0 (100 * SEC)
#define SK(n) (0xffff888500000000ull + (n))
#define POLLER 3
#define POOL_FIRST 11
#define POOL_THREADS 4
#define REQUESTS 2000
#define EVERY_NS (5 * MS)        /* a request every 5 ms: 10 s */
#define PAUSE_EVERY (140)        /* a full collection every 700 ms... */
#define PAUSE_NS (60 * MS)       /* ...of 60 ms */

static struct cs_engine *engine;
static struct cs_report_meta meta;

static void setup(void)
{
	engine = cs_engine_new();
	cr_assert_not_null(engine);
	meta = (struct cs_report_meta){ .target = "pid 100 (java)", .duration_s = 10.0 };
}

static void teardown(void)
{
	cs_engine_free(engine);
}

TestSuite(runtime_pauses, .init = setup, .fini = teardown);

/*
 * The JDK's HttpServer: a dispatcher polls and hands each request to one
 * of 4 pool threads, which serve it in 200 us. Every 700 ms the JVM stops
 * for 60 ms (a full collection), and every 2.1 s for 1 ms (a thread dump):
 * the requests that came meanwhile are read when it lets them go.
 */
static void paused_pool(void)
{
	uint64_t pause_end = 0, gcs = 0, dumps = 0;
	for (uint32_t i = 0; i < REQUESTS; i++) {
		uint64_t start = T0 + i * EVERY_NS;
		if (i % PAUSE_EVERY == 0) {
			bool dump = i % (3 * PAUSE_EVERY) == PAUSE_EVERY;
			uint64_t length = dump ? 1 * MS : PAUSE_NS;
			FEED_OK(engine, make_pause(JVM, start, start + length, dump ? "ThreadDump" : "GenCollectFull",
						   dump ? 0 : CS_PAUSE_GC | CS_PAUSE_GC_FULL));
			pause_end = start + length;
			gcs += !dump;
			dumps += dump;
		}
		uint64_t read = (start < pause_end ? pause_end : start) + 20 * US;
		feed_request(engine, (struct request_spec){
			.sk = SK(i % 16), .port = PORT, .index = 1 + i / 16, .tgid = JVM, .start_ns = start,
			.first_read_ns = read, .first_send_ns = read + 200 * US, .last_send_ns = read + 200 * US,
			.drain_end_ns = read + 200 * US, .reader_tid = POOL_FIRST + i % POOL_THREADS,
			.flags = CS_REQ_HANDED_OFF });
	}
	cr_assert_eq(gcs + dumps, (REQUESTS + PAUSE_EVERY - 1) / PAUSE_EVERY);
	uint64_t end = T0 + REQUESTS * EVERY_NS;
	FEED_OK(engine, make_thread_polls(end, POLLER, REQUESTS, 0, 0, REQUESTS, 0));
	for (uint32_t t = 0; t < POOL_THREADS; t++)
		FEED_OK(engine, make_thread_polls(end, POOL_FIRST + t, 0, 0, REQUESTS / POOL_THREADS, 0, 0));
	FEED_OK(engine, make_thread_sample(end, POLLER, "HTTP-Dispatch", 0, 0, 0));
}

Test(runtime_pauses, the_tail_is_the_pauses_and_the_idle_pool_is_not_saturated)
{
	paused_pool();
	struct cs_analysis *analysis = malloc(sizeof(*analysis));
	cr_assert_not_null(analysis);
	cs_analyze(engine, &meta, analysis);
	const struct cs_tail *tail = &analysis->tail;
	cr_assert_eq(tail->causes[0].cause, CS_CAUSE_RUNTIME_PAUSE, "leads: %s", cs_cause_names[tail->causes[0].cause]);
	cr_assert_gt(tail->causes[0].share, 0.9);
	/* The figures, then the words. */
	cr_assert_eq(figure_ns(&tail->causes[0].evidence, "pause_max"), PAUSE_NS);
	cr_assert_str_eq(figure_of(&tail->causes[0].evidence, "gc_operation", CS_FIG_NAME)->name, "GenCollectFull");
	char evidence[CS_SENTENCE_LEN];
	cs_cause_evidence(evidence, sizeof(evidence), &tail->causes[0]);
	cr_assert(strstr(evidence, "collection(s) (GenCollectFull)"), "%s", evidence);
	cr_assert(strstr(evidence, "max 60.0 ms"), "%s", evidence);

	const struct cs_pauses_condition *p = &analysis->conditions.runtime_pauses;
	cr_assert(p->flagged);
	cr_assert_eq(p->pauses, 15);
	cr_assert_eq(p->gc_pauses, 10);
	cr_assert_eq(p->other_pauses, 5);
	cr_assert_str_eq(p->top_gc_op, "GenCollectFull");
	cr_assert_str_eq(p->top_other_op, "ThreadDump");
	cr_assert_eq(p->top_other_op_pauses, 5);
	cr_assert_eq(p->max_ns, PAUSE_NS);
	cr_assert_eq(p->p50_ns, PAUSE_NS);
	cr_assert_eq(p->tail_pauses, 10, "the thread dumps delayed no tail request");
	cr_assert_float_eq(p->stopped_share, (10 * 60.0 + 5) / 10000.0, 1e-6);
	cr_assert(p->named);

	/* 2000 x 200 us over 4 threads and 10 s: busy 1 %, and the waits were the pauses'. */
	const struct cs_pool_condition *pool = &analysis->conditions.pool_saturation;
	cr_assert_not(pool->flagged, "pool_saturation flagged for a pool %.1f%% busy", 100 * pool->busy_share);
	cr_assert_lt(pool->tail_share, 0.2);
	free(analysis);
}

Test(runtime_pauses, a_pool_that_waited_on_pauses_says_so)
{
	/* Pauses too short to lead the tail, but a fifth of it: the wait is named, not the pool. */
	paused_pool();
	struct cs_conditions cond;
	cs_compute_conditions(engine, &meta, &cond);
	cr_assert(cond.runtime_pauses.flagged);
	cr_assert(cond.pool_saturation.wait_cause == CS_POOL_WAIT_NONE ||
		  cond.pool_saturation.wait_cause == CS_POOL_WAIT_RUNTIME_PAUSE);
	cr_assert_not(cond.pool_saturation.flagged);
}

static char *render(bool json)
{
	return render_report(engine, &meta, json);
}

Test(runtime_pauses, the_reports_name_the_condition_and_list_the_pauses)
{
	paused_pool();
	char *text = render(false);
	cr_assert(strstr(text, "! runtime_pauses: the JVM stopped the server's threads 15 time(s)"), "%s", text);
	cr_assert(strstr(text, "-Xlog:safepoint"), "%s", text);
	cr_assert(strstr(text, "runtime_pause "), "%s", text);
	free(text);

	char *buf = render(true);
	struct json *root = json_parse(buf);
	const struct json *p = member(member(root, "conditions", J_OBJECT), "runtime_pauses", J_OBJECT);
	cr_assert_eq(number(p, "pauses"), 15);
	cr_assert_eq(number(p, "gc_pauses"), 10);
	cr_assert_str_eq(member(p, "other_operation", J_STRING)->string, "ThreadDump");
	cr_assert_float_eq(number(p, "time_to_safepoint_max_us"), 50.0, 1e-9);
	const struct json *list = member(root, "pauses", J_ARRAY);
	cr_assert_eq(length(list), 15);
	const struct json *first = element(list, 0);
	cr_assert_eq(number(first, "begin_ns"), (double)T0);
	cr_assert_float_eq(number(first, "pause_us"), 60000.0, 1e-9);
	cr_assert_str_eq(member(first, "operation", J_STRING)->string, "GenCollectFull");
	cr_assert(number(first, "requests") >= 12, "a 60 ms pause with a request every 5 ms");
	json_free(root);
	free(buf);
}

/* Without HotSpot's USDT probes (the uprobes): pauses, neither collections nor other operations. */
Test(runtime_pauses, pauses_from_the_uprobes_are_not_told_apart)
{
	for (uint64_t i = 0; i < 10; i++)
		FEED_OK(engine, make_pause(JVM, T0 + i * SEC, T0 + i * SEC + 30 * MS, "", CS_PAUSE_UPROBE));
	struct cs_conditions cond;
	cs_compute_conditions(engine, &meta, &cond);
	const struct cs_pauses_condition *p = &cond.runtime_pauses;
	cr_assert_eq(p->pauses, 10);
	cr_assert_eq(p->gc_pauses, 0);
	cr_assert_eq(p->other_pauses, 0);
	cr_assert_not(p->named);
	cr_assert_float_eq(p->stopped_share, 0.03, 1e-9);
	cr_assert_not(p->flagged, "3 % of the run stopped, no tail");
	char *text = render(false);
	cr_assert_null(strstr(text, "runtime_pauses:"), "%s", text);
	free(text);
}

/* The VM thread's waits for a CPU in the pauses: figures where the probes told them, null where not. */
Test(runtime_pauses, the_vm_thread_s_waits_for_a_cpu_are_shown_where_told)
{
	struct cs_ev_runtime_pause told = make_pause(JVM, T0, T0 + 40 * MS, "G1CollectForAllocation", CS_PAUSE_GC | CS_PAUSE_RUNQ);
	told.vm_runq_ns = 10 * MS;
	told.gc_runq_ns = 8 * MS;
	FEED_OK(engine, told);
	FEED_OK(engine, make_pause(JVM, T0 + 1 * SEC, T0 + 1 * SEC + 10 * MS, "ThreadDump", 0));
	char *buf = render(true);
	struct json *root = json_parse(buf);
	const struct json *p = member(member(root, "conditions", J_OBJECT), "runtime_pauses", J_OBJECT);
	cr_assert_float_eq(number(p, "vm_cpu_wait_us"), 10000.0, 1e-9);
	cr_assert_float_eq(number(p, "vm_cpu_wait_share"), 0.25, 1e-9, "of the 40 ms pause whose waits were told");
	const struct json *list = member(root, "pauses", J_ARRAY);
	cr_assert_float_eq(number(element(list, 0), "vm_cpu_wait_us"), 10000.0, 1e-9);
	cr_assert_float_eq(number(element(list, 0), "gc_cpu_wait_us"), 8000.0, 1e-9);
	member(element(list, 1), "vm_cpu_wait_us", J_NULL);
	member(element(list, 1), "gc_cpu_wait_us", J_NULL);
	json_free(root);
	free(buf);
}

Test(runtime_pauses, waits_for_a_cpu_are_not_known_from_an_older_trace)
{
	FEED_OK(engine, make_pause(JVM, T0, T0 + 40 * MS, "GenCollectFull", CS_PAUSE_GC | CS_PAUSE_GC_FULL));
	char *buf = render(true);
	struct json *root = json_parse(buf);
	const struct json *p = member(member(root, "conditions", J_OBJECT), "runtime_pauses", J_OBJECT);
	member(p, "vm_cpu_wait_us", J_NULL);
	member(p, "vm_cpu_wait_share", J_NULL);
	json_free(root);
	free(buf);
}
