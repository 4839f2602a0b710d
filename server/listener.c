// SPDX-License-Identifier: BSD-2-Clause
#include "listener.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "worker.h"

static int set_flag(int fd, int level, int name, const char *what, char *err, size_t err_len)
{
	int one = 1;

	if (setsockopt(fd, level, name, &one, sizeof(one)) == 0)
		return 0;
	snprintf(err, err_len, "setsockopt(%s): %s", what, strerror(errno));
	return -1;
}

int cs_listener_open(const struct sockaddr *addr, socklen_t addr_len, int backlog,
		     bool nonblocking, bool reuseport, char *err, size_t err_len)
{
	int type = SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0);
	int fd = socket(addr->sa_family, type, 0);

	if (fd < 0) {
		snprintf(err, err_len, "socket: %s", strerror(errno));
		return -1;
	}
	/* A restarted server must not wait out the old one's TIME_WAITs. */
	if (set_flag(fd, SOL_SOCKET, SO_REUSEADDR, "SO_REUSEADDR", err, err_len) != 0)
		goto fail;
	if (reuseport && set_flag(fd, SOL_SOCKET, SO_REUSEPORT, "SO_REUSEPORT", err, err_len) != 0)
		goto fail;
	if (bind(fd, addr, addr_len) != 0) {
		snprintf(err, err_len, "bind: %s%s", strerror(errno),
			 errno == EADDRINUSE ? " (another process listens there: pick another --port)" : "");
		goto fail;
	}
	if (listen(fd, backlog) != 0) {
		snprintf(err, err_len, "listen: %s", strerror(errno));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

int cs_listener_port(int fd, char *err, size_t err_len)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
		snprintf(err, err_len, "getsockname: %s", strerror(errno));
		return -1;
	}
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	/* getsockname() filled ss; the analyzer loses that through the cast */
	return ntohs(((struct sockaddr_in *)&ss)->sin_port); // NOLINT(clang-analyzer-core.CallAndMessage)
}

int cs_accept_blocking(int listen_fd, uint64_t *errors)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd >= 0)
		return fd;
	if (atomic_load(&cs_stop_requested))
		return CS_ACCEPT_STOP; /* shutdown() woke us: EINVAL */
	if (errno == EINTR)
		return CS_ACCEPT_RETRY;
	if (errors)
		(*errors)++;
	if (errno == EINVAL) {
		cs_log_error("acceptor: accept4: %s", strerror(errno));
		cs_fatal_stop();
		return CS_ACCEPT_STOP;
	}
	if (cs_accept_failed(errno, -1))
		cs_sleep_ns(CS_ACCEPT_PAUSE_MS * CS_NS_PER_MS);
	return CS_ACCEPT_RETRY;
}

int cs_somaxconn(void)
{
	FILE *f = fopen("/proc/sys/net/core/somaxconn", "r");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}
