/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Network namespaces of targets: a server in a container listens in its own
 * namespace, where our sock_diag queries, iterator walks and netstat reads
 * must go. A namespace is named by its inode number (what /proc/PID/ns/net
 * and the probes' map show); we keep an fd of each one a target lives in,
 * so it can be entered again after the process that showed it is gone.
 * Entering one moves only the calling thread, and only until it leaves.
 * All functions return 0 or a negative errno.
 */
#ifndef CS_NETNS_H
#define CS_NETNS_H

#include <stdint.h>
#include <sys/types.h>

#include "procfs.h"

#define CS_MAX_NETNS 64 /* namespaces kept open at once */

/* The namespace of the calling thread. */
uint32_t cs_netns_self(void);

/*
 * Open and keep the namespace at path (/proc/PID/ns/net, or a file under
 * /var/run/netns/ as 'ip netns add' makes them); *ino is its number.
 * The same namespace twice is kept once.
 */
int cs_netns_keep(const char *path, uint32_t *ino);

/* The namespace of pid, without keeping it. */
int cs_netns_of_pid(pid_t pid, uint32_t *ino);

/* Close a kept namespace (none of our targets is in it any more). */
void cs_netns_forget(uint32_t ino);

/* How many namespaces are kept. */
size_t cs_netns_kept_count(void);

/* cs_netns_keep for /proc/PID/ns/net. */
int cs_netns_keep_pid(pid_t pid, uint32_t *ino);

/*
 * --netns's argument: a pid, a path, or a name under /var/run/netns/.
 * Kept as cs_netns_keep does.
 */
int cs_netns_resolve(const char *arg, uint32_t *ino);

/*
 * Move the calling thread into kept namespace ino; *back is what
 * cs_netns_leave needs (-1 when ino is ours already: nothing to undo).
 */
int cs_netns_enter(uint32_t ino, int *back);
void cs_netns_leave(int back);

/* cs_list_listeners in namespace ino. */
int cs_netns_list_listeners(uint32_t ino, struct cs_listen_socket *out, size_t max, size_t *count);

/* The TCP counters of namespace ino: TcpExt of its netstat, Tcp of its snmp. */
int cs_netns_tcp_counters(uint32_t ino, struct cs_tcp_counters *out);

/*
 * Those files of namespace ino, opened there and kept: read again with
 * cs_tcp_counters_read, from any namespace and without the privilege to
 * enter one (connscoped drops it once attached). fds[i] -1: not open.
 */
int cs_netns_tcp_counters_open(uint32_t ino, int fds[2]);
int cs_tcp_counters_read(const int fds[2], struct cs_tcp_counters *out);
void cs_tcp_counters_close(int fds[2]);

/*
 * The listening ports of pid, looked for in its own namespace (kept), as
 * cs_proc_listen_ports; *ino is that namespace.
 */
int cs_netns_pid_listen_ports(pid_t pid, uint16_t *ports, size_t max, size_t *count, uint32_t *ino);

#define CS_TCP_LISTEN 10 /* TCP_LISTEN, the "st" column's 0A */

/*
 * Listening sockets from the text of /proc/PID/net/tcp or tcp6 (pure, for
 * tests): inode, port, accept queue; no limit, drops or family.
 * Returns 0, or -ENOSPC when more than max (the first max kept).
 */
int cs_parse_proc_net_tcp(const char *text, struct cs_listen_socket *out, size_t max, size_t *count);

#endif /* CS_NETNS_H */
