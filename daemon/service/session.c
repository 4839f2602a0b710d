// SPDX-License-Identifier: BSD-2-Clause
/*
 * One run, in steps: find the targets, start the probes and tell them what
 * to watch, the loop (poll the ring, sample, follow the targets), then the
 * end (drain, last samples, the kernel's counters). The targets themselves
 * are session_resolve.c's.
 */
#include "session.h"
#include "errmsg.h"
#include "session_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jvm.h"
#include "netns.h"
#include "procfs.h"
#include "units.h"

#define POLL_INTERVAL_MS 20
#define ALIVE_CHECK_NS NS_PER_SEC
#define COST_SPAN_MIN_NS (ALIVE_CHECK_NS / 2) /* the shortest span a periodic cost reading closes */
/* Following: look for (new) target processes this often; faster while none runs. */
#define RESCAN_IDLE_NS NS_PER_SEC
#define RESCAN_BUSY_NS (10 * NS_PER_SEC)
/* Listener samples a second when the options give none. */
#define DEFAULT_SAMPLE_HZ 10

/* The loop's clock: when each periodic step is next due. */
struct loop_clock {
	uint64_t start_ns;
	uint64_t end_ns;                   /* 0: no duration, until stopped */
	uint64_t sample_every_ns, next_sample_ns;
	uint64_t next_alive_ns;
	uint64_t last_rescan_ns;
	size_t live_after_rescan;          /* targets running after the last rescan */
	bool targets_running;              /* some target ran at the last turn */
};

/* The kernel's TCP counters of the (first) target's network namespace, around the run. */
struct netstat_window {
	uint32_t netns_ino;
	struct cs_tcp_counters before;
	bool valid;
};

/*
 * The labels of the first target; looked at again when targets change.
 * The result keeps them: the result's meta and the live meta point there.
 */
static void update_labels(struct session *s, struct cs_report_meta *meta)
{
	struct cs_target_labels *labels = &s->result->labels;
	uint32_t netns_ino = s->port_count ? s->port_netns[0] : s->port_opts_netns;
	if (s->live_count)
		cs_target_labels_of(s->live[0], netns_ino, labels);
	else
		labels->netns_ino = netns_ino;
	meta->labels = labels;
}

static void live_remove(struct session *s, pid_t pid)
{
	for (size_t i = 0; i < s->live_count; i++)
		if (s->live[i] == pid) {
			s->live[i] = s->live[--s->live_count];
			return;
		}
}

/* Ring-buffer callback: decode, dispatch, nothing else. */
static int on_record(void *ctx, const void *record, size_t len)
{
	struct session *s = ctx;
	s->records++;
	cs_engine_feed(s->engine, record, len);
	if (s->opts.tee)
		s->opts.tee(s->opts.tee_ctx, record, len);
	const struct cs_event_header *hdr = record;
	if (len >= sizeof(struct cs_ev_proc) &&
	    (hdr->type == CS_EV_PROC_FORK || hdr->type == CS_EV_PROC_EXIT)) {
		const struct cs_ev_proc *proc = record;
		if (hdr->type == CS_EV_PROC_FORK)
			cs_session_live_add(s, (pid_t)proc->pid);
		else
			live_remove(s, (pid_t)proc->pid);
	}
	return 0;
}

/* Drop processes that died without us seeing their exit record. */
static void prune_dead(struct session *s)
{
	for (size_t i = 0; i < s->live_count;) {
		if (cs_proc_alive(s->live[i]))
			s->live[i] = s->live[--s->live_count];
		else
			i++;
	}
}

static void lock_engine(const struct session *s)
{
	if (s->opts.engine_lock)
		pthread_mutex_lock(s->opts.engine_lock);
}

static void unlock_engine(const struct session *s)
{
	if (s->opts.engine_lock)
		pthread_mutex_unlock(s->opts.engine_lock);
}

/*
 * The figures only the probes know, for a report or a scrape mid-run, the
 * probes live from start_ns to end_ns (now, or their detach: the work
 * after it, a JVM's thread names, is no part of the run).
 */
static void update_meta(struct session *s, uint64_t start_ns, uint64_t end_ns, struct cs_report_meta *meta)
{
	uint64_t counters[CS_CTR_MAX] = {};
	cs_probes_counters(&s->probes, counters);
	meta->duration_s = (double)(end_ns - start_ns) / NS_PER_SEC;
	meta->live_from_ns = start_ns;
	meta->live_to_ns = end_ns;
	meta->events_lost = counters[CS_CTR_LOST];
	meta->probe_runs_skipped = cs_probes_skipped_runs(&s->probes, NULL);
	/* A socket's storage not created is an in-kernel table insert that failed too. */
	meta->table_full = counters[CS_CTR_TABLE_FULL] + counters[CS_CTR_SOCKET_STORAGE];
	meta->records_read = s->records;
	cs_trace_windows_meta(&s->windows, end_ns, &meta->trace);
	meta->trace.requests_cut = counters[CS_CTR_WINDOW_CUT];
	cs_session_between_meta(s, end_ns, &meta->trace);
	update_labels(s, meta);
}

/* A record from user space after the loop: a JVM may take seconds to answer, unlocked. */
static int on_record_locked(void *ctx, const void *record, size_t len)
{
	struct session *s = ctx;
	lock_engine(s);
	int err = on_record(ctx, record, len);
	unlock_engine(s);
	return err;
}

/* 1. find the targets before loading anything; the kernel's counters before the run. */
static int find_targets(struct session *s, struct netstat_window *netstat)
{
	struct cs_session_result *result = s->result;
	memset(result, 0, sizeof(*result));
	result->meta.target = result->target;
	cs_run_stamp_now(&result->meta.stamp);
	if (s->opts.live_meta)
		s->opts.live_meta->stamp = result->meta.stamp;
	if (cs_probes_preflight(s->errmsg, s->errlen) || cs_session_resolve(s))
		return -1;
	/* Each network namespace has its own counters. */
	netstat->netns_ino = s->port_count ? s->port_netns[0] : s->port_opts_netns;
	netstat->valid = cs_netns_tcp_counters(netstat->netns_ino, &netstat->before) == 0;
	cs_session_between_start(s, netstat->netns_ino);
	update_labels(s, &result->meta);
	if (s->opts.live_meta) {
		lock_engine(s);
		s->opts.live_meta->labels = &result->labels;
		unlock_engine(s);
	}
	return 0;
}

/* 2. load and attach, then tell the probes what to watch. */
static int start_probes(struct session *s)
{
	const struct cs_session_options *opts = &s->opts;
	if (cs_probes_start(&s->probes, &opts->probe, on_record, s, s->errmsg, s->errlen))
		return -1;
	for (size_t i = 0; i < s->live_count; i++)
		if (cs_probes_add_tgid(&s->probes, (uint32_t)s->live[i]))
			return cs_fail(s->errmsg, s->errlen, "cannot add pid %d to the target map", (int)s->live[i]);
	for (size_t i = 0; i < s->live_count; i++)
		cs_watch_pauses(&s->probes, s->live[i], opts->quiet, opts->probe.verbose);
	for (size_t i = 0; i < s->port_count; i++)
		if (cs_probes_add_endpoint(&s->probes, s->port_netns[i], s->ports[i]))
			return cs_fail(s->errmsg, s->errlen, "cannot add port %u to the target map", s->ports[i]);
	if (opts->on_attached && opts->on_attached(opts->on_attached_ctx, &s->probes, s->errmsg, s->errlen))
		return -1;
	return 0;
}

/* Is a tracing window open, in a run traced in windows (the cost sampler's stratum)? */
static bool in_cost_window(const struct session *s)
{
	return s->windows.tracing && !cs_trace_schedule_is_always(&s->windows.schedule);
}

/* 3. a first walk of the listeners and the threads sets their baselines; the run starts there. */
static int first_walk(struct session *s, uint64_t *start_ns)
{
	const struct cs_session_options *opts = &s->opts;
	*start_ns = cs_monotonic_ns();
	cs_trace_windows_start(&s->windows, &opts->trace, *start_ns);
	cs_probes_cost_begin(&s->probes, *start_ns, in_cost_window(s));
	int err = cs_probes_walk_listeners(&s->probes, *start_ns);
	if (err)
		return cs_fail(s->errmsg, s->errlen, "cannot walk TCP sockets (iter/tcp): %s", strerror(-err));
	/*
	 * The threads' run-queue baselines too: a thread's waits count from
	 * the walk that first sees it, and the next is a second away, when a
	 * load started with the run has waited through its first second.
	 */
	cs_probes_sample_threads(&s->probes, *start_ns);
	if (opts->live_meta) { /* the first window is open now: readers see it from here on */
		lock_engine(s);
		update_meta(s, *start_ns, cs_monotonic_ns(), opts->live_meta);
		unlock_engine(s);
	}
	if (opts->attached && opts->attached(opts->hooks_ctx, s->errmsg, s->errlen))
		return -1;
	if (!opts->quiet)
		fprintf(stderr, "connscope: attached to %s; %s\n", s->result->target,
			opts->duration_s > 0 ? "collecting" : "collecting until Ctrl-C");
	return 0;
}

static uint64_t sample_interval_ns(unsigned int sample_hz)
{
	return NS_PER_SEC / (sample_hz ? sample_hz : DEFAULT_SAMPLE_HZ);
}

static struct loop_clock loop_clock_start(const struct session *s, uint64_t start_ns)
{
	uint64_t sample_every_ns = sample_interval_ns(s->opts.sample_hz);
	return (struct loop_clock){
		.start_ns = start_ns,
		.end_ns = s->opts.duration_s > 0 ? start_ns + (uint64_t)(s->opts.duration_s * NS_PER_SEC) : 0,
		.sample_every_ns = sample_every_ns,
		.next_sample_ns = start_ns + sample_every_ns,
		.next_alive_ns = start_ns + ALIVE_CHECK_NS,
		.last_rescan_ns = start_ns,
		.live_after_rescan = s->live_count,
		.targets_running = s->live_count > 0,
	};
}

/* The listeners' queues at sample_hz. */
static void sample_when_due(struct session *s, struct loop_clock *clock, uint64_t now)
{
	if (now < clock->next_sample_ns)
		return;
	lock_engine(s);
	cs_probes_sample_listeners(&s->probes, now);
	unlock_engine(s);
	clock->next_sample_ns += clock->sample_every_ns;
	if (clock->next_sample_ns < now) /* we fell behind: do not burst */
		clock->next_sample_ns = now + clock->sample_every_ns;
}

/* Tracing windows: the per-request probes attached at a window's start, detached at its end. */
static int trace_window_when_due(struct session *s, uint64_t now)
{
	enum cs_trace_edge edge = cs_trace_windows_step(&s->windows, now);
	if (edge == CS_TRACE_KEEP)
		return 0;
	/* A cost reading at each edge: a span is then all window or all gap, measured apart. */
	if (edge == CS_TRACE_OPEN) {
		lock_engine(s);
		cs_probes_sample_cost(&s->probes, now, true);
		unlock_engine(s);
		if (cs_probes_open_window(&s->probes, s->windows.number, cs_session_between_gap_ends, s, s->errmsg,
					  s->errlen))
			return -1;
	}
	if (edge == CS_TRACE_CLOSE) {
		cs_probes_close_window(&s->probes, s->windows.number, cs_session_between_gap_begins, s);
		lock_engine(s);
		cs_probes_sample_cost(&s->probes, now, false);
		/* Nothing of a connection is seen until the next window: its close neither. */
		if (s->between.on && cs_probes_poll(&s->probes, 0) >= 0)
			cs_engine_forget_connections(s->engine, now);
		unlock_engine(s);
	}
	if (s->opts.live_meta) {
		/* Live readers add the open window's time themselves: exact at each edge. */
		lock_engine(s);
		cs_trace_windows_meta(&s->windows, now, &s->opts.live_meta->trace);
		s->opts.live_meta->duration_s = (double)(now - s->windows.start_ns) / NS_PER_SEC;
		unlock_engine(s);
	}
	return 0;
}

/*
 * Once a second: the threads' run queues, what connscope cost, the live
 * meta, targets that died unseen.
 */
static void check_alive_when_due(struct session *s, struct loop_clock *clock, uint64_t now)
{
	if (now < clock->next_alive_ns)
		return;
	lock_engine(s);
	cs_probes_sample_threads(&s->probes, now);
	/* Not a sliver of a span just after a window's edge read it: a held sliver would waste its sample. */
	if (now >= s->probes.cost.last_ns + COST_SPAN_MIN_NS)
		cs_probes_sample_cost(&s->probes, now, in_cost_window(s));
	if (s->opts.live_meta)
		update_meta(s, clock->start_ns, cs_monotonic_ns(), s->opts.live_meta);
	unlock_engine(s);
	prune_dead(s);
	clock->next_alive_ns = now + ALIVE_CHECK_NS;
}

/* Following: a reload when asked (SIGHUP), then forget gone namespaces and look for new targets. */
static void rescan_when_due(struct session *s, struct loop_clock *clock, uint64_t now)
{
	const struct cs_session_options *opts = &s->opts;
	/* Look again soon while no target runs or since one exited (a restart), rarely otherwise. */
	uint64_t rescan_every_ns = s->live_count && s->live_count >= clock->live_after_rescan ? RESCAN_BUSY_NS
											   : RESCAN_IDLE_NS;
	bool asked = opts->rescan && *opts->rescan;
	if (!opts->follow || (now - clock->last_rescan_ns < rescan_every_ns && !asked))
		return;
	if (asked)
		*opts->rescan = 0;
	if (asked && opts->reload) {
		cs_session_reload(s);
		clock->sample_every_ns = sample_interval_ns(opts->sample_hz);
	}
	struct cs_watch watch = cs_session_watch(s, &s->probes);
	size_t gone = cs_watch_prune_namespaces(&watch, s->port_opts_netns);
	if (gone && !opts->quiet)
		fprintf(stderr, "connscope: forgot %zu port(s) of network namespaces no target "
			"lives in any more\n", gone);
	if (cs_session_rescan(s) && opts->live_meta) {
		/* A new target: its labels now, not at the next second. */
		lock_engine(s);
		update_labels(s, opts->live_meta);
		unlock_engine(s);
	}
	clock->live_after_rescan = s->live_count;
	clock->last_rescan_ns = now;
}

/* Whether the loop ends now: the targets gone (unless following), a signal, the duration. */
static bool loop_done(struct session *s, struct loop_clock *clock, uint64_t now)
{
	const struct cs_session_options *opts = &s->opts;
	/* Following: say once each time the last target goes, and keep going. */
	if (opts->follow && s->live_count == 0 && clock->targets_running && !opts->quiet) {
		fprintf(stderr, "connscope: no target process is running any more; keeping what was seen "
			"(%llu records) and watching for a process to listen on the target port(s) again\n",
			(unsigned long long)s->records);
	}
	clock->targets_running = s->live_count > 0;
	if (s->live_count == 0 && !opts->follow) {
		s->result->target_exited = true;
		if (!opts->quiet)
			fprintf(stderr, "connscope: the target exited; reporting what was seen\n");
		return true;
	}
	return (opts->stop && *opts->stop) || (clock->end_ns && now >= clock->end_ns);
}

/* 4. the loop: poll the ring, sample listeners at sample_hz, watch targets. */
static int collect(struct session *s, uint64_t start_ns)
{
	struct loop_clock clock = loop_clock_start(s, start_ns);
	for (;;) {
		/* The wait without the engine's lock: the metrics and control threads render meanwhile. */
		int err = cs_probes_wait(&s->probes, POLL_INTERVAL_MS);
		if (err >= 0) {
			lock_engine(s);
			err = cs_probes_poll(&s->probes, 0);
			unlock_engine(s);
		}
		if (err < 0 && err != -EINTR)
			return cs_fail(s->errmsg, s->errlen, "reading the ring buffer failed: %s", strerror(-err));
		uint64_t now = cs_monotonic_ns();
		if (trace_window_when_due(s, now))
			return -1;
		sample_when_due(s, &clock, now);
		check_alive_when_due(s, &clock, now);
		rescan_when_due(s, &clock, now);
		if (loop_done(s, &clock, now))
			return 0;
	}
}

/*
 * 5. detach the probes and read all they emitted (what the last poll
 * left, and what came before the detach); one last listener and thread
 * sample; kernel counters
 */
static int finish(struct session *s, uint64_t start_ns, const struct netstat_window *netstat)
{
	struct cs_session_result *result = s->result;
	uint64_t detached_ns = cs_monotonic_ns();
	lock_engine(s);
	int err = cs_probes_detach_and_drain(&s->probes);
	unlock_engine(s);
	if (err < 0)
		return cs_fail(s->errmsg, s->errlen, "reading the ring buffer failed: %s", strerror(-err));
	if (!result->target_exited)
		cs_probes_sample_listeners(&s->probes, cs_monotonic_ns());
	cs_probes_sample_threads(&s->probes, cs_monotonic_ns());
	lock_engine(s);
	cs_probes_sample_cost(&s->probes, cs_monotonic_ns(), false);
	unlock_engine(s);
	/* What only a JVM knows, once the run is over: its threads' names. */
	if (!s->opts.no_jvm)
		cs_jvm_collect(s->live, s->live_count, s->opts.quiet, on_record_locked, s, cs_monotonic_ns());
	lock_engine(s); /* the labels are the live meta's too */
	update_meta(s, start_ns, detached_ns, &result->meta);
	unlock_engine(s);
	struct cs_tcp_counters after = {};
	if (netstat->valid && cs_netns_tcp_counters(netstat->netns_ino, &after) == 0) {
		result->meta.netstat.valid = true;
		result->meta.netstat.listen_overflows = after.listen_overflows - netstat->before.listen_overflows;
		result->meta.netstat.listen_drops = after.listen_drops - netstat->before.listen_drops;
		result->meta.netstat.syncookies_sent = after.syncookies_sent - netstat->before.syncookies_sent;
	}
	return 0;
}

/* --verbose: what the probes counted about themselves. */
static void report_probe_counts(struct session *s)
{
	struct cs_probes *probes = &s->probes;
	uint64_t counters[CS_CTR_MAX] = {};
	cs_probes_counters(probes, counters);
	uint64_t skipped = cs_probes_skipped_runs(probes, stderr);
	fprintf(stderr, "connscope: %" PRIu64 " socket walks, %" PRIu64 " listener samples skipped, "
		"%" PRIu64 " threads untracked, per-packet probe attached %" PRIu64 " time(s)%s, "
		"%" PRIu64 " records read at the end, %" PRIu64 " probe runs skipped by the kernel, "
		"%" PRIu64 " closes seen late, wake-up probe %s, %" PRIu64 " tracing window(s), %" PRIu64
		" request(s) cut by a window's end, %" PRIu64 " local handshake(s) followed, %" PRIu64
		" upstream connection(s) followed, %" PRIu64 " upstream exchange(s) cut by a window's end\n",
		probes->listener_walks, probes->listener_samples_skipped, probes->threads_untracked,
		probes->xmit_attaches, probes->xmit_failed ? " (attaching it failed)" : "",
		probes->records_after_detach, skipped, counters[CS_CTR_CLOSE_LATE],
		probes->waking_failed ? "failed to attach" : probes->waking_attached ? "attached" : "not needed",
		s->windows.windows, counters[CS_CTR_WINDOW_CUT], counters[CS_CTR_HANDSHAKES_FOLLOWED],
		counters[CS_CTR_UPSTREAMS_FOLLOWED], counters[CS_CTR_UPSTREAM_CUT]);
}

/* Steps 2 to 5, once the targets are known; the probes are stopped after. */
static int run_probes(struct session *s, const struct netstat_window *netstat)
{
	uint64_t start_ns = 0;
	int ret = -1;
	if (!start_probes(s) && !first_walk(s, &start_ns) && !collect(s, start_ns) &&
	    !finish(s, start_ns, netstat))
		ret = 0;
	if (s->opts.probe.verbose)
		report_probe_counts(s);
	cs_probes_stop(&s->probes);
	return ret;
}

int cs_session_run(const struct cs_session_options *opts, struct cs_engine *engine,
		   struct cs_session_result *result, char *errmsg, size_t errlen)
{
	/* On the heap: the options (twice, for a reload) and the lookups' room are large. */
	struct session *s = calloc(1, sizeof(*s));
	if (!s)
		return cs_fail(errmsg, errlen, "out of memory");
	s->opts = *opts;
	s->engine = engine;
	s->result = result;
	s->errmsg = errmsg;
	s->errlen = errlen;
	s->between.counter_fds[0] = s->between.counter_fds[1] = -1; /* none open until its start */
	struct netstat_window netstat = {};
	int ret = find_targets(s, &netstat) ? -1 : run_probes(s, &netstat);
	cs_session_between_end(s);
	free(s);
	return ret;
}
