// SPDX-License-Identifier: BSD-2-Clause
/*
 * Diagnosis of the accept path: turns a listener's statistics into findings
 * an operator can act on. Each threshold is named and explained here; the
 * numbers quoted in a finding are the evidence.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "attrib.h"
#include "report.h"

/* A queue full in at least 1 % of samples is worth a line even without drops. */
#define BACKLOG_FULL_SHARE_MIN 0.01
/* Accept-queue waits above 1 ms at p99 are visible in client tails. */
#define ACCEPT_WAIT_P99_MIN_NS 1000000ull
/* Below this many accepts, shares and percentiles say little. */
#define ACCEPTS_MIN 20
/* One thread taking this share of accepts is "the" accepting thread. */
#define SINGLE_ACCEPTOR_SHARE 0.9
/* The queue non-empty in this share of samples means the acceptor lags. */
#define QUEUE_BUSY_SHARE 0.5
/* An accept thread busy outside accept() this share of the time cannot keep up. */
#define ACCEPTOR_BUSY_SHARE 0.8
/* Unfair spread: the busiest worker takes at least this many times its fair share... */
#define UNFAIR_FACTOR 1.5
/* ...and at least this share in absolute terms. */
#define UNFAIR_SHARE_MIN 0.6
/* Thundering herd: wasted accept() calls per accepted connection. */
#define HERD_EAGAIN_PER_ACCEPT 0.25
#define HERD_EAGAIN_MIN 10

struct findings {
	struct cs_finding *items;
	size_t count, max;
};

__attribute__((format(printf, 4, 5)))
static struct cs_finding *add(struct findings *list, const char *code, uint16_t port,
			      const char *fmt, ...)
{
	if (list->count >= list->max)
		return NULL;
	struct cs_finding *finding = &list->items[list->count++];
	memset(finding, 0, sizeof(*finding));
	snprintf(finding->code, sizeof(finding->code), "%s", code);
	finding->port = port;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(finding->text, sizeof(finding->text), fmt, ap);
	va_end(ap);
	return finding;
}

__attribute__((format(printf, 2, 3)))
static void advise(struct cs_finding *finding, const char *fmt, ...)
{
	if (!finding)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(finding->advice, sizeof(finding->advice), fmt, ap);
	va_end(ap);
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

static void diagnose_backlog(const struct cs_listener_stats *l, const struct cs_report_meta *meta,
			     struct findings *list)
{
	uint64_t drops = cs_listener_drops(l);
	double full_share = share(l->backlog_full_samples, l->backlog_samples);
	if (drops == 0 && full_share < BACKLOG_FULL_SHARE_MIN)
		return;

	/* Evidence from local clients, where there were any. */
	char delayed[160] = "";
	if (l->handshakes_delayed_1s) {
		char max[32];
		cs_format_duration(max, sizeof(max), l->handshake_extra_ns->max);
		snprintf(delayed, sizeof(delayed),
			 "; %llu local connection(s) waited >= 1 s for SYN retransmits (max %s)",
			 (unsigned long long)l->handshakes_delayed_1s, max);
	}
	if (l->handshakes_failed) {
		size_t used = strlen(delayed);
		snprintf(delayed + used, sizeof(delayed) - used,
			 "; %llu local connection(s) never got in: their clients gave up while still retrying the SYN",
			 (unsigned long long)l->handshakes_failed);
	}
	struct cs_finding *f = add(list, "backlog_full", l->port,
		"backlog full %.0f%% of the time (limit %u) with %llu SYN(s) dropped%s",
		full_share * 100.0, l->backlog_limit, (unsigned long long)drops, delayed);
	advise(f, "raise the listen backlog (listen(fd, N), capped by net.core.somaxconn%s) and make "
		  "accepting faster: a full queue drops SYNs, which clients retry after 1 s, 2 s, 3 s",
	       meta->netstat.valid && meta->netstat.syncookies_sent ? "; SYN cookies were sent too" : "");
}

static void diagnose_acceptor(const struct cs_listener_stats *l, struct findings *list)
{
	uint64_t matched = l->accept_wait_ns->count;
	if (l->accepts < ACCEPTS_MIN || matched == 0)
		return;
	uint64_t p99_ns = cs_hist_percentile(l->accept_wait_ns, 99.0);
	if (p99_ns < ACCEPT_WAIT_P99_MIN_NS)
		return;

	char p50[32], p99[32];
	cs_format_duration(p50, sizeof(p50), cs_hist_percentile(l->accept_wait_ns, 50.0));
	cs_format_duration(p99, sizeof(p99), p99_ns);
	double busy = share(l->backlog_nonempty_samples, l->backlog_samples);
	double mean_left = (double)l->backlog_at_accept_sum / (double)l->accepts;
	const struct cs_worker_stats *busiest = cs_listener_busiest_worker(l);
	double busiest_share = busiest ? share(busiest->accepts, l->accepts) : 0.0;

	double acceptor_busy = busiest ? cs_worker_busy_share(busiest) : 0.0;
	if (busiest && busiest_share >= SINGLE_ACCEPTOR_SHARE && acceptor_busy >= ACCEPTOR_BUSY_SHARE &&
	    (busy >= QUEUE_BUSY_SHARE || mean_left >= 1.0)) {
		struct cs_finding *f = add(list, "accept_thread_bottleneck", l->port,
			"the accept thread is the bottleneck: %s (tid %u) took %.0f%% of %llu accepts, was busy "
			"outside accept() %.0f%% of the time, and left %.1f connections waiting per accept "
			"(queue non-empty in %.0f%% of samples); accept wait p50 %s, p99 %s",
			busiest->comm, busiest->tid, busiest_share * 100.0, (unsigned long long)l->accepts,
			acceptor_busy * 100.0, mean_left, busy * 100.0, p50, p99);
		advise(f, "accept in more threads (SO_REUSEPORT or EPOLLEXCLUSIVE listeners per worker), "
			  "or take the work off the accept thread (it should only accept and hand off)");
		return;
	}
	struct cs_finding *f = add(list, "accept_queue_wait", l->port,
		"connections wait in the accept queue: p50 %s, p99 %s (queue non-empty %.0f%% of the time)",
		p50, p99, busy * 100.0);
	advise(f, "the accepting threads are busy elsewhere: check event-loop blocking and CPU "
		  "saturation, or accept in more threads");
}

static void diagnose_fairness(const struct cs_listener_stats *l, struct findings *list)
{
	size_t threads = l->worker_count;   /* threads that called accept() */
	const struct cs_worker_stats *busiest = cs_listener_busiest_worker(l);
	if (threads < 2 || l->accepts < ACCEPTS_MIN || !busiest)
		return;
	double busiest_share = share(busiest->accepts, l->accepts);
	double fair = 1.0 / (double)threads;
	if (busiest_share < UNFAIR_FACTOR * fair || busiest_share < UNFAIR_SHARE_MIN)
		return;
	struct cs_finding *f = add(list, "unfair_accepts", l->port,
		"one worker took %.0f%% of accepts: %s (tid %u) took %llu of %llu across %zu threads "
		"(a fair share is %.0f%%)",
		busiest_share * 100.0, busiest->comm, busiest->tid,
		(unsigned long long)busiest->accepts, (unsigned long long)l->accepts, threads, fair * 100.0);
	advise(f, "epoll wakes the most recent waiter first (LIFO): use one SO_REUSEPORT listener "
		  "per worker to spread connections evenly");
}

static void diagnose_herd(const struct cs_listener_stats *l, struct findings *list)
{
	if (l->eagain < HERD_EAGAIN_MIN || (double)l->eagain < HERD_EAGAIN_PER_ACCEPT * (double)l->accepts)
		return;
	struct cs_finding *f = add(list, "thundering_herd", l->port,
		"%llu accept() calls found the queue empty (%.2f per accepted connection): "
		"workers were woken for connections another worker took",
		(unsigned long long)l->eagain, share(l->eagain, l->accepts ? l->accepts : 1));
	advise(f, "register the listener with EPOLLEXCLUSIVE, or give each worker its own "
		  "SO_REUSEPORT listener");
}

size_t cs_diagnose(const struct cs_engine *engine, const struct cs_report_meta *meta,
		   struct cs_finding *findings, size_t max)
{
	struct findings list = { .items = findings, .max = max };

	if (meta->events_lost) {
		struct cs_finding *f = add(&list, "events_lost", 0,
			"%llu event(s) could not be recorded (ring buffer full): figures are a lower bound",
			(unsigned long long)meta->events_lost);
		advise(f, "raise --ring-mb, or shorten the run");
	}
	for (size_t i = 0; i < engine->listener_count; i++)
		diagnose_backlog(&engine->listeners[i], meta, &list);
	/* Slow accepts are named only where the tail feels them. */
	bool accepts_matter = !cs_accept_path_negligible(engine, meta);
	for (size_t i = 0; accepts_matter && i < engine->listener_count; i++)
		diagnose_acceptor(&engine->listeners[i], &list);
	for (size_t i = 0; i < engine->listener_count; i++)
		diagnose_fairness(&engine->listeners[i], &list);
	for (size_t i = 0; i < engine->listener_count; i++)
		diagnose_herd(&engine->listeners[i], &list);
	if (meta->netstat.valid && meta->netstat.syncookies_sent) {
		struct cs_finding *f = add(&list, "syn_cookies", 0,
			"the kernel sent %llu SYN cookie(s): the SYN queue overflowed, and clients may "
			"believe they are connected while their data is dropped",
			(unsigned long long)meta->netstat.syncookies_sent);
		advise(f, "raise the listen backlog (it also sizes the SYN queue) and "
			  "net.ipv4.tcp_max_syn_backlog");
	}
	return list.count;
}
