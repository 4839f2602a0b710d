/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Tracing windows: connscoped keeps its per-request probes attached for a
 * share of the time only (e.g. 1 s in every 10 s), so that staying on a
 * production server costs little. This is the bookkeeping: when a window
 * opens and closes, the time traced so far, and the estimate of a count
 * seen only inside windows over the whole run. Pure: the caller passes the
 * time, attaches and detaches.
 */
#ifndef CS_TRACE_WINDOWS_H
#define CS_TRACE_WINDOWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "run_meta.h"

/* A window of window_ns at the start of every period_ns; equal: always traced. */
struct cs_trace_schedule {
	uint64_t window_ns;
	uint64_t period_ns;
};

#define CS_TRACE_DEFAULT_WINDOW_NS 1000000000ull  /* 1 s ... */
#define CS_TRACE_DEFAULT_PERIOD_NS 10000000000ull /* ... in every 10 s */
#define CS_TRACE_MIN_WINDOW_NS 100000000ull       /* 0.1 s: the ring is polled every 20 ms */
#define CS_TRACE_MAX_PERIOD_NS 3600000000000ull   /* one hour */

/* The default schedule, and the one that traces all the time. */
struct cs_trace_schedule cs_trace_schedule_default(void);
struct cs_trace_schedule cs_trace_schedule_always(void);
bool cs_trace_schedule_is_always(const struct cs_trace_schedule *schedule);

/*
 * "always", or "WINDOW/PERIOD" in seconds ("1/10", "0.5/30"): a window of
 * at least 0.1 s, a period at most an hour and no shorter than the window.
 * Returns 0, or -1 with what was expected in errmsg.
 */
int cs_trace_schedule_parse(const char *text, struct cs_trace_schedule *schedule, char *errmsg, size_t errlen);

/* The schedule as the parser takes it: "always" or "1/10". */
void cs_trace_schedule_format(const struct cs_trace_schedule *schedule, char *out, size_t len);

/* What the caller must do to the per-request probes at a step. */
enum cs_trace_edge {
	CS_TRACE_KEEP = 0,  /* nothing */
	CS_TRACE_OPEN,      /* attach them: a window begins */
	CS_TRACE_CLOSE,     /* detach them: the window ended */
};

struct cs_trace_windows {
	struct cs_trace_schedule schedule;
	uint64_t start_ns;         /* the run's start: the first window opens there */
	uint64_t opened_ns;        /* the open window's start (tracing) */
	uint64_t next_open_ns;     /* the next window's start (not tracing) */
	uint64_t closed_traced_ns; /* the closed windows' total length */
	uint64_t windows;          /* windows opened */
	uint32_t number;           /* bumped at each edge: the BPF side's trace_window (odd: open) */
	bool tracing;              /* a window is open */
};

/* The run starts at now_ns with a window open (its probes attached). */
void cs_trace_windows_start(struct cs_trace_windows *tw, const struct cs_trace_schedule *schedule,
			    uint64_t now_ns);

/*
 * At now_ns: open or close a window when its edge has passed. A closed
 * window counts as traced up to now_ns (when the caller detaches); an
 * opening skips the periods that went by unseen (a stalled loop).
 */
enum cs_trace_edge cs_trace_windows_step(struct cs_trace_windows *tw, uint64_t now_ns);

/* A schedule change mid-run (a reload): the open window ends by the new one. */
void cs_trace_windows_reschedule(struct cs_trace_windows *tw, const struct cs_trace_schedule *schedule);

/* Time traced from the start to now_ns, the open window included. */
uint64_t cs_trace_windows_traced_ns(const struct cs_trace_windows *tw, uint64_t now_ns);

/*
 * A count seen only inside windows, over the whole span: scaled by
 * span / traced. The count itself when nothing was left out (or nothing
 * traced yet).
 */
double cs_trace_estimate(uint64_t traced_count, uint64_t traced_ns, uint64_t span_ns);

/*
 * The figures before the run starts (a scrape while the probes load): the
 * configured mode, no window yet, nothing traced. A reader sees the same
 * mode and keys from the daemon's first second as after its first window.
 */
void cs_trace_meta_configured(const struct cs_trace_schedule *schedule, struct cs_trace_meta *meta);

/* The figures a report gives (run_meta.h), as of now_ns. */
void cs_trace_windows_meta(const struct cs_trace_windows *tw, uint64_t now_ns, struct cs_trace_meta *meta);

/* meta's traced time at now_ns: the window open at its as_of_ns still counts. */
double cs_trace_meta_traced_s(const struct cs_trace_meta *meta, uint64_t now_ns);

/* A live meta (kept at each second and window edge) moved on to now_ns: its duration and time traced. */
void cs_trace_meta_advance(struct cs_report_meta *meta, uint64_t now_ns);

/*
 * A gap between windows (or its part so far) added to sum: what the
 * kernel's counters rose by from its start (from) to its end (to). A
 * counter that went down (its namespace made again) adds nothing.
 */
void cs_between_add(struct cs_between_counts *sum, const struct cs_tcp_counters *from,
		    const struct cs_tcp_counters *to, uint64_t gap_ns);

/* What a report says about the share traced. */
struct cs_traced_summary {
	bool sampled;               /* traced in windows */
	double traced_s;
	double share;               /* traced_s / the run's duration; 1: everything */
	uint64_t requests_traced;   /* answered requests seen whole: the latencies' count */
	double requests_estimated;  /* every request that ended in the run, estimated from the windows */
};

/*
 * requests_seen: requests that ended inside windows (seen whole, or begun
 * before a window's start: partial). Not sampled: exact, requests_traced.
 */
void cs_traced_summarize(const struct cs_trace_meta *meta, double duration_s, uint64_t requests_traced,
			uint64_t requests_seen, struct cs_traced_summary *summary);

#endif /* CS_TRACE_WINDOWS_H */
