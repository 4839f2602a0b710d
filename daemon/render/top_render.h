/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * connscope top's layout: a model (daemon/render/top_model.h) drawn into a grid
 * of cells, each one glyph with one attribute. The ncurses front end copies
 * the grid to the terminal; `top --once` prints it as text. Pure code, so
 * the layout at any size (80x24 included) is unit-tested.
 */
#ifndef CS_TOP_RENDER_H
#define CS_TOP_RENDER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "top_model.h"

enum cs_top_attr {
	CS_TOP_NORMAL,
	CS_TOP_TITLE,   /* the title and key lines */
	CS_TOP_HEADER,  /* section headings */
	CS_TOP_GOOD,
	CS_TOP_WARN,    /* flagged conditions, backlog near full */
	CS_TOP_BAD,     /* drops, lost events */
	CS_TOP_BAR,     /* the filled part of a bar, the sparkline */
	CS_TOP_DIM,
	CS_TOP_ATTR_COUNT,
};

enum cs_top_sort { CS_TOP_SORT_REQUESTS, CS_TOP_SORT_ACCEPTS, CS_TOP_SORT_RUNQ, CS_TOP_SORT_BUSY,
		   CS_TOP_SORT_COUNT };
extern const char *const cs_top_sort_names[CS_TOP_SORT_COUNT];

struct cs_top_ui {
	enum cs_top_sort sort;
	bool paused;
	bool help;
	bool unicode;         /* block glyphs for the sparkline; ASCII otherwise */
	bool once;            /* one frame to print: no key line, the status below the content */
	char status[640];     /* the bottom line's message: source, errors */
};

struct cs_top_cell {
	char glyph[4];        /* UTF-8, one column wide */
	uint8_t len;
	uint8_t attr;         /* enum cs_top_attr */
};

struct cs_top_screen {
	int rows, cols;
	struct cs_top_cell *cells;  /* rows * cols */
	int used_rows;              /* rows drawn on (the rest is blank) */
};

/* rows and cols are clamped to 1..500. Returns 0 or -ENOMEM. */
int cs_top_screen_init(struct cs_top_screen *screen, int rows, int cols);
void cs_top_screen_free(struct cs_top_screen *screen);

void cs_top_render(struct cs_top_screen *screen, const struct cs_top_model *model, const struct cs_top_ui *ui);

/*
 * The grid as text, trailing blanks and blank rows dropped; with ansi,
 * attributes as SGR colour codes.
 */
void cs_top_screen_print(const struct cs_top_screen *screen, FILE *out, bool ansi);

/* Row r as plain text (tests): at most len - 1 bytes. */
void cs_top_screen_row(const struct cs_top_screen *screen, int row, char *buf, size_t len);

#endif /* CS_TOP_RENDER_H */
