// SPDX-License-Identifier: BSD-2-Clause
/* Tests of the frame tree and its writers: folded stacks and the SVG (daemon/flame/flame_tree.c, flame_svg.c). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flame_tree.h"

static struct cs_flame_tree tree;

static void setup(void)
{
	cs_flame_tree_init(&tree);
}

static void teardown(void)
{
	cs_flame_tree_free(&tree);
}

TestSuite(flame_tree, .init = setup, .fini = teardown);

#define ADD(weight, ...)                                                                         \
	do {                                                                                     \
		const char *frames_[] = { __VA_ARGS__ };                                         \
		cr_assert_eq(cs_flame_tree_add(&tree, frames_, sizeof(frames_) / sizeof(frames_[0]), \
					       (weight)), 0);                                    \
	} while (0)

/* What a writer produced, as one string. */
static char *render(int (*writer)(FILE *, const struct cs_flame_tree *))
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	cr_assert_eq(writer(out, &tree), 0);
	fclose(out);
	return text;
}

static int write_svg(FILE *out, const struct cs_flame_tree *t)
{
	struct cs_flame_svg_options options = { .title = "t <&> \"q\"", .subtitle = "sub", .context_depth = 2 };
	return cs_flame_write_svg(out, t, &options);
}

/* Sum of the weights of folded lines; each line must be "frames N". */
static unsigned long long folded_sum(const char *text, size_t *lines)
{
	unsigned long long sum = 0;
	*lines = 0;
	for (const char *line = text; *line;) {
		const char *end = strchr(line, '\n');
		cr_assert_not_null(end, "every line ends with a newline");
		const char *space = end;
		while (space > line && space[-1] != ' ')
			space--;
		cr_assert_gt(space - line, 1, "a line has frames and a weight");
		char *after;
		unsigned long long weight = strtoull(space, &after, 10);
		cr_assert_eq(after, end, "the weight is the last field: %.*s", (int)(end - line), line);
		cr_assert_gt(weight, 0, "no line of weight 0");
		sum += weight;
		(*lines)++;
		line = end + 1;
	}
	return sum;
}

Test(flame_tree, totals_add_up_along_paths)
{
	ADD(3000, "a", "b", "c");
	ADD(2000, "a", "b");
	ADD(5000, "a", "d");
	ADD(1000, "e");
	cr_assert_eq(tree.root.total_ns, 11000);
	cr_assert_eq(tree.max_depth, 3);
	const struct cs_flame_node *a = NULL;
	for (const struct cs_flame_node *n = tree.root.first_child; n; n = n->next_sibling)
		if (!strcmp(n->name, "a"))
			a = n;
	cr_assert_not_null(a);
	cr_assert_eq(a->total_ns, 10000);
	cr_assert_eq(a->self_ns, 0);
	cr_assert_eq(a->child_count, 2);
	cr_assert_eq(tree.nodes, 5);
}

Test(flame_tree, folded_lines_in_microseconds)
{
	ADD(3000, "a", "b", "c");
	ADD(2000, "a", "b");
	ADD(5000, "a", "d");
	cs_flame_tree_sort(&tree);
	char *text = render(cs_flame_write_folded);
	cr_assert_str_eq(text, "a;b 2\na;b;c 3\na;d 5\n");
	free(text);
}

Test(flame_tree, rounding_is_cumulative_so_the_lines_add_up)
{
	/* 7 paths of 400 ns: 2.8 us in all; rounded one by one every line would be 0 */
	char names[7][16]; /* room for any int: gcc -O1 (the ASan build) checks */
	for (int i = 0; i < 7; i++) {
		snprintf(names[i], sizeof(names[i]), "f%d", i);
		ADD(400, "root", names[i]);
	}
	ADD(1234567, "big");
	char *text = render(cs_flame_write_folded);
	size_t lines;
	unsigned long long sum = folded_sum(text, &lines);
	cr_assert_eq(sum, (tree.root.total_ns + 500) / 1000, "sum %llu us of %llu ns", sum,
		     (unsigned long long)tree.root.total_ns);
	cr_assert_lt(lines, 8, "zero-weight lines are left out");
	free(text);
}

Test(flame_tree, names_cannot_break_the_format)
{
	ADD(5000, "ns::f;g", "line\nbreak", "");
	char *text = render(cs_flame_write_folded);
	cr_assert_str_eq(text, "ns::f:g;line break;[unnamed] 5\n");
	free(text);
}

Test(flame_tree, sorted_by_name)
{
	ADD(1000, "zeta");
	ADD(1000, "alpha");
	ADD(1000, "mu");
	cs_flame_tree_sort(&tree);
	cr_assert_str_eq(tree.root.first_child->name, "alpha");
	cr_assert_str_eq(tree.root.first_child->next_sibling->name, "mu");
	cr_assert_str_eq(tree.root.first_child->next_sibling->next_sibling->name, "zeta");
}

static size_t count(const char *text, const char *needle)
{
	size_t n = 0;
	for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

Test(flame_tree, svg_has_a_frame_per_node_escaped_and_self_contained)
{
	ADD(6000000, "csserver (pid 1)", "event_loop", "handle_<block>&");
	ADD(4000000, "csserver (pid 1)", "handler", "spin");
	ADD(1, "csserver (pid 1)", "tiny"); /* far below a pixel: not drawn */
	cs_flame_tree_sort(&tree);
	char *svg = render(write_svg);

	cr_assert(strstr(svg, "<?xml ") == svg);
	cr_assert_eq(count(svg, "<svg "), 1);
	cr_assert_eq(count(svg, "</svg>"), 1);
	/* all, csserver, event_loop, handle_.., handler, spin */
	cr_assert_eq(count(svg, "<g class=\"f\""), 6, "frames:\n%s", svg);
	cr_assert_eq(count(svg, "tiny"), 0);
	cr_assert_neq(strstr(svg, "handle_&lt;block&gt;&amp; (6 ms, 60.00%)</title>"), NULL);
	cr_assert_neq(strstr(svg, "t &lt;&amp;&gt; &quot;q&quot;"), NULL, "the title is escaped");
	cr_assert_eq(count(svg, "<block>"), 0);
	/* interactive, and nothing from outside */
	cr_assert_eq(count(svg, "<script"), 1);
	cr_assert_neq(strstr(svg, "Search"), NULL);
	cr_assert_eq(count(svg, "href"), 0);
	cr_assert_eq(count(svg, "http://"), count(svg, "http://www.w3.org/"), "namespaces only (SVG, XHTML)");
	cr_assert_neq(strstr(svg, "<input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"search\""), NULL,
		      "a search box");
	cr_assert_eq(count(svg, "https://"), 0);
	free(svg);
}

Test(flame_tree, svg_labels_fit_their_frames)
{
	/* A wide frame shows its whole name, a narrow one a cut name or none. */
	ADD(990000, "a_rather_long_function_name_for_the_wide_frame");
	ADD(10000, "another_rather_long_function_name_in_a_narrow_frame");
	char *svg = render(write_svg);
	cr_assert_neq(strstr(svg, ">a_rather_long_function_name_for_the_wide_frame</text>"), NULL);
	cr_assert_eq(strstr(svg, ">another_rather_long_function_name_in_a_narrow_frame</text>"), NULL);
	free(svg);
}

Test(flame_tree, an_empty_tree_is_an_empty_graph)
{
	char *folded = render(cs_flame_write_folded);
	cr_assert_str_eq(folded, "");
	free(folded);
	char *svg = render(write_svg);
	cr_assert_eq(count(svg, "<g class=\"f\""), 0);
	cr_assert_eq(count(svg, "</svg>"), 1);
	free(svg);
}
