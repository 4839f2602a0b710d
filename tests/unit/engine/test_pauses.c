// SPDX-License-Identifier: BSD-2-Clause
/*
 * Runtime pauses in the engine: each record kept and summed, and a
 * request's overlap with its own process's pauses moved from the phase it
 * fell in to runtime_pause, the parts still adding up to its time.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "engine.h"
#include "events.h"

#define PORT 8080
#define JVM 100
#define OTHER 200
#define T0 (50 * SEC)
#define SK(n) (0xffff888400000000ull + (n))

CS_ENGINE_FIXTURE
TestSuite(pauses, .init = setup, .fini = teardown);

static uint64_t sum_of(const struct cs_request_split *split)
{
	uint64_t sum = 0;
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		sum += split->cause_ns[c];
	return sum;
}

/* A kept-alive request handed to a pool thread: 30 ms waiting, 2 ms in its handler, 1 ms draining. */
static struct cs_ev_request handed_request(uint64_t start_ns, uint32_t tgid)
{
	return make_request((struct request_spec){
		.sk = SK(1), .port = PORT, .index = 1, .tgid = tgid, .start_ns = start_ns,
		.first_read_ns = start_ns + 30 * MS, .first_send_ns = start_ns + 32 * MS,
		.last_send_ns = start_ns + 32 * MS, .drain_end_ns = start_ns + 33 * MS, .flags = CS_REQ_HANDED_OFF });
}

Test(pauses, a_pause_in_the_wait_for_the_pool_is_runtime_pause_and_the_parts_add_up)
{
	FEED_OK(engine, make_pause(JVM, T0 + 5 * MS, T0 + 25 * MS, "GenCollectFull", CS_PAUSE_GC | CS_PAUSE_GC_FULL));
	struct cs_ev_request req = handed_request(T0, JVM);
	struct cs_request_split split;
	cr_assert(cs_split_request(engine, &req, &split));
	cr_assert_eq(split.cause_ns[CS_CAUSE_RUNTIME_PAUSE], 20 * MS);
	cr_assert_eq(split.cause_ns[CS_CAUSE_WORKER_POOL], 10 * MS);
	cr_assert_eq(split.cause_ns[CS_CAUSE_HANDLER], 2 * MS);
	cr_assert_eq(split.cause_ns[CS_CAUSE_SEND_DRAIN], 1 * MS);
	cr_assert_eq(split.total_ns, 33 * MS);
	cr_assert_eq(sum_of(&split), split.total_ns);
}

Test(pauses, another_process_s_pause_is_not_this_request_s)
{
	FEED_OK(engine, make_pause(OTHER, T0 + 5 * MS, T0 + 25 * MS, "GenCollectFull", CS_PAUSE_GC));
	struct cs_ev_request req = handed_request(T0, JVM);
	struct cs_request_split split;
	cr_assert(cs_split_request(engine, &req, &split));
	cr_assert_eq(split.cause_ns[CS_CAUSE_RUNTIME_PAUSE], 0);
	cr_assert_eq(split.cause_ns[CS_CAUSE_WORKER_POOL], 30 * MS);
}

Test(pauses, pauses_over_several_phases_take_from_each_never_more_than_it_had)
{
	/* From the wait's last 5 ms through the handler and into the drain; a second one after the request. */
	FEED_OK(engine, make_pause(JVM, T0 + 25 * MS, T0 + 32 * MS + 500 * US, "ThreadDump", 0));
	FEED_OK(engine, make_pause(JVM, T0 + 40 * MS, T0 + 45 * MS, "ThreadDump", 0));
	struct cs_ev_request req = handed_request(T0, JVM);
	req.handler_runq_ns = 1 * MS; /* a stopped thread is blocked: its run-queue time stays */
	struct cs_request_split split;
	cr_assert(cs_split_request(engine, &req, &split));
	cr_assert_eq(split.cause_ns[CS_CAUSE_WORKER_POOL], 25 * MS);
	cr_assert_eq(split.cause_ns[CS_CAUSE_RUN_QUEUE], 1 * MS);
	cr_assert_eq(split.cause_ns[CS_CAUSE_HANDLER], 0, "the handler's 1 ms off the run queue was all paused");
	cr_assert_eq(split.cause_ns[CS_CAUSE_SEND_DRAIN], 500 * US);
	cr_assert_eq(split.cause_ns[CS_CAUSE_RUNTIME_PAUSE], 5 * MS + 1 * MS + 500 * US);
	cr_assert_eq(sum_of(&split), split.total_ns);
	cr_assert_eq(split.total_ns, 33 * MS);
}

Test(pauses, the_accept_queue_of_a_java_acceptor_pauses_too)
{
	FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tgid = JVM, .tid = 3,
							     .established_ns = T0, .ts_ns = T0 + 20 * MS,
							     .backlog_limit = 50, .comm = "acceptor" },
					SK(2), 0x7f000001, 40001));
	FEED_OK(engine, make_pause(JVM, T0 + 10 * MS, T0 + 18 * MS, "GenCollectForAllocation", CS_PAUSE_GC));
	feed_request(engine, (struct request_spec){ .sk = SK(2), .port = PORT, .index = 0, .tgid = JVM,
						    .start_ns = T0 + 1 * MS, .first_read_ns = T0 + 21 * MS,
						    .first_send_ns = T0 + 22 * MS, .last_send_ns = T0 + 22 * MS,
						    .drain_end_ns = T0 + 22 * MS });
	const struct cs_exemplar *kept = &engine->requests.exemplars[0];
	cr_assert_eq(engine->requests.exemplar_count, 1);
	cr_assert_eq(kept->split.cause_ns[CS_CAUSE_ACCEPT_QUEUE], 12 * MS);
	cr_assert_eq(kept->split.cause_ns[CS_CAUSE_RUNTIME_PAUSE], 8 * MS);
	cr_assert_eq(kept->split.total_ns, 22 * MS);
	/* The pause remembers the request it delayed. */
	const struct cs_pause *pause = cs_pause_kept(&engine->pauses, 0);
	cr_assert_eq(pause->requests, 1);
	cr_assert_eq(pause->worst_request_ns, 22 * MS);
}

Test(pauses, each_pause_is_counted_by_kind_and_operation)
{
	FEED_OK(engine, make_pause(JVM, T0, T0 + 40 * MS, "GenCollectFull", CS_PAUSE_GC | CS_PAUSE_GC_FULL));
	FEED_OK(engine, make_pause(JVM, T0 + 1 * SEC, T0 + 1 * SEC + 60 * MS, "GenCollectFull", CS_PAUSE_GC | CS_PAUSE_GC_FULL));
	FEED_OK(engine, make_pause(JVM, T0 + 2 * SEC, T0 + 2 * SEC + 1 * MS, "ThreadDump", 0));
	FEED_OK(engine, make_pause(JVM, T0 + 3 * SEC, T0 + 3 * SEC + 2 * MS, "", CS_PAUSE_UPROBE));
	const struct cs_pause_stats *p = &engine->pauses;
	cr_assert_eq(p->pauses, 4);
	cr_assert_eq(p->gc_pauses, 2);
	cr_assert_eq(p->gc_full_pauses, 2);
	cr_assert_eq(p->collections, 2);
	cr_assert_eq(p->uprobe_pauses, 1);
	cr_assert_eq(p->total_ns, 103 * MS);
	cr_assert_eq(p->max_ns, 60 * MS);
	cr_assert_eq(p->gc_total_ns, 100 * MS - 200 * US);
	cr_assert_eq(p->reach_max_ns, 50 * US);
	cr_assert_eq(p->op_count, 3);
	cr_assert_str_eq(p->ops[0].name, "GenCollectFull");
	cr_assert_eq(p->ops[0].pauses, 2);
	cr_assert(p->ops[0].gc);
	cr_assert_str_eq(p->ops[1].name, "ThreadDump");
	cr_assert_not(p->ops[1].gc);
	cr_assert_str_eq(p->ops[2].name, "", "the uprobes' pauses have no name");
}

Test(pauses, a_pause_that_ends_before_it_begins_is_malformed_and_counted)
{
	struct cs_ev_runtime_pause ev = make_pause(JVM, T0 + 10 * MS, T0, "x", 0);
	cr_assert_eq(cs_engine_feed(engine, &ev, sizeof(ev)), -EINVAL);
	cr_assert_eq(engine->totals.malformed, 1);
	cr_assert_eq(engine->pauses.pauses, 0);
}

Test(pauses, the_ring_keeps_the_latest_and_counts_the_rest)
{
	for (uint64_t i = 0; i < CS_PAUSES_KEPT + 3; i++)
		FEED_OK(engine, make_pause(JVM, T0 + i * MS, T0 + i * MS + 100 * US, "Cleanup", 0));
	cr_assert_eq(engine->pauses.recent_count, CS_PAUSES_KEPT);
	cr_assert_eq(engine->pauses.forgotten, 3);
	cr_assert_eq(engine->pauses.pauses, CS_PAUSES_KEPT + 3);
	cr_assert_eq(cs_pause_kept(&engine->pauses, 0)->begin_ns, T0 + 3 * MS, "the oldest kept");
	cr_assert_eq(cs_pause_kept(&engine->pauses, CS_PAUSES_KEPT - 1)->begin_ns, T0 + (CS_PAUSES_KEPT + 2) * MS);
}

/*
 * The kernel goes on receiving while a JVM is stopped: the record of a
 * request may come before the end of the pause it waited in. The pause's
 * first record (it began) is enough: the request overlaps it to its end.
 */
Test(pauses, a_request_recorded_while_its_process_is_still_stopped_finds_the_pause)
{
	struct cs_ev_runtime_pause begun = make_pause(JVM, T0 + 5 * MS, T0 + 5 * MS, "", 0);
	begun.flags = CS_PAUSE_BEGUN;
	FEED_OK(engine, begun);
	cr_assert_eq(engine->pauses.pauses, 0, "a pause is counted when it ends");
	cr_assert_eq(engine->pauses.open_count, 1);
	struct cs_ev_request req = handed_request(T0, JVM);
	FEED_OK(engine, req);
	const struct cs_exemplar *kept = &engine->requests.exemplars[0];
	cr_assert_eq(kept->split.cause_ns[CS_CAUSE_RUNTIME_PAUSE], 25 * MS + 2 * MS + 1 * MS);
	cr_assert_eq(kept->split.cause_ns[CS_CAUSE_WORKER_POOL], 5 * MS);
	cr_assert_eq(kept->split.total_ns, 33 * MS);
	FEED_OK(engine, make_pause(JVM, T0 + 5 * MS, T0 + 40 * MS, "GenCollectFull", CS_PAUSE_GC));
	cr_assert_eq(engine->pauses.open_count, 0);
	cr_assert_eq(engine->pauses.pauses, 1);
	const struct cs_pause *pause = cs_pause_kept(&engine->pauses, 0);
	cr_assert_eq(pause->requests, 1, "the request noted while it was open stays noted");
	cr_assert_eq(pause->worst_request_ns, 33 * MS);
}

/* The VM thread's waits for a CPU (CS_PAUSE_RUNQ): summed where told, inside the pause and its collections. */
Test(pauses, the_vm_thread_s_waits_for_a_cpu_are_summed_where_known_never_beyond_the_pause)
{
	struct cs_ev_runtime_pause told = make_pause(JVM, T0, T0 + 40 * MS, "G1CollectForAllocation", CS_PAUSE_GC | CS_PAUSE_RUNQ);
	told.vm_runq_ns = 5 * MS;
	told.gc_runq_ns = 3 * MS;
	struct cs_ev_runtime_pause beyond = make_pause(JVM, T0 + 1 * SEC, T0 + 1 * SEC + 10 * MS, "G1CollectForAllocation",
						       CS_PAUSE_GC | CS_PAUSE_RUNQ);
	beyond.vm_runq_ns = 30 * MS; /* more than the pause: a corrupt record */
	beyond.gc_runq_ns = 30 * MS;
	struct cs_ev_runtime_pause untold = make_pause(JVM, T0 + 2 * SEC, T0 + 2 * SEC + 20 * MS, "ThreadDump", 0);
	untold.vm_runq_ns = 7 * MS; /* no CS_PAUSE_RUNQ: not read */
	FEED_OK(engine, told);
	FEED_OK(engine, beyond);
	FEED_OK(engine, untold);
	const struct cs_pause_stats *p = &engine->pauses;
	cr_assert_eq(p->runq_pauses, 2);
	cr_assert_eq(p->runq_pause_total_ns, 50 * MS);
	cr_assert_eq(p->vm_runq_total_ns, 15 * MS, "5 ms, and the second pause's 10 ms at most");
	cr_assert_eq(cs_pause_kept(p, 0)->vm_runq_ns, 5 * MS);
	cr_assert_eq(cs_pause_kept(p, 0)->gc_runq_ns, 3 * MS);
	cr_assert_eq(cs_pause_kept(p, 1)->gc_runq_ns, 10 * MS - 100 * US, "at most its collection's time");
	cr_assert_eq(cs_pause_kept(p, 2)->vm_runq_ns, 0);
}
