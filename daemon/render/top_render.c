// SPDX-License-Identifier: BSD-2-Clause
#include "top_render.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cost_render.h"
#include "report.h"

#define BAR_WIDTH 24

const char *const cs_top_sort_names[CS_TOP_SORT_COUNT] = {
	[CS_TOP_SORT_REQUESTS] = "req/s",
	[CS_TOP_SORT_ACCEPTS] = "accepts",
	[CS_TOP_SORT_RUNQ] = "runq p99",
	[CS_TOP_SORT_BUSY] = "busy",
};

int cs_top_screen_init(struct cs_top_screen *screen, int rows, int cols)
{
	rows = rows < 1 ? 1 : rows > 500 ? 500 : rows;
	cols = cols < 1 ? 1 : cols > 500 ? 500 : cols;
	screen->cells = calloc((size_t)rows * (size_t)cols, sizeof(*screen->cells));
	if (!screen->cells)
		return -ENOMEM;
	screen->rows = rows;
	screen->cols = cols;
	screen->used_rows = 0;
	return 0;
}

void cs_top_screen_free(struct cs_top_screen *screen)
{
	free(screen->cells);
	screen->cells = NULL;
	screen->rows = screen->cols = 0;
}

static struct cs_top_cell *cell(struct cs_top_screen *s, int row, int col)
{
	return &s->cells[(size_t)row * (size_t)s->cols + (size_t)col];
}

static void clear(struct cs_top_screen *s)
{
	for (int r = 0; r < s->rows; r++)
		for (int c = 0; c < s->cols; c++)
			*cell(s, r, c) = (struct cs_top_cell){ .glyph = " ", .len = 1 };
	s->used_rows = 0;
}

/* Put one glyph (bytes of one column) at (row, col); off-screen is dropped. */
static void put_glyph(struct cs_top_screen *s, int row, int col, const char *glyph, size_t len, int attr)
{
	if (row < 0 || row >= s->rows || col < 0 || col >= s->cols || len == 0 || len > 4)
		return;
	struct cs_top_cell *c = cell(s, row, col);
	memcpy(c->glyph, glyph, len);
	c->len = (uint8_t)len;
	c->attr = (uint8_t)attr;
	if (row + 1 > s->used_rows)
		s->used_rows = row + 1;
}

/*
 * Printable ASCII text at (row, col), cut at the right edge; other bytes
 * (a thread name's, say) show as '?'. Returns the column after it.
 */
static int put_text(struct cs_top_screen *s, int row, int col, int attr, const char *text)
{
	for (; *text && col < s->cols; text++, col++) {
		char c = (*text >= 0x20 && *text < 0x7f) ? *text : '?';
		put_glyph(s, row, col, &c, 1, attr);
	}
	return col;
}

__attribute__((format(printf, 5, 6)))
static int put_fmt(struct cs_top_screen *s, int row, int col, int attr, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return put_text(s, row, col, attr, buf);
}

/* A whole row in one attribute (title and key lines). */
static void fill_row(struct cs_top_screen *s, int row, int attr)
{
	for (int c = 0; c < s->cols; c++)
		put_glyph(s, row, c, " ", 1, attr);
}

static void duration_us(char *buf, size_t len, double us)
{
	cs_format_duration(buf, len, (uint64_t)(us * 1e3 + 0.5));
}

static void span(char *buf, size_t len, double seconds)
{
	uint64_t s = (uint64_t)seconds;
	if (s < 60)
		snprintf(buf, len, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
}

static int title(struct cs_top_screen *s, int row, const struct cs_top_model *m, const struct cs_top_ui *ui)
{
	char up[32], stats[32];
	span(up, sizeof(up), m->uptime_s);
	span(stats, sizeof(stats), m->duration_s);
	fill_row(s, row, CS_TOP_TITLE);
	int col = put_fmt(s, row, 0, CS_TOP_TITLE, "connscope top - %s - %s, up %s, stats %s, %" PRIu64
			  " events, %" PRIu64 " lost", m->target[0] ? m->target : "(no target)", m->source[0] ? m->source : "?",
		up, stats, m->events, m->lost);
	if (m->netns[0])
		col = put_fmt(s, row, col, CS_TOP_TITLE, ", netns %s%s%s", m->netns, m->container[0] ? " " : "",
			      m->container);
	/* As in the text report: only when the kernel skipped a probe run. */
	if (m->skipped)
		put_fmt(s, row, col, CS_TOP_TITLE, ", %" PRIu64 " probe runs skipped", m->skipped);
	if (ui->paused)
		put_text(s, row, s->cols - 8 > 0 ? s->cols - 8 : 0, CS_TOP_WARN, "[paused]");
	return row + 1;
}

/* Connections older than the attach: said only when there were some (as in the text report). */
static int adopted(struct cs_top_screen *s, int row, const struct cs_top_model *m)
{
	if (!m->adopted && !m->in_flight_at_attach)
		return row;
	put_fmt(s, row, 0, CS_TOP_DIM, "%" PRIu64 " connections older than the attach, adopted at their first idle "
		"moment; %" PRIu64 " requests in flight at the attach left out", m->adopted, m->in_flight_at_attach);
	return row + 1;
}

/* Traced in windows: what the request figures below cover. */
static int tracing(struct cs_top_screen *s, int row, const struct cs_top_model *m)
{
	if (!m->tracing.sampled)
		return row;
	char schedule[48] = "always since a reload";
	if (m->tracing.period_s > 0)
		snprintf(schedule, sizeof(schedule), "%g s every %g s", m->tracing.window_s, m->tracing.period_s);
	if (!m->tracing.counters_between) {
		put_fmt(s, row, 0, CS_TOP_DIM, "traced %.1f %% (%s): %" PRIu64 " of ~%.0f requests, "
			"req/s and latencies from the windows; accepts, drops, resets, closes exact",
			100 * m->tracing.share, schedule, m->tracing.requests_traced, m->tracing.requests_estimated);
		return row + 1;
	}
	put_fmt(s, row, 0, CS_TOP_DIM, "traced %.1f %% (%s): %" PRIu64 " of ~%.0f requests; all below from windows",
		100 * m->tracing.share, schedule, m->tracing.requests_traced, m->tracing.requests_estimated);
	if (!m->tracing.between_valid)
		return row + 1;
	put_fmt(s, row + 1, 0, CS_TOP_DIM, "gaps, netns %" PRIu64 " (all ports): %" PRIu64 " opened, %" PRIu64
		" listen drops, %" PRIu64 " resets", m->tracing.between_netns, m->tracing.between_opened,
		m->tracing.between_drops, m->tracing.between_resets);
	return row + 2;
}

static int latency(struct cs_top_screen *s, int row, const struct cs_top_model *m)
{
	char p50[24], p99[24], p999[24], max[24];
	const struct cs_top_latency *l = &m->window;
	duration_us(p50, sizeof(p50), l->p50_us);
	duration_us(p99, sizeof(p99), l->p99_us);
	duration_us(p999, sizeof(p999), l->p999_us);
	duration_us(max, sizeof(max), l->max_us);
	int col = put_fmt(s, row, 0, CS_TOP_HEADER, "latency %ds", m->window_seconds);
	col = put_fmt(s, row, col, CS_TOP_NORMAL, "  p50 %s  p99 %s  p99.9 %s  max %s  %.0f req/s", p50, p99, p999,
		      max, m->requests_per_s);
	/* Their requests overlap: said, since they are in none of these figures. */
	if (m->multiplexed)
		put_fmt(s, row, col, CS_TOP_WARN, "  %" PRIu64 " multiplexed conn(s), not in the latency", m->multiplexed);
	return row + 1;
}

/* What connscope costs: its BPF time per request, its own CPU; nothing before its first reading. */
static int cost(struct cs_top_screen *s, int row, const struct cs_top_model *m)
{
	if (!m->cost_recorded)
		return row;
	char bpf[48] = "not measured";
	if (m->bpf_ns_per_request >= 0) {
		char per_request[32];
		cs_cost_format_ns(per_request, sizeof(per_request), m->bpf_ns_per_request);
		snprintf(bpf, sizeof(bpf), "%s per request", per_request);
	}
	int col = put_fmt(s, row, 0, CS_TOP_HEADER, "cost");
	put_fmt(s, row, col, CS_TOP_NORMAL, "       BPF %s, connscope CPU %.1f%% of one CPU", bpf, 100.0 * m->cpu_share);
	return row + 1;
}

/* p99 per second over the last minute, scaled to the largest. */
static int sparkline(struct cs_top_screen *s, int row, const struct cs_top_model *m, const struct cs_top_ui *ui)
{
	static const char *const blocks[] = { "\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586",
					      "\u2587", "\u2588" };
	static const char ascii[] = "._-=+*#@";
	int col = put_text(s, row, 0, CS_TOP_HEADER, "p99 /s ");
	double top = 0;
	for (int i = 0; i < m->series_len; i++)
		if (m->p99_series_us[i] > top)
			top = m->p99_series_us[i];
	/* Right-aligned in a 60-column field: the newest second is always at its end. */
	int width = s->cols - col - 14;
	if (width > CS_WINDOW_SECONDS)
		width = CS_WINDOW_SECONDS;
	int first = m->series_len > width ? m->series_len - width : 0;
	int start = col + width - (m->series_len - first);
	for (int i = first; i < m->series_len; i++) {
		int c = start + i - first;
		double v = m->p99_series_us[i];
		if (v < 0) {
			put_glyph(s, row, c, " ", 1, CS_TOP_DIM);
			continue;
		}
		int level = top > 0 ? (int)(v / top * 7.0 + 0.5) : 0;
		level = level < 0 ? 0 : level > 7 ? 7 : level;
		if (ui->unicode)
			put_glyph(s, row, c, blocks[level], strlen(blocks[level]), CS_TOP_BAR);
		else
			put_glyph(s, row, c, &ascii[level], 1, CS_TOP_BAR);
	}
	char max[24];
	duration_us(max, sizeof(max), top);
	put_fmt(s, row, col + (width > 0 ? width : 0) + 1, CS_TOP_DIM, "top %s", max);
	return row + 1;
}

static int listeners(struct cs_top_screen *s, int row, int last_row, const struct cs_top_model *m)
{
	if (row > last_row)
		return row;
	put_fmt(s, row++, 0, CS_TOP_HEADER, "%-9s %10s %22s %9s %14s", "listener", "accepts/s",
		"backlog now/max/limit", "drops", "accept-wait p99");
	if (m->listener_count == 0 && row <= last_row)
		put_text(s, row++, 2, CS_TOP_DIM, "no accept activity yet");
	for (int i = 0; i < m->listener_count && row <= last_row; i++) {
		const struct cs_top_listener *l = &m->listeners[i];
		char port[16], backlog[40], wait[24];
		snprintf(port, sizeof(port), ":%u", l->port);
		snprintf(backlog, sizeof(backlog), "%u/%u/%u", l->backlog_now, l->backlog_max, l->backlog_limit);
		duration_us(wait, sizeof(wait), l->accept_wait_p99_us);
		int col = put_fmt(s, row, 0, CS_TOP_NORMAL, "%-9s %10.0f ", port, l->accepts_per_s);
		col = put_fmt(s, row, col, l->backlog_max > l->backlog_limit ? CS_TOP_WARN : CS_TOP_NORMAL, "%22s",
			      backlog);
		col = put_fmt(s, row, col, l->drops ? CS_TOP_BAD : CS_TOP_NORMAL, " %9" PRIu64, l->drops);
		put_fmt(s, row, col, CS_TOP_NORMAL, " %14s", wait);
		row++;
	}
	return row;
}

/* The servers the target waited on, when it called any: their waits and their share of the tail. */
static int upstreams(struct cs_top_screen *s, int row, int last_row, const struct cs_top_model *m)
{
	if (row > last_row || m->upstream_count == 0)
		return row;
	put_fmt(s, row++, 0, CS_TOP_HEADER, "%-22s %10s %21s %12s %7s %6s", "upstream", "exchanges",
		"first byte p50/p99", "connect p99", "SYN rt", "tail");
	for (int i = 0; i < m->upstream_count && row <= last_row; i++) {
		const struct cs_top_upstream *u = &m->upstreams[i];
		char p50[24], p99[24], waits[56], connect[24];
		duration_us(p50, sizeof(p50), u->wait_p50_us);
		duration_us(p99, sizeof(p99), u->wait_p99_us);
		snprintf(waits, sizeof(waits), "%s/%s", p50, p99);
		duration_us(connect, sizeof(connect), u->connect_p99_us);
		/* A long name (a Unix socket's path) by its end, where paths differ. */
		size_t len = strlen(u->endpoint);
		const char *name = len > 22 ? u->endpoint + len - 21 : u->endpoint;
		int col = put_fmt(s, row, 0, CS_TOP_NORMAL, "%s%-*.*s %10" PRIu64 " %21s %12s ", len > 22 ? "~" : "",
				  len > 22 ? 21 : 22, len > 22 ? 21 : 22, name, u->exchanges, waits, connect);
		col = put_fmt(s, row, col, u->connects_retransmitted ? CS_TOP_BAD : CS_TOP_NORMAL, "%7" PRIu64,
			      u->connects_retransmitted);
		put_fmt(s, row, col, u->tail_share >= 0.5 ? CS_TOP_WARN : CS_TOP_NORMAL, " %5.1f%%",
			100.0 * u->tail_share);
		row++;
	}
	if (m->upstreams_more && row <= last_row)
		put_fmt(s, row++, 2, CS_TOP_DIM, "and %" PRIu64 " more upstream(s)", m->upstreams_more);
	return row;
}

/* The local clients, when any: their own delay reading the answers beside the server's p99 (72 columns). */
static int clients(struct cs_top_screen *s, int row, int last_row, const struct cs_top_model *m)
{
	if (row > last_row || m->client_count == 0)
		return row;
	put_fmt(s, row++, 0, CS_TOP_HEADER, "%-12s %7s %5s %9s %9s %9s %9s %5s", "client", "pid", "conns", "late p99",
		"runq p99", "measured", "server", "busy");
	for (int i = 0; i < m->client_count && row <= last_row; i++) {
		const struct cs_top_client *c = &m->clients[i];
		char late[24], runq[24], measured[24], server[24];
		duration_us(late, sizeof(late), c->read_delay_p99_us);
		duration_us(runq, sizeof(runq), c->runq_p99_us);
		duration_us(measured, sizeof(measured), c->measured_p99_us);
		duration_us(server, sizeof(server), c->server_p99_us);
		int col = put_fmt(s, row, 0, CS_TOP_NORMAL, "%-12.12s %7" PRIu32 " %5" PRIu64 " ", c->comm, c->pid,
				  c->connections);
		col = put_fmt(s, row, col, c->bound ? CS_TOP_WARN : CS_TOP_NORMAL, "%9s %9s %9s", late, runq, measured);
		put_fmt(s, row, col, CS_TOP_NORMAL, " %9s %4.0f%%", server, 100.0 * c->busy_share);
		row++;
	}
	if (m->clients_more && row <= last_row)
		put_fmt(s, row++, 2, CS_TOP_DIM, "and %" PRIu64 " more client(s)", m->clients_more);
	return row;
}

static int tail(struct cs_top_screen *s, int row, int last_row, int max_causes, const struct cs_top_model *m)
{
	if (row > last_row)
		return row;
	char threshold[24];
	duration_us(threshold, sizeof(threshold), m->tail_threshold_us);
	if (!m->tail_requests) {
		put_fmt(s, row++, 0, CS_TOP_HEADER, "tail p%g: no request yet", m->tail_percentile);
		return row;
	}
	put_fmt(s, row++, 0, CS_TOP_HEADER, "tail p%g: %" PRIu64 " request(s) at or above %s, time by cause",
		m->tail_percentile, m->tail_requests, threshold);
	int shown = 0;
	for (int i = 0; i < m->cause_count && row <= last_row && shown < max_causes; i++) {
		if (m->causes[i].share < 0.005)
			continue;
		int col = put_fmt(s, row, 2, CS_TOP_NORMAL, "%-16s ", m->causes[i].name);
		int filled = (int)(m->causes[i].share * BAR_WIDTH + 0.5);
		for (int k = 0; k < BAR_WIDTH; k++)
			put_text(s, row, col + k, k < filled ? CS_TOP_BAR : CS_TOP_DIM, k < filled ? "#" : ".");
		put_fmt(s, row, col + BAR_WIDTH, CS_TOP_NORMAL, " %5.1f%%", 100.0 * m->causes[i].share);
		row++;
		shown++;
	}
	return row;
}

static int conditions(struct cs_top_screen *s, int row, int last_row, int max_shown, const struct cs_top_model *m)
{
	if (row > last_row)
		return row;
	if (m->condition_count == 0) {
		int col = put_text(s, row, 0, CS_TOP_HEADER, "conditions");
		put_text(s, row++, col, CS_TOP_GOOD, "  none flagged");
		return row;
	}
	put_text(s, row++, 0, CS_TOP_HEADER, "conditions");
	for (int i = 0; i < m->condition_count && i < max_shown && row <= last_row; i++) {
		int col = put_fmt(s, row, 2, CS_TOP_WARN, "! %s", m->conditions[i].name);
		put_fmt(s, row++, col, CS_TOP_NORMAL, " -> %s", m->conditions[i].advice);
	}
	return row;
}

static double sort_key(const struct cs_top_thread *t, enum cs_top_sort sort)
{
	switch (sort) {
	case CS_TOP_SORT_ACCEPTS:
		return (double)t->accepts;
	case CS_TOP_SORT_RUNQ:
		return t->runq_p99_us;
	case CS_TOP_SORT_BUSY:
		return t->busy_share;
	default:
		return t->requests_per_s;
	}
}

static int threads(struct cs_top_screen *s, int row, int last_row, const struct cs_top_model *m,
		   const struct cs_top_ui *ui)
{
	if (row > last_row)
		return row;
	put_fmt(s, row++, 0, CS_TOP_HEADER, "%-7s %-7s %-15s %7s %8s %9s %5s  sort: %s", "threads", "tid",
		"comm", "req/s", "accepts", "runq p99", "busy", cs_top_sort_names[ui->sort]);
	/* Selection sort of indices by the key, largest first, tid to break ties: a stable view. */
	int order[CS_TOP_THREADS];
	int n = m->thread_count;
	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = 0; i < n && i <= last_row - row; i++) {
		int best = i;
		for (int k = i + 1; k < n; k++) {
			const struct cs_top_thread *a = &m->threads[order[k]], *b = &m->threads[order[best]];
			double ka = sort_key(a, ui->sort), kb = sort_key(b, ui->sort);
			if (ka > kb || (ka == kb && a->tid < b->tid))
				best = k;
		}
		int t = order[i];
		order[i] = order[best];
		order[best] = t;
	}
	if (n == 0 && row <= last_row)
		put_text(s, row++, 2, CS_TOP_DIM, "no request served yet");
	for (int i = 0; i < n && row <= last_row; i++) {
		const struct cs_top_thread *t = &m->threads[order[i]];
		char runq[24];
		duration_us(runq, sizeof(runq), t->runq_p99_us);
		/* The roles' letters go under "threads": the line is 80 columns already. */
		put_fmt(s, row++, 0, CS_TOP_NORMAL, "  %-5s %-7u %-15.15s %7.0f %8" PRIu64 " %9s %4.0f%%", t->roles,
			t->tid, t->comm, t->requests_per_s, t->accepts, runq, 100.0 * t->busy_share);
	}
	return row;
}

static void help(struct cs_top_screen *s, int row)
{
	static const char *const lines[] = {
		"connscope top: the live view of the accept path and the requests' tail",
		"",
		"  q   quit",
		"  p   pause (the figures stay; data keeps being collected)",
		"  s   sort threads: req/s, accepts, run-queue p99, busy share",
		"  t   tail percentile: p99, p99.9, p90",
		"  ?   this help (any key closes it)",
		"",
		"latency      the last minute's requests (window); p99 /s: each second's p99",
		"listener     accepts in the last second; backlog now/max/limit; drops and",
		"             accept-wait p99 since the statistics began",
		"tail         where the slowest requests' time went (docs/request-model.md)",
		"conditions   what shapes the tail, with one line of advice",
		"threads      per server thread: requests in the last second, connections",
		"             accepted, run-queue wait p99 per request, share of the last",
		"             second spent in handlers (busy), roles from what it does:",
		"             a accepts, p polls for others, l event loop, w pool worker,",
		"             c a JVM's virtual-thread carrier",
		"             (the letters under 'threads')",
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		put_text(s, row + (int)i, 1, i == 0 ? CS_TOP_HEADER : CS_TOP_NORMAL, lines[i]);
}

void cs_top_render(struct cs_top_screen *s, const struct cs_top_model *m, const struct cs_top_ui *ui)
{
	clear(s);
	int last_row = s->rows - 2; /* the key line is the bottom row */
	int row = tracing(s, adopted(s, title(s, 0, m, ui), m), m);
	if (ui->help) {
		help(s, row + 1);
	} else {
		if (row <= last_row)
			row = latency(s, row, m);
		if (row <= last_row)
			row = sparkline(s, row, m, ui);
		if (row <= last_row)
			row = cost(s, row, m);
		/* Short screens: fewer causes and conditions, so threads keep some rows. */
		int spare = last_row - row;
		int max_causes = spare >= 18 ? CS_CAUSE_COUNT : spare >= 12 ? 3 : 2;
		int max_conditions = spare >= 18 ? CS_TOP_CONDITIONS : 2;
		row = listeners(s, row, last_row, m);
		row = upstreams(s, row, last_row, m);
		row = clients(s, row, last_row, m);
		row = tail(s, row, last_row, max_causes, m);
		row = conditions(s, row, last_row, max_conditions, m);
		threads(s, row, last_row, m, ui);
	}
	if (ui->once) {
		/* Printed once: no keys to offer; the status after the content. */
		if (ui->status[0])
			put_fmt(s, s->used_rows, 0, CS_TOP_DIM, "%s", ui->status);
	} else if (s->rows >= 2) {
		int bottom = s->rows - 1;
		fill_row(s, bottom, CS_TOP_TITLE);
		int col = put_fmt(s, bottom, 0, CS_TOP_TITLE, "q quit  p pause  s sort  t tail p%g  ? help",
				  m->tail_percentile);
		if (ui->status[0])
			put_fmt(s, bottom, col, CS_TOP_TITLE, "  | %s", ui->status);
	}
}

static const char *const sgr[CS_TOP_ATTR_COUNT] = {
	[CS_TOP_NORMAL] = "0",
	[CS_TOP_TITLE] = "0;7",
	[CS_TOP_HEADER] = "0;1",
	[CS_TOP_GOOD] = "0;32",
	[CS_TOP_WARN] = "0;33",
	[CS_TOP_BAD] = "0;1;31",
	[CS_TOP_BAR] = "0;36",
	[CS_TOP_DIM] = "0;2",
};

void cs_top_screen_print(const struct cs_top_screen *s, FILE *out, bool ansi)
{
	int rows = s->used_rows;
	for (int r = 0; r < rows; r++) {
		int end = s->cols;
		/* Trailing blanks go, unless an attribute makes them visible. */
		while (end > 0) {
			const struct cs_top_cell *c = &s->cells[(size_t)r * (size_t)s->cols + (size_t)end - 1];
			if (!(c->len == 1 && c->glyph[0] == ' ' && (!ansi || c->attr == CS_TOP_NORMAL)))
				break;
			end--;
		}
		int attr = -1;
		for (int col = 0; col < end; col++) {
			const struct cs_top_cell *c = &s->cells[(size_t)r * (size_t)s->cols + (size_t)col];
			if (ansi && c->attr != attr && c->attr < CS_TOP_ATTR_COUNT) {
				attr = c->attr;
				fprintf(out, "\033[%sm", sgr[attr]);
			}
			fwrite(c->glyph, 1, c->len, out);
		}
		if (ansi && attr > 0)
			fputs("\033[0m", out);
		fputc('\n', out);
	}
}

void cs_top_screen_row(const struct cs_top_screen *s, int row, char *buf, size_t len)
{
	size_t n = 0;
	if (len == 0)
		return;
	for (int col = 0; row >= 0 && row < s->rows && col < s->cols; col++) {
		const struct cs_top_cell *c = &s->cells[(size_t)row * (size_t)s->cols + (size_t)col];
		if (n + c->len >= len)
			break;
		memcpy(buf + n, c->glyph, c->len);
		n += c->len;
	}
	while (n > 0 && buf[n - 1] == ' ')
		n--;
	buf[n] = '\0';
}
