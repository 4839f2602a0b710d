// SPDX-License-Identifier: BSD-2-Clause
/*
 * The JSON rendering of the engine's statistics (report.c: the text one),
 * built as one jansson object: the snapshot (live.c) adds its "live"
 * member to that same object, and `connscope diff` reads it without a
 * round trip through text. Numbers keep the report's precision (json.h).
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "analysis.h"
#include "cost_render.h"
#include "json.h"
#include "report_internal.h"
#include "report_view.h"
#include "template.h"
#include "words.h"

/* Counts go to json_pack's "I", which takes a json_int_t. */
#define JI(x) ((json_int_t)(x))

json_t *cs_report_percentiles_us(const struct cs_hist *hist)
{
	json_t *p = json_object();
	for (size_t i = 0; i < PERCENTILE_COUNT; i++)
		json_object_set_new(p, report_percentile_names[i],
				    cs_json_us(cs_hist_percentile(hist, report_percentiles[i])));
	json_object_set_new(p, "max", cs_json_us(hist->max));
	json_object_set_new(p, "count", json_integer(JI(hist->count)));
	return p;
}

/*
 * The histogram itself, its non-empty buckets as [lowest_us, highest_us,
 * count]: two reports can then be compared at any percentile
 * (connscope diff), not only at the ones printed.
 */
json_t *cs_report_buckets_us(const struct cs_hist *hist)
{
	json_t *list = json_array();
	for (size_t b = 0; b < CS_HIST_BUCKETS; b++)
		if (hist->buckets[b])
			json_array_append_new(list, json_pack("[o,o,I]", cs_json_us(cs_hist_bucket_lowest(b)),
							      cs_json_us(cs_hist_bucket_highest(b)),
							      JI(hist->buckets[b])));
	return list;
}

static json_t *workers(const struct cs_listener_stats *l)
{
	json_t *list = json_array();
	for (size_t i = 0; i < l->worker_count; i++) {
		const struct cs_worker_stats *w = &l->workers[i];
		json_array_append_new(list, json_pack("{s:I,s:I,s:o,s:I,s:I,s:I}", "pid", JI(w->pid), "tid",
						      JI(w->tid), "comm", cs_json_text(w->comm), "accepts",
						      JI(w->accepts), "eagain", JI(w->eagain), "errors", JI(w->errors)));
	}
	return list;
}

static json_t *listener(const struct cs_listener_stats *l, const struct cs_report_meta *meta)
{
	const struct cs_worker_stats *busiest = cs_listener_busiest_worker(l);
	json_t *handshakes = json_pack("{s:I,s:I,s:I,s:o}", "retransmitted", JI(l->handshakes_retransmitted),
				       "delayed_1s", JI(l->handshakes_delayed_1s), "failed", JI(l->handshakes_failed),
				       "extra_us", cs_report_percentiles_us(l->handshake_extra_ns));
	json_t *value = json_pack("{s:I,s:I,s:I,s:o,s:I,s:I,s:o,s:I,s:I,s:o,s:o,s:I,s:I,s:I,s:o,s:o,s:o}",
			 "port", JI(l->port), "sockets", JI(l->socket_count), "accepts", JI(l->accepts),
			 "accepts_per_s", cs_json_3(per_second(l->accepts, meta->duration_s)),
			 "accepts_partial", JI(l->accepts_unmatched), "accept_errors", JI(l->accept_errors),
			 "accept_wait_us", cs_report_percentiles_us(l->accept_wait_ns),
			 "backlog_max", JI(l->backlog_max), "backlog_limit", JI(l->backlog_limit),
			 "backlog_full_share", cs_json_4(share(l->backlog_full_samples, l->backlog_samples)),
			 "backlog_nonempty_share", cs_json_4(share(l->backlog_nonempty_samples, l->backlog_samples)),
			 "backlog_samples", JI(l->backlog_samples), "drops", JI(cs_listener_drops_seen(l, meta)),
			 "eagain", JI(l->eagain), "handshakes", handshakes,
			 "busiest_worker_share", cs_json_4(busiest ? share(busiest->accepts, l->accepts) : 0.0),
			 "workers", workers(l));
	/* Of the drops (as ListenOverflows counts them), the handshakes' last ACKs; the rest SYNs. */
	json_object_set_new(value, "ack_drops", json_integer(JI(cs_listener_ack_drops_seen(l, meta))));
	uint64_t queued_for_ns;
	uint64_t queued = cs_listener_queued_through(l, &queued_for_ns);
	json_object_set_new(value, "queued_through", json_integer(JI(queued)));
	json_object_set_new(value, "queued_through_us", cs_json_3((double)queued_for_ns / 1e3));
	return value;
}

/* ["acceptor",...]: what the thread does, from its behaviour. */
json_t *cs_report_roles(const struct cs_thread_stats *t)
{
	unsigned roles = cs_thread_roles(t);
	json_t *list = json_array();
	for (int i = 0; i < CS_ROLE_COUNT; i++)
		if (roles & (1u << i))
			json_array_append_new(list, json_string(cs_role_names[i]));
	return list;
}

static void thread(uint64_t key, void *value, void *list)
{
	(void)key;
	const struct cs_thread_stats *t = value;
	/* java_name: only what a runtime named (a JVM's threads), null for the others. */
	json_t *o = json_pack("{s:I,s:I,s:o,s:o,s:I,s:o,s:o}", "tid", JI(t->tid), "pid", JI(t->tgid), "comm",
			      cs_json_text(t->comm), "java_name",
			      t->runtime_name[0] ? cs_json_text(t->runtime_name) : json_null(), "requests",
			      JI(t->requests), "runq_total_us", cs_json_us(t->runq_total_ns), "runq_max_us",
			      cs_json_us(t->runq_max_ns));
	json_object_set_new(o, "runq_max_mean", json_boolean(cs_runq_max_is_mean(t)));
	for (int c = 0; c < CS_CAUSE_COUNT; c++) {
		char key_us[48];
		snprintf(key_us, sizeof(key_us), "%s_us", cs_cause_names[c]);
		json_object_set_new(o, key_us, cs_json_us(t->cause_ns[c]));
	}
	json_object_set_new(o, "roles", cs_report_roles(t));
	const struct {
		const char *key;
		uint64_t value;
	} counts[] = { { "accepts", t->accepts },	  { "ready_polls", t->ready_polls },
		       { "reads_own", t->reads_own },	  { "reads_handed", t->reads_handed },
		       { "handed_out", t->handed_out }, { "reads_blocking", t->reads_blocking },
		       { "parked_out", t->parked_out }, { "executed", t->executed } };
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		json_object_set_new(o, counts[i].key, json_integer(JI(counts[i].value)));
	json_array_append_new(list, o);
}

static json_t *tail_value(const struct cs_tail *tail)
{
	json_t *causes = json_array();
	for (int i = 0; i < CS_CAUSE_COUNT && tail->requests; i++) {
		const struct cs_tail_cause *cause = &tail->causes[i];
		char evidence[CS_SENTENCE_LEN], advice[CS_SENTENCE_LEN];
		cs_cause_evidence(evidence, sizeof(evidence), cause);
		json_t *o = json_pack("{s:s,s:o,s:o,s:I,s:o,s:o}", "cause", cs_cause_names[cause->cause], "share",
				      cs_json_4(cause->share), "time_us", cs_json_us(cause->ns), "requests",
				      JI(cause->requests), "evidence", cs_json_text(evidence), "figures",
				      cs_figures_value(&cause->evidence));
		bool advised = cs_cause_advice(advice, sizeof(advice), cause) > 0;
		json_object_set_new(o, "advice", advised ? cs_json_text(advice) : json_null());
		json_array_append_new(causes, o);
	}
	return json_pack("{s:f,s:o,s:I,s:o}", "percentile", tail->percentile, "threshold_us",
			 cs_json_us(tail->threshold_ns), "requests", JI(tail->requests), "causes", causes);
}

/* blocked_share and on_cpu_share: null when the trace has no CPU time (blocked_share < 0). */
static json_t *connection_limit(const struct cs_conditions *conditions)
{
	const typeof(conditions->connection_limit) *c = &conditions->connection_limit;
	bool known = c->blocked_share >= 0;
	json_t *o = json_pack("{s:b,s:I,s:I,s:o,s:o,s:o,s:o,s:I,s:I,s:o,s:o,s:I,s:I,s:I}", "flagged", c->flagged,
			 "port", JI(c->port), "open_connections", JI(c->open_connections), "plateau_s",
			 cs_json_3(c->plateau_s), "blocked_share", known ? cs_json_4(c->blocked_share) : json_null(),
			 "on_cpu_share", known ? cs_json_4(c->on_cpu_share) : json_null(), "handler_share",
			 cs_json_4(c->handler_share), "waits", JI(c->waits), "queued_waits", JI(c->queued_waits),
			 "wait_share", cs_json_4(c->wait_share), "accept_wait_p99_us", cs_json_3(c->accept_wait_p99_us),
			 "freed_by_idle_close", JI(c->freed_by_idle_close), "freed_by_client", JI(c->freed_by_client),
			 "freed_other", JI(c->freed_other));
	json_object_set_new(o, "made_room", json_integer(JI(c->made_room)));
	json_object_set_new(o, "held_by_pool", json_boolean(c->held_by_pool));
	return o;
}

/*
 * pool_saturation: the hand-off pool's figures, and an accept pool's (null
 * for a hand-off pool); a hand-off pool's server when its poller's name
 * tells it, its listener when its poller accepts (accept_held).
 */
static json_t *pool_value(const struct cs_pool_condition *pool)
{
	bool accept = pool->kind == CS_POOL_ACCEPT;
	json_t *p = json_pack("{s:b,s:s,s:I,s:I,s:o,s:o,s:o,s:o,s:o}", "flagged", pool->flagged, "kind",
			      cs_pool_kind_name(pool->kind), "pool_threads", JI(pool->pool_threads), "poller_tid",
			      JI(pool->poller_tid), "poller_comm", cs_json_text(pool->poller_comm), "busy_share",
			      cs_json_4(pool->busy_share), "tail_share", cs_json_4(pool->tail_share),
			      "tail_wait_mean_us", cs_json_3(pool->tail_wait_mean_us), "wait_p99_us",
			      cs_json_3(pool->wait_p99_us));
	json_object_set_new(p, "workers", json_integer(JI(pool->pool_threads)));
	json_object_set_new(p, "busy_workers", accept ? json_integer(JI(pool->busy_threads)) : json_null());
	json_object_set_new(p, "busy", json_boolean(pool->busy));
	json_object_set_new(p, "busy_while_waiting_share", !accept && pool->busy_while_waiting_share >= 0
								    ? cs_json_4(pool->busy_while_waiting_share)
								    : json_null());
	json_object_set_new(p, "wait_cause", json_string(cs_pool_wait_cause_names[pool->wait_cause]));
	bool held = pool->accept_held, named = accept || pool->server != CS_POOL_SERVER_OTHER;
	json_object_set_new(p, "port", accept || held ? json_integer(JI(pool->port)) : json_null());
	json_object_set_new(p, "server", named ? json_string(cs_pool_server_name(pool->server)) : json_null());
	json_object_set_new(p, "accept_held", json_boolean(held));
	json_object_set_new(p, "accept_wait_p99_us", held ? cs_json_3(pool->accept_wait_p99_us) : json_null());
	json_object_set_new(p, "dropped_closes", json_integer(JI(pool->dropped_closes)));
	json_object_set_new(p, "dropped_wait_mean_us", held ? cs_json_3(pool->dropped_wait_mean_us) : json_null());
	json_object_set_new(p, "idle_closes", json_integer(JI(pool->idle_closes)));
	json_object_set_new(p, "idle_gap_max_us", pool->idle_closes ? cs_json_3(pool->idle_gap_max_us) : json_null());
	json_object_set_new(p, "handler_p99_us", pool->idle_closes ? cs_json_3(pool->handler_p99_us) : json_null());
	json_object_set_new(p, "on_cpu_share",
			    accept && pool->on_cpu_share >= 0 ? cs_json_4(pool->on_cpu_share) : json_null());
	json_object_set_new(p, "runq_share", accept ? cs_json_4(pool->runq_share) : json_null());
	json_object_set_new(p, "blocked_share", accept ? cs_json_4(pool->blocked_share) : json_null());
	json_object_set_new(p, "queue_nonempty_share", accept && pool->queue_nonempty_share >= 0 ? cs_json_4(pool->queue_nonempty_share) : json_null());
	return p;
}

/* runtime_pauses: the run's pauses, what they were, the tail's share. */
static json_t *pauses_value(const struct cs_pauses_condition *p)
{
	json_t *o = json_pack("{s:b,s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:o}", "flagged", p->flagged, "pauses", JI(p->pauses),
			      "gc_pauses", JI(p->gc_pauses), "other_pauses", JI(p->other_pauses), "total_us",
			      cs_json_us(p->total_ns), "max_us", cs_json_us(p->max_ns), "p50_us", cs_json_us(p->p50_ns),
			      "stopped_share", cs_json_4(p->stopped_share), "tail_share", cs_json_4(p->tail_share));
	json_object_set_new(o, "tail_pauses", json_integer(JI(p->tail_pauses)));
	json_object_set_new(o, "named", json_boolean(p->named));
	json_object_set_new(o, "time_to_safepoint_p50_us", p->reach_p50_ns ? cs_json_us(p->reach_p50_ns) : json_null());
	json_object_set_new(o, "time_to_safepoint_max_us", p->reach_max_ns ? cs_json_us(p->reach_max_ns) : json_null());
	json_object_set_new(o, "gc_operation", p->top_gc_op[0] ? cs_json_text(p->top_gc_op) : json_null());
	json_object_set_new(o, "other_operation", p->top_other_op[0] ? cs_json_text(p->top_other_op) : json_null());
	json_object_set_new(o, "other_operation_pauses", json_integer(JI(p->top_other_op_pauses)));
	bool runq_known = p->vm_cpu_wait_share >= 0;
	json_object_set_new(o, "vm_cpu_wait_us", runq_known ? cs_json_us(p->vm_cpu_wait_ns) : json_null());
	json_object_set_new(o, "vm_cpu_wait_share", runq_known ? cs_json_4(p->vm_cpu_wait_share) : json_null());
	return o;
}

static json_t *saturation(const struct cs_conditions *c, json_t *conditions)
{
	const typeof(c->cpu_saturation) *cpu = &c->cpu_saturation;
	const typeof(c->pool_saturation) *pool = &c->pool_saturation;
	json_object_set_new(conditions, "cpu_saturation",
			    json_pack("{s:b,s:o,s:I,s:o,s:o,s:o,s:o}", "flagged", cpu->flagged, "runq_total_us",
				      cs_json_us(cpu->runq_total_ns), "top_tid", JI(cpu->top_tid), "top_comm",
				      cs_json_text(cpu->top_comm), "top_runq_us", cs_json_us(cpu->top_runq_ns),
				      "top_runq_share", cs_json_4(cpu->top_runq_share), "runq_max_us",
				      cs_json_us(cpu->runq_max_ns)));
	json_object_set_new(json_object_get(conditions, "cpu_saturation"), "runq_max_mean",
			    json_boolean(cpu->runq_max_is_mean));
	json_object_set_new(conditions, "pool_saturation", pool_value(pool));
	json_object_set_new(conditions, "runtime_pauses", pauses_value(&c->runtime_pauses));
	json_object_set_new(conditions, "client_bound", cs_report_client_bound_value(&c->client_bound));
	return conditions;
}

static json_t *conditions_value(const struct cs_conditions *c)
{
	const typeof(c->accept_contention) *ac = &c->accept_contention;
	json_t *o = json_pack(
		"{s:{s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o},s:{s:b,s:I,s:o,s:I,s:I},s:{s:b,s:I,s:I,s:I},s:{s:b,s:b,s:b,s:b,s:o,s:I,s:o},"
		"s:o}",
		"non_persistent", "flagged", c->non_persistent.flagged, "requests_per_connection",
		cs_json_3(c->non_persistent.requests_per_connection), "setup_share",
		cs_json_4(c->non_persistent.setup_share), "setup_cost_us", cs_json_3(c->non_persistent.setup_cost_us),
		"setup_accept_us", cs_json_3(c->non_persistent.setup_accept_us), "setup_tcp_us",
		cs_json_3(c->non_persistent.setup_tcp_us), "setup_tls_us", cs_json_3(c->non_persistent.setup_tls_us),
		"setup_protocol_us", cs_json_3(c->non_persistent.setup_protocol_us),
		"setup_time_share", cs_json_4(c->non_persistent.setup_time_share),
		"median_latency_us", cs_json_3(c->non_persistent.median_latency_us),
		"idle_timeout", "flagged", c->idle_timeout.flagged, "server_idle_closes",
		JI(c->idle_timeout.server_idle_closes), "inferred_timeout_ms",
		cs_json_3(c->idle_timeout.inferred_timeout_ms), "reconnects", JI(c->idle_timeout.reconnects),
		"keepalive_race_resets", JI(c->idle_timeout.keepalive_race_resets),
		"listen_overflow", "flagged", c->listen_overflow.flagged, "drops", JI(c->listen_overflow.drops),
		"delayed_connections", JI(c->listen_overflow.delayed_connections), "failed_connections",
		JI(c->listen_overflow.failed_connections),
		"accept_contention", "flagged", ac->flagged, "acceptor_bottleneck", ac->acceptor_bottleneck, "unfair",
		ac->unfair, "thundering_herd", ac->thundering_herd, "busiest_worker_share",
		cs_json_4(ac->busiest_worker_share), "eagain", JI(ac->eagain), "accept_wait_p99_us",
		cs_json_3(ac->accept_wait_p99_us),
		"connection_limit", connection_limit(c));
	json_object_set_new(json_object_get(o, "idle_timeout"), "pool_closes", json_integer(JI(c->idle_timeout.pool_closes)));
	return saturation(c, o);
}

static json_t *lifecycle(const struct cs_conditions *conditions)
{
	const typeof(conditions->lifecycle) *c = &conditions->lifecycle;
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:o,s:o}", "closed_by_server", JI(c->closed_by_server),
			 "closed_by_client", JI(c->closed_by_client), "aborted", JI(c->aborted), "time_wait_created",
			 JI(c->time_wait_created), "time_wait_now", JI(c->time_wait_now), "resets_sent",
			 JI(c->resets_sent), "resets_received", JI(c->resets_received), "lifetime_p50_ms",
			 cs_json_3(c->lifetime_p50_ms), "lifetime_p99_ms", cs_json_3(c->lifetime_p99_ms),
			 "lifetime_max_ms", cs_json_3(c->lifetime_max_ms));
}

/* TLS connections and what their exchanges were (exchanges.c). */
static json_t *tls_value(const struct cs_report_view *view)
{
	const struct cs_request_stats *r = view->requests;
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "connections",
			 JI(r->tls_connections), "alpn_h2", JI(r->tls_alpn_h2), "alpn_h2_chosen", JI(r->tls_alpn_h2_chosen),
			 "alpn_h2_declined", JI(r->tls_alpn_h2_declined), "alpn_not_told", JI(r->tls_alpn_not_told),
			 "handshakes", JI(r->tls_handshakes), "tls12", JI(r->tls12), "tls13", JI(r->tls13), "resumed",
			 JI(r->tls_resumed + r->tls13_psk_resumed), "resumed_tls12", JI(r->tls_resumed),
			 "tls13_psk_offered", JI(r->tls13_psk_offered), "tls13_psk_resumed", JI(r->tls13_psk_resumed),
			 "psk_not_told", JI(r->tls_psk_not_told), "hello_retries", JI(r->tls13_hello_retries), "handshake_exchanges", JI(r->tls_handshake_exchanges), "control_exchanges",
			 JI(r->tls_control_exchanges), "not_told", JI(r->tls_lost), "bytes_unreadable",
			 JI(r->bytes_unreadable), "close_notify_resets", JI(view->lifecycle->tls_close_resets),
			 "setup_total_us", cs_json_us(r->setup_tls_ns));
}

static void add_requests(json_t *report, const struct cs_report_view *view)
{
	const struct cs_request_stats *r = view->requests;
	const struct cs_analysis *analysis = &view->analysis;
	json_object_set_new(report, "requests", json_integer(JI(r->requests)));
	json_object_set_new(report, "requests_unanswered", json_integer(JI(r->unanswered)));
	json_object_set_new(report, "requests_partial", json_integer(JI(r->partial)));
	/* The same two figures by what they are: connections older than the attach. */
	json_object_set_new(report, "connections_adopted", json_integer(JI(r->connections_adopted)));
	json_object_set_new(report, "requests_in_flight_at_attach", json_integer(JI(r->partial)));
	json_object_set_new(report, "adopted", json_pack("{s:I,s:I}", "tls_resynchronised", JI(r->adopted_tls),
							 "not_a_message_start", JI(r->not_a_start)));
	json_object_set_new(report, "connections", json_integer(JI(r->first_on_connection)));
	json_object_set_new(report, "connections_multiplexed", json_integer(JI(r->connections_multiplexed)));
	json_object_set_new(report, "multiplexed",
			    json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "connections", JI(r->connections_multiplexed),
				      "h2_preface", JI(r->multiplexed_h2), "h2_alpn", JI(r->multiplexed_h2_alpn), "overlap",
				      JI(cs_multiplexed_by_timing(r)),
				      "one_read", JI(r->multiplexed_one_read), "uncounted", JI(r->multiplexed_uncounted),
				      "exchanges", JI(r->multiplexed_exchanges)));
	json_object_set_new(report, "pipelined", json_pack("{s:I,s:I}", "exchanges", JI(r->pipelined_exchanges), "commands", JI(r->pipelined_commands)));
	json_t *protocols = json_object();
	for (int p = 0; p < CS_PROTOCOL_COUNT; p++)
		json_object_set_new(protocols, cs_protocol_names[p], json_integer(JI(r->connections_by_protocol[p])));
	json_object_set_new(report, "connections_by_protocol", protocols);
	json_object_set_new(report, "protocol_setup",
			    json_pack("{s:I,s:I,s:I,s:I,s:o}", "connections", JI(r->protocol_setups), "exchanges",
				      JI(r->protocol_setup_exchanges), "goodbyes", JI(r->goodbye_exchanges),
				      "greetings", JI(r->greetings), "setup_total_us",
				      cs_json_us(r->setup_protocol_ns)));
	json_object_set_new(report, "tls", tls_value(view));
	json_object_set_new(report, "latency_us", cs_report_percentiles_us(r->latency_ns));
	json_object_set_new(report, "latency_buckets_us", cs_report_buckets_us(r->latency_ns));
	json_object_set_new(report, "tail", tail_value(&analysis->tail));
	json_object_set_new(report, "conditions", conditions_value(&analysis->conditions));
	json_object_set_new(report, "lifecycle", lifecycle(&analysis->conditions));
	json_t *threads = json_array();
	cs_u64map_each(view->threads, thread, threads);
	json_object_set_new(report, "threads", threads);
	json_object_set_new(report, "upstreams", cs_report_upstreams_value(view));
	json_object_set_new(report, "clients", cs_report_clients_value(view));
	json_object_set_new(report, "upstreams_untracked", json_integer(JI(view->upstream_untracked)));
	json_object_set_new(report, "remote_connections", json_integer(JI(view->remote_connections)));
}

/* A CLOCK_MONOTONIC time, null when not known. */
static json_t *mono_ns(uint64_t ns)
{
	return ns ? json_integer(JI(ns)) : json_null();
}

/*
 * When and where the run started: start_utc, host, kernel; nulls when
 * unknown (older traces). A live run's probes were live from live_from_ns
 * to live_to_ns on CLOCK_MONOTONIC: what a client's own log is compared
 * over (nulls from a trace file).
 */
static json_t *run_stamp(const struct cs_report_meta *meta)
{
	const struct cs_run_stamp *stamp = &meta->stamp;
	json_t *run;
	if (stamp->start_unix_ns <= 0) {
		run = json_pack("{s:n,s:n,s:n}", "start_utc", "host", "kernel");
	} else {
		char started[48];
		cs_run_stamp_format_utc(stamp, started, sizeof(started));
		run = json_pack("{s:o,s:o,s:o}", "start_utc", cs_json_text(started), "host",
				cs_json_text(stamp->host), "kernel", cs_json_text(stamp->kernel));
	}
	json_object_set_new(run, "live_from_mono_ns", mono_ns(meta->live_from_ns));
	json_object_set_new(run, "live_to_mono_ns", mono_ns(meta->live_to_ns));
	return run;
}

/* The run: what was watched, where, for how long, and what of its records was kept. */
static void add_run(json_t *report, const struct cs_report_view *view)
{
	const struct cs_report_meta *meta = view->meta;
	json_object_set_new(report, "target", cs_json_text(meta->target));
	json_object_set_new(report, "run", run_stamp(meta));
	if (meta->window_to_s > 0)
		json_object_set_new(report, "window", json_pack("{s:o,s:o}", "from_s", cs_json_3(meta->window_from_s),
								"to_s", cs_json_3(meta->window_to_s)));
	if (meta->labels && meta->labels->netns_ino)
		json_object_set_new(report, "target_labels",
				    json_pack("{s:I,s:o,s:o}", "netns", JI(meta->labels->netns_ino), "cgroup",
					      cs_json_text(meta->labels->cgroup), "container",
					      cs_json_text(meta->labels->container)));
	json_object_set_new(report, "duration_s", cs_json_3(meta->duration_s));
	json_object_set_new(report, "tracing", cs_report_tracing_value(&view->tracing, meta));
	const struct cs_conn_partial partial = view->partial;
	json_object_set_new(report, "events",
			    json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "received",
				      JI(view->totals->records), "lost", JI(meta->events_lost), "malformed",
				      JI(view->totals->malformed), "table_full", JI(meta->table_full), "partial",
				      JI(partial.accepts + partial.requests + partial.closes), "partial_accepts",
				      JI(partial.accepts), "partial_requests", JI(partial.requests), "partial_closes",
				      JI(partial.closes), "evicted", JI(view->conns_evicted), "timed_out",
				      JI(view->conns_timed_out), "forgotten_between_windows", JI(view->conns_forgotten_between),
				      "followed", JI(view->conns_followed), "skipped",
				      JI(meta->probe_runs_skipped), "handbacks_dropped", JI(view->handbacks_dropped)));
	if (meta->netstat.valid)
		json_object_set_new(report, "kernel",
				    json_pack("{s:I,s:I,s:I}", "listen_overflows", JI(meta->netstat.listen_overflows),
					      "listen_drops", JI(meta->netstat.listen_drops), "syncookies_sent",
					      JI(meta->netstat.syncookies_sent)));
}

static json_t *findings_value(const struct cs_analysis *analysis)
{
	json_t *list = json_array();
	for (size_t i = 0; i < analysis->finding_count; i++) {
		const struct cs_finding *f = &analysis->findings[i];
		char text[CS_SENTENCE_LEN], advice[CS_SENTENCE_LEN];
		cs_finding_text(text, sizeof(text), f);
		cs_finding_advice(advice, sizeof(advice), f);
		json_array_append_new(list, json_pack("{s:o,s:I,s:o,s:o,s:o}", "code", cs_json_text(f->code), "port",
						      JI(f->port), "text", cs_json_text(text), "advice", cs_json_text(advice),
						      "figures", cs_figures_value(&f->figures)));
	}
	return list;
}

/*
 * The latest pauses kept, oldest first, on the probes' clock
 * (CLOCK_MONOTONIC ns, the JVM's -Xlog decorator "tn"): to set beside
 * the JVM's own log.
 */
#define JSON_PAUSES_MAX 512

static json_t *pauses_list(const struct cs_pause_stats *stats)
{
	json_t *list = json_array();
	size_t from = stats->recent_count > JSON_PAUSES_MAX ? stats->recent_count - JSON_PAUSES_MAX : 0;
	for (size_t i = from; i < stats->recent_count; i++) {
		const struct cs_pause *p = cs_pause_kept(stats, i);
		const struct cs_pause_op *op = p->op < stats->op_count ? &stats->ops[p->op] : NULL;
		uint64_t reach = cs_pause_reach_ns(p);
		json_t *o = json_pack("{s:I,s:I,s:o,s:b,s:b,s:o}", "begin_ns", JI(p->begin_ns), "end_ns", JI(p->end_ns),
				      "pause_us", cs_json_us(cs_pause_ns(p)), "gc", (p->flags & CS_PAUSE_GC) != 0, "full",
				      (p->flags & CS_PAUSE_GC_FULL) != 0, "gc_us", cs_json_us(p->gc_ns));
		json_object_set_new(o, "time_to_safepoint_us", reach ? cs_json_us(reach) : json_null());
		bool runq_known = p->flags & CS_PAUSE_RUNQ;
		json_object_set_new(o, "vm_cpu_wait_us", runq_known ? cs_json_us(p->vm_runq_ns) : json_null());
		json_object_set_new(o, "gc_cpu_wait_us", runq_known ? cs_json_us(p->gc_runq_ns) : json_null());
		json_object_set_new(o, "operation", op && op->name[0] ? cs_json_text(op->name) : json_null());
		json_object_set_new(o, "requests", json_integer(JI(p->requests)));
		json_object_set_new(o, "worst_request_us", cs_json_us(p->worst_request_ns));
		json_array_append_new(list, o);
	}
	return list;
}

json_t *cs_report_view_value(const struct cs_report_view *view)
{
	const struct cs_report_meta *meta = view->meta;
	json_t *report = json_pack("{s:i}", "schema_version", CS_REPORT_SCHEMA_VERSION);
	add_run(report, view);
	json_t *listeners = json_array();
	for (size_t i = 0; i < view->listener_count; i++)
		json_array_append_new(listeners, listener(&view->listeners[i], meta));
	json_object_set_new(report, "listeners", listeners);
	add_requests(report, view);
	json_object_set_new(report, "findings", findings_value(&view->analysis));
	json_object_set_new(report, "pauses", pauses_list(view->pauses));
	json_object_set_new(report, "cost", cs_cost_value(view->bpf_cost, &view->analysis.cost, true));
	if (meta->slowest)
		json_object_set_new(report, "slowest", cs_report_slowest_value(view));
	return report;
}

json_t *cs_report_value(const struct cs_engine *engine, const struct cs_report_meta *meta)
{
	struct cs_report_view *view = cs_report_view_new(engine, meta);
	if (!view)
		return NULL;
	json_t *report = cs_report_view_value(view);
	cs_report_view_free(view);
	return report;
}

void cs_report_json(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta)
{
	cs_json_dump(out, cs_report_value(engine, meta));
}
