// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of the flamegraph join's pools (daemon/flame/flame_join.c): a
 * request that waited for a pool (worker_pool; accept_queue in an accept
 * pool) has that time filled with what the pool's threads did while they
 * served others, shared among those serving at each instant; and of what
 * the collector keeps for it (daemon/flame/flame_collect.c). The
 * invariant under every test: a request's weights add up to its time.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "events.h"
#include "flame_collect.h"
#include "flame_emitted.h"
#include "flame_join.h"

#define PERIOD (10 * MS) /* one sample at 100 Hz */
#define TGID 100
#define PORT 8080


/* Weight emitted for (cause, pool, phase, stack). */
static uint64_t weight_of(const struct emitted *e, enum cs_cause cause, bool pool, enum cs_flame_phase phase,
			  uint32_t stack)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < e->count; i++)
		if (e->paths[i].cause == cause && e->paths[i].pool == pool && e->paths[i].phase == phase &&
		    e->paths[i].stack == stack)
			sum += e->weights[i];
	return sum;
}

/* A request whose whole time is a wait of cause over [from, to), answered at once. */
static struct cs_flame_request waited(enum cs_cause cause, uint64_t from, uint64_t to)
{
	struct cs_flame_request r = {
		.pickup_ns = to, .first_read_ns = to, .first_send_ns = to, .drain_end_ns = to,
		.reader_tid = 1, .sender_tid = 1, .tgid = TGID, .port = PORT,
	};
	if (cause == CS_CAUSE_WORKER_POOL)
		r.pool_from_ns = from, r.pool_to_ns = to;
	else
		r.accept_from_ns = from, r.accept_to_ns = to;
	r.split.cause_ns[cause] = to - from;
	r.split.total_ns = to - from;
	return r;
}

struct pool_input {
	struct cs_flame_sample *samples;
	size_t sample_count;
	struct cs_flame_off_cpu *off_cpu;
	size_t off_cpu_count;
	struct cs_flame_serving *serving;
	size_t serving_count;
	struct cs_flame_pool_thread *threads;
	size_t thread_count;
};

static void join(struct cs_flame_request *requests, size_t n, const struct pool_input *p, struct emitted *e,
		 struct cs_flame_stats *stats)
{
	struct cs_flame_input input = {
		.requests = requests, .request_count = n,
		.samples = p->samples, .sample_count = p->sample_count,
		.off_cpu = p->off_cpu, .off_cpu_count = p->off_cpu_count,
		.serving = p->serving, .serving_count = p->serving_count,
		.pool_threads = p->threads, .pool_thread_count = p->thread_count,
		.sample_period_ns = PERIOD,
	};
	memset(e, 0, sizeof(*e));
	cr_assert_eq(cs_flame_join(&input, record_path, e, stats), 0);
}

#define N(array) (sizeof(array) / sizeof((array)[0]))

/* Blocked over [from, to) in stack: an off-CPU interval woken at its end. */
#define BLOCKED(t, from, to, s) { .off_ns = (from), .wake_ns = (to), .on_ns = (to), .tid = (t), .stack = (s) }

/* The Tomcat case: a request waits 50 ms for one of two workers, both sleeping in handlers. */
Test(flame_pool, a_worker_pool_wait_is_the_serving_threads_stacks_shared_by_time)
{
	struct cs_flame_request r = waited(CS_CAUSE_WORKER_POOL, 100 * MS, 150 * MS);
	struct cs_flame_pool_thread threads[] = {
		{ CS_CAUSE_WORKER_POOL, TGID, 21 }, { CS_CAUSE_WORKER_POOL, TGID, 22 },
		{ CS_CAUSE_WORKER_POOL, 200, 23 },  /* another process's pool */
	};
	struct cs_flame_serving serving[] = {
		{ .from_ns = 90 * MS, .to_ns = 160 * MS, .tid = 21 },
		{ .from_ns = 100 * MS, .to_ns = 125 * MS, .tid = 22 },
		{ .from_ns = 100 * MS, .to_ns = 150 * MS, .tid = 23 },
		{ .from_ns = 100 * MS, .to_ns = 150 * MS, .tid = 24 }, /* no pool thread */
	};
	struct cs_flame_off_cpu off[] = {
		BLOCKED(21, 95 * MS, 155 * MS, 5),   /* the handler's sleep */
		BLOCKED(22, 100 * MS, 125 * MS, 6),  /* another handler's sleep */
		BLOCKED(22, 125 * MS, 200 * MS, 7),  /* idle, waiting for work: not serving */
		BLOCKED(23, 100 * MS, 150 * MS, 8),
		BLOCKED(24, 100 * MS, 150 * MS, 9),
	};
	struct pool_input p = { .off_cpu = off, .off_cpu_count = N(off), .serving = serving,
				.serving_count = N(serving), .threads = threads, .thread_count = N(threads) };
	struct emitted e;
	struct cs_flame_stats stats;
	join(&r, 1, &p, &e, &stats);

	/* 100-125 ms: two threads serving, half each; 125-150 ms: thread 21 alone. */
	cr_assert_eq(weight_of(&e, CS_CAUSE_WORKER_POOL, true, CS_FLAME_OFF_CPU, 5), 25 * MS / 2 + 25 * MS);
	cr_assert_eq(weight_of(&e, CS_CAUSE_WORKER_POOL, true, CS_FLAME_OFF_CPU, 6), 25 * MS / 2);
	for (uint32_t stack = 7; stack <= 9; stack++)
		cr_assert_eq(weight_of(&e, CS_CAUSE_WORKER_POOL, true, CS_FLAME_OFF_CPU, stack), 0, "stack %u", stack);
	cr_assert_eq(weight_of(&e, CS_CAUSE_WORKER_POOL, false, CS_FLAME_NONE, CS_FLAME_NO_STACK), 0);
	cr_assert_eq(e.total_ns, r.split.total_ns);
	cr_assert_eq(stats.pool_sampled_ns, 50 * MS);
	cr_assert_eq(stats.sampled_ns, 50 * MS);
}

Test(flame_pool, instants_with_no_pool_thread_serving_keep_the_bare_cause)
{
	/* A 50 ms window, of which the split gave worker_pool 25 ms (the run queue took the rest). */
	struct cs_flame_request r = waited(CS_CAUSE_WORKER_POOL, 100 * MS, 150 * MS);
	r.split.cause_ns[CS_CAUSE_WORKER_POOL] = 25 * MS;
	r.split.total_ns = 25 * MS;
	struct cs_flame_pool_thread threads[] = { { CS_CAUSE_WORKER_POOL, TGID, 21 } };
	struct cs_flame_serving serving[] = { { .from_ns = 100 * MS, .to_ns = 120 * MS, .tid = 21 } };
	struct cs_flame_off_cpu off[] = { BLOCKED(21, 100 * MS, 110 * MS, 5) };
	struct pool_input p = { .off_cpu = off, .off_cpu_count = N(off), .serving = serving,
				.serving_count = N(serving), .threads = threads, .thread_count = N(threads) };
	struct emitted e;
	struct cs_flame_stats stats;
	join(&r, 1, &p, &e, &stats);

	/* 20 of the window's 50 ms had a thread serving: 10 of the 25 ms, half in stack 5. */
	cr_assert_eq(weight_of(&e, CS_CAUSE_WORKER_POOL, true, CS_FLAME_OFF_CPU, 5), 5 * MS);
	cr_assert_eq(weight_of(&e, CS_CAUSE_WORKER_POOL, true, CS_FLAME_UNSAMPLED, CS_FLAME_NO_STACK), 5 * MS,
		     "serving, nothing sampled: not sampled, under the pool");
	cr_assert_eq(weight_of(&e, CS_CAUSE_WORKER_POOL, false, CS_FLAME_NONE, CS_FLAME_NO_STACK), 15 * MS,
		     "no pool thread serving: the bare cause");
	cr_assert_eq(e.total_ns, 25 * MS);
}

/* gunicorn's sync workers: a connection waits in the accept queue while its listener's workers serve. */
Test(flame_pool, an_accept_queue_wait_is_the_listener_s_accept_pool)
{
	struct cs_flame_request r[] = {
		waited(CS_CAUSE_ACCEPT_QUEUE, 0, 40 * MS),
		waited(CS_CAUSE_ACCEPT_QUEUE, 0, 40 * MS),
	};
	r[1].port = 9090; /* a listener with no accept pool: its wait stays bare */
	struct cs_flame_pool_thread threads[] = {
		{ CS_CAUSE_ACCEPT_QUEUE, PORT, 31 },
		{ CS_CAUSE_WORKER_POOL, TGID, 32 }, /* a worker pool's thread: not this wait's */
	};
	struct cs_flame_serving serving[] = {
		{ .from_ns = 0, .to_ns = 40 * MS, .tid = 31 },
		{ .from_ns = 0, .to_ns = 40 * MS, .tid = 32 },
	};
	struct cs_flame_sample samples[] = {
		{ .ts_ns = 5 * MS, .tid = 31, .stack = 8 },
		{ .ts_ns = 15 * MS, .tid = 31, .stack = 8 },
		{ .ts_ns = 15 * MS, .tid = 32, .stack = 1 },
	};
	struct cs_flame_off_cpu off[] = { BLOCKED(31, 20 * MS, 45 * MS, 9), BLOCKED(32, 0, 40 * MS, 2) };
	struct pool_input p = { .samples = samples, .sample_count = N(samples), .off_cpu = off,
				.off_cpu_count = N(off), .serving = serving, .serving_count = N(serving),
				.threads = threads, .thread_count = N(threads) };
	struct emitted e;
	struct cs_flame_stats stats;
	join(r, 1, &p, &e, &stats);
	cr_assert_eq(weight_of(&e, CS_CAUSE_ACCEPT_QUEUE, true, CS_FLAME_ON_CPU, 8), 2 * PERIOD);
	cr_assert_eq(weight_of(&e, CS_CAUSE_ACCEPT_QUEUE, true, CS_FLAME_OFF_CPU, 9), 20 * MS);
	cr_assert_eq(e.total_ns, 40 * MS);

	join(&r[1], 1, &p, &e, &stats);
	cr_assert_eq(weight_of(&e, CS_CAUSE_ACCEPT_QUEUE, false, CS_FLAME_NONE, CS_FLAME_NO_STACK), 40 * MS);
	cr_assert_eq(stats.pool_sampled_ns, 0);
}

Test(flame_pool, busy_threads_sampled_more_than_the_wait_are_scaled_down_exactly)
{
	/* 7 ms of wait, two serving threads with a 10 ms sample each: 3.5 ms each. */
	struct cs_flame_request r = waited(CS_CAUSE_WORKER_POOL, 100 * MS, 107 * MS);
	struct cs_flame_pool_thread threads[] = { { CS_CAUSE_WORKER_POOL, TGID, 21 }, { CS_CAUSE_WORKER_POOL, TGID, 22 } };
	struct cs_flame_serving serving[] = {
		{ .from_ns = 100 * MS, .to_ns = 107 * MS, .tid = 21 },
		{ .from_ns = 100 * MS, .to_ns = 107 * MS, .tid = 22 },
	};
	struct cs_flame_sample samples[] = { { .ts_ns = 101 * MS, .tid = 21, .stack = 1 },
					     { .ts_ns = 103 * MS, .tid = 22, .stack = 2 } };
	struct pool_input p = { .samples = samples, .sample_count = N(samples), .serving = serving,
				.serving_count = N(serving), .threads = threads, .thread_count = N(threads) };
	struct emitted e;
	struct cs_flame_stats stats;
	join(&r, 1, &p, &e, &stats);
	cr_assert_eq(weight_of(&e, CS_CAUSE_WORKER_POOL, true, CS_FLAME_ON_CPU, 1), 7 * MS / 2);
	cr_assert_eq(weight_of(&e, CS_CAUSE_WORKER_POOL, true, CS_FLAME_ON_CPU, 2), 7 * MS / 2);
	cr_assert_eq(e.total_ns, 7 * MS);
}

static uint64_t next_random(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* Random pools, waits and stacks: every request's causes still add up exactly. */
Test(flame_pool, every_pool_wait_adds_up_to_its_cause_time)
{
	enum { REQUESTS = 200, SAMPLES = 2000, INTERVALS = 1000, SERVING = 800, THREADS = 6 };
	static struct cs_flame_request requests[REQUESTS];
	static struct cs_flame_sample samples[SAMPLES];
	static struct cs_flame_off_cpu off[INTERVALS];
	static struct cs_flame_serving serving[SERVING];
	struct cs_flame_pool_thread threads[THREADS];
	uint64_t seed = 0x2545f4914f6cdd1dull;
	for (uint32_t t = 0; t < THREADS; t++)
		threads[t] = (struct cs_flame_pool_thread){
			t % 2 ? CS_CAUSE_WORKER_POOL : CS_CAUSE_ACCEPT_QUEUE, t % 2 ? TGID : PORT, 1 + t };
	for (size_t i = 0; i < REQUESTS; i++) {
		uint64_t from = next_random(&seed) % (10 * SEC), to = from + 1 + next_random(&seed) % (80 * MS);
		requests[i] = waited(i % 2 ? CS_CAUSE_WORKER_POOL : CS_CAUSE_ACCEPT_QUEUE, from, to);
		/* Part of the wait taken by the run queue, as the engine does. */
		uint64_t runq = (to - from) / (1 + next_random(&seed) % 4);
		requests[i].split.cause_ns[i % 2 ? CS_CAUSE_WORKER_POOL : CS_CAUSE_ACCEPT_QUEUE] -= runq;
		requests[i].split.cause_ns[CS_CAUSE_RUN_QUEUE] = runq;
	}
	for (size_t i = 0; i < SAMPLES; i++)
		samples[i] = (struct cs_flame_sample){ .ts_ns = next_random(&seed) % (11 * SEC),
						       .tid = 1 + (uint32_t)(next_random(&seed) % THREADS),
						       .stack = (uint32_t)(next_random(&seed) % 50) };
	for (size_t i = 0; i < INTERVALS; i++) {
		uint64_t slot = 11 * SEC / (INTERVALS / THREADS);
		uint64_t off_ns = (i / THREADS) * slot + next_random(&seed) % (slot / 2);
		uint64_t on_ns = off_ns + 1 + next_random(&seed) % (slot / 2);
		off[i] = (struct cs_flame_off_cpu){ .off_ns = off_ns, .wake_ns = off_ns + (on_ns - off_ns) / 2,
						    .on_ns = on_ns, .tid = 1 + (uint32_t)(i % THREADS),
						    .stack = (uint32_t)(next_random(&seed) % 50) };
	}
	for (size_t i = 0; i < SERVING; i++) {
		uint64_t from = next_random(&seed) % (11 * SEC);
		serving[i] = (struct cs_flame_serving){ .from_ns = from, .to_ns = from + 1 + next_random(&seed) % (60 * MS),
							.tid = 1 + (uint32_t)(next_random(&seed) % THREADS) };
	}
	struct pool_input p = { .samples = samples, .sample_count = SAMPLES, .off_cpu = off,
				.off_cpu_count = INTERVALS, .serving = serving, .serving_count = SERVING,
				.threads = threads, .thread_count = THREADS };
	struct emitted *e = malloc(sizeof(*e));
	cr_assert_not_null(e);
	struct cs_flame_stats stats;
	uint64_t pool_sampled_ns = 0;
	for (size_t i = 0; i < REQUESTS; i++) {
		join(&requests[i], 1, &p, e, &stats);
		cr_assert_eq(e->total_ns, requests[i].split.total_ns, "request %zu", i);
		for (int c = 0; c < CS_CAUSE_COUNT; c++)
			cr_assert_eq(cause_weight(e, (enum cs_cause)c), requests[i].split.cause_ns[c], "request %zu", i);
		pool_sampled_ns += stats.pool_sampled_ns;
	}
	cr_assert_gt(pool_sampled_ns, 0, "some waits had their pool's stacks");
	free(e);
}

/* ---- what the collector keeps for the pools ------------------------------------------ */

static void collect(struct cs_engine *engine, struct cs_flame_collector *c, struct cs_ev_request req)
{
	FEED_OK(engine, req);
	cs_flame_collect_request(c, engine, &req, sizeof(req));
}

static const struct cs_flame_serving *serving_of(const struct cs_flame_collector *c, uint32_t tid)
{
	for (size_t i = 0; i < c->serving_count; i++)
		if (c->serving[i].tid == tid)
			return &c->serving[i];
	return NULL;
}

static bool has_pool_thread(const struct cs_flame_collector *c, enum cs_cause cause, uint32_t key, uint32_t tid)
{
	for (size_t i = 0; i < c->pool_thread_count; i++)
		if (c->pool_threads[i].cause == cause && c->pool_threads[i].key == key && c->pool_threads[i].tid == tid)
			return true;
	return false;
}

Test(flame_collect, a_handed_off_request_keeps_its_pool_wait_and_its_serving)
{
	struct cs_engine *engine = cs_engine_new();
	struct cs_flame_collector c;
	cr_assert_not_null(engine);
	cr_assert_eq(cs_flame_collect_init(&c), 0);
	/* Thread 21 reads what a poller handed it (Tomcat's exec threads): a pool worker. */
	FEED_OK(engine, make_thread_polls(1 * MS, 21, 0, 0, 10, 0, 0));
	collect(engine, &c, make_request((struct request_spec){
		.sk = 0x5001, .start_ns = 100 * MS, .first_read_ns = 130 * MS, .first_send_ns = 141 * MS,
		.last_send_ns = 142 * MS, .port = PORT, .reader_tid = 21, .flags = CS_REQ_HANDED_OFF,
	}));
	cr_assert_eq(c.request_count, 1);
	cr_assert_eq(c.requests[0].split.cause_ns[CS_CAUSE_WORKER_POOL], 30 * MS);
	cr_assert_eq(c.requests[0].pool_from_ns, 100 * MS);
	cr_assert_eq(c.requests[0].pool_to_ns, 130 * MS);
	const struct cs_flame_serving *s = serving_of(&c, 21);
	cr_assert_not_null(s);
	cr_assert_eq(s->from_ns, 130 * MS, "first read");
	cr_assert_eq(s->to_ns, 142 * MS, "last send");

	cr_assert_eq(cs_flame_collect_pools(&c, engine), 0);
	cr_assert(has_pool_thread(&c, CS_CAUSE_WORKER_POOL, TGID, 21));
	cs_flame_collect_free(&c);
	cs_engine_free(engine);
}

Test(flame_collect, a_listener_s_accept_pool_workers_are_its_pool)
{
	struct cs_engine *engine = cs_engine_new();
	struct cs_flame_collector c;
	cr_assert_not_null(engine);
	cr_assert_eq(cs_flame_collect_init(&c), 0);
	/* Worker 31 (a gunicorn sync worker) accepts, reads blocking, serves, accepts again. */
	FEED_OK(engine, make_thread_polls(1 * MS, 31, 0, 0, 0, 0, 4));
	for (uint64_t i = 0; i < 4; i++) {
		uint64_t at = (100 + 50 * i) * MS;
		struct cs_ev_accept accept = make_accept_of(
			(struct accept_spec){ .ts_ns = at, .established_ns = at - 20 * MS, .port = PORT, .tgid = TGID,
					      .tid = 31 },
			0x6000 + i, 0x0a000002u, (uint16_t)(40000 + i));
		FEED_OK(engine, accept);
		collect(engine, &c, make_request((struct request_spec){
			/* the request's bytes came while the connection sat in the queue */
			.sk = 0x6000 + i, .start_ns = at - 10 * MS, .first_read_ns = at + 1 * MS,
			.first_send_ns = at + 41 * MS, .last_send_ns = at + 41 * MS, .port = PORT, .reader_tid = 31,
		}));
	}
	cr_assert_eq(c.request_count, 4);
	const struct cs_flame_request *r = &c.requests[0];
	cr_assert_eq(r->split.cause_ns[CS_CAUSE_ACCEPT_QUEUE], 20 * MS);
	cr_assert_eq(r->accept_to_ns - r->accept_from_ns, 20 * MS, "established -> accepted");
	cr_assert_eq(r->pool_from_ns, 0, "no worker_pool wait");

	cr_assert_eq(cs_flame_collect_pools(&c, engine), 0);
	cr_assert(has_pool_thread(&c, CS_CAUSE_ACCEPT_QUEUE, PORT, 31), "%zu pool threads", c.pool_thread_count);
	cs_flame_collect_free(&c);
	cs_engine_free(engine);
}
