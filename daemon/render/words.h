/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The words of every cause, finding and condition, one table per enum
 * (words.c), indexed by the enum: what each is (the --help texts and
 * the man pages list them), the sentence of what was seen (a template
 * over the analysis's figures, template.h) and the advice. The
 * analysis gives kinds and numbers; every renderer (the text report,
 * JSON, the live view and top, the metrics) writes its words from here.
 * Adding a kind is its numbers in the analysis and its row here; a kind
 * without its row fails the unit tests (tests/unit/render/test_words.c).
 */
#ifndef CS_WORDS_H
#define CS_WORDS_H

#include <stddef.h>
#include <stdio.h>

#include "attrib.h"
#include "diagnose.h"
#include "engine.h"
#include "kinds.h"
#include "tail.h"

/* A summary's longest: 80 columns after a name in --help (cs_words_print_kinds). */
#define CS_SUMMARY_MAX 58

/* What a cause of the tail's time is, in a line; NULL for a value out of range. */
const char *cs_cause_summary(enum cs_cause cause);
/* The template of a cause's evidence; NULL for a value out of range. */
const char *cs_cause_evidence_template(enum cs_cause cause);
/* A tail cause's evidence ("" when it has no figures); returns its length uncut. */
size_t cs_cause_evidence(char *out, size_t len, const struct cs_tail_cause *cause);
/* The template of a cause's own advice; NULL for one without (most: the conditions advise). */
const char *cs_cause_advice_template(enum cs_cause cause);
/* A tail cause's advice ("" when it has none, or no figures); returns its length uncut. */
size_t cs_cause_advice(char *out, size_t len, const struct cs_tail_cause *cause);

/* The templates of a finding: what was seen, and what an operator can do. */
const char *cs_finding_template(enum cs_finding_kind kind);
const char *cs_finding_advice_template(enum cs_finding_kind kind);
/* A finding's sentence and its advice, from its figures; each returns its length uncut. */
size_t cs_finding_text(char *out, size_t len, const struct cs_finding *finding);
size_t cs_finding_advice(char *out, size_t len, const struct cs_finding *finding);
/* Room enough for any finding's sentence or a cause's evidence. */
#define CS_SENTENCE_LEN 1024

/* What a condition is, in a line; NULL for a value out of range. */
const char *cs_condition_summary(enum cs_condition condition);
/* The template of what the run showed of a flagged condition. */
const char *cs_condition_template(enum cs_condition condition);
/* What the run showed, from the condition's figures (attrib.h: seen); returns its length uncut. */
size_t cs_condition_text(char *out, size_t len, const struct cs_conditions *conditions, enum cs_condition condition);
/* Its second line, where it has one ("" otherwise). */
size_t cs_condition_detail(char *out, size_t len, const struct cs_conditions *conditions, enum cs_condition condition);
/* The text report's advice line. */
const char *cs_condition_advice(enum cs_condition condition);
/* One short line, for 80 columns beside the name: the live view and connscope top. */
const char *cs_condition_brief(enum cs_condition condition);
/* pool_saturation's advice for a pool of kind, in server's own settings where it has them. */
const char *cs_pool_advice(enum cs_pool_kind kind, enum cs_pool_server server);
/* The same in one short line (the live view and connscope top). */
const char *cs_pool_brief(enum cs_pool_kind kind, enum cs_pool_server server);

/*
 * The flame graph's frame over a pool's threads' stacks in a wait for the
 * pool (worker_pool, accept_queue): what they did meanwhile, not the
 * request's own thread. NULL for the other causes.
 */
const char *cs_cause_pool_frame(enum cs_cause cause);

/* Every cause and condition by name with its line, for a --help text. */
void cs_words_print_kinds(FILE *out);

#endif /* CS_WORDS_H */
