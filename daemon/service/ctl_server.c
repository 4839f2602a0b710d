// SPDX-License-Identifier: BSD-2-Clause
/*
 * The control server's answers: each request's handler (HELLO, SNAPSHOT,
 * STREAM, RESET, STATUS), the views they render, and the frames queued
 * for the client. The socket loop that reads requests and sends the
 * frames is ctl_loop.c.
 */
#include "ctl_server.h"
#include "ctl_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"
#include "cost_render.h"
#include "ctl_proto.h"
#include "ctl_socket.h"
#include "errmsg.h"
#include "json.h"
#include "live.h"
#include "report.h"
#include "trace_windows.h"
#include "units.h"

/* The most a client may hold unsent: one whole response and a little more. */
#define OUT_MAX (CS_CTL_RESPONSE_MAX + 2 * CS_CTL_HEADER_LEN + 4096)

static uint64_t now_ns(void)
{
	return cs_monotonic_ns();
}

/* At most this many log lines a second: a client looping on errors must not flood the log. */
#define LOG_LINES_PER_SEC 20

void cs_ctl_log(struct cs_ctl_server *server, const char *fmt, ...)
{
	/* Only the control thread logs, so its count needs no lock. */
	struct cs_ctl_log_budget *log = &server->log;
	uint64_t now = now_ns() / NS_PER_SEC;
	if (now != log->second) {
		if (log->suppressed)
			fprintf(stderr, "connscoped: control: %" PRIu64 " more message(s) suppressed\n",
				log->suppressed);
		log->second = now;
		log->lines = log->suppressed = 0;
	}
	if (++log->lines > LOG_LINES_PER_SEC) {
		log->suppressed++;
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	cs_ctl_vlog(fmt, ap);
	va_end(ap);
}

/* ---- clients ------------------------------------------------------------ */

/* Queue one frame. Returns 0, or -ENOBUFS when the client holds too much unsent. */
static int queue_frame(struct cs_ctl_client *c, uint16_t type, const void *payload, size_t len)
{
	if (c->out_sent == c->out_len)
		c->out_sent = c->out_len = 0;
	if (c->out_len + CS_CTL_HEADER_LEN + len > OUT_MAX)
		return -ENOBUFS;
	uint8_t *bigger = realloc(c->out, c->out_len + CS_CTL_HEADER_LEN + len);
	if (!bigger)
		return -ENOBUFS;
	c->out = bigger;
	cs_ctl_encode_header(c->out + c->out_len, type, (uint32_t)len);
	if (len)
		memcpy(c->out + c->out_len + CS_CTL_HEADER_LEN, payload, len);
	if (c->out_sent == c->out_len)
		c->out_since_ns = now_ns();
	c->out_len += CS_CTL_HEADER_LEN + len;
	return 0;
}

static void queue_error(struct cs_ctl_client *c, enum cs_ctl_error code, const char *message)
{
	uint8_t payload[256];
	size_t len = cs_ctl_error_encode(payload, sizeof(payload), code, message);
	queue_frame(c, CS_CTL_ERROR, payload, len);
}

/* A counter's growth since the last reset, never below 0. */
static uint64_t since_reset(uint64_t total, uint64_t at_reset)
{
	return total > at_reset ? total - at_reset : 0;
}

/* The run's figures as a report needs them: since the last reset. Under the lock. */
static void current_meta(const struct cs_ctl_server *server, const struct cs_ctl_view_request *view,
			 struct cs_report_meta *meta)
{
	*meta = *server->meta;
	meta->target = server->target;
	meta->duration_s = (double)(now_ns() - server->reset_ns) / NS_PER_SEC;
	meta->events_lost = since_reset(meta->events_lost, server->lost_at_reset);
	meta->probe_runs_skipped = since_reset(meta->probe_runs_skipped, server->skipped_at_reset);
	meta->trace.traced_s = cs_trace_meta_traced_s(&meta->trace, now_ns()) - server->traced_s_at_reset;
	meta->trace.tracing = false; /* traced_s is as of now */
	meta->trace.requests_cut = since_reset(meta->trace.requests_cut, server->cut_at_reset);
	/* The kernel's counters are taken at the end of a run: none mid-run. */
	meta->netstat.valid = false;
	meta->tail_percentile = view && view->tail_milli_pct ? view->tail_milli_pct / 1000.0 : 0;
	_Static_assert(CS_CTL_SLOWEST_MAX == CS_EXEMPLARS, "the engine keeps the slowest a view may ask for");
	meta->slowest = view ? view->slowest : 0;
}

/* Render a view (JSON or text) of the engine now. Returns the text (malloc'd) or NULL. */
char *cs_ctl_render_view(struct cs_ctl_server *server, const struct cs_ctl_view_request *view, size_t *len)
{
	char *text = NULL;
	FILE *out = open_memstream(&text, len);
	if (!out)
		return NULL;
	pthread_mutex_lock(server->engine_lock);
	struct cs_report_meta meta;
	current_meta(server, view, &meta);
	if (view->format == CS_CTL_FORMAT_TEXT) {
		cs_report_text(out, server->engine, &meta);
	} else {
		uint64_t now = now_ns();
		struct cs_live_info info = { .source = "daemon",
					     .uptime_s = (double)(now - server->start_ns) / NS_PER_SEC,
					     .since_reset_s = (double)(now - server->reset_ns) / NS_PER_SEC };
		cs_snapshot_json(out, server->engine, &meta, &server->window, &info);
	}
	pthread_mutex_unlock(server->engine_lock);
	if (fclose(out)) {
		free(text);
		return NULL;
	}
	return text;
}

/* Queue a rendered view for c (text: NULL when rendering failed). */
void cs_ctl_queue_view(struct cs_ctl_server *server, struct cs_ctl_client *c, uint16_t type, const char *text,
		       size_t len)
{
	if (!text || len > CS_CTL_RESPONSE_MAX) {
		queue_error(c, CS_CTL_ERR_INTERNAL, text ? "the snapshot is too large" : "out of memory");
	} else if (queue_frame(c, type, text, len)) {
		/* The client has not taken what it was sent before: it is too slow. */
		c->closing = true;
		c->streaming = false;
		if (type == (CS_CTL_STREAM | CS_CTL_RESPONSE))
			server->streams_dropped++;
	}
}

static void send_view(struct cs_ctl_server *server, struct cs_ctl_client *c, uint16_t type)
{
	size_t len = 0;
	char *text = cs_ctl_render_view(server, &c->view, &len);
	cs_ctl_queue_view(server, c, type, text, len);
	free(text);
}

/* The processes the engine has seen serve or accept: pid and name, each once. */
#define STATUS_PROCESSES 32
struct process_list {
	uint32_t pid[STATUS_PROCESSES];
	char comm[STATUS_PROCESSES][CS_COMM_LEN];
	size_t count;
};

static void add_process(struct process_list *list, uint32_t pid, const char *comm)
{
	for (size_t i = 0; i < list->count; i++)
		if (list->pid[i] == pid)
			return;
	if (list->count == STATUS_PROCESSES)
		return;
	list->pid[list->count] = pid;
	memcpy(list->comm[list->count], comm, CS_COMM_LEN);
	list->comm[list->count++][CS_COMM_LEN - 1] = '\0';
}

static void add_thread_process(uint64_t key, void *value, void *ctx)
{
	(void)key;
	const struct cs_thread_stats *t = value;
	/* A thread's name is its own; the process's is its main thread's. */
	if (t->tid == t->tgid)
		add_process(ctx, t->tgid, t->comm);
}

static json_t *status_processes(const struct cs_engine *engine)
{
	struct process_list list = { .count = 0 };
	cs_u64map_each(&engine->threads, add_thread_process, &list);
	for (size_t i = 0; i < engine->listener_count; i++)
		for (size_t k = 0; k < engine->listeners[i].worker_count; k++) {
			const struct cs_worker_stats *w = &engine->listeners[i].workers[k];
			add_process(&list, w->pid, w->comm);
		}
	json_t *processes = json_array();
	for (size_t i = 0; i < list.count; i++)
		json_array_append_new(processes, json_pack("{s:I,s:o}", "pid", (json_int_t)list.pid[i], "comm",
							   cs_json_text(list.comm[i])));
	return processes;
}

/* The STATUS reply: who the daemon is, what it watches, and how its control socket fares. */
static json_t *status_value(struct cs_ctl_server *server)
{
	struct cs_report_meta meta;
	current_meta(server, NULL, &meta);
	uint64_t now = now_ns();
	const struct cs_engine *engine = server->engine;
	json_t *ports = json_array();
	for (size_t i = 0; i < engine->listener_count; i++)
		json_array_append_new(ports, json_integer(engine->listeners[i].port));
	struct cs_cost cost;
	cs_cost_of(engine, &meta, &cost);
	json_t *status = json_pack("{s:i,s:i,s:o,s:o,s:o,s:I,s:I,s:I,s:I,s:o,s:o,s:{s:I,s:I,s:I,s:I,s:I,s:I}}", "daemon_pid",
			 (int)getpid(), "protocol", CS_CTL_VERSION, "target", cs_json_text(server->target),
			 "uptime_s", cs_json_3((double)(now - server->start_ns) / 1e9), "since_reset_s",
			 cs_json_3((double)(now - server->reset_ns) / 1e9), "events",
			 (json_int_t)engine->totals.records, "lost", (json_int_t)meta.events_lost, "skipped",
			 (json_int_t)meta.probe_runs_skipped, "requests", (json_int_t)engine->requests.requests,
			 "ports", ports, "processes", status_processes(engine), "control", "connections",
			 (json_int_t)server->connections, "refused", (json_int_t)server->refused, "rejected",
			 (json_int_t)server->rejected, "streams_dropped", (json_int_t)server->streams_dropped, "busy",
			 (json_int_t)server->busy, "idle_dropped", (json_int_t)server->idle_dropped);
	/* What the daemon costs, over the statistics' span: its programs' list is the snapshot's. */
	if (status)
		json_object_set_new(status, "cost", cs_cost_value(&engine->cost, &cost, false));
	struct cs_traced_summary traced;
	cs_report_tracing_summary(engine, &meta, &traced);
	if (status)
		json_object_set_new(status, "tracing", cs_report_tracing_value(&traced, &meta));
	if (status) {
		json_object_set_new(status, "connections_adopted", json_integer((json_int_t)engine->requests.connections_adopted));
		json_object_set_new(status, "requests_in_flight_at_attach", json_integer((json_int_t)engine->requests.partial));
	}
	return status;
}

static void send_status(struct cs_ctl_server *server, struct cs_ctl_client *c)
{
	pthread_mutex_lock(server->engine_lock);
	json_t *status = status_value(server);
	pthread_mutex_unlock(server->engine_lock);
	size_t len = 0;
	char *text = cs_json_dumps(status, &len);
	if (text)
		queue_frame(c, CS_CTL_STATUS | CS_CTL_RESPONSE, text, len);
	else
		queue_error(c, CS_CTL_ERR_INTERNAL, "out of memory");
	free(text);
}

static void do_reset(struct cs_ctl_server *server, struct cs_ctl_client *c)
{
	pthread_mutex_lock(server->engine_lock);
	int err = cs_engine_reset(server->engine);
	if (!err) {
		uint64_t now = now_ns();
		cs_window_reset(&server->window);
		cs_window_tick(&server->window, server->engine, now);
		server->reset_ns = now;
		server->lost_at_reset = server->meta->events_lost;
		server->skipped_at_reset = server->meta->probe_runs_skipped;
		server->traced_s_at_reset = cs_trace_meta_traced_s(&server->meta->trace, now_ns());
		server->cut_at_reset = server->meta->trace.requests_cut;
	}
	pthread_mutex_unlock(server->engine_lock);
	if (err) {
		queue_error(c, CS_CTL_ERR_INTERNAL, "out of memory: the statistics were not reset");
		return;
	}
	cs_ctl_log(server, "statistics reset by pid %d (uid %u)", (int)c->pid, (unsigned)c->uid);
	queue_frame(c, CS_CTL_RESET | CS_CTL_RESPONSE, NULL, 0);
}

void cs_ctl_reject(struct cs_ctl_server *server, struct cs_ctl_client *c, enum cs_ctl_error code,
		   const char *why)
{
	server->rejected++;
	cs_ctl_log(server, "rejected a request from pid %d (uid %u): %s", (int)c->pid, (unsigned)c->uid, why);
	queue_error(c, code, why);
}

/* Clients streaming a live view now. */
static int streams(const struct cs_ctl_server *server)
{
	int n = 0;
	for (int i = 0; i < CS_CTL_MAX_CLIENTS; i++)
		n += server->clients[i] && server->clients[i]->streaming;
	return n;
}

static void handle_frame(struct cs_ctl_server *server, struct cs_ctl_client *c, const struct cs_ctl_header *hdr,
			 const uint8_t *payload)
{
	switch (hdr->type) {
	case CS_CTL_HELLO: {
		uint16_t min, max;
		if (cs_ctl_hello_decode(payload, hdr->length, &min, &max)) {
			cs_ctl_reject(server, c, CS_CTL_ERR_BAD_PAYLOAD, "HELLO: expected the versions min <= max");
			return;
		}
		uint16_t version = cs_ctl_negotiate(min, max);
		if (!version) {
			char why[96];
			snprintf(why, sizeof(why), "no common protocol version: the client speaks %u-%u, the daemon %d",
				 min, max, CS_CTL_VERSION);
			cs_ctl_reject(server, c, CS_CTL_ERR_VERSION, why);
			return;
		}
		char reply[64] = { (char)version, (char)(version >> 8), 0, 0 };
		int n = snprintf(reply + 4, sizeof(reply) - 4, "connscoped pid %d", (int)getpid());
		queue_frame(c, CS_CTL_HELLO | CS_CTL_RESPONSE, reply, 4 + (size_t)n);
		return;
	}
	case CS_CTL_SNAPSHOT:
	case CS_CTL_STREAM:
		if (cs_ctl_view_decode(payload, hdr->length, &c->view)) {
			cs_ctl_reject(server, c, CS_CTL_ERR_BAD_PAYLOAD,
				      "expected the format (0 JSON, 1 text), up to 512 slowest requests and a tail percentile "
				      "from 50 to 99.999");
			return;
		}
		if (hdr->type == CS_CTL_STREAM && !c->streaming && streams(server) >= CS_CTL_MAX_STREAMS) {
			cs_ctl_reject(server, c, CS_CTL_ERR_BUSY, "too many live views (top) already; try again");
			return;
		}
		if (hdr->type == CS_CTL_STREAM) {
			c->streaming = true;
			send_view(server, c, CS_CTL_STREAM | CS_CTL_RESPONSE);
		} else {
			send_view(server, c, CS_CTL_SNAPSHOT | CS_CTL_RESPONSE);
		}
		return;
	case CS_CTL_RESET:
		do_reset(server, c);
		return;
	case CS_CTL_STATUS:
		send_status(server, c);
		return;
	default: {
		char why[64];
		snprintf(why, sizeof(why), "unknown request type %u", hdr->type);
		cs_ctl_reject(server, c, CS_CTL_ERR_UNKNOWN_TYPE, why);
		return;
	}
	}
}

/* A frame that breaks the framing: why, for the client and the log. */
static void reject_framing(struct cs_ctl_server *server, struct cs_ctl_client *c, int got,
			   const struct cs_ctl_header *hdr)
{
	char why[128];
	if (got == -EMSGSIZE)
		snprintf(why, sizeof(why), "request of %" PRIu32 " bytes is over the limit of %u",
			 hdr->length, CS_CTL_REQUEST_MAX);
	else if (got == -EPROTONOSUPPORT)
		snprintf(why, sizeof(why), "protocol version %u is not spoken here (%d is)",
			 hdr->version, CS_CTL_VERSION);
	else
		snprintf(why, sizeof(why), "not a connscope control frame (bad magic or header)");
	cs_ctl_reject(server, c, cs_ctl_error_for(got), why);
	c->closing = true; /* the stream cannot be resynchronised */
	c->streaming = false;
}

void cs_ctl_take_bytes(struct cs_ctl_server *server, struct cs_ctl_client *c, const uint8_t *buf, size_t len,
		       uint64_t now)
{
	if (cs_ctl_reader_push(&c->reader, buf, len)) {
		queue_error(c, CS_CTL_ERR_INTERNAL, "out of memory");
		c->closing = true;
		return;
	}
	struct cs_ctl_header hdr;
	const uint8_t *payload;
	int got;
	while (!c->closing && (got = cs_ctl_reader_next(&c->reader, &hdr, &payload)) != 0) {
		if (got < 0) {
			reject_framing(server, c, got, &hdr);
			break;
		}
		handle_frame(server, c, &hdr, payload);
	}
	c->partial_since_ns = cs_ctl_reader_pending(&c->reader) ? (c->partial_since_ns ? c->partial_since_ns : now) : 0;
}
