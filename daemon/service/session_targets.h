/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The session's target bookkeeping beyond --pid and --port: processes found
 * by name or cgroup (at the start and at each rescan while following), and
 * forgetting every target when a reload changes them. Works on the
 * session's own arrays through a cs_watch view.
 */
#ifndef CS_SESSION_TARGETS_H
#define CS_SESSION_TARGETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "probes.h"
#include "procfs.h"
#include "run_meta.h"
#include "targets.h"

/* What the session watches: its processes and ports, and the probes' maps. */
struct cs_watch {
	pid_t *pids;
	size_t *pid_count, pid_max;
	uint16_t *ports;
	uint32_t *port_netns;      /* each port's network namespace (inode) */
	size_t *port_count, port_max;
	pid_t *match_pids;         /* room for the processes a match finds */
	size_t match_pid_max;
	struct cs_probes *probes;  /* NULL before the probes start */
	bool quiet;                /* no "now watching" lines */
};

/*
 * Follow pid's pauses when it runs a JVM; one line on stderr when its
 * pauses cannot be followed (unless quiet), and how they are with verbose.
 */
void cs_watch_pauses(struct cs_probes *probes, pid_t pid, bool quiet, bool verbose);

/*
 * Add port of network namespace netns_ino to the watched ports (and the
 * probes' maps); false if it was there.
 */
bool cs_watch_add_port(struct cs_watch *watch, uint32_t netns_ino, uint16_t port);

/*
 * Processes matching match that hold listening sockets and are not watched
 * yet become targets, with their listening ports. listeners are those of
 * our own network namespace; a process in another one is looked for in
 * its own. Returns how many were added.
 */
size_t cs_watch_add_matching(struct cs_watch *watch, const struct cs_target_match *match,
			     const struct cs_listen_socket *listeners, size_t listener_count);

/*
 * Once half the ports or kept namespaces are used: forget the ports of
 * other network namespaces where no watched process lives any more (a
 * container gone), except keep_ino's (--netns), so that a host whose
 * containers come and go keeps room for the next ones. Not before: a
 * container restarted in its pod's namespace keeps its listener samples
 * (after connscoped's drop, a namespace forgotten cannot be entered again).
 * Our own namespace's ports stay. Returns how many went.
 */
size_t cs_watch_prune_namespaces(struct cs_watch *watch, uint32_t keep_ino);

/* Forget every process and port (and take them out of the probes' maps). */
void cs_watch_clear(struct cs_watch *watch);

/* The labels of target pid, in network namespace netns_ino. */
void cs_target_labels_of(pid_t pid, uint32_t netns_ino, struct cs_target_labels *out);

/* "name nginx, cgroup /system.slice/x" for messages; "" when match is empty. */
void cs_describe_match(const struct cs_target_match *match, char *out, size_t len);

#endif /* CS_SESSION_TARGETS_H */
