// SPDX-License-Identifier: BSD-2-Clause
/* The human rendering of the engine's statistics (report_json.c: the JSON one). */
#include <inttypes.h>
#include <string.h>

#include "report.h"
#include "analysis.h"
#include "cost_render.h"
#include "report_internal.h"

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
	fprintf(out, "  %-11s %" PRIu64 " SYN(s) dropped on this listener", "drops", cs_listener_drops_seen(l, meta));
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
		if (c->evidence[0])
			fprintf(out, "  %-16s %s\n", "", c->evidence);
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

static void text_requests(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta,
			  const struct cs_analysis *analysis)
{
	const struct cs_request_stats *r = &engine->requests;
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
	text_tail(out, &analysis->tail);
	fputc('\n', out);
}

/* A duration in microseconds, as the report prints durations. */
static void format_us(char *buf, size_t len, double us)
{
	cs_format_duration(buf, len, (uint64_t)(us * 1e3));
}

/* non_persistent's set-up, by part: TCP (SYN retries), the accept queue, TLS. */
static void text_setup_split(FILE *out, const struct cs_conditions *c)
{
	char tcp[32], queue[32], tls[32];
	format_us(tcp, sizeof(tcp), c->non_persistent.setup_tcp_us);
	format_us(queue, sizeof(queue), c->non_persistent.setup_accept_us);
	format_us(tls, sizeof(tls), c->non_persistent.setup_tls_us);
	fprintf(out, "\n      set-up per connection: TCP (SYN retries) %s, accept queue %s, TLS handshake %s", tcp,
		queue, tls);
}

/* pool_saturation's evidence, by the pool's kind. */
static void text_pool_seen(FILE *out, const struct cs_pool_condition *pool)
{
	char mean[32], p99[32], cpu[32] = "", queue[48] = "";
	format_us(mean, sizeof(mean), pool->tail_wait_mean_us);
	if (pool->kind == CS_POOL_HANDOFF) {
		fprintf(out, " (handoff pool) ready requests waited for a pool thread (%.0f%% of the tail's time, %s "
			"per tail request): %s (tid %u) polls and hands them to %u pool thread(s), busy %.0f%% of the "
			"time they served", 100.0 * pool->tail_share, mean, pool->poller_comm[0] ? pool->poller_comm : "?",
			pool->poller_tid, pool->pool_threads, 100.0 * pool->busy_share);
		return;
	}
	format_us(p99, sizeof(p99), pool->wait_p99_us);
	if (pool->on_cpu_share >= 0)
		snprintf(cpu, sizeof(cpu), "on a CPU %.0f%%, ", 100.0 * pool->on_cpu_share);
	if (pool->queue_nonempty_share >= 0)
		snprintf(queue, sizeof(queue), " (queue non-empty in %.0f%% of samples)", 100.0 * pool->queue_nonempty_share);
	fprintf(out, " (accept pool) connections waited in :%u's accept queue for a free worker (%.0f%% of the "
		"tail's time, %s per tail request; accept wait p99 %s): %u of %u workers that accept and serve "
		"were busy, serving %.0f%% of their time away from accept()%s; that time: %swaiting for a CPU "
		"%.0f%%, blocked in handlers %.0f%%", pool->port, 100.0 * pool->tail_share, mean, p99,
		pool->busy_threads, pool->pool_threads, 100.0 * pool->busy_share, queue, cpu, 100.0 * pool->runq_share,
		100.0 * pool->blocked_share);
}

/* runtime_pauses' evidence: the run's pauses, what they were, and the tail's share. */
static void text_pauses_seen(FILE *out, const struct cs_pauses_condition *p)
{
	char total[32], p50[32], max[32], reach[32];
	cs_format_duration(total, sizeof(total), p->total_ns);
	cs_format_duration(p50, sizeof(p50), p->p50_ns);
	cs_format_duration(max, sizeof(max), p->max_ns);
	cs_format_duration(reach, sizeof(reach), p->reach_max_ns);
	fprintf(out, " the JVM stopped the server's threads %" PRIu64 " time(s), %s in all (%.1f%% of the run; "
		"p50 %s, max %s), %.0f%% of the tail's time; %" PRIu64 " pause(s) overlapped tail requests",
		p->pauses, total, 100.0 * p->stopped_share, p50, max, 100.0 * p->tail_share, p->tail_pauses);
	if (!p->named) {
		fprintf(out, "; what they were is not told (uprobes)");
		return;
	}
	fprintf(out, "; %" PRIu64 " collection(s)%s%s%s, %" PRIu64 " other VM operation(s)", p->gc_pauses,
		p->top_gc_op[0] ? " (" : "", p->top_gc_op, p->top_gc_op[0] ? ")" : "", p->other_pauses);
	if (p->top_other_op[0])
		fprintf(out, " (%s %" PRIu64 ")", p->top_other_op, p->top_other_op_pauses);
	fprintf(out, "; longest time to safepoint %s", reach);
}

/*
 * What the run shows, after "  ! name:": one writer per condition. The switch
 * has no default, so a condition added to the enum without its line
 * here is a -Wswitch error.
 */
static void text_condition_seen(FILE *out, const struct cs_conditions *c, enum cs_condition condition)
{
	char a[32], b[32], d[32];
	switch (condition) {
	case CS_COND_NON_PERSISTENT:
		format_us(a, sizeof(a), c->non_persistent.setup_cost_us);
		format_us(b, sizeof(b), c->non_persistent.median_latency_us);
		fprintf(out, " %.2f requests per connection; %.0f%% of requests paid connection set-up (%s on "
			"average, %.0f%% of the requests' time; the median request takes %s)",
			c->non_persistent.requests_per_connection, 100.0 * c->non_persistent.setup_share, a,
			100.0 * c->non_persistent.setup_time_share, b);
		text_setup_split(out, c);
		break;
	case CS_COND_IDLE_TIMEOUT:
		fprintf(out, " the server closed %" PRIu64 " idle keep-alive connection(s) after ~%.1f ms idle; %" PRIu64
			" reconnect(s) followed; %" PRIu64 " keep-alive race reset(s) (a request hit a connection "
			"the server had just closed)", c->idle_timeout.server_idle_closes,
			c->idle_timeout.inferred_timeout_ms, c->idle_timeout.reconnects,
			c->idle_timeout.keepalive_race_resets);
		break;
	case CS_COND_LISTEN_OVERFLOW:
		fprintf(out, " %" PRIu64 " SYN(s) dropped; %" PRIu64 " local connection(s) delayed >= 1 s, %" PRIu64
			" never got in (their clients gave up retrying)", c->listen_overflow.drops,
			c->listen_overflow.delayed_connections, c->listen_overflow.failed_connections);
		break;
	case CS_COND_ACCEPT_CONTENTION:
		format_us(a, sizeof(a), c->accept_contention.accept_wait_p99_us);
		fprintf(out, "%s%s%s accept wait p99 %s, busiest worker %.0f%% of accepts, %" PRIu64 " EAGAIN",
			c->accept_contention.acceptor_bottleneck ? " accepting lags;" : "",
			c->accept_contention.unfair ? " unfair spread;" : "",
			c->accept_contention.thundering_herd ? " thundering herd;" : "", a,
			100.0 * c->accept_contention.busiest_worker_share, c->accept_contention.eagain);
		break;
	case CS_COND_CONNECTION_LIMIT:
		format_us(a, sizeof(a), c->connection_limit.accept_wait_p99_us);
		fprintf(out, " :%u stopped accepting at %u open connection(s) (held there %.1f s); its acceptor "
			"waited for closes, blocked, not busy; accept wait p99 %s; slots freed by %" PRIu64
			" idle close(s), %" PRIu64 " client close(s)", c->connection_limit.port,
			c->connection_limit.open_connections, c->connection_limit.plateau_s, a,
			c->connection_limit.freed_by_idle_close, c->connection_limit.freed_by_client);
		break;
	case CS_COND_CPU_SATURATION:
		cs_format_duration(a, sizeof(a), c->cpu_saturation.runq_total_ns);
		cs_format_duration(b, sizeof(b), c->cpu_saturation.top_runq_ns);
		cs_format_duration(d, sizeof(d), c->cpu_saturation.runq_max_ns);
		fprintf(out, " server threads waited %s for a CPU; most %s (tid %u): %s (%.1f%% of the run); "
			"longest wait %s", a, c->cpu_saturation.top_comm, c->cpu_saturation.top_tid, b,
			100.0 * c->cpu_saturation.top_runq_share, d);
		break;
	case CS_COND_POOL_SATURATION:
		text_pool_seen(out, &c->pool_saturation);
		break;
	case CS_COND_RUNTIME_PAUSES:
		text_pauses_seen(out, &c->runtime_pauses);
		break;
	case CS_CONDITION_COUNT:
		break;
	}
}

/* Who closed, resets, TIME_WAIT: the line above the conditions, when the run had any close. */
static void text_lifecycle(FILE *out, const struct cs_engine *engine, const struct cs_conditions *cond)
{
	const struct cs_lifecycle_stats *life = &engine->lifecycle;
	uint64_t closes = cond->lifecycle.closed_by_server + cond->lifecycle.closed_by_client + cond->lifecycle.aborted;
	if (closes || life->resets_sent || life->resets_received)
		fprintf(out, "connections closed by server %" PRIu64 ", by client %" PRIu64 ", aborted %" PRIu64
			"; resets sent %" PRIu64 ", received %" PRIu64 "; TIME_WAIT left by the server ~%" PRIu64
			"; lifetime p50 %.1f ms\n\n", cond->lifecycle.closed_by_server,
			cond->lifecycle.closed_by_client, cond->lifecycle.aborted, life->resets_sent,
			life->resets_received, cond->lifecycle.time_wait_now, cond->lifecycle.lifetime_p50_ms);
}

static void text_conditions(FILE *out, const struct cs_engine *engine, const struct cs_analysis *analysis)
{
	text_lifecycle(out, engine, &analysis->conditions);
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
		if (f->port)
			fprintf(out, "  ! :%u %s\n", f->port, f->text);
		else
			fprintf(out, "  ! %s\n", f->text);
		if (f->advice[0])
			fprintf(out, "      -> %s\n", f->advice);
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
static void text_threads(FILE *out, const struct cs_engine *engine)
{
	struct text_threads_ctx ctx = { .out = out };
	cs_u64map_each(&engine->threads, text_thread, &ctx);
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
			" HTTP/2 by its preface, %" PRIu64 " pipelined or multiplexed by timing, %" PRIu64
			" pipelined and read at once): their %" PRIu64
			" exchange(s) are in no request latency or phase (their accept wait, set-up and lifetime are)\n",
			r->connections_multiplexed, r->multiplexed_h2,
			r->connections_multiplexed - r->multiplexed_h2 - r->multiplexed_one_read, r->multiplexed_one_read,
			r->multiplexed_exchanges);
	if (r->tls_alpn_h2 || r->tls_alpn_not_told)
		fprintf(out, "multiplexed over TLS: could not be told for %" PRIu64 " connection(s) that offered HTTP/2 "
			"(ALPN h2) and %" PRIu64 " whose offer was not read: the server's choice is encrypted; "
			"their exchanges count as requests unless they overlap\n",
			r->tls_alpn_h2, r->tls_alpn_not_told);
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

void cs_report_text(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta)
{
	fprintf(out, "connscope: %s, %.1f s, %" PRIu64 " events, %" PRIu64 " lost", meta->target,
		meta->duration_s, engine->totals.records, meta->events_lost);
	if (meta->probe_runs_skipped)
		fprintf(out, ", %" PRIu64 " probe runs skipped by the kernel", meta->probe_runs_skipped);
	/* What could not be followed whole: counted, kept out of every latency. */
	struct cs_conn_partial partial = cs_engine_partial(engine);
	if (partial.accepts || partial.requests || partial.closes)
		fprintf(out, ", partial (older than the attach): %" PRIu64 " accept(s), %" PRIu64
			" request(s), %" PRIu64 " close(s)", partial.accepts, partial.requests, partial.closes);
	if (engine->conns_evicted || engine->conns_timed_out)
		fprintf(out, ", connections forgotten: %" PRIu64 " evicted (table full), %" PRIu64
			" timed out (no event for %llu s)", engine->conns_evicted, engine->conns_timed_out,
			CS_CONN_TIMEOUT_NS / 1000000000ull);
	if (engine->handbacks_dropped)
		fprintf(out, ", %" PRIu64 " executor hand-back(s) not kept (table full: their requests' read -> send is "
			"handler)", engine->handbacks_dropped);
	fputc('\n', out);
	text_adopted(out, &engine->requests, meta);
	cs_report_tracing_text(out, engine, meta);
	text_labels(out, meta->labels);
	if (meta->window_to_s > 0)
		fprintf(out, "window %.1f s to %.1f s of the recording (connections older than it partial; lost records and "
			"kernel counters: the whole run's)\n", meta->window_from_s, meta->window_to_s);
	if (meta->stamp.start_unix_ns > 0) {
		char started[48];
		cs_run_stamp_format_utc(&meta->stamp, started, sizeof(started));
		fprintf(out, "started %s on %s, kernel %s\n", started, meta->stamp.host, meta->stamp.kernel);
	}
	text_multiplexed(out, &engine->requests);
	/* One analysis for every section below: the tail, the conditions, the diagnosis, the cost. */
	struct cs_analysis analysis;
	cs_analyze(engine, meta, &analysis);
	char cost[256];
	cs_cost_line(cost, sizeof(cost), &analysis.cost);
	fprintf(out, "%-11s %s\n\n", "cost", cost);
	text_requests(out, engine, meta, &analysis);
	text_conditions(out, engine, &analysis);
	if (engine->listener_count == 0)
		fprintf(out, "no accept activity seen on the target's listeners\n");
	for (size_t i = 0; i < engine->listener_count; i++) {
		text_listener(out, &engine->listeners[i], meta);
		fputc('\n', out);
	}

	text_threads(out, engine);
	if (meta->slowest)
		cs_report_slowest_text(out, engine, meta);

	text_findings(out, &analysis);
	if (engine->totals.malformed || meta->table_full)
		fprintf(out, "\nnote: %" PRIu64 " malformed record(s), %" PRIu64
			" in-kernel table insert(s) failed\n", engine->totals.malformed, meta->table_full);
}

/* ---- JSON ---------------------------------------------------------------- */
