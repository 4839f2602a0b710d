/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A sentence from a template and the figures behind it (figures.h): the
 * words of the findings and of the tail's evidence (words.c) are such
 * templates, so the analysis gives numbers and each kind's words are one
 * string here. The syntax, all of it:
 *
 *   {key}       the figure's value in its unit: a count; a duration
 *               ("5.0 ms"); a share as a percentage without its "%"
 *               (0 decimals); a ratio (1 decimal); a comm
 *   {key:N}     the same with N decimals (shares and ratios)
 *   [+key|...]  what is between '|' and the matching ']' only when key
 *               is there and not zero
 *   [?key|...]  only when key is there (a figure the analysis gives
 *               only where it is known)
 *   [!key|...]  only when key is missing or zero
 *
 * Sections nest. Everything else is copied as it is. A key the figures
 * lack prints as "{key?}" (a template out of step with its analysis: the
 * unit tests render every kind).
 */
#ifndef CS_TEMPLATE_H
#define CS_TEMPLATE_H

#include <jansson.h>
#include <stddef.h>

#include "figures.h"

/* Writes the sentence into out (len bytes, cut to fit, always terminated); returns its length uncut. */
size_t cs_template_expand(char *out, size_t len, const char *template, const struct cs_figures *figures);

/* The figures as one JSON object: key: value, durations as key_us in microseconds. */
json_t *cs_figures_value(const struct cs_figures *figures);

#endif /* CS_TEMPLATE_H */
