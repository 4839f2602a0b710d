// SPDX-License-Identifier: BSD-2-Clause
#include "ctl_socket.h"

#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "errmsg.h"

void cs_ctl_vlog(const char *fmt, va_list ap)
{
	fputs("connscoped: control: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

__attribute__((format(printf, 1, 2)))
static void sock_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cs_ctl_vlog(fmt, ap);
	va_end(ap);
}

/* Is someone serving on the socket at path? */
static bool socket_answers(const struct sockaddr_un *addr)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	bool answers = connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) == 0;
	close(fd);
	return answers;
}

int cs_ctl_socket_open(struct cs_ctl_socket *sock, const char *path, char *errmsg, size_t errlen)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	if (!path[0] || strlen(path) >= sizeof(addr.sun_path))
		return cs_fail(errmsg, errlen, "--socket: the path must be 1 to %zu bytes long",
			       sizeof(addr.sun_path) - 1);
	strcpy(addr.sun_path, path);

	/*
	 * The directory: made 0700 when missing; never a symlink. Two daemons
	 * starting at once may both find it missing: the one whose mkdir comes
	 * second finds it made, and checks it as any directory already there.
	 */
	char dir_buf[sizeof(addr.sun_path)];
	strcpy(dir_buf, path);
	const char *dir = dirname(dir_buf);
	struct stat st;
	bool made = false;
	if (lstat(dir, &st) != 0) {
		if (errno == ENOENT && mkdir(dir, 0700) == 0)
			made = true;
		else if (errno != EEXIST || lstat(dir, &st) != 0)
			return cs_fail(errmsg, errlen, "cannot create the socket's directory %s: %s", dir,
				       strerror(errno));
	}
	if (made) {
		sock_log("created %s (mode 0700)", dir);
	} else if (!S_ISDIR(st.st_mode)) {
		return cs_fail(errmsg, errlen, "%s is not a directory%s: the control socket goes there", dir,
			       S_ISLNK(st.st_mode) ? " but a symlink (connscoped does not follow links)" : "");
	}

	/* What is at path: nothing, a stale socket (replaced), anything else (refused). */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return cs_fail(errmsg, errlen, "%s exists and is not a socket%s; remove it or choose "
				       "another --socket", path, S_ISLNK(st.st_mode) ? " (a symlink)" : "");
		if (socket_answers(&addr))
			return cs_fail(errmsg, errlen, "another connscoped already serves %s (stop it, or give "
				       "this one another --socket)", path);
		if (unlink(path) != 0)
			return cs_fail(errmsg, errlen, "cannot remove the stale socket %s: %s", path, strerror(errno));
		sock_log("replaced the stale socket %s", path);
	}

	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return cs_fail(errmsg, errlen, "cannot create the control socket: %s", strerror(errno));
	/* Born 0600: no moment when others could connect. */
	mode_t old_mask = umask(0177);
	int err = bind(fd, (struct sockaddr *)&addr, sizeof(addr)) ? errno : 0;
	umask(old_mask);
	if (!err && listen(fd, 16))
		err = errno;
	if (err) {
		close(fd);
		return cs_fail(errmsg, errlen, "cannot serve the control socket %s: %s", path, strerror(err));
	}
	if (lstat(path, &st) == 0) {
		sock->inode = st.st_ino;
		sock->device = st.st_dev;
	}
	sock->fd = fd;
	strcpy(sock->path, path);
	return 0;
}

void cs_ctl_socket_close(struct cs_ctl_socket *sock)
{
	if (sock->fd < 0)
		return;
	close(sock->fd);
	sock->fd = -1;
	/* Remove the socket only if it is still the one we made. */
	struct stat st;
	if (lstat(sock->path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == sock->inode &&
	    st.st_dev == sock->device)
		unlink(sock->path);
}
