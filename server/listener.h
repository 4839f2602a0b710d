/* SPDX-License-Identifier: BSD-2-Clause */
/* Listening sockets (in the manner of Redis's anet.c). */
#ifndef CS_LISTENER_H
#define CS_LISTENER_H

#include <stdbool.h>
#include <stddef.h>
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

/* net.core.somaxconn, the kernel's cap on any backlog; -1 if unreadable. */
int cs_somaxconn(void);

#endif /* CS_LISTENER_H */
