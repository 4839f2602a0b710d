/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the analysis can find (enum cs_finding_kind) and flag (enum
 * cs_condition), each with its stable name, the one the outputs print
 * (JSON keys, metric labels): one table per enum (kinds.c), indexed by
 * the enum, so that a renderer asks for a kind's name and never spells
 * it. Their words (what was seen, the advice) are the renderers'
 * (daemon/render/words.h). A kind added without its row fails the unit
 * tests (tests/unit/analysis/test_analysis.c).
 */
#ifndef CS_KINDS_H
#define CS_KINDS_H

/* Most serious first: the diagnosis lists them in this order, listener by listener. */
enum cs_finding_kind {
	CS_FINDING_EVENTS_LOST,
	CS_FINDING_BACKLOG_FULL,
	CS_FINDING_QUEUED_UNSEEN,
	CS_FINDING_CONNECTION_LIMIT,
	CS_FINDING_ACCEPT_THREAD_BOTTLENECK,
	CS_FINDING_ACCEPT_QUEUE_WAIT,
	CS_FINDING_ACCEPT_POOL_FULL,
	CS_FINDING_HANDOFF_POOL_FULL,
	CS_FINDING_UNFAIR_ACCEPTS,
	CS_FINDING_THUNDERING_HERD,
	CS_FINDING_ACCEPT_NEGLIGIBLE,
	CS_FINDING_SYN_COOKIES,
	CS_FINDING_KIND_COUNT
};

/* In the order the text report and the metrics list them. */
enum cs_condition {
	CS_COND_NON_PERSISTENT,
	CS_COND_IDLE_TIMEOUT,
	CS_COND_LISTEN_OVERFLOW,
	CS_COND_ACCEPT_CONTENTION,
	CS_COND_CONNECTION_LIMIT,
	CS_COND_CPU_SATURATION,
	CS_COND_POOL_SATURATION,
	CS_COND_RUNTIME_PAUSES,
	CS_COND_CLIENT_BOUND,
	CS_CONDITION_COUNT
};

/* How a saturated pool gets its work (pool_saturation.kind). */
enum cs_pool_kind {
	CS_POOL_HANDOFF, /* a poller hands ready requests to the pool's threads */
	CS_POOL_ACCEPT,  /* the pool's workers accept for themselves: its queue is the backlog */
	CS_POOL_KIND_COUNT
};

/* The server a pool belongs to, told from its process name: its advice names its settings. */
enum cs_pool_server {
	CS_POOL_SERVER_OTHER,
	CS_POOL_SERVER_GUNICORN,
	CS_POOL_SERVER_APACHE,
	CS_POOL_SERVER_PHP_FPM,
	CS_POOL_SERVER_UWSGI,
	CS_POOL_SERVER_COUNT
};

/* "handoff"; NULL for a value out of range. */
const char *cs_pool_kind_name(enum cs_pool_kind kind);
/* "gunicorn"; NULL for a value out of range. */
const char *cs_pool_server_name(enum cs_pool_server server);
/* "backlog_full"; NULL for a value out of range. */
const char *cs_finding_name(enum cs_finding_kind kind);

/* "non_persistent"; NULL for a value out of range. */
const char *cs_condition_name(enum cs_condition condition);

#endif /* CS_KINDS_H */
