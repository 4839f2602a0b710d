/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The target's upstreams: the TCP connections and Unix stream sockets it
 * opened itself, and the exchanges on them (cs_ev_upstream). Followed from
 * the connect, which runs in the connecting thread (TCP: CLOSE -> SYN_SENT;
 * Unix: the system call, unix_connect.bpf.h): a connection made before the
 * attach is not followed. The socket probes look here only for
 * a socket without server-side state (conns), and find nothing for any
 * socket but these.
 */
#ifndef CS_UPSTREAMS_BPF_H
#define CS_UPSTREAMS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"
#include "sock_reads.bpf.h"

/* The connection is counted in upstream_sockets until it closes (or its connect fails). */
static __always_inline void count_upstream(struct upstream_state *up, bool open)
{
	if (open == (bool)up->counted)
		return;
	up->counted = open;
	__sync_fetch_and_add(&upstream_sockets, open ? 1 : -1);
}

#define FNV64_OFFSET 0xcbf29ce484222325ull
#define FNV64_PRIME 0x100000001b3ull

/* A Unix upstream's name: the path its peer listens on, in a record of its own; returns its hash. */
static __always_inline __u64 emit_upstream_path(const struct sock *sk, __u32 tgid)
{
	const struct unix_sock *peer = (const struct unix_sock *)BPF_CORE_READ((const struct unix_sock *)sk, peer);
	const struct unix_address *addr = peer ? BPF_CORE_READ(peer, addr) : NULL;
	int len = addr ? BPF_CORE_READ(addr, len) - (int)sizeof(__u16) : 0;
	__u32 path_len = len > 0 ? (len < CS_UNIX_PATH_LEN ? (__u32)len : CS_UNIX_PATH_LEN) : 0;
	struct cs_ev_upstream_path *ev = reserve_event(sizeof(*ev), CS_EV_UPSTREAM_PATH);
	__u64 hash = FNV64_OFFSET;

	if (!ev)
		return hash; /* the record lost (counted): its exchanges go with the other unnamed ones' */
	__builtin_memset(ev->path, 0, sizeof(ev->path));
	if (path_len && bpf_probe_read_kernel(ev->path, sizeof(ev->path), addr->name[0].sun_path))
		path_len = 0;
	for (__u32 i = 0; i < CS_UNIX_PATH_LEN && i < path_len; i++) {
		hash ^= (__u8)ev->path[i];
		hash *= FNV64_PRIME;
	}
	ev->sk = (__u64)sk;
	ev->path_hash = hash;
	ev->tgid = tgid;
	ev->path_len = (__u16)path_len;
	ev->pad = 0;
	ev->pad2 = 0;
	submit_event(ev);
	return hash;
}

/*
 * A Unix upstream's first sight since its connect (unix_connect.bpf.h):
 * its state moves into the socket's storage, where the probes find it
 * from now on, and its path is named.
 */
static __always_inline struct upstream_state *adopt_unix_upstream(const struct sock *sk)
{
	__u64 key = (__u64)sk;
	struct upstream_state *connected = bpf_map_lookup_elem(&unix_connected, &key);

	if (!connected)
		return NULL;
	struct upstream_state *up = bpf_sk_storage_get(&upstreams, (void *)sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!up) {
		count(CS_CTR_SOCKET_STORAGE);
	} else {
		__builtin_memcpy(up, connected, sizeof(*up));
		up->path_hash = emit_upstream_path(sk, up->tgid);
		count_upstream(up, true);
	}
	if (!bpf_map_delete_elem(&unix_connected, &key))
		__sync_fetch_and_add(&unix_connected_count, -1);
	return up;
}

/* A socket's upstream state: only while some upstream connection is followed is there any to find. */
static __always_inline struct upstream_state *upstream_of(const struct sock *sk)
{
	struct upstream_state *up = upstream_sockets ? bpf_sk_storage_get(&upstreams, (void *)sk, 0, 0) : NULL;

	if (!up && unix_connected_count && sk->__sk_common.skc_family == AF_UNIX)
		up = adopt_unix_upstream(sk);
	return up;
}

/* The current thread's time on a CPU (the kernel's, brought up to date at ticks and switches). */
static __always_inline __u64 current_cpu_ns(void)
{
	return bpf_get_current_task_btf()->se.sum_exec_runtime;
}

/* An exchange begins at start_ns in thread tid (the current one): what that thread had read and not answered. */
static __always_inline void upstream_begin(struct upstream_state *up, __u32 tid, __u64 start_ns)
{
	struct reading_thread *thread = bpf_map_lookup_elem(&reading_threads, &tid);

	up->start_ns = start_ns;
	up->sender_tid = tid;
	up->start_cpu_ns = current_cpu_ns();
	if (!thread) {
		__builtin_memset(up->open_read_ns, 0, sizeof(up->open_read_ns));
		up->reads_at_start = 0;
		up->crowded = 0;
		return;
	}
	__builtin_memcpy(up->open_read_ns, thread->open_read_ns, sizeof(up->open_read_ns));
	up->reads_at_start = thread->reads;
	up->crowded = thread->crowded != 0;
}

/*
 * A target connects: followed from here. Its first exchange begins at
 * this connect, if this thread then sends first (it connected for it).
 */
static __always_inline void follow_upstream(const struct sock *sk)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	if (!is_target_tgid(cs_tgid_of(pid_tgid)))
		return;
	struct upstream_state *up = bpf_sk_storage_get(&upstreams, (void *)sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!up) {
		count(CS_CTR_SOCKET_STORAGE);
		return;
	}
	count(CS_CTR_UPSTREAMS_FOLLOWED);
	count_upstream(up, true);
	__u64 now = bpf_ktime_get_ns();
	up->syn_sent_ns = now;
	up->tgid = cs_tgid_of(pid_tgid);
	up->connector_tid = cs_tid_of(pid_tgid);
	up->window = trace_window;
	upstream_begin(up, up->connector_tid, now);
}

/* The connect ended: established (its time kept for the first exchange), or failed. */
static __always_inline void upstream_connected(const struct sock *sk, bool established)
{
	struct upstream_state *up = upstream_of(sk);

	if (!up)
		return;
	if (!established)
		count_upstream(up, false);
	else if (up->syn_sent_ns)
		up->connect_ns = bpf_ktime_get_ns() - up->syn_sent_ns;
}

/* A SYN of a followed connect was retransmitted: the upstream's backlog, or a lost packet. */
static __always_inline void upstream_syn_retransmitted(const struct sock *sk)
{
	struct upstream_state *up = upstream_of(sk);

	if (up)
		up->syn_retransmits++;
}

/*
 * The probes see the connection in the current tracing window: an exchange
 * begun in another (its probes detached since) is dropped, and counted.
 */
static __always_inline void upstream_enter_window(struct upstream_state *up)
{
	if (up->window == trace_window)
		return;
	if (up->phase == UP_SENT || up->phase == UP_ANSWERED)
		count(CS_CTR_UPSTREAM_CUT);
	up->phase = UP_IDLE;
	up->start_ns = 0; /* a connect's look at its thread is as old as the window */
	up->window = trace_window;
}

/*
 * The requests open at the exchange's start that its thread still has open
 * now, by their first read's time (the last one found in *which).
 */
static __always_inline __u16 open_throughout(const struct upstream_state *up, const struct reading_thread *thread,
					     __u64 *which)
{
	__u16 open = 0;

	for (__u32 i = 0; i < CS_UP_OPEN_FOLLOWED; i++) {
		__u64 read_ns = up->open_read_ns[i];
		if (!read_ns)
			continue;
		for (__u32 j = 0; j < CS_UP_OPEN_FOLLOWED; j++) {
			if (thread->open_read_ns[j] == read_ns) {
				open++;
				*which = read_ns;
				break;
			}
		}
	}
	return open;
}

/*
 * A connect made for a request still open now (its thread had it open then
 * and has it now; or too many were open then and now to tell). A connect
 * made before any of the requests now open (a pool filled ahead, a
 * connection opened as a client connected) served none of them.
 */
static __always_inline bool connected_for_open_request(const struct upstream_state *up, __u32 tid)
{
	struct reading_thread *thread = bpf_map_lookup_elem(&reading_threads, &tid);
	__u64 which = 0;

	if (!thread)
		return false;
	return (up->crowded && thread->crowded) || open_throughout(up, thread, &which) > 0;
}

/*
 * The target sends: an exchange begins, unless one is under way (a request
 * in several sends). The connection's first begins at its connect when the
 * connecting thread sends and connected for a request it still has open;
 * otherwise here, the connect apart.
 */
static __always_inline int upstream_sending(struct upstream_state *up, __u64 now)
{
	upstream_enter_window(up);
	if (up->phase == UP_SENT || up->phase == UP_ANSWERED)
		return 0;
	__u32 tid = cs_tid_of(bpf_get_current_pid_tgid());
	bool from_connect = up->exchanges == 0 && up->start_ns && up->start_ns == up->syn_sent_ns &&
			    tid == up->connector_tid && connected_for_open_request(up, tid);
	if (!from_connect)
		upstream_begin(up, tid, now);
	up->phase = UP_SENT;
	up->send_ns = now;
	up->first_byte_ns = 0;
	up->bytes_out = 0;
	up->exchanges++;
	return 0;
}

/* A send call returned (after tcp_sendmsg_locked, where the kernel has it, began the exchange). */
static __always_inline int upstream_sent(struct upstream_state *up, int ret)
{
	if (ret <= 0)
		return 0;
	if (up->phase == UP_IDLE || up->phase == UP_READ || up->window != trace_window)
		upstream_sending(up, bpf_ktime_get_ns());
	if (up->phase == UP_SENT || up->phase == UP_ANSWERED)
		up->bytes_out += ret;
	return 0;
}

/* The answer's first bytes arrived. */
static __always_inline int upstream_data_ready(struct upstream_state *up)
{
	upstream_enter_window(up);
	if (up->phase == UP_SENT) {
		up->first_byte_ns = bpf_ktime_get_ns();
		up->phase = UP_ANSWERED;
	}
	return 0;
}

/*
 * The requests the exchange may have served: those its sender had open
 * both at the start and now (at the answer's first read), by their first
 * read's time; and the requests it began reading meanwhile. A request
 * keeps the slot it opened with until it closes, and one that found none
 * keeps none: with the slots full at the start only, such a request still
 * open now would be counted crowded now; full now only, it opened after
 * the start. Only crowded at both ends, one may have been open throughout
 * unseen: unknown.
 */
static __always_inline void upstream_served(const struct upstream_state *up, struct cs_ev_upstream *ev)
{
	struct reading_thread *thread = bpf_map_lookup_elem(&reading_threads, &up->sender_tid);
	__u64 which = 0;

	ev->open_requests = 0;
	ev->request_read_ns = 0;
	ev->reads_between = 0;
	if (!thread) {
		if (up->crowded)
			ev->flags |= CS_UP_CROWDED;
		return;
	}
	__u16 open = open_throughout(up, thread, &which);
	ev->open_requests = open;
	ev->request_read_ns = open == 1 ? which : 0;
	__u64 reads = thread->reads - up->reads_at_start;
	ev->reads_between = reads > 0xffff ? 0xffff : (__u16)reads;
	if (up->crowded && thread->crowded)
		ev->flags |= CS_UP_CROWDED;
}

/* The exchange's record: at its answer's first read (read), or at the close (unread). */
static __always_inline void emit_upstream(const struct sock *sk, struct upstream_state *up, __u64 now,
					  __u32 bytes_in, bool read)
{
	if (up->window != trace_window || !(trace_window & 1)) {
		count(CS_CTR_UPSTREAM_CUT);
		return;
	}
	struct cs_ev_upstream *ev = reserve_event_at(sizeof(*ev), CS_EV_UPSTREAM, now);
	if (!ev)
		return;
	__u32 tid = cs_tid_of(bpf_get_current_pid_tgid());
	bool first = up->exchanges == 1;
	bool from_connect = first && up->start_ns == up->syn_sent_ns && up->syn_sent_ns;
	ev->sk = (__u64)sk;
	ev->start_ns = up->start_ns;
	ev->send_ns = up->send_ns;
	ev->first_byte_ns = up->first_byte_ns;
	ev->first_read_ns = read ? now : 0;
	ev->connect_ns = first ? up->connect_ns : 0;
	ev->flags = read ? 0 : CS_UP_UNREAD;
	if (from_connect)
		ev->flags |= CS_UP_CONNECT;
	else if (first && up->syn_sent_ns)
		ev->flags |= CS_UP_CONNECT_APART;
	ev->syn_retransmits = first ? up->syn_retransmits : 0;
	ev->sender_cpu_ns = 0;
	if (read && tid == up->sender_tid)
		ev->sender_cpu_ns = current_cpu_ns() - up->start_cpu_ns;
	else
		ev->flags |= CS_UP_CPU_UNKNOWN;
	if (up->path_hash) {
		__builtin_memset(&ev->tuple, 0, sizeof(ev->tuple));
		ev->tuple.family = AF_UNIX;
		__builtin_memcpy(ev->tuple.remote_addr, &up->path_hash, sizeof(up->path_hash));
	} else {
		read_tuple(sk, &ev->tuple);
	}
	ev->bytes_out = up->bytes_out;
	ev->bytes_in = bytes_in;
	ev->tgid = up->tgid;
	ev->sender_tid = up->sender_tid;
	ev->reader_tid = read ? tid : 0;
	ev->index = up->exchanges - 1;
	upstream_served(up, ev);
	submit_event(ev);
}

/* The target read from its upstream: the answer's first read ends the exchange's record. */
static __always_inline int upstream_read(const struct sock *sk, struct upstream_state *up, int ret)
{
	upstream_enter_window(up);
	if (up->phase != UP_SENT && up->phase != UP_ANSWERED)
		return 0;
	emit_upstream(sk, up, bpf_ktime_get_ns(), (__u32)ret, true);
	up->phase = UP_READ;
	return 0;
}

/* The connection leaves ESTABLISHED: an answer never read is said so. */
static __always_inline int upstream_closed(const struct sock *sk, struct upstream_state *up)
{
	if (up->window == trace_window && (up->phase == UP_SENT || up->phase == UP_ANSWERED))
		emit_upstream(sk, up, bpf_ktime_get_ns(), 0, false);
	up->phase = UP_IDLE;
	count_upstream(up, false);
	return 0;
}

#endif /* CS_UPSTREAMS_BPF_H */
