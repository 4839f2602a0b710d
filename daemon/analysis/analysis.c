// SPDX-License-Identifier: BSD-2-Clause
/*
 * The analysis pass, and the entry points that want one part of it
 * (cs_diagnose, cs_compute_conditions): wrappers over the same pass, so
 * that every output agrees with every other.
 */
#include "analysis.h"

#include <string.h>

void cs_analyze(const struct cs_engine *engine, const struct cs_report_meta *meta, struct cs_analysis *analysis)
{
	cs_compute_run_tail(engine, meta, &analysis->tail);
	analysis->accept_path_negligible = cs_tail_accept_path_negligible(&analysis->tail);
	analysis->finding_count = cs_diagnose_tail(engine, meta, &analysis->tail, analysis->findings, CS_FINDINGS_MAX);
	cs_conditions_from(engine, meta, &analysis->tail, analysis->findings, analysis->finding_count,
			   &analysis->conditions);
	cs_cost_of(engine, meta, &analysis->cost);
	cs_upstream_tail_scan(engine, &analysis->tail, &analysis->upstreams);
}

size_t cs_diagnose(const struct cs_engine *engine, const struct cs_report_meta *meta,
		   struct cs_finding *findings, size_t max)
{
	struct cs_analysis analysis;
	cs_analyze(engine, meta, &analysis);
	size_t n = analysis.finding_count < max ? analysis.finding_count : max;
	memcpy(findings, analysis.findings, n * sizeof(*findings));
	return n;
}

void cs_compute_conditions(const struct cs_engine *engine, const struct cs_report_meta *meta,
			   struct cs_conditions *conditions)
{
	struct cs_analysis analysis;
	cs_analyze(engine, meta, &analysis);
	*conditions = analysis.conditions;
}
