/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The numbers behind a sentence: a finding's, a tail cause's evidence.
 * The analysis fills them, key by key, in their units; the renderers
 * write the words from a template per kind that names the keys
 * (daemon/render/words.h), and the JSON carries them as they are. A
 * key is an identifier ("accept_wait_p99"), never prose.
 */
#ifndef CS_FIGURES_H
#define CS_FIGURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

enum cs_figure_unit {
	CS_FIG_COUNT,  /* a count, a port, a tid, a size in bytes */
	CS_FIG_NS,     /* a duration in nanoseconds (JSON: the key with "_us", in microseconds) */
	CS_FIG_SHARE,  /* a share in [0, 1] (printed as a percentage) */
	CS_FIG_RATIO,  /* a mean or a rate */
	CS_FIG_FLAG,   /* yes or no */
	CS_FIG_COMM,   /* a thread's command name, as the kernel gave it */
	CS_FIG_NAME,   /* a longer name: a JVM's for a thread, a VM operation's */
};

struct cs_figure {
	const char *key;
	enum cs_figure_unit unit;
	union {
		uint64_t count;        /* CS_FIG_COUNT, CS_FIG_NS, CS_FIG_FLAG (0 or 1) */
		double value;          /* CS_FIG_SHARE, CS_FIG_RATIO */
		char comm[CS_COMM_LEN];
		char name[CS_RUNTIME_NAME_LEN];
	};
};

/* More than the most figures of any kind (connection_limit's 14). */
#define CS_FIGURES_MAX 20

struct cs_figures {
	struct cs_figure items[CS_FIGURES_MAX];
	uint8_t count;
	uint8_t dropped;   /* figures past CS_FIGURES_MAX: a kind that outgrew the bound (unit-tested 0) */
};

/* Each adds key with its value; a key added twice keeps both (the template reads the first). */
void cs_figures_count(struct cs_figures *figures, const char *key, uint64_t count);
void cs_figures_ns(struct cs_figures *figures, const char *key, uint64_t ns);
void cs_figures_share(struct cs_figures *figures, const char *key, double share);
void cs_figures_ratio(struct cs_figures *figures, const char *key, double value);
void cs_figures_flag(struct cs_figures *figures, const char *key, bool flag);
/* An empty comm is kept as "?": a thread whose name was never seen. */
void cs_figures_comm(struct cs_figures *figures, const char *key, const char *comm);
/* The same for a name of up to CS_RUNTIME_NAME_LEN - 1 bytes (longer: cut there). */
void cs_figures_name(struct cs_figures *figures, const char *key, const char *name);

/* The figure of key, NULL when the analysis did not give it. */
const struct cs_figure *cs_figures_get(const struct cs_figures *figures, const char *key);
/* Whether it is non-zero (a comm: not empty). */
bool cs_figure_nonzero(const struct cs_figure *figure);

#endif /* CS_FIGURES_H */
