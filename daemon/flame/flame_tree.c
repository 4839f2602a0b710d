// SPDX-License-Identifier: BSD-2-Clause
/* The frame tree and its folded-stack writer (see flame_tree.h). */
#include "flame_tree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void cs_flame_tree_init(struct cs_flame_tree *tree)
{
	memset(tree, 0, sizeof(*tree));
}

static void free_children(struct cs_flame_node *node)
{
	struct cs_flame_node *child = node->first_child;
	while (child) {
		struct cs_flame_node *next = child->next_sibling;
		free_children(child);
		free(child->name);
		free(child);
		child = next;
	}
	node->first_child = NULL;
}

void cs_flame_tree_free(struct cs_flame_tree *tree)
{
	free_children(&tree->root);
	memset(tree, 0, sizeof(*tree));
}

static char *clean_name(const char *name)
{
	char *copy = strdup(name && name[0] ? name : "[unnamed]");
	if (!copy)
		return NULL;
	for (char *p = copy; *p; p++) {
		if (*p == ';')
			*p = ':';
		else if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	}
	return copy;
}

/* The child of node named name (compared after cleaning), created if missing. */
static struct cs_flame_node *child_named(struct cs_flame_tree *tree, struct cs_flame_node *node, const char *name)
{
	char *clean = clean_name(name);
	if (!clean)
		return NULL;
	for (struct cs_flame_node *child = node->first_child; child; child = child->next_sibling)
		if (!strcmp(child->name, clean)) {
			free(clean);
			return child;
		}
	struct cs_flame_node *child = calloc(1, sizeof(*child));
	if (!child) {
		free(clean);
		return NULL;
	}
	child->name = clean;
	child->next_sibling = node->first_child;
	node->first_child = child;
	node->child_count++;
	tree->nodes++;
	return child;
}

int cs_flame_tree_add(struct cs_flame_tree *tree, const char *const *frames, size_t n, uint64_t weight_ns)
{
	if (!weight_ns)
		return 0;
	/* Find or make the whole path first, so that a failure adds nothing. */
	struct cs_flame_node *path[n ? n : 1];
	struct cs_flame_node *node = &tree->root;
	for (size_t i = 0; i < n; i++) {
		node = child_named(tree, node, frames[i]);
		if (!node) {
			tree->failed += weight_ns;
			return -ENOMEM;
		}
		path[i] = node;
	}
	tree->root.total_ns += weight_ns;
	for (size_t i = 0; i < n; i++)
		path[i]->total_ns += weight_ns;
	if (n)
		path[n - 1]->self_ns += weight_ns;
	else
		tree->root.self_ns += weight_ns;
	if (n > tree->max_depth)
		tree->max_depth = n;
	return 0;
}

static int cmp_node_name(const void *a, const void *b)
{
	const struct cs_flame_node *x = *(const struct cs_flame_node *const *)a;
	const struct cs_flame_node *y = *(const struct cs_flame_node *const *)b;
	return strcmp(x->name, y->name);
}

static void sort_node(struct cs_flame_node *node)
{
	if (node->child_count > 1) {
		struct cs_flame_node **children = malloc(node->child_count * sizeof(struct cs_flame_node *));
		if (children) { /* out of memory: the order stays as it was */
			size_t n = 0;
			for (struct cs_flame_node *c = node->first_child; c; c = c->next_sibling)
				children[n++] = c;
			qsort(children, n, sizeof(struct cs_flame_node *), cmp_node_name);
			for (size_t i = 0; i < n; i++)
				children[i]->next_sibling = i + 1 < n ? children[i + 1] : NULL;
			node->first_child = children[0];
			free(children);
		}
	}
	for (struct cs_flame_node *c = node->first_child; c; c = c->next_sibling)
		sort_node(c);
}

void cs_flame_tree_sort(struct cs_flame_tree *tree)
{
	sort_node(&tree->root);
}

/* ---- folded stacks ---------------------------------------------------------- */

struct folded {
	FILE *out;
	char *path;             /* "a;b;c" of the current node */
	size_t len, cap;
	uint64_t cum_ns;        /* leaf time written so far, exact */
	uint64_t written_us;    /* ... and as rounded into the lines */
	int err;
};

static int path_push(struct folded *f, const char *name, size_t *saved_len)
{
	size_t need = f->len + strlen(name) + 2;
	if (need > f->cap) {
		size_t cap = f->cap ? f->cap : 256;
		while (cap < need)
			cap *= 2;
		char *grown = realloc(f->path, cap);
		if (!grown)
			return -ENOMEM;
		f->path = grown;
		f->cap = cap;
	}
	*saved_len = f->len;
	if (f->len)
		f->path[f->len++] = ';';
	strcpy(f->path + f->len, name);
	f->len += strlen(name);
	return 0;
}

static void folded_node(struct folded *f, const struct cs_flame_node *node)
{
	if (f->err)
		return;
	if (node->self_ns) {
		f->cum_ns += node->self_ns;
		uint64_t upto_us = (f->cum_ns + 500) / 1000;
		uint64_t weight_us = upto_us - f->written_us;
		if (weight_us) {
			if (fprintf(f->out, "%s %llu\n", f->path, (unsigned long long)weight_us) < 0) {
				f->err = -EIO;
				return;
			}
			f->written_us = upto_us;
		}
	}
	for (const struct cs_flame_node *c = node->first_child; c; c = c->next_sibling) {
		size_t saved;
		if (path_push(f, c->name, &saved)) {
			f->err = -ENOMEM;
			return;
		}
		folded_node(f, c);
		f->len = saved;
		f->path[f->len] = '\0';
	}
}

int cs_flame_write_folded(FILE *out, const struct cs_flame_tree *tree)
{
	struct folded f = { .out = out };
	if (path_push(&f, "", &(size_t){ 0 }))
		return -ENOMEM;
	f.len = 0;
	f.path[0] = '\0';
	/* The root has no name: its own time (none, in practice) is not a line. */
	struct cs_flame_node root = tree->root;
	root.self_ns = 0;
	folded_node(&f, &root);
	free(f.path);
	if (!f.err && fflush(out))
		f.err = -errno;
	return f.err;
}
