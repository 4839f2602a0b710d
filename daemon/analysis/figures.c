// SPDX-License-Identifier: BSD-2-Clause
#include "figures.h"

#include <string.h>

static struct cs_figure *add(struct cs_figures *figures, const char *key, enum cs_figure_unit unit)
{
	if (figures->count >= CS_FIGURES_MAX) {
		if (figures->dropped < UINT8_MAX)
			figures->dropped++;
		return NULL;
	}
	struct cs_figure *figure = &figures->items[figures->count++];
	memset(figure, 0, sizeof(*figure));
	figure->key = key;
	figure->unit = unit;
	return figure;
}

void cs_figures_count(struct cs_figures *figures, const char *key, uint64_t count)
{
	struct cs_figure *figure = add(figures, key, CS_FIG_COUNT);
	if (figure)
		figure->count = count;
}

void cs_figures_ns(struct cs_figures *figures, const char *key, uint64_t ns)
{
	struct cs_figure *figure = add(figures, key, CS_FIG_NS);
	if (figure)
		figure->count = ns;
}

void cs_figures_share(struct cs_figures *figures, const char *key, double share)
{
	struct cs_figure *figure = add(figures, key, CS_FIG_SHARE);
	if (figure)
		figure->value = share;
}

void cs_figures_ratio(struct cs_figures *figures, const char *key, double value)
{
	struct cs_figure *figure = add(figures, key, CS_FIG_RATIO);
	if (figure)
		figure->value = value;
}

void cs_figures_flag(struct cs_figures *figures, const char *key, bool flag)
{
	struct cs_figure *figure = add(figures, key, CS_FIG_FLAG);
	if (figure)
		figure->count = flag;
}

void cs_figures_comm(struct cs_figures *figures, const char *key, const char *comm)
{
	struct cs_figure *figure = add(figures, key, CS_FIG_COMM);
	if (!figure)
		return;
	if (!comm || !comm[0])
		comm = "?";
	size_t len = strnlen(comm, CS_COMM_LEN - 1);
	memcpy(figure->comm, comm, len);
	figure->comm[len] = '\0';
}

void cs_figures_name(struct cs_figures *figures, const char *key, const char *name)
{
	struct cs_figure *figure = add(figures, key, CS_FIG_NAME);
	if (!figure)
		return;
	if (!name || !name[0])
		name = "?";
	size_t len = strnlen(name, CS_RUNTIME_NAME_LEN - 1);
	memcpy(figure->name, name, len);
	figure->name[len] = '\0';
}

const struct cs_figure *cs_figures_get(const struct cs_figures *figures, const char *key)
{
	for (size_t i = 0; i < figures->count; i++)
		if (!strcmp(figures->items[i].key, key))
			return &figures->items[i];
	return NULL;
}

bool cs_figure_nonzero(const struct cs_figure *figure)
{
	switch (figure->unit) {
	case CS_FIG_SHARE:
	case CS_FIG_RATIO:
		return figure->value != 0.0;
	case CS_FIG_COMM:
		return figure->comm[0] != '\0';
	case CS_FIG_NAME:
		return figure->name[0] != '\0';
	case CS_FIG_COUNT:
	case CS_FIG_NS:
	case CS_FIG_FLAG:
		break;
	}
	return figure->count != 0;
}
