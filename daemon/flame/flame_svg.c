// SPDX-License-Identifier: BSD-2-Clause
/*
 * The flame graph as one self-contained SVG: frames drawn root at the
 * bottom, each as a group with a tooltip (<title>), a rectangle and its
 * label, readable without scripts. The embedded script adds the rest: the
 * hovered frame's name, time and share in the status line, click to zoom
 * into a frame (its ancestors stay, faded, below), "Reset zoom", and a
 * search box (an HTML input in a foreignObject; a regular expression,
 * matched as one types: matches turn magenta and their share is shown;
 * Ctrl-F goes to it, Escape clears it and the zoom). No external resources.
 */
#include "flame_tree.h"
#include "units.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#define FRAME_HEIGHT 16
#define FONT_SIZE 12
#define CHAR_WIDTH (FONT_SIZE * 0.59) /* Verdana-like average advance */
#define MARGIN 10
#define HEADER 64
#define FOOTER 32
#define MIN_FRAME_PX 0.1              /* narrower frames are not drawn */
#define SEARCH_WIDTH 220

static void put_escaped(FILE *out, const char *text)
{
	for (const char *p = text; *p; p++) {
		switch (*p) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default:
			/* XML 1.0 forbids most control characters even escaped. */
			fputc((unsigned char)*p < 0x20 ? ' ' : *p, out);
		}
	}
}

/* "12.3 ms": three significant figures in a unit that suits. */
static void format_time(char *buf, size_t len, uint64_t ns)
{
	if (ns >= NS_PER_SEC)
		snprintf(buf, len, "%.3g s", (double)ns / NS_PER_SEC);
	else if (ns >= NS_PER_MS)
		snprintf(buf, len, "%.3g ms", (double)ns / NS_PER_MS);
	else if (ns >= NS_PER_US)
		snprintf(buf, len, "%.3g us", (double)ns / NS_PER_US);
	else
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
}

static uint32_t hash_name(const char *name)
{
	uint32_t hash = 2166136261u; /* FNV-1a */
	for (const char *p = name; *p; p++)
		hash = (hash ^ (unsigned char)*p) * 16777619u;
	return hash;
}

static size_t name_length(const char *name)
{
	return strlen(name);
}

static int ends_with(const char *text, const char *suffix)
{
	size_t a = strlen(text), b = strlen(suffix);
	return a >= b && !strcmp(text + a - b, suffix);
}

/*
 * Colours: the context frames (the first context_depth above the root:
 * target, listener, cause, phase) in light blues, bracketed pseudo-frames
 * ("[not sampled]") grey, kernel frames ("_[k]") light orange, user frames
 * in light reds: the usual flame graph hues, kept pale so that black
 * labels stay legible on every frame. A name always gets the same colour.
 */
static void frame_colour(const char *name, size_t depth, size_t context_depth, char *buf, size_t len)
{
	uint32_t h = hash_name(name);
	unsigned int a = h & 0xff, b = (h >> 8) & 0xff; /* 0-255 */
	unsigned int r, g, bl;
	if (depth == 0)
		r = g = bl = 215;
	else if (name[0] == '[')
		r = g = 210 + a / 16, bl = 215 + a / 16;
	else if (depth <= context_depth)
		r = 170 + a / 8, g = 200 + b / 10, bl = 245;
	else if (ends_with(name, "_[k]"))
		r = 250, g = 195 + a / 8, bl = 120 + b / 8;
	else
		r = 240 + a / 16, g = 140 + b / 4, bl = 125 + a / 8;
	snprintf(buf, len, "rgb(%u,%u,%u)", r & 0xff, g & 0xff, bl & 0xff);
}

struct svg {
	FILE *out;
	double scale;       /* px per ns */
	uint64_t total_ns;
	unsigned int width;
	unsigned int height;
	size_t context_depth;
};

/* The label that fits in width px: the name, or its start and "..", or nothing. */
static void put_label(FILE *out, const char *name, double width)
{
	size_t fits = width > 6 ? (size_t)((width - 6) / CHAR_WIDTH) : 0;
	size_t len = name_length(name);
	if (fits < 3)
		return;
	if (len <= fits) {
		put_escaped(out, name);
		return;
	}
	char cut[512];
	size_t keep = fits - 2 < sizeof(cut) - 1 ? fits - 2 : sizeof(cut) - 1;
	memcpy(cut, name, keep);
	cut[keep] = '\0';
	put_escaped(out, cut);
	fputs("..", out);
}

static void draw(struct svg *s, const struct cs_flame_node *node, const char *name, size_t depth, double x)
{
	double w = (double)node->total_ns * s->scale;
	if (w < MIN_FRAME_PX)
		return;
	double y = s->height - FOOTER - (double)(depth + 1) * FRAME_HEIGHT;
	char time[32], colour[64];
	format_time(time, sizeof(time), node->total_ns);
	frame_colour(name, depth, s->context_depth, colour, sizeof(colour));
	double share = s->total_ns ? 100.0 * (double)node->total_ns / (double)s->total_ns : 0;

	fprintf(s->out, "<g class=\"f\" data-d=\"%zu\" data-v=\"%llu\"><title>", depth,
		(unsigned long long)node->total_ns);
	put_escaped(s->out, name);
	fprintf(s->out, " (%s, %.2f%%)</title>", time, share);
	/*
	 * Both edges rounded to the 0.01 px printed, the width their
	 * difference: a frame's printed box then lies inside its parent's, as
	 * its exact one does (rounding x and the width apart could push a
	 * last child's right edge 0.01 px past its parent's).
	 */
	double left_px = round(x * 100.0) / 100.0, right_px = round((x + w) * 100.0) / 100.0;
	fprintf(s->out, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>", left_px, y,
		right_px - left_px, FRAME_HEIGHT - 1, colour);
	fprintf(s->out, "<text x=\"%.2f\" y=\"%.0f\">", x + 3, y + FRAME_HEIGHT - 4.5);
	put_label(s->out, name, w);
	fputs("</text></g>\n", s->out);

	double child_x = x;
	for (const struct cs_flame_node *c = node->first_child; c; c = c->next_sibling) {
		draw(s, c, c->name, depth + 1, child_x);
		child_x += (double)c->total_ns * s->scale;
	}
}

static const char svg_style[] =
	"<style>\n"
	"text { font-family: Verdana, 'DejaVu Sans', sans-serif; font-size: 12px; fill: #000; }\n"
	"#title { font-size: 17px; text-anchor: middle; }\n"
	"#subtitle { fill: #444; text-anchor: middle; }\n"
	".f text { pointer-events: none; }\n"
	".f:hover rect { stroke: #000; stroke-width: 0.6; }\n"
	".f.hidden { display: none; }\n"
	".f.ancestor rect { opacity: 0.55; }\n"
	".button { cursor: pointer; fill: #225; text-decoration: underline; }\n"
	".button.off { display: none; }\n"
	"#status, #matched { fill: #222; }\n"
	"#matched { text-anchor: end; }\n"
	"#search { width: 100%; box-sizing: border-box; font: 12px Verdana, 'DejaVu Sans', sans-serif; }\n"
	"</style>\n";

/*
 * Each frame keeps its drawn geometry (g._x, g._w, read on load); zooming
 * scales from those, so a reset is exact.
 */
static const char svg_script[] =
	"<script><![CDATA[\n"
	"(function () {\n"
	"  'use strict';\n"
	"  var svg = document.getElementById('flamegraph');\n"
	"  var W = +svg.getAttribute('data-width'), M = +svg.getAttribute('data-margin');\n"
	"  var CHAR = +svg.getAttribute('data-char');\n"
	"  var frames = Array.prototype.slice.call(svg.querySelectorAll('g.f'));\n"
	"  var status = document.getElementById('status'), matched = document.getElementById('matched');\n"
	"  var reset = document.getElementById('reset'), search = document.getElementById('search');\n"
	"  var defaultStatus = status.textContent;\n"
	"  frames.forEach(function (g) {\n"
	"    var r = g.querySelector('rect'), t = g.querySelector('title');\n"
	"    g._x = +r.getAttribute('x'); g._w = +r.getAttribute('width'); g._d = +g.getAttribute('data-d');\n"
	"    g._name = t.textContent.replace(/ \\([^()]*\\)$/, ''); g._info = t.textContent;\n"
	"    g._fill = r.getAttribute('fill');\n"
	"    g.addEventListener('mouseover', function () { status.textContent = g._info; });\n"
	"    g.addEventListener('mouseout', function () { status.textContent = defaultStatus; });\n"
	"    g.addEventListener('click', function () { zoom(g); });\n"
	"  });\n"
	"  function label(g, w) {\n"
	"    var fits = Math.floor((w - 6) / CHAR), name = g._name;\n"
	"    if (fits < 3) return '';\n"
	"    return name.length <= fits ? name : name.slice(0, fits - 2) + '..';\n"
	"  }\n"
	"  function place(g, x, w) {\n"
	"    var r = g.querySelector('rect'), t = g.querySelector('text');\n"
	"    r.setAttribute('x', x.toFixed(2)); r.setAttribute('width', w.toFixed(2));\n"
	"    t.setAttribute('x', (x + 3).toFixed(2)); t.textContent = label(g, w);\n"
	"  }\n"
	"  function zoom(z) {\n"
	"    var ratio = (W - 2 * M) / z._w;\n"
	"    frames.forEach(function (g) {\n"
	"      var inside = g._x >= z._x - 0.01 && g._x + g._w <= z._x + z._w + 0.01;\n"
	"      var below = g._d < z._d && g._x <= z._x + 0.01 && g._x + g._w >= z._x + z._w - 0.01;\n"
	"      g.classList.remove('hidden', 'ancestor');\n"
	"      if (g._d >= z._d && inside) place(g, M + (g._x - z._x) * ratio, g._w * ratio);\n"
	"      else if (below) { g.classList.add('ancestor'); place(g, M, W - 2 * M); }\n"
	"      else g.classList.add('hidden');\n"
	"    });\n"
	"    reset.classList.remove('off');\n"
	"  }\n"
	"  function unzoom() {\n"
	"    frames.forEach(function (g) { g.classList.remove('hidden', 'ancestor'); place(g, g._x, g._w); });\n"
	"    reset.classList.add('off');\n"
	"  }\n"
	"  reset.addEventListener('click', unzoom);\n"
	"  function clearSearch() {\n"
	"    frames.forEach(function (g) { g.querySelector('rect').setAttribute('fill', g._fill); });\n"
	"    matched.textContent = '';\n"
	"  }\n"
	"  function find(pattern) {\n"
	"    var re;\n"
	"    try { re = new RegExp(pattern); } catch (e) { matched.textContent = 'bad expression'; return; }\n"
	"    var spans = [];\n"
	"    frames.forEach(function (g) {\n"
	"      if (!re.test(g._name)) return;\n"
	"      g.querySelector('rect').setAttribute('fill', 'rgb(230,0,230)');\n"
	"      spans.push([g._x, g._x + g._w]);\n"
	"    });\n"
	"    /* A match nested in another match counts once. */\n"
	"    spans.sort(function (a, b) { return a[0] - b[0]; });\n"
	"    var covered = 0, end = -1;\n"
	"    spans.forEach(function (s) {\n"
	"      if (s[1] <= end) return;\n"
	"      covered += s[1] - Math.max(s[0], end); end = s[1];\n"
	"    });\n"
	"    var share = 100 * covered / (W - 2 * M);\n"
	"    matched.textContent = 'Matched: ' + share.toFixed(2) + '% (' + spans.length + ' frames)';\n"
	"  }\n"
	"  if (search) search.addEventListener('input', function () {\n"
	"    clearSearch();\n"
	"    if (search.value) find(search.value);\n"
	"  });\n"
	"  window.addEventListener('keydown', function (e) {\n"
	"    if ((e.ctrlKey || e.metaKey) && e.key === 'f' && search) { e.preventDefault(); search.focus(); }\n"
	"    if (e.key === 'Escape') { if (search) search.value = ''; clearSearch(); unzoom(); }\n"
	"  });\n"
	"})();\n"
	"]]></script>\n";

int cs_flame_write_svg(FILE *out, const struct cs_flame_tree *tree, const struct cs_flame_svg_options *options)
{
	struct svg s = {
		.out = out,
		.total_ns = tree->root.total_ns,
		.width = options->width_px ? options->width_px : 1200,
		.context_depth = options->context_depth,
	};
	s.height = HEADER + (unsigned int)(tree->max_depth + 1) * FRAME_HEIGHT + FOOTER;
	s.scale = s.total_ns ? (double)(s.width - 2 * MARGIN) / (double)s.total_ns : 0;
	char total[32];
	format_time(total, sizeof(total), s.total_ns);

	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n");
	fprintf(out,
		"<svg version=\"1.1\" id=\"flamegraph\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" "
		"height=\"%u\" viewBox=\"0 0 %u %u\" data-width=\"%u\" data-margin=\"%d\" data-total=\"%llu\" "
		"data-char=\"%.2f\">\n",
		s.width, s.height, s.width, s.height, s.width, MARGIN, (unsigned long long)s.total_ns, CHAR_WIDTH);
	fputs(svg_style, out);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f4\"/>\n");
	fprintf(out, "<text id=\"title\" x=\"%u\" y=\"24\">", s.width / 2);
	put_escaped(out, options->title ? options->title : "connscope flame graph");
	fputs("</text>\n", out);
	if (options->subtitle) {
		fprintf(out, "<text id=\"subtitle\" x=\"%u\" y=\"44\">", s.width / 2);
		put_escaped(out, options->subtitle);
		fputs("</text>\n", out);
	}
	fprintf(out, "<text id=\"reset\" class=\"button off\" x=\"%d\" y=\"24\">Reset zoom</text>\n", MARGIN);
	fprintf(out, "<text id=\"status\" x=\"%d\" y=\"%u\">total %s: hover a frame for its time, click to zoom</text>\n",
		MARGIN, s.height - 12, total);
	fprintf(out, "<text id=\"matched\" x=\"%u\" y=\"%u\"></text>\n", s.width - MARGIN - SEARCH_WIDTH - 10,
		s.height - 12);
	fprintf(out,
		"<foreignObject x=\"%u\" y=\"%u\" width=\"%d\" height=\"24\">"
		"<input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"search\" type=\"search\" "
		"placeholder=\"Search frames (regex)\" title=\"a regular expression; Ctrl-F, Escape\"/>"
		"</foreignObject>\n",
		s.width - MARGIN - SEARCH_WIDTH, s.height - 28, SEARCH_WIDTH);

	if (s.total_ns) {
		char root_name[64];
		snprintf(root_name, sizeof(root_name), "all");
		draw(&s, &tree->root, root_name, 0, MARGIN);
	}
	fputs(svg_script, out);
	fputs("</svg>\n", out);
	if (fflush(out) || ferror(out))
		return -EIO;
	return 0;
}
