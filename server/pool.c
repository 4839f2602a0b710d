// SPDX-License-Identifier: BSD-2-Clause
#include "pool.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "clock.h"
#include "handlers.h"
#include "http_parse.h"
#include "listener.h"
#include "log.h"
#include "route.h"
#include "worker.h"

#define POOL_FD_SLOTS 65536 /* connections above this fd are refused */
#define POOL_EVENTS 256
#define WRITE_WAIT_MS 5000           /* a client that reads nothing this long is dropped */
#define PREFORK_STOP_CHECK_US 200000 /* a prefork thread's blocking read wakes this often */

/* A connection's bytes read but not yet answered, kept across hand-offs. */
struct cs_pool_conn {
	uint32_t len;
	char in[];
};

static uint32_t header_cap(const struct cs_pool *p)
{
	return p->cfg->max_header_bytes;
}

/* One-shot: after each readiness the connection is the pool's until re-armed. */
static int arm(struct cs_pool *p, int fd, int op)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, .data.fd = fd };
	return epoll_ctl(p->epoll_fd, op, fd, &ev);
}

static void drop(struct cs_pool *p, int fd)
{
	free(p->conns[fd]);
	p->conns[fd] = NULL;
	close(fd); /* also leaves the epoll set */
}

static void *acceptor_main(void *arg)
{
	struct cs_pool *p = arg;
	pthread_setname_np(pthread_self(), "cs-acceptor");
	while (!atomic_load(&cs_stop_requested)) {
		cs_accept_delay(p->cfg);
		int fd = cs_accept_blocking(p->listen_fd, NULL);
		if (fd == CS_ACCEPT_STOP)
			break;
		if (fd < 0)
			continue;
		atomic_fetch_add(&p->accepted, 1);
		if ((size_t)fd >= p->conn_slots || arm(p, fd, EPOLL_CTL_ADD) != 0)
			close(fd);
	}
	return NULL;
}

static void *poller_main(void *arg)
{
	struct cs_pool *p = arg;
	struct epoll_event events[POOL_EVENTS];
	pthread_setname_np(pthread_self(), "cs-poller");
	while (!atomic_load(&cs_stop_requested)) {
		int n = epoll_wait(p->epoll_fd, events, POOL_EVENTS, -1);
		if (n < 0 && errno != EINTR) {
			cs_log_error("poller: epoll_wait: %s", strerror(errno));
			cs_fatal_stop();
			break;
		}
		pthread_mutex_lock(&p->lock);
		for (int i = 0; i < n; i++) {
			if (events[i].data.fd == p->wake_fd)
				continue;
			/* Never full: each connection is queued at most once (one-shot). */
			p->queue[(p->queue_head + p->queue_len) % p->queue_cap] = events[i].data.fd;
			p->queue_len++;
		}
		if (p->queue_len > atomic_load(&p->queued_max))
			atomic_store(&p->queued_max, p->queue_len);
		pthread_cond_broadcast(&p->ready);
		pthread_mutex_unlock(&p->lock);
	}
	return NULL;
}

/* Writes all of buf on a non-blocking socket. Returns 0, or -1 (drop it). */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		if (n < 0 && errno == EAGAIN && poll(&pfd, 1, WRITE_WAIT_MS) == 1)
			continue;
		return -1;
	}
	return 0;
}

/* The response body of one request; /block and /spin hold this pool thread. */
static int respond(int fd, const struct cs_http_request *req, bool keep_alive)
{
	char body[96], head[192];
	int status = 200;
	uint64_t arg;
	switch (cs_route_match(req->target, req->target_len, &arg)) {
	case CS_ROUTE_ROOT:
		snprintf(body, sizeof(body), "ok\n");
		break;
	case CS_ROUTE_BLOCK:
		handle_block(arg <= CS_ROUTE_MAX_BLOCK_MS ? arg : CS_ROUTE_MAX_BLOCK_MS);
		snprintf(body, sizeof(body), "blocked a pool thread for %" PRIu64 " ms\n", arg);
		break;
	case CS_ROUTE_SPIN:
		handle_spin(arg <= CS_ROUTE_MAX_SPIN_MS ? arg : CS_ROUTE_MAX_SPIN_MS);
		snprintf(body, sizeof(body), "spun a pool thread for %" PRIu64 " ms\n", arg);
		break;
	default:
		status = 404;
		snprintf(body, sizeof(body), "not found in pool mode\n");
		break;
	}
	size_t body_len = strlen(body);
	int head_len = snprintf(head, sizeof(head),
				"HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n%s\r\n%s",
				status, status == 200 ? "OK" : "Not Found", body_len,
				keep_alive ? "" : "Connection: close\r\n", body);
	/* Header and body in one write: one send per response. */
	return write_all(fd, head, (size_t)head_len);
}

/*
 * Reads what the connection has and answers every whole request in it.
 * Returns true to hand the connection back to the poller, false to drop it.
 */
static bool serve(struct cs_pool *p, int fd)
{
	struct cs_pool_conn *c = p->conns[fd];
	if (!c) {
		c = p->conns[fd] = calloc(1, sizeof(*c) + header_cap(p));
		if (!c)
			return false;
	}
	for (;;) {
		ssize_t n = recv(fd, c->in + c->len, header_cap(p) - c->len, 0);
		if (n == 0)
			return false;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		c->len += (uint32_t)n;
		for (;;) {
			struct cs_http_request req;
			struct cs_http_framing framing;
			int used = cs_http_parse_request(c->in, c->len, 0, &req);
			if (used == CS_HTTP_INCOMPLETE && c->len < header_cap(p))
				break;
			/* Pool mode serves GETs without bodies; anything else ends it. */
			if (used < 0 || cs_http_request_framing(&req, &framing) != 0 ||
			    framing.content_length || framing.has_transfer_encoding)
				return false;
			bool keep_alive = framing.keep_alive && p->cfg->keepalive;
			if (respond(fd, &req, keep_alive) != 0)
				return false;
			atomic_fetch_add(&p->requests, 1);
			if (!keep_alive)
				return false;
			memmove(c->in, c->in + used, c->len - (uint32_t)used);
			c->len -= (uint32_t)used;
			if (!c->len)
				break;
		}
	}
}

/* Names the calling thread PREFIX-N, N counted per prefix from 0, so that
 * the tests find each pool's threads by their comm. */
static void name_numbered_thread(const char *prefix, _Atomic int *next_id)
{
	char name[16];
	snprintf(name, sizeof(name), "%s-%d", prefix, atomic_fetch_add(next_id, 1));
	pthread_setname_np(pthread_self(), name);
}

static void *pool_main(void *arg)
{
	struct cs_pool *p = arg;
	static _Atomic int next_id;
	name_numbered_thread("cs-pool", &next_id);
	for (;;) {
		pthread_mutex_lock(&p->lock);
		while (!p->queue_len && !atomic_load(&cs_stop_requested))
			pthread_cond_wait(&p->ready, &p->lock);
		if (atomic_load(&cs_stop_requested)) {
			pthread_mutex_unlock(&p->lock);
			return NULL;
		}
		int fd = p->queue[p->queue_head];
		p->queue_head = (p->queue_head + 1) % p->queue_cap;
		p->queue_len--;
		pthread_mutex_unlock(&p->lock);
		if (!serve(p, fd) || arm(p, fd, EPOLL_CTL_MOD) != 0)
			drop(p, fd);
	}
}

/*
 * --accept prefork: gunicorn's sync workers, Apache's prefork MPM. Each
 * thread blocks in accept4() and serves that connection to its end before
 * it accepts again: with every thread serving, new connections wait in the
 * listen queue, the pool's queue. Reads block, with a short timeout so
 * that a thread held by an idle keep-alive client still sees the stop.
 */
static void *prefork_main(void *arg)
{
	struct cs_pool *p = arg;
	static _Atomic int next_id;
	name_numbered_thread("cs-prefork", &next_id);
	while (!atomic_load(&cs_stop_requested)) {
		int fd = cs_accept_blocking(p->listen_fd, NULL);
		if (fd == CS_ACCEPT_STOP)
			break;
		if (fd < 0)
			continue;
		atomic_fetch_add(&p->accepted, 1);
		struct timeval stop_check = { .tv_sec = 0, .tv_usec = PREFORK_STOP_CHECK_US };
		int flags = fcntl(fd, F_GETFL);
		if ((size_t)fd >= p->conn_slots || flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 ||
		    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &stop_check, sizeof(stop_check)) != 0) {
			close(fd);
			continue;
		}
		/* serve() returns true only when a read timed out: the client is idle. */
		while (serve(p, fd) && !atomic_load(&cs_stop_requested))
			;
		drop(p, fd);
	}
	return NULL;
}

static int setup(struct cs_pool *p, char *err, size_t err_len)
{
	p->conn_slots = POOL_FD_SLOTS;
	p->queue_cap = POOL_FD_SLOTS;
	p->conns = calloc(p->conn_slots, sizeof(struct cs_pool_conn *));
	p->queue = calloc(p->queue_cap, sizeof(*p->queue));
	p->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!p->conns || !p->queue || p->epoll_fd < 0 || p->wake_fd < 0) {
		snprintf(err, err_len, "pool set-up: %s", strerror(errno ? errno : ENOMEM));
		return -1;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = p->wake_fd };
	if (epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, p->wake_fd, &ev) != 0) {
		snprintf(err, err_len, "epoll_ctl(eventfd): %s", strerror(errno));
		return -1;
	}
	return 0;
}

int cs_pool_start(struct cs_pool *p, const struct cs_config *cfg, int listen_fd,
		  char *err, size_t err_len)
{
	p->cfg = cfg;
	p->listen_fd = listen_fd;
	p->epoll_fd = p->wake_fd = -1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->ready, NULL);
	if (setup(p, err, err_len) != 0)
		return -1;
	int rc = 0;
	bool prefork = cfg->accept_mode == CS_ACCEPT_PREFORK;
	for (int i = 0; i < cfg->workers && !rc; i++) {
		rc = pthread_create(&p->threads[i], NULL, prefork ? prefork_main : pool_main, p);
		if (!rc)
			p->thread_count++;
	}
	/* Prefork threads accept for themselves: no acceptor, no poller. */
	p->prefork = prefork;
	if (!prefork && !rc && !(rc = pthread_create(&p->poller, NULL, poller_main, p)))
		p->poller_started = true;
	if (!prefork && !rc && !(rc = pthread_create(&p->acceptor, NULL, acceptor_main, p)))
		p->acceptor_started = true;
	if (rc) {
		snprintf(err, err_len, "pthread_create: %s", strerror(rc));
		return -1;
	}
	return 0;
}

void cs_pool_stop(struct cs_pool *p)
{
	if (p->acceptor_started) {
		/* As for the acceptor mode: shutdown fails the blocked accept(). */
		if (shutdown(p->listen_fd, SHUT_RD) != 0)
			pthread_cancel(p->acceptor);
		pthread_join(p->acceptor, NULL);
	}
	/* Every prefork thread's accept() fails; one serving sees the stop within a read timeout. */
	if (p->prefork && shutdown(p->listen_fd, SHUT_RD) != 0)
		for (int i = 0; i < p->thread_count; i++)
			pthread_cancel(p->threads[i]);
	if (p->poller_started) {
		uint64_t one = 1;
		if (write(p->wake_fd, &one, sizeof(one)) != sizeof(one))
			pthread_cancel(p->poller);
		pthread_join(p->poller, NULL);
	}
	pthread_mutex_lock(&p->lock);
	pthread_cond_broadcast(&p->ready);
	pthread_mutex_unlock(&p->lock);
	for (int i = 0; i < p->thread_count; i++)
		pthread_join(p->threads[i], NULL);
	for (size_t fd = 0; p->conns && fd < p->conn_slots; fd++)
		free(p->conns[fd]);
	free(p->conns);
	free(p->queue);
	if (p->epoll_fd >= 0)
		close(p->epoll_fd);
	if (p->wake_fd >= 0)
		close(p->wake_fd);
}
