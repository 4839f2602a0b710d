/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * JVM targets: what only the JVM knows (its threads' names, where its JIT
 * put compiled methods), asked through HotSpot's own attach mechanism, the
 * one jcmd uses: a trigger file and SIGQUIT start the JVM's attach
 * listener, then a Unix socket takes diagnostic commands. Called once, at
 * the end of a run, off the probes' path.
 */
#ifndef CS_JVM_H
#define CS_JVM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <stdint.h>

#include "connscope.h"

/* Where the names go: cs_record_fn of probes.h. */
typedef int (*cs_jvm_record_fn)(void *ctx, const void *record, size_t len);

/* Whether pid runs a JVM (its executable is named java). */
bool cs_jvm_is_java(pid_t pid);

/*
 * Runs the diagnostic command cmd ("Thread.print", "Compiler.perfmap") in
 * the JVM pid. Returns its output (malloc'd, NUL-terminated; the caller
 * frees it), or NULL with the reason in why.
 */
char *cs_jvm_command(pid_t pid, const char *cmd, char *why, size_t why_len);

/*
 * Calls fn(tid, name) for every thread of a Thread.print output, tid as
 * the host sees it (the JVM gives its own namespace's: tids maps them when
 * the JVM runs in another pid namespace). Returns the threads found.
 */
size_t cs_jvm_parse_threads(const char *output, pid_t pid,
			    void (*fn)(void *ctx, uint32_t tid, const char *name), void *ctx);

/*
 * A run's end: for every java process of pids, its thread names as
 * CS_EV_THREAD_NAME records (to on_record). A JVM that refuses gets one
 * line on stderr (unless quiet). Returns the names recorded.
 */
size_t cs_jvm_collect(const pid_t *pids, size_t count, bool quiet, cs_jvm_record_fn on_record, void *ctx,
		      uint64_t now_ns);

/* The perf maps connscope had JVMs write, to remove once read. */
struct cs_jvm_perfmaps {
	pid_t pids[64];
	size_t count;
};

/*
 * Has every java process of tgids write /tmp/perf-PID.map (the JIT's
 * compiled methods: Compiler.perfmap) for the symboliser; maps that were
 * not there before go into maps. A JVM that refuses gets one line.
 */
void cs_jvm_write_perfmaps(const uint32_t *tgids, size_t count, bool quiet, struct cs_jvm_perfmaps *maps);
/* Removes the maps cs_jvm_write_perfmaps wrote (each some megabytes in /tmp). */
void cs_jvm_remove_perfmaps(const struct cs_jvm_perfmaps *maps);

#endif /* CS_JVM_H */
