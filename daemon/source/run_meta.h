/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the engine cannot know: the run around it (its target, duration,
 * lost records, kernel counters, when and where it ran). The session and
 * the trace file fill it in; the analysis and the renderers read it.
 */
#ifndef CS_RUN_META_H
#define CS_RUN_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "run_stamp.h"

/* Kernel-wide TCP counters (TcpExt of /proc/PID/net/netstat) over the run. */
struct cs_netstat_delta {
	bool valid;
	uint64_t listen_overflows;
	uint64_t listen_drops;
	uint64_t syncookies_sent;
};

/* The kernel's TCP counters of one network namespace at one moment. */
struct cs_tcp_counters {
	uint64_t listen_overflows; /* TcpExt ListenOverflows: accept queue full at a handshake's end */
	uint64_t listen_drops;     /* TcpExt ListenDrops: those, and other drops at a listener */
	uint64_t syncookies_sent;  /* TcpExt SyncookiesSent */
	uint64_t passive_opens;    /* Tcp PassiveOpens: connections a listener's handshake made */
	uint64_t estab_resets;     /* Tcp EstabResets: established connections reset */
	uint64_t out_rsts;         /* Tcp OutRsts: resets sent */
};

/*
 * Between tracing windows, connscoped --between-windows counters runs no
 * probe for each connection: what the kernel counted in the first
 * target's network namespace (every port and process in it) while no
 * window was open, over every gap between two windows.
 */
struct cs_between_counts {
	bool valid;                    /* every gap's counters were read */
	uint32_t netns_ino;
	uint64_t gaps;                 /* gaps counted, one under way included */
	double gap_s;                  /* their length */
	struct cs_tcp_counters added;  /* what the counters rose by in them */
};

/* Where the target runs: its network namespace and cgroup (the first target's). */
struct cs_target_labels {
	uint32_t netns_ino;        /* the namespace's inode, as /proc/PID/ns/net shows it */
	char cgroup[512];          /* its cgroup v2 path; "" not known */
	char container[80];        /* "docker:ID", "systemd:x.service" (container.h); "" none */
};

/*
 * What the per-request probes saw of the run (connscoped traces in windows,
 * trace_windows.h). Exact always: accepts, drops, resets, closes, listener
 * samples. Per-request figures come from the traced time only.
 */
struct cs_trace_meta {
	bool sampled;              /* traced in windows; false: all the time */
	bool tracing;              /* a window was open at as_of_ns */
	uint64_t as_of_ns;         /* CLOCK_MONOTONIC of traced_s: a live reader adds the open window since */
	double window_s;           /* each window's length ... */
	double period_s;           /* ... at the start of every period */
	double traced_s;           /* time traced (<= the duration) */
	uint64_t windows;          /* windows opened */
	uint64_t requests_cut;     /* requests in progress at a window's close: dropped */
	bool counters_between;     /* --between-windows counters: nothing counted per
	                              connection between windows, the kernel's counts instead */
	struct cs_between_counts between;
};

struct cs_report_meta {
	const char *target;        /* e.g. "pid 1234 (csserver)" or "port 8080" */
	double duration_s;
	uint64_t events_lost;      /* ring-buffer records that could not be reserved */
	uint64_t table_full;       /* in-kernel table inserts that failed */
	uint64_t probe_runs_skipped; /* probe runs the kernel skipped (recursion): each may be an event lost */
	uint64_t records_read;     /* records taken off the ring buffer */
	double tail_percentile;    /* the tail: requests at or above it (0: 99) */
	size_t slowest;            /* list this many slowest requests (0: none) */
	double window_from_s;      /* a part of a recording (report --from/--to), from its */
	double window_to_s;        /* first record; to 0: the whole run */
	struct cs_netstat_delta netstat;
	struct cs_run_stamp stamp;  /* when and where the run started */
	uint64_t live_from_ns;      /* CLOCK_MONOTONIC: the probes live (the first walk after the */
	uint64_t live_to_ns;        /* attach) to the report; 0: not known (a trace file) */
	const struct cs_target_labels *labels; /* NULL: not known (a trace file) */
	struct cs_trace_meta trace; /* zero: traced all the time */
};

#endif /* CS_RUN_META_H */
