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
#include <sys/stat.h>
#include <unistd.h>

/*
 * Kept namespaces: inode and an fd to setns() into. Never closed: there are
 * few, and a following run may come back to any of them.
 */
static struct {
	uint32_t ino;
	int fd;
} kept[CS_MAX_NETNS];
static size_t kept_count;

uint32_t cs_netns_self(void)
{
	struct stat st;
	return stat("/proc/thread-self/ns/net", &st) ? 0 : (uint32_t)st.st_ino;
}

static int kept_fd(uint32_t ino)
{
	for (size_t i = 0; i < kept_count; i++)
		if (kept[i].ino == ino)
			return kept[i].fd;
	return -1;
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
				kept[kept_count++].fd = fd;
				return 0;
			}
		}
	}
	close(fd);
	return err;
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
	int back;
	*count = 0;
	int err = cs_netns_enter(ino, &back);
	if (err)
		return err;
	/* The netlink socket belongs to the namespace it is created in. */
	err = cs_list_listeners(out, max, count);
	cs_netns_leave(back);
	return err;
}

int cs_netns_tcp_counters(uint32_t ino, struct cs_tcp_counters *out)
{
	int back;
	int err = cs_netns_enter(ino, &back);
	if (err)
		return err;
	/* /proc/thread-self/net is the calling thread's namespace (self/net is the main thread's). */
	err = cs_read_tcp_counters("/proc/thread-self/net/netstat", out);
	cs_netns_leave(back);
	return err;
}

int cs_netns_pid_listen_ports(pid_t pid, uint16_t *ports, size_t max, size_t *count, uint32_t *ino)
{
	static struct cs_listen_socket listeners[CS_MAX_LISTENERS];
	size_t listener_count = 0;
	*count = 0;
	int err = cs_netns_keep_pid(pid, ino);
	if (err)
		return err;
	err = cs_netns_list_listeners(*ino, listeners, CS_MAX_LISTENERS, &listener_count);
	if (err && err != -ENOSPC)
		return err;
	return cs_proc_listen_ports(pid, listeners, listener_count, ports, max, count);
}
