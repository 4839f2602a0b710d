/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The diagnosis: one finding per problem the engine's statistics show,
 * with its numbers and advice. Pure: computed from the engine's state and
 * the run's metadata; the renderers print the findings.
 */
#ifndef CS_DIAGNOSE_H
#define CS_DIAGNOSE_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "run_meta.h"

#define CS_FINDING_CODE_LEN 32
#define CS_FINDING_TEXT_LEN 512

struct cs_finding {
	char code[CS_FINDING_CODE_LEN];   /* stable name, e.g. "backlog_full" */
	uint16_t port;                    /* listener it concerns, 0: whole run */
	char text[CS_FINDING_TEXT_LEN];   /* what was seen, with its numbers */
	char advice[CS_FINDING_TEXT_LEN]; /* what an operator can do */
};

/* Fills at most max findings, most serious first; returns how many. */
size_t cs_diagnose(const struct cs_engine *engine, const struct cs_report_meta *meta,
		   struct cs_finding *findings, size_t max);

#endif /* CS_DIAGNOSE_H */
