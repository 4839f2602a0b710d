/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Finding targets and kernel counters: which processes hold which listening
 * TCP sockets (sock_diag netlink + /proc/PID/fd), each listener's backlog,
 * limit and drops for the periodic listener samples (sock_diag), and
 * TcpExt counters.
 * All functions return 0 or a negative errno.
 */
#ifndef CS_PROCFS_H
#define CS_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "run_meta.h"
#include "targets.h"

#define CS_MAX_LISTENERS 1024

/* A listening TCP socket of this network namespace. */
struct cs_listen_socket {
	uint64_t inode;
	uint32_t backlog;        /* connections waiting for accept() (sk_ack_backlog) */
	uint32_t backlog_limit;  /* listen()'s backlog (sk_max_ack_backlog) */
	uint32_t drops;          /* sk_drops: SYNs and ACKs dropped on it */
	uint16_t port;
	uint16_t family;
};

/*
 * Every listening TCP socket (IPv4 and IPv6), via NETLINK_SOCK_DIAG. The
 * kernel walks only its listening hash for this: cheap enough to ask many
 * times a second, whatever the number of connections.
 */
int cs_list_listeners(struct cs_listen_socket *out, size_t max, size_t *count);

/*
 * The same on a NETLINK_SOCK_DIAG socket of our own (-1: a new one): the
 * listeners of the namespace the socket was made in.
 */
int cs_list_listeners_on(int nl_fd, struct cs_listen_socket *out, size_t max, size_t *count);

/* Does the process exist (and is it not a zombie)? */
int cs_proc_alive(pid_t pid);

/* The process (thread group) pid belongs to: pid itself unless it names a thread. */
int cs_proc_tgid(pid_t pid, pid_t *tgid);

/* The process's name from /proc/PID/comm. */
int cs_proc_comm(pid_t pid, char *buf, size_t len);

/*
 * Ports of the listening sockets among listeners that pid holds open.
 * Ports are de-duplicated; *count is how many were stored.
 */
int cs_proc_listen_ports(pid_t pid, const struct cs_listen_socket *listeners, size_t listener_count,
			 uint16_t *ports, size_t max, size_t *count);

/* Processes (tgids) that hold a listening socket on port open. */
int cs_pids_on_port(uint16_t port, const struct cs_listen_socket *listeners, size_t listener_count,
		    pid_t *pids, size_t max, size_t *count);

/*
 * Processes (tgids, ascending, no kernel threads) that match a --name
 * (their comm or executable's basename) or live in a --cgroup (or one of
 * its descendants, in the cgroup v2 hierarchy wherever it is mounted). A cgroup that does not exist (yet) holds nobody.
 * Returns 0, or -ENOSPC when more than max matched (the first max kept).
 */
int cs_pids_matching(const struct cs_target_match *match, pid_t *pids, size_t max, size_t *count);

/* Does the cgroup v2 directory of path (normalized) exist? */
bool cs_cgroup_exists(const char *path);

/* Where the cgroup v2 hierarchy is mounted (looked up once), or NULL. */
const char *cs_cgroup2_mount(void);

/*
 * Parse the text of a netstat file (pure, for tests): the "TcpExt:" header
 * line names the columns of the next one. *out is zeroed first.
 */
int cs_parse_tcp_counters(const char *text, struct cs_tcp_counters *out);

/* The same for an snmp file's "Tcp:" lines: only their fields of *out are set. */
int cs_parse_tcp_snmp(const char *text, struct cs_tcp_counters *out);

#endif /* CS_PROCFS_H */
