/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The engine's statistics of a server thread (struct cs_thread_stats):
 * what it served, its waits for a CPU, its epoll path, and the roles its
 * behaviour gives it (roles.c).
 */
#ifndef CS_THREAD_STATS_H
#define CS_THREAD_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "connscope.h"
#include "request_stats.h"

/* One request a thread served: its first read (or handler's start) to its last send. */
struct cs_served_span {
	uint64_t from_ns;
	uint64_t to_ns;
};

/*
 * A thread's latest served spans: enough to cover the wait of the request
 * it takes next, which a busy pool thread spends serving the few before.
 */
#define CS_SERVED_RECENT 16

/* A server thread: what it served and how long it waited for a CPU. */
struct cs_thread_stats {
	uint32_t tid;
	uint32_t tgid;
	char comm[CS_COMM_LEN];
	char runtime_name[CS_RUNTIME_NAME_LEN]; /* its JVM's name for it; "": none known */
	uint64_t requests;         /* requests it read */
	uint64_t cause_ns[CS_CAUSE_COUNT]; /* of the requests it read */
	uint64_t runq_total_ns;    /* from its samples: all its run-queue waits */
	uint64_t runq_max_ns;      /* the longest wait since the attach, or their mean when the
	                              kernel's lifetime maximum is older (cs_runq_max_is_mean) */
	uint64_t runq_waits;
	uint32_t runq_per_request[CS_COARSE_BUCKETS]; /* each request's run-queue time (ns) */
	uint64_t cpu_ns;           /* from its samples: time on a CPU since attach */
	uint64_t cpu_sampled_ns;   /* when that was read; 0: never (a trace without it) */
	/* The epoll path (struct cs_ev_thread_polls, totals since attach). */
	uint64_t ready_polls;
	uint64_t reads_own;
	uint64_t reads_handed;
	uint64_t handed_out;
	uint64_t reads_blocking;
	uint64_t accepts;          /* connections it accepted, any listener */
	uint64_t serving_ns;       /* first read to last send of the requests it read */
	uint64_t first_read_ns;    /* the first of those requests' first read */
	uint64_t last_send_ns;     /* the last of their last sends */
	/* Of the requests it read whose handler's time on a CPU was measured
	 * (CS_REQ_HANDLER_CPU): their handler time, on a CPU or blocked off it, and each
	 * part weighted by the handler's length (ns^2: a hold of the thread delays those
	 * behind it by about its length). */
	uint64_t handlers_measured;
	uint64_t handler_cpu_ns;
	uint64_t handler_blocked_ns;
	double handler_cpu_weight;
	double handler_blocked_weight;
	uint64_t handed_requests;  /* requests it read that a poller handed it */
	uint64_t executed;         /* parked requests whose handler it ran for their reader */
	uint64_t parked_out;       /* requests it read and another thread's handler answered */
	struct cs_served_span served_recent[CS_SERVED_RECENT]; /* a ring, oldest overwritten */
	uint32_t served_next;      /* the ring's next slot */
};

/*
 * The time its requests spent in handlers, waits on upstreams included:
 * a thread blocked in a call to its backend is in its handler, busy for
 * the pool and the acceptor it is (upstream is carved out of handler
 * only to name what the handler waited for).
 */
static inline uint64_t cs_thread_in_handlers_ns(const struct cs_thread_stats *thread)
{
	return thread->cause_ns[CS_CAUSE_HANDLER] + thread->cause_ns[CS_CAUSE_UPSTREAM];
}

/* What a thread does, from its behaviour (roles.c); a thread may have several. */
enum cs_thread_role {
	CS_ROLE_ACCEPTOR = 1 << 0,   /* calls accept() */
	CS_ROLE_POLLER = 1 << 1,     /* polls; other threads read what it polled */
	CS_ROLE_EVENT_LOOP = 1 << 2, /* polls and serves the sockets it polled */
	CS_ROLE_WORKER = 1 << 3,     /* serves sockets another thread polled, reads blocking,
	                                or runs handlers of requests a loop read (an executor) */
	CS_ROLE_CARRIER = 1 << 4,    /* a JVM's virtual-thread carrier that served requests: its
	                                virtual threads' polls and reads are the carrier's */
};
#define CS_ROLE_COUNT 5
extern const char *const cs_role_names[CS_ROLE_COUNT]; /* by bit position */

/* The roles of a thread. */
unsigned cs_thread_roles(const struct cs_thread_stats *thread);
/*
 * A JVM's virtual-thread carrier: the JVM names the virtual-thread
 * scheduler's threads ForkJoinPool-N-worker-M (known at the end of a run),
 * and one that served requests ran virtual threads (a ForkJoinPool of the
 * server's own that reads sockets is taken for one too).
 */
bool cs_thread_is_carrier(const struct cs_thread_stats *thread);
/* "acceptor,poller" (at most 48 bytes), "" for none. */
void cs_format_roles(char *out, size_t len, unsigned roles);

/*
 * The thread's runq_max_ns is its waits' mean, not their maximum: the
 * kernel keeps one maximum per thread lifetime, and when it did not move
 * during the run the longest wait since the attach is not known (at
 * least the mean).
 */
static inline bool cs_runq_max_is_mean(const struct cs_thread_stats *t)
{
	return t->runq_waits && t->runq_max_ns == t->runq_total_ns / t->runq_waits;
}

#endif /* CS_THREAD_STATS_H */
