/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * connscope top's screen: the model of the latest frame
 * (daemon/render/top_model.h) laid out by daemon/render/top_render.h, put
 * on the terminal with curses, and the keys that change what it shows.
 */
#ifndef CS_CLI_TOP_VIEW_H
#define CS_CLI_TOP_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "top_model.h"
#include "top_render.h"

struct top_view {
	struct cs_top_model *model;
	struct cs_top_ui ui;
	struct cs_top_screen screen;
	bool color;
	double tail;
};

/* A model for tail (0, or -1 after saying "out of memory"). */
int top_view_init(struct top_view *v, double tail);
void top_view_free(struct top_view *v);

/*
 * Read one frame's JSON, from the daemon, into the model; false (ui.status
 * says where the JSON broke) when it is unreadable.
 */
bool top_view_take(struct top_view *v, const char *json, size_t len);
/* The same for a snapshot built in-process (NULL: out of memory, said in ui.status). */
bool top_view_take_value(struct top_view *v, const json_t *snapshot);

/* One frame as text on stdout (--once). */
void top_view_print_once(struct top_view *v);

/* The full screen: curses on, colours when wanted; then frames; then off. */
void top_view_start(struct top_view *v);
void top_view_draw(struct top_view *v);
void top_view_end(void);

/* A key: true to go on, false to quit; *tail_changed when t picked another percentile. */
bool top_view_key(struct top_view *v, int key, bool *tail_changed);

#endif /* CS_CLI_TOP_VIEW_H */
