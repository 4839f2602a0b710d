// SPDX-License-Identifier: BSD-2-Clause
#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <unistd.h>

/*
 * Kept namespaces: inode and an fd to setns() into. Never closed: there are
 * few, and a following run may come back to any of them.
 */
static struct {
	uint32_t ino;
	int fd;
	int diag_fd; /* a sock_diag socket made in it: asked without entering (-1: none) */
} kept[CS_MAX_NETNS];
static size_t kept_count;

uint32_t cs_netns_self(void)
{
	struct stat st;
	return stat("/proc/thread-self/ns/net", &st) ? 0 : (uint32_t)st.st_ino;
}

static int kept_index(uint32_t ino)
{
	for (size_t i = 0; i < kept_count; i++)
		if (kept[i].ino == ino)
			return (int)i;
	return -1;
}

static int kept_fd(uint32_t ino)
{
	int i = kept_index(ino);
	return i < 0 ? -1 : kept[i].fd;
}

/*
 * A sock_diag socket inside namespace fd, or -1. Made while we may still
 * enter namespaces: connscoped drops CAP_SYS_ADMIN (which setns() needs)
 * once attached, and the socket keeps answering for its namespace.
 */
static int diag_socket_in(int fd)
{
	int ours = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (ours < 0)
		return -1;
	int sock = -1;
	if (setns(fd, CLONE_NEWNET) == 0) {
		sock = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
		cs_netns_leave(ours);
	} else {
		close(ours);
	}
	return sock;
}

int cs_netns_keep(const char *path, uint32_t *ino)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int err = 0;
	/* Only a network namespace is what setns(CLONE_NEWNET) takes: say so now, not at the first entry. */
	if (fstat(fd, &st))
		err = -errno;
	else if (ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET)
		err = -EINVAL;
	if (!err) {
		*ino = (uint32_t)st.st_ino;
		if (kept_fd(*ino) < 0 && *ino != cs_netns_self()) {
			if (kept_count >= CS_MAX_NETNS) {
				err = -ENOSPC;
			} else {
				kept[kept_count].ino = *ino;
				kept[kept_count].fd = fd;
				kept[kept_count++].diag_fd = diag_socket_in(fd);
				return 0;
			}
		}
	}
	close(fd);
	return err;
}

int cs_netns_of_pid(pid_t pid, uint32_t *ino)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	if (stat(path, &st))
		return -errno;
	*ino = (uint32_t)st.st_ino;
	return 0;
}

size_t cs_netns_kept_count(void)
{
	return kept_count;
}

void cs_netns_forget(uint32_t ino)
{
	int i = kept_index(ino);
	if (i < 0)
		return;
	close(kept[i].fd);
	if (kept[i].diag_fd >= 0)
		close(kept[i].diag_fd);
	kept[i] = kept[--kept_count];
}

int cs_netns_keep_pid(pid_t pid, uint32_t *ino)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	return cs_netns_keep(path, ino);
}

int cs_netns_resolve(const char *arg, uint32_t *ino)
{
	char *end;
	long pid = strtol(arg, &end, 10);
	if (*arg && !*end && pid > 0)
		return cs_netns_keep_pid((pid_t)pid, ino);
	if (strchr(arg, '/'))
		return cs_netns_keep(arg, ino);
	char path[512];
	if (snprintf(path, sizeof(path), "/var/run/netns/%s", arg) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return cs_netns_keep(path, ino);
}

int cs_netns_enter(uint32_t ino, int *back)
{
	*back = -1;
	if (ino == 0 || ino == cs_netns_self())
		return 0;
	int fd = kept_fd(ino);
	if (fd < 0)
		return -ENOENT;
	int ours = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (ours < 0)
		return -errno;
	if (setns(fd, CLONE_NEWNET)) {
		int err = -errno;
		close(ours);
		return err;
	}
	*back = ours;
	return 0;
}

void cs_netns_leave(int back)
{
	if (back < 0)
		return;
	/* Cannot fail: we came from there, with the same privileges. */
	if (setns(back, CLONE_NEWNET))
		perror("connscope: cannot return to the original network namespace");
	close(back);
}

int cs_netns_list_listeners(uint32_t ino, struct cs_listen_socket *out, size_t max, size_t *count)
{
	*count = 0;
	if (ino == 0 || ino == cs_netns_self())
		return cs_list_listeners(out, max, count);
	int i = kept_index(ino);
	if (i < 0)
		return -ENOENT;
	/* A netlink socket answers for the namespace it was made in. */
	return kept[i].diag_fd >= 0 ? cs_list_listeners_on(kept[i].diag_fd, out, max, count) : -EPERM;
}

/* netstat and snmp of the calling thread's namespace (/proc/thread-self/net: its own, not the main thread's). */
static int open_counters_here(int fds[2])
{
	fds[0] = open("/proc/thread-self/net/netstat", O_RDONLY | O_CLOEXEC);
	fds[1] = fds[0] < 0 ? -1 : open("/proc/thread-self/net/snmp", O_RDONLY | O_CLOEXEC);
	if (fds[1] >= 0)
		return 0;
	int err = -errno;
	cs_tcp_counters_close(fds);
	return err;
}

void cs_tcp_counters_close(int fds[2])
{
	for (int i = 0; i < 2; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

/* netstat or snmp: a few pairs of lines, a few kilobytes. */
#define TCP_COUNTERS_TEXT_BYTES 16384

/* A proc file read from its start is made afresh: the counters as of now. */
static int read_whole(int fd, char *text, size_t len)
{
	ssize_t got = pread(fd, text, len - 1, 0);
	if (got < 0)
		return -errno;
	text[got] = '\0';
	return 0;
}

int cs_tcp_counters_read(const int fds[2], struct cs_tcp_counters *out)
{
	char text[TCP_COUNTERS_TEXT_BYTES];
	if (fds[0] < 0 || fds[1] < 0)
		return -EBADF;
	int err = read_whole(fds[0], text, sizeof(text));
	if (!err)
		err = cs_parse_tcp_counters(text, out);
	if (!err)
		err = read_whole(fds[1], text, sizeof(text));
	return err ? err : cs_parse_tcp_snmp(text, out);
}

int cs_netns_tcp_counters_open(uint32_t ino, int fds[2])
{
	int back;
	fds[0] = fds[1] = -1;
	int err = cs_netns_enter(ino, &back);
	if (err)
		return err;
	err = open_counters_here(fds);
	cs_netns_leave(back);
	return err;
}

int cs_netns_tcp_counters(uint32_t ino, struct cs_tcp_counters *out)
{
	int fds[2];
	int err = cs_netns_tcp_counters_open(ino, fds);
	if (err)
		return err;
	err = cs_tcp_counters_read(fds, out);
	cs_tcp_counters_close(fds);
	return err;
}

int cs_parse_proc_net_tcp(const char *text, struct cs_listen_socket *out, size_t max, size_t *count)
{
	const char *line = strchr(text, '\n'); /* the header */
	int err = 0;
	while (line && *++line) {
		unsigned int local_port, state, rx_queue;
		unsigned long inode;
		/* sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode */
		if (sscanf(line, " %*u: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x %*x:%x %*x:%*x %*x %*u %*u %lu",
			   &local_port, &state, &rx_queue, &inode) == 4 &&
		    state == CS_TCP_LISTEN && inode) {
			if (*count >= max) {
				err = -ENOSPC;
			} else {
				/* A listener's rx_queue is its accept queue; its limit is not shown. */
				out[(*count)++] = (struct cs_listen_socket){
					.inode = inode, .port = (uint16_t)local_port, .backlog = rx_queue,
				};
			}
		}
		line = strchr(line, '\n');
	}
	return err;
}

/* Room for one /proc/PID/net/tcp file: a busy host's lists run to megabytes. */
#define PROC_NET_TCP_BYTES (1 << 20)

/* The listeners of pid's namespace from /proc/PID/net/tcp and tcp6 (no drops counted there). */
static int proc_net_listeners(pid_t pid, struct cs_listen_socket *out, size_t max, size_t *count)
{
	static const struct {
		const char *file;
		uint16_t family;
	} files[] = { { "tcp", AF_INET }, { "tcp6", AF_INET6 } };
	char *text = malloc(PROC_NET_TCP_BYTES);
	if (!text)
		return -ENOMEM;
	int err = 0;
	*count = 0;
	for (size_t f = 0; f < 2 && !err; f++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, files[f].file);
		FILE *in = fopen(path, "re");
		if (!in) {
			err = -errno;
			break;
		}
		size_t len = fread(text, 1, PROC_NET_TCP_BYTES - 1, in);
		fclose(in);
		text[len] = '\0';
		size_t before = *count;
		err = cs_parse_proc_net_tcp(text, out, max, count);
		for (size_t i = before; i < *count; i++)
			out[i].family = files[f].family;
	}
	free(text);
	return err;
}

/* pid's listening ports, from the listeners of its namespace (room for them in listeners). */
static int pid_listen_ports(pid_t pid, struct cs_listen_socket *listeners, uint16_t *ports, size_t max,
			    size_t *count, uint32_t *ino)
{
	size_t listener_count = 0;
	bool known = *ino == cs_netns_self() || kept_index(*ino) >= 0;
	int err = cs_netns_keep_pid(pid, ino);
	if (err && err != -ENOSPC)
		return err;
	err = cs_netns_list_listeners(*ino, listeners, CS_MAX_LISTENERS, &listener_count);
	/*
	 * A namespace met after connscoped's drop (no sock_diag socket), or
	 * beyond the kept ones: its /proc/PID/net/tcp still shows them.
	 */
	if (err == -EPERM || err == -ENOENT)
		err = proc_net_listeners(pid, listeners, CS_MAX_LISTENERS, &listener_count);
	if (!err || err == -ENOSPC)
		err = cs_proc_listen_ports(pid, listeners, listener_count, ports, max, count);
	/* Not a server (a shell in a container): its namespace is not kept for it. */
	if (!known && *count == 0)
		cs_netns_forget(*ino);
	return err;
}

int cs_netns_pid_listen_ports(pid_t pid, uint16_t *ports, size_t max, size_t *count, uint32_t *ino)
{
	*count = 0;
	int err = cs_netns_of_pid(pid, ino);
	if (err)
		return err;
	struct cs_listen_socket *listeners = calloc(CS_MAX_LISTENERS, sizeof(*listeners));
	if (!listeners)
		return -ENOMEM;
	err = pid_listen_ports(pid, listeners, ports, max, count, ino);
	free(listeners);
	return err;
}
