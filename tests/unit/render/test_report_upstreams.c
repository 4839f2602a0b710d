// SPDX-License-Identifier: BSD-2-Clause
/*
 * A server that waits on its upstream, in the reports: the tail's cause
 * upstream with its evidence (the upstream's address, the tail requests
 * that waited on it, the split of their wait) and its advice, the text
 * report's upstreams section and the JSON's upstreams[].
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "events.h"
#include "json_check.h"
#include "report_render.h"

#define PORT 8080
#define T0 (100 * SEC)

CS_ENGINE_FIXTURE

TestSuite(report_upstreams, .init = setup, .fini = teardown);

static const struct cs_report_meta meta = { .target = "pid 100 (gunicorn)", .duration_s = 10.0 };

/*
 * One worker thread: 200 requests, each calling 127.0.0.2:9000; the
 * backend answers in 1 ms, ten times in 40 ms. Each handler takes 500 us
 * of its own around the call; the first call connects (300 us).
 */
static void blocking_worker_with_slow_backend(void)
{
	for (uint64_t i = 0; i < 200; i++) {
		uint64_t read = T0 + i * 100 * MS, send = read + 200 * US;
		uint64_t wait = i % 20 == 5 ? 40 * MS : 1 * MS;
		bool first = i == 0;
		feed_upstream(engine, (struct upstream_spec){
			.start_ns = first ? read + 100 * US : send, .connect_ns = first ? 300 * US : 0, .send_ns = send,
			.first_byte_ns = send + wait, .first_read_ns = send + wait + 50 * US, .open = 1,
			.request_read_ns = read, .flags = first ? CS_UP_CONNECT : 0, .sender_cpu_ns = 10 * US,
			.index = (uint32_t)i });
		uint64_t answer = send + wait + 350 * US;
		feed_request(engine, (struct request_spec){ .sk = 0xffff888700000000ull, .port = PORT, .index = (uint32_t)i,
							    .start_ns = read - 10 * US, .first_read_ns = read,
							    .first_send_ns = answer, .last_send_ns = answer,
							    .drain_end_ns = answer, .reader_tid = 7 });
	}
}

Test(report_upstreams, the_text_names_the_upstream_and_splits_its_wait)
{
	blocking_worker_with_slow_backend();
	char *text = render_report(engine, &meta, false);
	const char *tail = strstr(text, "where the tail goes");
	cr_assert_not_null(tail, "%s", text);
	cr_expect_not_null(strstr(tail, "  upstream "), "upstream leads:\n%s", tail);
	cr_expect_not_null(strstr(tail, "127.0.0.2:9000: 10 tail request(s) waited 400 ms on it: connect 0 ns, "
					"waiting for the first byte 400 ms, reading the answer 500 us"),
			   "%s", tail);
	cr_expect_not_null(strstr(tail, "-> the upstream answered late, not this server: look at 127.0.0.2:9000"),
			   "%s", tail);
	const char *section = strstr(text, "upstreams (");
	cr_assert_not_null(section, "%s", text);
	cr_expect_not_null(strstr(section, "127.0.0.2:9000  200 exchange(s): joined 200, not joined 0"), "%s", section);
	cr_expect_not_null(strstr(section, "(1 connect(s), 0 SYN retransmit(s))"), "%s", section);
	free(text);
}

Test(report_upstreams, the_json_lists_each_upstream_with_its_joins_and_tail_share)
{
	blocking_worker_with_slow_backend();
	char *text = render_report(engine, &meta, true);
	struct json *root = json_parse(text);
	const struct json *list = member(root, "upstreams", J_ARRAY);
	cr_assert_eq(length(list), 1);
	const struct json *u = element(list, 0);
	cr_expect_str_eq(member(u, "address", J_STRING)->string, "127.0.0.2");
	cr_expect_eq(number(u, "port"), 9000);
	cr_expect_eq(number(u, "exchanges"), 200);
	cr_expect_eq(number(u, "joined"), 200);
	cr_expect_eq(number(u, "not_joined"), 0);
	cr_expect_eq(number(u, "connects"), 1);
	cr_expect_float_eq(number(member(u, "connect_us", J_OBJECT), "p50"), 300.0, 300.0 / 128);
	cr_expect_float_eq(number(member(u, "wait_us", J_OBJECT), "p99"), 40000.0, 40000.0 / 128);
	cr_expect_gt(number(u, "tail_share"), 0.9);
	const struct json *first = element(member(member(root, "tail", J_OBJECT), "causes", J_ARRAY), 0);
	cr_expect_str_eq(member(first, "cause", J_STRING)->string, "upstream");
	const struct json *figures = member(first, "figures", J_OBJECT);
	cr_expect_str_eq(member(figures, "upstream", J_STRING)->string, "127.0.0.2:9000");
	cr_expect_eq(number(figures, "upstream_port"), 9000);
	cr_expect_eq(number(figures, "tail_requests"), 10);
	member(first, "advice", J_STRING);
	json_free(root);
	free(text);
}

/*
 * Two hops, both targets: a proxy (port 8080) calls 127.0.0.2:9000 on a
 * new connection for each of its 20 requests; the backend (port 9000)
 * sees each connection wait in its accept queue, every fifth 30 ms, then
 * answers in 200 us. The upstream's evidence goes one hop further: the
 * backend's requests on those connections, their time in its accept queue.
 */
Test(report_upstreams, a_chained_hop_names_the_upstream_s_own_cause)
{
	for (uint64_t i = 0; i < 20; i++) {
		uint64_t read = T0 + i * 100 * MS, start = read + 100 * US;
		uint64_t queued = i % 5 == 0 ? 30 * MS : 10 * US, accepted = start + 50 * US + queued;
		uint64_t answer = accepted + 300 * US;
		struct cs_ev_accept acc = make_accept((struct accept_spec){ .ts_ns = accepted, .established_ns = start + 50 * US,
									    .port = 9000, .tgid = 200, .tid = 21 });
		acc.tuple.remote_port = (uint16_t)(46000 + i);
		FEED_OK(engine, acc);
		feed_request(engine, (struct request_spec){ .sk = acc.sk, .port = 9000, .index = 0, .tgid = 200,
							    .start_ns = start + 70 * US, .first_read_ns = accepted + 30 * US,
							    .first_send_ns = answer, .last_send_ns = answer, .drain_end_ns = answer,
							    .reader_tid = 21 });
		struct cs_ev_upstream up = make_upstream((struct upstream_spec){
			.sk = 0x8000 + i, .start_ns = start, .connect_ns = 50 * US, .send_ns = start + 60 * US,
			.first_byte_ns = answer + 20 * US, .first_read_ns = answer + 40 * US, .open = 1, .request_read_ns = read,
			.flags = CS_UP_CONNECT, .sender_cpu_ns = 10 * US, .index = 0 });
		up.tuple.local_port = (uint16_t)(46000 + i);
		FEED_OK(engine, up);
		uint64_t sent = answer + 100 * US;
		feed_request(engine, (struct request_spec){ .sk = 0xffff888800000000ull + i, .port = PORT, .index = 0,
							    .start_ns = read - 10 * US, .first_read_ns = read, .first_send_ns = sent,
							    .last_send_ns = sent, .drain_end_ns = sent, .reader_tid = 7 });
	}
	char *text = render_report(engine, &meta, true);
	struct json *root = json_parse(text);
	const struct json *causes = member(member(root, "tail", J_OBJECT), "causes", J_ARRAY);
	const struct json *upstream = NULL;
	for (size_t i = 0; i < length(causes); i++)
		if (!strcmp(member(element(causes, i), "cause", J_STRING)->string, "upstream"))
			upstream = element(causes, i);
	cr_assert_not_null(upstream, "%s", text);
	const struct json *figures = member(upstream, "figures", J_OBJECT);
	cr_expect_eq(number(figures, "tail_requests"), 4);
	cr_expect_eq(number(figures, "chained_requests"), 4);
	cr_expect_str_eq(member(figures, "chained_first_cause", J_STRING)->string, "accept_queue");
	cr_expect_float_eq(number(figures, "chained_first_us"), 4 * 30000.0, 1.0);
	const char *advice = member(upstream, "advice", J_STRING)->string;
	cr_expect_not_null(strstr(advice, "where the time went to accept_queue (its listener :9000"), "%s", advice);
	json_free(root);
	free(text);
}
