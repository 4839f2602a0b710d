// SPDX-License-Identifier: BSD-2-Clause
/*
 * The names of the findings, conditions and pools, one row per enum
 * value (designated initializers: a row cannot drift to another kind).
 */
#include "kinds.h"

#include <stddef.h>

static const char *const finding_names[CS_FINDING_KIND_COUNT] = {
	[CS_FINDING_EVENTS_LOST] = "events_lost",
	[CS_FINDING_BACKLOG_FULL] = "backlog_full",
	[CS_FINDING_QUEUED_UNSEEN] = "queued_unseen",
	[CS_FINDING_CONNECTION_LIMIT] = "connection_limit",
	[CS_FINDING_ACCEPT_THREAD_BOTTLENECK] = "accept_thread_bottleneck",
	[CS_FINDING_ACCEPT_QUEUE_WAIT] = "accept_queue_wait",
	[CS_FINDING_ACCEPT_POOL_FULL] = "accept_pool_full",
	[CS_FINDING_HANDOFF_POOL_FULL] = "handoff_pool_full",
	[CS_FINDING_UNFAIR_ACCEPTS] = "unfair_accepts",
	[CS_FINDING_THUNDERING_HERD] = "thundering_herd",
	[CS_FINDING_ACCEPT_NEGLIGIBLE] = "accept_side_negligible",
	[CS_FINDING_SYN_COOKIES] = "syn_cookies",
};

static const char *const condition_names[CS_CONDITION_COUNT] = {
	[CS_COND_NON_PERSISTENT] = "non_persistent",
	[CS_COND_IDLE_TIMEOUT] = "idle_timeout",
	[CS_COND_LISTEN_OVERFLOW] = "listen_overflow",
	[CS_COND_ACCEPT_CONTENTION] = "accept_contention",
	[CS_COND_CONNECTION_LIMIT] = "connection_limit",
	[CS_COND_CPU_SATURATION] = "cpu_saturation",
	[CS_COND_POOL_SATURATION] = "pool_saturation",
	[CS_COND_RUNTIME_PAUSES] = "runtime_pauses",
	[CS_COND_CLIENT_BOUND] = "client_bound",
};

static const char *const pool_kind_names[CS_POOL_KIND_COUNT] = {
	[CS_POOL_HANDOFF] = "handoff",
	[CS_POOL_ACCEPT] = "accept",
};

static const char *const pool_server_names[CS_POOL_SERVER_COUNT] = {
	[CS_POOL_SERVER_OTHER] = "other",
	[CS_POOL_SERVER_GUNICORN] = "gunicorn",
	[CS_POOL_SERVER_APACHE] = "apache",
	[CS_POOL_SERVER_PHP_FPM] = "php-fpm",
	[CS_POOL_SERVER_UWSGI] = "uwsgi",
};

const char *cs_pool_kind_name(enum cs_pool_kind kind)
{
	return (unsigned)kind < CS_POOL_KIND_COUNT ? pool_kind_names[kind] : NULL;
}

const char *cs_pool_server_name(enum cs_pool_server server)
{
	return (unsigned)server < CS_POOL_SERVER_COUNT ? pool_server_names[server] : NULL;
}

const char *cs_finding_name(enum cs_finding_kind kind)
{
	return (unsigned)kind < CS_FINDING_KIND_COUNT ? finding_names[kind] : NULL;
}

const char *cs_condition_name(enum cs_condition condition)
{
	return (unsigned)condition < CS_CONDITION_COUNT ? condition_names[condition] : NULL;
}
