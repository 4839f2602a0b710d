// SPDX-License-Identifier: BSD-2-Clause
/*
 * Each flagged condition's figures: the numbers its line in the report
 * quotes, from the conditions' own fields (attrib.h). Their words are
 * daemon/render/words.c's.
 */
#include "attrib.h"

/* A time the conditions keep in microseconds, as a figure in nanoseconds. */
static void figure_us(struct cs_figures *f, const char *key, double us)
{
	cs_figures_ns(f, key, us > 0 ? (uint64_t)(us * 1e3) : 0);
}

static void non_persistent(const struct cs_conditions *c, struct cs_figures *f)
{
	cs_figures_ratio(f, "requests_per_connection", c->non_persistent.requests_per_connection);
	cs_figures_share(f, "setup_share", c->non_persistent.setup_share);
	figure_us(f, "setup_cost", c->non_persistent.setup_cost_us);
	cs_figures_share(f, "setup_time_share", c->non_persistent.setup_time_share);
	figure_us(f, "median_latency", c->non_persistent.median_latency_us);
	figure_us(f, "setup_tcp", c->non_persistent.setup_tcp_us);
	figure_us(f, "setup_accept", c->non_persistent.setup_accept_us);
	figure_us(f, "setup_tls", c->non_persistent.setup_tls_us);
	figure_us(f, "setup_protocol", c->non_persistent.setup_protocol_us);
}

static void connection_limit(const struct cs_conditions *c, struct cs_figures *f)
{
	cs_figures_count(f, "port", c->connection_limit.port);
	cs_figures_count(f, "open_connections", c->connection_limit.open_connections);
	cs_figures_ratio(f, "plateau_s", c->connection_limit.plateau_s);
	figure_us(f, "accept_wait_p99", c->connection_limit.accept_wait_p99_us);
	cs_figures_count(f, "freed_by_idle_close", c->connection_limit.freed_by_idle_close);
	cs_figures_count(f, "freed_by_client", c->connection_limit.freed_by_client);
}

static void cpu_saturation(const struct cs_conditions *c, struct cs_figures *f)
{
	cs_figures_ns(f, "runq_total", c->cpu_saturation.runq_total_ns);
	cs_figures_comm(f, "top_comm", c->cpu_saturation.top_comm);
	cs_figures_count(f, "top_tid", c->cpu_saturation.top_tid);
	cs_figures_ns(f, "top_runq", c->cpu_saturation.top_runq_ns);
	cs_figures_share(f, "top_runq_share", c->cpu_saturation.top_runq_share);
	cs_figures_ns(f, "runq_max", c->cpu_saturation.runq_max_ns);
	cs_figures_flag(f, "runq_max_mean", c->cpu_saturation.runq_max_is_mean);
}

/* A hand-off pool whose poller accepts: the accept queue it left waiting, the requests it dropped. */
static void handoff_accepts(const struct cs_pool_condition *pool, struct cs_figures *f)
{
	cs_figures_flag(f, "accept_held", pool->accept_held);
	if (!pool->accept_held)
		return;
	cs_figures_count(f, "port", pool->port);
	figure_us(f, "accept_wait_p99", pool->accept_wait_p99_us);
	cs_figures_count(f, "dropped_closes", pool->dropped_closes);
	figure_us(f, "dropped_wait_mean", pool->dropped_wait_mean_us);
	cs_figures_count(f, "idle_closes", pool->idle_closes);
	if (!pool->idle_closes)
		return;
	figure_us(f, "idle_gap_max", pool->idle_gap_max_us);
	figure_us(f, "handler_p99", pool->handler_p99_us);
}

/* A hand-off pool's poller; an accept pool's listener and what its workers' time away was. */
static void pool_saturation(const struct cs_pool_condition *pool, struct cs_figures *f)
{
	bool accept = pool->kind == CS_POOL_ACCEPT;
	cs_figures_flag(f, "accept_pool", accept);
	cs_figures_share(f, "tail_share", pool->tail_share);
	figure_us(f, "tail_wait_mean", pool->tail_wait_mean_us);
	cs_figures_count(f, "pool_threads", pool->pool_threads);
	cs_figures_share(f, "busy_share", pool->busy_share);
	if (!accept) {
		if (pool->busy_while_waiting_share >= 0)
			cs_figures_share(f, "busy_while_waiting_share", pool->busy_while_waiting_share);
		cs_figures_comm(f, "poller_comm", pool->poller_comm);
		cs_figures_count(f, "poller_tid", pool->poller_tid);
		handoff_accepts(pool, f);
		return;
	}
	cs_figures_count(f, "port", pool->port);
	figure_us(f, "wait_p99", pool->wait_p99_us);
	cs_figures_count(f, "busy_threads", pool->busy_threads);
	if (pool->queue_nonempty_share >= 0)
		cs_figures_share(f, "queue_nonempty_share", pool->queue_nonempty_share);
	if (pool->on_cpu_share >= 0)
		cs_figures_share(f, "on_cpu_share", pool->on_cpu_share);
	cs_figures_share(f, "runq_share", pool->runq_share);
	cs_figures_share(f, "blocked_share", pool->blocked_share);
}

/* The run's pauses, what they were, the tail's share. */
static void runtime_pauses(const struct cs_pauses_condition *p, struct cs_figures *f)
{
	cs_figures_count(f, "pauses", p->pauses);
	cs_figures_ns(f, "total", p->total_ns);
	cs_figures_share(f, "stopped_share", p->stopped_share);
	cs_figures_ns(f, "pause_p50", p->p50_ns);
	cs_figures_ns(f, "pause_max", p->max_ns);
	cs_figures_share(f, "tail_share", p->tail_share);
	cs_figures_count(f, "tail_pauses", p->tail_pauses);
	cs_figures_flag(f, "named", p->named);
	if (!p->named)
		return;
	cs_figures_count(f, "gc_pauses", p->gc_pauses);
	if (p->top_gc_op[0])
		cs_figures_name(f, "gc_operation", p->top_gc_op);
	cs_figures_count(f, "other_pauses", p->other_pauses);
	if (p->top_other_op[0]) {
		cs_figures_name(f, "other_operation", p->top_other_op);
		cs_figures_count(f, "other_operation_pauses", p->top_other_op_pauses);
	}
	cs_figures_ns(f, "time_to_safepoint_max", p->reach_max_ns);
}

/* The client whose own delay weighs most: who, what it measured, what the server took, its threads. */
static void client_bound(const struct cs_client_bound_condition *c, struct cs_figures *f)
{
	const struct cs_client_view *w = &c->worst;
	cs_figures_name(f, "client", w->comm);
	cs_figures_count(f, "pid", w->tgid);
	cs_figures_count(f, "threads", w->threads);
	cs_figures_count(f, "connections", w->connections);
	cs_figures_ns(f, "read_delay_p99", w->read_delay_p99_ns);
	cs_figures_ns(f, "runq_p99", w->runq_p99_ns);
	cs_figures_ns(f, "server_p99", w->server_p99_ns);
	cs_figures_ns(f, "measured_p99", w->seen_p99_ns);
	cs_figures_share(f, "busy_share", w->busy_share);
	cs_figures_share(f, "runq_share", w->runq_share);
	cs_figures_count(f, "bound_clients", c->bound_clients);
}

/* No default: a condition added to the enum without its figures here is a -Wswitch error. */
static void figures_of(const struct cs_conditions *c, enum cs_condition condition, struct cs_figures *f)
{
	switch (condition) {
	case CS_COND_NON_PERSISTENT:
		non_persistent(c, f);
		break;
	case CS_COND_IDLE_TIMEOUT:
		cs_figures_count(f, "server_idle_closes", c->idle_timeout.server_idle_closes);
		cs_figures_ratio(f, "inferred_timeout_ms", c->idle_timeout.inferred_timeout_ms);
		cs_figures_count(f, "reconnects", c->idle_timeout.reconnects);
		cs_figures_count(f, "keepalive_race_resets", c->idle_timeout.keepalive_race_resets);
		break;
	case CS_COND_LISTEN_OVERFLOW:
		cs_figures_count(f, "drops", c->listen_overflow.drops);
		cs_figures_count(f, "syn_drops", c->listen_overflow.drops - c->listen_overflow.ack_drops);
		cs_figures_count(f, "ack_drops", c->listen_overflow.ack_drops);
		cs_figures_count(f, "delayed_connections", c->listen_overflow.delayed_connections);
		cs_figures_count(f, "failed_connections", c->listen_overflow.failed_connections);
		break;
	case CS_COND_ACCEPT_CONTENTION:
		cs_figures_flag(f, "acceptor_bottleneck", c->accept_contention.acceptor_bottleneck);
		cs_figures_flag(f, "unfair", c->accept_contention.unfair);
		cs_figures_flag(f, "thundering_herd", c->accept_contention.thundering_herd);
		figure_us(f, "accept_wait_p99", c->accept_contention.accept_wait_p99_us);
		cs_figures_share(f, "busiest_worker_share", c->accept_contention.busiest_worker_share);
		cs_figures_count(f, "eagain", c->accept_contention.eagain);
		break;
	case CS_COND_CONNECTION_LIMIT:
		connection_limit(c, f);
		break;
	case CS_COND_CPU_SATURATION:
		cpu_saturation(c, f);
		break;
	case CS_COND_POOL_SATURATION:
		pool_saturation(&c->pool_saturation, f);
		break;
	case CS_COND_RUNTIME_PAUSES:
		runtime_pauses(&c->runtime_pauses, f);
		break;
	case CS_COND_CLIENT_BOUND:
		client_bound(&c->client_bound, f);
		break;
	case CS_CONDITION_COUNT:
		break;
	}
}

void cs_conditions_figures(struct cs_conditions *conditions)
{
	for (int c = 0; c < CS_CONDITION_COUNT; c++) {
		struct cs_figures *f = &conditions->seen[c];
		*f = (struct cs_figures){ 0 };
		if (cs_condition_flagged(conditions, (enum cs_condition)c))
			figures_of(conditions, (enum cs_condition)c, f);
	}
}
