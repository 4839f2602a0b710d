/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the analysis can find (enum cs_finding_kind) and flag (enum
 * cs_condition), each with its stable name, the one the outputs print,
 * and its advice: one table per enum (advice.c), indexed by the enum,
 * so that a renderer asks for a kind's name or advice and never spells
 * it. A kind added without its row fails the unit tests
 * (tests/unit/analysis/test_analysis.c).
 */
#ifndef CS_ADVICE_H
#define CS_ADVICE_H

/* Most serious first: the diagnosis lists them in this order, listener by listener. */
enum cs_finding_kind {
	CS_FINDING_EVENTS_LOST,
	CS_FINDING_BACKLOG_FULL,
	CS_FINDING_CONNECTION_LIMIT,
	CS_FINDING_ACCEPT_THREAD_BOTTLENECK,
	CS_FINDING_ACCEPT_QUEUE_WAIT,
	CS_FINDING_ACCEPT_POOL_FULL,
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
/* pool_saturation's advice for a pool of kind, in server's own settings where it has them. */
const char *cs_pool_advice(enum cs_pool_kind kind, enum cs_pool_server server);
/* The same in one short line (the live view and connscope top). */
const char *cs_pool_brief(enum cs_pool_kind kind, enum cs_pool_server server);

/* "backlog_full"; NULL for a value out of range. */
const char *cs_finding_name(enum cs_finding_kind kind);
/*
 * What an operator can do. backlog_full's holds one "%s", where the
 * diagnosis puts its note on SYN cookies (empty when none were sent).
 */
const char *cs_finding_advice(enum cs_finding_kind kind);

/* "non_persistent"; NULL for a value out of range. */
const char *cs_condition_name(enum cs_condition condition);
/* The text report's advice line. */
const char *cs_condition_advice(enum cs_condition condition);
/* One short line, for 80 columns beside the name: the live view and connscope top. */
const char *cs_condition_brief(enum cs_condition condition);

#endif /* CS_ADVICE_H */
