/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The flamegraph join: where tail requests' time went, as stacks.
 *
 * Pure code: plain arrays in, weighted paths out through a callback. Each
 * tail request's time is split by cause (the engine's split); the causes
 * that a thread spends doing something (event_loop and handler on the
 * reader thread, run_queue on the reader until the first send and on the
 * sender after it) are filled with that thread's on-CPU samples and
 * off-CPU intervals inside the phase's window:
 *
 *   an on-CPU sample in the window       weighs one sampling period
 *   an off-CPU interval, blocked part    its overlap with the window
 *   an off-CPU interval, runnable part   its overlap, but under run_queue
 *
 * A cause's weights always add up to the cause's time: when the samples
 * weigh more (sampling is statistical), they are scaled down; the time
 * nothing explains goes to a "not sampled" path.
 *
 * A pool's wait (worker_pool; accept_queue in an accept pool, whose
 * workers accept for themselves) is filled with the pool's threads
 * instead: the request waited because they were busy, so what they did
 * meanwhile is what held it. Only the threads that were serving a request
 * count, each instant of the wait shared equally among those serving
 * then: the parts add up to the waited time. The wait's instants when no
 * pool thread was seen serving keep the cause's bare path, and so do the
 * other causes (listen_overflow, send_drain, accept_queue outside an
 * accept pool): their time and no stack.
 */
#ifndef CS_FLAME_JOIN_H
#define CS_FLAME_JOIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* A tail request: its phases' windows and its split. */
struct cs_flame_request {
	struct cs_request_split split;
	uint64_t pickup_ns;      /* data ready (or the accept, for a queued first request) */
	uint64_t first_read_ns;
	uint64_t first_send_ns;
	uint64_t drain_end_ns;   /* last send, or the last byte leaving, whichever is later */
	/* The pools' waits (0, 0: none): worker_pool's, handed off -> read, or
	   read -> the handler a worker ran for the reader; accept_queue's,
	   established -> accepted. */
	uint64_t pool_from_ns, pool_to_ns;
	uint64_t accept_from_ns, accept_to_ns;
	uint32_t reader_tid;
	uint32_t sender_tid;
	uint32_t tgid;
	uint16_t port;
	uint16_t pad;
};

/* An on-CPU sample: stack is the caller's handle (an index into its table). */
struct cs_flame_sample {
	uint64_t ts_ns;
	uint32_t tid;
	uint32_t stack;
};

/* An off-CPU interval: blocked [off, wake), runnable [wake, on). */
struct cs_flame_off_cpu {
	uint64_t off_ns;
	uint64_t wake_ns;        /* 0: the wake-up was not seen: all blocked */
	uint64_t on_ns;
	uint32_t tid;
	uint32_t stack;
};

/* A thread serving a request: its first read to its last send, or a handler it ran for the reader. */
struct cs_flame_serving {
	uint64_t from_ns;
	uint64_t to_ns;
	uint32_t tid;
	uint32_t pad;
};

/*
 * A thread of a pool: worker_pool's are a process's (key: its tgid),
 * threads that read what a poller handed off or ran handlers for a loop,
 * or a JVM's carriers; accept_queue's are a listener's (key: its port),
 * threads that accept and serve what they accepted.
 */
struct cs_flame_pool_thread {
	enum cs_cause cause;     /* CS_CAUSE_WORKER_POOL or CS_CAUSE_ACCEPT_QUEUE */
	uint32_t key;
	uint32_t tid;
};

/* What the serving thread was doing during a cause's time. */
enum cs_flame_phase {
	CS_FLAME_NONE,        /* a cause with no thread behind it (accept_queue, ...) */
	CS_FLAME_ON_CPU,      /* running (on-CPU samples) */
	CS_FLAME_OFF_CPU,     /* blocked (off-CPU intervals, before the wake-up) */
	CS_FLAME_RUNNABLE,    /* waiting for a CPU (off-CPU intervals, after it) */
	CS_FLAME_UNSAMPLED,   /* no sample or interval fell there */
	CS_FLAME_STOPPED,     /* runtime_pause: the runtime had stopped every thread (a JVM's safepoint) */
	CS_FLAME_PHASE_COUNT,
};

extern const char *const cs_flame_phase_names[CS_FLAME_PHASE_COUNT];

#define CS_FLAME_NO_STACK UINT32_MAX

/* One weighted path: request's target and port, cause, phase, stack. */
struct cs_flame_path {
	uint32_t tgid;
	uint16_t port;
	enum cs_cause cause;
	enum cs_flame_phase phase;
	uint32_t stack;          /* CS_FLAME_NO_STACK: none */
	bool pool;               /* the pool's threads, busy while the request waited, not its own */
};

typedef void (*cs_flame_emit_fn)(void *ctx, const struct cs_flame_path *path, uint64_t weight_ns);

struct cs_flame_input {
	const struct cs_flame_request *requests;
	size_t request_count;
	struct cs_flame_sample *samples;     /* sorted in place by (tid, ts) */
	size_t sample_count;
	struct cs_flame_off_cpu *off_cpu;    /* sorted in place by (tid, off) */
	size_t off_cpu_count;
	struct cs_flame_serving *serving;    /* sorted in place by (tid, from) */
	size_t serving_count;
	struct cs_flame_pool_thread *pool_threads; /* sorted in place by (cause, key, tid) */
	size_t pool_thread_count;
	uint64_t sample_period_ns;           /* what one on-CPU sample weighs */
};

/* Totals of a join, for the summary line and the tests. */
struct cs_flame_stats {
	uint64_t requests;
	uint64_t total_ns;             /* all weights emitted: the requests' time */
	uint64_t sampled_ns;           /* of which on-CPU, off-CPU or runnable */
	uint64_t pool_sampled_ns;      /* of which the pool threads' stacks, in pools' waits */
	uint64_t samples_joined;       /* samples inside some tail window */
	uint64_t intervals_joined;     /* intervals overlapping some tail window */
};

/*
 * Emits every request's time as weighted paths. Sorts samples, off_cpu,
 * serving and pool_threads in place. Weights of one request add up to its split.total_ns exactly.
 * Returns 0, or -ENOMEM.
 */
int cs_flame_join(struct cs_flame_input *input, cs_flame_emit_fn emit, void *ctx,
		  struct cs_flame_stats *stats);

#endif /* CS_FLAME_JOIN_H */
