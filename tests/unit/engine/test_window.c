// SPDX-License-Identifier: BSD-2-Clause
/* Per-second windows (daemon/engine/window.c), the coarse histogram, engine reset. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "events.h"
#include "window.h"

#define T0 (1000 * SEC)

/* n requests on port 8080 read by tid, each lasting latency_ns, ending before at_ns. */
static void feed_requests(struct cs_engine *engine, uint32_t tid, uint64_t n, uint64_t latency_ns, uint64_t at_ns)
{
	for (uint64_t i = 0; i < n; i++) {
		uint64_t start = at_ns - latency_ns - 100 * US + i;
		feed_request(engine, (struct request_spec){ .sk = 0x1000 + i, .index = 1, .port = 8080,
							    .reader_tid = tid, .start_ns = start,
							    .first_read_ns = start + 10 * US,
							    .first_send_ns = start + latency_ns,
							    .last_send_ns = start + latency_ns });
	}
}

static double within(double value, double expected)
{
	return value >= expected * 0.99 && value <= expected * 1.01;
}

Test(window, each_second_holds_what_ended_in_it)
{
	struct cs_engine *engine = cs_engine_new();
	struct cs_window w;
	cr_assert_eq(cs_window_init(&w), 0);
	cs_window_tick(&w, engine, T0);
	cr_expect_eq(w.filled, 0, "the first tick is the baseline");

	feed_requests(engine, 7, 100, 1 * MS, T0 + SEC);
	cs_window_tick(&w, engine, T0 + SEC);
	feed_requests(engine, 7, 10, 50 * MS, T0 + 2 * SEC);
	feed_requests(engine, 8, 30, 2 * MS, T0 + 2 * SEC);
	cs_window_tick(&w, engine, T0 + 2 * SEC);

	cr_assert_eq(w.filled, 2);
	const struct cs_window_second *latest = cs_window_second(&w, 0), *before = cs_window_second(&w, 1);
	cr_expect_eq(latest->requests, 40);
	cr_expect_eq(before->requests, 100);
	cr_expect_eq(latest->span_ns, SEC);
	cr_expect(within((double)cs_hist_percentile(&before->latency_ns, 99), 1 * MS));
	cr_expect(within((double)cs_hist_percentile(&latest->latency_ns, 99), 50 * MS));
	cr_expect(within((double)cs_hist_percentile(&latest->latency_ns, 50), 2 * MS));
	cr_expect_null(cs_window_second(&w, 2));

	struct cs_hist merged;
	uint64_t span;
	cs_window_latency(&w, &merged, &span);
	cr_expect_eq(merged.count, 140);
	cr_expect_eq(span, 2 * SEC);

	/* The last second per port and per thread. */
	cr_assert_eq(w.port_count, 1);
	cr_expect_eq(w.ports[0].port, 8080);
	cr_expect_eq(w.ports[0].requests, 40);
	bool saw7 = false, saw8 = false;
	for (size_t i = 0; i < w.thread_count; i++) {
		if (w.threads[i].tid == 7) {
			saw7 = true;
			cr_expect_eq(w.threads[i].requests, 10);
			/* handler: first read to first send, 50 ms - 10 us each */
			cr_expect_eq(w.threads[i].handler_ns, 10 * (50 * MS - 10 * US));
		}
		if (w.threads[i].tid == 8) {
			saw8 = true;
			cr_expect_eq(w.threads[i].requests, 30);
		}
	}
	cr_expect(saw7 && saw8);
	cs_window_free(&w);
	cs_engine_free(engine);
}

Test(window, accepts_and_drops_per_second)
{
	struct cs_engine *engine = cs_engine_new();
	struct cs_window w;
	cs_window_init(&w);
	uint64_t clock = T0;
	feed_samples(engine, 8080, 1, 0, 16, 100, &clock); /* drops baseline: 100 */
	cs_window_tick(&w, engine, T0 + SEC);
	feed_accepts(engine, 8080, 7, 25, 1 * MS, &clock);
	feed_samples(engine, 8080, 1, 3, 16, 112, &clock);
	cs_window_tick(&w, engine, T0 + 2 * SEC);
	const struct cs_window_second *s = cs_window_second(&w, 0);
	cr_expect_eq(s->accepts, 25);
	cr_expect_eq(s->drops, 12);
	cr_expect_eq(w.ports[0].accepts, 25);
	cr_expect_eq(w.ports[0].drops, 12);
	cr_expect_eq(w.ports[0].backlog_now, 3);
	/* The accepting thread is in the table, with its accepts. */
	cr_assert_eq(w.thread_count, 1);
	cr_expect_eq(w.threads[0].tid, 7);
	cr_expect_eq(w.threads[0].accepts, 25);
	cr_expect_eq(w.threads[0].total_accepts, 25);
	/* A quiet second: rates fall to 0, totals stay. */
	cs_window_tick(&w, engine, T0 + 3 * SEC);
	cr_expect_eq(cs_window_second(&w, 0)->accepts, 0);
	cr_expect_eq(w.threads[0].accepts, 0);
	cr_expect_eq(w.threads[0].total_accepts, 25);
	cs_window_free(&w);
	cs_engine_free(engine);
}

Test(window, ring_keeps_the_last_minute)
{
	struct cs_engine *engine = cs_engine_new();
	struct cs_window w;
	cs_window_init(&w);
	cs_window_tick(&w, engine, T0);
	for (uint64_t s = 1; s <= 70; s++) {
		feed_requests(engine, 7, s, 1 * MS, T0 + s * SEC); /* second s: s requests */
		cs_window_tick(&w, engine, T0 + s * SEC);
	}
	cr_expect_eq(w.filled, CS_WINDOW_SECONDS);
	cr_expect_eq(cs_window_second(&w, 0)->requests, 70);
	cr_expect_eq(cs_window_second(&w, 59)->requests, 11);
	cr_expect_null(cs_window_second(&w, 60));
	/* A tick that does not move time forward changes nothing. */
	cs_window_tick(&w, engine, T0 + 70 * SEC);
	cs_window_tick(&w, engine, T0 + 69 * SEC);
	cr_expect_eq(cs_window_second(&w, 0)->requests, 70);
	cs_window_free(&w);
	cs_engine_free(engine);
}

Test(window, delta_of_histograms)
{
	struct cs_hist *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b)), *d = malloc(sizeof(*d));
	cs_hist_init(a);
	cs_hist_init(b);
	cs_hist_record_n(a, 1000, 5);
	*b = *a;
	cs_hist_record_n(b, 5000000, 3);
	cs_hist_delta(d, b, a);
	cr_expect_eq(d->count, 3);
	cr_expect_eq(d->sum, 15000000);
	cr_expect(within((double)cs_hist_percentile(d, 50), 5000000));
	cr_expect_leq(d->min, 5000000);
	cr_expect_geq(d->max, 5000000);
	/* Earlier above later (a reset between them): nothing is added. */
	cs_hist_delta(d, a, b);
	cr_expect_eq(d->count, 0);
	cr_expect_eq(cs_hist_percentile(d, 99), 0);
	free(a);
	free(b);
	free(d);
}

Test(window, reset_forgets_everything)
{
	struct cs_engine *engine = cs_engine_new();
	struct cs_window w;
	cs_window_init(&w);
	cs_window_tick(&w, engine, T0);
	feed_requests(engine, 7, 10, 1 * MS, T0 + SEC);
	cs_window_tick(&w, engine, T0 + SEC);
	cr_expect_eq(w.filled, 1);
	cs_window_reset(&w);
	cr_expect_eq(w.filled, 0);
	cr_expect_eq(w.thread_count, 0);
	cr_expect_eq(w.last_tick_ns, 0);
	cs_window_free(&w);
	cs_engine_free(engine);
}

Test(coarse_hist, percentile_within_a_quarter)
{
	uint32_t buckets[CS_COARSE_BUCKETS] = { 0 };
	cr_expect_eq(cs_coarse_percentile(buckets, 99), 0, "empty");
	for (int i = 0; i < 990; i++)
		cs_coarse_record(buckets, 10000);
	for (int i = 0; i < 10; i++)
		cs_coarse_record(buckets, 3000000);
	double p50 = (double)cs_coarse_percentile(buckets, 50);
	double p999 = (double)cs_coarse_percentile(buckets, 99.9);
	cr_expect(p50 >= 10000 * 0.75 && p50 <= 10000 * 1.25, "p50 %f", p50);
	cr_expect(p999 >= 3000000 * 0.75 && p999 <= 3000000 * 1.25, "p99.9 %f", p999);
	uint32_t small[CS_COARSE_BUCKETS] = { 0 };
	cs_coarse_record(small, 0);
	cs_coarse_record(small, 1);
	cr_expect_eq(cs_coarse_percentile(small, 50), 0);
	cr_expect_eq(cs_coarse_percentile(small, 100), 1);
	cs_coarse_record(small, UINT64_MAX); /* clamped into the last bucket, no overflow */
	cr_expect_gt(cs_coarse_percentile(small, 100), 1ull << 46);
}

Test(engine_reset, clears_statistics_but_follows_open_connections)
{
	struct cs_engine *engine = cs_engine_new();
	/* A connection accepted before the reset, its first request after. */
	struct cs_ev_accept accept = make_accept_of((struct accept_spec){ .port = 8080, .tid = 7, .tgid = 100,
									  .established_ns = T0, .ts_ns = T0 + 5 * MS },
						    0xabc, 0x0a000002, 40000);
	FEED_OK(engine, accept);
	feed_requests(engine, 7, 20, 1 * MS, T0 + SEC);
	cr_expect_eq(engine->requests.requests, 20);
	cr_assert_eq(cs_engine_reset(engine), 0);
	cr_expect_eq(engine->requests.requests, 0);
	cr_expect_eq(engine->listener_count, 0);
	cr_expect_eq(engine->totals.records, 0);
	cr_expect_eq(engine->requests.latency_ns->count, 0);
	feed_request(engine, (struct request_spec){ .sk = 0xabc, .index = 0, .port = 8080, .start_ns = T0 + 1 * MS,
						    .first_read_ns = T0 + 6 * MS, .first_send_ns = T0 + 7 * MS,
						    .last_send_ns = T0 + 7 * MS });
	cr_expect_eq(engine->requests.requests, 1);
	/* It still knows the accept: 5 ms in the accept queue. */
	cr_expect_eq(engine->requests.cause_ns[CS_CAUSE_ACCEPT_QUEUE]->max, 5 * MS);
	cs_engine_free(engine);
}
