// SPDX-License-Identifier: BSD-2-Clause
#include "template.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "units.h"

struct sink {
	char *buf;
	size_t len;
	size_t used;    /* what the whole sentence takes, cut or not */
};

static void put(struct sink *s, const char *text, size_t n)
{
	if (s->used + 1 < s->len) {
		size_t room = s->len - 1 - s->used;
		memcpy(s->buf + s->used, text, n < room ? n : room);
	}
	s->used += n;
}

__attribute__((format(printf, 2, 3)))
static void put_fmt(struct sink *s, const char *fmt, ...)
{
	char text[64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(s, text, (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1);
}

/* The figure's value, with decimals (-1: its unit's default). */
static void put_value(struct sink *s, const struct cs_figure *figure, int decimals)
{
	char duration[32];
	switch (figure->unit) {
	case CS_FIG_COUNT:
		put_fmt(s, "%llu", (unsigned long long)figure->count);
		break;
	case CS_FIG_NS:
		cs_format_duration(duration, sizeof(duration), figure->count);
		put(s, duration, strlen(duration));
		break;
	case CS_FIG_SHARE:
		put_fmt(s, "%.*f", decimals < 0 ? 0 : decimals, figure->value * 100.0);
		break;
	case CS_FIG_RATIO:
		put_fmt(s, "%.*f", decimals < 0 ? 1 : decimals, figure->value);
		break;
	case CS_FIG_FLAG:
		put_fmt(s, "%s", figure->count ? "yes" : "no");
		break;
	case CS_FIG_COMM:
		put(s, figure->comm, strlen(figure->comm));
		break;
	case CS_FIG_NAME:
		put(s, figure->name, strlen(figure->name));
		break;
	}
}

static const struct cs_figure *lookup(const struct cs_figures *figures, const char *key, size_t key_len)
{
	char name[64];
	if (key_len >= sizeof(name))
		return NULL;
	memcpy(name, key, key_len);
	name[key_len] = '\0';
	return cs_figures_get(figures, name);
}

/* "{key}" or "{key:N}" at t (after its '{'); returns the character after its '}'. */
static const char *put_figure(struct sink *s, const char *t, const char *end, const struct cs_figures *figures)
{
	const char *close = memchr(t, '}', (size_t)(end - t));
	if (!close) {
		put(s, t - 1, (size_t)(end - t) + 1);
		return end;
	}
	const char *colon = memchr(t, ':', (size_t)(close - t));
	const char *key_end = colon ? colon : close;
	const struct cs_figure *figure = lookup(figures, t, (size_t)(key_end - t));
	if (figure) {
		put_value(s, figure, colon ? atoi(colon + 1) : -1);
	} else {
		put(s, "{", 1);
		put(s, t, (size_t)(key_end - t));
		put(s, "?}", 2);
	}
	return close + 1;
}

/* The ']' that closes the section whose text starts at t, or end. */
static const char *section_end(const char *t, const char *end)
{
	int depth = 0;
	for (; t < end; t++) {
		if (*t == '[')
			depth++;
		else if (*t == ']' && depth-- == 0)
			return t;
	}
	return end;
}

static void expand(struct sink *s, const char *t, const char *end, const struct cs_figures *figures);

/* "[+key|...]" at t (after its '['); returns the character after its ']'. */
static const char *put_section(struct sink *s, const char *t, const char *end, const struct cs_figures *figures)
{
	char gate = *t;
	const char *bar = memchr(t, '|', (size_t)(end - t));
	if ((gate != '+' && gate != '?' && gate != '!') || !bar) {
		put(s, t - 1, 1);
		return t;
	}
	const char *close = section_end(bar + 1, end);
	const struct cs_figure *figure = lookup(figures, t + 1, (size_t)(bar - t - 1));
	bool nonzero = figure && cs_figure_nonzero(figure);
	bool shown = gate == '+' ? nonzero : gate == '?' ? figure != NULL : !nonzero;
	if (shown)
		expand(s, bar + 1, close, figures);
	return close < end ? close + 1 : end;
}

static void expand(struct sink *s, const char *t, const char *end, const struct cs_figures *figures)
{
	while (t < end) {
		const char *next = t;
		while (next < end && *next != '{' && *next != '[')
			next++;
		put(s, t, (size_t)(next - t));
		if (next == end)
			return;
		t = *next == '{' ? put_figure(s, next + 1, end, figures) : put_section(s, next + 1, end, figures);
	}
}

size_t cs_template_expand(char *out, size_t len, const char *template, const struct cs_figures *figures)
{
	struct sink s = { .buf = out, .len = len };
	if (template)
		expand(&s, template, template + strlen(template), figures);
	if (len)
		out[s.used < len ? s.used : len - 1] = '\0';
	return s.used;
}

json_t *cs_figures_value(const struct cs_figures *figures)
{
	json_t *o = json_object();
	for (size_t i = 0; i < figures->count; i++) {
		const struct cs_figure *f = &figures->items[i];
		char key[72];
		json_t *value = NULL;
		snprintf(key, sizeof(key), "%s%s", f->key, f->unit == CS_FIG_NS ? "_us" : "");
		switch (f->unit) {
		case CS_FIG_COUNT:
			value = json_integer((json_int_t)f->count);
			break;
		case CS_FIG_NS:
			value = cs_json_us(f->count);
			break;
		case CS_FIG_SHARE:
			value = cs_json_4(f->value);
			break;
		case CS_FIG_RATIO:
			value = cs_json_3(f->value);
			break;
		case CS_FIG_FLAG:
			value = json_boolean(f->count);
			break;
		case CS_FIG_COMM:
			value = cs_json_text(f->comm);
			break;
		case CS_FIG_NAME:
			value = cs_json_text(f->name);
			break;
		}
		/* The first of a key twice, as the templates read it. */
		if (!json_object_get(o, key))
			json_object_set_new(o, key, value);
		else
			json_decref(value);
	}
	return o;
}
