/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One profiling run: find the targets, start the probes, move records from
 * the ring buffer into the engine (and any other sink) until the duration
 * ends, a signal arrives or every target process has exited.
 */
#ifndef CS_SESSION_H
#define CS_SESSION_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "engine.h"
#include "probes.h"
#include "run_meta.h"
#include "targets.h"
#include "trace_windows.h"

#define CS_MAX_TARGETS 64

struct cs_session_options {
	pid_t pids[CS_MAX_TARGETS];
	size_t pid_count;
	uint16_t ports[CS_MAX_TARGETS];
	size_t port_count;
	struct cs_target_match match;      /* --name, --cgroup: processes that listen */
	char netns[256];                   /* --netns: where --port's listeners are ("": ours) */
	double duration_s;                 /* 0: until *stop is set */
	unsigned int sample_hz;            /* listener samples (sock_diag) per second */
	struct cs_trace_schedule trace;    /* when the per-request probes are attached; zero: always */
	struct cs_probe_options probe;
	const volatile sig_atomic_t *stop; /* set by a signal handler */
	cs_record_fn tee;                  /* optional: also gets every record */
	void *tee_ctx;
	/* optional: called once the probes run and know their targets, before
	   collecting starts (connscope flamegraph adds its stack probes) */
	int (*on_attached)(void *ctx, struct cs_probes *probes, char *errmsg, size_t errlen);
	void *on_attached_ctx;
	bool quiet;                        /* no progress lines on stderr */
	bool no_jvm;                       /* --no-jvm: do not ask java targets for their thread names */

	/* The daemon's needs: */
	bool follow;                       /* keep going when targets exit; find
	                                      new processes on the target ports */
	volatile sig_atomic_t *rescan;     /* set (SIGHUP): look for targets now; cleared here */
	pthread_mutex_t *engine_lock;      /* held while the engine is fed */
	struct cs_report_meta *live_meta;  /* kept current (under engine_lock) */
	/*
	 * Optional, with rescan: called when *rescan is set, with next a copy
	 * of the options in force. Returns 0 after changing next's targets
	 * (pids, ports, match), sample_hz and trace, which then replace the current
	 * ones; -1 to keep them (it says why itself).
	 */
	int (*reload)(void *ctx, struct cs_session_options *next);
	void *hooks_ctx;                   /* for reload and attached */
	/*
	 * Optional: called once the probes are attached and the targets in
	 * (connscoped drops its capabilities there). Returns 0, or -1 with a
	 * message in errmsg to end the run.
	 */
	int (*attached)(void *ctx, char *errmsg, size_t errlen);
};

/* What happened to the run, beyond the engine's statistics. */
struct cs_session_result {
	struct cs_report_meta meta;
	char target[256];                  /* meta.target points here */
	struct cs_target_labels labels;    /* meta.labels (and the live meta's) point here */
	bool target_exited;
};

/*
 * Runs one session into engine. Returns 0, or -1 with a one-line message in
 * errmsg (no such process, nothing listening, missing privilege, kernel
 * feature missing, ...).
 */
int cs_session_run(const struct cs_session_options *opts, struct cs_engine *engine,
		   struct cs_session_result *result, char *errmsg, size_t errlen);

#endif /* CS_SESSION_H */
