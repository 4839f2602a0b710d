// SPDX-License-Identifier: BSD-2-Clause
/*
 * The samples the session's loop asks for: the iter/tcp walk that names
 * listeners, the listeners' queues through sock_diag, and the target
 * threads' run-queue and CPU totals through iter/task. Each becomes a
 * record, handed to the probes' callback like the ring's.
 */
#include "probes.h"
#include "probes_internal.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connscope.skel.h"
#include "netns.h"
#include "procfs.h"
#include "u64map.h"
#include "units.h"

/* Threads whose run-queue baseline is kept; more are counted, not tracked. */
#define THREAD_BASELINES_MAX 65536
/* The socket walk that names new listeners runs at most this often. */
#define LISTENER_WALK_MIN_GAP_NS NS_PER_SEC
/* An iterator's read buffer: many whole records a read. */
#define ITER_BUF_BYTES 16384

/*
 * A thread's run-queue counters when this run first saw it: samples report
 * what happened since. A thread born after the attach starts from zero.
 */
struct thread_baseline {
	uint64_t run_delay_ns;
	uint64_t max_run_delay_ns;
	uint64_t run_count;
	uint64_t cpu_ns;
};

/* What the iter/tcp walk taught us about a listener, by socket inode. */
struct listener_identity {
	uint64_t sk;          /* the kernel's socket address: the records' identity */
	uint32_t syn_queue;   /* half-open connections at that walk */
};

int cs_probes_samples_init(struct cs_probes *probes)
{
	probes->iter_buf = malloc(ITER_BUF_BYTES);
	probes->listeners = calloc(CS_MAX_LISTENERS, sizeof(*probes->listeners));
	if (!probes->iter_buf || !probes->listeners ||
	    cs_u64map_init(&probes->thread_baselines, sizeof(struct thread_baseline), THREAD_BASELINES_MAX) ||
	    cs_u64map_init(&probes->listener_sks, sizeof(struct listener_identity), CS_MAX_LISTENERS))
		return -ENOMEM;
	return 0;
}

void cs_probes_samples_free(struct cs_probes *probes)
{
	cs_u64map_free(&probes->thread_baselines);
	cs_u64map_free(&probes->listener_sks);
	free(probes->iter_buf);
	free(probes->listeners);
	probes->iter_buf = NULL;
	probes->listeners = NULL;
}

/* Run an iterator once, handing each whole record_size record to visit. */
static int read_iterator(struct bpf_link *link, size_t record_size,
			 void (*visit)(struct cs_probes *probes, const void *record, uint64_t now_ns),
			 struct cs_probes *probes, uint64_t now_ns)
{
	int fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0)
		return -errno;
	/* The iterator writes whole records; read() may split them, so buffer. */
	char *buf = probes->iter_buf;
	size_t have = 0;
	int err = 0;
	for (;;) {
		ssize_t len = read(fd, buf + have, ITER_BUF_BYTES - have);
		if (len < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (len == 0)
			break;
		have += (size_t)len;
		size_t used = 0;
		while (have - used >= record_size) {
			visit(probes, buf + used, now_ns);
			used += record_size;
		}
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	close(fd);
	return err;
}

static void visit_listener(struct cs_probes *probes, const void *record, uint64_t now_ns)
{
	struct cs_ev_listener_sample sample;
	(void)now_ns; /* the walk stamps its own records */
	memcpy(&sample, record, sizeof(sample));
	int created;
	struct listener_identity *identity = cs_u64map_put(&probes->listener_sks, sample.inode, &created);
	if (identity) {
		identity->sk = sample.sk;
		identity->syn_queue = sample.syn_queue;
	}
	probes->on_record(probes->ctx, record, sizeof(struct cs_ev_listener_sample));
}

/* The namespaces of the target endpoints (none yet: ours), distinct; how many. */
static size_t endpoint_namespaces(const struct cs_probes *probes, uint32_t *inos, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < probes->endpoint_count; i++) {
		uint32_t ino = (uint32_t)(probes->endpoints[i] >> 16);
		bool seen = false;
		for (size_t j = 0; j < n; j++)
			seen |= inos[j] == ino;
		if (!seen && n < max)
			inos[n++] = ino;
	}
	if (n == 0 && max)
		inos[n++] = cs_netns_self();
	return n;
}

int cs_probes_walk_listeners(struct cs_probes *probes, uint64_t now_ns)
{
	uint32_t inos[CS_MAX_NETNS];
	size_t n = endpoint_namespaces(probes, inos, CS_MAX_NETNS);
	int err = 0;
	probes->listener_walks++;
	probes->last_walk_ns = now_ns;
	/* The probes keep each endpoint's listeners from this walk on (cs_endpoint_state). */
	probes->skel->bss->listener_walk = (uint32_t)probes->listener_walks;
	/*
	 * An iter/tcp walk visits the namespace its reader is in when it
	 * starts. One we may no longer enter (connscoped, once it dropped
	 * CAP_SYS_ADMIN) is left out; the others are walked. The first error is told.
	 */
	for (size_t i = 0; i < n; i++) {
		int back;
		int ns_err = cs_netns_enter(inos[i], &back);
		if (!ns_err) {
			ns_err = read_iterator(probes->iter_link, sizeof(struct cs_ev_listener_sample),
					       visit_listener, probes, 0);
			cs_netns_leave(back);
		}
		if (!err)
			err = ns_err;
	}
	return err;
}

static bool is_target_endpoint(const struct cs_probes *probes, uint32_t netns_ino, uint16_t port)
{
	if (!(probes->port_bits[cs_port_word(port)] & cs_port_bit(port)))
		return false;
	for (size_t i = 0; i < probes->endpoint_count; i++)
		if (probes->endpoints[i] == cs_endpoint_key(netns_ino, port))
			return true;
	return false;
}

/*
 * Sample the target listeners of one namespace. Returns 1 when a listener
 * no walk has named yet wants a walk now.
 */
static int sample_namespace(struct cs_probes *probes, uint32_t netns_ino, uint64_t now_ns)
{
	struct cs_listen_socket *listeners = probes->listeners;
	size_t count = 0;
	int err = cs_netns_list_listeners(netns_ino, listeners, CS_MAX_LISTENERS, &count);
	if (err && err != -ENOSPC)
		return err;
	/*
	 * sock_diag names a socket by inode; our records by its address, which
	 * only the iterator sees. A listener not met yet: walk (at most once a
	 * second: the walk visits every TCP socket, TIME_WAIT ones included).
	 */
	for (size_t i = 0; i < count; i++) {
		if (!is_target_endpoint(probes, netns_ino, listeners[i].port) ||
		    cs_u64map_get(&probes->listener_sks, listeners[i].inode))
			continue;
		if (now_ns - probes->last_walk_ns >= LISTENER_WALK_MIN_GAP_NS)
			return 1;
		break;
	}
	for (size_t i = 0; i < count; i++) {
		const struct cs_listen_socket *listener = &listeners[i];
		if (!is_target_endpoint(probes, netns_ino, listener->port))
			continue;
		const struct listener_identity *identity = cs_u64map_get(&probes->listener_sks, listener->inode);
		if (!identity) {
			probes->listener_samples_skipped++;
			continue;
		}
		struct cs_ev_listener_sample sample = {
			.hdr = { .ts_ns = now_ns, .type = CS_EV_LISTENER_SAMPLE, .size = sizeof(sample) },
			.sk = identity->sk,
			.inode = listener->inode,
			.backlog = listener->backlog,
			.backlog_limit = listener->backlog_limit,
			.syn_queue = identity->syn_queue,
			.drops = listener->drops,
			.port = listener->port,
			.family = listener->family,
		};
		probes->on_record(probes->ctx, &sample, sizeof(sample));
	}
	return 0;
}

int cs_probes_sample_listeners(struct cs_probes *probes, uint64_t now_ns)
{
	uint32_t inos[CS_MAX_NETNS];
	size_t n = endpoint_namespaces(probes, inos, CS_MAX_NETNS);
	int err = 0;
	for (size_t i = 0; i < n; i++) {
		int ret = sample_namespace(probes, inos[i], now_ns);
		/* A walk samples every namespace's target listeners itself. */
		if (ret == 1)
			return cs_probes_walk_listeners(probes, now_ns);
		if (ret < 0 && !err)
			err = ret; /* the other namespaces are sampled all the same */
	}
	return err;
}

/* One walk's thread record: the difference from its baseline, as a sample. */
static void emit_thread_sample(struct cs_probes *probes, const struct cs_thread_sched_sample *now_seen,
			       uint64_t now_ns)
{
	int created = 0;
	struct thread_baseline *base = cs_u64map_put(&probes->thread_baselines, now_seen->tid, &created);
	if (!base) {
		probes->threads_untracked++;
		return;
	}
	if (created && now_seen->start_ns < probes->attach_ns) {
		base->run_delay_ns = now_seen->run_delay_ns;
		base->max_run_delay_ns = now_seen->max_run_delay_ns;
		base->run_count = now_seen->run_count;
		base->cpu_ns = now_seen->cpu_ns;
	}
	struct cs_ev_thread_sample sample = {
		.hdr = { .ts_ns = now_ns, .type = CS_EV_THREAD_SAMPLE, .size = sizeof(sample) },
		.runq_total_ns = now_seen->run_delay_ns - base->run_delay_ns,
		.runq_waits = now_seen->run_count - base->run_count,
		.tid = now_seen->tid,
		.tgid = now_seen->tgid,
	};
	/*
	 * The kernel keeps one maximum per thread lifetime. If it moved during
	 * the run, that wait happened since the attach; if not, the longest
	 * since is unknown but at least the mean.
	 */
	if (now_seen->max_run_delay_ns > base->max_run_delay_ns)
		sample.runq_max_ns = now_seen->max_run_delay_ns;
	else if (sample.runq_waits)
		sample.runq_max_ns = sample.runq_total_ns / sample.runq_waits;
	memcpy(sample.comm, now_seen->comm, sizeof(sample.comm));
	sample.comm[sizeof(sample.comm) - 1] = '\0';
	probes->on_record(probes->ctx, &sample, sizeof(sample));
	struct cs_ev_thread_cpu cpu = {
		.hdr = { .ts_ns = now_ns, .type = CS_EV_THREAD_CPU, .size = sizeof(cpu) },
		.cpu_ns = now_seen->cpu_ns - base->cpu_ns,
		.tid = now_seen->tid,
		.tgid = now_seen->tgid,
	};
	probes->on_record(probes->ctx, &cpu, sizeof(cpu));
	/* The epoll path's totals count from the attach already (the probes' table). */
	if (!now_seen->ready_polls && !now_seen->reads_handed && !now_seen->reads_blocking)
		return;
	struct cs_ev_thread_polls polls = {
		.hdr = { .ts_ns = now_ns, .type = CS_EV_THREAD_POLLS, .size = sizeof(polls) },
		.ready_polls = now_seen->ready_polls,
		.reads_own = now_seen->reads_own,
		.reads_handed = now_seen->reads_handed,
		.handed_out = now_seen->handed_out,
		.reads_blocking = now_seen->reads_blocking,
		.tid = now_seen->tid,
		.tgid = now_seen->tgid,
	};
	probes->on_record(probes->ctx, &polls, sizeof(polls));
}

static void visit_thread(struct cs_probes *probes, const void *record, uint64_t now_ns)
{
	struct cs_thread_sched_sample seen;
	memcpy(&seen, record, sizeof(seen));
	emit_thread_sample(probes, &seen, now_ns);
}

int cs_probes_sample_threads(struct cs_probes *probes, uint64_t now_ns)
{
	return read_iterator(probes->thread_iter_link, sizeof(struct cs_thread_sched_sample),
			     visit_thread, probes, now_ns);
}
