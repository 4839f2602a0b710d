/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The control socket's file: a listening Unix stream socket at a path, in
 * a directory made 0700 when missing, the socket itself born 0600. A stale
 * socket (nobody answers) is replaced; a live one, a symlink or any other
 * file at the path is refused; a symlinked directory too. On close the
 * socket is removed, if it is still ours.
 */
#ifndef CS_CTL_SOCKET_H
#define CS_CTL_SOCKET_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

struct cs_ctl_socket {
	int fd;              /* listening, non-blocking; -1: none */
	char path[108];
	ino_t inode;         /* the socket we bound, to unlink only ours */
	dev_t device;
};

/* Returns 0, or -1 with a one-line message in errmsg. */
int cs_ctl_socket_open(struct cs_ctl_socket *sock, const char *path, char *errmsg, size_t errlen);
void cs_ctl_socket_close(struct cs_ctl_socket *sock);

/* One line of the control side's log on stderr: "connscoped: control: ...". */
void cs_ctl_vlog(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif /* CS_CTL_SOCKET_H */
