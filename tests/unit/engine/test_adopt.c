// SPDX-License-Identifier: BSD-2-Clause
/*
 * Connections older than the attach, adopted at their first idle moment:
 * the probes send the request in flight at the attach as partial, then
 * every later one whole, the first of them flagged CS_REQ_ADOPTED. The
 * engine follows them as connections accepted after the attach, less what
 * happened before it: no set-up, no lifetime.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "events.h"
#include "json_check.h"
#include "metrics.h"
#include "report.h"

#define PORT 8080
#define SK 0xffff880000a00000ull

CS_ENGINE_FIXTURE

TestSuite(adopt, .init = setup, .fini = teardown);

/* One exchange of the adopted connection from t0: 1 ms waiting for its reader, 2 ms in the handler. */
static void adopted_request(uint64_t sk, uint32_t index, uint64_t t0, uint16_t flags)
{
	feed_request(engine, (struct request_spec){ .sk = sk, .port = PORT, .index = index, .flags = flags,
						    .start_ns = t0, .first_read_ns = t0 + 1 * MS,
						    .first_send_ns = t0 + 3 * MS, .last_send_ns = t0 + 3 * MS });
}

/* The in-flight request at the attach, then three whole ones, the first adopted. */
static void adopted_connection(uint64_t sk, uint64_t t0)
{
	feed_request(engine, (struct request_spec){ .sk = sk, .port = PORT, .index = 1, .flags = CS_REQ_PARTIAL,
						    .first_read_ns = t0, .first_send_ns = t0 + 10 * US,
						    .last_send_ns = t0 + 10 * US });
	adopted_request(sk, 2, t0 + 10 * MS, CS_REQ_ADOPTED);
	adopted_request(sk, 3, t0 + 20 * MS, 0);
	adopted_request(sk, 4, t0 + 30 * MS, 0);
}

static char *render(void (*renderer)(FILE *, const struct cs_engine *, const struct cs_report_meta *),
		    const struct cs_report_meta *meta)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	renderer(out, engine, meta);
	fclose(out);
	return text;
}

Test(adopt, whole_after_the_request_in_flight)
{
	adopted_connection(SK, 1 * SEC);
	const struct cs_request_stats *r = &engine->requests;
	cr_expect_eq(r->connections_adopted, 1);
	cr_expect_eq(r->partial, 1, "the request in flight at the attach left out");
	cr_expect_eq(r->requests, 3, "every later one whole");
	cr_expect_eq(r->latency_ns->count, 3);
	cr_expect_eq(r->latency_ns->max, 3 * MS, "latency %llu ns", (unsigned long long)r->latency_ns->max);
	/* All its phases: the reader's wait (an event loop's) and the handler. */
	cr_expect_eq(r->cause_ns[CS_CAUSE_EVENT_LOOP]->max, 1 * MS);
	cr_expect_eq(r->cause_ns[CS_CAUSE_HANDLER]->max, 2 * MS);
	cr_expect(r->exemplar_count > 0, "its requests can be the slowest");
}

Test(adopt, no_set_up_made_up)
{
	adopted_connection(SK, 1 * SEC);
	const struct cs_request_stats *r = &engine->requests;
	cr_expect_eq(r->first_on_connection, 0, "its set-up happened before the attach");
	cr_expect_eq(r->setup_ns, 0);
	cr_expect_eq(r->cause_ns[CS_CAUSE_ACCEPT_QUEUE]->max, 0);
	/* Its close: its lifetime is older than the attach, not a figure. */
	feed_conn_close(engine, (struct close_spec){ .sk = SK, .port = PORT, .ts_ns = 2 * SEC, .partial = 1,
						     .requests = 4, .last_activity_ns = 1 * SEC + 33 * MS,
						     .closed_by = CS_CLOSED_BY_CLIENT });
	cr_expect_eq(engine->lifecycle.lifetime_ns->count, 0);
	cr_expect_eq(engine->lifecycle.closed_partial, 1);
}

/* The server closes it after its keep-alive timeout: an idle close, as for any connection. */
Test(adopt, its_idle_close_counts)
{
	adopted_connection(SK, 1 * SEC);
	feed_conn_close(engine, (struct close_spec){ .sk = SK, .port = PORT, .ts_ns = 1 * SEC + 533 * MS, .partial = 1,
						     .requests = 4, .last_activity_ns = 1 * SEC + 33 * MS,
						     .closed_by = CS_CLOSED_BY_SERVER });
	cr_expect_eq(engine->lifecycle.server_idle_closes, 1);
	cr_expect_eq(engine->lifecycle.idle_gap_ns->max, 500 * MS);
}

/* The adoption is said by its first record, whatever that exchange was: an unanswered one too. */
Test(adopt, counted_once_per_connection)
{
	adopted_connection(SK, 1 * SEC);
	adopted_request(SK + 64, 1, 2 * SEC, CS_REQ_ADOPTED | CS_REQ_NO_RESPONSE);
	cr_expect_eq(engine->requests.connections_adopted, 2);
	cr_expect_eq(engine->requests.unanswered, 1);
	cr_expect_eq(engine->requests.requests, 3);
}

/* Bytes read after its answer began: the client did not wait, the connection stays out. */
Test(adopt, multiplexed_stays_out)
{
	adopted_request(SK, 1, 1 * SEC, CS_REQ_ADOPTED);
	adopted_request(SK, 2, 2 * SEC, CS_REQ_READ_AFTER_SEND);
	adopted_request(SK, 3, 3 * SEC, 0);
	cr_expect_eq(engine->requests.connections_multiplexed, 1);
	cr_expect_eq(engine->requests.requests, 1, "only the exchange before the overlap");
}

Test(adopt, said_first_in_the_text_report)
{
	adopted_connection(SK, 1 * SEC);
	struct cs_report_meta meta = { .target = "pid 1 (t)", .duration_s = 1.0 };
	char *text = render(cs_report_text, &meta);
	const char *want = "1 connections older than the attach, adopted at their first idle moment; "
			   "1 requests in flight at the attach left out\n";
	const char *line = strchr(text, '\n');
	cr_assert_not_null(line);
	cr_expect(!strncmp(line + 1, want, strlen(want)), "second line:\n%.300s\nwant:\n%s", line + 1, want);
	free(text);
}

Test(adopt, counted_in_the_json_report)
{
	adopted_connection(SK, 1 * SEC);
	struct cs_report_meta meta = { .target = "pid 1 (t)", .duration_s = 1.0 };
	char *text = render(cs_report_json, &meta);
	struct json *root = json_parse(text);
	cr_assert_not_null(root, "%s", text);
	cr_expect_eq(number(root, "connections_adopted"), 1);
	cr_expect_eq(number(root, "requests_in_flight_at_attach"), 1);
	cr_expect_eq(number(root, "requests"), 3);
	json_free(root);
	free(text);
}

/* A TLS connection re-synchronised at a record header; another whose bytes there started no message. */
Test(adopt, tls_and_no_message_start_said)
{
	adopted_request(SK, 1, 1 * SEC, CS_REQ_ADOPTED | CS_REQ_ADOPTED_TLS);
	adopted_request(SK, 2, 2 * SEC, 0);
	feed_request(engine, (struct request_spec){ .sk = SK + 64, .port = PORT, .index = 1,
						    .flags = CS_REQ_PARTIAL | CS_REQ_NOT_A_START,
						    .start_ns = 3 * SEC, .first_read_ns = 3 * SEC + MS,
						    .first_send_ns = 3 * SEC + 2 * MS, .last_send_ns = 3 * SEC + 2 * MS });
	const struct cs_request_stats *r = &engine->requests;
	cr_expect_eq(r->connections_adopted, 1);
	cr_expect_eq(r->adopted_tls, 1);
	cr_expect_eq(r->not_a_start, 1);
	cr_expect_eq(r->partial, 1, "the request at the false boundary left out");
	cr_expect_eq(r->requests, 2);

	struct cs_report_meta meta = { .target = "pid 1 (t)", .duration_s = 1.0 };
	char *text = render(cs_report_text, &meta);
	cr_expect_not_null(strstr(text, "\n  of them 1 over TLS, re-synchronised at a record header; 1 not adopted where "
				   "their bytes started no message"), "%.600s", text);
	free(text);
	text = render(cs_report_json, &meta);
	struct json *root = json_parse(text);
	cr_assert_not_null(root, "%s", text);
	const struct json *adopted = member(root, "adopted", J_OBJECT);
	cr_expect_eq(number(adopted, "tls_resynchronised"), 1);
	cr_expect_eq(number(adopted, "not_a_message_start"), 1);
	json_free(root);
	free(text);
}

/*
 * Adopted with TCP's stamp later than the attach (connscoped, after its
 * first window): one whose accept the engine saw was established between
 * windows, not older; one whose accept it never saw is older (read since
 * the attach, which moved the stamp).
 */
Test(adopt, stamped_since_the_attach_is_older_only_without_its_accept)
{
	FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tid = 7, .ts_ns = 1 * SEC,
							     .established_ns = 1 * SEC - 100 * US },
				       SK, 0x0a000002, 41000));
	adopted_request(SK, 3, 2 * SEC, CS_REQ_ADOPTED | CS_REQ_ADOPTED_STAMPED);
	adopted_request(SK + 64, 3, 3 * SEC, CS_REQ_ADOPTED | CS_REQ_ADOPTED_STAMPED);
	cr_expect_eq(engine->requests.connections_adopted, 1, "only the one whose accept was not seen");
	cr_expect_eq(engine->requests.requests, 2, "both followed whole");
}

Test(adopt, counted_in_the_metrics)
{
	adopted_connection(SK, 1 * SEC);
	struct cs_report_meta meta = { .target = "web", .duration_s = 1.0 };
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	cs_metrics_render(out, engine, &meta, "web", CS_METRICS_PROMETHEUS);
	fclose(out);
	cr_expect_not_null(strstr(text, "connscope_connections_adopted_total{target=\"web\"} 1\n"), "%s", text);
	cr_expect_not_null(strstr(text, "connscope_partial_total{target=\"web\",seen=\"request\"} 1\n"));
	free(text);
}
