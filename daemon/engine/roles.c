// SPDX-License-Identifier: BSD-2-Clause
/*
 * Thread roles, from what each thread did (never from its name): who
 * accepts, who polls, who reads what another thread polled. The epoll
 * path's totals arrive per thread (struct cs_ev_thread_polls); accepts and
 * reads come from the accept and request records.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "engine_internal.h"
#include "tables.h"

const char *const cs_role_names[CS_ROLE_COUNT] = { "acceptor", "poller", "event_loop", "worker", "carrier" };

/*
 * A role a thread takes now and then is noise (an event loop that once
 * read a socket after another loop's poll): it needs this share of the
 * thread's reads, or of its ready polls for a poller.
 */
#define ROLE_SHARE_MIN 0.1

static bool at_least_share(uint64_t part, uint64_t whole)
{
	return part && (double)part >= ROLE_SHARE_MIN * (double)whole;
}

bool cs_thread_is_carrier(const struct cs_thread_stats *t)
{
	unsigned pool, worker;
	char rest;
	return (t->requests || t->ready_polls) &&
	       sscanf(t->runtime_name, "ForkJoinPool-%u-worker-%u%c", &pool, &worker, &rest) == 2;
}

unsigned cs_thread_roles(const struct cs_thread_stats *t)
{
	unsigned roles = 0;
	uint64_t reads = t->reads_own + t->reads_handed + t->reads_blocking;
	if (t->accepts)
		roles |= CS_ROLE_ACCEPTOR;
	/* A carrier polls and reads for its virtual threads: no loop, no pool worker of its own. */
	if (cs_thread_is_carrier(t))
		return roles | CS_ROLE_CARRIER;
	if (t->ready_polls && at_least_share(t->handed_out, t->ready_polls))
		roles |= CS_ROLE_POLLER;
	if (t->ready_polls && at_least_share(t->reads_own, reads))
		roles |= CS_ROLE_EVENT_LOOP;
	/*
	 * Reads of sockets another thread polled, or blocking reads (no thread
	 * of the process polls), or handlers run for the loop that read the
	 * request (an executor, which never touches the socket). Traces
	 * without the epoll path have none of these.
	 */
	if (at_least_share(t->reads_handed, reads) || at_least_share(t->reads_blocking, reads) ||
	    at_least_share(t->executed, reads + t->executed))
		roles |= CS_ROLE_WORKER;
	return roles;
}

void cs_format_roles(char *out, size_t len, unsigned roles)
{
	size_t used = 0;
	if (len)
		out[0] = '\0';
	for (int i = 0; i < CS_ROLE_COUNT; i++) {
		if (!(roles & (1u << i)) || used >= len)
			continue;
		int n = snprintf(out + used, len - used, "%s%s", used ? "," : "", cs_role_names[i]);
		if (n > 0)
			used += (size_t)n;
	}
}

int cs_on_thread_name(struct cs_engine *engine, const struct cs_ev_thread_name *ev)
{
	struct cs_thread_stats *thread = cs_get_thread(engine, ev->tid, ev->tgid, NULL);
	if (!thread)
		return -ENOMEM;
	/* The record's name may fill its field: the copy always ends. */
	memcpy(thread->runtime_name, ev->name, sizeof(thread->runtime_name) - 1);
	thread->runtime_name[sizeof(thread->runtime_name) - 1] = '\0';
	return 0;
}

int cs_on_thread_polls(struct cs_engine *engine, const struct cs_ev_thread_polls *ev)
{
	struct cs_thread_stats *thread = cs_get_thread(engine, ev->tid, ev->tgid, NULL);
	if (!thread)
		return -ENOMEM;
	/* Totals since attach: the latest wins. */
	thread->ready_polls = ev->ready_polls;
	thread->reads_own = ev->reads_own;
	thread->reads_handed = ev->reads_handed;
	thread->handed_out = ev->handed_out;
	thread->reads_blocking = ev->reads_blocking;
	return 0;
}

/* ---- a thread's samples: totals since the attach, the latest wins ---------- */

int cs_on_thread_sample(struct cs_engine *engine, const struct cs_ev_thread_sample *ev)
{
	struct cs_thread_stats *thread = cs_get_thread(engine, ev->tid, ev->tgid, ev->comm);
	if (!thread)
		return -ENOMEM;
	/* Samples carry totals since attach: the latest wins. */
	thread->runq_total_ns = ev->runq_total_ns;
	thread->runq_max_ns = ev->runq_max_ns;
	thread->runq_waits = ev->runq_waits;
	return 0;
}

int cs_on_thread_cpu(struct cs_engine *engine, const struct cs_ev_thread_cpu *ev)
{
	struct cs_thread_stats *thread = cs_get_thread(engine, ev->tid, ev->tgid, NULL);
	if (!thread)
		return -ENOMEM;
	/* A total since attach, like the run-queue samples: the latest wins. */
	thread->cpu_ns = ev->cpu_ns;
	thread->cpu_sampled_ns = ev->hdr.ts_ns ? ev->hdr.ts_ns : 1;
	return 0;
}
