/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The BPF side's lifecycle: check the kernel and our privileges, open,
 * configure, load, attach, then feed targets and read what comes back.
 * Every failure leaves a one-line explanation of what is wrong and what to
 * do in the caller's buffer; libbpf's own log is kept for --verbose.
 */
#ifndef CS_PROBES_H
#define CS_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "connscope.h"
#include "stats_holder.h"
#include "u64map.h"

struct connscope_bpf;
struct ring_buffer;
struct bpf_link;
struct cs_listen_socket;
struct cs_pause_probes;

/* Listener queue samples per second (--sample-hz, the config's sample-hz). */
#define CS_SAMPLE_HZ_DEFAULT 10

struct cs_probe_options {
	uint32_t ring_bytes;         /* ring buffer size, a power of two */
	uint32_t wakeup_bytes;       /* wake the consumer past this much queued data */
	bool trace_handshakes;       /* follow local clients' SYN retransmits */
	bool follow_clients;         /* follow local clients' reads of their answers */
	bool no_pauses;              /* never attach the JVM pause probes (--no-pauses) */
	bool no_bpf_stats;           /* do not turn the kernel's BPF run-time counting on */
	bool bpf_stats_always;       /* hold it on the whole run, not in sampled seconds */
	bool verbose;                /* echo libbpf's log to stderr */
	bool between_counters;       /* between tracing windows, every probe of connections and
	                                packets detached too (connscoped --between-windows counters) */
};

/* Called with each record taken off the ring buffer. */
typedef int (*cs_record_fn)(void *ctx, const void *record, size_t len);

/* Programs of the probes' object whose run time is read; more are not. */
#define CS_COST_PROGS_MAX 64

/*
 * What connscope costs (probes_cost.c): the kernel's BPF run-time
 * counting, turned on for the run, and the readings before the next one,
 * so that each record says what grew since.
 */
struct cs_cost_sampler {
	struct cs_stats_holder holder; /* holds the counting on (--bpf-stats always, or sampling) */
	bool sampling;                 /* held in sampled spans only (CS_BPF_STATS_SAMPLED_*) */
	bool in_window;                /* the span since the last reading is a tracing window's */
	uint64_t plain_spans;          /* spans begun outside windows: the schedule's clock */
	uint32_t bpf_stats;            /* enum cs_bpf_stats */
	int32_t error;                 /* CS_BPF_STATS_FAILED: the errno */
	uint64_t last_ns;              /* the last reading (0: not begun) */
	uint64_t user_ns, system_ns;   /* this process's CPU time then */
	struct {
		uint32_t prog_id;
		uint64_t run_ns, runs;
	} progs[CS_COST_PROGS_MAX];    /* each program's counters then, in the object's order */
};

struct cs_probes {
	struct connscope_bpf *skel;
	struct ring_buffer *ring;
	struct bpf_link *iter_link;          /* iter/tcp: names new listeners */
	struct bpf_link *thread_iter_link;   /* iter/task: target threads' run-queue counters */
	struct bpf_link *xmit_link;          /* on_xmit, attached only while answers drain */
	uint64_t xmit_wanted_ns;             /* last poll that found an answer draining */
	uint64_t xmit_attaches;              /* times it was attached */
	bool xmit_failed;                    /* attaching it failed: not tried again */
	struct bpf_link *waking_link;        /* on_waking, attached once a request was parked */
	bool waking_attached;                /* it was attached during the run */
	bool waking_at_start;                /* bench only: attach it without a parked request */
	bool windows_only;                   /* every event probe detached between windows (between_counters) */
	bool no_pauses;                      /* --no-pauses: JVM targets' pauses not followed */
	bool waking_failed;                  /* attaching it failed: not tried again */
	bool detached;                       /* event probes gone: the run is ending */
	bool window_closed;                  /* between tracing windows: the request probes are detached */
	uint64_t records_after_detach;       /* read by the last drain */
	struct cs_u64map thread_baselines;   /* tid -> struct thread_baseline */
	uint64_t threads_untracked;          /* threads beyond the baseline table */
	uint64_t attach_ns;                  /* CLOCK_MONOTONIC at start */
	struct cs_u64map listener_sks;       /* socket inode -> struct listener_identity (iter walk) */
	uint64_t port_bits[CS_PORT_WORDS];   /* target ports, as the BPF side has them */
	uint64_t endpoints[CS_ENDPOINTS_MAX]; /* cs_endpoint_key()s, as the BPF side has them */
	size_t endpoint_count;
	uint64_t last_walk_ns;               /* last iter/tcp walk */
	uint64_t listener_walks;             /* iter/tcp walks made */
	uint64_t listener_samples_skipped;   /* listeners sock_diag saw and no walk named yet */
	/* Room for the samples' reads (probes_samples.c), made at the start: */
	char *iter_buf;                      /* an iterator's records */
	struct cs_listen_socket *listeners;  /* sock_diag's listeners, CS_MAX_LISTENERS */
	struct cs_cost_sampler cost;
	struct cs_pause_probes *pauses;      /* JVM targets' safepoints (probes_pauses.c); NULL: none */
	cs_record_fn on_record;
	void *ctx;
};

#define CS_ERRMSG_LEN 512

/* Are we privileged enough, does the kernel have what we need? */
int cs_probes_preflight(char *errmsg, size_t errlen);

/* Checks privileges and kernel features, loads and attaches everything. */
int cs_probes_start(struct cs_probes *probes, const struct cs_probe_options *opts,
		    cs_record_fn on_record, void *ctx, char *errmsg, size_t errlen);

int cs_probes_add_tgid(struct cs_probes *probes, uint32_t tgid);
int cs_probes_add_port(struct cs_probes *probes, uint16_t port);
/* Stop watching (a reload dropped the target); -ENOENT if it was not watched. */
int cs_probes_remove_tgid(struct cs_probes *probes, uint32_t tgid);
int cs_probes_remove_port(struct cs_probes *probes, uint16_t port);

/*
 * A target endpoint: port in the network namespace numbered netns_ino
 * (kept by netns.c, so its listeners can be sampled). The probes take an
 * event only when both match.
 */
int cs_probes_add_endpoint(struct cs_probes *probes, uint32_t netns_ino, uint16_t port);
/* -ENOENT if it was not watched. */
int cs_probes_remove_endpoint(struct cs_probes *probes, uint32_t netns_ino, uint16_t port);

/* Wait up to timeout_ms for records, then take all that are queued. */
int cs_probes_poll(struct cs_probes *probes, int timeout_ms);

/*
 * Only wait, up to timeout_ms, until the ring has records (or a wake-up):
 * 1 when it has, 0 when the time ran out, or -errno. Touches neither the
 * probes nor the engine, so a caller waits here without the engine's lock
 * and then takes the records with cs_probes_poll(probes, 0) under it.
 */
int cs_probes_wait(struct cs_probes *probes, int timeout_ms);

/*
 * Walk every TCP socket once (iter/tcp); each target listener becomes a
 * record, and its inode is tied to its identity for the samples below.
 */
int cs_probes_walk_listeners(struct cs_probes *probes, uint64_t now_ns);

/*
 * Sample the target listeners' queues through sock_diag (the listening
 * hash only); each becomes a record stamped now_ns. Walks first when a
 * listener is new.
 */
int cs_probes_sample_listeners(struct cs_probes *probes, uint64_t now_ns);

/*
 * Read every target thread's run-queue totals; each becomes a
 * CS_EV_THREAD_SAMPLE record stamped now_ns.
 */
int cs_probes_sample_threads(struct cs_probes *probes, uint64_t now_ns);

/*
 * Probe runs the kernel skipped: a program is not re-entered on a CPU
 * where it is already running (an interrupt's softirq hitting the same
 * hook), and that run's event is gone. Summed over every program
 * (bpf_prog_info.recursion_misses), since the load. by_probe: if not
 * NULL, a line there for each probe that skipped some.
 */
uint64_t cs_probes_skipped_runs(struct cs_probes *probes, FILE *by_probe);

/*
 * Start saying what connscope costs: this process's CPU time is counted
 * from now_ns. Call once the probes are attached; in_window: a tracing
 * window opens there (tracing in windows), not when every request is traced.
 */
void cs_probes_cost_begin(struct cs_probes *probes, uint64_t now_ns, bool in_window);

/*
 * Read every program's run time and this process's CPU time; what grew
 * since the last reading becomes CS_EV_PROG_COST records (programs that
 * ran) and one CS_EV_SELF_COST, stamped now_ns. Once a second, and at
 * each tracing window's edge: it costs a system call a program.
 * next_in_window: the span from now on is a tracing window's. Sampling,
 * the counting is held over every window (where the request probes run)
 * and over one in CS_BPF_STATS_SAMPLE_EVERY of the other spans.
 */
void cs_probes_sample_cost(struct cs_probes *probes, uint64_t now_ns, bool next_in_window);

/* Sum the per-CPU counters (enum cs_counter). */
int cs_probes_counters(struct cs_probes *probes, uint64_t counters[CS_CTR_MAX]);

/*
 * The end of a run: detach every event probe, then read the ring until it
 * stays empty, so that every record the probes emitted before the detach
 * is read (in-flight programs finish their records after it). The
 * iterators stay usable for a last sample. Returns the records read here.
 */
int cs_probes_detach_and_drain(struct cs_probes *probes);

/*
 * Tracing windows (trace_windows.h): the per-request probes (socket reads
 * and sends, data ready, epoll exits, and with them the per-packet and
 * wake-up probes) are detached between windows; the connection lifecycle
 * probes (accepts, state changes, resets, drops, processes) stay. number
 * is the window's (the BPF side's trace_window, odd while open), bumped
 * at each edge, set after the attaches and before the detaches: request
 * state left from another number is dropped, and none is emitted while
 * the number is even. Opening returns 0,
 * or -1 with the hook that failed in errmsg.
 * When every probe of connections goes between windows (between_counters),
 * those that count connections (accepts, state changes, resets, drops)
 * count only while the number is odd; at_edge(ctx) runs right after it
 * went even at a close, right before it goes odd at an open, so that what
 * the kernel counts from the one to the other is the gap's alone.
 */
typedef void (*cs_window_edge_fn)(void *ctx);
int cs_probes_open_window(struct cs_probes *probes, uint32_t number, cs_window_edge_fn at_edge, void *ctx,
			  char *errmsg, size_t errlen);
void cs_probes_close_window(struct cs_probes *probes, uint32_t number, cs_window_edge_fn at_edge, void *ctx);

/* Detach and free everything; safe on a partly started or zeroed struct. */
void cs_probes_stop(struct cs_probes *probes);

#endif /* CS_PROBES_H */
