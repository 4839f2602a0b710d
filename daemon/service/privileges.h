/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * connscoped's capabilities: what it needs to start, and dropping all but
 * what it needs to keep following its targets once its probes are in.
 *
 * Kept (found by trying each operation with and without each capability):
 *   CAP_SYS_PTRACE       read /proc/PID/fd links and /proc/PID/exe of other
 *                        processes (the ptrace access check), to find who
 *                        holds a listening socket and what a process runs
 *   CAP_DAC_READ_SEARCH  list /proc/PID/fd of processes of other users
 *                        (the directory is mode 0500, owned by them)
 * Not needed after the start: map updates and deletes on the maps' fds,
 * new iterator instances from the iterator link, ring-buffer reads,
 * sock_diag dumps of listening sockets, cgroup.procs and /proc/PID/stat,
 * serving sockets (a Unix socket in a root-owned directory can even be
 * created, chmod-ed and asked for its peers' credentials as uid 0 with no
 * capability), the config file (root's) on SIGHUP; detaching at the end.
 */
#ifndef CS_PRIVILEGES_H
#define CS_PRIVILEGES_H

#include <stddef.h>
#include <stdint.h>

#define CS_CAP_DAC_READ_SEARCH 2
#define CS_CAP_SYS_ADMIN 21
#define CS_CAP_SYS_PTRACE 19
#define CS_CAP_PERFMON 38
#define CS_CAP_BPF 39

/* The capabilities kept after the drop, as /proc/PID/status shows them. */
#define CS_KEPT_CAPS ((1ull << CS_CAP_SYS_PTRACE) | (1ull << CS_CAP_DAC_READ_SEARCH))
/* ... and, tracing in windows, what attaching the request probes again at each window takes. */
#define CS_ATTACH_CAPS ((1ull << CS_CAP_BPF) | (1ull << CS_CAP_PERFMON))

/*
 * Has this process what connscoped needs to start? CAP_BPF and CAP_PERFMON
 * (or CAP_SYS_ADMIN), CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH. If not,
 * -1 and one line naming each missing capability and how to grant them.
 */
int cs_privileges_check(char *errmsg, size_t errlen);

/*
 * In every thread of the process: drop every capability but keep (CS_KEPT_CAPS, with CS_ATTACH_CAPS or not)
 * (from the effective, permitted and bounding sets; inheritable and
 * ambient emptied) and set no_new_privs. Checked afterwards in each
 * thread's /proc status. Returns 0, or -1 with why in errmsg.
 */
int cs_privileges_drop(uint64_t keep, char *errmsg, size_t errlen);

/* Render a capability set as "CAP_SYS_PTRACE CAP_DAC_READ_SEARCH". */
void cs_caps_describe(uint64_t caps, char *out, size_t len);

#endif /* CS_PRIVILEGES_H */
