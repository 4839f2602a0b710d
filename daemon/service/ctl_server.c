// SPDX-License-Identifier: BSD-2-Clause
#include "ctl_server.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ctl_proto.h"
#include "ctl_socket.h"
#include "errmsg.h"
#include "live.h"
#include "report.h"
#include "units.h"

#define TICK_NS NS_PER_SEC
#define POLL_MS 100
/* A request must arrive whole this soon after its first byte. */
#define REQUEST_TIMEOUT_NS (5 * NS_PER_SEC)
/* A client that neither asks nor streams is closed after this. */
#define IDLE_TIMEOUT_NS (60 * NS_PER_SEC)
/* A response not taken within this is given up on, and so is its client. */
#define WRITE_TIMEOUT_NS (5 * NS_PER_SEC)
#define OUT_MAX (CS_CTL_RESPONSE_MAX + 2 * CS_CTL_HEADER_LEN + 4096)

struct cs_ctl_client {
	int fd;
	pid_t pid;
	uid_t uid;
	struct cs_ctl_reader reader;
	uint8_t *out;
	size_t out_len, out_sent;
	uint64_t last_activity_ns;   /* last byte in or out */
	uint64_t partial_since_ns;   /* a request began arriving, 0: none pending */
	uint64_t out_since_ns;       /* output has waited since */
	bool streaming;
	struct cs_ctl_view_request view;
	bool closing;                /* close once the output is sent */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* At most this many log lines a second: a client looping on errors must not flood the log. */
#define LOG_LINES_PER_SEC 20

__attribute__((format(printf, 1, 2)))
static void ctl_log(const char *fmt, ...)
{
	/* Only the control thread logs (and the start, before it runs). */
	static uint64_t second, lines, suppressed;
	uint64_t now = now_ns() / NS_PER_SEC;
	if (now != second) {
		if (suppressed)
			fprintf(stderr, "connscoped: control: %" PRIu64 " more message(s) suppressed\n", suppressed);
		second = now;
		lines = suppressed = 0;
	}
	if (++lines > LOG_LINES_PER_SEC) {
		suppressed++;
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	fputs("connscoped: control: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ---- clients ------------------------------------------------------------ */

static void client_close(struct cs_ctl_server *server, int slot)
{
	struct cs_ctl_client *c = server->clients[slot];
	if (!c)
		return;
	close(c->fd);
	cs_ctl_reader_free(&c->reader);
	free(c->out);
	free(c);
	server->clients[slot] = NULL;
}

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
	meta->duration_s = (double)(now_ns() - server->reset_ns) / 1e9;
	meta->events_lost = since_reset(meta->events_lost, server->lost_at_reset);
	meta->probe_runs_skipped = since_reset(meta->probe_runs_skipped, server->skipped_at_reset);
	/* The kernel's counters are taken at the end of a run: none mid-run. */
	meta->netstat.valid = false;
	meta->tail_percentile = view && view->tail_milli_pct ? view->tail_milli_pct / 1000.0 : 0;
	_Static_assert(CS_CTL_SLOWEST_MAX == CS_EXEMPLARS, "the engine keeps the slowest a view may ask for");
	meta->slowest = view ? view->slowest : 0;
}

/* Render a view (JSON or text) of the engine now. Returns the text (malloc'd) or NULL. */
static char *render_view(struct cs_ctl_server *server, const struct cs_ctl_view_request *view, size_t *len)
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
					     .uptime_s = (double)(now - server->start_ns) / 1e9,
					     .since_reset_s = (double)(now - server->reset_ns) / 1e9 };
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
static void queue_view(struct cs_ctl_server *server, struct cs_ctl_client *c, uint16_t type, const char *text,
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
	char *text = render_view(server, &c->view, &len);
	queue_view(server, c, type, text, len);
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

static void status_processes(FILE *out, const struct cs_engine *engine)
{
	struct process_list list = { .count = 0 };
	cs_u64map_each(&engine->threads, add_thread_process, &list);
	for (size_t i = 0; i < engine->listener_count; i++)
		for (size_t k = 0; k < engine->listeners[i].worker_count; k++) {
			const struct cs_worker_stats *w = &engine->listeners[i].workers[k];
			add_process(&list, w->pid, w->comm);
		}
	fputs(",\"processes\":[", out);
	for (size_t i = 0; i < list.count; i++) {
		fprintf(out, "%s{\"pid\":%u,\"comm\":", i ? "," : "", list.pid[i]);
		cs_json_write_string(out, list.comm[i]);
		fputc('}', out);
	}
	fputc(']', out);
}

static void send_status(struct cs_ctl_server *server, struct cs_ctl_client *c)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	if (!out) {
		queue_error(c, CS_CTL_ERR_INTERNAL, "out of memory");
		return;
	}
	pthread_mutex_lock(server->engine_lock);
	struct cs_report_meta meta;
	current_meta(server, NULL, &meta);
	uint64_t now = now_ns();
	fprintf(out, "{\"daemon_pid\":%d,\"protocol\":%d,\"target\":", (int)getpid(), CS_CTL_VERSION);
	cs_json_write_string(out, server->target ? server->target : "");
	fprintf(out, ",\"uptime_s\":%.3f,\"since_reset_s\":%.3f,\"events\":%" PRIu64 ",\"lost\":%" PRIu64
		",\"skipped\":%" PRIu64 ",\"requests\":%" PRIu64 ",\"ports\":[", (double)(now - server->start_ns) / 1e9,
		(double)(now - server->reset_ns) / 1e9, server->engine->totals.records, meta.events_lost,
		meta.probe_runs_skipped, server->engine->requests.requests);
	for (size_t i = 0; i < server->engine->listener_count; i++)
		fprintf(out, "%s%u", i ? "," : "", server->engine->listeners[i].port);
	fputc(']', out);
	status_processes(out, server->engine);
	fprintf(out, ",\"control\":{\"connections\":%" PRIu64 ",\"refused\":%" PRIu64 ",\"rejected\":%" PRIu64
		",\"streams_dropped\":%" PRIu64 ",\"busy\":%" PRIu64 "}}\n", server->connections, server->refused,
		server->rejected, server->streams_dropped, server->busy);
	pthread_mutex_unlock(server->engine_lock);
	if (fclose(out) == 0)
		queue_frame(c, CS_CTL_STATUS | CS_CTL_RESPONSE, text, len);
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
	}
	pthread_mutex_unlock(server->engine_lock);
	if (err) {
		queue_error(c, CS_CTL_ERR_INTERNAL, "out of memory: the statistics were not reset");
		return;
	}
	ctl_log("statistics reset by pid %d (uid %u)", (int)c->pid, (unsigned)c->uid);
	queue_frame(c, CS_CTL_RESET | CS_CTL_RESPONSE, NULL, 0);
}

static void reject(struct cs_ctl_server *server, struct cs_ctl_client *c, enum cs_ctl_error code,
		   const char *why)
{
	server->rejected++;
	ctl_log("rejected a request from pid %d (uid %u): %s", (int)c->pid, (unsigned)c->uid, why);
	queue_error(c, code, why);
}

static void handle_frame(struct cs_ctl_server *server, struct cs_ctl_client *c, const struct cs_ctl_header *hdr,
			 const uint8_t *payload)
{
	switch (hdr->type) {
	case CS_CTL_HELLO: {
		uint16_t min, max;
		if (cs_ctl_hello_decode(payload, hdr->length, &min, &max)) {
			reject(server, c, CS_CTL_ERR_BAD_PAYLOAD, "HELLO: expected the versions min <= max");
			return;
		}
		uint16_t version = cs_ctl_negotiate(min, max);
		if (!version) {
			char why[96];
			snprintf(why, sizeof(why), "no common protocol version: the client speaks %u-%u, the daemon %d",
				 min, max, CS_CTL_VERSION);
			reject(server, c, CS_CTL_ERR_VERSION, why);
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
			reject(server, c, CS_CTL_ERR_BAD_PAYLOAD,
			       "expected the format (0 JSON, 1 text), up to 512 slowest requests and a tail percentile "
			       "from 50 to 99.999");
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
		reject(server, c, CS_CTL_ERR_UNKNOWN_TYPE, why);
		return;
	}
	}
}

static void client_read(struct cs_ctl_server *server, struct cs_ctl_client *c, uint64_t now)
{
	uint8_t buf[16384];
	for (;;) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0) {
			c->closing = true; /* the client is gone: nothing more to send */
			c->out_len = c->out_sent = 0;
			return;
		}
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR) {
				c->closing = true;
				c->out_len = c->out_sent = 0;
			}
			break;
		}
		c->last_activity_ns = now;
		if (c->closing)
			continue; /* after an error: read and forget */
		if (cs_ctl_reader_push(&c->reader, buf, (size_t)n)) {
			queue_error(c, CS_CTL_ERR_INTERNAL, "out of memory");
			c->closing = true;
			return;
		}
		struct cs_ctl_header hdr;
		const uint8_t *payload;
		int got;
		while (!c->closing && (got = cs_ctl_reader_next(&c->reader, &hdr, &payload)) != 0) {
			if (got < 0) {
				char why[128];
				if (got == -EMSGSIZE)
					snprintf(why, sizeof(why), "request of %" PRIu32 " bytes is over the limit of %u",
						 hdr.length, CS_CTL_REQUEST_MAX);
				else if (got == -EPROTONOSUPPORT)
					snprintf(why, sizeof(why), "protocol version %u is not spoken here (%d is)",
						 hdr.version, CS_CTL_VERSION);
				else
					snprintf(why, sizeof(why), "not a connscope control frame (bad magic or header)");
				reject(server, c, cs_ctl_error_for(got), why);
				c->closing = true; /* the stream cannot be resynchronised */
				c->streaming = false;
				break;
			}
			handle_frame(server, c, &hdr, payload);
		}
		c->partial_since_ns = cs_ctl_reader_pending(&c->reader) ? (c->partial_since_ns ? c->partial_since_ns : now) : 0;
		if (c->closing)
			break;
	}
}

/* Send what is queued; false when the client is to be closed. */
static bool client_write(struct cs_ctl_client *c, uint64_t now)
{
	while (c->out_sent < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_sent, c->out_len - c->out_sent, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return true;
			return false;
		}
		c->out_sent += (size_t)n;
		c->last_activity_ns = now;
		c->out_since_ns = now;
	}
	c->out_sent = c->out_len = 0;
	return !c->closing;
}

static void accept_client(struct cs_ctl_server *server, uint64_t now)
{
	int fd = accept4(server->socket.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	server->connections++;
	struct ucred cred;
	socklen_t cred_len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0) {
		server->refused++;
		ctl_log("refused a connection: cannot read its credentials: %s", strerror(errno));
		close(fd);
		return;
	}
	if (cred.uid != 0 && cred.uid != geteuid()) {
		server->refused++;
		ctl_log("refused a connection from pid %d (uid %u): only root and uid %u may use the control socket",
		     (int)cred.pid, (unsigned)cred.uid, (unsigned)geteuid());
		uint8_t frame[CS_CTL_HEADER_LEN + 128];
		size_t len = cs_ctl_error_encode(frame + CS_CTL_HEADER_LEN, sizeof(frame) - CS_CTL_HEADER_LEN,
						 CS_CTL_ERR_DENIED, "permission denied: root or the daemon's user only");
		cs_ctl_encode_header(frame, CS_CTL_ERROR, (uint32_t)len);
		(void)!send(fd, frame, CS_CTL_HEADER_LEN + len, MSG_DONTWAIT | MSG_NOSIGNAL);
		close(fd);
		return;
	}
	int slot = -1;
	for (int i = 0; i < CS_CTL_MAX_CLIENTS && slot < 0; i++)
		if (!server->clients[i])
			slot = i;
	struct cs_ctl_client *c = slot >= 0 ? calloc(1, sizeof(*c)) : NULL;
	if (!c) {
		server->busy++;
		ctl_log("turned away pid %d: %d clients already connected", (int)cred.pid, CS_CTL_MAX_CLIENTS);
		uint8_t frame[CS_CTL_HEADER_LEN + 64];
		size_t len = cs_ctl_error_encode(frame + CS_CTL_HEADER_LEN, sizeof(frame) - CS_CTL_HEADER_LEN,
						 CS_CTL_ERR_BUSY, "too many clients; try again");
		cs_ctl_encode_header(frame, CS_CTL_ERROR, (uint32_t)len);
		(void)!send(fd, frame, CS_CTL_HEADER_LEN + len, MSG_DONTWAIT | MSG_NOSIGNAL);
		close(fd);
		return;
	}
	/* A small send buffer: a stream reader that stops reading fills it in
	 * seconds, not minutes, and is dropped (tick). */
	int sndbuf = 64 * 1024;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	c->fd = fd;
	c->pid = cred.pid;
	c->uid = cred.uid;
	c->last_activity_ns = now;
	cs_ctl_reader_init(&c->reader, CS_CTL_REQUEST_MAX);
	server->clients[slot] = c;
}

/* Once a second: close the window's second, then feed the streams. */
static void tick(struct cs_ctl_server *server, uint64_t now)
{
	struct {
		struct cs_ctl_view_request view;
		char *text;
		size_t len;
	} shared[CS_CTL_MAX_CLIENTS];
	int shared_count = 0;
	pthread_mutex_lock(server->engine_lock);
	cs_window_tick(&server->window, server->engine, now);
	pthread_mutex_unlock(server->engine_lock);
	for (int i = 0; i < CS_CTL_MAX_CLIENTS; i++) {
		struct cs_ctl_client *c = server->clients[i];
		if (!c || !c->streaming || c->closing)
			continue;
		if (c->out_sent < c->out_len) {
			/* Last second's update is still unsent: the reader cannot keep up. */
			server->streams_dropped++;
			ctl_log("dropped a stream reader (pid %d): it fell a second behind", (int)c->pid);
			client_close(server, i);
			continue;
		}
		/* Readers asking for the same view share one rendering (and one hold of the lock). */
		int same = -1;
		for (int k = 0; k < shared_count && same < 0; k++)
			if (shared[k].view.format == c->view.format && shared[k].view.tail_milli_pct == c->view.tail_milli_pct &&
			    shared[k].view.slowest == c->view.slowest)
				same = k;
		if (same < 0 && shared_count < CS_CTL_MAX_CLIENTS) {
			same = shared_count++;
			shared[same].view = c->view;
			shared[same].text = render_view(server, &c->view, &shared[same].len);
		}
		if (same >= 0)
			queue_view(server, c, CS_CTL_STREAM | CS_CTL_RESPONSE, shared[same].text, shared[same].len);
		c->last_activity_ns = now;
	}
	for (int k = 0; k < shared_count; k++)
		free(shared[k].text);
}

/* Time since `since`, 0 when it is later than now (stamped after now was read). */
static uint64_t elapsed(uint64_t now, uint64_t since)
{
	return now > since ? now - since : 0;
}

static void expire(struct cs_ctl_server *server, uint64_t now)
{
	for (int i = 0; i < CS_CTL_MAX_CLIENTS; i++) {
		struct cs_ctl_client *c = server->clients[i];
		if (!c)
			continue;
		if (c->partial_since_ns && elapsed(now, c->partial_since_ns) > REQUEST_TIMEOUT_NS && !c->closing) {
			reject(server, c, CS_CTL_ERR_TIMEOUT, "the request did not arrive whole within 5 s");
			c->closing = true;
			c->streaming = false;
			c->partial_since_ns = 0;
		}
		bool stuck = c->out_sent < c->out_len && elapsed(now, c->out_since_ns) > WRITE_TIMEOUT_NS;
		bool idle = !c->streaming && c->out_sent == c->out_len &&
			    elapsed(now, c->last_activity_ns) > IDLE_TIMEOUT_NS;
		if (stuck)
			ctl_log("dropped pid %d: it took nothing of its response for 5 s", (int)c->pid);
		if (stuck || idle)
			client_close(server, i);
	}
}

static void *serve_loop(void *arg)
{
	struct cs_ctl_server *server = arg;
	uint64_t next_tick_ns = now_ns() + TICK_NS;
	while (!server->stop) {
		struct pollfd pfds[1 + CS_CTL_MAX_CLIENTS];
		int slots[1 + CS_CTL_MAX_CLIENTS];
		nfds_t n = 0;
		pfds[n] = (struct pollfd){ .fd = server->socket.fd, .events = POLLIN };
		slots[n++] = -1;
		for (int i = 0; i < CS_CTL_MAX_CLIENTS; i++) {
			struct cs_ctl_client *c = server->clients[i];
			if (!c)
				continue;
			short events = POLLIN;
			if (c->out_sent < c->out_len)
				events |= POLLOUT;
			pfds[n] = (struct pollfd){ .fd = c->fd, .events = events };
			slots[n++] = i;
		}
		uint64_t now = now_ns();
		int timeout_ms = next_tick_ns > now ? (int)((next_tick_ns - now) / 1000000) + 1 : 0;
		if (timeout_ms > POLL_MS)
			timeout_ms = POLL_MS;
		int ready = poll(pfds, n, timeout_ms);
		now = now_ns();
		if (ready > 0) {
			for (nfds_t k = 1; k < n; k++) {
				struct cs_ctl_client *c = server->clients[slots[k]];
				if (!c)
					continue;
				if (pfds[k].revents & (POLLIN | POLLHUP | POLLERR))
					client_read(server, c, now);
				if (!client_write(c, now) || (c->closing && c->out_sent == c->out_len))
					client_close(server, slots[k]);
			}
			if (pfds[0].revents & POLLIN)
				accept_client(server, now);
		}
		if (now >= next_tick_ns) {
			tick(server, now);
			next_tick_ns += TICK_NS;
			if (next_tick_ns < now) /* fell behind: no burst of ticks */
				next_tick_ns = now + TICK_NS;
		}
		expire(server, now);
	}
	for (int i = 0; i < CS_CTL_MAX_CLIENTS; i++)
		client_close(server, i);
	return NULL;
}

int cs_ctl_server_start(struct cs_ctl_server *server, const char *path, pthread_mutex_t *engine_lock,
			struct cs_engine *engine, const struct cs_report_meta *meta, const char *target,
			char *errmsg, size_t errlen)
{
	memset(server, 0, sizeof(*server));
	server->socket.fd = -1;
	if (cs_window_init(&server->window))
		return cs_fail(errmsg, errlen, "out of memory");
	if (cs_ctl_socket_open(&server->socket, path, errmsg, errlen)) {
		cs_window_free(&server->window);
		return -1;
	}
	server->engine_lock = engine_lock;
	server->engine = engine;
	server->meta = meta;
	server->target = target;
	server->start_ns = server->reset_ns = now_ns();
	pthread_mutex_lock(engine_lock);
	cs_window_tick(&server->window, engine, server->start_ns);
	pthread_mutex_unlock(engine_lock);
	int err = pthread_create(&server->thread, NULL, serve_loop, server);
	if (err) {
		cs_ctl_server_stop(server);
		return cs_fail(errmsg, errlen, "cannot start the control thread: %s", strerror(err));
	}
	server->running = true;
	return 0;
}

void cs_ctl_server_stop(struct cs_ctl_server *server)
{
	if (server->running) {
		server->stop = 1;
		pthread_join(server->thread, NULL);
		server->running = false;
	}
	cs_ctl_socket_close(&server->socket);
	cs_window_free(&server->window);
}
