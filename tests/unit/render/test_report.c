// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of the diagnosis (daemon/analysis/diagnose.c) and the text and JSON reports
 * (daemon/render/report.c). Each finding is triggered by a synthetic scenario built
 * for it, and must stay silent on a healthy one. Reports are rendered into
 * memory; the JSON one is parsed by the small strict parser below, so that
 * a stray comma, a NaN or a bad escape fails the test.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose.h"
#include "engine.h"
#include "events.h"
#include "figures_check.h"
#include "json_check.h"
#include "report.h"
#include "words.h"

#define PORT 8080
#define SK(n) (0xffff888700000000ull + (n))

static struct cs_engine *engine;
static struct cs_report_meta meta;

static void setup(void)
{
	engine = cs_engine_new();
	cr_assert_not_null(engine);
	meta = (struct cs_report_meta){ .target = "pid 1234 (csserver)", .duration_s = 10.0 };
}

static void teardown(void)
{
	cs_engine_free(engine);
}

TestSuite(diagnose, .init = setup, .fini = teardown);
TestSuite(report_text, .init = setup, .fini = teardown);
TestSuite(report_json, .init = setup, .fini = teardown);

/* ---- scenarios ------------------------------------------------------------ */

static uint64_t clock_ns = 1000 * SEC;

/*
 * A healthy server: two threads share 200 accepts evenly, connections wait
 * 50 us, the queue is mostly empty and never full, nothing is dropped, and
 * a few wake-ups find nothing.
 */
static void scenario_healthy(void)
{
	feed_samples(engine, PORT, 1, 0, 128, 0, &clock_ns);
	for (int i = 0; i < 100; i++) {
		feed_accepts(engine, PORT, 1, 1, 50 * US, &clock_ns);
		feed_accepts(engine, PORT, 2, 1, 50 * US, &clock_ns);
	}
	feed_eagains(engine, PORT, 1, 5, &clock_ns);
	feed_samples(engine, PORT, 90, 0, 128, 0, &clock_ns);
	feed_samples(engine, PORT, 9, 2, 128, 0, &clock_ns);
}

/* n accepts split between two threads, share of them to the first. */
static void accepts_split(uint64_t n, double first_share, uint64_t wait_ns)
{
	uint64_t first = (uint64_t)llround((double)n * first_share);
	feed_accepts(engine, PORT, 1, first, wait_ns, &clock_ns);
	feed_accepts(engine, PORT, 2, n - first, wait_ns, &clock_ns);
}

/* A finding with its words, as the report writes them. */
struct said {
	const char *code;
	uint16_t port;
	struct cs_figures figures;
	char text[CS_SENTENCE_LEN];
	char advice[CS_SENTENCE_LEN];
};

struct found {
	struct said items[32];
	size_t count;
};

static struct found diagnose(void)
{
	static struct cs_finding findings[32];
	struct found f;
	memset(&f, 0, sizeof(f));
	f.count = cs_diagnose(engine, &meta, findings, 32);
	cr_assert_leq(f.count, 32);
	for (size_t i = 0; i < f.count; i++) {
		struct said *item = &f.items[i];
		item->code = findings[i].code;
		item->port = findings[i].port;
		item->figures = findings[i].figures;
		cr_assert_neq(item->code[0], '\0', "finding %zu has no code", i);
		cr_assert_eq(item->figures.dropped, 0, "%s has more figures than CS_FIGURES_MAX", item->code);
		cs_finding_text(item->text, sizeof(item->text), &findings[i]);
		cs_finding_advice(item->advice, sizeof(item->advice), &findings[i]);
		cr_assert_neq(item->text[0], '\0', "finding %s has no text", item->code);
		cr_assert_neq(item->advice[0], '\0', "finding %s has no advice", item->code);
		/* Every key its words quote is a figure the diagnosis gave. */
		cr_assert_null(strstr(item->text, "?}"), "%s: a key without its figure: %s", item->code, item->text);
		cr_assert_null(strstr(item->advice, "?}"), "%s: %s", item->code, item->advice);
	}
	return f;
}

static const struct said *find(const struct found *f, const char *code)
{
	for (size_t i = 0; i < f->count; i++)
		if (!strcmp(f->items[i].code, code))
			return &f->items[i];
	return NULL;
}

static const char *codes(const struct found *f)
{
	static char buf[512];
	buf[0] = '\0';
	for (size_t i = 0; i < f->count; i++) {
		strcat(buf, i ? ", " : "");
		strcat(buf, f->items[i].code);
	}
	return f->count ? buf : "(none)";
}

static const struct said *expect_finding(const struct found *f, const char *code, uint16_t port)
{
	const struct said *item = find(f, code);
	cr_assert_not_null(item, "expected %s; found: %s", code, codes(f));
	cr_assert_eq(item->port, port, "%s: port %u, want %u", code, item->port, port);
	return item;
}

static void expect_no_finding(const struct found *f, const char *code)
{
	cr_assert_null(find(f, code), "unexpected %s; found: %s", code, codes(f));
}

static void expect_text(const char *text, const char *needle)
{
	cr_assert_not_null(strstr(text, needle), "\"%s\" not in:\n%s", needle, text);
}

/* ---- diagnosis -------------------------------------------------------------- */

Test(diagnose, healthy_server_has_no_finding)
{
	scenario_healthy();
	struct found f = diagnose();
	cr_assert_eq(f.count, 0, "found: %s", codes(&f));
}

Test(diagnose, empty_engine_has_no_finding)
{
	struct found f = diagnose();
	cr_assert_eq(f.count, 0, "found: %s", codes(&f));
}

Test(diagnose, backlog_full_with_drops)
{
	scenario_healthy();
	/* 30 of 130 samples full, and 500 SYNs dropped meanwhile. */
	feed_samples(engine, PORT, 30, 129, 128, 500, &clock_ns);
	struct found f = diagnose();
	const struct said *item = expect_finding(&f, "backlog_full", PORT);
	expect_text(item->text, "500 SYN(s) dropped");
	expect_text(item->text, "limit 128");
	expect_text(item->text, "23%"); /* 30 / 130 */
}

Test(diagnose, backlog_full_quotes_the_delayed_handshakes)
{
	scenario_healthy();
	feed_samples(engine, PORT, 30, 129, 128, 500, &clock_ns);
	feed_handshake(engine, (struct handshake_spec){ .port = PORT, .syn_sent_ns = clock_ns,
							.last_syn_ns = clock_ns + 3 * SEC,
							.ts_ns = clock_ns + 3 * SEC });
	feed_handshake(engine, (struct handshake_spec){ .port = PORT, .syn_sent_ns = clock_ns,
							.last_syn_ns = clock_ns + 63 * SEC, .gave_up = true,
							.ts_ns = clock_ns + 130 * SEC });
	struct found f = diagnose();
	const struct said *item = expect_finding(&f, "backlog_full", PORT);
	expect_text(item->text, "1 local connection(s) waited >= 1 s");
	expect_text(item->text, "max 3.00 s");
	expect_text(item->text, "1 local connection(s) never got in: their clients gave up");
}

Test(diagnose, backlog_full_from_full_samples_alone)
{
	scenario_healthy();
	feed_samples(engine, PORT, 3, 129, 128, 0, &clock_ns); /* 3 of 103: 2.9 % */
	struct found f = diagnose();
	expect_finding(&f, "backlog_full", PORT);
}

Test(diagnose, backlog_full_from_drops_alone)
{
	scenario_healthy();
	feed_samples(engine, PORT, 1, 3, 128, 1, &clock_ns); /* one drop, never full */
	struct found f = diagnose();
	const struct said *item = expect_finding(&f, "backlog_full", PORT);
	expect_text(item->text, "1 SYN(s) dropped");
}

Test(diagnose, backlog_at_the_limit_is_not_full)
{
	scenario_healthy();
	/* backlog == limit: one more still fits (sk_acceptq_is_full is >). */
	feed_samples(engine, PORT, 50, 128, 128, 0, &clock_ns);
	/* 1 full sample in 201: 0.5 %, below the 1 % threshold. */
	feed_samples(engine, PORT, 49, 0, 128, 0, &clock_ns);
	feed_samples(engine, PORT, 1, 129, 128, 0, &clock_ns);
	struct found f = diagnose();
	expect_no_finding(&f, "backlog_full");
}

/* One thread takes 95 % of 200 accepts; connections wait wait_ns. */
static void scenario_single_acceptor(uint64_t wait_ns, uint32_t queue_depth)
{
	accepts_split(200, 0.95, wait_ns);
	feed_samples(engine, PORT, 100, queue_depth, 128, 0, &clock_ns);
}

Test(diagnose, accept_thread_bottleneck)
{
	scenario_single_acceptor(5 * MS, 10);
	struct found f = diagnose();
	const struct said *item = expect_finding(&f, "accept_thread_bottleneck", PORT);
	expect_text(item->text, "(tid 1) took 95% of 200 accepts");
	expect_text(item->text, "busy outside accept() 100% of the time");
	expect_text(item->text, "queue non-empty in 100% of samples");
	expect_no_finding(&f, "accept_queue_wait");
	expect_no_finding(&f, "backlog_full");
}

Test(diagnose, bottleneck_from_the_depth_left_by_accepts)
{
	/* No periodic samples, but every accept() left 3 connections behind. */
	for (int i = 0; i < 100; i++)
		feed_accept(engine, (struct accept_spec){ .port = PORT, .tgid = 100, .tid = 1,
							  .ts_ns = clock_ns += MS,
							  .established_ns = clock_ns - 4 * MS,
							  .backlog = 3, .backlog_limit = 128 });
	struct found f = diagnose();
	expect_finding(&f, "accept_thread_bottleneck", PORT);
}

Test(diagnose, no_bottleneck_when_the_acceptor_waits_in_accept)
{
	/* One thread takes everything, but spends 90 % of its time blocked in accept(). */
	for (int i = 0; i < 200; i++) {
		clock_ns += 10 * US;
		feed_accept(engine, (struct accept_spec){ .port = PORT, .tgid = 100, .tid = 1,
							  .enter_ns = clock_ns - 9 * US, .ts_ns = clock_ns,
							  .established_ns = clock_ns - 5 * MS, .backlog = 2 });
	}
	feed_samples(engine, PORT, 100, 10, 128, 0, &clock_ns);
	struct found f = diagnose();
	expect_no_finding(&f, "accept_thread_bottleneck");
	expect_finding(&f, "accept_queue_wait", PORT);
}

Test(diagnose, no_bottleneck_when_waits_are_short)
{
	scenario_single_acceptor(200 * US, 10);
	struct found f = diagnose();
	expect_no_finding(&f, "accept_thread_bottleneck");
	expect_no_finding(&f, "accept_queue_wait");
}

Test(diagnose, no_bottleneck_below_a_90_percent_share)
{
	/* 85 % to one thread: long waits, busy queue, but no single acceptor. */
	accepts_split(200, 0.85, 5 * MS);
	feed_samples(engine, PORT, 100, 10, 128, 0, &clock_ns);
	struct found f = diagnose();
	expect_no_finding(&f, "accept_thread_bottleneck");
	expect_finding(&f, "accept_queue_wait", PORT);
}

Test(diagnose, no_bottleneck_when_the_queue_is_mostly_empty)
{
	/* Non-empty in 40 % of samples, nothing left behind by accepts. */
	scenario_single_acceptor(5 * MS, 0);
	feed_samples(engine, PORT, 66, 2, 128, 0, &clock_ns);
	struct found f = diagnose();
	expect_no_finding(&f, "accept_thread_bottleneck");
	expect_finding(&f, "accept_queue_wait", PORT);

	/* Non-empty in 50 %: the acceptor lags. */
	feed_samples(engine, PORT, 34, 2, 128, 0, &clock_ns);
	f = diagnose();
	expect_finding(&f, "accept_thread_bottleneck", PORT);
}

Test(diagnose, no_bottleneck_when_the_queue_is_empty)
{
	/* Long waits but the queue is empty: the acceptor is not what lags. */
	scenario_single_acceptor(5 * MS, 0);
	struct found f = diagnose();
	expect_no_finding(&f, "accept_thread_bottleneck");
	expect_finding(&f, "accept_queue_wait", PORT);
}

Test(diagnose, no_acceptor_finding_on_few_accepts)
{
	/* 19 accepts say little, even with 50 ms waits and a busy queue... */
	accepts_split(19, 1.0, 50 * MS);
	feed_samples(engine, PORT, 100, 10, 128, 0, &clock_ns);
	struct found f = diagnose();
	expect_no_finding(&f, "accept_thread_bottleneck");
	expect_no_finding(&f, "accept_queue_wait");

	/* ...20 are enough. */
	accepts_split(1, 1.0, 50 * MS);
	f = diagnose();
	expect_finding(&f, "accept_thread_bottleneck", PORT);
}

Test(diagnose, no_acceptor_finding_without_matched_waits)
{
	/* No accept knows when its connection was established: no wait is known. */
	for (int i = 0; i < 100; i++)
		feed_accept(engine, (struct accept_spec){ .port = PORT, .tid = 1, .ts_ns = clock_ns += MS,
							  .backlog = 5 });
	struct found f = diagnose();
	expect_no_finding(&f, "accept_thread_bottleneck");
	expect_no_finding(&f, "accept_queue_wait");
}

Test(diagnose, accept_queue_wait)
{
	/* Four threads share evenly, yet connections wait 5 ms. */
	for (uint32_t tid = 1; tid <= 4; tid++)
		feed_accepts(engine, PORT, tid, 50, 5 * MS, &clock_ns);
	feed_samples(engine, PORT, 100, 4, 128, 0, &clock_ns);
	struct found f = diagnose();
	const struct said *item = expect_finding(&f, "accept_queue_wait", PORT);
	expect_text(item->text, "p99 5.0 ms");
	expect_no_finding(&f, "accept_thread_bottleneck");
	expect_no_finding(&f, "unfair_accepts");
}

Test(diagnose, unfair_accepts)
{
	accepts_split(200, 0.9, 50 * US);
	struct found f = diagnose();
	const struct said *item = expect_finding(&f, "unfair_accepts", PORT);
	expect_text(item->text, "took 90% of accepts");
	expect_text(item->text, "180 of 200 across 2 threads");
	expect_no_finding(&f, "accept_queue_wait");
}

Test(diagnose, fair_accepts)
{
	accepts_split(200, 0.5, 50 * US);
	struct found f = diagnose();
	expect_no_finding(&f, "unfair_accepts");

	/* 60/40 is within 1.5x of a fair half. */
	cs_engine_free(engine);
	engine = cs_engine_new();
	accepts_split(200, 0.6, 50 * US);
	f = diagnose();
	expect_no_finding(&f, "unfair_accepts");
}

/* n accepts spread over threads 1.. by percentages (summing to 100). */
static void accepts_spread(uint64_t n, const unsigned int *percent, size_t threads)
{
	for (size_t i = 0; i < threads; i++)
		feed_accepts(engine, PORT, (uint32_t)i + 1, n * percent[i] / 100, 50 * US, &clock_ns);
}

Test(diagnose, unfair_among_four)
{
	/* Fair is 25 %: 70 % is unfair... */
	accepts_spread(200, (const unsigned int[]){ 70, 10, 10, 10 }, 4);
	struct found f = diagnose();
	expect_text(expect_finding(&f, "unfair_accepts", PORT)->text, "(a fair share is 25%)");

	/* ...50 % is twice the fair share, but not a majority taken by one thread. */
	cs_engine_free(engine);
	engine = cs_engine_new();
	accepts_spread(200, (const unsigned int[]){ 50, 20, 20, 10 }, 4);
	f = diagnose();
	expect_no_finding(&f, "unfair_accepts");
}

Test(diagnose, one_thread_is_not_unfair)
{
	accepts_split(200, 1.0, 50 * US);
	struct found f = diagnose();
	expect_no_finding(&f, "unfair_accepts");
}

Test(diagnose, thundering_herd)
{
	accepts_split(100, 0.5, 50 * US);
	feed_eagains(engine, PORT, 1, 15, &clock_ns);
	feed_eagains(engine, PORT, 2, 15, &clock_ns);
	struct found f = diagnose();
	const struct said *item = expect_finding(&f, "thundering_herd", PORT);
	expect_text(item->text, "30 accept() calls found the queue empty (0.30 per accepted connection)");
}

/*
 * An unfair spread and a herd, where the tail is the handlers' (10 ms
 * each) and accept waits 50 us: said once, as nothing to change.
 */
Test(diagnose, unfair_and_herd_where_the_tail_does_not_feel_them)
{
	for (uint64_t i = 0; i < 100; i++) {
		uint64_t t = clock_ns + i * 20 * MS, accepted = t + 50 * US;
		uint32_t tid = i < 70 ? 1 : 2 + (uint32_t)(i % 3);
		FEED_OK(engine, make_accept_of((struct accept_spec){ .port = PORT, .tgid = 100, .tid = tid,
								     .established_ns = t, .ts_ns = accepted,
								     .backlog_limit = 128 },
					       SK(i), 0x0a000002, (uint16_t)(41000 + i)));
		feed_request(engine, (struct request_spec){ .sk = SK(i), .port = PORT, .index = 1, .start_ns = t,
							    .first_read_ns = accepted,
							    .first_send_ns = accepted + 10 * MS,
							    .last_send_ns = accepted + 10 * MS });
	}
	clock_ns += 100 * 20 * MS;
	feed_eagains(engine, PORT, 1, 20, &clock_ns);
	feed_eagains(engine, PORT, 2, 20, &clock_ns);
	struct found f = diagnose();
	const struct said *item = expect_finding(&f, "accept_side_negligible", PORT);
	cr_assert(figure_of(&item->figures, "unfair", CS_FIG_FLAG)->count);
	cr_assert(figure_of(&item->figures, "thundering_herd", CS_FIG_FLAG)->count);
	cr_assert_lt(figure_share(&item->figures, "tail_accept_share"), 0.05);
	expect_text(item->text, "one worker took most accepts; accept() calls found the queue empty: accept waits are ");
	expect_text(item->text, "% of the tail's time (100 accepts, 40 EAGAIN), no cause of it");
	expect_no_finding(&f, "unfair_accepts");
	expect_no_finding(&f, "thundering_herd");
}

Test(diagnose, no_herd_below_the_thresholds)
{
	/* 0.20 EAGAIN per accept. */
	accepts_split(100, 0.5, 50 * US);
	feed_eagains(engine, PORT, 2, 20, &clock_ns);
	struct found f = diagnose();
	expect_no_finding(&f, "thundering_herd");

	/* 0.9 per accept, but only 9: too few to say. */
	cs_engine_free(engine);
	engine = cs_engine_new();
	accepts_split(10, 0.5, 50 * US);
	feed_eagains(engine, PORT, 2, 9, &clock_ns);
	f = diagnose();
	expect_no_finding(&f, "thundering_herd");
}

Test(diagnose, syn_cookies)
{
	scenario_healthy();
	meta.netstat = (struct cs_netstat_delta){ .valid = true, .syncookies_sent = 42 };
	struct found f = diagnose();
	const struct said *item = expect_finding(&f, "syn_cookies", 0);
	expect_text(item->text, "42 SYN cookie(s)");

	meta.netstat.syncookies_sent = 0;
	meta.netstat.listen_overflows = 3;
	f = diagnose();
	expect_no_finding(&f, "syn_cookies");

	/* Counters that could not be read say nothing. */
	meta.netstat = (struct cs_netstat_delta){ .valid = false, .syncookies_sent = 42 };
	f = diagnose();
	expect_no_finding(&f, "syn_cookies");
}

Test(diagnose, events_lost)
{
	scenario_healthy();
	meta.events_lost = 3;
	struct found f = diagnose();
	const struct said *item = expect_finding(&f, "events_lost", 0);
	expect_text(item->text, "3 event(s)");
	meta.events_lost = 0;
	f = diagnose();
	expect_no_finding(&f, "events_lost");
}

/* Everything at once: lost events, a full queue, one acceptor, a herd, cookies. */
static void scenario_everything_wrong(void)
{
	meta.events_lost = 12;
	meta.netstat = (struct cs_netstat_delta){ .valid = true, .listen_overflows = 900,
						  .listen_drops = 900, .syncookies_sent = 4 };
	scenario_single_acceptor(8 * MS, 60);
	feed_eagains(engine, PORT, 2, 100, &clock_ns);
	/* Last, so that its drop counter is the socket's latest. */
	feed_samples(engine, PORT, 50, 129, 128, 900, &clock_ns);
}

Test(diagnose, most_serious_first)
{
	scenario_everything_wrong();
	struct found f = diagnose();
	cr_assert_geq(f.count, 5, "found: %s", codes(&f));
	cr_assert_str_eq(f.items[0].code, "events_lost", "lost events frame every other number");
	cr_assert_str_eq(f.items[1].code, "backlog_full", "found: %s", codes(&f));
	expect_finding(&f, "accept_thread_bottleneck", PORT);
	expect_finding(&f, "thundering_herd", PORT);
	expect_finding(&f, "syn_cookies", 0);
	expect_text(find(&f, "backlog_full")->advice, "SYN cookies were sent too");
}

Test(diagnose, respects_max)
{
	scenario_everything_wrong();
	struct cs_finding items[3];
	memset(items, 0x5a, sizeof(items));
	cr_assert_eq(cs_diagnose(engine, &meta, items, 2), 2);
	cr_assert_str_eq(items[0].code, "events_lost");
	unsigned char untouched[sizeof(items[2])];
	memset(untouched, 0x5a, sizeof(untouched));
	cr_assert_eq(memcmp(&items[2], untouched, sizeof(untouched)), 0, "wrote past max");
	cr_assert_eq(cs_diagnose(engine, &meta, items, 0), 0);
}

/* ---- rendering helpers ----------------------------------------------------- */

static char *render(void (*report)(FILE *, const struct cs_engine *, const struct cs_report_meta *))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	cr_assert_not_null(out);
	report(out, engine, &meta);
	cr_assert_eq(fclose(out), 0);
	cr_assert_eq(strlen(buf), len, "NUL byte in the report");
	return buf;
}

/* ---- text report ------------------------------------------------------------ */

Test(report_text, listener_percentiles_and_findings)
{
	/* 100 accepts: 98 waited 2 ms, one 30 ms, one 400 ms. */
	feed_accepts(engine, PORT, 1, 98, 2 * MS, &clock_ns);
	feed_accepts(engine, PORT, 1, 1, 30 * MS, &clock_ns);
	feed_accepts(engine, PORT, 2, 1, 400 * MS, &clock_ns);
	feed_samples(engine, PORT, 10, 5, 128, 0, &clock_ns);
	char *text = render(cs_report_text);

	expect_text(text, "connscope: pid 1234 (csserver), 10.0 s, 110 events, 0 lost");
	cr_expect(strstr(text, "skipped") == NULL, "no skipped probe runs, no mention");
	expect_text(text, "listener :8080  (1 socket, backlog limit 128)");
	expect_text(text, "accepts     100 (10.0/s)   EAGAIN 0   errors 0\n");
	expect_text(text, "p50 2.0 ms  p90 2.0 ms  p99 ");
	char p99[32], p999[32], line[128];
	const struct cs_hist *waits = cs_engine_listener(engine, PORT)->accept_wait_ns;
	cs_format_duration(p99, sizeof(p99), cs_hist_percentile(waits, 99.0));
	cs_format_duration(p999, sizeof(p999), cs_hist_percentile(waits, 99.9));
	snprintf(line, sizeof(line), "p99 %s  p99.9 %s  max 400 ms\n", p99, p999);
	expect_text(text, line);
	cr_assert(!strcmp(p99, "29.9 ms") || !strcmp(p99, "30.0 ms") || !strcmp(p99, "30.1 ms"),
		  "p99 %s", p99);
	expect_text(text, "max 5 / limit 128   full 0.0% of 10 samples   non-empty 100.0%");
	expect_text(text, "0 SYN(s) dropped on this listener");
	expect_text(text, "99   99.0%"); /* tid 1: 99 accepts, 99 % */

	/* The diagnosis, with its advice. */
	expect_text(text, "diagnosis\n");
	expect_text(text, "  ! :8080 the accept thread is the bottleneck");
	expect_text(text, "      -> accept in more threads");
	free(text);
}

Test(report_text, healthy)
{
	scenario_healthy();
	char *text = render(cs_report_text);
	expect_text(text, "listener :8080");
	expect_text(text, "no accept-path problem found");
	cr_assert_null(strstr(text, "partial"));
	cr_assert_null(strstr(text, "note:"));
	free(text);
}

Test(report_text, empty_engine)
{
	char *text = render(cs_report_text);
	expect_text(text, "no accept activity seen");
	expect_text(text, "no accept-path problem found");
	free(text);
}

Test(report_text, probe_runs_skipped_on_the_first_line)
{
	scenario_healthy();
	meta.events_lost = 2;
	meta.probe_runs_skipped = 17;
	char *text = render(cs_report_text);
	char *first_line_end = strchr(text, '\n');
	cr_assert_not_null(first_line_end);
	*first_line_end = '\0';
	expect_text(text, ", 2 lost, 17 probe runs skipped by the kernel");
	free(text);
}

Test(report_text, partial_accepts_malformed_and_kernel_counters)
{
	scenario_healthy();
	for (int i = 0; i < 3; i++)
		feed_accept(engine, (struct accept_spec){ .port = PORT, .tid = 1, .ts_ns = clock_ns += MS });
	char junk[8] = { 0 };
	cs_engine_feed(engine, junk, sizeof(junk));
	cs_engine_feed(engine, junk, sizeof(junk));
	meta.table_full = 4;
	meta.netstat = (struct cs_netstat_delta){ .valid = true, .listen_overflows = 11,
						  .listen_drops = 12, .syncookies_sent = 0 };
	char *text = render(cs_report_text);
	expect_text(text, "partial 3 (queue wait unknown)");
	expect_text(text, "(kernel: ListenOverflows +11, ListenDrops +12, SyncookiesSent +0)");
	expect_text(text, "note: 2 malformed record(s), 4 in-kernel table insert(s) failed");
	free(text);
}

Test(report_text, handshakes_line)
{
	scenario_healthy();
	feed_handshake(engine, (struct handshake_spec){ .port = PORT, .syn_sent_ns = clock_ns,
							.last_syn_ns = clock_ns + SEC, .ts_ns = clock_ns + SEC });
	feed_handshake(engine, (struct handshake_spec){ .port = PORT, .gave_up = true,
							.ts_ns = clock_ns + 2 * SEC });
	char *text = render(cs_report_text);
	expect_text(text, "2 local connect(s) retransmitted SYNs: 1 delayed >= 1 s (max 1.00 s), 1 never got in (the client gave up)");
	free(text);
}

/* ---- JSON report ---------------------------------------------------------- */

static void assert_us(double got_us, uint64_t want_ns, const char *what)
{
	cr_assert(fabs(got_us - (double)want_ns / 1e3) < 0.001, "%s: %.3f us, want %.3f", what, got_us,
		  (double)want_ns / 1e3);
}

Test(report_json, keys_and_values)
{
	scenario_everything_wrong();
	feed_accept(engine, (struct accept_spec){ .port = 9090, .tgid = 300, .tid = 301, .ts_ns = clock_ns += MS,
						  .established_ns = clock_ns - 250 * US, .comm = "other" });
	meta.duration_s = 2.5;
	meta.probe_runs_skipped = 6;
	char *text = render(cs_report_json);
	struct json *root = json_parse(text);

	cr_assert_str_eq(member(root, "target", J_STRING)->string, "pid 1234 (csserver)");
	cr_assert_eq(number(root, "duration_s"), 2.5);
	const struct json *events = member(root, "events", J_OBJECT);
	cr_assert_eq(number(events, "received"), (double)engine->totals.records);
	cr_assert_eq(number(events, "lost"), 12);
	cr_assert_eq(number(events, "skipped"), 6);
	const struct json *kernel = member(root, "kernel", J_OBJECT);
	cr_assert_eq(number(kernel, "syncookies_sent"), 4);

	const struct json *listeners = member(root, "listeners", J_ARRAY);
	cr_assert_eq(length(listeners), 2);
	const struct json *l = element(listeners, 0);
	const struct cs_listener_stats *ls = cs_engine_listener(engine, PORT);
	cr_assert_eq(number(l, "port"), PORT);
	cr_assert_eq(number(l, "accepts"), 200);
	const struct json *wait = member(l, "accept_wait_us", J_OBJECT);
	assert_us(number(wait, "p50"), cs_hist_percentile(ls->accept_wait_ns, 50.0), "p50");
	assert_us(number(wait, "p90"), cs_hist_percentile(ls->accept_wait_ns, 90.0), "p90");
	assert_us(number(wait, "p99"), cs_hist_percentile(ls->accept_wait_ns, 99.0), "p99");
	assert_us(number(wait, "p999"), cs_hist_percentile(ls->accept_wait_ns, 99.9), "p999");
	assert_us(number(wait, "max"), 8 * MS, "max");
	cr_assert(fabs(number(wait, "p50") - 8000.0) < 8000.0 * 0.004);
	cr_assert_eq(number(l, "backlog_max"), 129);
	cr_assert_eq(number(l, "backlog_limit"), 128);
	cr_assert(fabs(number(l, "backlog_full_share") - 50.0 / 150.0) < 1e-4);
	cr_assert_eq(number(l, "drops"), 900);
	cr_assert_eq(number(l, "eagain"), 100);

	const struct json *workers = member(l, "workers", J_ARRAY);
	cr_assert_eq(length(workers), ls->worker_count);
	for (size_t i = 0; i < ls->worker_count; i++) {
		const struct json *w = element(workers, i);
		cr_assert_eq(number(w, "tid"), ls->workers[i].tid);
		cr_assert_eq(number(w, "pid"), ls->workers[i].pid);
		cr_assert_eq(number(w, "accepts"), (double)ls->workers[i].accepts);
		cr_assert_str_eq(member(w, "comm", J_STRING)->string, "worker");
	}
	cr_assert_eq(number(element(workers, 0), "accepts"), 190);

	const struct json *other = element(listeners, 1);
	cr_assert_eq(number(other, "port"), 9090);
	assert_us(number(member(other, "accept_wait_us", J_OBJECT), "max"), 250 * US, "9090 max");
	cr_assert_str_eq(member(element(member(other, "workers", J_ARRAY), 0), "comm", J_STRING)->string,
			 "other");

	const struct json *findings = member(root, "findings", J_ARRAY);
	cr_assert_geq(length(findings), 5);
	cr_assert_str_eq(member(element(findings, 0), "code", J_STRING)->string, "events_lost");
	for (size_t i = 0; i < length(findings); i++) {
		const struct json *f = element(findings, i);
		member(f, "text", J_STRING);
		member(f, "advice", J_STRING);
		number(f, "port");
	}
	json_free(root);
	free(text);
}

Test(report_json, empty_engine)
{
	meta.duration_s = 0.0;
	char *text = render(cs_report_json);
	cr_expect(!strncmp(text, "{\"schema_version\":1,", 20), "schema_version comes first: %.40s", text);
	struct json *root = json_parse(text);
	cr_assert_eq(length(member(root, "listeners", J_ARRAY)), 0);
	cr_assert_eq(length(member(root, "findings", J_ARRAY)), 0);
	cr_assert_eq(number(member(root, "events", J_OBJECT), "received"), 0);
	json_free(root);
	free(text);
}

Test(report_json, listener_without_accepts)
{
	/* Only samples and handshakes: empty histograms, no workers. */
	feed_samples(engine, PORT, 5, 0, 16, 0, &clock_ns);
	feed_handshake(engine, (struct handshake_spec){ .port = 9999, .gave_up = true, .ts_ns = clock_ns });
	char *text = render(cs_report_json);
	struct json *root = json_parse(text);
	const struct json *l = element(member(root, "listeners", J_ARRAY), 0);
	cr_assert_eq(number(member(l, "accept_wait_us", J_OBJECT), "p99"), 0);
	cr_assert_eq(length(member(l, "workers", J_ARRAY)), 0);
	json_free(root);
	free(text);
}

Test(report_json, strings_are_escaped)
{
	static const char comm[] = "a\"b\\c\nd\te\x01\x1f\x7f";
	feed_accept(engine, (struct accept_spec){ .port = PORT, .tid = 1, .ts_ns = SEC, .comm = comm });
	meta.target = "port \"8080\" \\ \r\n";
	char *text = render(cs_report_json);
	struct json *root = json_parse(text);
	cr_assert_str_eq(member(root, "target", J_STRING)->string, "port \"8080\" \\ \r\n");
	const struct json *l = element(member(root, "listeners", J_ARRAY), 0);
	const struct json *w = element(member(l, "workers", J_ARRAY), 0);
	cr_assert_str_eq(member(w, "comm", J_STRING)->string, comm);
	json_free(root);
	free(text);
}

Test(report_json, utf8_thread_names_survive)
{
	/* Thread names are bytes; UTF-8 ones are common (prctl(PR_SET_NAME)). */
	static const char comm[] = "caf\xc3\xa9-\xe2\x82\xac"; /* "café-€" */
	feed_accept(engine, (struct accept_spec){ .port = PORT, .tid = 1, .ts_ns = SEC, .comm = comm });
	char *text = render(cs_report_json);
	struct json *root = json_parse(text);
	const struct json *l = element(member(root, "listeners", J_ARRAY), 0);
	const struct json *w = element(member(l, "workers", J_ARRAY), 0);
	cr_expect_str_eq(member(w, "comm", J_STRING)->string, comm, "JSON comm: %s",
			 strstr(text, "\"comm\""));
	json_free(root);
	free(text);
}

Test(report_json, a_name_cut_mid_character_is_still_json)
{
	/* The kernel cuts comm at 15 bytes, whatever the character. */
	static const char comm[] = "caf\xc3";
	feed_accept(engine, (struct accept_spec){ .port = PORT, .tid = 1, .ts_ns = SEC, .comm = comm });
	char *text = render(cs_report_json);
	struct json *root = json_parse(text);
	const struct json *w = element(member(element(member(root, "listeners", J_ARRAY), 0), "workers", J_ARRAY), 0);
	cr_expect_str_eq(member(w, "comm", J_STRING)->string, "caf\xef\xbf\xbd", "the lone byte is U+FFFD");
	json_free(root);
	free(text);
}

Test(report_json, finding_text_is_escaped)
{
	/* A comm quoted inside a finding's text goes through the escaper too. */
	static const char comm[] = "acc\"ept\\er";
	for (int i = 0; i < 100; i++)
		feed_accept(engine, (struct accept_spec){ .port = PORT, .tgid = 1, .tid = 1, .comm = comm,
							  .ts_ns = clock_ns += MS,
							  .established_ns = clock_ns - 4 * MS, .backlog = 3 });
	char *text = render(cs_report_json);
	struct json *root = json_parse(text);
	const struct json *f = element(member(root, "findings", J_ARRAY), 0);
	cr_assert_str_eq(member(f, "code", J_STRING)->string, "accept_thread_bottleneck");
	expect_text(member(f, "text", J_STRING)->string, comm);
	json_free(root);
	free(text);
}

/* ---- cs_format_duration ------------------------------------------------------ */

static void expect_duration(uint64_t ns, const char *want)
{
	char buf[32];
	cs_format_duration(buf, sizeof(buf), ns);
	cr_expect_str_eq(buf, want, "%llu ns: \"%s\", want \"%s\"", (unsigned long long)ns, buf, want);
}

Test(format_duration, units)
{
	expect_duration(0, "0 ns");
	expect_duration(999, "999 ns");
	expect_duration(1000, "1 us");
	expect_duration(850 * US, "850 us");
	expect_duration(1 * MS, "1.0 ms");
	expect_duration(12300 * US, "12.3 ms");
	expect_duration(99 * MS, "99.0 ms");
	expect_duration(100 * MS, "100 ms");
	expect_duration(150 * MS, "150 ms");
	expect_duration(1 * SEC, "1.00 s");
	expect_duration(3 * SEC, "3.00 s");
	expect_duration(3600 * SEC, "3600.00 s");
	expect_duration(UINT64_MAX, "18446744073.71 s");
}

Test(format_duration, no_1000_of_a_smaller_unit)
{
	/* Rounding must not print "1000 us" or "1000 ms": that is the next unit. */
	expect_duration(999499, "999 us");
	expect_duration(999999, "1.0 ms");
	expect_duration(999999999, "1.00 s");
}

Test(format_duration, truncates_into_small_buffers)
{
	struct {
		char buf[4];
		char canary[4];
	} s;
	memset(&s, 'Z', sizeof(s));
	cs_format_duration(s.buf, sizeof(s.buf), 850 * US);
	cr_assert_str_eq(s.buf, "850");
	cr_assert_eq(memcmp(s.canary, "ZZZZ", 4), 0, "wrote past the buffer");
}
