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
/* When the probes were attached (bpf_ktime_get_ns()'s clock): older connections are partial. */
const volatile __u64 attach_ns = 0;
/* For the tests: as if the kernel skipped every run at a client's ESTABLISHED (see on_tcp_retransmit). */
const volatile bool skip_client_established = false;

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
 * space adds and removes entries; the probes keep each one's listeners and
 * queue pressure in it (struct cs_endpoint_state).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64); /* netns inode << CS_ENDPOINT_PORT_BITS | port */
	__type(value, struct cs_endpoint_state);
} target_endpoints SEC(".maps");

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
	PEEK_ADOPTED,   /* adopted at an idle moment: its next read's first bytes must start a message */
};

/*
 * A connection older than the attach is followed from its first idle
 * moment (adopt_connection, adopt_when_idle): the request in flight at
 * the attach is partial, every later one whole. Its first whole request
 * says so once.
 */
enum adoption {
	ADOPT_NONE = 0,    /* followed from its start, or not yet at an idle moment */
	ADOPT_DUE,         /* adopted: its next request record carries CS_REQ_ADOPTED */
	ADOPT_SAID,        /* ...and one did */
	ADOPT_DUE_STAMPED, /* the same, TCP's stamp later than the attach (CS_REQ_ADOPTED_STAMPED) */
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
	__u8 adopted;         /* enum adoption: older than the attach, followed from an idle moment */
	__u8 not_a_start;     /* its bytes at an idle moment were once no message start (said once) */
	__u8 stamped_since;   /* partial, TCP's stamp later than the attach (see adopt_connection) */
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
	__u32 rcv_nxt_seen;    /* partial: TCP's rcv_nxt at the last look (see idle_since_last_look) */
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

/* Numbers the listener walks (set by user space before each): see cs_endpoint_state. */
__u32 listener_walk = 0;


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

/* The port test first (a few instructions), then the socket's namespace: its entry, or NULL. */
static __always_inline struct cs_endpoint_state *target_endpoint_of_sk(const struct sock *sk, __u16 port)
{
	return is_target_port(port) ? cs_target_endpoint(&target_endpoints, cs_sk_netns(sk), port) : NULL;
}

static __always_inline bool is_target_sk_port(const struct sock *sk, __u16 port)
{
	return target_endpoint_of_sk(sk, port) != NULL;
}

/* The same for a packet. */
static __always_inline struct cs_endpoint_state *target_endpoint_of_skb(const struct sk_buff *skb, __u16 port)
{
	return is_target_port(port) ? cs_target_endpoint(&target_endpoints, cs_skb_netns(skb), port) : NULL;
}

static __always_inline bool is_target_skb_port(const struct sk_buff *skb, __u16 port)
{
	return target_endpoint_of_skb(skb, port) != NULL;
}

/*
 * A kernel address read from memory, as a typed pointer the verifier lets
 * us load from directly (each load is fault-safe, like a probe read, at
 * the cost of a plain load). The kfunc is a no-op the verifier inlines.
 */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
#define kernel_ptr(type, addr) ((type *)bpf_rdonly_cast((const void *)(addr), bpf_core_type_id_kernel(type)))

/*
 * When sk became ESTABLISHED, as TCP stamped it, in ns of the clock
 * bpf_ktime_get_ns() reads: at the handshake's end tcp_init_buffer_space()
 * sets rcvq_space.time (us), and only the owner's reads move it after,
 * forward (to measure its receive rate). So it is the exact time until
 * the first of those, a later one after; never earlier. 0: not stamped.
 * Two loads, where an entry made for every connection at ESTABLISHED
 * cost a hash update and its lookups.
 */
static __always_inline __u64 tcp_stamp_ns(const struct sock *sk)
{
	const struct tcp_sock *tp = kernel_ptr(struct tcp_sock, sk);

	return tp->rcvq_space.time * NSEC_PER_USEC;
}

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

/* The probes, by what they follow (each part uses the ones before it). */
#include "requests.bpf.h"
#include "read_peek.bpf.h"
#include "socket_probes.bpf.h"
#include "lifecycle.bpf.h"
#include "accept.bpf.h"
#include "epoll.bpf.h"
#include "walks.bpf.h"
