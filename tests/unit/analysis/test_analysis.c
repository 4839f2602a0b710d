// SPDX-License-Identifier: BSD-2-Clause
/*
 * cs_analyze (daemon/analysis/analysis.c) and the tables of kinds.c:
 * every finding and condition has its name, the names are
 * the ones the outputs print, and one pass over a recorded trace gives
 * what the wrappers and the renderers show.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "engine.h"
#include "report.h"
#include "top_model.h"
#include "trace_file.h"
#include "words.h"

/*
 * The names the outputs print (JSON conditions{} keys, findings[].code,
 * the metrics' condition label): a rename in kinds.c fails here.
 */
static const char *const condition_names[CS_CONDITION_COUNT] = {
	[CS_COND_NON_PERSISTENT] = "non_persistent",
	[CS_COND_IDLE_TIMEOUT] = "idle_timeout",
	[CS_COND_LISTEN_OVERFLOW] = "listen_overflow",
	[CS_COND_ACCEPT_CONTENTION] = "accept_contention",
	[CS_COND_CONNECTION_LIMIT] = "connection_limit",
	[CS_COND_CPU_SATURATION] = "cpu_saturation",
	[CS_COND_POOL_SATURATION] = "pool_saturation",
	[CS_COND_RUNTIME_PAUSES] = "runtime_pauses",
	[CS_COND_CLIENT_BOUND] = "client_bound",
};

static const char *const finding_names[CS_FINDING_KIND_COUNT] = {
	[CS_FINDING_EVENTS_LOST] = "events_lost",
	[CS_FINDING_BACKLOG_FULL] = "backlog_full",
	[CS_FINDING_QUEUED_UNSEEN] = "queued_unseen",
	[CS_FINDING_CONNECTION_LIMIT] = "connection_limit",
	[CS_FINDING_ACCEPT_THREAD_BOTTLENECK] = "accept_thread_bottleneck",
	[CS_FINDING_ACCEPT_QUEUE_WAIT] = "accept_queue_wait",
	[CS_FINDING_ACCEPT_POOL_FULL] = "accept_pool_full",
	[CS_FINDING_HANDOFF_POOL_FULL] = "handoff_pool_full",
	[CS_FINDING_UNFAIR_ACCEPTS] = "unfair_accepts",
	[CS_FINDING_THUNDERING_HERD] = "thundering_herd",
	[CS_FINDING_ACCEPT_NEGLIGIBLE] = "accept_side_negligible",
	[CS_FINDING_SYN_COOKIES] = "syn_cookies",
};

Test(kinds, every_condition_has_its_name)
{
	for (int c = 0; c < CS_CONDITION_COUNT; c++) {
		enum cs_condition cond = (enum cs_condition)c;
		cr_assert_not_null(cs_condition_name(cond), "condition %d has no name", c);
		cr_expect_str_eq(cs_condition_name(cond), condition_names[c], "condition %d renamed", c);
		cr_expect_lt(strlen(cs_condition_name(cond)), sizeof(((struct cs_top_condition *)0)->name));
	}
	cr_expect_null(cs_condition_name(CS_CONDITION_COUNT));
	cr_expect_null(cs_condition_name((enum cs_condition)-1));
}

Test(kinds, every_finding_has_its_name)
{
	for (int k = 0; k < CS_FINDING_KIND_COUNT; k++) {
		enum cs_finding_kind kind = (enum cs_finding_kind)k;
		cr_assert_not_null(cs_finding_name(kind), "finding %d has no name", k);
		cr_expect_str_eq(cs_finding_name(kind), finding_names[k], "finding %d renamed", k);
	}
	cr_expect_null(cs_finding_name(CS_FINDING_KIND_COUNT));
}

Test(kinds, names_are_distinct)
{
	for (int a = 0; a < CS_CONDITION_COUNT; a++)
		for (int b = a + 1; b < CS_CONDITION_COUNT; b++)
			cr_expect_str_neq(cs_condition_name((enum cs_condition)a), cs_condition_name((enum cs_condition)b));
	for (int a = 0; a < CS_FINDING_KIND_COUNT; a++)
		for (int b = a + 1; b < CS_FINDING_KIND_COUNT; b++)
			cr_expect_str_neq(cs_finding_name((enum cs_finding_kind)a),
					  cs_finding_name((enum cs_finding_kind)b));
}

/* Each condition's flag, read by enum, is its struct's flag. */
Test(kinds, flags_are_read_by_enum)
{
	struct cs_conditions c;
	for (int i = 0; i < CS_CONDITION_COUNT; i++) {
		memset(&c, 0, sizeof(c));
		bool *flags[CS_CONDITION_COUNT] = {
			[CS_COND_NON_PERSISTENT] = &c.non_persistent.flagged,
			[CS_COND_IDLE_TIMEOUT] = &c.idle_timeout.flagged,
			[CS_COND_LISTEN_OVERFLOW] = &c.listen_overflow.flagged,
			[CS_COND_ACCEPT_CONTENTION] = &c.accept_contention.flagged,
			[CS_COND_CONNECTION_LIMIT] = &c.connection_limit.flagged,
			[CS_COND_CPU_SATURATION] = &c.cpu_saturation.flagged,
			[CS_COND_POOL_SATURATION] = &c.pool_saturation.flagged,
			[CS_COND_RUNTIME_PAUSES] = &c.runtime_pauses.flagged,
			[CS_COND_CLIENT_BOUND] = &c.client_bound.flagged,
		};
		*flags[i] = true;
		for (int j = 0; j < CS_CONDITION_COUNT; j++)
			cr_expect_eq(cs_condition_flagged(&c, (enum cs_condition)j), i == j, "set %s, read %s",
				     condition_names[i], condition_names[j]);
	}
	cr_expect_not(cs_condition_flagged(&c, CS_CONDITION_COUNT));
}

static int feed(void *ctx, const void *record, size_t len)
{
	cs_engine_feed(ctx, record, len);
	return 0;
}

/* The trace's engine; info holds its meta (meta.target points into info). */
static struct cs_engine *replay(const char *name, struct cs_trace_info *info)
{
	const char *dir = getenv("CS_FIXTURES") ? getenv("CS_FIXTURES") : "tests/fixtures";
	char path[512], errmsg[256];
	snprintf(path, sizeof(path), "%s/%s.cstrace", dir, name);
	FILE *file = fopen(path, "rb");
	cr_assert_not_null(file, "cannot open %s: %s (run from the repository root)", path, strerror(errno));
	struct cs_engine *engine = cs_engine_new();
	cr_assert_not_null(engine);
	int err = cs_trace_read(file, feed, engine, info, errmsg, sizeof(errmsg));
	fclose(file);
	cr_assert_eq(err, 0, "%s: %s", path, errmsg);
	return engine;
}

static const char *const fixtures[] = { "s1", "s2", "s3", "s4a", "s4b", "s5close", "s5keep", "s6", "s7", "s8" };
#define FIXTURE_COUNT (sizeof(fixtures) / sizeof(fixtures[0]))

/* The pass gives what its parts and the wrappers give, on every recorded scenario. */
Test(analysis, one_pass_agrees_with_its_parts)
{
	for (size_t i = 0; i < FIXTURE_COUNT; i++) {
		struct cs_trace_info info;
		struct cs_engine *engine = replay(fixtures[i], &info);
		const struct cs_report_meta meta = info.meta;
		struct cs_analysis *a = malloc(sizeof(*a));
		cr_assert_not_null(a);
		cs_analyze(engine, &meta, a);

		struct cs_tail tail;
		cs_compute_tail(engine, cs_tail_percentile(&meta), &tail);
		cr_expect_eq(memcmp(&tail, &a->tail, sizeof(tail)), 0, "%s: the tail differs", fixtures[i]);
		cr_expect_eq(a->accept_path_negligible, cs_accept_path_negligible(engine, &meta));

		struct cs_finding found[CS_FINDINGS_MAX];
		size_t n = cs_diagnose(engine, &meta, found, CS_FINDINGS_MAX);
		cr_assert_eq(n, a->finding_count, "%s", fixtures[i]);
		for (size_t f = 0; f < n; f++) {
			cr_expect_eq(found[f].kind, a->findings[f].kind);
			cr_expect_eq(memcmp(&found[f].figures, &a->findings[f].figures, sizeof(found[f].figures)), 0,
				     "%s: %s's figures differ", fixtures[i], found[f].code);
			cr_expect_str_eq(a->findings[f].code, cs_finding_name(a->findings[f].kind));
		}
		struct cs_conditions cond;
		cs_compute_conditions(engine, &meta, &cond);
		cr_expect_eq(memcmp(&cond, &a->conditions, sizeof(cond)), 0, "%s: the conditions differ", fixtures[i]);
		free(a);
		cs_engine_free(engine);
	}
}

/* accept_contention follows the findings' kinds, not their names. */
Test(analysis, accept_contention_follows_the_findings)
{
	for (size_t i = 0; i < FIXTURE_COUNT; i++) {
		struct cs_trace_info info;
		struct cs_engine *engine = replay(fixtures[i], &info);
		const struct cs_report_meta meta = info.meta;
		struct cs_analysis *a = malloc(sizeof(*a));
		cr_assert_not_null(a);
		cs_analyze(engine, &meta, a);
		bool acceptor = false, unfair = false, herd = false;
		for (size_t f = 0; f < a->finding_count; f++) {
			enum cs_finding_kind k = a->findings[f].kind;
			acceptor |= k == CS_FINDING_ACCEPT_THREAD_BOTTLENECK || k == CS_FINDING_ACCEPT_QUEUE_WAIT;
			unfair |= k == CS_FINDING_UNFAIR_ACCEPTS;
			herd |= k == CS_FINDING_THUNDERING_HERD;
		}
		cr_expect_eq(a->conditions.accept_contention.acceptor_bottleneck, acceptor, "%s", fixtures[i]);
		cr_expect_eq(a->conditions.accept_contention.unfair, unfair, "%s", fixtures[i]);
		cr_expect_eq(a->conditions.accept_contention.thundering_herd, herd, "%s", fixtures[i]);
		cr_expect_eq(cs_analysis_flagged(a, CS_COND_ACCEPT_CONTENTION), acceptor || unfair || herd);
		free(a);
		cs_engine_free(engine);
	}
}

/* The text report prints each flagged condition by its name, with the table's advice. */
Test(analysis, the_report_prints_the_tables_advice)
{
	int flagged_seen = 0;
	for (size_t i = 0; i < FIXTURE_COUNT; i++) {
		struct cs_trace_info info;
		struct cs_engine *engine = replay(fixtures[i], &info);
		const struct cs_report_meta meta = info.meta;
		struct cs_analysis *a = malloc(sizeof(*a));
		cr_assert_not_null(a);
		cs_analyze(engine, &meta, a);
		char *text = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&text, &len);
		cr_assert_not_null(out);
		cs_report_text(out, engine, &meta);
		fclose(out);
		/* Every key the findings' and the evidence's words quote is a figure the analysis gave. */
		cr_expect_null(strstr(text, "?}"), "%s: a template's key without its figure:\n%s", fixtures[i], text);
		for (int c = 0; c < CS_CONDITION_COUNT; c++) {
			char line[256];
			snprintf(line, sizeof(line), "  ! %s:", cs_condition_name((enum cs_condition)c));
			bool shown = strstr(text, line) != NULL;
			cr_expect_eq(shown, cs_analysis_flagged(a, (enum cs_condition)c), "%s: %s", fixtures[i], line);
			if (shown) {
				flagged_seen++;
				cr_expect_not_null(strstr(text, cs_condition_advice((enum cs_condition)c)));
			}
		}
		for (size_t f = 0; f < a->finding_count; f++) {
			char advice[CS_SENTENCE_LEN];
			cs_finding_advice(advice, sizeof(advice), &a->findings[f]);
			cr_expect_not_null(strstr(text, advice), "%s: %s's advice", fixtures[i], a->findings[f].code);
		}
		free(text);
		free(a);
		cs_engine_free(engine);
	}
	cr_expect_gt(flagged_seen, 0, "no fixture flags a condition: the test checks nothing");
}
