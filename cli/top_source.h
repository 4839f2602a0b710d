/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * connscope top's in-process source, when no daemon answers: a session in
 * a thread (the probes attached as `attach` does), its engine shared under
 * a lock, and the last minute's window ticked once a second.
 */
#ifndef CS_CLI_TOP_SOURCE_H
#define CS_CLI_TOP_SOURCE_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "probes.h"
#include "report.h"
#include "session.h"
#include "window.h"

struct local_source {
	struct cs_session_options opts;
	struct cs_engine *engine;
	pthread_mutex_t lock;
	struct cs_report_meta meta;        /* kept current by the session */
	struct cs_window window;
	pthread_t thread;
	volatile int done;                 /* the session returned */
	int rc;
	char errmsg[CS_ERRMSG_LEN];
	struct cs_session_result result;
	char target[64];
	uint64_t start_ns;
};

uint64_t top_now_ns(void);

/* Start the session on opts' targets: 0, or -1 with errmsg set. */
int local_start(struct local_source *src);
/* Stop it (cs_cli_stop) and free what it holds. */
void local_stop(struct local_source *src);
/* The session has returned. */
bool local_done(struct local_source *src);

/*
 * The snapshot, after ticking the window when a second has ended (tick:
 * the caller's once-a-second beat), as a value for top's model: no trip
 * through text in-process. The caller owns it; NULL: out of memory.
 */
json_t *local_frame(struct local_source *src, double tail, bool tick);

/* --once: wait until two whole seconds are in (or the session ended, or a signal came). */
void local_settle(struct local_source *src);

#endif /* CS_CLI_TOP_SOURCE_H */
