// SPDX-License-Identifier: BSD-2-Clause
#include "top_view.h"

#include <curses.h>
#include <errno.h>
#include <langinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What the t key steps through. */
static const double tail_cycle[] = { 99.0, 99.9, 90.0 };
#define TAIL_CYCLE_LEN (sizeof(tail_cycle) / sizeof(tail_cycle[0]))

static bool want_color(void)
{
	return isatty(STDOUT_FILENO) && getenv("NO_COLOR") == NULL;
}

static bool utf8_locale(void)
{
	const char *codeset = nl_langinfo(CODESET);
	return codeset && !strcmp(codeset, "UTF-8");
}

int top_view_init(struct top_view *v, double tail)
{
	memset(v, 0, sizeof(*v));
	v->tail = tail;
	v->model = calloc(1, sizeof(*v->model));
	if (!v->model) {
		fprintf(stderr, "connscope: out of memory\n");
		return -1;
	}
	v->model->tail_percentile = tail;
	v->ui.unicode = utf8_locale();
	return 0;
}

void top_view_free(struct top_view *v)
{
	cs_top_screen_free(&v->screen);
	free(v->model);
	v->model = NULL;
}

bool top_view_take(struct top_view *v, const char *json, size_t len)
{
	if (v->ui.paused)
		return true;
	return cs_top_model_read(v->model, json, len, "the daemon's snapshot", v->ui.status, sizeof(v->ui.status)) == 0;
}

bool top_view_take_value(struct top_view *v, const json_t *snapshot)
{
	if (v->ui.paused)
		return true;
	if (!snapshot) {
		snprintf(v->ui.status, sizeof(v->ui.status), "out of memory for the frame");
		return false;
	}
	cs_top_model_from_value(v->model, snapshot);
	return true;
}

void top_view_print_once(struct top_view *v)
{
	if (cs_top_screen_init(&v->screen, 200, 80))
		return;
	v->ui.once = true;
	cs_top_render(&v->screen, v->model, &v->ui);
	cs_top_screen_print(&v->screen, stdout, want_color());
	cs_top_screen_free(&v->screen);
}

void top_view_start(struct top_view *v)
{
	initscr();
	cbreak();
	noecho();
	nodelay(stdscr, TRUE);
	keypad(stdscr, TRUE);
	curs_set(0);
	v->color = want_color() && has_colors();
	if (v->color) {
		start_color();
		use_default_colors();
		init_pair(1, COLOR_GREEN, -1);
		init_pair(2, COLOR_YELLOW, -1);
		init_pair(3, COLOR_RED, -1);
		init_pair(4, COLOR_CYAN, -1);
	}
}

void top_view_end(void)
{
	endwin();
}

static int attr_of(uint8_t attr, bool color)
{
	switch (attr) {
	case CS_TOP_TITLE:
		return A_REVERSE;
	case CS_TOP_HEADER:
		return A_BOLD;
	case CS_TOP_GOOD:
		return color ? COLOR_PAIR(1) : A_NORMAL;
	case CS_TOP_WARN:
		return color ? COLOR_PAIR(2) | A_BOLD : A_BOLD;
	case CS_TOP_BAD:
		return color ? COLOR_PAIR(3) | A_BOLD : A_BOLD;
	case CS_TOP_BAR:
		return color ? COLOR_PAIR(4) : A_NORMAL;
	case CS_TOP_DIM:
		return A_DIM;
	default:
		return A_NORMAL;
	}
}

void top_view_draw(struct top_view *v)
{
	int rows = LINES, cols = COLS;
	if (v->screen.rows != rows || v->screen.cols != cols) {
		cs_top_screen_free(&v->screen);
		if (cs_top_screen_init(&v->screen, rows, cols))
			return;
	}
	cs_top_render(&v->screen, v->model, &v->ui);
	erase();
	for (int r = 0; r < v->screen.rows && r < rows; r++) {
		for (int c = 0; c < v->screen.cols && c < cols; c++) {
			const struct cs_top_cell *cell = &v->screen.cells[(size_t)r * (size_t)v->screen.cols + (size_t)c];
			/* The bottom-right cell would scroll the screen: leave it. */
			if (r == rows - 1 && c == cols - 1)
				break;
			attrset(attr_of(cell->attr, v->color));
			mvaddnstr(r, c, cell->glyph, cell->len);
		}
	}
	attrset(A_NORMAL);
	refresh();
}

static void next_tail(struct top_view *v)
{
	size_t next = 0;
	for (size_t i = 0; i < TAIL_CYCLE_LEN; i++)
		if (tail_cycle[i] == v->tail)
			next = (i + 1) % TAIL_CYCLE_LEN;
	v->tail = tail_cycle[next];
	v->model->tail_percentile = v->tail;
}

bool top_view_key(struct top_view *v, int key, bool *tail_changed)
{
	if (key == 'q' || key == 'Q')
		return false;
	if (v->ui.help) {
		v->ui.help = false; /* any key closes the help */
		return true;
	}
	switch (key) {
	case 'p':
	case 'P':
	case ' ':
		v->ui.paused = !v->ui.paused;
		break;
	case 's':
	case 'S':
		v->ui.sort = (enum cs_top_sort)((v->ui.sort + 1) % CS_TOP_SORT_COUNT);
		break;
	case 't':
	case 'T':
		next_tail(v);
		*tail_changed = true;
		break;
	case '?':
	case 'h':
		v->ui.help = true;
		break;
	default:
		break;
	}
	return true;
}
