// SPDX-License-Identifier: BSD-2-Clause
/*
 * Virtual threads: the JVM's carriers (ForkJoinPool-N-worker-M, by the
 * names the JVM gives at the end of a run) get the role carrier, and a
 * tail that waited for them says virtual threads, names the carrier and
 * gives Loom's advice.
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
#include "words.h"

#define PORT 8080
#define JVM 100
#define T0 (100 * SEC)
#define SK(n) (0xffff888600000000ull + (n))
#define DISPATCHER 3
#define CARRIER 11

static struct cs_engine *engine;
static struct cs_report_meta meta;

static void setup(void)
{
	engine = cs_engine_new();
	cr_assert_not_null(engine);
	meta = (struct cs_report_meta){ .target = "pid 100 (java)", .duration_s = 5.0 };
}

static void teardown(void)
{
	cs_engine_free(engine);
}

TestSuite(carriers, .init = setup, .fini = teardown);

static void name_thread(uint32_t tid, const char *name)
{
	struct cs_ev_thread_name ev = {
		.hdr = { .ts_ns = T0 + 10 * SEC, .type = CS_EV_THREAD_NAME, .size = sizeof(ev) },
		.tid = tid,
		.tgid = JVM,
	};
	snprintf(ev.name, sizeof(ev.name), "%s", name);
	FEED_OK(engine, ev);
}

/*
 * The JDK's HttpServer on virtual threads with one carrier: its dispatcher
 * hands each request to a virtual thread; one request in 50 spins 40 ms on
 * the carrier, and the requests behind it wait for the carrier.
 */
/*
 * Handlers as the probes measured them (CS_REQ_HANDLER_CPU): how long the
 * short and the long ones took, and whether each kind ran on the CPU or
 * blocked off it (a FIFO's read, pinning the carrier).
 */
struct carrier_load {
	uint64_t short_ns, long_ns;
	bool short_blocks, long_blocks, measured;
};

static void carrier_requests(const char *carrier_name, struct carrier_load load)
{
	uint64_t busy_until = 0;
	for (uint32_t i = 0; i < 1000; i++) {
		uint64_t start = T0 + i * 5 * MS;
		uint64_t read = (start < busy_until ? busy_until : start) + 20 * US;
		bool long_one = i % 50 == 49;
		uint64_t handler = long_one ? load.long_ns : load.short_ns;
		bool blocks = long_one ? load.long_blocks : load.short_blocks;
		busy_until = read + handler;
		feed_request(engine, (struct request_spec){
			.sk = SK(i % 16), .port = PORT, .index = 1 + i / 16, .tgid = JVM, .start_ns = start,
			.first_read_ns = read, .first_send_ns = read + handler, .last_send_ns = read + handler,
			.drain_end_ns = read + handler, .reader_tid = CARRIER,
			.handler_cpu_ns = blocks ? 0 : handler,
			.flags = CS_REQ_HANDED_OFF | (load.measured ? CS_REQ_HANDLER_CPU : 0) });
	}
	FEED_OK(engine, make_thread_polls(T0 + 5 * SEC, DISPATCHER, 1000, 0, 0, 1000, 0));
	FEED_OK(engine, make_thread_polls(T0 + 5 * SEC, CARRIER, 0, 0, 1000, 0, 0));
	name_thread(DISPATCHER, "HTTP-Dispatcher");
	name_thread(CARRIER, carrier_name);
}

/* The handlers' CPU time not measured (an older trace): one in 50 spins 40 ms. */
static void one_carrier(const char *carrier_name)
{
	carrier_requests(carrier_name, (struct carrier_load){ .short_ns = 100 * US, .long_ns = 40 * MS });
}

static const struct cs_tail_cause *carrier_wait(void)
{
	static struct cs_tail tail;
	cs_compute_tail(engine, 90.0, &tail);
	for (int i = 0; i < CS_CAUSE_COUNT; i++)
		if (tail.causes[i].cause == CS_CAUSE_WORKER_POOL)
			return &tail.causes[i];
	return NULL;
}

Test(carriers, a_carrier_is_named_so_and_the_wait_for_it_gets_loom_s_words)
{
	one_carrier("ForkJoinPool-1-worker-1");
	const struct cs_thread_stats *t = cs_u64map_get(&engine->threads, CARRIER);
	cr_assert_not_null(t);
	cr_assert(cs_thread_is_carrier(t));
	cr_assert_eq(cs_thread_roles(t), CS_ROLE_CARRIER);

	/* At p90 the tail holds the requests that waited behind a spinning one, beside the 20 that spun. */
	struct cs_tail tail;
	cs_compute_tail(engine, 90.0, &tail);
	const struct cs_tail_cause *pool = NULL;
	for (int i = 0; i < CS_CAUSE_COUNT; i++)
		if (tail.causes[i].cause == CS_CAUSE_WORKER_POOL)
			pool = &tail.causes[i];
	cr_assert_not_null(pool);
	cr_assert_gt(pool->share, 0.3, "worker_pool %.3f of the tail", pool->share);
	/* The figures, then the words. */
	cr_assert_eq(figure_count(&pool->evidence, "carriers"), 1);
	cr_assert_eq(figure_count(&pool->evidence, "carrier_tid"), CARRIER);
	cr_assert_str_eq(figure_of(&pool->evidence, "carrier_name", CS_FIG_NAME)->name, "ForkJoinPool-1-worker-1");
	char words[CS_SENTENCE_LEN];
	cs_cause_evidence(words, sizeof(words), pool);
	cr_assert(strstr(words, "virtual threads waited"), "%s", words);
	cr_assert(strstr(words, "1 carrier(s) (ForkJoinPool-1-worker-1, tid 11)"), "%s", words);
	cr_assert(strstr(words, "jdk.virtualThreadScheduler.parallelism"), "%s", words);

	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	cs_report_json(out, engine, &meta);
	fclose(out);
	struct json *root = json_parse(buf);
	const struct json *threads = member(root, "threads", J_ARRAY);
	bool found = false;
	for (size_t i = 0; i < length(threads); i++) {
		const struct json *th = element(threads, i);
		if (number(th, "tid") != CARRIER)
			continue;
		const struct json *roles = member(th, "roles", J_ARRAY);
		cr_assert_eq(length(roles), 1);
		cr_assert_str_eq(element(roles, 0)->string, "carrier");
		found = true;
	}
	cr_assert(found);
	json_free(root);
	free(buf);
}

Test(carriers, other_pool_threads_are_no_carriers)
{
	one_carrier("pool-1-thread-1");
	const struct cs_thread_stats *t = cs_u64map_get(&engine->threads, CARRIER);
	cr_assert_not(cs_thread_is_carrier(t));
	cr_assert_eq(cs_thread_roles(t), CS_ROLE_WORKER);
	struct cs_tail tail;
	cs_compute_tail(engine, 99.0, &tail);
	for (int i = 0; i < CS_CAUSE_COUNT; i++) {
		char words[CS_SENTENCE_LEN];
		cs_cause_evidence(words, sizeof(words), &tail.causes[i]);
		cr_assert_null(cs_figures_get(&tail.causes[i].evidence, "virtual_threads"), "%s", words);
		cr_assert_null(strstr(words, "virtual threads"), "%s", words);
	}
	/* ...nor a ForkJoinPool's thread that served nothing, nor a name that only begins so. */
	struct cs_thread_stats idle = { .tid = 99 };
	snprintf(idle.runtime_name, sizeof(idle.runtime_name), "ForkJoinPool-1-worker-2");
	cr_assert_not(cs_thread_is_carrier(&idle));
	struct cs_thread_stats other = { .tid = 98, .requests = 5 };
	snprintf(other.runtime_name, sizeof(other.runtime_name), "ForkJoinPool-1-worker-2-extra");
	cr_assert_not(cs_thread_is_carrier(&other));
}

/*
 * A carrier blocked in its handlers (file I/O on a FIFO, holding its
 * virtual thread) is pinned: its CPU time is a fraction of its serving.
 */
Test(carriers, a_carrier_blocked_while_it_served_is_pinned)
{
	one_carrier("ForkJoinPool-1-worker-1");
	struct cs_ev_thread_cpu cpu = {
		.hdr = { .ts_ns = T0 + 5 * SEC, .type = CS_EV_THREAD_CPU, .size = sizeof(cpu) },
		.tid = CARRIER,
		.tgid = JVM,
		.cpu_ns = 50 * MS, /* of the 20 x 40 ms + 980 x 100 us = 898 ms it served */
	};
	FEED_OK(engine, cpu);
	struct cs_tail tail;
	cs_compute_tail(engine, 90.0, &tail);
	const struct cs_tail_cause *pool = NULL;
	for (int i = 0; i < CS_CAUSE_COUNT; i++)
		if (tail.causes[i].cause == CS_CAUSE_WORKER_POOL)
			pool = &tail.causes[i];
	cr_assert_not_null(pool);
	cr_assert_eq(figure_of(&pool->evidence, "pinned", CS_FIG_FLAG)->count, 1);
	cr_assert_eq(figure_ns(&pool->evidence, "carrier_blocked"), 848 * MS);
	char evidence[CS_SENTENCE_LEN];
	cs_cause_evidence(evidence, sizeof(evidence), pool);
	cr_assert(strstr(evidence, "pinned: the carrier was blocked off its CPU 848 ms of the 898 ms it served"), "%s",
		  evidence);
	cr_assert(strstr(evidence, "jdk.virtualThreadScheduler.maxPoolSize"), "%s", evidence);
}

/*
 * On a loaded machine the short handlers take long too: here 980 of 1 ms
 * on the CPU outweigh, in sum, the 20 of 40 ms that blocked. The virtual
 * threads waited behind the long holds: pinned, each handler counted by
 * its length.
 */
Test(carriers, a_carrier_blocked_in_its_long_handlers_is_pinned_though_short_ones_ran_longer)
{
	carrier_requests("ForkJoinPool-1-worker-1", (struct carrier_load){ .short_ns = 1 * MS, .long_ns = 40 * MS,
									  .long_blocks = true, .measured = true });
	const struct cs_tail_cause *pool = carrier_wait();
	cr_assert_not_null(pool);
	cr_assert_eq(figure_of(&pool->evidence, "pinned", CS_FIG_FLAG)->count, 1);
	cr_assert_eq(figure_ns(&pool->evidence, "carrier_blocked"), 800 * MS);
	cr_assert_eq(figure_ns(&pool->evidence, "carrier_served"), 1780 * MS);
	char evidence[CS_SENTENCE_LEN];
	cs_cause_evidence(evidence, sizeof(evidence), pool);
	cr_assert(strstr(evidence, "pinned: the carrier was blocked off its CPU 800 ms of the 1.78 s it served (97% "
				   "counting each handler by its length)"),
		  "%s", evidence);
}

/* Long handlers that spin and short ones that block (1 ms of I/O each): not pinned, though blocked longer in sum. */
Test(carriers, short_blocking_handlers_do_not_make_a_spinning_carrier_pinned)
{
	carrier_requests("ForkJoinPool-1-worker-1", (struct carrier_load){ .short_ns = 1 * MS, .long_ns = 40 * MS,
									  .short_blocks = true, .measured = true });
	const struct cs_tail_cause *pool = carrier_wait();
	cr_assert_not_null(pool);
	cr_assert_eq(figure_of(&pool->evidence, "pinned", CS_FIG_FLAG)->count, 0);
	char evidence[CS_SENTENCE_LEN];
	cs_cause_evidence(evidence, sizeof(evidence), pool);
	cr_assert(strstr(evidence, "its handlers on the CPU 97% of their time counting each by its length: a virtual "
				   "thread that runs on the CPU is not preempted"),
		  "%s", evidence);
	cr_assert_null(strstr(evidence, "pinned"), "%s", evidence);
}
