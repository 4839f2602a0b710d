/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A figure of an analysis (figures.h) in a test: fails the test when the
 * analysis did not give it, or gave it in another unit.
 *
 *   cr_assert_eq(figure_count(&finding->figures, "drops"), 500);
 */
#ifndef CS_TEST_FIGURES_CHECK_H
#define CS_TEST_FIGURES_CHECK_H

#include <criterion/criterion.h>

#include "figures.h"

static inline const struct cs_figure *figure_of(const struct cs_figures *figures, const char *key,
						enum cs_figure_unit unit)
{
	const struct cs_figure *figure = cs_figures_get(figures, key);
	cr_assert_not_null(figure, "no figure %s", key);
	cr_assert_eq(figure->unit, unit, "figure %s: unit %d, want %d", key, figure->unit, unit);
	return figure;
}

/* A count's, a duration's (CS_FIG_NS) value. */
static inline uint64_t figure_count(const struct cs_figures *figures, const char *key)
{
	return figure_of(figures, key, CS_FIG_COUNT)->count;
}

static inline uint64_t figure_ns(const struct cs_figures *figures, const char *key)
{
	return figure_of(figures, key, CS_FIG_NS)->count;
}

static inline double figure_share(const struct cs_figures *figures, const char *key)
{
	return figure_of(figures, key, CS_FIG_SHARE)->value;
}

#endif /* CS_TEST_FIGURES_CHECK_H */
