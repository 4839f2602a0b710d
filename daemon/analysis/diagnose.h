/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The diagnosis: one finding per problem the engine's statistics show,
 * with the numbers behind it (its words and advice are the renderers',
 * daemon/render/words.h). Pure: computed from the engine's state, the
 * run's metadata and the tail (tail.h); cs_analyze (analysis.h) runs it
 * once per report, and the renderers print its findings.
 */
#ifndef CS_DIAGNOSE_H
#define CS_DIAGNOSE_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "figures.h"
#include "kinds.h"
#include "run_meta.h"
#include "tail.h"

struct cs_finding {
	const char *code;                 /* cs_finding_name(kind), e.g. "backlog_full" */
	enum cs_finding_kind kind;
	uint16_t port;                    /* listener it concerns, 0: whole run */
	struct cs_figures figures;        /* what was seen: the numbers its sentence quotes */
};

/*
 * A listener's drops as the report gives them: cs_listener_drops, at most
 * the kernel's ListenOverflows over the run when it was read. The
 * listener's sk_drops counts more than overflows: with TCP_DEFER_ACCEPT
 * (Apache's default AcceptFilter) the kernel discards each connection's
 * bare handshake ACK, counted there too, and no queue overflowed.
 */
uint64_t cs_listener_drops_seen(const struct cs_listener_stats *l, const struct cs_report_meta *meta);
/*
 * Of those, the handshakes' last ACKs (or first data) dropped on the full
 * queue: the client believes it is connected and retransmits its data;
 * the rest were SYNs, retried after 1 s, 3 s, ...
 */
uint64_t cs_listener_ack_drops_seen(const struct cs_listener_stats *l, const struct cs_report_meta *meta);

/* Fills at most max findings, most serious first; returns how many. */
size_t cs_diagnose_tail(const struct cs_engine *engine, const struct cs_report_meta *meta,
			const struct cs_tail *tail, struct cs_finding *findings, size_t max);

/*
 * The same, computing the tail first: a wrapper over cs_analyze for the
 * callers that want the findings alone (analysis.c).
 */
size_t cs_diagnose(const struct cs_engine *engine, const struct cs_report_meta *meta,
		   struct cs_finding *findings, size_t max);

#endif /* CS_DIAGNOSE_H */
