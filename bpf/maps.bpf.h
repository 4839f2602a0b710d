/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * connscope.bpf.c's maps and globals, and the helpers of cs_helpers.bpf.h
 * bound to them. Every part includes this header; the object defines each
 * map once (include guard), and every map defined is created at load.
 */
#ifndef CS_MAPS_BPF_H
#define CS_MAPS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "connscope.h"
#include "cs_helpers.bpf.h"
#include "conn_state.bpf.h"
#include "target_tgids.bpf.h"
#include "stream.bpf.h"

/* Set by user space between open and load. */
const volatile __u64 wakeup_bytes = CS_WAKEUP_BYTES_DEFAULT; /* wake the consumer past this much queued data */
const volatile bool trace_handshakes = true;
/* When the probes were attached (bpf_ktime_get_ns()'s clock): older connections are partial. */
const volatile __u64 attach_ns = 0;
/*
 * For the tests only (build/connscope-test sets it: tests/hooks/): as if
 * the kernel skipped every run at a client's ESTABLISHED (see
 * on_tcp_retransmit). Read only when a client's handshake ends.
 */
const volatile bool skip_client_established = false;


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
	__uint(max_entries, CS_ENDPOINTS_MAX);
	__type(key, __u64); /* cs_endpoint_key(netns inode, port) */
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

/*
 * Entries put in handshakes_done and not yet taken out: while 0, a
 * server's new connection does not look there. (An entry the LRU evicts
 * stays counted: it costs lookups, never a missed handshake.)
 */
__u64 handshakes_pending = 0;

/* A server-side connection's state (conn_state.bpf.h): only target sockets have any. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct conn_state);
} conns SEC(".maps");

/*
 * A connection a target opened itself (its upstream) and the exchange
 * under way on it (upstreams.bpf.h). Made at the target's connect: only
 * such sockets have any, so finding it is the filter, as for conns.
 */
enum upstream_phase {
	UP_IDLE = 0, /* no exchange under way (the connect may be) */
	UP_SENT,     /* the target sent; no answer yet */
	UP_ANSWERED, /* the answer's first bytes arrived, unread */
	UP_READ,     /* the target read them: the exchange's record is out */
};

struct upstream_state {
	__u64 syn_sent_ns;                       /* the connect sent its SYN */
	__u64 connect_ns;                        /* ... and took this long to be established; 0: not yet */
	__u64 start_ns;                          /* the exchange under way began */
	__u64 send_ns;                           /* its first send */
	__u64 first_byte_ns;                     /* its answer's first bytes arrived */
	__u64 start_cpu_ns;                      /* the sender's sum_exec_runtime at the start */
	__u64 reads_at_start;                    /* the sender's requests read (reading_thread.reads) at the start */
	__u64 open_read_ns[CS_UP_OPEN_FOLLOWED]; /* the sender's open requests at the start */
	__u64 path_hash;                         /* a Unix socket's peer path (cs_ev_upstream_path); 0: TCP */
	__u32 bytes_out;
	__u32 tgid;
	__u32 connector_tid; /* the thread that connected */
	__u32 sender_tid;
	__u32 exchanges; /* begun on the connection */
	__u32 window;    /* the tracing window the exchange under way began in */
	__u16 syn_retransmits;
	__u8 phase;   /* enum upstream_phase */
	__u8 crowded; /* the sender had more open requests than open_read_ns holds */
	__u8 counted; /* in upstream_sockets */
	__u8 pad[7];
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct upstream_state);
} upstreams SEC(".maps");

/*
 * Upstream connections followed and not yet closed: while 0 (a target
 * that calls nobody), the socket probes do not look for one. A Unix
 * socket's close is not seen: one stays counted until connscope detaches.
 */
__u64 upstream_sockets = 0;

/*
 * A target thread's connect() to a Unix socket, from its entry to its
 * exit (a blocking connect waits there while the listener's backlog is
 * full). TCP connects are followed by their state changes instead.
 */
struct connect_call {
	__u64 enter_ns;
	__s32 fd;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct connect_call);
} connect_calls SEC(".maps");

/*
 * A Unix upstream connected, by its socket's address, until a socket probe
 * first meets it and moves its state into socket storage (which the
 * connect's system-call exit cannot reach): its connect's time and the
 * requests its thread had open then.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct upstream_state);
} unix_connected SEC(".maps");

/* Entries in unix_connected: while 0, the socket probes do not look there. */
__u64 unix_connected_count = 0;

/*
 * A local client's end of a connection to a target port (clients.bpf.h):
 * the answer bytes it has not read yet, and who read its last ones.
 */
struct client_state {
	__u64 arrived_ns;           /* the first unread answer bytes came; 0: none unread */
	__u64 arrival_run_delay_ns; /* its last reader's run-queue total then; 0: unknown */
	__u64 reader_task;          /* that reader (a task's address: compared, read with CO-RE) */
	__u32 reader_tid;
	__u32 window;   /* the tracing window arrived_ns belongs to */
	__u32 reads;    /* its reads of answers seen */
	__u32 leftover; /* arrived_ns is a read's that left bytes unread */
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct client_state);
} client_sides SEC(".maps");

/* Set by user space between open and load: --no-clients clears it. */
const volatile bool follow_clients = true;

/* Client sockets ever followed: while 0, the socket probes do not look for one. */
__u64 clients_followed = 0;

/*
 * Per target thread that reads requests (tid): the requests it read and
 * has not begun to answer, by their first read's time (a request's
 * identity on its thread), and how many it read in all. An upstream
 * exchange's sender compares them at the exchange's start and its end:
 * the requests open over the whole exchange are those it may have served.
 * Its send of an answer compares the other way: a request overtaken by
 * another read before its answer began (see loop_turned).
 * A hash, not task storage: a request's answer may begin in another
 * context (note_answer_in_flight), which must close it for its reader.
 */
struct reading_thread {
	__u64 open_read_ns[CS_UP_OPEN_FOLLOWED];           /* 0: a free slot */
	__u64 overtaken_ns[CS_UP_OPEN_FOLLOWED];           /* the thread's first read of another request since; 0: none */
	__u64 overtaken_run_delay_ns[CS_UP_OPEN_FOLLOWED]; /* its sched_info.run_delay at that read */
	__u64 reads;                                       /* requests it began reading */
	__u32 crowded;                                     /* open requests that found no free slot */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct reading_thread);
} reading_threads SEC(".maps");

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

/*
 * Set by user space between open and load (connscoped --between-windows
 * counters): every probe of connections is detached between windows, the
 * kernel's own counters count the gaps, and the probes that count
 * connections count only while trace_window is odd. Its edges are then the
 * gaps' exactly: user space reads the counters right after it goes even
 * and right before it goes odd, all probes attached.
 */
const volatile bool counters_between = false;

/* A probe that counts connections, between windows with counters_between: not counting. */
static __always_inline bool lifecycle_off(void)
{
	return counters_between && !(trace_window & 1);
}

/* Numbers the listener walks (set by user space before each): see cs_endpoint_state. */
__u32 listener_walk = 0;


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

/*
 * Every target's bit (cs_tgid_bit): most processes a probe meets are not
 * targets, and an array word costs a few instructions where the hash
 * lookup costs some 100 ns on a guest.
 */
__u64 target_tgid_bits[CS_TGID_WORDS] = {};

/* Its bit is set: a target, or a process sharing a target's bit (false: not a target). */
static __always_inline bool may_be_target_tgid(__u32 tgid)
{
	return target_tgid_bits[cs_tgid_word(tgid)] & cs_tgid_bit(tgid);
}

static __always_inline bool is_target_tgid(__u32 tgid)
{
	return may_be_target_tgid(tgid) && cs_is_target_tgid(&target_tgids, tgid);
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

#endif /* CS_MAPS_BPF_H */
