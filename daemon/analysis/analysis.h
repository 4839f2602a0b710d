/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One analysis of a run: the tail (tail.h), the diagnosis's findings
 * (diagnose.h) and the conditions (attrib.h), computed once, in that
 * order, each from the ones before. A renderer calls cs_analyze once per
 * report or snapshot and reads the struct; nothing in it is formatted
 * for a reader: figures stay in their units (_ns, _us, _ms, shares) until
 * printed. Findings and conditions are enums with their names in
 * kinds.h; a finding's and a tail cause's numbers are figures
 * (figures.h); their words are the renderers' (daemon/render/words.h).
 */
#ifndef CS_ANALYSIS_H
#define CS_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>

#include "attrib.h"
#include "cost.h"
#include "diagnose.h"
#include "engine.h"
#include "kinds.h"
#include "run_meta.h"
#include "tail.h"
#include "upstream_tail.h"

/* More than every listener's findings of a real run; the rest are dropped. */
#define CS_FINDINGS_MAX 32

struct cs_analysis {
	struct cs_tail tail;                 /* at cs_tail_percentile(meta) */
	bool accept_path_negligible;         /* slow accepts are not named: the tail does not feel them */
	struct cs_finding findings[CS_FINDINGS_MAX]; /* most serious first */
	size_t finding_count;
	struct cs_conditions conditions;     /* read the flags with cs_condition_flagged */
	struct cs_cost cost;                 /* what connscope cost over the run */
	struct cs_upstream_tail upstreams;   /* each upstream's part of the tail */
};

void cs_analyze(const struct cs_engine *engine, const struct cs_report_meta *meta, struct cs_analysis *analysis);

/* Whether the analysis flags condition. */
static inline bool cs_analysis_flagged(const struct cs_analysis *analysis, enum cs_condition condition)
{
	return cs_condition_flagged(&analysis->conditions, condition);
}

#endif /* CS_ANALYSIS_H */
