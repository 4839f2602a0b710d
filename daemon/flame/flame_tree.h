/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A tree of stack frames with their time, root to leaf, and its writers:
 * folded stacks ("a;b;c weight", weights in microseconds, as flamegraph.pl,
 * inferno and speedscope read them) and a self-contained SVG
 * (flame_svg.c). Pure: the writers take a FILE * and do nothing else.
 */
#ifndef CS_FLAME_TREE_H
#define CS_FLAME_TREE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct cs_flame_node {
	char *name;
	uint64_t total_ns;       /* this frame, with everything above it */
	uint64_t self_ns;        /* this frame as the leaf */
	struct cs_flame_node *first_child;
	struct cs_flame_node *next_sibling;
	size_t child_count;
};

struct cs_flame_tree {
	struct cs_flame_node root;   /* unnamed; its total is the whole graph */
	size_t nodes;
	size_t max_depth;            /* frames on the longest path */
	uint64_t failed;             /* weights not added: out of memory */
};

void cs_flame_tree_init(struct cs_flame_tree *tree);
void cs_flame_tree_free(struct cs_flame_tree *tree);

/*
 * Adds weight_ns along frames[0] (root side) .. frames[n-1] (leaf). A ';'
 * or a control character in a name becomes ':' or ' ' (they would break
 * the folded format). Returns 0 or -ENOMEM (then counted in failed).
 */
int cs_flame_tree_add(struct cs_flame_tree *tree, const char *const *frames, size_t n, uint64_t weight_ns);

/* Orders every node's children by name, as flame graphs draw them. */
void cs_flame_tree_sort(struct cs_flame_tree *tree);

/*
 * Folded stacks, one line per distinct path with leaf time: "a;b;c N",
 * N in microseconds. Rounded cumulatively, so the lines add up to the
 * tree's total rounded to a microsecond. Returns 0 or -errno.
 */
int cs_flame_write_folded(FILE *out, const struct cs_flame_tree *tree);

struct cs_flame_svg_options {
	const char *title;
	const char *subtitle;        /* one line under the title, may be NULL */
	unsigned int width_px;       /* 0: 1200 */
	size_t context_depth;        /* frames above the root that are context, not code */
};

/* The interactive SVG (see flame_svg.c). Returns 0 or -errno. */
int cs_flame_write_svg(FILE *out, const struct cs_flame_tree *tree, const struct cs_flame_svg_options *options);

#endif /* CS_FLAME_TREE_H */
