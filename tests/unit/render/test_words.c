// SPDX-License-Identifier: BSD-2-Clause
/*
 * The words (daemon/render/words.c) and their templates (template.c):
 * every cause, finding and condition has its row; the template syntax
 * does what template.h says; the figures' JSON keeps their units.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template.h"
#include "words.h"

static void expect_summary(const char *name, const char *summary)
{
	cr_assert_not_null(summary, "%s has no summary", name);
	cr_expect_neq(summary[0], '\0', "%s has no summary", name);
	cr_expect_leq(strlen(summary), CS_SUMMARY_MAX, "%s's summary is wider than --help's 80 columns", name);
}

Test(words, every_cause_has_its_summary_and_evidence)
{
	for (int c = 0; c < CS_CAUSE_COUNT; c++) {
		expect_summary(cs_cause_names[c], cs_cause_summary((enum cs_cause)c));
		cr_expect_not_null(cs_cause_evidence_template((enum cs_cause)c), "%s", cs_cause_names[c]);
	}
	cr_expect_null(cs_cause_summary(CS_CAUSE_COUNT));
	cr_expect_null(cs_cause_evidence_template((enum cs_cause)-1));
}

/* A flame graph's pool frame: a bracketed pseudo-frame (drawn grey), only over a pool's waits. */
Test(words, the_pool_waits_have_a_frame_for_the_pool_s_threads)
{
	cr_assert_str_eq(cs_cause_pool_frame(CS_CAUSE_WORKER_POOL), "[pool threads busy]");
	cr_assert_str_eq(cs_cause_pool_frame(CS_CAUSE_ACCEPT_QUEUE), "[pool workers busy]");
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		if (c != CS_CAUSE_WORKER_POOL && c != CS_CAUSE_ACCEPT_QUEUE)
			cr_assert_null(cs_cause_pool_frame((enum cs_cause)c), "cause %d", c);
}

Test(words, every_finding_has_its_sentence_and_advice)
{
	for (int k = 0; k < CS_FINDING_KIND_COUNT; k++) {
		enum cs_finding_kind kind = (enum cs_finding_kind)k;
		cr_assert_not_null(cs_finding_template(kind), "%s", cs_finding_name(kind));
		cr_expect_neq(cs_finding_template(kind)[0], '\0', "%s", cs_finding_name(kind));
		cr_assert_not_null(cs_finding_advice_template(kind), "%s", cs_finding_name(kind));
		cr_expect_neq(cs_finding_advice_template(kind)[0], '\0', "%s", cs_finding_name(kind));
	}
	cr_expect_null(cs_finding_template(CS_FINDING_KIND_COUNT));
	cr_expect_null(cs_finding_advice_template(CS_FINDING_KIND_COUNT));
}

Test(words, every_condition_has_its_summary_advice_and_brief)
{
	for (int c = 0; c < CS_CONDITION_COUNT; c++) {
		enum cs_condition cond = (enum cs_condition)c;
		const char *name = cs_condition_name(cond);
		expect_summary(name, cs_condition_summary(cond));
		cr_assert_not_null(cs_condition_advice(cond), "%s has no advice", name);
		cr_expect_neq(cs_condition_advice(cond)[0], '\0', "%s has no advice", name);
		cr_assert_not_null(cs_condition_brief(cond), "%s has no brief advice", name);
		cr_expect_neq(cs_condition_brief(cond)[0], '\0');
		/* top keeps what the live view sends in its model (struct cs_top_condition), whole. */
		cr_expect_lt(strlen(cs_condition_brief(cond)), 128, "%s's brief advice is too long for top", name);
	}
	cr_expect_null(cs_condition_summary(CS_CONDITION_COUNT));
	cr_expect_null(cs_condition_advice(CS_CONDITION_COUNT));
	cr_expect_null(cs_condition_brief((enum cs_condition)-1));
}

Test(words, every_pool_server_has_its_advice)
{
	for (int s = 0; s < CS_POOL_SERVER_COUNT; s++) {
		const char *advice = cs_pool_advice(CS_POOL_ACCEPT, (enum cs_pool_server)s);
		cr_assert_not_null(advice, "%s", cs_pool_server_name((enum cs_pool_server)s));
		cr_expect_neq(advice, cs_condition_advice(CS_COND_POOL_SATURATION));
		cr_assert_not_null(cs_pool_brief(CS_POOL_ACCEPT, (enum cs_pool_server)s));
		cr_expect_lt(strlen(cs_pool_brief(CS_POOL_ACCEPT, (enum cs_pool_server)s)), 100);
	}
	/* A hand-off pool (Tomcat, Jetty, Netty) has the condition's own. */
	cr_expect_eq(cs_pool_advice(CS_POOL_HANDOFF, CS_POOL_SERVER_GUNICORN),
		     cs_condition_advice(CS_COND_POOL_SATURATION));
}

/* --help's list: every cause and condition by name, each line within 80 columns. */
Test(words, the_help_lists_every_cause_and_condition)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	cs_words_print_kinds(out);
	fclose(out);
	char line[64];
	for (int c = 0; c < CS_CAUSE_COUNT; c++) {
		snprintf(line, sizeof(line), "\n  %-18s ", cs_cause_names[c]);
		cr_expect_not_null(strstr(text, line), "no %s in:\n%s", cs_cause_names[c], text);
	}
	for (int c = 0; c < CS_CONDITION_COUNT; c++) {
		snprintf(line, sizeof(line), "\n  %-18s ", cs_condition_name((enum cs_condition)c));
		cr_expect_not_null(strstr(text, line), "no %s in:\n%s", cs_condition_name((enum cs_condition)c), text);
	}
	for (char *at = text, *nl; (nl = strchr(at, '\n')); at = nl + 1)
		cr_expect_leq(nl - at, 80, "a line wider than 80 columns: %.*s", (int)(nl - at), at);
	free(text);
}

/* ---- the templates ------------------------------------------------------------ */

static struct cs_figures sample(void)
{
	struct cs_figures f = { 0 };
	cs_figures_count(&f, "drops", 500);
	cs_figures_ns(&f, "wait", 5000000);
	cs_figures_share(&f, "full_share", 0.2308);
	cs_figures_ratio(&f, "per_accept", 0.304);
	cs_figures_flag(&f, "herd", true);
	cs_figures_flag(&f, "unfair", false);
	cs_figures_comm(&f, "comm", "nginx");
	cs_figures_comm(&f, "nameless", "");
	cs_figures_count(&f, "zero", 0);
	return f;
}

static const char *expand(const char *template)
{
	static char out[256];
	struct cs_figures f = sample();
	size_t n = cs_template_expand(out, sizeof(out), template, &f);
	cr_assert_eq(n, strlen(out), "the length returned is the sentence's");
	return out;
}

Test(template, values_in_their_units)
{
	cr_expect_str_eq(expand("{drops} SYN(s) dropped"), "500 SYN(s) dropped");
	cr_expect_str_eq(expand("p99 {wait}"), "p99 5.0 ms");
	cr_expect_str_eq(expand("full {full_share}% ({full_share:1}%)"), "full 23% (23.1%)");
	cr_expect_str_eq(expand("{per_accept} / {per_accept:2}"), "0.3 / 0.30");
	cr_expect_str_eq(expand("{comm} {nameless} {herd} {unfair}"), "nginx ? yes no");
	cr_expect_str_eq(expand("no figure: {nothing}."), "no figure: {nothing?}.");
}

Test(template, sections_by_their_gate)
{
	cr_expect_str_eq(expand("a[+drops|, {drops} dropped]."), "a, 500 dropped.");
	cr_expect_str_eq(expand("a[+zero|, never]."), "a.");
	cr_expect_str_eq(expand("a[?zero|, {zero} known]."), "a, 0 known.");
	cr_expect_str_eq(expand("a[?nothing|, never]."), "a.");
	cr_expect_str_eq(expand("a[!zero|, none][!nothing|, missing][!drops|, never]."), "a, none, missing.");
	cr_expect_str_eq(expand("[+herd|herd[+unfair|; ]][+unfair|unfair]"), "herd");
	cr_expect_str_eq(expand("[+herd|herd[+drops|; ]][+drops|{drops}]"), "herd; 500");
	/* Not a section: copied as it is. */
	cr_expect_str_eq(expand("[x] {drops"), "[x] {drops");
}

Test(template, a_sentence_cut_to_fit_is_terminated)
{
	struct cs_figures f = sample();
	char out[8];
	memset(out, 'x', sizeof(out));
	size_t n = cs_template_expand(out, sizeof(out), "{drops} SYN(s) dropped", &f);
	cr_expect_eq(n, strlen("500 SYN(s) dropped"));
	cr_expect_str_eq(out, "500 SYN");
	cr_expect_eq(cs_template_expand(out, sizeof(out), NULL, &f), 0);
	cr_expect_str_eq(out, "");
}

Test(figures, past_the_bound_they_are_counted_not_kept)
{
	struct cs_figures f = { 0 };
	for (int i = 0; i < CS_FIGURES_MAX + 3; i++)
		cs_figures_count(&f, "n", (uint64_t)i);
	cr_expect_eq(f.count, CS_FIGURES_MAX);
	cr_expect_eq(f.dropped, 3);
	cr_expect_eq(cs_figures_get(&f, "n")->count, 0, "the first of a key is the one read");
}

Test(figures, json_keeps_the_units)
{
	struct cs_figures f = sample();
	json_t *o = cs_figures_value(&f);
	cr_expect_eq(json_integer_value(json_object_get(o, "drops")), 500);
	cr_expect_float_eq(json_number_value(json_object_get(o, "wait_us")), 5000.0, 1e-9);
	cr_expect_null(json_object_get(o, "wait"));
	cr_expect_float_eq(json_number_value(json_object_get(o, "full_share")), 0.2308, 1e-9);
	cr_expect_float_eq(json_number_value(json_object_get(o, "per_accept")), 0.304, 1e-9);
	cr_expect(json_is_true(json_object_get(o, "herd")));
	cr_expect(json_is_false(json_object_get(o, "unfair")));
	cr_expect_str_eq(json_string_value(json_object_get(o, "comm")), "nginx");
	cr_expect_eq(json_object_size(o), f.count);
	json_decref(o);
}

/* Each condition flagged alone: its words quote only the figures the analysis gives it. */
static void expect_words_of(struct cs_conditions *c, enum cs_condition condition, const char *what)
{
	char text[CS_SENTENCE_LEN];
	cs_conditions_figures(c);
	cr_assert(c->seen[condition].count > 0, "%s has no figures", what);
	cr_assert_eq(c->seen[condition].dropped, 0, "%s", what);
	for (int other = 0; other < CS_CONDITION_COUNT; other++)
		cr_expect(other == (int)condition || c->seen[other].count == 0, "%s gave %s figures", what,
			  cs_condition_name((enum cs_condition)other));
	cr_assert_gt(cs_condition_text(text, sizeof(text), c, condition), 0, "%s", what);
	cr_expect_null(strstr(text, "?}"), "%s: a key without its figure: %s", what, text);
	cs_condition_detail(text, sizeof(text), c, condition);
	cr_expect_null(strstr(text, "?}"), "%s: %s", what, text);
}

Test(words, every_condition_s_words_quote_its_figures)
{
	struct cs_conditions *c = calloc(1, sizeof(*c));
	cr_assert_not_null(c);
	bool *flags[CS_CONDITION_COUNT] = {
		[CS_COND_NON_PERSISTENT] = &c->non_persistent.flagged,
		[CS_COND_IDLE_TIMEOUT] = &c->idle_timeout.flagged,
		[CS_COND_LISTEN_OVERFLOW] = &c->listen_overflow.flagged,
		[CS_COND_ACCEPT_CONTENTION] = &c->accept_contention.flagged,
		[CS_COND_CONNECTION_LIMIT] = &c->connection_limit.flagged,
		[CS_COND_CPU_SATURATION] = &c->cpu_saturation.flagged,
		[CS_COND_POOL_SATURATION] = &c->pool_saturation.flagged,
		[CS_COND_RUNTIME_PAUSES] = &c->runtime_pauses.flagged,
		[CS_COND_CLIENT_BOUND] = &c->client_bound.flagged,
	};
	for (int i = 0; i < CS_CONDITION_COUNT; i++) {
		cr_assert_not_null(flags[i], "condition %d has no flag here", i);
		cr_assert_not_null(cs_condition_template((enum cs_condition)i), "%s", cs_condition_name((enum cs_condition)i));
		*flags[i] = true;
		expect_words_of(c, (enum cs_condition)i, cs_condition_name((enum cs_condition)i));
		*flags[i] = false;
	}
	/* Both kinds of pool, with and without their figures known only sometimes. */
	c->pool_saturation = (struct cs_pool_condition){ .flagged = true, .kind = CS_POOL_ACCEPT, .port = 8000,
							 .pool_threads = 2, .busy_threads = 2, .on_cpu_share = -1,
							 .queue_nonempty_share = 0.5 };
	expect_words_of(c, CS_COND_POOL_SATURATION, "an accept pool");
	char text[CS_SENTENCE_LEN];
	cs_condition_text(text, sizeof(text), c, CS_COND_POOL_SATURATION);
	cr_expect_not_null(strstr(text, "(accept pool) connections waited in :8000's accept queue"), "%s", text);
	cr_expect_not_null(strstr(text, "(queue non-empty in 50% of samples); that time: waiting for a CPU"), "%s", text);
	cr_expect_null(strstr(text, "handoff"), "%s", text);
	c->pool_saturation.kind = CS_POOL_HANDOFF;
	expect_words_of(c, CS_COND_POOL_SATURATION, "a hand-off pool");
	cs_condition_text(text, sizeof(text), c, CS_COND_POOL_SATURATION);
	cr_expect_not_null(strstr(text, "(handoff pool) ready requests waited for a pool thread"), "%s", text);
	cr_expect_not_null(strstr(text, "? (tid 0) polls"), "a poller never named: %s", text);
	free(c);
}
