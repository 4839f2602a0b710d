/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What connscope cost (analysis/cost.h), as every output shows it: one
 * line for the text report, `record` and `status`; a JSON object for the
 * JSON report, the snapshot, `top` and `status`.
 */
#ifndef CS_COST_RENDER_H
#define CS_COST_RENDER_H

#include <jansson.h>
#include <stddef.h>

#include "cost.h"
#include "engine.h"

/*
 * "BPF 1.9 us per request, 4.1 us per connection (0.420 s in 1234567 runs);
 * connscope 1.3% of one CPU", or why a figure is missing.
 */
void cs_cost_line(char *buf, size_t len, const struct cs_cost *cost);

/*
 * A time per request or connection, to three or four figures ("2690 ns",
 * "13.5 us", "18.69 ms"); "-" when there was none to share it (ns < 0).
 */
void cs_cost_format_ns(char *buf, size_t len, double ns);

/*
 * The JSON report's "cost": the figures (null when not recorded or not
 * measured) and, with programs, each program's calls, ns per call and
 * total ns from the engine's sums.
 */
json_t *cs_cost_value(const struct cs_cost_stats *bpf_cost, const struct cs_cost *cost, bool programs);

#endif /* CS_COST_RENDER_H */
