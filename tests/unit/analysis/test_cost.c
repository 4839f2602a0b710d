// SPDX-License-Identifier: BSD-2-Clause
/*
 * What connscope costs (daemon/engine/cost.c, daemon/analysis/cost.c):
 * cost records add up, BPF time is shared over the requests and
 * connections the run saw, the CPU time over the wall time the readings
 * covered; a run without readings says its cost was not recorded, one with
 * the statistics off that the BPF cost was not measured.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "cost.h"
#include "events.h"

/* conns connections accepted on port 8080, then requests requests. */
static void serve(struct cs_engine *engine, uint64_t conns, uint64_t requests)
{
	uint64_t clock_ns = SEC;
	feed_accepts(engine, 8080, 7, conns, 50 * US, &clock_ns);
	for (uint64_t i = 0; i < requests; i++) {
		clock_ns += MS;
		feed_request(engine, (struct request_spec){ .sk = 1 + i % conns, .port = 8080, .index = (uint32_t)i,
							    .start_ns = clock_ns, .first_read_ns = clock_ns + 10 * US,
							    .first_send_ns = clock_ns + 20 * US,
							    .last_send_ns = clock_ns + 30 * US });
	}
}

static void feed_prog(struct cs_engine *engine, uint32_t id, const char *name, uint64_t run_ns, uint64_t runs)
{
	FEED_OK(engine, make_prog_cost(2 * SEC, id, name, run_ns, runs));
}

static void feed_self(struct cs_engine *engine, uint64_t user_ns, uint64_t system_ns, uint64_t wall_ns,
		      uint32_t bpf_stats)
{
	FEED_OK(engine, make_self_cost(2 * SEC, user_ns, system_ns, wall_ns, bpf_stats));
}

Test(cost, the_records_sizes_are_known)
{
	cr_assert_eq(cs_record_size(CS_EV_PROG_COST), sizeof(struct cs_ev_prog_cost));
	cr_assert_eq(cs_record_size(CS_EV_SELF_COST), sizeof(struct cs_ev_self_cost));
	cr_assert_geq(CS_WIRE_VERSION, 6);
}

Test(cost, a_run_without_readings_was_not_recorded)
{
	struct cs_engine *engine = cs_engine_new();
	serve(engine, 2, 10);
	struct cs_cost cost;
	cs_cost_of(engine, NULL, &cost);
	cr_assert(!cost.recorded && !cost.bpf_measured);
	cr_assert_eq(cost.requests, 10);
	cr_assert_eq(cost.connections, 2);
	cr_assert_lt(cost.bpf_ns_per_request, 0);
	cr_assert_lt(cost.bpf_ns_per_connection, 0);
	cr_assert_lt(cost.cpu_share, 0);
	cr_assert_not_null(strstr(cs_cost_unmeasured_reason(&cost), "not recorded"));
	cs_engine_free(engine);
}

Test(cost, readings_add_up_and_are_shared_over_requests_and_connections)
{
	struct cs_engine *engine = cs_engine_new();
	serve(engine, 4, 40);
	/* Two readings: on_recv ran 30 times for 6 us, on_send 10 times for 2 us. */
	feed_prog(engine, 11, "on_recv", 4000, 20);
	feed_prog(engine, 12, "on_send", 2000, 10);
	feed_self(engine, 3 * MS, 1 * MS, 1 * SEC, CS_BPF_STATS_ENABLED);
	feed_prog(engine, 11, "on_recv", 2000, 10);
	feed_self(engine, 2 * MS, 2 * MS, 1 * SEC, CS_BPF_STATS_ENABLED);

	struct cs_cost cost;
	cs_cost_of(engine, NULL, &cost);
	cr_assert(cost.recorded && cost.bpf_measured);
	cr_assert_eq(cost.bpf_stats, CS_BPF_STATS_ENABLED);
	cr_assert_eq(cost.bpf_run_ns, 8000);
	cr_assert_eq(cost.bpf_runs, 40);
	cr_assert_float_eq(cost.bpf_ns_per_request, 8000.0 / 40, 1e-9);
	cr_assert_float_eq(cost.bpf_ns_per_connection, 8000.0 / 4, 1e-9);
	cr_assert_eq(cost.cpu_ns, 8 * MS);
	cr_assert_eq(cost.wall_ns, 2 * SEC);
	cr_assert_float_eq(cost.cpu_share, 0.004, 1e-12);

	const struct cs_cost_stats *sums = &engine->cost;
	cr_assert_eq(sums->program_count, 2);
	cr_assert_str_eq(sums->programs[0].name, "on_recv");
	cr_assert_eq(sums->programs[0].prog_id, 11);
	cr_assert_eq(sums->programs[0].run_ns, 6000);
	cr_assert_eq(sums->programs[0].runs, 30);
	cr_assert_float_eq(cs_prog_ns_per_run(&sums->programs[0]), 200.0, 1e-9);
	cr_assert_float_eq(cs_prog_ns_per_run(&sums->programs[1]), 200.0, 1e-9);
	cs_engine_free(engine);
}

/*
 * Traced 1 s in every 10: the lifecycle programs ran all the time, the
 * request programs in the window; the 40 requests seen stand for 400 served.
 */
Test(cost, traced_in_windows_the_cost_is_shared_over_every_request_served)
{
	struct cs_engine *engine = cs_engine_new();
	serve(engine, 4, 40);
	feed_prog(engine, 11, "on_recv", 6000, 30);
	feed_self(engine, MS, MS, 10 * SEC, CS_BPF_STATS_ENABLED);
	struct cs_report_meta meta = { .duration_s = 10.0,
				       .trace = { .sampled = true, .window_s = 1, .period_s = 10, .traced_s = 1.0, .windows = 1 } };
	struct cs_cost cost;
	cs_cost_of(engine, &meta, &cost);
	cr_assert(cost.requests_estimated);
	cr_assert_eq(cost.requests, 40);
	cr_assert_float_eq(cost.requests_served, 400.0, 1e-9);
	cr_assert_float_eq(cost.bpf_ns_per_request, 6000.0 / 400, 1e-9);
	cr_assert_float_eq(cost.bpf_ns_per_connection, 6000.0 / 4, 1e-9);
	/* Traced all the time, or no meta: the requests seen are every one. */
	meta.trace = (struct cs_trace_meta){ 0 };
	cs_cost_of(engine, &meta, &cost);
	cr_assert(!cost.requests_estimated);
	cr_assert_float_eq(cost.bpf_ns_per_request, 6000.0 / 40, 1e-9);
	cs_engine_free(engine);
}

Test(cost, no_request_or_connection_leaves_that_figure_unknown)
{
	struct cs_engine *engine = cs_engine_new();
	feed_prog(engine, 11, "sample_threads", 500, 5);
	feed_self(engine, MS, 0, SEC, CS_BPF_STATS_ALREADY_ON);
	struct cs_cost cost;
	cs_cost_of(engine, NULL, &cost);
	cr_assert(cost.recorded && cost.bpf_measured);
	cr_assert_eq(cost.bpf_run_ns, 500);
	cr_assert_lt(cost.bpf_ns_per_request, 0);
	cr_assert_lt(cost.bpf_ns_per_connection, 0);
	cr_assert_float_eq(cost.cpu_share, 0.001, 1e-12);
	cs_engine_free(engine);
}

Test(cost, statistics_off_leave_the_bpf_cost_unmeasured_not_zero)
{
	struct cs_engine *engine = cs_engine_new();
	serve(engine, 1, 5);
	feed_self(engine, MS, MS, SEC, CS_BPF_STATS_OFF);
	struct cs_cost cost;
	cs_cost_of(engine, NULL, &cost);
	cr_assert(cost.recorded && !cost.bpf_measured);
	cr_assert_lt(cost.bpf_ns_per_request, 0);
	cr_assert_float_eq(cost.cpu_share, 0.002, 1e-12);
	cr_assert_not_null(strstr(cs_cost_unmeasured_reason(&cost), "--no-bpf-stats"));
	cs_engine_free(engine);

	/* The kernel refused: said, with its errno kept. */
	engine = cs_engine_new();
	struct cs_ev_self_cost refused = make_self_cost(2 * SEC, MS, 0, SEC, CS_BPF_STATS_FAILED);
	refused.error = 1;
	FEED_OK(engine, refused);
	cs_cost_of(engine, NULL, &cost);
	cr_assert(!cost.bpf_measured);
	cr_assert_eq(cost.bpf_stats_error, 1);
	cr_assert_not_null(strstr(cs_cost_unmeasured_reason(&cost), "refused"));
	cs_engine_free(engine);
}

Test(cost, a_reading_with_the_statistics_off_spoils_the_sum)
{
	/* On, then off (someone cleared the sysctl we found at 1): part of the runs were not counted. */
	struct cs_engine *engine = cs_engine_new();
	serve(engine, 1, 5);
	feed_prog(engine, 11, "on_recv", 1000, 10);
	feed_self(engine, MS, 0, SEC, CS_BPF_STATS_ALREADY_ON);
	feed_self(engine, MS, 0, SEC, CS_BPF_STATS_OFF);
	struct cs_cost cost;
	cs_cost_of(engine, NULL, &cost);
	cr_assert(cost.recorded && !cost.bpf_measured);
	cr_assert_eq(cost.bpf_run_ns, 0);
	cr_assert_lt(cost.bpf_ns_per_request, 0);
	cs_engine_free(engine);
}

Test(cost, programs_beyond_the_list_still_count_in_the_totals)
{
	struct cs_engine *engine = cs_engine_new();
	for (uint32_t id = 1; id <= CS_COST_PROGRAMS + 3; id++)
		feed_prog(engine, id, "p", 10, 1);
	feed_self(engine, 0, 0, SEC, CS_BPF_STATS_ENABLED);
	cr_assert_eq(engine->cost.program_count, CS_COST_PROGRAMS);
	cr_assert_eq(engine->cost.programs_unlisted, 3);
	cr_assert_eq(engine->cost.bpf_runs, CS_COST_PROGRAMS + 3);
	cs_engine_free(engine);
}

Test(cost, a_name_without_its_nul_is_cut)
{
	struct cs_engine *engine = cs_engine_new();
	struct cs_ev_prog_cost ev = make_prog_cost(SEC, 9, "", 10, 1);
	memset(ev.name, 'x', sizeof(ev.name));
	FEED_OK(engine, ev);
	cr_assert_eq(strlen(engine->cost.programs[0].name), CS_PROG_NAME_LEN - 1);
	cs_engine_free(engine);
}

Test(cost, a_reset_starts_the_sums_over)
{
	struct cs_engine *engine = cs_engine_new();
	serve(engine, 1, 5);
	feed_prog(engine, 11, "on_recv", 1000, 10);
	feed_self(engine, MS, 0, SEC, CS_BPF_STATS_ENABLED);
	cr_assert_eq(cs_engine_reset(engine), 0);
	struct cs_cost cost;
	cs_cost_of(engine, NULL, &cost);
	cr_assert(!cost.recorded);
	cr_assert_eq(engine->cost.program_count, 0);
	feed_prog(engine, 11, "on_recv", 300, 3);
	feed_self(engine, MS, 0, SEC, CS_BPF_STATS_ENABLED);
	cs_cost_of(engine, NULL, &cost);
	cr_assert_eq(cost.bpf_run_ns, 300);
	cs_engine_free(engine);
}

Test(cost, sampled_statistics_stand_for_the_whole_run)
{
	struct cs_engine *engine = cs_engine_new();
	serve(engine, 4, 40);
	/* Held on for 1 s of 4: the programs ran 2 us then; the other 3 s were left out on purpose. */
	feed_prog(engine, 11, "on_recv", 2000, 10);
	feed_self(engine, 1 * MS, 0, 1 * SEC, CS_BPF_STATS_SAMPLED_ON);
	feed_self(engine, 1 * MS, 0, 3 * SEC, CS_BPF_STATS_SAMPLED_OFF);

	struct cs_cost cost;
	cs_cost_of(engine, NULL, &cost);
	cr_assert(cost.recorded && cost.bpf_measured && cost.bpf_sampled);
	cr_assert_float_eq(cost.bpf_measured_share, 0.25, 1e-12);
	/* What was measured stays as measured; per request and connection, the whole run's estimate. */
	cr_assert_eq(cost.bpf_run_ns, 2000);
	cr_assert_eq(cost.bpf_runs, 10);
	cr_assert_float_eq(cost.bpf_ns_per_request, 8000.0 / 40, 1e-9);
	cr_assert_float_eq(cost.bpf_ns_per_connection, 8000.0 / 4, 1e-9);
	cr_assert_str_eq(cs_bpf_stats_name(cost.bpf_stats), "sampled");
	cs_engine_free(engine);
}

Test(cost, sampled_windows_count_whole_and_the_rest_is_scaled_apart)
{
	struct cs_engine *engine = cs_engine_new();
	serve(engine, 4, 40);
	/* A 1 s window (6 us: the request probes), then 9 s outside: 1 s held (1 us), 8 s left off. */
	feed_prog(engine, 11, "on_recv", 6000, 30);
	feed_self(engine, 1 * MS, 0, 1 * SEC, CS_BPF_STATS_SAMPLED_WINDOW);
	feed_prog(engine, 12, "on_tcp_state", 1000, 10);
	feed_self(engine, 1 * MS, 0, 1 * SEC, CS_BPF_STATS_SAMPLED_ON);
	feed_self(engine, 1 * MS, 0, 8 * SEC, CS_BPF_STATS_SAMPLED_OFF);

	struct cs_cost cost;
	cs_cost_of(engine, NULL, &cost);
	cr_assert(cost.bpf_measured && cost.bpf_sampled);
	cr_assert_float_eq(cost.bpf_measured_share, 0.2, 1e-12);
	cr_assert_eq(cost.bpf_run_ns, 7000);
	/* 6 us + 1 us x 9: not (6 + 1) x 5, which the time measured alone would say. */
	cr_assert_float_eq(cost.bpf_ns_per_request, 15000.0 / 40, 1e-9);
	cs_engine_free(engine);
}

Test(cost, sampled_with_no_span_held_yet_is_not_measured_yet)
{
	struct cs_engine *engine = cs_engine_new();
	serve(engine, 2, 10);
	feed_self(engine, 1 * MS, 0, 1 * SEC, CS_BPF_STATS_SAMPLED_OFF);
	struct cs_cost cost;
	cs_cost_of(engine, NULL, &cost);
	cr_assert(cost.recorded && !cost.bpf_measured);
	cr_assert_lt(cost.bpf_ns_per_request, 0);
	cr_assert_not_null(strstr(cs_cost_unmeasured_reason(&cost), "not measured yet"));
	/* A span the holder lost (failed) spoils the sum as a reading with the statistics off does. */
	feed_self(engine, 1 * MS, 0, 1 * SEC, CS_BPF_STATS_SAMPLED_ON);
	feed_self(engine, 1 * MS, 0, 1 * SEC, CS_BPF_STATS_FAILED);
	cs_cost_of(engine, NULL, &cost);
	cr_assert(!cost.bpf_measured);
	cs_engine_free(engine);
}
