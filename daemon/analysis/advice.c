// SPDX-License-Identifier: BSD-2-Clause
/*
 * The names and advice of the findings and conditions, one row per enum
 * value (designated initializers: a row cannot drift to another kind).
 */
#include "advice.h"

#include <stddef.h>

static const struct {
	const char *name;
	const char *advice;
} finding_table[CS_FINDING_KIND_COUNT] = {
	[CS_FINDING_EVENTS_LOST] = { "events_lost", "raise --ring-mb, or shorten the run" },
	[CS_FINDING_BACKLOG_FULL] = { "backlog_full",
		"raise the listen backlog (listen(fd, N), capped by net.core.somaxconn%s) and make "
		"accepting faster: a full queue drops SYNs, which clients retry after 1 s, 2 s, 3 s" },
	[CS_FINDING_CONNECTION_LIMIT] = { "connection_limit",
		"raise the server's connection limit (Tomcat maxConnections, nginx worker_connections, "
		"Node server.maxConnections), or free slots sooner: a shorter keep-alive timeout, or "
		"clients that close idle connections" },
	[CS_FINDING_ACCEPT_THREAD_BOTTLENECK] = { "accept_thread_bottleneck",
		"accept in more threads (SO_REUSEPORT or EPOLLEXCLUSIVE listeners per worker), "
		"or take the work off the accept thread (it should only accept and hand off)" },
	[CS_FINDING_ACCEPT_QUEUE_WAIT] = { "accept_queue_wait",
		"the accepting threads are busy elsewhere: check event-loop blocking and CPU "
		"saturation, or accept in more threads" },
	[CS_FINDING_ACCEPT_POOL_FULL] = { "accept_pool_full",
		"see pool_saturation: more workers, or handlers that do not block" },
	[CS_FINDING_UNFAIR_ACCEPTS] = { "unfair_accepts",
		"epoll wakes the most recent waiter first (LIFO): use one SO_REUSEPORT listener "
		"per worker to spread connections evenly" },
	[CS_FINDING_THUNDERING_HERD] = { "thundering_herd",
		"register the listener with EPOLLEXCLUSIVE, or give each worker its own "
		"SO_REUSEPORT listener" },
	[CS_FINDING_ACCEPT_NEGLIGIBLE] = { "accept_side_negligible",
		"nothing to change on the accept side: the tail's time is elsewhere" },
	[CS_FINDING_SYN_COOKIES] = { "syn_cookies",
		"raise the listen backlog (it also sizes the SYN queue) and net.ipv4.tcp_max_syn_backlog" },
};

static const struct {
	const char *name;
	const char *advice;
	const char *brief;
} condition_table[CS_CONDITION_COUNT] = {
	[CS_COND_NON_PERSISTENT] = { "non_persistent",
		"turn on keep-alive (HTTP/1.1 persistent connections, client connection pools); over TLS, "
		"have clients resume TLS sessions (session tickets or a session cache) to shorten each handshake",
		"turn on keep-alive (persistent connections, client pools); TLS session resumption" },
	[CS_COND_IDLE_TIMEOUT] = { "idle_timeout",
		"make the server's idle timeout longer than the clients' (or have clients close first)",
		"make the server's idle timeout longer than the clients'" },
	[CS_COND_LISTEN_OVERFLOW] = { "listen_overflow",
		"raise the listen backlog and net.core.somaxconn; accept faster",
		"raise the listen backlog and somaxconn; accept faster" },
	/* Which of its findings holds, with its own advice, is in the diagnosis. */
	[CS_COND_ACCEPT_CONTENTION] = { "accept_contention",
		"see the diagnosis below",
		"accept in more threads, or hand work off the acceptor" },
	[CS_COND_CONNECTION_LIMIT] = { "connection_limit",
		"raise the connection limit (Tomcat maxConnections, nginx worker_connections, Node "
		"maxConnections) or free slots sooner (shorter keep-alive timeout)",
		"connection limit reached: raise it, or close idle sooner" },
	[CS_COND_CPU_SATURATION] = { "cpu_saturation",
		"reduce parallelism (fewer threads than cores), or move other work off these CPUs",
		"fewer threads than cores, or move other work elsewhere" },
	[CS_COND_POOL_SATURATION] = { "pool_saturation",
		"size the pool for the load (Tomcat maxThreads, Jetty QueuedThreadPool, Netty's "
		"executor group), or stop handlers blocking (virtual threads: pinned carriers)",
		"a bigger pool (maxThreads, executor group), or no blocking" },
	[CS_COND_RUNTIME_PAUSES] = { "runtime_pauses",
		"size the heap for the live set and pick a collector for short pauses (-Xmx, G1's "
		"-XX:MaxGCPauseMillis, ZGC), allocate less per request; for pauses that are no "
		"collection, -Xlog:safepoint names the VM operations (thread dumps, deoptimisation, biased locking)",
		"JVM pauses: heap size and collector, allocation rate; -Xlog:safepoint" },
};

static const char *const pool_kind_names[CS_POOL_KIND_COUNT] = {
	[CS_POOL_HANDOFF] = "handoff",
	[CS_POOL_ACCEPT] = "accept",
};

/* An accept pool's advice, per server: the settings that size it, or an async worker. */
static const struct {
	const char *name;
	const char *advice;
	const char *brief;
} pool_server_table[CS_POOL_SERVER_COUNT] = {
	[CS_POOL_SERVER_OTHER] = { "other",
		"more workers (processes or threads that accept), or handlers that do not block",
		"more workers, or handlers that do not block" },
	[CS_POOL_SERVER_GUNICORN] = { "gunicorn",
		"raise gunicorn's --workers (or --threads), or use an async worker class "
		"(-k gevent, -k uvicorn.workers.UvicornWorker) for handlers that wait",
		"gunicorn: more --workers/--threads, or an async worker class" },
	[CS_POOL_SERVER_APACHE] = { "apache",
		"raise Apache's MaxRequestWorkers (and ServerLimit), or move to the event MPM "
		"with handlers that do not block",
		"Apache: raise MaxRequestWorkers, or the event MPM" },
	[CS_POOL_SERVER_PHP_FPM] = { "php-fpm",
		"raise PHP-FPM's pm.max_children, or make the scripts stop blocking",
		"PHP-FPM: raise pm.max_children" },
	[CS_POOL_SERVER_UWSGI] = { "uwsgi",
		"raise uWSGI's processes (or threads), or use its async mode for handlers that wait",
		"uWSGI: more processes/threads" },
};

const char *cs_pool_kind_name(enum cs_pool_kind kind)
{
	return (unsigned)kind < CS_POOL_KIND_COUNT ? pool_kind_names[kind] : NULL;
}

const char *cs_pool_server_name(enum cs_pool_server server)
{
	return (unsigned)server < CS_POOL_SERVER_COUNT ? pool_server_table[server].name : NULL;
}

/* A hand-off pool keeps the condition's own advice (Tomcat, Jetty, Netty). */
const char *cs_pool_advice(enum cs_pool_kind kind, enum cs_pool_server server)
{
	if (kind != CS_POOL_ACCEPT || (unsigned)server >= CS_POOL_SERVER_COUNT)
		return cs_condition_advice(CS_COND_POOL_SATURATION);
	return pool_server_table[server].advice;
}

const char *cs_pool_brief(enum cs_pool_kind kind, enum cs_pool_server server)
{
	if (kind != CS_POOL_ACCEPT || (unsigned)server >= CS_POOL_SERVER_COUNT)
		return cs_condition_brief(CS_COND_POOL_SATURATION);
	return pool_server_table[server].brief;
}

const char *cs_finding_name(enum cs_finding_kind kind)
{
	return (unsigned)kind < CS_FINDING_KIND_COUNT ? finding_table[kind].name : NULL;
}

const char *cs_finding_advice(enum cs_finding_kind kind)
{
	return (unsigned)kind < CS_FINDING_KIND_COUNT ? finding_table[kind].advice : NULL;
}

const char *cs_condition_name(enum cs_condition condition)
{
	return (unsigned)condition < CS_CONDITION_COUNT ? condition_table[condition].name : NULL;
}

const char *cs_condition_advice(enum cs_condition condition)
{
	return (unsigned)condition < CS_CONDITION_COUNT ? condition_table[condition].advice : NULL;
}

const char *cs_condition_brief(enum cs_condition condition)
{
	return (unsigned)condition < CS_CONDITION_COUNT ? condition_table[condition].brief : NULL;
}
