// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * connscope probes: the accept path, listeners and requests.
 *
 * Only tracepoints, tp_btf, iterators: no kprobes, no fentry (many locked
 * down kernels have neither). Every probe filters on the target first
 * (process for syscalls, port for softirq-side socket events) and returns
 * at once for everything else.
 *
 *   SYN_RECV -> ESTABLISHED on a child socket  : connection enters the
 *                                                accept queue (timestamp kept
 *                                                in-kernel, keyed by socket)
 *   sys_enter/exit_accept{,4}                  : accept() took it out; one
 *                                                record per call
 *   tp_btf/kfree_skb (TCP_LISTEN_OVERFLOW)     : a handshake's last ACK dropped,
 *                                                accept queue full
 *   iter/tcp over LISTEN sockets               : names a target listener (its
 *                                                address, SYN queue) when user
 *                                                space meets a new one; its
 *                                                backlog, limit and drops come
 *                                                from sock_diag in user space
 *   client SYN_SENT + tcp_retransmit_skb       : SYN retransmits of local
 *                                                clients (1 s, 3 s tails)
 *   sched_process_fork / exit                  : follow forked workers
 *
 * Requests (one record per request, emitted when it is over):
 *   sk_data_ready                              : bytes arrived: a request starts
 *   sock_recv_length / sock_send_length        : first read, first and last send
 *   tcp_sendmsg_locked (when the kernel has it): the exact start of the answer
 *   net_dev_start_xmit                         : an answer's last byte out;
 *                                                attached only while one has
 *                                                bytes held back
 *   the kernel's sched_info.run_delay          : run-queue waits of the serving
 *                                                thread, read where it runs;
 *                                                per-thread totals by iter/task
 *   inet_sock_set_state (leaving ESTABLISHED)  : who closed, after what idle gap
 *   tcp_send_reset / tcp_receive_reset         : resets, the keep-alive race
 * Per-connection state lives in socket-local storage; only target sockets
 * get any, so finding it is the target filter.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "connscope.h"
#include "cs_helpers.bpf.h"
#include "http_peek.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by user space between open and load. */
const volatile __u64 wakeup_bytes = 256 * 1024; /* wake the consumer past this much queued data */
const volatile bool trace_handshakes = true;

/* Target processes (tgid). Filled by user space; forks of targets added here. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} target_tgids SEC(".maps");

/*
 * Target listening ports (host order), one bit per port (see
 * cs_is_target_port()): the port test that every socket event starts with
 * costs a few instructions, not a hash. Only user space writes it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CS_PORT_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} target_ports SEC(".maps");

/*
 * Target listening endpoints: a port in one network namespace (the
 * namespace's inode number, as /proc/PID/ns/net shows it). Port 8080 of one
 * container is not port 8080 of the next: a socket event is ours only when
 * both match. Looked up only after the port bitmap said yes. Only user
 * space writes it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64); /* netns inode << CS_ENDPOINT_PORT_BITS | port */
	__type(value, __u8);
} target_endpoints SEC(".maps");

/*
 * When each not-yet-accepted connection became ESTABLISHED, by socket.
 * Accept removes the entry; LRU drops connections reset while queued.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u64);
} established_ns SEC(".maps");

/*
 * An accept() call in flight, in the calling thread's storage (created on
 * its first accept of a target listener, reused after: no hash update and
 * delete per call). enter_ns 0: no call in flight.
 */
struct accept_call {
	__u64 listener_sk;
	__u64 enter_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct accept_call);
} accept_calls SEC(".maps");

/* A local client's handshake to a target port, on the client socket. */
struct client_handshake {
	__u64 syn_sent_ns;
	__u64 last_syn_ns;
	__u32 syn_retransmits;
	__u32 tgid;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct client_handshake);
} client_handshakes SEC(".maps");

/*
 * A local client's finished handshake, waiting for the server's side of the
 * same connection to become ESTABLISHED. Keyed by the 4-tuple as the
 * server will see it (IPv6: the address's last 32 bits).
 */
struct handshake_key {
	__u32 client_addr;
	__u16 client_port;
	__u16 server_port;
};

struct handshake_done {
	__u64 syn_sent_ns;
	__u64 last_syn_ns;
	__u64 client_established_ns;
	__u32 syn_retransmits;
	__u32 tgid;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct handshake_key);
	__type(value, struct handshake_done);
} handshakes_done SEC(".maps");

/* Request phase of a connection. */
enum conn_phase {
	PHASE_IDLE = 0, /* no request in progress */
	PHASE_WAITING,  /* bytes ready, the server has not read them yet */
	PHASE_HANDLING, /* read, no response sent yet */
	PHASE_SENDING,  /* response (partly) sent */
};

enum peek_conn_state {
	PEEK_START = 0, /* the connection's first read is still to come */
	PEEK_TLS,       /* it began with a TLS record header: the framing is followed */
	PEEK_PLAIN,     /* it began with an HTTP/1.x method: first reads scanned (http_peek.bpf.h) */
	PEEK_OFF,       /* not TLS, the framing lost, or older than the attach: no more looks */
};

/* Everything about one server-side connection, in its socket's storage. */
struct conn_state {
	__u64 established_ns;
	__u64 start_ns;
	__u64 first_read_ns;
	__u64 first_send_ns;
	__u64 last_send_ns;
	__u64 drain_end_ns;
	__u64 pickup_runq_ns;
	__u64 handler_runq_ns;
	__u64 drain_runq_ns;
	__u64 last_reader_task;   /* that thread's task_struct: read, never trusted (see below) */
	__u64 start_run_delay_ns; /* the last reader's sched_info.run_delay when bytes came */
	__u64 read_run_delay_ns;  /* reader's sched_info.run_delay at the first read */
	__u64 send_run_delay_ns;  /* sender's at the first send; 0: not seen in its thread */
	__u64 last_activity_ns;
	__u64 handshake_extra_ns;
	__u64 handler_start_ns; /* a parked request's worker began it (see cs_ev_handback) */
	__u64 handler_end_ns;   /* ... and woke the reader with its answer; 0: not seen */
	__u32 worker_tid;
	__u32 write_seq_at_read; /* tcp write_seq at the first read: moves once we answer */
	__u32 bytes_in;
	__u32 bytes_out;
	__u32 tgid;
	__u32 reader_tid;
	__u32 sender_tid;
	__u32 last_reader_tid; /* kept across requests: who will likely read the next */
	__u32 last_worker_tid; /* kept across requests: the worker that answered its last parked one */
	__u32 requests;        /* requests started on this connection */
	__u32 send_eagain;
	__u32 window; /* the tracing window (trace_window) its request state belongs to */
	__u16 phase;
	__u16 flags;          /* enum cs_request_flags of the current request */
	__u16 port;           /* local (listening) port: skc_num is cleared on close */
	__u8 partial;         /* connection older than the attach */
	__u8 closed;          /* close record already emitted */
	__u8 unread_at_close; /* it closed with a request the server never read */
	__u8 first_unseen;    /* its first request came while the request probes were detached */
	/* What the server read in the first exchanges (see peek_read). */
	__u8 peek_conn;  /* enum peek_conn_state */
	__u8 peek_seen;  /* this exchange's reads were looked at: its bytes record is due */
	__u8 peek_flags; /* enum cs_peek_flags of this exchange */
	__u8 peek_first_len;
	__u8 peek_records;
	__u8 peek_scanned;     /* PEEK_PLAIN: the exchange (requests) whose first read was scanned */
	__u8 tls_records_seen; /* a TLS record header was followed: the next is not the ClientHello */
	__u32 tls_skip;        /* bytes of the TLS record under way still to be read */
	__u32 hello_len;       /* the ClientHello record's length; 0: its body was copied (or not TLS) */
	__u8 peek_first[CS_PEEK_FIRST_LEN];
	__u8 peek_types[CS_PEEK_TLS_RECORDS];
	__u32 peek_read_us[CS_PEEK_TLS_RECORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct conn_state);
} conns SEC(".maps");

/*
 * Run-queue waits come from the kernel's own per-thread counter
 * (task->sched_info.run_delay: time runnable but not running), read in
 * the serving thread at the phase boundaries our socket probes already
 * see. No scheduler hook: sched_switch/sched_wakeup fire for every
 * context switch of every process and cost more than all the rest.
 *
 * For the wait before a request is read, the counter's value when a probe
 * last ran in the thread is kept here (task storage, target threads only).
 */
struct thread_obs {
	__u64 seen_ns;
	__u64 run_delay_ns;
	__u64 last_send_sk; /* the socket of the thread's latest send */
	__u64 last_send_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_obs);
} thread_obs SEC(".maps");

/*
 * The epoll path, per target thread (tid): its polls that returned ready
 * events, and whose polls its reads followed. A hash, not task storage,
 * because a pool thread's read credits the poller, another thread, and a
 * worker's wake-up the loop it woke; it is read by the thread walk and
 * emptied as threads exit.
 */
struct poll_thread {
	__u64 ready_polls;
	__u64 reads_own;
	__u64 reads_handed;
	__u64 handed_out;
	__u64 reads_blocking;
	__u64 ready_exit_ns;          /* its latest poll that returned ready events */
	__u64 woken_ns;               /* a worker of the process last woke it (a hand-back) */
	__u64 waker_prev_handback_ns; /* that worker's hand-back before: when it became free */
	__u64 last_handback_ns;       /* as a worker: its latest wake-up of a polling thread */
	__u32 woken_by;
	__s32 ready_epfd;    /* the epoll instance of that poll (its fd), -1 where not known */
	__u32 woken_claimed; /* a parked answer took woken_ns as its hand-back */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct poll_thread);
} poll_threads SEC(".maps");

/* Per target process (tgid): the thread that last returned from a ready poll, and when. */
struct last_poll {
	__u32 tid;
	__u32 pad;
	__u64 exit_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct last_poll);
} last_poller SEC(".maps");

/*
 * Per epoll instance of a target process (tgid, epfd): the thread that
 * last returned from a ready poll on it, and when its turn began. Threads
 * that take turns on one instance (Jetty's pool) may run a task another
 * thread's turn found; a loop that owns its instance (nginx, Netty,
 * csserver --workers) stays its only poller. An LRU: a process's exit
 * cannot name its instances, and a stale entry names a thread that no
 * longer reads.
 */
struct poll_turn_key {
	__u32 tgid;
	__s32 epfd;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct poll_turn_key);
	__type(value, struct last_poll);
} poll_turns SEC(".maps");

/*
 * Answers whose last send returned with bytes still held in the send queue
 * (Nagle waiting on a delayed ACK, a closed window): until the byte at
 * end_seq leaves through a device, the client is still waiting.
 */
struct drain_state {
	__u32 end_seq; /* write_seq when the last send returned */
	__u32 pad;
	__u64 drained_ns; /* 0 until that byte was handed to a device */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct drain_state);
} draining SEC(".maps");

/* Entries in draining: while 0, the per-packet probe returns at once. */
__u64 draining_sockets = 0;

/* Requests a reader parked: user space attaches the wake-up probe once there is one. */
__u64 parked_requests = 0;

/*
 * The tracing window, numbered by user space: connscoped attaches the
 * per-request probes for a share of the time only, and bumps this at each
 * window's start and end. Odd: a window with every request probe attached;
 * even: between windows, and while the probes are being attached or
 * detached (set after the last attach, before the first detach): requests
 * are emitted in odd windows only. A connection's request state stamped
 * with another number was left half-way when the probes went away (or
 * built while some were missing): what happened meanwhile is unknown, so
 * that request is dropped (counted in CS_CTR_WINDOW_CUT) and the
 * connection's next request starts afresh.
 */
__u32 trace_window = 1;


struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CS_CTR_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 * 1024 * 1024);
} events SEC(".maps");

/* The helpers of cs_helpers.bpf.h, bound to this object's maps. */
static __always_inline void count(__u32 which)
{
	cs_counter_add(&counters, which, 1);
}

/* Reserve a record stamped now_ns, or count it as lost. */
static __always_inline void *reserve_event_at(__u32 size, __u16 type, __u64 now_ns)
{
	void *record = cs_event_reserve(&events, size, type, now_ns);

	if (!record)
		count(CS_CTR_LOST);
	return record;
}

/* The same, stamped with the time now (a clock read costs: reuse one when held). */
static __always_inline void *reserve_event(__u32 size, __u16 type)
{
	return reserve_event_at(size, type, bpf_ktime_get_ns());
}

static __always_inline void submit_event(void *record)
{
	cs_event_submit(&events, record, wakeup_bytes);
}

static __always_inline bool is_target_tgid(__u32 tgid)
{
	return cs_is_target_tgid(&target_tgids, tgid);
}

static __always_inline bool is_target_port(__u16 port)
{
	return cs_is_target_port(&target_ports, port);
}

/* The port test first (a few instructions), then the socket's namespace. */
static __always_inline bool is_target_sk_port(const struct sock *sk, __u16 port)
{
	return is_target_port(port) && cs_is_target_endpoint(&target_endpoints, cs_sk_netns(sk), port);
}

/* The same for a packet. */
static __always_inline bool is_target_skb_port(const struct sk_buff *skb, __u16 port)
{
	return is_target_port(port) &&
	       cs_is_target_endpoint(&target_endpoints, cs_skb_netns(skb), port);
}

/*
 * A kernel address read from memory, as a typed pointer the verifier lets
 * us load from directly (each load is fault-safe, like a probe read, at
 * the cost of a plain load). The kfunc is a no-op the verifier inlines.
 */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
#define kernel_ptr(type, addr) ((type *)bpf_rdonly_cast((const void *)(addr), bpf_core_type_id_kernel(type)))

/*
 * The TCP socket behind a file descriptor of the current task, or NULL.
 * On every accept() twice: direct loads, not a chain of probe reads.
 */
static __always_inline struct sock *tcp_sock_of_fd(int fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct fdtable *fdt = task->files->fdt;
	struct file *file_addr = NULL;

	if (fd < 0 || !fdt || (unsigned int)fd >= fdt->max_fds)
		return NULL;
	/* An array element at a variable index: that one takes a probe read. */
	if (bpf_probe_read_kernel(&file_addr, sizeof(file_addr), &fdt->fd[fd]) || !file_addr) // NOLINT(bugprone-sizeof-expression)
		return NULL;
	struct file *file = kernel_ptr(struct file, file_addr);
	/* Only a socket file's private_data is a struct socket. */
	if ((file->f_inode->i_mode & S_IFMT) != S_IFSOCK)
		return NULL;
	struct socket *socket = kernel_ptr(struct socket, file->private_data);
	struct sock *sk = socket->sk;
	if (!sk)
		return NULL;
	__u16 family = sk->__sk_common.skc_family;
	if ((family != AF_INET && family != AF_INET6) || sk->sk_protocol != IPPROTO_TCP)
		return NULL;
	return sk;
}

/* An IPv4 address as ::ffff:a.b.c.d: two 0xff bytes, then the address in the last four. */
#define V4_MAPPED_OFFSET 12

/* Copy a socket's addresses and ports, local first, IPv4 as v4-mapped. */
static __always_inline void read_tuple(const struct sock *sk, struct cs_tuple *tuple)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	tuple->family = family;
	tuple->local_port = BPF_CORE_READ(sk, __sk_common.skc_num);
	tuple->remote_port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (family == AF_INET6) {
		BPF_CORE_READ_INTO(tuple->local_addr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
		BPF_CORE_READ_INTO(tuple->remote_addr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
		return;
	}
	__u32 local = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
	__u32 remote = BPF_CORE_READ(sk, __sk_common.skc_daddr);
	/* Stored on the tuple: through a __u8 * the compiler would lose its alignment and store byte by byte. */
	tuple->local_addr[V4_MAPPED_OFFSET - 2] = 0xff;
	tuple->local_addr[V4_MAPPED_OFFSET - 1] = 0xff;
	__builtin_memcpy(&tuple->local_addr[V4_MAPPED_OFFSET], &local, sizeof(local));
	tuple->remote_addr[V4_MAPPED_OFFSET - 2] = 0xff;
	tuple->remote_addr[V4_MAPPED_OFFSET - 1] = 0xff;
	__builtin_memcpy(&tuple->remote_addr[V4_MAPPED_OFFSET], &remote, sizeof(remote));
}

/* sk_drops of a listener; newer kernels may also keep per-NUMA counters. */
static __always_inline __u32 read_drops(const struct sock *sk)
{
	return BPF_CORE_READ(sk, sk_drops.counter);
}

/* ---- requests ------------------------------------------------------------ */

/* The current thread's run-queue time so far (kernel-kept, ns). */
static __always_inline __u64 current_run_delay(void)
{
	return bpf_get_current_task_btf()->sched_info.run_delay;
}

static __always_inline __u64 at_most(__u64 value, __u64 limit)
{
	return value < limit ? value : limit;
}

/*
 * Run-queue time of the current thread within [from_ns, now]: what its
 * counter grew by since a probe last ran in it, capped at the window (a
 * wait between that look and from_ns would otherwise count; a thread that
 * slept in epoll_wait since its last send had none). Notes this look.
 */
static __always_inline __u64 runq_since(__u64 from_ns, __u64 now, __u64 run_delay)
{
	struct thread_obs *obs = bpf_task_storage_get(&thread_obs, bpf_get_current_task_btf(), 0,
						      BPF_LOCAL_STORAGE_GET_F_CREATE);
	__u64 waited = 0;

	if (!obs) {
		count(CS_CTR_TABLE_FULL);
		return 0;
	}
	if (obs->seen_ns && from_ns && now > from_ns)
		waited = at_most(run_delay - obs->run_delay_ns, now - from_ns);
	obs->seen_ns = now;
	obs->run_delay_ns = run_delay;
	return waited;
}

/* A parked request's hand-back, just before its request record (see cs_ev_handback). */
static __always_inline void emit_handback(const struct sock *sk, const struct conn_state *conn, __u64 now)
{
	struct cs_ev_handback *ev = reserve_event_at(sizeof(*ev), CS_EV_HANDBACK, now);

	if (!ev)
		return;
	ev->sk = (__u64)sk;
	ev->start_ns = conn->start_ns;
	ev->handler_start_ns = conn->handler_start_ns;
	ev->handler_end_ns = conn->handler_end_ns;
	ev->worker_tid = conn->worker_tid;
	ev->tgid = conn->tgid;
	submit_event(ev);
}

/*
 * What the server read in this exchange, just before its request record
 * (same CPU, same program: the reader sees it first).
 */
static __always_inline void emit_request_bytes(const struct sock *sk, struct conn_state *conn, __u64 now)
{
	struct cs_ev_request_bytes *bytes = reserve_event_at(sizeof(*bytes), CS_EV_REQUEST_BYTES, now);

	if (bytes) {
		bytes->sk = (__u64)sk;
		bytes->index = conn->requests ? conn->requests - 1 : 0;
		bytes->listener_port = conn->port;
		bytes->first_len = conn->peek_first_len;
		bytes->record_count = conn->peek_records;
		__builtin_memcpy(bytes->first, conn->peek_first, sizeof(bytes->first));
		__builtin_memcpy(bytes->record_types, conn->peek_types, sizeof(bytes->record_types));
		__builtin_memcpy(bytes->record_read_us, conn->peek_read_us, sizeof(bytes->record_read_us));
		bytes->flags = conn->peek_flags;
		__builtin_memset(bytes->pad, 0, sizeof(bytes->pad));
		submit_event(bytes);
	}
	conn->peek_seen = conn->peek_flags = conn->peek_first_len = conn->peek_records = 0;
	__builtin_memset(conn->peek_first, 0, sizeof(conn->peek_first));
	__builtin_memset(conn->peek_types, 0, sizeof(conn->peek_types));
	__builtin_memset(conn->peek_read_us, 0, sizeof(conn->peek_read_us));
}

static __always_inline void reset_request(struct conn_state *conn)
{
	conn->phase = PHASE_IDLE;
	conn->start_ns = conn->first_read_ns = conn->first_send_ns = 0;
	conn->last_send_ns = conn->drain_end_ns = 0;
	conn->pickup_runq_ns = conn->handler_runq_ns = conn->drain_runq_ns = 0;
	conn->start_run_delay_ns = conn->read_run_delay_ns = conn->send_run_delay_ns = 0;
	conn->bytes_in = conn->bytes_out = conn->send_eagain = 0;
	conn->reader_tid = conn->sender_tid = conn->worker_tid = 0;
	conn->handler_start_ns = conn->handler_end_ns = 0;
	conn->flags = 0;
}

/* A request cut by a window's edge: no record (its timeline has holes), counted. */
static __always_inline void drop_cut_request(const struct sock *sk, struct conn_state *conn)
{
	__u64 key = (__u64)sk;
	if ((conn->flags & CS_REQ_HELD_BACK) && !bpf_map_delete_elem(&draining, &key))
		__sync_fetch_and_add(&draining_sockets, -1);
	count(CS_CTR_WINDOW_CUT);
	reset_request(conn);
	/* Its bytes' record goes with it. */
	conn->peek_seen = conn->peek_flags = conn->peek_first_len = conn->peek_records = 0;
	conn->window = trace_window;
}

/*
 * The request probes see this connection in the current window: state
 * from an earlier one is dropped. read_now: bytes the probe's own read
 * took. If the server read bytes before them, requests went by unseen, so
 * the next one is not the connection's first.
 */
static __always_inline void enter_window(const struct sock *sk, struct conn_state *conn, __u32 read_now)
{
	if (conn->window == trace_window)
		return;
	if (conn->phase != PHASE_IDLE)
		drop_cut_request(sk, conn);
	conn->window = trace_window;
	struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);
	if (!tp || tp->bytes_received <= (__u64)(tp->rcv_nxt - tp->copied_seq) + read_now)
		return;
	if (!conn->requests)
		conn->first_unseen = 1;
	/* Reads went by unseen: no first bytes to look at, a TLS framing lost. */
	if (conn->peek_conn == PEEK_TLS) {
		conn->peek_seen = 1;
		conn->peek_flags = CS_PEEK_TLS | CS_PEEK_LOST;
	}
	conn->peek_conn = PEEK_OFF;
}

/* Emit the request in progress on conn and reset it. */
static __always_inline void finish_request(const struct sock *sk, struct conn_state *conn, __u64 now)
{
	struct cs_ev_request *ev;

	if (conn->phase == PHASE_IDLE)
		return;
	if (conn->window != trace_window || !(trace_window & 1)) {
		drop_cut_request(sk, conn);
		return;
	}
	if (conn->flags & CS_REQ_HELD_BACK) {
		__u64 key = (__u64)sk;
		struct drain_state *drain = bpf_map_lookup_elem(&draining, &key);
		if (drain) {
			/* Still not out at the next request or the close: out by now. */
			conn->drain_end_ns = drain->drained_ns ? drain->drained_ns : now;
			if (!bpf_map_delete_elem(&draining, &key))
				__sync_fetch_and_add(&draining_sockets, -1);
		}
	}
	if (conn->handler_end_ns)
		emit_handback(sk, conn, now);
	if (conn->peek_seen)
		emit_request_bytes(sk, conn, now);
	ev = reserve_event_at(sizeof(*ev), CS_EV_REQUEST, now);
	if (ev) {
		__u64 drain_end = conn->drain_end_ns ? conn->drain_end_ns : conn->last_send_ns;
		ev->sk = (__u64)sk;
		ev->start_ns = conn->start_ns;
		ev->first_read_ns = conn->first_read_ns;
		ev->first_send_ns = conn->first_send_ns;
		ev->last_send_ns = conn->last_send_ns;
		ev->drain_end_ns = drain_end;
		ev->pickup_runq_ns = conn->pickup_runq_ns;
		ev->handler_runq_ns = conn->handler_runq_ns;
		ev->drain_runq_ns = conn->drain_runq_ns;
		ev->handshake_extra_ns = conn->requests == 1 && !conn->first_unseen ? conn->handshake_extra_ns : 0;
		ev->bytes_in = conn->bytes_in;
		ev->bytes_out = conn->bytes_out;
		ev->tgid = conn->tgid;
		ev->reader_tid = conn->reader_tid;
		ev->sender_tid = conn->sender_tid;
		ev->index = (conn->requests ? conn->requests - 1 : 0) + conn->first_unseen;
		ev->send_eagain = conn->send_eagain;
		ev->listener_port = conn->port;
		__u16 flags = conn->flags;
		if (conn->partial)
			flags |= CS_REQ_PARTIAL;
		if (conn->phase == PHASE_WAITING) {
			flags |= CS_REQ_UNREAD | CS_REQ_NO_RESPONSE;
			conn->unread_at_close = 1;
		} else if (conn->phase == PHASE_HANDLING)
			flags |= CS_REQ_NO_RESPONSE;
		ev->flags = flags;
		submit_event(ev);
	}
	reset_request(conn);
}

/*
 * The run-queue counter, now, of the thread that read this connection's
 * last request: the thread that will most likely read this one. With it,
 * the first read can tell how long that thread was runnable but not
 * running while these bytes waited. 0 when unknown.
 *
 * The task is remembered by address and read with probe reads, which never
 * fault: if it exited and its memory was reused, its pid no longer matches
 * and the value is ignored. (bpf_task_from_pid() is the safe lookup, but
 * its pid hash walk and reference count cost ~200 ns per request here.)
 */
static __always_inline __u64 reader_run_delay(const struct conn_state *conn)
{
	const struct task_struct *reader = (const struct task_struct *)conn->last_reader_task;

	if (!reader || (__u32)BPF_CORE_READ(reader, pid) != conn->last_reader_tid)
		return 0;
	return BPF_CORE_READ(reader, sched_info.run_delay);
}

static __always_inline void start_request(struct conn_state *conn, __u64 now)
{
	conn->phase = PHASE_WAITING;
	conn->start_ns = now;
	conn->requests++;
	conn->last_activity_ns = now;
}

/* A parked request's worker ran it from when it became free (or the read, if later) to end_ns. */
static __always_inline void handed_back(struct conn_state *conn, __u32 worker_tid, __u64 became_free_ns,
					__u64 end_ns)
{
	conn->handler_end_ns = end_ns;
	conn->handler_start_ns = became_free_ns > conn->first_read_ns && became_free_ns < end_ns
					 ? became_free_ns
					 : conn->first_read_ns;
	conn->worker_tid = worker_tid;
}

/*
 * The reader answers, but polled since its first read: the request was
 * parked in user space (a loop that gave it to an executor went back to
 * epoll_wait). A worker that hands an answer back wakes the loop only if it
 * sleeps (on_waking), so a wake-up is the hand-back of the first answer the
 * loop writes after it: that request's worker ran it from its previous
 * hand-back (when it became free) or the read, whichever is later. Answers
 * that came back while the loop ran were handed back at a time not seen,
 * after their worker's latest wake-up and before the send: their worker ran
 * them from then (or the read) to the send. Taking the wake-up's times for
 * them would give the requests queued behind a long handler that handler's
 * run as their own.
 */
static __always_inline void note_parked(struct conn_state *conn, __u32 tid, __u64 now)
{
	struct poll_thread *loop = bpf_map_lookup_elem(&poll_threads, &tid);

	if (!loop || loop->ready_exit_ns <= conn->first_read_ns)
		return;
	conn->flags |= CS_REQ_PARKED;
	if (!parked_requests)
		__sync_fetch_and_add(&parked_requests, 1);
	__u64 woken_ns = loop->woken_ns;
	if (woken_ns > conn->first_read_ns && woken_ns <= now && !loop->woken_claimed) {
		loop->woken_claimed = 1;
		conn->last_worker_tid = loop->woken_by;
		handed_back(conn, loop->woken_by, loop->waker_prev_handback_ns, woken_ns);
		return;
	}
	/* Channels stay with one executor (Netty): this connection's last worker, else the loop's. */
	__u32 worker_tid = conn->last_worker_tid ? conn->last_worker_tid : loop->woken_by;
	struct poll_thread *worker = worker_tid ? bpf_map_lookup_elem(&poll_threads, &worker_tid) : NULL;
	if (!worker)
		return;
	handed_back(conn, worker_tid, worker->last_handback_ns, now);
}

/*
 * The serving thread began to answer. in_thread: we run in that thread
 * (the send probes) and can read its run-queue counter; otherwise (the
 * answer seen from the client's side) its handler wait stays unknown: 0.
 */
static __always_inline void mark_first_send(struct conn_state *conn, __u32 tid, __u64 now,
					    bool in_thread)
{
	conn->phase = PHASE_SENDING;
	conn->first_send_ns = now;
	conn->last_send_ns = now;
	conn->sender_tid = tid;
	if (!in_thread)
		return;
	if (tid == conn->reader_tid)
		note_parked(conn, tid, now);
	__u64 run_delay = current_run_delay();
	conn->send_run_delay_ns = run_delay;
	if (tid == conn->reader_tid && conn->read_run_delay_ns) /* exact: both looks in this thread */
		conn->handler_runq_ns = at_most(run_delay - conn->read_run_delay_ns,
						now - conn->first_read_ns);
	else
		conn->handler_runq_ns = runq_since(conn->first_read_ns, now, run_delay);
}

/*
 * The send tracepoints fire after the data is on its way: on loopback the
 * client may already have read the answer, replied or closed before we see
 * the send. If the socket's write_seq moved since the first read, the
 * server has answered: count the answer as begun now.
 */
static __always_inline void note_answer_in_flight(const struct sock *sk, struct conn_state *conn,
						  __u64 now)
{
	if (conn->phase != PHASE_HANDLING)
		return;
	struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);
	if (tp && tp->write_seq != conn->write_seq_at_read)
		mark_first_send(conn, conn->reader_tid, now, false);
}

/* Nothing read from it and nothing sent on it: every byte it received is still queued. */
static __always_inline bool is_fresh_connection(const struct sock *sk)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);

	return tp && tp->bytes_sent == 0 && tp->rcv_nxt - tp->copied_seq == (__u32)tp->bytes_received;
}

/*
 * A connection seen for the first time without storage: older than the
 * attach, or one whose ESTABLISHED the state probe never saw (rare; its
 * accept then counts as partial). Followed from here if it is on a target
 * port: as partial, but for a connection whose first bytes are arriving
 * now (fresh: none read and nothing sent yet), whose request is seen
 * whole. NULL if it is not ours (or the storage is full: counted).
 */
static __always_inline struct conn_state *adopt_connection(const struct sock *sk, bool arriving)
{
	struct conn_state *conn;

	if (sk->__sk_common.skc_state != TCP_ESTABLISHED ||
	    sk->__sk_common.skc_family == AF_UNIX ||
	    !is_target_sk_port(sk, sk->__sk_common.skc_num))
		return NULL;
	conn = bpf_sk_storage_get(&conns, (void *)sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!conn) {
		count(CS_CTR_SOCKET_STORAGE);
		return NULL;
	}
	conn->partial = !(arriving && is_fresh_connection(sk));
	conn->port = sk->__sk_common.skc_num;
	conn->window = trace_window;
	return conn;
}

/*
 * The reader sent this connection's previous answer and has neither sent
 * elsewhere nor polled since: it read on without a poll (an event loop
 * that tries the next request right after answering).
 */
static __always_inline bool reads_on(const struct sock *sk, const struct poll_thread *reader)
{
	struct thread_obs *obs = bpf_task_storage_get(&thread_obs, bpf_get_current_task_btf(), 0, 0);

	return obs && obs->last_send_sk == (__u64)sk && reader->ready_exit_ns < obs->last_send_ns;
}

/* No other thread returned from a ready poll on the reader's last epoll instance since it did. */
static __always_inline bool kept_turn(const struct conn_state *conn, const struct poll_thread *reader)
{
	if (reader->ready_epfd < 0)
		return true;
	struct poll_turn_key key = { .tgid = conn->tgid, .epfd = reader->ready_epfd };
	struct last_poll *turn = bpf_map_lookup_elem(&poll_turns, &key);

	return !turn || turn->tid == conn->reader_tid;
}

/*
 * Who learned that this request was ready, decided per request (the
 * threads of a pool like Jetty's both poll and serve, in turn): the reader
 * read what it polled (an event loop) when it returned from a ready poll
 * after the bytes came and no other thread took a turn on that epoll
 * instance since (else it ran a task queued by the thread whose turn it
 * was), or when it read on after its own answer. Otherwise, if another
 * thread of the process polled since the bytes came, that thread handed
 * the socket on (a poller and a pool: Tomcat, or Jetty's
 * selector queueing the task while its pool is exhausted); the poller
 * credited is the process's latest: exact with one poller, a guess among
 * several. With no poll since the bytes came (read before any poll saw
 * them), the reader's habit decides: a thread that polls reads its own; one
 * that never does was handed the socket, or reads blocking (thread per
 * connection) when no thread of the process polls.
 */
static __always_inline void note_reader(const struct sock *sk, struct conn_state *conn)
{
	struct poll_thread *reader = bpf_map_lookup_elem(&poll_threads, &conn->reader_tid);
	if (reader && reader->ready_polls &&
	    ((reader->ready_exit_ns >= conn->start_ns && kept_turn(conn, reader)) ||
	     reads_on(sk, reader))) {
		__sync_fetch_and_add(&reader->reads_own, 1);
		return;
	}
	struct last_poll *last = bpf_map_lookup_elem(&last_poller, &conn->tgid);
	bool polled_since = last && last->tid != conn->reader_tid && last->exit_ns >= conn->start_ns;
	if (reader && reader->ready_polls && !polled_since) {
		__sync_fetch_and_add(&reader->reads_own, 1);
		return;
	}
	if (last) {
		__u32 poller_tid = last->tid;
		struct poll_thread *poller = bpf_map_lookup_elem(&poll_threads, &poller_tid);
		if (poller)
			__sync_fetch_and_add(&poller->handed_out, 1);
		conn->flags |= CS_REQ_HANDED_OFF;
	}
	if (reader) {
		__sync_fetch_and_add(last ? &reader->reads_handed : &reader->reads_blocking, 1);
		return;
	}
	struct poll_thread fresh = { .reads_handed = last != NULL, .reads_blocking = last == NULL };
	if (bpf_map_update_elem(&poll_threads, &conn->reader_tid, &fresh, BPF_NOEXIST) == -E2BIG)
		count(CS_CTR_TABLE_FULL);
}

/*
 * The buffer the current read system call copied into, and how much of
 * it is contiguous (room): sock_recv_length runs inside the call, after
 * the copy, and the call's own registers say which call it is and where
 * its buffer is. readv and recvmsg: the first iovec only. 0 for anything
 * else: io_uring (no system call of the reader's), recvmmsg, other
 * architectures.
 */
#define SYS_READ 0
#define SYS_READV 19
#define SYS_RECVFROM 45
#define SYS_RECVMSG 47

static __always_inline __u64 read_call_buffer(__u64 *room, __u64 len)
{
#if defined(__TARGET_ARCH_x86)
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	long nr = BPF_CORE_READ(regs, orig_ax);
	__u64 arg = BPF_CORE_READ(regs, si);
	struct iovec iov;
	__u64 iov_at = arg;

	*room = len;
	if (nr == SYS_READ || nr == SYS_RECVFROM)
		return arg;
	if (nr == SYS_RECVMSG &&
	    bpf_probe_read_user(&iov_at, sizeof(iov_at), (void *)(arg + offsetof(struct user_msghdr, msg_iov))))
		return 0;
	if (nr != SYS_READV && nr != SYS_RECVMSG)
		return 0;
	if (bpf_probe_read_user(&iov, sizeof(iov), (void *)iov_at))
		return 0;
	*room = iov.iov_len < len ? iov.iov_len : len;
	return (__u64)iov.iov_base;
#else
	*room = 0;
	return 0;
#endif
}

#define TLS_HEADER_LEN 5
#define TLS_CT_FIRST 20 /* change_cipher_spec */
#define TLS_CT_LAST 24  /* heartbeat */
#define TLS_CT_HANDSHAKE 22
#define TLS_CT_APPLICATION_DATA 23
#define PEEK_RECORDS_PER_READ 6

/* A TLS record header: a known content type, major version 3. */
static __always_inline bool tls_header(const __u8 *h)
{
	return h[0] >= TLS_CT_FIRST && h[0] <= TLS_CT_LAST && h[1] == 3;
}

/*
 * Walk the TLS record headers that begin in this read (len bytes at buf),
 * noting each one's content type; the record under way at its end carries
 * over to the next read in tls_skip. A header split over two reads, or
 * more records in one read than we follow, loses the framing: said, and
 * no more looks at this connection.
 */
static __always_inline void follow_tls_records(struct conn_state *conn, __u64 buf, __u32 len, __u32 room,
					       __u32 read_us)
{
	__u32 at = conn->tls_skip;
	__u8 h[TLS_HEADER_LEN];

	if (room < len && at < len)
		goto lost;
	for (int i = 0; i < PEEK_RECORDS_PER_READ; i++) {
		if (at >= len) {
			conn->tls_skip = at - len;
			return;
		}
		if (len - at < TLS_HEADER_LEN || bpf_probe_read_user(h, sizeof(h), (void *)(buf + at)) ||
		    !tls_header(h))
			goto lost;
		__u8 r = conn->peek_records;
		__u32 record_len = (__u32)h[3] << 8 | h[4];
		if (h[0] == TLS_CT_HANDSHAKE && record_len > CS_PEEK_BIG_HANDSHAKE_LEN && conn->tls_records_seen)
			conn->peek_flags |= CS_PEEK_BIG_HANDSHAKE;
		conn->tls_records_seen = 1;
		if (r < CS_PEEK_TLS_RECORDS) {
			conn->peek_types[r & (CS_PEEK_TLS_RECORDS - 1)] = h[0];
			conn->peek_read_us[r & (CS_PEEK_TLS_RECORDS - 1)] = read_us;
		}
		if (r < 255)
			conn->peek_records = r + 1;
		at += TLS_HEADER_LEN + record_len;
	}
	if (at >= len) {
		conn->tls_skip = at - len;
		return;
	}
lost:
	conn->peek_flags |= CS_PEEK_LOST;
	conn->peek_conn = PEEK_OFF;
}

/*
 * The ClientHello's body, once: from the read that brings its first
 * bytes (OpenSSL reads the record header alone, then the body; JSSE both
 * at once: the body then starts after the header).
 */
static __always_inline void copy_client_hello(const struct sock *sk, struct conn_state *conn, __u64 buf,
					      __u32 room, bool first_read)
{
	__u32 at = first_read ? TLS_HEADER_LEN : 0;

	if (!conn->hello_len || room <= at)
		return;
	struct cs_ev_client_hello *ev = reserve_event(sizeof(*ev), CS_EV_CLIENT_HELLO);
	if (ev) {
		__u32 n = room - at;
		if (n > conn->hello_len)
			n = conn->hello_len;
		if (n > CS_HELLO_LEN)
			n = CS_HELLO_LEN;
		ev->sk = (__u64)sk;
		ev->record_len = conn->hello_len;
		ev->listener_port = conn->port;
		ev->captured_len = 0;
		/* n - 1 masked where the verifier sees it: the size is 1..CS_HELLO_LEN. */
		__u64 last = n - 1;
		asm volatile("%[last] &= %[mask]"
			     : [last] "+r"(last)
			     : [mask] "i"(CS_HELLO_LEN - 1));
		if (!bpf_probe_read_user(ev->hello, last + 1, (void *)(buf + at)))
			ev->captured_len = (__u16)(last + 1);
		submit_event(ev);
	}
	conn->hello_len = 0;
}

/*
 * Past its first exchanges a TLS connection's reads are not looked at, but
 * for one kind: an exchange of a few dozen bytes in all may be an alert,
 * the client's close_notify, which a server may answer with its own (JSSE
 * does): bytes in, then bytes out, and no request. Its size is the first
 * read and what the socket still holds (OpenSSL reads a record's 5-byte
 * header alone); if small, the first record's header is kept when it is
 * an alert's: type 21 (TLS 1.2), or type 23 of 19 bytes (TLS 1.3: an
 * alert's 2 bytes and its content type under a 16-byte AEAD tag; no
 * request is 3 bytes). The engine then counts the exchange as TLS
 * control, not as a request. Any other exchange leaves no record here.
 */
#define TLS_SMALL_EXCHANGE 96 /* above an alert under any TLS 1.2 cipher suite's overhead (CBC with SHA-384: 85) */
#define TLS_CT_ALERT 21
#define TLS13_ALERT_RECORD_LEN 19

static __always_inline void peek_tls_alert(const struct sock *sk, struct conn_state *conn, __u32 len)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);
	__u64 room = 0, buf;
	__u8 h[TLS_HEADER_LEN];

	if (!tp || len + (__u32)(tp->rcv_nxt - tp->copied_seq) > TLS_SMALL_EXCHANGE || len < TLS_HEADER_LEN)
		return;
	buf = read_call_buffer(&room, len);
	if (!buf || room < TLS_HEADER_LEN || bpf_probe_read_user(h, sizeof(h), (void *)buf) || h[1] != 3)
		return;
	if (h[0] != TLS_CT_ALERT && !(h[0] == TLS_CT_APPLICATION_DATA && ((__u32)h[3] << 8 | h[4]) == TLS13_ALERT_RECORD_LEN))
		return;
	__builtin_memcpy(conn->peek_first, h, sizeof(h));
	conn->peek_first_len = sizeof(h);
	conn->peek_types[0] = h[0];
	conn->peek_records = 1;
	conn->peek_flags |= CS_PEEK_TLS;
	conn->peek_seen = 1;
}

/*
 * Scan an exchange's first read for pipelined requests (http_peek.bpf.h):
 * the connection's first read decides whether it speaks HTTP/1.x at all.
 */
static __always_inline void scan_plain_read(struct conn_state *conn, __u64 buf, __u32 room)
{
	conn->peek_scanned = (__u8)conn->requests;
	switch (http_scan_read(buf, room)) {
	case HTTP_SCAN_MORE:
		conn->peek_seen = 1;
		conn->peek_flags |= CS_PEEK_MORE_REQUESTS;
		conn->peek_conn = PEEK_PLAIN;
		return;
	case HTTP_SCAN_ONE:
		conn->peek_conn = PEEK_PLAIN;
		return;
	case HTTP_SCAN_UNREADABLE:
		conn->peek_seen = 1;
		conn->peek_flags |= CS_PEEK_UNREADABLE;
		conn->peek_conn = PEEK_OFF;
		return;
	default:
		conn->peek_conn = PEEK_OFF;
	}
}

/*
 * A read in one of the connection's first exchanges: keep the exchange's
 * first bytes, decide at the connection's first read whether it speaks TLS
 * (a handshake record header: type 22, version 3.1 to 3.4) and follow its
 * records from then on, or HTTP/1.x, whose exchanges' first reads are
 * scanned for pipelined requests. Only in the first CS_PEEK_EXCHANGES
 * exchanges: every later read costs nothing here.
 */
static __always_inline void peek_read(const struct sock *sk, struct conn_state *conn, __u32 len, __u64 now)
{
	__u64 room = 0;
	__u64 buf;

	/* A plain connection's later exchanges: their first reads only, a record when something is found. */
	if (conn->peek_conn == PEEK_PLAIN) {
		if (conn->peek_scanned == (__u8)conn->requests)
			return;
		buf = read_call_buffer(&room, len);
		scan_plain_read(conn, buf, buf ? (__u32)room : 0);
		return;
	}
	buf = read_call_buffer(&room, len);
	conn->peek_seen = 1;
	if (conn->peek_conn == PEEK_TLS)
		conn->peek_flags |= CS_PEEK_TLS;
	if (!buf || !room) {
		conn->peek_flags |= CS_PEEK_UNREADABLE;
		if (conn->peek_conn == PEEK_TLS)
			conn->peek_flags |= CS_PEEK_LOST;
		conn->peek_conn = PEEK_OFF;
		return;
	}
	if (!conn->peek_first_len) {
		__u32 n = room < CS_PEEK_FIRST_LEN ? room : CS_PEEK_FIRST_LEN;
		if (n < 1 || n > CS_PEEK_FIRST_LEN || bpf_probe_read_user(conn->peek_first, n, (void *)buf))
			conn->peek_flags |= CS_PEEK_UNREADABLE;
		else
			conn->peek_first_len = n;
	}
	if (conn->peek_conn == PEEK_START) {
		const __u8 *f = conn->peek_first;
		if (conn->peek_first_len >= TLS_HEADER_LEN && f[0] == TLS_CT_HANDSHAKE && f[1] == 3 &&
		    f[2] >= 1 && f[2] <= 4) {
			conn->peek_conn = PEEK_TLS;
			conn->peek_flags |= CS_PEEK_TLS;
			conn->hello_len = (__u32)f[3] << 8 | f[4];
			copy_client_hello(sk, conn, buf, (__u32)room, true);
		} else {
			scan_plain_read(conn, buf, (__u32)room);
			return;
		}
	} else if (conn->peek_conn == PEEK_TLS) {
		copy_client_hello(sk, conn, buf, (__u32)room, false);
	}
	if (conn->peek_conn == PEEK_TLS)
		follow_tls_records(conn, buf, len, (__u32)room,
				   now > conn->start_ns ? (__u32)((now - conn->start_ns) / 1000) : 0);
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(on_data_ready, const struct sock *sk)
{
	/* Only target sockets have storage: that is the filter. */
	struct conn_state *conn = bpf_sk_storage_get(&conns, (void *)sk, 0, 0);
	__u64 now;

	if (!conn) {
		conn = adopt_connection(sk, true);
		if (!conn)
			return 0;
	}
	if (conn->closed)
		return 0;
	enter_window(sk, conn, 0);
	now = bpf_ktime_get_ns();
	note_answer_in_flight(sk, conn, now);
	if (conn->phase == PHASE_SENDING)
		finish_request(sk, conn, now);
	if (conn->phase == PHASE_IDLE) {
		start_request(conn, now);
		conn->start_run_delay_ns = reader_run_delay(conn);
	}
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(on_recv, struct sock *sk, int ret, int flags)
{
	/* Most reads of an event loop are the EAGAIN that ends a batch. */
	if (ret <= 0 || (flags & MSG_PEEK))
		return 0;
	struct conn_state *conn = bpf_sk_storage_get(&conns, sk, 0, 0);
	/*
	 * No storage: not ours, or older than the attach with its bytes
	 * queued before it (they raised no data_ready we saw: a connection
	 * still in the accept queue at the attach, say). Adopted as partial.
	 */
	if (!conn) {
		conn = adopt_connection(sk, false);
		if (!conn)
			return 0;
	}
	enter_window(sk, conn, (__u32)ret);
	__u64 now = bpf_ktime_get_ns();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	conn->last_activity_ns = now;
	conn->bytes_in += ret;
	if (conn->phase == PHASE_IDLE) {
		/* Bytes that were queued before we saw them arrive. */
		start_request(conn, now);
		conn->flags |= CS_REQ_PARTIAL;
	}
	if (conn->partial)
		conn->peek_conn = PEEK_OFF; /* mid-stream: no first bytes, no framing */
	if (conn->peek_conn != PEEK_OFF && conn->requests <= CS_PEEK_EXCHANGES)
		peek_read(sk, conn, (__u32)ret, now);
	else if (conn->peek_conn == PEEK_TLS && conn->phase == PHASE_WAITING && ret <= TLS_SMALL_EXCHANGE)
		peek_tls_alert(sk, conn, (__u32)ret);
	if (conn->phase == PHASE_SENDING)
		conn->flags |= CS_REQ_READ_AFTER_SEND;
	if (conn->phase != PHASE_WAITING)
		return 0;
	conn->phase = PHASE_HANDLING;
	conn->first_read_ns = now;
	conn->reader_tid = cs_tid_of(pid_tgid);
	conn->tgid = cs_tgid_of(pid_tgid);
	note_reader(sk, conn);
	__u64 run_delay = current_run_delay();
	__u32 looked_at = conn->last_reader_tid;
	conn->read_run_delay_ns = run_delay;
	conn->last_reader_tid = conn->reader_tid;
	conn->last_reader_task = (__u64)bpf_get_current_task();
	/*
	 * Read by the thread we looked at when the bytes came: exact, except
	 * that a wait already under way then counts whole (capped at the
	 * window). Another thread: what its counter grew since we last ran in it.
	 * (The exact case leaves the thread's last look alone: every send
	 * notes one, the last before the thread goes back to epoll_wait.)
	 */
	if (conn->start_run_delay_ns && conn->reader_tid == looked_at)
		conn->pickup_runq_ns = at_most(run_delay - conn->start_run_delay_ns, now - conn->start_ns);
	else
		conn->pickup_runq_ns = runq_since(conn->start_ns, now, run_delay);
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	if (tp)
		conn->write_seq_at_read = tp->write_seq;
	return 0;
}

/*
 * Fires inside tcp_sendmsg_locked before the data moves: the exact start of
 * the answer. Optional (newer kernels); sock_send_length covers the rest.
 */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(on_tcp_sendmsg, const struct sock *sk, const struct msghdr *msg, const struct sk_buff *skb,
	     int size_goal)
{
	struct conn_state *conn = bpf_sk_storage_get(&conns, (void *)sk, 0, 0);

	if (!conn)
		return 0;
	enter_window(sk, conn, 0);
	if (conn->phase != PHASE_HANDLING)
		return 0;
	mark_first_send(conn, cs_tid_of(bpf_get_current_pid_tgid()), bpf_ktime_get_ns(), true);
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(on_send, struct sock *sk, int ret, int flags)
{
	struct conn_state *conn = bpf_sk_storage_get(&conns, sk, 0, 0);

	if (!conn)
		return 0;
	enter_window(sk, conn, 0);
	if (ret == -EAGAIN) {
		conn->send_eagain++;
		return 0;
	}
	if (ret <= 0 || (conn->phase != PHASE_HANDLING && conn->phase != PHASE_SENDING))
		return 0;
	__u64 now = bpf_ktime_get_ns();
	if (conn->phase == PHASE_HANDLING)
		mark_first_send(conn, cs_tid_of(bpf_get_current_pid_tgid()), now, true);
	conn->last_send_ns = now;
	/* Preempted between the first and the last send: the client waited on us. */
	__u64 run_delay = current_run_delay();
	if (conn->send_run_delay_ns)
		conn->drain_runq_ns = at_most(run_delay - conn->send_run_delay_ns,
					      now - conn->first_send_ns);
	/* The thread's last look before it goes back to epoll_wait, and what it answered. */
	struct thread_obs *obs = bpf_task_storage_get(&thread_obs, bpf_get_current_task_btf(), 0,
						      BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (obs) {
		obs->seen_ns = now;
		obs->run_delay_ns = run_delay;
		obs->last_send_sk = (__u64)sk;
		obs->last_send_ns = now;
	} else {
		count(CS_CTR_TABLE_FULL);
	}
	conn->last_activity_ns = now;
	conn->bytes_out += ret;
	/* Bytes the kernel holds back (Nagle, a closed window) reach the client later. */
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return 0;
	__u64 key = (__u64)sk;
	if (tp->write_seq != tp->snd_nxt) {
		struct drain_state fresh = { .end_seq = tp->write_seq };
		struct drain_state *drain = bpf_map_lookup_elem(&draining, &key);
		if (drain) {
			drain->end_seq = tp->write_seq;
			drain->drained_ns = 0;
		} else if (!bpf_map_update_elem(&draining, &key, &fresh, BPF_NOEXIST)) {
			__sync_fetch_and_add(&draining_sockets, 1);
		} else {
			count(CS_CTR_TABLE_FULL);
		}
		conn->flags |= CS_REQ_HELD_BACK;
		conn->drain_end_ns = 0;
	} else if (conn->flags & CS_REQ_HELD_BACK) {
		/* An earlier send was held, but now everything is out. */
		if (!bpf_map_delete_elem(&draining, &key))
			__sync_fetch_and_add(&draining_sockets, -1);
		conn->drain_end_ns = now;
	}
	return 0;
}

/*
 * Every packet handed to a device, loopback included. Only while some
 * answer is draining does it look further; then it notes when the held
 * back answer's last byte goes out.
 */
SEC("tp_btf/net_dev_start_xmit")
int BPF_PROG(on_xmit, const struct sk_buff *skb, const struct net_device *dev)
{
	if (!draining_sockets)
		return 0;
	__u64 key = (__u64)BPF_CORE_READ(skb, sk);
	struct drain_state *drain = key ? bpf_map_lookup_elem(&draining, &key) : NULL;
	if (!drain || drain->drained_ns)
		return 0;
	/* This segment's last byte: seq + payload. */
	struct tcphdr th;
	const unsigned char *tcp = cs_skb_tcphdr(skb, &th);
	if (!tcp)
		return 0;
	/* The headers before TCP's, from where the packet's data starts. */
	__u32 headers = (__u32)(tcp - BPF_CORE_READ(skb, data));
	__u32 payload = BPF_CORE_READ(skb, len) - headers - th.doff * TCP_DOFF_UNIT;
	__u32 end = bpf_ntohl(th.seq) + payload;
	if ((__s32)(end - drain->end_seq) >= 0)
		drain->drained_ns = bpf_ktime_get_ns();
	return 0;
}

/*
 * The connection leaves ESTABLISHED: close its request and say who closed.
 * late: seen only at a later state change (the kernel skipped our run at
 * the exit itself), so the closer is not the current task: the record is
 * stamped now and carries the connection's own process.
 */
static __always_inline int on_leave_established(const struct sock *sk, int new_state, bool late)
{
	struct conn_state *conn = bpf_sk_storage_get(&conns, (void *)sk, 0, 0);
	struct cs_ev_conn_close *ev;
	__u64 now;

	if (!conn || conn->closed)
		return 0;
	now = bpf_ktime_get_ns();
	note_answer_in_flight(sk, conn, now);
	/*
	 * The client's FIN does not end a request the server has yet to answer
	 * (it may have half-closed after sending it): that one ends when the
	 * server closes too.
	 */
	if (new_state != TCP_CLOSE_WAIT || conn->phase == PHASE_SENDING)
		finish_request(sk, conn, now);
	conn->closed = 1;
	ev = reserve_event_at(sizeof(*ev), CS_EV_CONN_CLOSE, now);
	if (!ev)
		return 0;
	ev->sk = (__u64)sk;
	ev->established_ns = conn->established_ns;
	ev->last_activity_ns = conn->last_activity_ns;
	read_tuple(sk, &ev->tuple);
	ev->requests = conn->requests;
	ev->listener_port = conn->port;
	ev->partial = conn->partial || !conn->established_ns; /* its start not seen */
	ev->pad = 0;
	if (new_state == TCP_FIN_WAIT1) {
		ev->closed_by = CS_CLOSED_BY_SERVER;
		ev->tgid = late ? conn->tgid : cs_tgid_of(bpf_get_current_pid_tgid());
	} else {
		ev->closed_by = new_state == TCP_CLOSE_WAIT ? CS_CLOSED_BY_CLIENT : CS_CLOSED_BY_ABORT;
		ev->tgid = conn->tgid;
	}
	submit_event(ev);
	return 0;
}

/* ---- resets ---------------------------------------------------------------- */

static __always_inline void emit_reset(const struct sock *sk, struct cs_tuple *tuple, __u32 reason,
				       __u8 direction, __u16 flags)
{
	struct cs_ev_reset *ev = reserve_event(sizeof(*ev), CS_EV_RESET);

	if (!ev)
		return;
	ev->sk = (__u64)sk;
	__builtin_memcpy(&ev->tuple, tuple, sizeof(ev->tuple));
	ev->reason = reason;
	ev->direction = direction;
	ev->state = sk ? BPF_CORE_READ(sk, __sk_common.skc_state) : 0;
	ev->flags = flags;
	submit_event(ev);
}

/*
 * Ports of a reset. The socket's own port cannot be trusted: a reset often
 * follows the move to CLOSE, which clears it (inet_put_port). The segment
 * that provoked the reset, or our storage, still knows.
 */
SEC("tp_btf/tcp_send_reset")
int BPF_PROG(on_send_reset, const struct sock *sk, const struct sk_buff *skb, int reason)
{
	struct cs_tuple tuple = {};
	struct conn_state *conn = NULL;
	__u16 flags = 0;

	if (sk && BPF_CORE_READ(sk, __sk_common.skc_state) != TCP_TIME_WAIT) {
		/* A full socket (timewait ones have no storage). */
		conn = bpf_sk_storage_get(&conns, (void *)sk, 0, 0);
		if (conn && conn->unread_at_close)
			flags |= CS_RESET_UNREAD_REQUEST;
	}
	if (skb) {
		struct tcphdr th;
		if (!cs_skb_tcphdr(skb, &th))
			return 0;
		tuple.local_port = bpf_ntohs(th.dest);
		tuple.remote_port = bpf_ntohs(th.source);
	} else if (conn) {
		tuple.local_port = conn->port;
	} else if (sk) {
		tuple.local_port = BPF_CORE_READ(sk, __sk_common.skc_num);
	}
	if (sk ? !is_target_sk_port(sk, tuple.local_port)
	       : !skb || !is_target_skb_port(skb, tuple.local_port))
		return 0;
	if (sk) {
		/* Addresses survive the close; take them, keep the ports. */
		__u16 local_port = tuple.local_port, remote_port = tuple.remote_port;
		read_tuple(sk, &tuple);
		tuple.local_port = local_port;
		if (remote_port)
			tuple.remote_port = remote_port;
	}
	emit_reset(sk, &tuple, (__u32)reason, CS_RESET_SENT, flags);
	return 0;
}

/*
 * A third ACK dropped because the accept queue was full (the SYN itself was
 * let in). Most frees carry other reasons: compare that first.
 */
SEC("tp_btf/kfree_skb")
int BPF_PROG(on_kfree_skb, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	if (reason != bpf_core_enum_value(enum skb_drop_reason, SKB_DROP_REASON_TCP_LISTEN_OVERFLOW))
		return 0;
	struct tcphdr th;
	if (!cs_skb_tcphdr(skb, &th))
		return 0;
	__u16 port = bpf_ntohs(th.dest);
	if (!is_target_skb_port(skb, port))
		return 0;
	struct cs_ev_ack_overflow *ev = reserve_event(sizeof(*ev), CS_EV_ACK_OVERFLOW);
	if (!ev)
		return 0;
	__builtin_memset(&ev->tuple, 0, sizeof(ev->tuple));
	ev->tuple.local_port = port;
	ev->tuple.remote_port = bpf_ntohs(th.source);
	submit_event(ev);
	return 0;
}

SEC("tp_btf/tcp_receive_reset")
int BPF_PROG(on_receive_reset, struct sock *sk)
{
	struct cs_tuple tuple = {};

	/* Before the reset is processed: the socket still has its port. */
	if (!sk || !is_target_sk_port(sk, sk->__sk_common.skc_num))
		return 0;
	read_tuple(sk, &tuple);
	emit_reset(sk, &tuple, 0, CS_RESET_RECEIVED, 0);
	return 0;
}

/* ---- the connection enters the accept queue; client handshakes ---------- */

/* The last of an IPv6 address's four 32-bit words. */
#define IN6_LAST_WORD 3

/* The low 32 bits of an address as the key uses it (IPv4: the address). */
static __always_inline __u32 addr_low32(const struct sock *sk, bool remote)
{
	if (BPF_CORE_READ(sk, __sk_common.skc_family) == AF_INET6)
		return remote ? BPF_CORE_READ(sk, __sk_common.skc_v6_daddr.in6_u.u6_addr32[IN6_LAST_WORD])
			      : BPF_CORE_READ(sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr32[IN6_LAST_WORD]);
	return remote ? BPF_CORE_READ(sk, __sk_common.skc_daddr)
		      : BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
}

/* The client's side of a handshake ended: leave it for the server's side. */
static __always_inline void on_client_handshake_end(const struct sock *sk, bool established)
{
	struct client_handshake *hs;

	hs = bpf_sk_storage_get(&client_handshakes, (void *)sk, 0, 0);
	if (!hs)
		return;
	if (established) {
		struct handshake_key key = {
			.client_addr = addr_low32(sk, false),
			.client_port = sk->__sk_common.skc_num,
			.server_port = bpf_ntohs(sk->__sk_common.skc_dport),
		};
		struct handshake_done done = {
			.syn_sent_ns = hs->syn_sent_ns,
			.last_syn_ns = hs->last_syn_ns,
			.client_established_ns = bpf_ktime_get_ns(),
			.syn_retransmits = hs->syn_retransmits,
			.tgid = hs->tgid,
		};
		if (bpf_map_update_elem(&handshakes_done, &key, &done, BPF_ANY))
			count(CS_CTR_TABLE_FULL);
	} else if (hs->syn_retransmits > 0) {
		/* It gave up: no server side will ever come. */
		struct cs_ev_handshake *ev = reserve_event(sizeof(*ev), CS_EV_HANDSHAKE);
		if (ev) {
			ev->sk = (__u64)sk;
			ev->syn_sent_ns = hs->syn_sent_ns;
			ev->last_syn_ns = hs->last_syn_ns;
			ev->client_established_ns = 0;
			ev->extra_ns = 0;
			__builtin_memset(&ev->tuple, 0, sizeof(ev->tuple));
			ev->tuple.local_port = bpf_ntohs(sk->__sk_common.skc_dport);
			ev->syn_retransmits = hs->syn_retransmits;
			ev->tgid = hs->tgid;
			ev->established = 0;
			ev->pad = 0;
			submit_event(ev);
		}
	}
	bpf_sk_storage_delete(&client_handshakes, (void *)sk);
}

/* A slow handshake is worth a record of its own (the listener's evidence). */
#define SLOW_HANDSHAKE_NS (100 * 1000 * 1000)

/*
 * The server's side of a connection became ESTABLISHED: if a local client
 * made it, its extra connect delay is what the server's queue cost it.
 */
static __always_inline void join_client_handshake(const struct sock *sk, struct conn_state *conn,
						  __u64 now)
{
	struct handshake_key key = {
		.client_addr = addr_low32(sk, true),
		.client_port = bpf_ntohs(sk->__sk_common.skc_dport),
		.server_port = sk->__sk_common.skc_num,
	};
	struct handshake_done *done = bpf_map_lookup_elem(&handshakes_done, &key);
	if (!done)
		return;
	/* One round trip is the normal cost: SYN-ACK seen -> our ESTABLISHED. */
	__u64 round_trip = done->client_established_ns - done->last_syn_ns;
	__u64 total = now > done->syn_sent_ns ? now - done->syn_sent_ns : 0;
	__u64 extra = total > round_trip ? total - round_trip : 0;
	conn->handshake_extra_ns = extra;
	if (done->syn_retransmits > 0 || extra >= SLOW_HANDSHAKE_NS) {
		struct cs_ev_handshake *ev = reserve_event(sizeof(*ev), CS_EV_HANDSHAKE);
		if (ev) {
			ev->sk = (__u64)sk;
			ev->syn_sent_ns = done->syn_sent_ns;
			ev->last_syn_ns = done->last_syn_ns;
			ev->client_established_ns = done->client_established_ns;
			ev->extra_ns = extra;
			read_tuple(sk, &ev->tuple);
			ev->syn_retransmits = done->syn_retransmits;
			ev->tgid = done->tgid;
			ev->established = 1;
			ev->pad = 0;
			submit_event(ev);
		}
	}
	bpf_map_delete_elem(&handshakes_done, &key);
}

/* Server side: the third ACK moved the child into the accept queue. */
static __always_inline int on_server_established(const struct sock *sk)
{
	__u16 port = sk->__sk_common.skc_num;
	if (!is_target_sk_port(sk, port))
		return 0;
	__u64 key = (__u64)sk, now = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&established_ns, &key, &now, BPF_ANY))
		count(CS_CTR_TABLE_FULL);
	struct conn_state *conn = bpf_sk_storage_get(&conns, (void *)sk, 0,
						     BPF_SK_STORAGE_GET_F_CREATE);
	if (!conn) {
		count(CS_CTR_SOCKET_STORAGE);
		return 0;
	}
	conn->established_ns = now;
	conn->last_activity_ns = now;
	conn->port = port;
	conn->window = trace_window;
	if (trace_handshakes)
		join_client_handshake(sk, conn, now);
	return 0;
}

/*
 * The kernel does not re-enter a program on a CPU where it is running:
 * a softirq's state change that lands while this probe runs in a task
 * is skipped (counted in the program's recursion_misses). A connection
 * whose exit from ESTABLISHED was skipped is closed here, at its next
 * state change (from old_state, one of the closing states), rather than
 * lost with its request.
 */
static __always_inline int on_closing_state_change(const struct sock *sk, int old_state)
{
	struct conn_state *conn = bpf_sk_storage_get(&conns, (void *)sk, 0, 0);
	if (!conn)
		return 0;
	bool server_first = old_state != TCP_CLOSE_WAIT && old_state != TCP_LAST_ACK;
	if (!conn->closed) {
		count(CS_CTR_CLOSE_LATE);
		on_leave_established(sk, server_first ? TCP_FIN_WAIT1 : TCP_CLOSE_WAIT, true);
	}
	/* The server closed its half after the client's: whatever it answered is done. */
	if (!server_first)
		finish_request(sk, conn, bpf_ktime_get_ns());
	return 0;
}

/* Client side: connect() to a target port sends its first SYN. */
static __always_inline int on_client_syn_sent(const struct sock *sk)
{
	__u16 port = bpf_ntohs(sk->__sk_common.skc_dport);
	/*
	 * Followed always: a connect whose third ACK is dropped on a full
	 * queue retransmits no SYN, and the first of them come before any
	 * drop could turn following on (test_listen_overflow missed 14 of
	 * 15 such clients with following gated on drops). A client is
	 * followed in the server's namespace only: one connecting from
	 * another namespace (a veth pair) is not.
	 */
	if (!is_target_sk_port(sk, port))
		return 0;
	struct client_handshake *hs = bpf_sk_storage_get(&client_handshakes, (void *)sk, 0,
							 BPF_SK_STORAGE_GET_F_CREATE);
	if (!hs) {
		count(CS_CTR_TABLE_FULL);
		return 0;
	}
	hs->syn_sent_ns = bpf_ktime_get_ns();
	hs->last_syn_ns = hs->syn_sent_ns;
	hs->syn_retransmits = 0;
	hs->tgid = cs_tgid_of(bpf_get_current_pid_tgid());
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(on_tcp_state, const struct sock *sk, const int old_state, const int new_state)
{
	if (old_state == TCP_SYN_RECV && new_state == TCP_ESTABLISHED)
		return on_server_established(sk);
	if (old_state == TCP_ESTABLISHED)
		return on_leave_established(sk, new_state, false);
	if (old_state == TCP_FIN_WAIT1 || old_state == TCP_FIN_WAIT2 || old_state == TCP_CLOSING ||
	    old_state == TCP_CLOSE_WAIT || old_state == TCP_LAST_ACK)
		return on_closing_state_change(sk, old_state);
	if (!trace_handshakes)
		return 0;
	if (old_state == TCP_CLOSE && new_state == TCP_SYN_SENT)
		return on_client_syn_sent(sk);
	if (old_state == TCP_SYN_SENT)
		on_client_handshake_end(sk, new_state == TCP_ESTABLISHED);
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(on_tcp_retransmit, const struct sock *sk, const struct sk_buff *skb, int err)
{
	struct client_handshake *hs;

	if (!trace_handshakes || !sk || sk->__sk_common.skc_state != TCP_SYN_SENT)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	hs = bpf_sk_storage_get(&client_handshakes, (void *)sk, 0, 0);
	if (!hs) {
		/* A SYN to a target port retransmitted, its connect made before the attach. */
		if (!is_target_sk_port(sk, bpf_ntohs(sk->__sk_common.skc_dport)))
			return 0;
		hs = bpf_sk_storage_get(&client_handshakes, (void *)sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
		if (!hs) {
			count(CS_CTR_TABLE_FULL);
			return 0;
		}
		/*
		 * Its first SYN went out before we attached: TCP noted when, in
		 * retrans_stamp (ms of the same clock, 32 bits; us if the route
		 * asks for microsecond timestamps).
		 */
		const struct tcp_sock *tp = (const struct tcp_sock *)sk;
		__u32 stamp = BPF_CORE_READ(tp, retrans_stamp);
		__u64 unit_ns = BPF_CORE_READ_BITFIELD_PROBED(tp, tcp_usec_ts) ? NSEC_PER_USEC
									       : NSEC_PER_MSEC;
		__u32 ago = (__u32)(now / unit_ns) - stamp;
		hs->syn_sent_ns = now - (__u64)ago * unit_ns;
		hs->syn_retransmits = BPF_CORE_READ(&tp->inet_conn, icsk_retransmits);
		hs->tgid = 0; /* unknown: a timer retransmits, in no process of its own */
	}
	hs->syn_retransmits++;
	hs->last_syn_ns = now;
	return 0;
}

/* ---- accept() ------------------------------------------------------------ */

static __always_inline int on_accept_enter(int listen_fd)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	if (!is_target_tgid(cs_tgid_of(pid_tgid)))
		return 0;
	struct sock *listener = tcp_sock_of_fd(listen_fd);
	if (!listener)
		return 0;
	if (!is_target_sk_port(listener, listener->__sk_common.skc_num))
		return 0;
	struct accept_call *call = bpf_task_storage_get(&accept_calls, bpf_get_current_task_btf(), 0,
							BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!call) {
		count(CS_CTR_TABLE_FULL);
		return 0;
	}
	call->listener_sk = (__u64)listener;
	call->enter_ns = bpf_ktime_get_ns();
	return 0;
}

/* The accepted connection in its record: its socket, tuple, and when its handshake ended. */
static __always_inline void note_accepted(struct cs_ev_accept *ev, struct sock *child)
{
	__u64 key = (__u64)child;
	__u64 *established = bpf_map_lookup_elem(&established_ns, &key);

	ev->sk = key;
	read_tuple(child, &ev->tuple);
	if (established) {
		ev->established_ns = *established;
		bpf_map_delete_elem(&established_ns, &key);
	} else {
		count(CS_CTR_ACCEPT_UNMATCHED);
	}
}

/*
 * An accept() whose call began before the attach (a blocking acceptor,
 * Tomcat's or Jetty's, waits in one): no entry was seen, but the
 * connection it returns is the server's all the same, and one of its open
 * connections. Recorded with its wait for the call unknown (enter_ns 0)
 * and its listener unknown; a target's accept on another listener is
 * looked at here too, and left.
 */
static __always_inline int accept_begun_before(__u64 pid_tgid, long ret)
{
	if (ret < 0 || !is_target_tgid(cs_tgid_of(pid_tgid)))
		return 0;
	struct sock *child = tcp_sock_of_fd((int)ret);
	if (!child)
		return 0;
	__u16 port = child->__sk_common.skc_num;
	if (!is_target_sk_port(child, port))
		return 0;
	struct cs_ev_accept *ev = reserve_event(sizeof(*ev), CS_EV_ACCEPT);
	if (!ev)
		return 0;
	/* Every field after the header (cs_event_reserve wrote it): no call, no listener known. */
	__builtin_memset((char *)ev + sizeof(ev->hdr), 0, sizeof(*ev) - sizeof(ev->hdr));
	ev->ret = (__s32)ret;
	ev->tgid = cs_tgid_of(pid_tgid);
	ev->tid = cs_tid_of(pid_tgid);
	ev->listener_port = port;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	note_accepted(ev, child);
	submit_event(ev);
	return 0;
}

static __always_inline int on_accept_exit(long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = cs_tid_of(pid_tgid);
	struct accept_call *call;
	struct cs_ev_accept *ev;

	/* Only threads whose accept() entry was a target's listener are here. */
	call = bpf_task_storage_get(&accept_calls, bpf_get_current_task_btf(), 0, 0);
	if (!call || !call->enter_ns)
		return accept_begun_before(pid_tgid, ret);
	const struct sock *listener = kernel_ptr(struct sock, call->listener_sk);

	ev = reserve_event(sizeof(*ev), CS_EV_ACCEPT);
	if (!ev)
		goto out;
	ev->listener_sk = call->listener_sk;
	ev->enter_ns = call->enter_ns;
	ev->ret = (__s32)ret;
	ev->tgid = cs_tgid_of(pid_tgid);
	ev->tid = tid;
	ev->backlog = listener->sk_ack_backlog;
	ev->backlog_limit = listener->sk_max_ack_backlog;
	ev->listener_drops = read_drops(listener);
	ev->listener_port = listener->__sk_common.skc_num;
	ev->pad[0] = ev->pad[1] = ev->pad[2] = 0;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	ev->sk = 0;
	ev->established_ns = 0;
	__builtin_memset(&ev->tuple, 0, sizeof(ev->tuple));

	if (ret >= 0) {
		struct sock *child = tcp_sock_of_fd((int)ret);
		if (child)
			note_accepted(ev, child);
	}
	submit_event(ev);
out:
	call->enter_ns = 0;
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_accept4")
int on_enter_accept4(struct trace_event_raw_sys_enter *ctx)
{
	return on_accept_enter((int)ctx->args[0]);
}

SEC("tracepoint/syscalls/sys_enter_accept")
int on_enter_accept(struct trace_event_raw_sys_enter *ctx)
{
	return on_accept_enter((int)ctx->args[0]);
}

SEC("tracepoint/syscalls/sys_exit_accept4")
int on_exit_accept4(struct trace_event_raw_sys_exit *ctx)
{
	return on_accept_exit(ctx->ret);
}

SEC("tracepoint/syscalls/sys_exit_accept")
int on_exit_accept(struct trace_event_raw_sys_exit *ctx)
{
	return on_accept_exit(ctx->ret);
}

/* ---- the epoll path ------------------------------------------------------ */

/*
 * The epoll instance a poll waited on: the call's first argument, still in
 * the registers the entry saved (the exit tracepoint carries only the
 * return value). -1 where not known (other architectures): turns are then
 * not told apart.
 */
static __always_inline __s32 poll_epfd(void)
{
#if defined(__TARGET_ARCH_x86)
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	return (__s32)BPF_CORE_READ(regs, di);
#else
	return -1;
#endif
}

/* Written only when the turn passes: a loop alone on its instance leaves the entry untouched. */
static __always_inline void note_turn(__u32 tgid, __u32 tid, __s32 epfd, __u64 now)
{
	if (epfd < 0)
		return;
	struct poll_turn_key key = { .tgid = tgid, .epfd = epfd };
	struct last_poll *turn = bpf_map_lookup_elem(&poll_turns, &key);
	if (!turn) {
		struct last_poll fresh = { .tid = tid, .exit_ns = now };
		bpf_map_update_elem(&poll_turns, &key, &fresh, BPF_NOEXIST);
	} else if (turn->tid != tid) {
		turn->tid = tid;
		turn->exit_ns = now;
	}
}

/*
 * A poll returned ready events in a target thread. Polls that time out or
 * fail (ret <= 0) are left out first: an idle server's timer wake-ups cost
 * the call and one comparison. A ready poll of a target thread costs four
 * lookups (target, thread, epoll instance, process), updated in place, a
 * clock read and a register read: when and on which instance it returned
 * decides, per request, who learned it was ready.
 */
static __always_inline int on_poll_exit(long ret)
{
	if (ret <= 0)
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = cs_tgid_of(pid_tgid), tid = cs_tid_of(pid_tgid);
	if (!is_target_tgid(tgid))
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__s32 epfd = poll_epfd();
	struct poll_thread *thread = bpf_map_lookup_elem(&poll_threads, &tid);
	if (!thread) {
		struct poll_thread fresh = { .ready_polls = 1, .ready_exit_ns = now, .ready_epfd = epfd };
		if (bpf_map_update_elem(&poll_threads, &tid, &fresh, BPF_NOEXIST) == -E2BIG)
			count(CS_CTR_TABLE_FULL);
	} else {
		thread->ready_polls++;
		thread->ready_exit_ns = now;
		thread->ready_epfd = epfd;
	}
	note_turn(tgid, tid, epfd, now);
	struct last_poll *poller = bpf_map_lookup_elem(&last_poller, &tgid);
	if (!poller) {
		struct last_poll fresh = { .tid = tid, .exit_ns = now };
		if (bpf_map_update_elem(&last_poller, &tgid, &fresh, BPF_NOEXIST) == -E2BIG)
			count(CS_CTR_TABLE_FULL);
	} else {
		poller->tid = tid;
		poller->exit_ns = now;
	}
	return 0;
}

/*
 * Whether a sleeping task sleeps in epoll_wait(): its system call number,
 * which the entry saved in its registers. A loop also sleeps elsewhere (a
 * JVM's thread blocked at a safepoint, then woken by the VM's thread): only
 * a wake-up out of epoll_wait hands an answer back. Where the number is not
 * known (other architectures), every wake-up counts.
 */
static __always_inline bool sleeps_in_epoll(struct task_struct *p)
{
#if defined(__TARGET_ARCH_x86)
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(p);
	long nr = BPF_CORE_READ(regs, orig_ax);
	return nr == 232 || nr == 281 || nr == 441; /* epoll_wait, epoll_pwait, epoll_pwait2 */
#else
	return true;
#endif
}

/*
 * A thread of a target process that does not poll wakes one that sleeps
 * in epoll_wait(): a worker (an executor) hands an answer back to its event
 * loop (Netty's executor groups), and the loop writes it. Fires on every
 * wake-up of the machine, so the cheapest tests come first: same process (a
 * field and a helper), a target process (one lookup), a polling wakee (one
 * more), then its system call. The waker is the current task in
 * sched_waking, unlike sched_wakeup, which may run on the wakee's CPU. A
 * wake-up from an interrupt that happened to land in a worker of the same
 * process counts too: rare, and only read for parked requests.
 */
SEC("tp_btf/sched_waking")
int BPF_PROG(on_waking, struct task_struct *p)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = cs_tgid_of(pid_tgid);

	if ((__u32)p->tgid != tgid || !is_target_tgid(tgid))
		return 0;
	__u32 wakee = p->pid, waker = cs_tid_of(pid_tgid);
	struct poll_thread *loop = bpf_map_lookup_elem(&poll_threads, &wakee);
	if (!loop || !loop->ready_polls || wakee == waker || !sleeps_in_epoll(p))
		return 0;
	struct poll_thread *worker = bpf_map_lookup_elem(&poll_threads, &waker);
	if (worker && worker->ready_polls)
		return 0; /* a loop or an acceptor that polls: not a worker */
	__u64 now = bpf_ktime_get_ns();
	if (!worker) {
		struct poll_thread fresh = { .last_handback_ns = now };
		if (bpf_map_update_elem(&poll_threads, &waker, &fresh, BPF_NOEXIST) == -E2BIG)
			count(CS_CTR_TABLE_FULL);
		loop->waker_prev_handback_ns = 0;
	} else {
		loop->waker_prev_handback_ns = worker->last_handback_ns;
		worker->last_handback_ns = now;
	}
	loop->woken_ns = now;
	loop->woken_by = waker;
	loop->woken_claimed = 0;
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_epoll_wait")
int on_exit_epoll_wait(struct trace_event_raw_sys_exit *ctx)
{
	return on_poll_exit(ctx->ret);
}

SEC("tracepoint/syscalls/sys_exit_epoll_pwait")
int on_exit_epoll_pwait(struct trace_event_raw_sys_exit *ctx)
{
	return on_poll_exit(ctx->ret);
}

SEC("tracepoint/syscalls/sys_exit_epoll_pwait2")
int on_exit_epoll_pwait2(struct trace_event_raw_sys_exit *ctx)
{
	return on_poll_exit(ctx->ret);
}

/*
 * ---- listeners: walked by user space at the attach, then only to name a
 * listener sock_diag shows and no walk has met yet (at most once a second:
 * the walk visits every TCP socket, TIME_WAIT ones included). The periodic
 * samples of backlog, limit and drops come from sock_diag.
 */

SEC("iter/tcp")
int sample_listeners(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct cs_ev_listener_sample sample = {};
	struct tcp_sock *tp;
	struct sock *sk;

	if (!skc || skc->skc_state != TCP_LISTEN)
		return 0;
	if (!is_target_port(skc->skc_num))
		return 0;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp || !is_target_sk_port((struct sock *)tp, skc->skc_num))
		return 0;
	sk = (struct sock *)tp;

	cs_event_header(&sample.hdr, bpf_ktime_get_ns(), CS_EV_LISTENER_SAMPLE, sizeof(sample));
	sample.sk = (__u64)sk;
	sample.inode = BPF_CORE_READ(sk, sk_socket, file, f_inode, i_ino);
	sample.backlog = sk->sk_ack_backlog;
	sample.backlog_limit = sk->sk_max_ack_backlog;
	sample.syn_queue = tp->inet_conn.icsk_accept_queue.qlen.counter;
	sample.drops = sk->sk_drops.counter;
	sample.port = skc->skc_num;
	sample.family = skc->skc_family;
	bpf_seq_write(ctx->meta->seq, &sample, sizeof(sample));
	return 0;
}

/* ---- target threads' run-queue totals: walked by user space at 1 Hz ------- */

SEC("iter/task")
int sample_threads(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct cs_thread_sched_sample sample = {};

	if (!task || !is_target_tgid(task->tgid))
		return 0;
	sample.run_delay_ns = task->sched_info.run_delay;
	if (bpf_core_field_exists(task->sched_info.max_run_delay)) /* 6.15 and later */
		sample.max_run_delay_ns = task->sched_info.max_run_delay;
	sample.run_count = task->sched_info.pcount;
	sample.start_ns = task->start_time;
	sample.cpu_ns = task->se.sum_exec_runtime;
	sample.tid = task->pid;
	sample.tgid = task->tgid;
	bpf_probe_read_kernel_str(sample.comm, sizeof(sample.comm), task->comm);
	struct poll_thread *polls = bpf_map_lookup_elem(&poll_threads, &sample.tid);
	if (polls) {
		sample.ready_polls = polls->ready_polls;
		sample.reads_own = polls->reads_own;
		sample.reads_handed = polls->reads_handed;
		sample.handed_out = polls->handed_out;
		sample.reads_blocking = polls->reads_blocking;
	}
	bpf_seq_write(ctx->meta->seq, &sample, sizeof(sample));
	return 0;
}

/* ---- follow the target's processes --------------------------------------- */

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = parent->tgid;
	__u32 child_pid = child->pid;
	__u8 present = 1; /* a set: the value is unused */
	struct cs_ev_proc *ev;

	/* New threads share their parent's tgid: already covered. */
	if (child_pid != (__u32)child->tgid || !is_target_tgid(parent_tgid))
		return 0;
	if (bpf_map_update_elem(&target_tgids, &child_pid, &present, BPF_ANY))
		count(CS_CTR_TABLE_FULL);
	ev = reserve_event(sizeof(*ev), CS_EV_PROC_FORK);
	if (!ev)
		return 0;
	ev->pid = child_pid;
	ev->parent_pid = parent_tgid;
	bpf_probe_read_kernel_str(ev->comm, sizeof(ev->comm), child->comm);
	submit_event(ev);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task, bool group_dead)
{
	__u32 tgid = task->tgid, tid = task->pid;
	struct cs_ev_proc *ev;

	if (!is_target_tgid(tgid))
		return 0;
	bpf_map_delete_elem(&poll_threads, &tid);
	if (!group_dead)
		return 0;
	bpf_map_delete_elem(&last_poller, &tgid);
	bpf_map_delete_elem(&target_tgids, &tgid);
	ev = reserve_event(sizeof(*ev), CS_EV_PROC_EXIT);
	if (!ev)
		return 0;
	ev->pid = tgid;
	ev->parent_pid = 0;
	bpf_probe_read_kernel_str(ev->comm, sizeof(ev->comm), task->comm);
	/* Wake at once: an exit ends a run. */
	bpf_ringbuf_submit(ev, BPF_RB_FORCE_WAKEUP);
	return 0;
}
