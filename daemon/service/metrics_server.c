// SPDX-License-Identifier: BSD-2-Clause
#include <sys/socket.h>

#include "metrics_server.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "metrics.h"
#include "trace_windows.h"
#include "units.h"

#define REQUEST_MAX_BYTES 4096  /* a scrape's request is a few hundred bytes */
#define REQUEST_TIMEOUT_MS 1000 /* a client that dawdles loses its turn */
#define ACCEPT_POLL_MS 200      /* how soon stop is noticed */

static void respond(int fd, const char *status, const char *content_type, const char *body, size_t len)
{
	char head[256];
	int head_len = snprintf(head, sizeof(head),
				"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
				status, content_type, len);
	/* Best effort: a scraper that went away just misses this scrape. */
	if (send(fd, head, (size_t)head_len, MSG_NOSIGNAL) == head_len && len)
		for (size_t sent = 0; sent < len;) {
			ssize_t n = send(fd, body + sent, len - sent, MSG_NOSIGNAL);
			if (n <= 0)
				break;
			sent += (size_t)n;
		}
}

/* Read the request head (to the blank line) within the limits. */
static ssize_t read_request(int fd, char *buf, size_t cap)
{
	size_t have = 0;
	while (have < cap - 1) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		if (poll(&pfd, 1, REQUEST_TIMEOUT_MS) <= 0)
			return -ETIMEDOUT;
		ssize_t n = recv(fd, buf + have, cap - 1 - have, 0);
		if (n <= 0)
			return -EIO;
		have += (size_t)n;
		buf[have] = '\0';
		if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
			return (ssize_t)have;
	}
	return -E2BIG;
}

static void serve(struct cs_metrics_server *server, int fd)
{
	char request[REQUEST_MAX_BYTES];
	ssize_t len = read_request(fd, request, sizeof(request));
	if (len < 0) {
		server->rejected++;
		if (len == -E2BIG)
			respond(fd, "431 Request Header Fields Too Large", "text/plain", "too large\n", 10);
		return;
	}
	if (strncmp(request, "GET ", 4) != 0) {
		server->rejected++;
		respond(fd, "405 Method Not Allowed", "text/plain", "GET only\n", 9);
		return;
	}
	const char *path = request + 4;
	size_t path_len = strcspn(path, " ?\r\n");
	if (path_len != 8 || strncmp(path, "/metrics", 8) != 0) {
		server->rejected++;
		respond(fd, "404 Not Found", "text/plain", "see /metrics\n", 13);
		return;
	}

	enum cs_metrics_format format = cs_metrics_negotiate(request);
	char *body = NULL;
	size_t body_len = 0;
	FILE *out = open_memstream(&body, &body_len);
	if (!out) {
		respond(fd, "500 Internal Server Error", "text/plain", "out of memory\n", 14);
		return;
	}
	pthread_mutex_lock(server->engine_lock);
	struct cs_report_meta meta = *server->meta;
	cs_trace_meta_advance(&meta, cs_monotonic_ns());
	cs_metrics_render(out, server->engine, &meta, server->target, format);
	pthread_mutex_unlock(server->engine_lock);
	fclose(out);
	server->scrapes++;
	respond(fd, "200 OK", format == CS_METRICS_OPENMETRICS ? CS_OPENMETRICS_CONTENT_TYPE : CS_METRICS_CONTENT_TYPE,
		body, body_len);
	free(body);
}

static void *serve_loop(void *arg)
{
	struct cs_metrics_server *server = arg;
	while (!server->stop) {
		struct pollfd pfd = { .fd = server->listen_fd, .events = POLLIN };
		if (poll(&pfd, 1, ACCEPT_POLL_MS) <= 0)
			continue;
		int fd = accept4(server->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		/* Writes are bounded too: a reader that stalls is dropped. */
		struct timeval timeout = { .tv_sec = REQUEST_TIMEOUT_MS / 1000 };
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
		serve(server, fd);
		close(fd);
	}
	return NULL;
}

int cs_metrics_server_start(struct cs_metrics_server *server, const char *address,
			    pthread_mutex_t *engine_lock, const struct cs_engine *engine,
			    const struct cs_report_meta *meta, const char *target,
			    char *errmsg, size_t errlen)
{
	struct sockaddr_storage addr;
	unsigned int addr_len;
	memset(server, 0, sizeof(*server));
	server->listen_fd = -1;
	if (cs_parse_listen_address(address, &addr, &addr_len)) {
		snprintf(errmsg, errlen, "--metrics expects ADDR:PORT, [ADDR6]:PORT or PORT, not '%s'", address);
		return -EINVAL;
	}
	int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&addr, addr_len) || listen(fd, 16)) {
		int err = errno;
		snprintf(errmsg, errlen, "cannot serve metrics on %s: %s", address, strerror(err));
		if (fd >= 0)
			close(fd);
		return -err;
	}
	server->listen_fd = fd;
	server->engine_lock = engine_lock;
	server->engine = engine;
	server->meta = meta;
	server->target = target;
	int err = pthread_create(&server->thread, NULL, serve_loop, server);
	if (err) {
		snprintf(errmsg, errlen, "cannot start the metrics thread: %s", strerror(err));
		close(fd);
		server->listen_fd = -1;
		return -err;
	}
	server->running = true;
	return 0;
}

void cs_metrics_server_stop(struct cs_metrics_server *server)
{
	if (server->running) {
		server->stop = 1;
		pthread_join(server->thread, NULL);
		server->running = false;
	}
	if (server->listen_fd >= 0)
		close(server->listen_fd);
	server->listen_fd = -1;
}
