/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * connscoped's control socket: a Unix stream socket (mode 0600 in a 0700
 * directory) that answers connscope status, snapshot, reset and top with
 * the protocol of daemon/service/ctl_proto.h, from a thread of its own. Only root
 * and the daemon's own user are served (SO_PEERCRED); every other peer is
 * refused and logged. No client can stop or block the daemon: reads and
 * writes are non-blocking, a request must arrive whole within a few
 * seconds, and a stream reader that falls a second behind is dropped. Nor
 * can clients that connect and say nothing keep others out: a client that
 * has sent nothing is closed after 5 s, one idle between requests after
 * 30 s, and when every slot is taken the oldest idle client makes room.
 * Streams (top) take at most CS_CTL_MAX_STREAMS slots, so that status and
 * snapshot always find one.
 *
 * The thread also keeps the per-second windows (daemon/engine/window.h) that the
 * live view needs, ticking them once a second under the engine's lock.
 */
#ifndef CS_CTL_SERVER_H
#define CS_CTL_SERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ctl_socket.h"
#include "engine.h"
#include "run_meta.h"
#include "window.h"

#define CS_CTL_MAX_CLIENTS 16
/* top's streams may fill this many: the rest stay for short requests (status, snapshot). */
#define CS_CTL_MAX_STREAMS 12

struct cs_ctl_client;

/* The log's lines this second, and those left out (ctl_log). */
struct cs_ctl_log_budget {
	uint64_t second, lines, suppressed;
};

struct cs_ctl_server {
	struct cs_ctl_socket socket;
	pthread_t thread;
	bool running;
	volatile int stop;
	pthread_mutex_t *engine_lock;  /* held for every engine access */
	struct cs_engine *engine;
	const struct cs_report_meta *meta; /* kept current by the session */
	const char *target;
	struct cs_window window;       /* guarded by engine_lock too */
	uint64_t start_ns, reset_ns;
	uint64_t lost_at_reset;
	uint64_t skipped_at_reset;   /* probe_runs_skipped at the last reset */
	double traced_s_at_reset;    /* the time traced (trace windows) at the last reset */
	uint64_t cut_at_reset;       /* requests cut by a window's end at the last reset */
	struct cs_ctl_client *clients[CS_CTL_MAX_CLIENTS];
	/* counters, for the log and STATUS */
	uint64_t connections;
	uint64_t refused;              /* peers that are neither root nor our user */
	uint64_t rejected;             /* malformed, unknown, oversized or late requests */
	uint64_t streams_dropped;      /* stream readers that fell behind */
	uint64_t busy;                 /* connections turned away: too many clients */
	uint64_t idle_dropped;         /* idle clients closed to make room for a new one */
	struct cs_ctl_log_budget log;  /* the control thread's only */
};

/*
 * Create the socket at path (its directory made 0700 when missing; a stale
 * socket nobody answers on replaced; anything else there, or a symlink,
 * refused) and start serving. On failure a one-line message in errmsg.
 */
int cs_ctl_server_start(struct cs_ctl_server *server, const char *path, pthread_mutex_t *engine_lock,
			struct cs_engine *engine, const struct cs_report_meta *meta, const char *target,
			char *errmsg, size_t errlen);

/* Stop the thread, close every connection, remove the socket. */
void cs_ctl_server_stop(struct cs_ctl_server *server);

#endif /* CS_CTL_SERVER_H */
