// SPDX-License-Identifier: BSD-2-Clause
/*
 * The control server's socket loop, on a thread of its own: accept (only
 * root and our user), read requests, send what is queued, tick the
 * windows and the streams once a second, and close clients that time
 * out. What each request is answered with is ctl_server.c's.
 */
#include "ctl_server.h"
#include "ctl_internal.h"
#include "errmsg.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl_proto.h"
#include "ctl_socket.h"
#include "units.h"

#define TICK_NS NS_PER_SEC
#define POLL_MS 100
/* A request must arrive whole this soon after its first byte. */
#define REQUEST_TIMEOUT_NS (5 * NS_PER_SEC)
/* A client that neither asks nor streams is closed after this... */
#define IDLE_TIMEOUT_NS (30 * NS_PER_SEC)
/* ...and one that has sent nothing since it connected after this: the CLI asks at once. */
#define SILENT_TIMEOUT_NS (5 * NS_PER_SEC)
/* A response not taken within this is given up on, and so is its client. */
#define WRITE_TIMEOUT_NS (5 * NS_PER_SEC)
/* One recv's worth: a request is at most CS_CTL_REQUEST_MAX, taken in pieces. */
#define READ_CHUNK 16384
/* A small send buffer: a stream reader that stops reading fills it in
   seconds, not minutes, and is dropped (tick). */
#define CLIENT_SNDBUF_BYTES (64 * 1024)

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

static void client_read(struct cs_ctl_server *server, struct cs_ctl_client *c, uint64_t now)
{
	uint8_t buf[READ_CHUNK];
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
		c->spoke = true;
		if (c->closing)
			continue; /* after an error: read and forget */
		cs_ctl_take_bytes(server, c, buf, (size_t)n, now);
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

/* Idle: no request under way, nothing to send, no stream. */
static bool client_idle(const struct cs_ctl_client *c)
{
	return !c->streaming && !c->closing && !c->partial_since_ns && c->out_sent == c->out_len;
}

/* A free slot; when there is none, the oldest idle client's, closed to make room. -1: all busy. */
static int free_slot(struct cs_ctl_server *server)
{
	int oldest = -1;
	for (int i = 0; i < CS_CTL_MAX_CLIENTS; i++) {
		struct cs_ctl_client *c = server->clients[i];
		if (!c)
			return i;
		if (client_idle(c) && (oldest < 0 || c->last_activity_ns < server->clients[oldest]->last_activity_ns))
			oldest = i;
	}
	if (oldest >= 0) {
		server->idle_dropped++;
		cs_ctl_log(server, "closed idle pid %d to make room: %d clients connected",
			   (int)server->clients[oldest]->pid, CS_CTL_MAX_CLIENTS);
		client_close(server, oldest);
	}
	return oldest;
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
		cs_ctl_log(server, "refused a connection: cannot read its credentials: %s", strerror(errno));
		close(fd);
		return;
	}
	if (cred.uid != 0 && cred.uid != geteuid()) {
		server->refused++;
		cs_ctl_log(server, "refused a connection from pid %d (uid %u): only root and uid %u may use the "
			   "control socket", (int)cred.pid, (unsigned)cred.uid, (unsigned)geteuid());
		uint8_t frame[CS_CTL_HEADER_LEN + 128];
		size_t len = cs_ctl_error_encode(frame + CS_CTL_HEADER_LEN, sizeof(frame) - CS_CTL_HEADER_LEN,
						 CS_CTL_ERR_DENIED, "permission denied: root or the daemon's user only");
		cs_ctl_encode_header(frame, CS_CTL_ERROR, (uint32_t)len);
		(void)!send(fd, frame, CS_CTL_HEADER_LEN + len, MSG_DONTWAIT | MSG_NOSIGNAL);
		close(fd);
		return;
	}
	int slot = free_slot(server);
	struct cs_ctl_client *c = slot >= 0 ? calloc(1, sizeof(*c)) : NULL;
	if (!c) {
		server->busy++;
		cs_ctl_log(server, "turned away pid %d: %d clients already connected", (int)cred.pid,
			   CS_CTL_MAX_CLIENTS);
		uint8_t frame[CS_CTL_HEADER_LEN + 64];
		size_t len = cs_ctl_error_encode(frame + CS_CTL_HEADER_LEN, sizeof(frame) - CS_CTL_HEADER_LEN,
						 CS_CTL_ERR_BUSY, "too many clients; try again");
		cs_ctl_encode_header(frame, CS_CTL_ERROR, (uint32_t)len);
		(void)!send(fd, frame, CS_CTL_HEADER_LEN + len, MSG_DONTWAIT | MSG_NOSIGNAL);
		close(fd);
		return;
	}
	int sndbuf = CLIENT_SNDBUF_BYTES;
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
			cs_ctl_log(server, "dropped a stream reader (pid %d): it fell a second behind", (int)c->pid);
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
			shared[same].text = cs_ctl_render_view(server, &c->view, &shared[same].len);
		}
		if (same >= 0)
			cs_ctl_queue_view(server, c, CS_CTL_STREAM | CS_CTL_RESPONSE, shared[same].text, shared[same].len);
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
			cs_ctl_reject(server, c, CS_CTL_ERR_TIMEOUT, "the request did not arrive whole within 5 s");
			c->closing = true;
			c->streaming = false;
			c->partial_since_ns = 0;
		}
		bool stuck = c->out_sent < c->out_len && elapsed(now, c->out_since_ns) > WRITE_TIMEOUT_NS;
		bool idle = !c->streaming && c->out_sent == c->out_len &&
			    elapsed(now, c->last_activity_ns) > (c->spoke ? IDLE_TIMEOUT_NS : SILENT_TIMEOUT_NS);
		if (stuck)
			cs_ctl_log(server, "dropped pid %d: it took nothing of its response for 5 s", (int)c->pid);
		if (stuck || idle)
			client_close(server, i);
	}
}

static void *serve_loop(void *arg)
{
	struct cs_ctl_server *server = arg;
	uint64_t next_tick_ns = cs_monotonic_ns() + TICK_NS;
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
		uint64_t now = cs_monotonic_ns();
		int timeout_ms = next_tick_ns > now ? (int)((next_tick_ns - now) / NS_PER_MS) + 1 : 0;
		if (timeout_ms > POLL_MS)
			timeout_ms = POLL_MS;
		int ready = poll(pfds, n, timeout_ms);
		now = cs_monotonic_ns();
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
	server->start_ns = server->reset_ns = cs_monotonic_ns();
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
