/* SPDX-License-Identifier: BSD-2-Clause */
/* Listening sockets (in the manner of Redis's anet.c). */
#ifndef CS_LISTENER_H
#define CS_LISTENER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/*
 * socket, SO_REUSEADDR (and SO_REUSEPORT when asked), bind, listen.
 * nonblocking: for listeners that sit in an epoll set, whose accept4()
 * must fail with EAGAIN rather than wait when another worker won.
 * Returns the fd, or -1 with a message in err.
 */
int cs_listener_open(const struct sockaddr *addr, socklen_t addr_len, int backlog,
		     bool nonblocking, bool reuseport, char *err, size_t err_len);

/* The port a bound socket got (to learn the kernel's pick for port 0),
 * or -1 with a message in err. */
int cs_listener_port(int fd, char *err, size_t err_len);

/* What cs_accept_blocking() returns instead of a connection's fd. */
enum {
	CS_ACCEPT_RETRY = -1, /* call again */
	CS_ACCEPT_STOP = -2,  /* the accepting thread is to end */
};

/*
 * accept4() on a blocking listener, for an acceptor thread; the connection
 * comes back non-blocking and close-on-exec (it goes to an epoll set).
 * Returns its fd; or CS_ACCEPT_RETRY after an interrupted call or a
 * failure (reported, counted in *errors if errors is not NULL, and paused
 * over when out of fds or memory); or CS_ACCEPT_STOP once the stop was
 * requested (the listener's shutdown() wakes the call) or after a failure
 * no retry mends (EINVAL: the whole process stops).
 */
int cs_accept_blocking(int listen_fd, uint64_t *errors);

/* net.core.somaxconn, the kernel's cap on any backlog; -1 if unreadable. */
int cs_somaxconn(void);

#endif /* CS_LISTENER_H */
