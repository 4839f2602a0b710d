// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of the flamegraph join (daemon/flame/flame_join.c) and of what the
 * collector keeps for it (daemon/flame/flame_collect.c): synthetic requests,
 * samples and off-CPU intervals in, weighted paths out. The invariant
 * under every test: a request's weights add up to its time exactly.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "events.h"
#include "flame_collect.h"
#include "flame_emitted.h"
#include "flame_join.h"

#define TID 7
#define OTHER_TID 8
#define PERIOD (10 * MS) /* one sample at 100 Hz */


/* Weight emitted for (cause, phase, stack); stack UINT32_MAX - 1: any. */
#define ANY_STACK (UINT32_MAX - 1)
static uint64_t weight_of(const struct emitted *e, enum cs_cause cause, enum cs_flame_phase phase, uint32_t stack)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < e->count; i++)
		if (e->paths[i].cause == cause && e->paths[i].phase == phase &&
		    (stack == ANY_STACK || e->paths[i].stack == stack))
			sum += e->weights[i];
	return sum;
}

/* A request of tid reading at read, answering at send, draining until end. */
static struct cs_flame_request request(uint64_t pickup, uint64_t read, uint64_t send, uint64_t end)
{
	struct cs_flame_request r = {
		.pickup_ns = pickup, .first_read_ns = read, .first_send_ns = send, .drain_end_ns = end,
		.reader_tid = TID, .sender_tid = TID, .tgid = 100, .port = 8080,
	};
	r.split.cause_ns[CS_CAUSE_EVENT_LOOP] = read - pickup;
	r.split.cause_ns[CS_CAUSE_HANDLER] = send - read;
	r.split.cause_ns[CS_CAUSE_SEND_DRAIN] = end - send;
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		r.split.total_ns += r.split.cause_ns[c];
	return r;
}

static void join(struct cs_flame_request *requests, size_t n, struct cs_flame_sample *samples, size_t ns,
		 struct cs_flame_off_cpu *off, size_t no, struct emitted *e, struct cs_flame_stats *stats)
{
	struct cs_flame_input input = {
		.requests = requests, .request_count = n, .samples = samples, .sample_count = ns,
		.off_cpu = off, .off_cpu_count = no, .sample_period_ns = PERIOD,
	};
	memset(e, 0, sizeof(*e));
	cr_assert_eq(cs_flame_join(&input, record_path, e, stats), 0);
}

Test(flame_join, causes_without_a_thread_are_plain_paths)
{
	struct cs_flame_request r = request(10 * MS, 10 * MS, 10 * MS, 12 * MS);
	r.split.cause_ns[CS_CAUSE_ACCEPT_QUEUE] = 3 * MS;
	r.split.cause_ns[CS_CAUSE_LISTEN_OVERFLOW] = 1000 * MS;
	r.split.cause_ns[CS_CAUSE_RUNTIME_PAUSE] = 40 * MS;
	r.split.total_ns += 1043 * MS;
	struct emitted e;
	struct cs_flame_stats stats;
	join(&r, 1, NULL, 0, NULL, 0, &e, &stats);

	cr_assert_eq(e.total_ns, r.split.total_ns);
	cr_assert_eq(weight_of(&e, CS_CAUSE_ACCEPT_QUEUE, CS_FLAME_NONE, CS_FLAME_NO_STACK), 3 * MS);
	cr_assert_eq(weight_of(&e, CS_CAUSE_LISTEN_OVERFLOW, CS_FLAME_NONE, CS_FLAME_NO_STACK), 1000 * MS);
	cr_assert_eq(weight_of(&e, CS_CAUSE_SEND_DRAIN, CS_FLAME_NONE, CS_FLAME_NO_STACK), 2 * MS);
	/* A JVM's pause: a frame of its own under runtime_pause. */
	cr_assert_eq(weight_of(&e, CS_CAUSE_RUNTIME_PAUSE, CS_FLAME_STOPPED, CS_FLAME_NO_STACK), 40 * MS);
	cr_assert_str_eq(cs_flame_phase_names[CS_FLAME_STOPPED], "[stopped by the JVM: safepoint]");
	cr_assert_eq(e.paths[0].tgid, 100);
	cr_assert_eq(e.paths[0].port, 8080);
	cr_assert_eq(stats.sampled_ns, 0);
}

/* The case flamegraph exists for: a request waits while its thread blocks in another's handler. */
Test(flame_join, a_blocked_thread_fills_the_event_loop_wait)
{
	/* data ready at 100 ms, read at 150 ms: the thread slept 105-148 ms in stack 3 */
	struct cs_flame_request r = request(100 * MS, 150 * MS, 151 * MS, 151 * MS);
	struct cs_flame_off_cpu off[] = {
		{ .off_ns = 105 * MS, .wake_ns = 148 * MS, .on_ns = 148 * MS, .tid = TID, .stack = 3 },
	};
	struct emitted e;
	struct cs_flame_stats stats;
	join(&r, 1, NULL, 0, off, 1, &e, &stats);

	cr_assert_eq(weight_of(&e, CS_CAUSE_EVENT_LOOP, CS_FLAME_OFF_CPU, 3), 43 * MS);
	cr_assert_eq(weight_of(&e, CS_CAUSE_EVENT_LOOP, CS_FLAME_UNSAMPLED, CS_FLAME_NO_STACK), 7 * MS);
	cr_assert_eq(cause_weight(&e, CS_CAUSE_HANDLER), 1 * MS);
	cr_assert_eq(e.total_ns, r.split.total_ns);
	cr_assert_eq(stats.sampled_ns, 43 * MS);
	cr_assert_eq(stats.intervals_joined, 1);
}

Test(flame_join, an_interval_that_began_before_the_window_counts_its_overlap)
{
	struct cs_flame_request r = request(100 * MS, 150 * MS, 160 * MS, 160 * MS);
	struct cs_flame_off_cpu off[] = {
		{ .off_ns = 10 * MS, .wake_ns = 20 * MS, .on_ns = 20 * MS, .tid = TID, .stack = 1 },   /* long before */
		{ .off_ns = 90 * MS, .wake_ns = 0, .on_ns = 120 * MS, .tid = TID, .stack = 2 },        /* into it */
		{ .off_ns = 155 * MS, .wake_ns = 170 * MS, .on_ns = 171 * MS, .tid = TID, .stack = 4 }, /* out of it */
		{ .off_ns = 100 * MS, .wake_ns = 149 * MS, .on_ns = 150 * MS, .tid = OTHER_TID, .stack = 5 },
	};
	struct emitted e;
	struct cs_flame_stats stats;
	join(&r, 1, NULL, 0, off, 4, &e, &stats);

	cr_assert_eq(weight_of(&e, CS_CAUSE_EVENT_LOOP, CS_FLAME_OFF_CPU, 2), 20 * MS, "unseen wake-up: all blocked");
	cr_assert_eq(weight_of(&e, CS_CAUSE_HANDLER, CS_FLAME_OFF_CPU, 4), 5 * MS);
	cr_assert_eq(weight_of(&e, CS_CAUSE_EVENT_LOOP, CS_FLAME_OFF_CPU, 1), 0);
	cr_assert_eq(weight_of(&e, CS_CAUSE_EVENT_LOOP, CS_FLAME_OFF_CPU, 5), 0, "another thread's interval");
	cr_assert_eq(e.total_ns, r.split.total_ns);
}

Test(flame_join, the_runnable_part_of_an_interval_goes_to_run_queue)
{
	/* blocked 110-130, runnable 130-140 (the engine counted that as run_queue) */
	struct cs_flame_request r = request(100 * MS, 150 * MS, 151 * MS, 151 * MS);
	r.split.cause_ns[CS_CAUSE_EVENT_LOOP] -= 10 * MS;
	r.split.cause_ns[CS_CAUSE_RUN_QUEUE] = 10 * MS;
	struct cs_flame_off_cpu off[] = {
		{ .off_ns = 110 * MS, .wake_ns = 130 * MS, .on_ns = 140 * MS, .tid = TID, .stack = 6 },
	};
	struct emitted e;
	struct cs_flame_stats stats;
	join(&r, 1, NULL, 0, off, 1, &e, &stats);

	cr_assert_eq(weight_of(&e, CS_CAUSE_EVENT_LOOP, CS_FLAME_OFF_CPU, 6), 20 * MS);
	cr_assert_eq(weight_of(&e, CS_CAUSE_RUN_QUEUE, CS_FLAME_RUNNABLE, 6), 10 * MS);
	cr_assert_eq(weight_of(&e, CS_CAUSE_RUN_QUEUE, CS_FLAME_UNSAMPLED, ANY_STACK), 0);
	cr_assert_eq(e.total_ns, r.split.total_ns);
}

Test(flame_join, samples_weigh_one_period_each)
{
	/* handler 20 ms: two samples in it (10 ms each), one just after, one of another thread */
	struct cs_flame_request r = request(100 * MS, 100 * MS, 120 * MS, 120 * MS);
	struct cs_flame_sample samples[] = {
		{ .ts_ns = 119 * MS, .tid = TID, .stack = 2 },
		{ .ts_ns = 105 * MS, .tid = TID, .stack = 1 },
		{ .ts_ns = 120 * MS, .tid = TID, .stack = 1 },
		{ .ts_ns = 110 * MS, .tid = OTHER_TID, .stack = 1 },
	};
	struct emitted e;
	struct cs_flame_stats stats;
	join(&r, 1, samples, 4, NULL, 0, &e, &stats);

	cr_assert_eq(weight_of(&e, CS_CAUSE_HANDLER, CS_FLAME_ON_CPU, 1), PERIOD);
	cr_assert_eq(weight_of(&e, CS_CAUSE_HANDLER, CS_FLAME_ON_CPU, 2), PERIOD);
	cr_assert_eq(weight_of(&e, CS_CAUSE_HANDLER, CS_FLAME_UNSAMPLED, ANY_STACK), 0);
	cr_assert_eq(stats.samples_joined, 2);
	cr_assert_eq(e.total_ns, r.split.total_ns);
}

Test(flame_join, more_samples_than_time_are_scaled_down_exactly)
{
	/* 7 ms of handler, three samples of 10 ms: each gets a third, the sum stays 7 ms */
	struct cs_flame_request r = request(100 * MS, 100 * MS, 107 * MS, 107 * MS);
	struct cs_flame_sample samples[] = {
		{ .ts_ns = 101 * MS, .tid = TID, .stack = 1 },
		{ .ts_ns = 102 * MS, .tid = TID, .stack = 2 },
		{ .ts_ns = 103 * MS, .tid = TID, .stack = 3 },
	};
	struct emitted e;
	struct cs_flame_stats stats;
	join(&r, 1, samples, 3, NULL, 0, &e, &stats);

	cr_assert_eq(cause_weight(&e, CS_CAUSE_HANDLER), 7 * MS);
	for (uint32_t s = 1; s <= 3; s++) {
		uint64_t w = weight_of(&e, CS_CAUSE_HANDLER, CS_FLAME_ON_CPU, s);
		cr_assert(w >= 7 * MS / 3 && w <= 7 * MS / 3 + 1, "stack %u got %llu ns", s, (unsigned long long)w);
	}
	cr_assert_eq(e.total_ns, r.split.total_ns);
}

Test(flame_join, the_sender_s_runnable_time_after_the_first_send)
{
	struct cs_flame_request r = request(100 * MS, 100 * MS, 110 * MS, 130 * MS);
	r.sender_tid = OTHER_TID;
	r.split.cause_ns[CS_CAUSE_SEND_DRAIN] -= 4 * MS;
	r.split.cause_ns[CS_CAUSE_RUN_QUEUE] = 4 * MS;
	struct cs_flame_off_cpu off[] = {
		{ .off_ns = 115 * MS, .wake_ns = 115 * MS, .on_ns = 119 * MS, .tid = OTHER_TID, .stack = 9 },
		{ .off_ns = 120 * MS, .wake_ns = 121 * MS, .on_ns = 125 * MS, .tid = TID, .stack = 8 },
	};
	struct emitted e;
	struct cs_flame_stats stats;
	join(&r, 1, NULL, 0, off, 2, &e, &stats);

	cr_assert_eq(weight_of(&e, CS_CAUSE_RUN_QUEUE, CS_FLAME_RUNNABLE, 9), 4 * MS);
	cr_assert_eq(weight_of(&e, CS_CAUSE_RUN_QUEUE, CS_FLAME_RUNNABLE, 8), 0, "the reader, after the first send");
	cr_assert_eq(e.total_ns, r.split.total_ns);
}

/* Deterministic pseudo-random numbers for the property test. */
static uint64_t next_random(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

Test(flame_join, every_request_s_weights_add_up_to_its_time)
{
	enum { REQUESTS = 300, SAMPLES = 3000, INTERVALS = 1500 };
	static struct cs_flame_request requests[REQUESTS];
	static struct cs_flame_sample samples[SAMPLES];
	static struct cs_flame_off_cpu off[INTERVALS];
	uint64_t seed = 0x9e3779b97f4a7c15ull, expected = 0;

	for (size_t i = 0; i < REQUESTS; i++) {
		uint64_t pickup = next_random(&seed) % (10 * SEC);
		uint64_t read = pickup + next_random(&seed) % (50 * MS);
		uint64_t send = read + next_random(&seed) % (20 * MS);
		uint64_t end = send + next_random(&seed) % (5 * MS);
		requests[i] = request(pickup, read, send, end);
		requests[i].reader_tid = 1 + (uint32_t)(next_random(&seed) % 4);
		requests[i].sender_tid = 1 + (uint32_t)(next_random(&seed) % 4);
		/* Some run-queue time taken out of the event-loop wait, as the engine does. */
		uint64_t runq = requests[i].split.cause_ns[CS_CAUSE_EVENT_LOOP] / 3;
		requests[i].split.cause_ns[CS_CAUSE_EVENT_LOOP] -= runq;
		requests[i].split.cause_ns[CS_CAUSE_RUN_QUEUE] = runq;
		/* ...and some handler time a JVM's pause stopped. */
		uint64_t paused = requests[i].split.cause_ns[CS_CAUSE_HANDLER] / 4;
		requests[i].split.cause_ns[CS_CAUSE_HANDLER] -= paused;
		requests[i].split.cause_ns[CS_CAUSE_RUNTIME_PAUSE] = paused;
		expected += requests[i].split.total_ns;
	}
	for (size_t i = 0; i < SAMPLES; i++)
		samples[i] = (struct cs_flame_sample){
			.ts_ns = next_random(&seed) % (11 * SEC), .tid = 1 + (uint32_t)(next_random(&seed) % 4),
			.stack = (uint32_t)(next_random(&seed) % 50),
		};
	/* Per thread, intervals that do not overlap: consecutive slots. */
	for (size_t i = 0; i < INTERVALS; i++) {
		uint64_t slot = 11 * SEC / (INTERVALS / 4);
		uint64_t off_ns = (i / 4) * slot + next_random(&seed) % (slot / 2);
		uint64_t on_ns = off_ns + 1 + next_random(&seed) % (slot / 2);
		uint64_t wake = next_random(&seed) % 3 ? off_ns + (on_ns - off_ns) / 2 : 0;
		off[i] = (struct cs_flame_off_cpu){
			.off_ns = off_ns, .wake_ns = wake, .on_ns = on_ns, .tid = 1 + (uint32_t)(i % 4),
			.stack = (uint32_t)(next_random(&seed) % 50),
		};
	}
	struct emitted *e = malloc(sizeof(*e));
	cr_assert_not_null(e);
	struct cs_flame_stats stats;
	/* One request at a time: each request's own sum. */
	for (size_t i = 0; i < REQUESTS; i++) {
		join(&requests[i], 1, samples, SAMPLES, off, INTERVALS, e, &stats);
		cr_assert_eq(e->total_ns, requests[i].split.total_ns, "request %zu: %llu ns emitted of %llu", i,
			     (unsigned long long)e->total_ns, (unsigned long long)requests[i].split.total_ns);
		for (int c = 0; c < CS_CAUSE_COUNT; c++)
			cr_assert_eq(cause_weight(e, (enum cs_cause)c), requests[i].split.cause_ns[c]);
	}
	join(requests, REQUESTS, samples, SAMPLES, off, INTERVALS, e, &stats);
	cr_assert_eq(stats.total_ns, expected);
	cr_assert_eq(stats.requests, REQUESTS);
	cr_assert_gt(stats.samples_joined, 0);
	cr_assert_gt(stats.intervals_joined, 0);
	free(e);
}

/* ---- the collector ------------------------------------------------------------------ */

static struct cs_ev_cpu_sample cpu_sample(uint64_t ts, uint32_t tid, uint64_t leaf)
{
	struct cs_ev_cpu_sample ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(CS_EV_CPU_SAMPLE, sizeof(ev), ts);
	ev.tid = tid;
	ev.tgid = 100;
	ev.stack.user_frames = 3;
	ev.stack.user_ips[0] = leaf;
	ev.stack.user_ips[1] = 0x401000;
	ev.stack.user_ips[2] = 0x400500;
	ev.stack.kernel_frames = 1;
	ev.stack.kernel_ips[0] = 0xffffffff81000100ull;
	return ev;
}

Test(flame_collect, equal_stacks_are_stored_once)
{
	struct cs_flame_collector c;
	cr_assert_eq(cs_flame_collect_init(&c), 0);
	struct cs_ev_cpu_sample a = cpu_sample(1 * MS, TID, 0x402000), b = cpu_sample(2 * MS, TID, 0x402000);
	struct cs_ev_cpu_sample other = cpu_sample(3 * MS, TID, 0x403000);
	cr_assert_eq(cs_flame_collect_stack_record(&c, &a, sizeof(a)), 0);
	cr_assert_eq(cs_flame_collect_stack_record(&c, &b, sizeof(b)), 0);
	cr_assert_eq(cs_flame_collect_stack_record(&c, &other, sizeof(other)), 0);
	cr_assert_eq(c.sample_count, 3);
	cr_assert_eq(c.stack_count, 2);
	cr_assert_eq(c.samples[0].stack, c.samples[1].stack);
	cr_assert_neq(c.samples[0].stack, c.samples[2].stack);
	const struct cs_flame_stack *s = c.stacks[c.samples[2].stack];
	cr_assert_eq(s->kernel_frames, 1);
	cr_assert_eq(s->user_frames, 3);
	cr_assert_eq(s->ips[1], 0x403000, "kernel frames first, then user, leaf first");

	/* Bad input is counted, never kept. */
	cr_assert_eq(cs_flame_collect_stack_record(&c, &a, sizeof(a) - 8), -EINVAL);
	struct cs_ev_off_cpu backwards;
	memset(&backwards, 0, sizeof(backwards));
	backwards.hdr = make_header(CS_EV_OFF_CPU, sizeof(backwards), 5 * MS);
	backwards.off_ns = 6 * MS;
	cr_assert_eq(cs_flame_collect_stack_record(&c, &backwards, sizeof(backwards)), -EINVAL);
	cr_assert_eq(c.malformed, 2);
	cr_assert_eq(c.off_cpu_count, 0);
	cs_flame_collect_free(&c);
}

Test(flame_collect, requests_keep_their_windows_and_the_tail_is_the_slowest)
{
	struct cs_engine *engine = cs_engine_new();
	cr_assert_not_null(engine);
	struct cs_flame_collector c;
	cr_assert_eq(cs_flame_collect_init(&c), 0);

	/* A first request that waited 5 ms in the accept queue: its pickup is the accept. */
	struct cs_ev_accept accept = make_accept_of((struct accept_spec){ .ts_ns = 105 * MS, .established_ns = 100 * MS,
								       .port = 8080, .tid = TID },
						   0x1234, 0x0a000002u, 40000);
	FEED_OK(engine, accept);
	for (uint64_t i = 0; i < 10; i++) {
		struct cs_ev_request req = make_request((struct request_spec){
			.sk = i == 0 ? 0x1234 : 0x5000 + i, .start_ns = 101 * MS + i * SEC,
			.first_read_ns = 110 * MS + i * SEC, .first_send_ns = 111 * MS + i * SEC + i * MS,
			.last_send_ns = 112 * MS + i * SEC + i * MS, .port = 8080, .reader_tid = TID,
		});
		FEED_OK(engine, req);
		cs_flame_collect_request(&c, engine, &req, sizeof(req));
	}
	cr_assert_eq(c.requests_seen, 10);
	size_t tail = cs_flame_collect_tail(&c, 18 * MS);
	cr_assert_eq(tail, 3, "the requests of 18 ms and more: %zu", tail);
	cr_assert_eq(c.requests[0].split.total_ns, 9 * MS + 11 * MS, "slowest first");

	/* The first request's windows: accepted at 105 ms, read at 110 ms. */
	const struct cs_flame_request *first = NULL;
	for (size_t i = 0; i < c.request_count; i++)
		if (c.requests[i].first_read_ns == 110 * MS)
			first = &c.requests[i];
	cr_assert_not_null(first);
	cr_assert_eq(first->pickup_ns, 105 * MS);
	cr_assert_eq(first->split.cause_ns[CS_CAUSE_ACCEPT_QUEUE], 5 * MS);
	cr_assert_eq(first->drain_end_ns, 112 * MS);
	cr_assert_eq(first->reader_tid, TID);
	cr_assert_eq(first->sender_tid, TID);
	cs_flame_collect_free(&c);
	cs_engine_free(engine);
}
