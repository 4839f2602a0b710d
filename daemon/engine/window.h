/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Per-second windows over the engine's cumulative statistics, for the live
 * view (connscope top): a ring of the last 60 seconds (requests, accepts,
 * drops and a latency histogram of the requests that ended in each), and
 * the last second's rates per listener and per thread. The daemon ticks it
 * once a second; each tick takes the difference between the engine's
 * totals now and at the previous tick. Pure code: the caller passes the
 * time and holds whatever lock guards the engine.
 */
#ifndef CS_WINDOW_H
#define CS_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "hist.h"

#define CS_WINDOW_SECONDS 60
#define CS_WINDOW_PORTS 64
#define CS_WINDOW_THREADS 256

/* One tick's worth: what ended between the previous tick and this one. */
struct cs_window_second {
	uint64_t end_ns;          /* the tick that closed it; 0: empty slot */
	uint64_t span_ns;         /* since the previous tick */
	uint64_t requests;
	uint64_t accepts;
	uint64_t drops;
	struct cs_hist latency_ns;
};

/* A listener's last second, and the totals it was measured from. */
struct cs_window_port {
	uint16_t port;
	uint64_t prev_accepts, prev_drops, prev_requests;
	uint64_t accepts, drops, requests;  /* in the last tick */
	uint32_t backlog_now;               /* its sockets' last seen queue depth, summed */
};

/* A server thread's last second. */
struct cs_window_thread {
	uint32_t tid, tgid;
	char comm[CS_COMM_LEN];
	uint64_t prev_requests, prev_accepts, prev_handler_ns;
	uint64_t requests, accepts, handler_ns; /* in the last tick */
	uint64_t total_accepts;                 /* since the engine started */
	bool seen;                              /* still in the engine at the last tick */
};

struct cs_window {
	struct cs_window_second *seconds; /* ring of CS_WINDOW_SECONDS */
	size_t newest;                    /* index of the latest filled slot */
	size_t filled;                    /* slots filled so far */
	uint64_t last_tick_ns;            /* 0: no tick yet */
	uint64_t last_span_ns;
	struct cs_hist *prev_latency;     /* the engine's latency at the last tick */
	uint64_t prev_accepts, prev_drops;
	struct cs_window_port ports[CS_WINDOW_PORTS];
	size_t port_count;
	struct cs_window_thread threads[CS_WINDOW_THREADS];
	size_t thread_count;
	uint64_t threads_untracked;       /* threads beyond CS_WINDOW_THREADS at the last tick */
};

int cs_window_init(struct cs_window *window);
void cs_window_free(struct cs_window *window);

/* Forget everything: the engine's statistics were cleared. */
void cs_window_reset(struct cs_window *window);

/*
 * Close the second that ends at now_ns (after the previous tick; else
 * ignored). The first tick after init or reset only takes the baselines:
 * tick once when the engine starts (or is cleared), then every second.
 */
void cs_window_tick(struct cs_window *window, const struct cs_engine *engine, uint64_t now_ns);

/* The i-th second back (0: the latest), or NULL when there is none. */
const struct cs_window_second *cs_window_second(const struct cs_window *window, size_t back);

/* The filled seconds' latencies merged, and the time they span. */
void cs_window_latency(const struct cs_window *window, struct cs_hist *out, uint64_t *span_ns);

/*
 * The histogram of what was added between two cumulative histograms
 * (later >= earlier bucket by bucket; a bucket that went down counts 0).
 * min and max are its buckets' bounds, clamped to later's max.
 */
void cs_hist_delta(struct cs_hist *out, const struct cs_hist *later, const struct cs_hist *earlier);

#endif /* CS_WINDOW_H */
