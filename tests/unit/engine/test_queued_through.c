// SPDX-License-Identifier: BSD-2-Clause
/*
 * Connections that waited in the accept queue through a whole run
 * (cs_listener_queued_through): attached to a server whose acceptor holds
 * them, no accept of theirs is ever seen. The queue is FIFO and only
 * accept() takes from it: of those queued at the first look, all but as
 * many as were accepted since are there at the last look.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "diagnose.h"
#include "engine.h"
#include "events.h"
#include "report.h"
#include "words.h"

#define PORT 8080

static struct cs_engine *engine;

static void setup(void)
{
	engine = cs_engine_new();
	cr_assert_not_null(engine);
}

static void teardown(void)
{
	cs_engine_free(engine);
}

TestSuite(queued_through, .init = setup, .fini = teardown);

static void look(uint64_t ts_ns, uint32_t backlog, uint64_t sk)
{
	feed_sample(engine, (struct sample_spec){ .port = PORT, .sk = sk, .backlog = backlog, .backlog_limit = 511,
						  .ts_ns = ts_ns });
}

static void accept_at(uint64_t ts_ns, uint32_t backlog_left)
{
	feed_accept(engine, (struct accept_spec){ .port = PORT, .tgid = 100, .tid = 7, .established_ns = ts_ns - MS,
						  .ts_ns = ts_ns, .backlog = backlog_left, .backlog_limit = 511 });
}

static uint64_t queued(uint64_t *for_ns)
{
	for (size_t i = 0; i < engine->listener_count; i++)
		if (engine->listeners[i].port == PORT)
			return cs_listener_queued_through(&engine->listeners[i], for_ns);
	cr_assert_fail("no listener on port %d", PORT);
	return 0;
}

Test(queued_through, none_accepted_all_waited_the_run)
{
	look(1 * SEC, 4, 0);
	look(1 * SEC + 500 * MS, 4, 0);
	look(2 * SEC + 500 * MS, 4, 0);
	uint64_t for_ns;
	cr_assert_eq(queued(&for_ns), 4);
	cr_assert_eq(for_ns, 1500 * MS, "from the first look to the last");
}

Test(queued_through, arrivals_after_the_first_look_are_not_counted)
{
	look(1 * SEC, 4, 0);
	accept_at(1 * SEC + 100 * MS, 3); /* the oldest of the four */
	look(2 * SEC, 6, 0);              /* three came since */
	uint64_t for_ns;
	cr_assert_eq(queued(&for_ns), 3);
	cr_assert_eq(for_ns, 1 * SEC);
}

Test(queued_through, as_many_accepted_as_were_queued_leaves_none)
{
	look(1 * SEC, 4, 0);
	for (int i = 0; i < 4; i++)
		accept_at(1 * SEC + (uint64_t)(i + 1) * MS, 3 - (uint32_t)i);
	look(2 * SEC, 2, 0); /* newer ones */
	uint64_t for_ns;
	cr_assert_eq(queued(&for_ns), 0);
	cr_assert_eq(for_ns, 0);
}

Test(queued_through, accepts_before_the_first_look_take_none_of_them)
{
	accept_at(900 * MS, 0); /* a probe's record from before the first walk */
	look(1 * SEC, 2, 0);
	look(2 * SEC, 2, 0);
	uint64_t for_ns;
	cr_assert_eq(queued(&for_ns), 2);
}

Test(queued_through, at_most_the_last_look_s_depth)
{
	/* An accept not seen (a call begun before the attach takes none of our socket's). */
	look(1 * SEC, 5, 0);
	look(2 * SEC, 2, 0);
	uint64_t for_ns;
	cr_assert_eq(queued(&for_ns), 2);
}

Test(queued_through, one_look_is_no_span)
{
	look(1 * SEC, 3, 0);
	uint64_t for_ns;
	cr_assert_eq(queued(&for_ns), 0);
	cr_assert_eq(for_ns, 0);
}

Test(queued_through, reuseport_sockets_add_up)
{
	look(1 * SEC, 2, 0x1001);
	look(1 * SEC, 3, 0x1002);
	accept_at(1 * SEC + 10 * MS, 1);
	look(2 * SEC, 1, 0x1001);
	look(2 * SEC, 3, 0x1002);
	uint64_t for_ns;
	cr_assert_eq(queued(&for_ns), 4, "five at the first look, one accepted since, four at the last");
}

Test(queued_through, an_accept_s_depth_is_no_first_look)
{
	/* The accept's record of the queue it left comes before any sample: the samples' look is the first. */
	accept_at(1 * SEC, 4);
	look(2 * SEC, 3, 0);
	look(3 * SEC, 3, 0);
	uint64_t for_ns;
	cr_assert_eq(queued(&for_ns), 3);
	cr_assert_eq(for_ns, 1 * SEC);
}

/* Said as a finding of its listener, whatever the tail shows, in words that quote its figures. */
Test(queued_through, said_by_the_diagnosis)
{
	look(1 * SEC, 4, 0);
	look(2 * SEC + 500 * MS, 4, 0);
	struct cs_report_meta meta = { .target = "pid 100 (server)", .duration_s = 1.5 };
	struct cs_finding findings[32];
	size_t n = cs_diagnose(engine, &meta, findings, 32);
	const struct cs_finding *found = NULL;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(findings[i].code, "queued_unseen"))
			found = &findings[i];
	cr_assert_not_null(found, "no queued_unseen finding among %zu", n);
	cr_assert_eq(found->port, PORT);
	char text[CS_SENTENCE_LEN];
	cs_finding_text(text, sizeof(text), found);
	cr_expect_null(strstr(text, "?}"), "%s", text);
	cr_expect_not_null(strstr(text, "4 connection(s) waited in the accept queue through the whole run, 1.50 s"), "%s",
			   text);
}

Test(queued_through, none_said_when_they_were_accepted)
{
	look(1 * SEC, 4, 0);
	for (int i = 0; i < 4; i++)
		accept_at(1 * SEC + (uint64_t)(i + 1) * MS, 3 - (uint32_t)i);
	look(2 * SEC, 0, 0);
	struct cs_report_meta meta = { .target = "pid 100 (server)", .duration_s = 1.0 };
	struct cs_finding findings[32];
	size_t n = cs_diagnose(engine, &meta, findings, 32);
	for (size_t i = 0; i < n; i++)
		cr_expect_str_neq(findings[i].code, "queued_unseen");
}
