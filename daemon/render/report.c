// SPDX-License-Identifier: BSD-2-Clause
/* The human rendering of the engine's statistics (report_json.c: the JSON one). */
#include <inttypes.h>
#include <string.h>

#include "report.h"
#include "analysis.h"
#include "cost_render.h"
#include "report_internal.h"
#include "report_view.h"
#include "words.h"

/* ---- text ---------------------------------------------------------------- */

static void text_percentiles(FILE *out, const struct cs_hist *hist)
{
	char value[32];
	for (size_t i = 0; i < PERCENTILE_COUNT; i++) {
		cs_format_duration(value, sizeof(value), cs_hist_percentile(hist, report_percentiles[i]));
		fprintf(out, "  %s %s", i == PERCENTILE_COUNT - 1 ? "p99.9" : report_percentile_names[i], value);
	}
	cs_format_duration(value, sizeof(value), hist->max);
	fprintf(out, "  max %s\n", value);
}

static void text_workers(FILE *out, const struct cs_listener_stats *l)
{
	fprintf(out, "  %-11s %8s %8s %-16s %9s %7s %8s\n", "workers", "pid", "tid", "comm",
		"accepts", "share", "EAGAIN");
	for (size_t i = 0; i < l->worker_count; i++) {
		const struct cs_worker_stats *w = &l->workers[i];
		fprintf(out, "  %-11s %8u %8u %-16s %9" PRIu64 " %6.1f%% %8" PRIu64 "\n", "", w->pid,
			w->tid, w->comm, w->accepts, 100.0 * share(w->accepts, l->accepts), w->eagain);
	}
}

static void text_listener(FILE *out, const struct cs_listener_stats *l, const struct cs_report_meta *meta)
{
	fprintf(out, "listener :%u  (%zu socket%s, backlog limit %u)\n", l->port, l->socket_count,
		l->socket_count == 1 ? "" : "s", l->backlog_limit);
	fprintf(out, "  %-11s %" PRIu64 " (%.1f/s)   EAGAIN %" PRIu64 "   errors %" PRIu64, "accepts",
		l->accepts, per_second(l->accepts, meta->duration_s), l->eagain, l->accept_errors);
	if (l->accepts_unmatched)
		fprintf(out, "   partial %" PRIu64 " (queue wait unknown)", l->accepts_unmatched);
	fputc('\n', out);
	fprintf(out, "  %-11s", "accept wait");
	text_percentiles(out, l->accept_wait_ns);
	fprintf(out, "  %-11s max %u / limit %u   full %.1f%% of %" PRIu64 " samples   non-empty %.1f%%   "
		"mean %.1f\n", "backlog", l->backlog_max, l->backlog_limit,
		100.0 * share(l->backlog_full_samples, l->backlog_samples), l->backlog_samples,
		100.0 * share(l->backlog_nonempty_samples, l->backlog_samples),
		l->backlog_samples ? (double)l->backlog_sample_sum / (double)l->backlog_samples : 0.0);
	uint64_t queued_for_ns, queued = cs_listener_queued_through(l, &queued_for_ns);
	if (queued) {
		char waited[32];
		cs_format_duration(waited, sizeof(waited), queued_for_ns);
		fprintf(out, "  %-11s %" PRIu64 " connection(s) in the queue through the whole run (%s and more "
			"each), never accepted\n", "queued", queued, waited);
	}
	uint64_t drops = cs_listener_drops_seen(l, meta), ack_drops = cs_listener_ack_drops_seen(l, meta);
	fprintf(out, "  %-11s %" PRIu64 " SYN(s)", "drops", drops - ack_drops);
	if (ack_drops)
		fprintf(out, " and %" PRIu64 " handshake ACK(s)", ack_drops);
	fprintf(out, " dropped on this listener");
	if (meta->netstat.valid)
		fprintf(out, "  (kernel: ListenOverflows +%" PRIu64 ", ListenDrops +%" PRIu64
			", SyncookiesSent +%" PRIu64 ")", meta->netstat.listen_overflows,
			meta->netstat.listen_drops, meta->netstat.syncookies_sent);
	fputc('\n', out);
	if (l->handshakes_retransmitted) {
		char max[32] = "-";
		if (l->handshake_extra_ns->count)
			cs_format_duration(max, sizeof(max), l->handshake_extra_ns->max);
		fprintf(out, "  %-11s %" PRIu64 " local connect(s) retransmitted SYNs: %" PRIu64
			" delayed >= 1 s (max %s), %" PRIu64 " never got in (the client gave up)\n", "handshakes",
			l->handshakes_retransmitted, l->handshakes_delayed_1s, max, l->handshakes_failed);
	}
	text_workers(out, l);
}

static void text_bar(FILE *out, double share)
{
	const int width = 30;
	/*
	 * A share is in [0, 1] for any real run, but cause times summed from a
	 * hostile or corrupt trace can wrap around 2^64 and make it huge;
	 * converting such a double to int is undefined (found by fuzz_engine).
	 */
	if (!(share >= 0.0))
		share = 0.0;
	if (share > 1.0)
		share = 1.0;
	int filled = (int)(share * width + 0.5);
	for (int i = 0; i < width; i++)
		fputs(i < filled ? "#" : ".", out);
}

static void text_tail(FILE *out, const struct cs_tail *tail)
{
	if (!tail->requests)
		return;
	char threshold[32];
	cs_format_duration(threshold, sizeof(threshold), tail->threshold_ns);
	fprintf(out, "\nwhere the tail goes (p%g: %" PRIu64 " request(s) at or above %s)\n",
		tail->percentile, tail->requests, threshold);
	for (int i = 0; i < CS_CAUSE_COUNT; i++) {
		const struct cs_tail_cause *c = &tail->causes[i];
		if (c->share < 0.005)
			continue;
		fprintf(out, "  %-16s ", cs_cause_names[c->cause]);
		text_bar(out, c->share);
		fprintf(out, " %5.1f%%\n", 100.0 * c->share);
		char evidence[CS_SENTENCE_LEN];
		if (cs_cause_evidence(evidence, sizeof(evidence), c))
			fprintf(out, "  %-16s %s\n", "", evidence);
		if (cs_cause_advice(evidence, sizeof(evidence), c))
			fprintf(out, "  %-16s -> %s\n", "", evidence);
	}
}

/* TLS connections: their handshakes are set-up, not requests. */
static void text_tls(FILE *out, const struct cs_request_stats *r)
{
	if (!r->tls_connections)
		return;
	fprintf(out, "\ntls         %" PRIu64 " connection(s) (TLS 1.2: %" PRIu64 ", 1.3: %" PRIu64
		", 1.2 resumed: %" PRIu64 "); %" PRIu64 " handshake exchange(s) counted as set-up, not requests",
		r->tls_connections, r->tls12, r->tls13, r->tls_resumed, r->tls_handshake_exchanges);
	if (r->tls13_psk_offered || r->tls_psk_not_told)
		fprintf(out, "; 1.3 resumed: %" PRIu64 " of %" PRIu64 " that offered a session (pre_shared_key), told by "
			"the server's first flight (at most %d bytes: no certificate); %" PRIu64
			" ClientHello(s) whose offer could not be told",
			r->tls13_psk_resumed, r->tls13_psk_offered, CS_TLS13_RESUMED_FLIGHT_MAX, r->tls_psk_not_told);
	if (r->tls13_hello_retries)
		fprintf(out, "; %" PRIu64 " second ClientHello(s) after the server's HelloRetryRequest", r->tls13_hello_retries);
	if (r->tls_lost)
		fprintf(out, "; %" PRIu64 " whose records could not be told (their exchanges counted as requests)",
			r->tls_lost);
}

static void text_requests(FILE *out, const struct cs_report_view *view)
{
	const struct cs_request_stats *r = view->requests;
	const struct cs_report_meta *meta = view->meta;
	if (r->requests == 0 && r->unanswered == 0 && r->partial == 0)
		return;
	/* Traced in windows: the rate over the time traced. */
	double traced_s = meta->trace.sampled ? meta->trace.traced_s : meta->duration_s;
	fprintf(out, "requests    %" PRIu64 " (%.1f/s) on %" PRIu64 " new connection(s)", r->requests,
		per_second(r->requests, traced_s), r->first_on_connection);
	if (r->unanswered || r->partial)
		fprintf(out, "; %" PRIu64 " unanswered, %" PRIu64 " partial (began before %s)", r->unanswered,
			r->partial, meta->trace.sampled ? "the attach or a window" : "attach");
	text_tls(out, r);
	fprintf(out, "\nlatency    ");
	text_percentiles(out, r->latency_ns);
	text_tail(out, &view->analysis.tail);
	fputc('\n', out);
}

/* What the run shows, after "  ! name:", from the table of words; a second line where it has one. */
static void text_condition_seen(FILE *out, const struct cs_conditions *c, enum cs_condition condition)
{
	char text[CS_SENTENCE_LEN];
	cs_condition_text(text, sizeof(text), c, condition);
	fprintf(out, " %s", text);
	if (cs_condition_detail(text, sizeof(text), c, condition))
		fprintf(out, "\n      %s", text);
}

/* Who closed, resets, TIME_WAIT: the line above the conditions, when the run had any close. */
static void text_lifecycle(FILE *out, const struct cs_report_view *view)
{
	const struct cs_lifecycle_stats *life = view->lifecycle;
	const struct cs_conditions *cond = &view->analysis.conditions;
	uint64_t closes = cond->lifecycle.closed_by_server + cond->lifecycle.closed_by_client + cond->lifecycle.aborted;
	if (closes || life->resets_sent || life->resets_received)
		fprintf(out, "connections closed by server %" PRIu64 ", by client %" PRIu64 ", aborted %" PRIu64
			"; resets sent %" PRIu64 ", received %" PRIu64 "; TIME_WAIT left by the server ~%" PRIu64
			"; lifetime p50 %.1f ms\n\n", cond->lifecycle.closed_by_server,
			cond->lifecycle.closed_by_client, cond->lifecycle.aborted, life->resets_sent,
			life->resets_received, cond->lifecycle.time_wait_now, cond->lifecycle.lifetime_p50_ms);
}

static void text_conditions(FILE *out, const struct cs_report_view *view)
{
	const struct cs_analysis *analysis = &view->analysis;
	text_lifecycle(out, view);
	fprintf(out, "conditions\n");
	int shown = 0;
	for (int c = 0; c < CS_CONDITION_COUNT; c++) {
		if (!cs_analysis_flagged(analysis, (enum cs_condition)c))
			continue;
		shown++;
		fprintf(out, "  ! %s:", cs_condition_name((enum cs_condition)c));
		text_condition_seen(out, &analysis->conditions, (enum cs_condition)c);
		const struct cs_pool_condition *pool = &analysis->conditions.pool_saturation;
		fprintf(out, "\n      -> %s\n", c == CS_COND_POOL_SATURATION ? cs_pool_advice(pool->kind, pool->server)
							  : cs_condition_advice((enum cs_condition)c));
	}
	if (!shown)
		fprintf(out, "  none flagged\n");
	fputc('\n', out);
}

static void text_findings(FILE *out, const struct cs_analysis *analysis)
{
	fprintf(out, "diagnosis\n");
	if (analysis->finding_count == 0)
		fprintf(out, "  no accept-path problem found\n");
	for (size_t i = 0; i < analysis->finding_count; i++) {
		const struct cs_finding *f = &analysis->findings[i];
		char text[CS_SENTENCE_LEN], advice[CS_SENTENCE_LEN];
		cs_finding_text(text, sizeof(text), f);
		if (f->port)
			fprintf(out, "  ! :%u %s\n", f->port, text);
		else
			fprintf(out, "  ! %s\n", text);
		if (cs_finding_advice(advice, sizeof(advice), f))
			fprintf(out, "      -> %s\n", advice);
	}
}

/* A pool of hundreds of threads would drown the report: this many rows, then a count. */
#define TEXT_THREADS_MAX 24

struct text_threads_ctx {
	FILE *out;
	size_t shown, more;
};

static void text_thread(uint64_t key, void *value, void *ctx_ptr)
{
	(void)key;
	const struct cs_thread_stats *t = value;
	struct text_threads_ctx *ctx = ctx_ptr;
	unsigned roles = cs_thread_roles(t);
	if (!roles)
		return;
	if (ctx->shown == TEXT_THREADS_MAX) {
		ctx->more++;
		return;
	}
	if (!ctx->shown++)
		fprintf(ctx->out, "threads   %-15s %-28s %9s %8s %11s  %s\n", "comm", "roles", "requests", "accepts",
			"ready polls", "java name");
	char names[64];
	cs_format_roles(names, sizeof(names), roles);
	fprintf(ctx->out, "  %-7u %-15s %-28s %9" PRIu64 " %8" PRIu64 " %11" PRIu64 "  %s\n", t->tid,
		t->comm[0] ? t->comm : "?", names, t->requests, t->accepts, t->ready_polls, t->runtime_name);
}

/* The threads that took a role, found from what they did (JSON threads[] has them all). */
static void text_threads(FILE *out, const struct cs_report_view *view)
{
	struct text_threads_ctx ctx = { .out = out };
	cs_u64map_each(view->threads, text_thread, &ctx);
	if (ctx.more)
		fprintf(out, "  and %zu more thread(s) with roles (JSON threads[])\n", ctx.more);
	if (ctx.shown)
		fputc('\n', out);
}

/* Which container: "  netns 4026532301, cgroup /x/y, container docker:ID". */
static void text_labels(FILE *out, const struct cs_target_labels *labels)
{
	if (!labels || !labels->netns_ino)
		return;
	fprintf(out, "  netns %" PRIu32, labels->netns_ino);
	if (labels->cgroup[0])
		fprintf(out, ", cgroup %s", labels->cgroup);
	if (labels->container[0])
		fprintf(out, ", container %s", labels->container);
	fputc('\n', out);
}

/* Connections whose requests overlap: said first, kept out of every per-request figure. */
static void text_multiplexed(FILE *out, const struct cs_request_stats *r)
{
	if (r->connections_multiplexed)
		fprintf(out, "multiplexed: %" PRIu64 " connection(s) whose requests overlap (%" PRIu64
			" HTTP/2 by its preface, %" PRIu64 " HTTP/2 by the TLS server's choice, %" PRIu64
			" pipelined or multiplexed by timing, %" PRIu64 " pipelined and read at once): their %" PRIu64
			" exchange(s) are in no request latency or phase (their accept wait, set-up and lifetime are)\n",
			r->connections_multiplexed, r->multiplexed_h2, r->multiplexed_h2_alpn, cs_multiplexed_by_timing(r),
			r->multiplexed_one_read, r->multiplexed_exchanges);
	if (r->multiplexed_uncounted)
		fprintf(out, "multiplexed: of those, %" PRIu64 " Redis connection(s) whose pipelined commands could not be "
			     "counted (a command's header split over reads, or more in one read than the probe scans)\n",
			r->multiplexed_uncounted);
	if (r->pipelined_exchanges)
		fprintf(out, "pipelined: %" PRIu64 " Redis command(s) in %" PRIu64 " exchange(s) (%.1f each), read at once: "
			     "each is a request, timed from its exchange's first bytes to its last write\n",
			r->pipelined_commands, r->pipelined_exchanges,
			(double)r->pipelined_commands / (double)r->pipelined_exchanges);
	uint64_t h2_not_told = r->tls_alpn_h2 - r->tls_alpn_h2_chosen - r->tls_alpn_h2_declined;
	if (h2_not_told || r->tls_alpn_not_told)
		fprintf(out, "multiplexed over TLS: could not be told for %" PRIu64 " connection(s) that offered HTTP/2 "
			"(ALPN h2) and %" PRIu64 " whose offer was not read: the server's choice is encrypted "
			"(TLS 1.3); their exchanges count as requests unless they overlap\n",
			h2_not_told, r->tls_alpn_not_told);
}

/*
 * Connections older than the attach: followed from their first idle
 * moment; the request each had in flight then is left out (on a
 * connection never idle, pipelined or multiplexed, every request is).
 */
static void text_adopted(FILE *out, const struct cs_request_stats *r, const struct cs_report_meta *meta)
{
	if (!r->connections_adopted && !r->partial)
		return;
	fprintf(out, "%" PRIu64 " connections older than the attach, adopted at their first idle moment; %" PRIu64
		" requests in flight at the attach%s left out\n", r->connections_adopted, r->partial,
		meta->trace.sampled ? " or a window's start" : "");
	if (r->adopted_tls || r->not_a_start)
		fprintf(out, "  of them %" PRIu64 " over TLS, re-synchronised at a record header; %" PRIu64
			" not adopted where their bytes started no message (a TLS record or a body under way, a "
			"binary protocol): partial until an idle moment that does\n", r->adopted_tls, r->not_a_start);
}

/* The first line: the run, what of its records was kept, what could not be followed whole. */
static void text_run(FILE *out, const struct cs_report_view *view)
{
	const struct cs_report_meta *meta = view->meta;
	fprintf(out, "connscope: %s, %.1f s, %" PRIu64 " events, %" PRIu64 " lost", meta->target,
		meta->duration_s, view->totals->records, meta->events_lost);
	if (meta->probe_runs_skipped)
		fprintf(out, ", %" PRIu64 " probe runs skipped by the kernel", meta->probe_runs_skipped);
	/* What could not be followed whole: counted, kept out of every latency. */
	const struct cs_conn_partial *partial = &view->partial;
	if (partial->accepts || partial->requests || partial->closes)
		fprintf(out, ", partial (older than the attach): %" PRIu64 " accept(s), %" PRIu64
			" request(s), %" PRIu64 " close(s)", partial->accepts, partial->requests, partial->closes);
	if (view->conns_evicted || view->conns_timed_out)
		fprintf(out, ", connections forgotten: %" PRIu64 " evicted (table full), %" PRIu64
			" timed out (no event for %llu s)", view->conns_evicted, view->conns_timed_out,
			CS_CONN_TIMEOUT_NS / 1000000000ull);
	if (view->conns_forgotten_between)
		fprintf(out, ", %" PRIu64 " connection(s) left at a window's close (nothing of them is seen between "
			"windows)", view->conns_forgotten_between);
	if (view->handbacks_dropped)
		fprintf(out, ", %" PRIu64 " executor hand-back(s) not kept (table full: their requests' read -> send is "
			"handler)", view->handbacks_dropped);
	fputc('\n', out);
}

/* Where and when: the target's container, the recording's window, the run's start. */
static void text_where(FILE *out, const struct cs_report_meta *meta)
{
	text_labels(out, meta->labels);
	if (meta->window_to_s > 0)
		fprintf(out, "window %.1f s to %.1f s of the recording (connections older than it partial; lost records and "
			"kernel counters: the whole run's)\n", meta->window_from_s, meta->window_to_s);
	if (meta->stamp.start_unix_ns > 0) {
		char started[48];
		cs_run_stamp_format_utc(&meta->stamp, started, sizeof(started));
		fprintf(out, "started %s on %s, kernel %s\n", started, meta->stamp.host, meta->stamp.kernel);
	}
}

void cs_report_view_text(FILE *out, const struct cs_report_view *view)
{
	const struct cs_report_meta *meta = view->meta;
	text_run(out, view);
	text_adopted(out, view->requests, meta);
	cs_report_tracing_text(out, &view->tracing, meta);
	text_where(out, meta);
	text_multiplexed(out, view->requests);
	cs_report_clients_text(out, view);
	char cost[256];
	cs_cost_line(cost, sizeof(cost), &view->analysis.cost);
	fprintf(out, "%-11s %s\n\n", "cost", cost);
	text_requests(out, view);
	text_conditions(out, view);
	if (view->listener_count == 0)
		fprintf(out, "no accept activity seen on the target's listeners\n");
	for (size_t i = 0; i < view->listener_count; i++) {
		text_listener(out, &view->listeners[i], meta);
		fputc('\n', out);
	}

	cs_report_upstreams_text(out, view);
	text_threads(out, view);
	if (meta->slowest)
		cs_report_slowest_text(out, view);

	text_findings(out, &view->analysis);
	if (view->totals->malformed || meta->table_full)
		fprintf(out, "\nnote: %" PRIu64 " malformed record(s), %" PRIu64
			" in-kernel table insert(s) failed\n", view->totals->malformed, meta->table_full);
}

void cs_report_text(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta)
{
	struct cs_report_view *view = cs_report_view_new(engine, meta);
	if (!view) {
		fprintf(out, "connscope: out of memory: no report\n");
		return;
	}
	cs_report_view_text(out, view);
	cs_report_view_free(view);
}

/* ---- JSON ---------------------------------------------------------------- */
