/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * connscope wire format: the one header shared by the BPF probes and user
 * space (daemon, engine, record files, tests).
 *
 * Rules: fixed-width fields only, largest first, explicit padding, every
 * record starts with struct cs_event_header, sizes are checked with
 * _Static_assert. A record's size never changes within a wire version; new
 * record types get new type tags and bump CS_WIRE_VERSION, as do new flag
 * bits an older reader would misread. Since versions only add, a reader
 * takes every version from CS_WIRE_VERSION_MIN up to its own.
 *
 * Times are CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns()).
 * Socket identities are kernel socket addresses, used only as opaque cookies
 * that are unique while the socket lives.
 */
#ifndef CONNSCOPE_WIRE_H
#define CONNSCOPE_WIRE_H

#ifdef __BPF__
/* vmlinux.h provides the __u* types in BPF builds. */
#else
#include <linux/types.h>
#endif

/* 2: CS_EV_THREAD_CPU; 3: CS_EV_THREAD_POLLS and CS_REQ_HANDED_OFF; 4: CS_EV_THREAD_NAME;
 * 5: CS_EV_HANDBACK and CS_REQ_PARKED.
 * 6: CS_EV_PROG_COST and CS_EV_SELF_COST.
 * 7: CS_EV_REQUEST_BYTES, CS_EV_CLIENT_HELLO and CS_REQ_READ_AFTER_SEND.
 * 8: CS_PEEK_MORE_REQUESTS (a new meaning in an existing record: a version 7
 *    reader would take such an exchange for one request).
 * 9: cs_ev_conn_close.closer_runq_ns, at the end: the one record that grew
 *    (CS_EV_CONN_CLOSE_V8_SIZE); older ones read with it 0. Older traces still read.
 * 10: CS_REQ_ADOPTED, CS_REQ_ADOPTED_TLS, CS_REQ_NOT_A_START: requests of
 *    connections older than the attach are whole after their first idle
 *    moment (a version 9 reader reads them right, but cannot say how many
 *    connections were adopted).
 * 11: CS_EV_RUNTIME_PAUSE: a runtime (a JVM) stopped its threads.
 * 12: CS_EV_UPSTREAM: an exchange on a connection the target opened itself.
 * 13: CS_PEEK_RESP, CS_PEEK_UNCOUNTED and cs_ev_request_bytes.commands (from
 *    its padding): a Redis connection's exchanges carry their commands'
 *    count (a version 12 reader takes a pipeline for one request).
 * 14: cs_ev_conn_close.closer_tid, at the end (CS_EV_CONN_CLOSE_V13_SIZE
 *    before it); older closes read with it 0. CS_PEEK_PG and
 *    cs_ev_request_bytes.messages (from its padding): a PostgreSQL
 *    connection's exchanges carry their queries and what else they read.
 * 15: cs_ev_request_bytes.protocol (from its padding) and CS_MSG_GREETING:
 *    MySQL's commands, and a greeting the server wrote before its first read
 *    (a version 14 reader takes MySQL's authentication for a request).
 *    CS_EV_SERVER_HELLO: a TLS server's first flight (its ALPN choice).
 * 16: cs_ev_request.loop_turned_ns, at the end (CS_EV_REQUEST_V15_SIZE before it); older
 *    requests read with it 0: a request's wait for its loop's other requests after its
 *    read shows as its handler time, as it did. CS_EV_UPSTREAM_PATH, and upstream
 *    exchanges on Unix stream sockets (tuple.family AF_UNIX, see cs_ev_upstream_path).
 * 17: cs_ev_request.client_key, at the end (CS_EV_REQUEST_V16_SIZE before it; older
 *    requests read with it 0: joined to no client read). CS_EV_CLIENT_READ: a local
 *    client's read of an answer; CS_CLOSE_CLIENTS_FOLLOWED.
 * 18: cs_ev_request.handler_cpu_ns, at the end (CS_EV_REQUEST_V17_SIZE before it), and
 *    CS_REQ_HANDLER_CPU; older requests read with neither: their handlers' time on a CPU
 *    unknown (a carrier is then said pinned from its thread's totals).
 * 19: cs_ev_request.turn_runq_ns, at the end (CS_EV_REQUEST_V18_SIZE before it), and
 *    CS_REQ_TURN_RUNQ; older requests read with neither: a request whose loop turned
 *    takes its waits for a CPU out of its wait for the loop first, as it did.
 * 20: cs_ev_runtime_pause.vm_runq_ns and gc_runq_ns, at the end
 *    (CS_EV_RUNTIME_PAUSE_V19_SIZE before them), and CS_PAUSE_RUNQ; older pauses read
 *    with neither: their VM thread's waits for a CPU unknown. */
#define CS_WIRE_VERSION 20
#define CS_WIRE_VERSION_MIN 1

#define CS_COMM_LEN 16

/* In ascending order: CS_EV_TYPE_MAX, one past the largest, sizes per-type tables. */
enum cs_event_type {
	CS_EV_ACCEPT = 1,          /* accept()/accept4() returned, success or error */
	CS_EV_LISTENER_SAMPLE = 2, /* one listening socket: sock_diag or the iter/tcp walk */
	CS_EV_HANDSHAKE = 3,       /* a local client's SYN was retransmitted */
	CS_EV_PROC_FORK = 4,       /* a target process forked a new process */
	CS_EV_PROC_EXIT = 5,       /* a target process exited */
	CS_EV_REQUEST = 6,         /* one request/response on a connection, its phases */
	CS_EV_CONN_CLOSE = 7,      /* a connection began to close (who, after what) */
	CS_EV_RESET = 8,           /* a reset sent or received on a target port */
	CS_EV_THREAD_SAMPLE = 9,   /* a target thread's run-queue totals (user space) */
	CS_EV_ACK_OVERFLOW = 10,   /* a handshake's last ACK dropped: accept queue full */
	CS_EV_THREAD_CPU = 11,     /* a target thread's time on a CPU (user space) */
	CS_EV_THREAD_POLLS = 12,   /* a target thread's epoll totals (user space) */
	CS_EV_THREAD_NAME = 13,    /* a thread's name inside its runtime (user space: a JVM's) */
	CS_EV_HANDBACK = 14,       /* a parked request's handler, run by another thread */
	CS_EV_REQUEST_BYTES = 15,  /* the first bytes and TLS records of one of a connection's first exchanges */
	CS_EV_CLIENT_HELLO = 16,   /* the start of a TLS connection's ClientHello (its ALPN offer) */
	CS_EV_RUNTIME_PAUSE = 17,  /* a runtime stopped every thread of its process (a JVM's safepoint) */
	CS_EV_UPSTREAM = 18,       /* an exchange on a connection the target opened (its upstream) */
	CS_EV_SERVER_HELLO = 19,   /* the start of a TLS server's first flight (its ServerHello: ALPN) */
	CS_EV_PROG_COST = 20,      /* one of connscope's BPF programs: its run time (user space) */
	CS_EV_SELF_COST = 21,      /* connscope's own CPU time, and whether BPF run time is counted */
	CS_EV_UPSTREAM_PATH = 22,  /* a Unix-socket upstream's path, before its connection's exchanges */
	CS_EV_CLIENT_READ = 23,    /* a local client read an answer from a target's connection */
	CS_EV_TYPE_MAX,
};
_Static_assert(CS_EV_TYPE_MAX == CS_EV_CLIENT_READ + 1, "wire: record types in ascending order");

/* Common prefix of every record. */
struct cs_event_header {
	__u64 ts_ns; /* when the event happened */
	__u16 type;  /* enum cs_event_type */
	__u16 size;  /* whole record, header included */
	__u32 cpu;   /* CPU the probe ran on */
};

/*
 * A TCP 4-tuple as the socket's owner sees it: local first. IPv4 addresses
 * are stored IPv4-mapped (::ffff:a.b.c.d) so that one layout serves both.
 * Ports are in host byte order.
 */
struct cs_tuple {
	__u8 local_addr[16];
	__u8 remote_addr[16];
	__u16 local_port;
	__u16 remote_port;
	__u16 family; /* AF_INET or AF_INET6 as the socket was created */
	__u16 pad;
};

/*
 * accept() returned on a target's TCP listener.
 * hdr.ts_ns is the return; the accept-queue wait is ts_ns - established_ns.
 */
struct cs_ev_accept {
	struct cs_event_header hdr;
	__u64 sk;              /* accepted socket; 0 when ret < 0 */
	__u64 listener_sk;     /* the listening socket */
	__u64 established_ns;  /* child reached ESTABLISHED (entered the queue);
	                          0 when not seen, e.g. queued before attach */
	__u64 enter_ns;        /* the accept() call began */
	struct cs_tuple tuple; /* accepted connection, server's view */
	__s32 ret;             /* new fd, or -errno (-EAGAIN: woken for nothing) */
	__u32 tgid;
	__u32 tid;
	__u32 backlog;        /* listener's queue depth left after this accept */
	__u32 backlog_limit;  /* listener's sk_max_ack_backlog */
	__u32 listener_drops; /* listener's sk_drops at this moment */
	__u16 listener_port;
	__u16 pad[3];
	char comm[CS_COMM_LEN]; /* thread name */
};

/*
 * A target's listening TCP socket. User space samples it through sock_diag
 * at --sample-hz (backlog, limit, drops; sk and syn_queue as the last walk
 * saw them); the iter/tcp walk that names a new listener writes one too.
 */
struct cs_ev_listener_sample {
	struct cs_event_header hdr;
	__u64 sk;
	__u64 inode;         /* socket inode: ties the listener to its owners */
	__u32 backlog;       /* sk_ack_backlog: connections waiting for accept() */
	__u32 backlog_limit; /* sk_max_ack_backlog: the queue holds limit + 1 */
	__u32 syn_queue;     /* icsk_accept_queue.qlen: half-open connections */
	__u32 drops;         /* sk_drops: SYNs and ACKs dropped on this listener */
	__u16 port;
	__u16 family;
	__u32 pad;
};

/*
 * A local client's connect to a target port was slow: its SYN was
 * retransmitted (a full accept queue drops SYNs), or the handshake's last
 * ACK was dropped and the client's data retransmitted until the server let
 * the connection in. Joined in the kernel: the client's side by its socket,
 * the server's by the 4-tuple. hdr.ts_ns is the server's ESTABLISHED, or
 * the moment the client gave up.
 */
struct cs_ev_handshake {
	struct cs_event_header hdr;
	__u64 sk;                    /* server's socket; the client's if it gave up */
	__u64 syn_sent_ns;           /* connect() sent the first SYN */
	__u64 last_syn_ns;           /* the last SYN retransmit: the one that got a SYN-ACK */
	__u64 client_established_ns; /* the client saw the SYN-ACK; 0 if it gave up */
	__u64 extra_ns;              /* connect delay beyond one round trip: SYN and ACK drops */
	struct cs_tuple tuple;       /* server's view: local_port is the target port */
	__u32 syn_retransmits;
	__u32 tgid;        /* the client process */
	__u32 established; /* 1: the connection got in; 0: the client gave up */
	__u32 pad;
};

/* A target process forked (pid: the new process) or exited. */
struct cs_ev_proc {
	struct cs_event_header hdr;
	__u32 pid;
	__u32 parent_pid; /* fork only */
	char comm[CS_COMM_LEN];
};

/* cs_ev_request.flags */
enum cs_request_flags {
	CS_REQ_PARTIAL = 1 << 0,          /* connection seen mid-life (before attach) */
	CS_REQ_NO_RESPONSE = 1 << 1,      /* closed before the server answered */
	CS_REQ_HELD_BACK = 1 << 2,        /* bytes still unsent when the last send returned */
	CS_REQ_UNREAD = 1 << 3,           /* closed before the server read the request */
	CS_REQ_HANDED_OFF = 1 << 4,       /* read by a thread that did not poll it ready, after
	                                     another thread of the process did: a pool thread
	                                     given the socket by a poller */
	CS_REQ_READ_AFTER_SEND = 1 << 5,  /* the server read more bytes after its answer began:
	                                     bytes that had arrived before it (pipelining,
	                                     multiplexing, or a TLS handshake's last flight) */
	CS_REQ_PARKED = 1 << 6,           /* its reader polled again before answering: the
	                                     request waited in user space after its read
	                                     (another thread ran its handler) */
	CS_REQ_ADOPTED = 1 << 7,          /* the first whole request of a connection older than
	                                     the attach, followed from its first idle moment
	                                     (nothing unread, nothing unacknowledged): one
	                                     record per connection adopted */
	CS_REQ_ADOPTED_TLS = 1 << 8,      /* ...its first bytes there were a TLS record header:
	                                     its records re-synchronised (on the same record) */
	CS_REQ_NOT_A_START = 1 << 9,      /* a connection older than the attach whose bytes at
	                                     an idle moment were no message start (neither a
	                                     TLS record header nor text: a record or a body
	                                     under way, a binary protocol): not adopted, this
	                                     request partial; once per connection */
	CS_REQ_ADOPTED_STAMPED = 1 << 10, /* ...with CS_REQ_ADOPTED: TCP's stamp of the connection
	                                     is later than the attach (reads move it): it was
	                                     established between tracing windows, or is older
	                                     and was read since; older only if its accept was
	                                     not seen */
	CS_REQ_HANDLER_CPU = 1 << 11,     /* handler_cpu_ns was measured: read and first send in
	                                     one thread, its handler not parked elsewhere */
	CS_REQ_TURN_RUNQ = 1 << 12,       /* turn_runq_ns was measured: its loop turned, and the
	                                     reader's run-queue counter was read at the turn */
};

/*
 * One request/response exchange, as the kernel saw it on the server's
 * socket. A request starts when bytes arrive after the server last sent (or
 * on a fresh connection) and ends with the server's last send before the
 * next bytes arrive or the close, which is when this record is emitted.
 * Phase times are absolute CLOCK_MONOTONIC ns; 0 = did not happen.
 */
struct cs_ev_request {
	struct cs_event_header hdr;
	__u64 sk;
	__u64 start_ns;           /* first bytes ready on the socket (sk_data_ready) */
	__u64 first_read_ns;      /* the server's first read that returned bytes */
	__u64 first_send_ns;      /* the server's first send of the response */
	__u64 last_send_ns;       /* its last send call returned */
	__u64 drain_end_ns;       /* the response's last byte left the send queue */
	__u64 pickup_runq_ns;     /* of start -> first read: reader runnable, not running */
	__u64 handler_runq_ns;    /* of first read -> first send: same, serving thread */
	__u64 drain_runq_ns;      /* of first send -> drain end: same, sending thread */
	__u64 handshake_extra_ns; /* first request: its local client's extra connect
	                             delay (see cs_ev_handshake), 0 if none or unknown */
	__u32 bytes_in;
	__u32 bytes_out;
	__u32 tgid;
	__u32 reader_tid;
	__u32 sender_tid;
	__u32 index;       /* 0: first request on its connection */
	__u32 send_eagain; /* send calls that found the buffer full */
	__u16 listener_port;
	__u16 flags;          /* enum cs_request_flags */
	__u64 loop_turned_ns; /* its loop read another request before answering it, in one
	                          pass (no ready poll between): the first such read; 0 if none */
	__u64 client_key;     /* cs_client_key() of its connection: its client's reads
	                         (cs_ev_client_read) carry the same */
	__u64 handler_cpu_ns; /* with CS_REQ_HANDLER_CPU: its reader's time on a CPU from the first
	                         read to the first send. A reader that never slept meanwhile: the
	                         whole span, its waits for a CPU in it (handler_runq_ns); one that
	                         slept: the kernel's CPU total's growth (brought up to date at
	                         ticks and switches: a tick's error either way) */
	__u64 turn_runq_ns;   /* with CS_REQ_TURN_RUNQ: of handler_runq_ns, what came from the
	                         first read to loop_turned_ns (the rest came after the turn) */
};
#define CS_EV_REQUEST_V15_SIZE 128 /* before loop_turned_ns */
#define CS_EV_REQUEST_V16_SIZE 136 /* before client_key */
#define CS_EV_REQUEST_V17_SIZE 144 /* before handler_cpu_ns */
#define CS_EV_REQUEST_V18_SIZE 152 /* before turn_runq_ns */

/*
 * What the server read in one of a connection's first CS_PEEK_EXCHANGES
 * exchanges (a request record's bytes in): emitted just before that
 * request record, with its index. Only a few bytes are copied, from the
 * reading system call's buffer: the exchange's first bytes, and when the
 * connection's first bytes were a TLS record header, the content type of
 * each TLS record that began in the exchange (the probe follows the record
 * framing across reads; user space tells handshake from application data).
 * On a connection that began with an HTTP/1.x request line, the first read
 * of each of those exchanges is scanned for a second request behind the
 * first (CS_PEEK_MORE_REQUESTS); such a connection's later exchanges have
 * a record only when one was found (or the read could not be seen). On a
 * Redis connection (RESP: its first bytes an array header, or an inline
 * command), every read is scanned and its commands counted, all exchanges
 * long; an exchange has a record when it read other than one command.
 */
#define CS_PEEK_EXCHANGES 4
#define CS_PEEK_FIRST_LEN 16
#define CS_PEEK_TLS_RECORDS 8

/* cs_ev_request_bytes.flags */
enum cs_peek_flags {
	CS_PEEK_UNREADABLE = 1 << 0,    /* a read whose buffer could not be seen (io_uring, an
	                                   unknown call, a fault): first[] or records missing */
	CS_PEEK_TLS = 1 << 1,           /* the connection's first bytes were a TLS record: records followed */
	CS_PEEK_LOST = 1 << 2,          /* the TLS framing was lost (a header split over reads,
	                                   more records in one read than followed) */
	CS_PEEK_MORE_REQUESTS = 1 << 3, /* the exchange's first read held an HTTP/1.x request
	                                   without a body and more bytes after its header
	                                   block: pipelined requests read at once */
	CS_PEEK_BIG_HANDSHAKE = 1 << 4, /* a TLS handshake record of more than
	                                   CS_PEEK_BIG_HANDSHAKE_LEN bytes, not the connection's
	                                   first record: a second ClientHello (the server asked
	                                   for another with a HelloRetryRequest) or an RSA key
	                                   exchange, never a Finished */
	CS_PEEK_RESP = 1 << 5,          /* a Redis (RESP) connection: commands counts the
	                                   commands whose last byte the exchange read */
	CS_PEEK_UNCOUNTED = 1 << 6,     /* ...which could not be counted (a header split over
	                                   reads, a read longer than is scanned): not one request */
	CS_PEEK_PG = 1 << 7,            /* a PostgreSQL connection: commands counts its queries and
	                                   Syncs (each a request), messages what else it read */
};

/* cs_ev_request_bytes.messages: a framed protocol's messages that are no request */
enum cs_msg_flags {
	CS_MSG_SETUP = 1 << 0,    /* connection set-up: PostgreSQL's start-up, SSL request, password;
	                             MySQL's handshake response and authentication */
	CS_MSG_GOODBYE = 1 << 1,  /* the client's goodbye, which the server does not answer
	                             (PostgreSQL's Terminate, MySQL's COM_QUIT) */
	CS_MSG_GREETING = 1 << 2, /* any connection's first exchange: the server wrote before it
	                             read anything (MySQL's greeting, SMTP's banner) */
};

/*
 * cs_ev_request_bytes.protocol: a framed protocol the flags do not name
 * (CS_PEEK_RESP and CS_PEEK_PG name theirs; the flags' byte is full).
 */
enum cs_wire_protocol {
	CS_WIRE_PROTOCOL_FLAGS = 0, /* told by the flags, or none */
	CS_WIRE_PROTOCOL_MYSQL = 1, /* MySQL and MariaDB: commands counts the commands the server
	                               answers, messages its set-up and goodbye */
};
#define CS_PEEK_BIG_HANDSHAKE_LEN 128

struct cs_ev_request_bytes {
	struct cs_event_header hdr;
	__u64 sk;
	__u32 index; /* the request record's index */
	__u16 listener_port;
	__u8 first_len;                            /* valid bytes in first[] */
	__u8 record_count;                         /* TLS records that began in the exchange (types kept: the first 8) */
	__u8 first[CS_PEEK_FIRST_LEN];             /* the exchange's first bytes read */
	__u8 record_types[CS_PEEK_TLS_RECORDS];    /* their TLS content types, in order */
	__u32 record_read_us[CS_PEEK_TLS_RECORDS]; /* when the read that brought each one's
	                                              header returned, us after start_ns */
	__u8 flags;                                /* enum cs_peek_flags */
	__u8 messages;                             /* enum cs_msg_flags: PostgreSQL's and MySQL's,
	                                              and any connection's greeting */
	__u16 commands;                            /* CS_PEEK_RESP: commands the exchange read (pipelined: more than one);
	                   CS_PEEK_PG: its queries and Syncs; MySQL: its answered commands */
	__u8 protocol;                             /* enum cs_wire_protocol */
	__u8 pad2[3];
};

/*
 * The first bytes of a TLS connection's ClientHello handshake message (the
 * record's body, from its handshake type on), copied once per connection
 * from the read that brought them: enough for the ALPN list of common
 * clients' hellos (OpenSSL's are ~512 bytes; a resumed session's ticket
 * comes before ALPN and adds a few hundred) and, when the hello fits, its
 * last extension: pre_shared_key, a TLS 1.3 session offered. A longer
 * hello is cut: what lies beyond cannot be told.
 */
#define CS_HELLO_LEN 1024

struct cs_ev_client_hello {
	struct cs_event_header hdr;
	__u64 sk;
	__u32 record_len;   /* the ClientHello record's length, as its header says */
	__u16 captured_len; /* valid bytes in hello[] */
	__u16 listener_port;
	__u8 hello[CS_HELLO_LEN];
};

/*
 * The first bytes a TLS connection's server sent: its first flight, the
 * ServerHello first (whose ALPN extension, in TLS 1.2, says whether it
 * chose HTTP/2; TLS 1.3 encrypts that choice). Copied once per connection,
 * at its server's first send.
 */
#define CS_SERVER_HELLO_LEN 256
struct cs_ev_server_hello {
	struct cs_event_header hdr;
	__u64 sk;
	__u32 send_len;     /* bytes the send carried */
	__u16 captured_len; /* valid bytes in flight[] */
	__u16 listener_port;
	__u8 flight[CS_SERVER_HELLO_LEN]; /* from the first record's header on */
};

enum cs_closer {
	CS_CLOSED_BY_SERVER = 1, /* ESTABLISHED -> FIN_WAIT1: the server closed first */
	CS_CLOSED_BY_CLIENT = 2, /* ESTABLISHED -> CLOSE_WAIT: the client's FIN came first */
	CS_CLOSED_BY_ABORT = 3,  /* ESTABLISHED -> CLOSE: reset or abort */
};

/*
 * A parked request (CS_REQ_PARKED) whose answer another thread of the
 * process handed back: that thread woke the reader, which then sent. Emitted
 * just before the request's own record, on the same socket. Of first read ->
 * first send: [first read, handler_start) it waited for the worker (busy
 * with earlier requests: its previous hand-back), [handler_start,
 * handler_end) the worker ran it, [handler_end, first send) the reader took
 * to pick the answer up.
 */
struct cs_ev_handback {
	struct cs_event_header hdr;
	__u64 sk;
	__u64 start_ns;         /* the request's start_ns: joins the two records */
	__u64 handler_start_ns; /* first read, or the worker's previous hand-back if later */
	__u64 handler_end_ns;   /* the worker woke the reader */
	__u32 worker_tid;
	__u32 tgid;
};

/* A connection left ESTABLISHED. hdr.ts_ns is that moment. */
struct cs_ev_conn_close {
	struct cs_event_header hdr;
	__u64 sk;
	__u64 established_ns;   /* 0: connection older than the attach */
	__u64 last_activity_ns; /* last bytes in or out */
	struct cs_tuple tuple;  /* server's view */
	__u32 requests;         /* requests seen on the connection */
	__u32 tgid;             /* the closing process, when the server closed */
	__u16 listener_port;
	__u8 closed_by; /* enum cs_closer */
	__u8 partial;   /* 1: its start not seen (older than the attach) */
	__u32 flags;    /* enum cs_close_flags */
	/*
	 * A server close: of the time since last_activity_ns, how long the
	 * closing thread waited to run (runnable, not running). A close the
	 * machine delayed is not one the server waited for. 0 when unknown:
	 * the thread not seen by a probe since that activity, or the close
	 * within CS_CLOSE_RUNQ_FROM_NS of it (too soon to be an idle close).
	 */
	__u64 closer_runq_ns;
	/*
	 * A server close seen as it happened: the thread that closed. An
	 * acceptor that closes a connection just after an accept made room for
	 * it (nginx reusing connections): no limit freed a slot. 0: not known.
	 */
	__u32 closer_tid;
	__u32 pad;
};
#define CS_CLOSE_RUNQ_FROM_NS 1000000ull
#define CS_EV_CONN_CLOSE_V8_SIZE 96   /* before closer_runq_ns */
#define CS_EV_CONN_CLOSE_V13_SIZE 104 /* before closer_tid */

/* cs_ev_conn_close.flags */
enum cs_close_flags {
	/*
	 * No request state was kept for it (established between tracing
	 * windows, or before the attach, and never seen by the request
	 * probes): requests is 0, not counted, and last_activity_ns comes
	 * from TCP's own stamps of the last data in and out, in jiffies
	 * (0: unknown).
	 */
	CS_CLOSE_UNFOLLOWED = 1,
	CS_CLOSE_RECEIVED_DATA = 2, /* ...and the server had received bytes on it */
	/*
	 * The probes followed local clients (not --no-clients): a connection
	 * whose client's reads never came has a remote client.
	 */
	CS_CLOSE_CLIENTS_FOLLOWED = 4,
};

enum cs_reset_direction {
	CS_RESET_SENT = 1,
	CS_RESET_RECEIVED = 2,
};

/* cs_ev_reset.flags */
enum cs_reset_flags {
	CS_RESET_UNREAD_REQUEST = 1 << 0, /* the connection died with a request unread */
};

/* A TCP reset on a target port. reason: enum sk_rst_reason (sent only). */
struct cs_ev_reset {
	struct cs_event_header hdr;
	__u64 sk;              /* 0 when the kernel had no socket */
	struct cs_tuple tuple; /* server's view */
	__u32 reason;
	__u8 direction; /* enum cs_reset_direction */
	__u8 state;     /* socket state (TCP_*), 0 if none */
	__u16 flags;    /* enum cs_reset_flags */
};

/*
 * The client's third ACK reached a listener whose accept queue was full and
 * was dropped. The kernel counts this once in ListenOverflows but twice in
 * the listener's sk_drops; the engine uses these records to correct that.
 */
struct cs_ev_ack_overflow {
	struct cs_event_header hdr;
	struct cs_tuple tuple; /* server's view, from the dropped segment */
};

/* Sum of a thread's run-queue waits since attach, read from the probes' table. */
struct cs_ev_thread_sample {
	struct cs_event_header hdr;
	__u64 runq_total_ns; /* runnable but not running */
	__u64 runq_max_ns;   /* the longest single wait */
	__u64 runq_waits;    /* how many waits */
	__u32 tid;
	__u32 tgid;
	char comm[CS_COMM_LEN];
};

/*
 * A thread's time on a CPU since attach (the kernel's sum_exec_runtime),
 * read with the run-queue totals: with the time it spent in accept() and
 * in handlers, it tells an acceptor that is busy from one that is blocked.
 */
struct cs_ev_thread_cpu {
	struct cs_event_header hdr;
	__u64 cpu_ns;
	__u32 tid;
	__u32 tgid;
};

/*
 * A target thread's epoll_wait()/epoll_pwait() totals since attach, read
 * from the probes' table at each thread walk. Roles come from these: a
 * thread that polls and reads what it polled is an event loop; one that
 * polls and whose ready sockets other threads read is a poller.
 */
struct cs_ev_thread_polls {
	struct cs_event_header hdr;
	__u64 ready_polls;    /* polls that returned ready events */
	__u64 reads_own;      /* first reads of requests by this polling thread */
	__u64 reads_handed;   /* first reads of requests another thread polled */
	__u64 handed_out;     /* requests read by other threads after its poll */
	__u64 reads_blocking; /* first reads by this thread in a process where none polls */
	__u32 tid;
	__u32 tgid;
};

/*
 * A thread's name as its runtime knows it, longer than the kernel's
 * 15-character comm: a JVM's "http-nio-8080-exec-3" (asked at the end of
 * a run through the JVM's attach mechanism). Names longer than the field
 * are cut.
 */
#define CS_RUNTIME_NAME_LEN 64

struct cs_ev_thread_name {
	struct cs_event_header hdr;
	__u32 tid;
	__u32 tgid;
	char name[CS_RUNTIME_NAME_LEN];
};

/*
 * A JVM's safepoint: every Java thread of process tgid stopped, from
 * begin_ns (the VM thread asked them to stop) to hdr.ts_ns (its operation
 * ended; the threads go on right after). Each pause writes two records: one as it begins (CS_PAUSE_BEGUN,
 * hdr.ts_ns == begin_ns, nothing else known yet), so that a request whose
 * record comes while its process is still stopped (the kernel goes on
 * receiving meanwhile) finds the pause, and one as it ends. Written by
 * bpf/pauses.bpf.c from HotSpot's USDT probes
 * (hs_private:safepoint__begin/end, hotspot:vmops__begin/end,
 * hotspot:gc__begin/end) or, without them, uprobes on
 * SafepointSynchronize::begin/end (the pause alone).
 */
enum cs_pause_flags {
	CS_PAUSE_GC = 1 << 0,       /* a collection ran in it (gc__begin) */
	CS_PAUSE_GC_FULL = 1 << 1,  /* ...a full one */
	CS_PAUSE_OP_NAMED = 1 << 2, /* op_name holds the VM operation's name */
	CS_PAUSE_UPROBE = 1 << 3,   /* from the uprobe fallback: no operation, no collection told */
	CS_PAUSE_BEGUN = 1 << 4,    /* the pause's first record: it began, and has not ended */
	CS_PAUSE_RUNQ = 1 << 5,     /* vm_runq_ns and gc_runq_ns are known (one VM thread throughout) */
};

#define CS_PAUSE_OP_NAME_LEN 40

/* hdr.ts_ns: the pause's end, before the threads go on (its operation's end, or the safepoint's without one). */
struct cs_ev_runtime_pause {
	struct cs_event_header hdr;
	__u64 begin_ns;   /* the runtime asked its threads to stop */
	__u64 reached_ns; /* all had stopped: the operation began; 0: not known */
	__u64 op_end_ns;  /* the operation ended; 0: not known */
	__u64 gc_ns;      /* the collections' own time inside the pause (gc__begin to gc__end) */
	__u32 tgid;
	__u32 vm_tid;   /* the thread that ran the operation (HotSpot's VM Thread) */
	__u16 flags;    /* enum cs_pause_flags */
	__u16 gc_count; /* collections inside the pause */
	__u32 pad;
	char op_name[CS_PAUSE_OP_NAME_LEN]; /* "G1CollectForAllocation", "ThreadDump"; cut, NUL-padded */
	/* With CS_PAUSE_RUNQ: the VM thread's waits for a CPU (sched_info.run_delay)
	 * while every other thread stood stopped, over the pause and inside its
	 * collections (the runtime's own collector threads may have held the CPUs). */
	__u64 vm_runq_ns;
	__u64 gc_runq_ns;
};
#define CS_EV_RUNTIME_PAUSE_V19_SIZE 104 /* before vm_runq_ns */

/*
 * An exchange on a TCP connection a target opened itself (connect): its
 * upstream, a backend or a database. It begins when the target sends (the
 * connection's first begins at its connect, if the same thread then sends
 * on it), its answer's first bytes arrive (sk_data_ready), and the target
 * reads them: the record is emitted at that first read, before the target
 * can answer the request it serves, so that it comes before that
 * request's record. A send after the answer was read begins the next
 * exchange. hdr.ts_ns: that first read, or the close of a connection
 * whose answer was never read (CS_UP_UNREAD).
 *
 * The request it served: the probes follow, per thread, the requests it
 * read and has not yet answered. open_requests counts those its sender
 * had both at the exchange's start and at its answer's first read: the
 * requests the exchange may have served (a thread that blocks in the call
 * has one; an event loop may have several). With exactly one,
 * request_read_ns is that request's first read, as its request record
 * will say.
 */
enum cs_upstream_flags {
	CS_UP_CONNECT = 1 << 0,       /* the connection's first exchange, its connect in it
	                                 (connect_ns, syn_retransmits) */
	CS_UP_CONNECT_APART = 1 << 1, /* its first exchange, connected by another thread, or
	                                 before the requests its sender has open (a pool filled
	                                 ahead): connect_ns not in this exchange */
	CS_UP_UNREAD = 1 << 2,        /* the connection closed before the target read the answer */
	CS_UP_CROWDED = 1 << 3,       /* its sender had more requests open than the probes follow
	                                 (CS_UP_OPEN_FOLLOWED) at its start and at its answer:
	                                 open_requests unknown */
	CS_UP_CPU_UNKNOWN = 1 << 4,   /* another thread read the answer: sender_cpu_ns unknown */
};
#define CS_UP_OPEN_FOLLOWED 8 /* requests followed per thread, read and not yet answered */

struct cs_ev_upstream {
	struct cs_event_header hdr;
	__u64 sk;
	__u64 start_ns;        /* the exchange began: its connect (CS_UP_CONNECT), else its first send */
	__u64 send_ns;         /* the target's first send of it */
	__u64 first_byte_ns;   /* the answer's first bytes arrived; 0: not seen */
	__u64 first_read_ns;   /* the target's first read of them; 0: never (CS_UP_UNREAD) */
	__u64 connect_ns;      /* the connection's first exchange: SYN sent -> established (SYN
	                          retransmits included); 0 for the others, or not seen */
	__u64 request_read_ns; /* open_requests 1: that request's first read; else 0 */
	__u64 sender_cpu_ns;   /* the sender's time on a CPU from start to first read (the kernel's
	                          sum_exec_runtime, a tick's precision) */
	struct cs_tuple tuple; /* the target's view: remote is the upstream */
	__u32 bytes_out;       /* bytes sent before the answer came */
	__u32 bytes_in;        /* bytes of the answer's first read */
	__u32 tgid;
	__u32 sender_tid;
	__u32 reader_tid;
	__u32 index;           /* 0: the connection's first exchange seen */
	__u16 open_requests;   /* see above */
	__u16 reads_between;   /* requests the sender began reading between start and first read (at most 0xffff) */
	__u16 syn_retransmits; /* CS_UP_CONNECT: the connect's SYN retransmits */
	__u16 flags;           /* enum cs_upstream_flags */
};

/*
 * A target's connection to a Unix stream socket (connect() in one of its
 * threads), named once, when the probes first see it in use: the path the
 * peer listens on (sun_path, path_len bytes: an abstract name begins with
 * a 0 byte). Its exchanges are cs_ev_upstream records whose tuple has
 * family AF_UNIX, no ports, and path_hash (FNV-1a 64 of the path's bytes)
 * in the first 8 bytes of remote_addr: the upstream's identity.
 */
#define CS_UNIX_PATH_LEN 108

struct cs_ev_upstream_path {
	struct cs_event_header hdr;
	__u64 sk;
	__u64 path_hash;
	__u32 tgid;
	__u16 path_len;
	__u16 pad;
	char path[CS_UNIX_PATH_LEN];
	__u32 pad2;
};

/*
 * A connection's two ends on one host: the client's address (its last 32
 * bits for IPv6), its port and the server's port, as one number, the same
 * from either end's socket. Never 0 for a TCP connection (ports are not 0).
 */
static inline __attribute__((always_inline)) __u64 cs_client_key(__u32 client_addr_low32, __u16 client_port, __u16 server_port)
{
	return ((__u64)client_addr_low32 << 32) | ((__u64)client_port << 16) | server_port;
}

/*
 * A local client (a process on this host, in a target's network namespace)
 * read answer bytes from its end of a connection to a target port:
 * hdr.ts_ns is the read. The client's part of an exchange is the wait from
 * the bytes' arrival in its socket to that read (the engine joins it to the
 * request by client_key). The reading thread's CPU and run-queue totals let
 * the engine say how busy the client's threads were, and how long they
 * waited for a CPU, between two of its reads.
 */
struct cs_ev_client_read {
	struct cs_event_header hdr;
	__u64 sk;             /* the client's socket */
	__u64 client_key;     /* cs_client_key(): the server's request records carry it */
	__u64 arrived_ns;     /* the first of the bytes it read came into its socket */
	__u64 runq_ns;        /* of arrived -> read: the reading thread runnable, not running */
	__u64 thread_cpu_ns;  /* the reading thread's CPU time so far */
	__u64 thread_runq_ns; /* ... and its run-queue time so far */
	__u32 tgid;           /* the client process */
	__u32 tid;            /* its reading thread */
	__u32 bytes;          /* this read's */
	__u16 flags;          /* enum cs_client_read_flags */
	__u16 pad;
	char comm[CS_COMM_LEN]; /* the reading thread's name, on its socket's first read; else empty
	                           (a copy of the name costs some 100 ns a read) */
};

enum cs_client_read_flags {
	CS_CLIENT_FIRST = 1 << 0,        /* its socket's first read seen: a connection to count */
	CS_CLIENT_RUNQ_UNKNOWN = 1 << 1, /* another thread read than the one the arrival looked at */
	CS_CLIENT_LEFTOVER = 1 << 2,     /* bytes its previous read left (arrived_ns is that read's
	                                    time): a read of the same answer, not a wait for one */
};

/*
 * What connscope costs: user space reads each of its BPF programs' run
 * time from the kernel (bpf_prog_info.run_time_ns and run_cnt) and its own
 * CPU time (getrusage) about once a second, and records what each grew by
 * since the last reading. Increments rather than totals, so that the
 * records of any stretch of a run (a window of a recording, the time since
 * a reset) add up to that stretch's cost.
 */
#define CS_PROG_NAME_LEN 16 /* BPF_OBJ_NAME_LEN */

struct cs_ev_prog_cost {
	struct cs_event_header hdr; /* ts_ns: the reading */
	__u64 run_ns;               /* run time added since the last reading */
	__u64 runs;                 /* runs added since the last reading */
	__u32 prog_id;              /* the kernel's id of the program (bpftool prog show) */
	__u32 pad;
	char name[CS_PROG_NAME_LEN];
};

/* enum cs_bpf_stats: whether the kernel counted the programs' run time. */
enum cs_bpf_stats {
	CS_BPF_STATS_ENABLED = 1,    /* connscope turned the counting on for its run */
	CS_BPF_STATS_ALREADY_ON = 2, /* kernel.bpf_stats_enabled was 1: left as it was */
	CS_BPF_STATS_OFF = 3,        /* turned off by the user (--no-bpf-stats) */
	CS_BPF_STATS_FAILED = 4,     /* the kernel refused to turn it on (error: errno) */
	/*
	 * Sampled (the default): connscope holds the counting on for some
	 * readings' spans and not others, since it costs every BPF run on the
	 * machine two clock reads. Each reading says which its span was.
	 */
	CS_BPF_STATS_SAMPLED_ON = 5,     /* held on over this reading's span, one of those sampled */
	CS_BPF_STATS_SAMPLED_OFF = 6,    /* left off over it, and nothing was counted */
	CS_BPF_STATS_SAMPLED_WINDOW = 7, /* held on over a tracing window's span: every one is */
};

struct cs_ev_self_cost {
	struct cs_event_header hdr; /* ts_ns: the reading */
	__u64 user_ns;              /* connscope's user CPU time since the last reading */
	__u64 system_ns;            /* its system CPU time since the last reading */
	__u64 wall_ns;              /* the time since the last reading (or the run's start) */
	__u32 bpf_stats;            /* enum cs_bpf_stats */
	__s32 error;                /* CS_BPF_STATS_FAILED: the errno, else 0 */
};

/*
 * Target ports are a bitmap of 64-bit words (map target_ports): port's
 * bit is cs_port_bit(port) of word cs_port_word(port). The probes test it
 * and user space writes it, both through these.
 */
#define CS_PORT_WORD_BITS 64
#define CS_PORT_WORDS (65536 / CS_PORT_WORD_BITS)

static inline __attribute__((always_inline)) __u32 cs_port_word(__u16 port)
{
	return port / CS_PORT_WORD_BITS;
}

static inline __attribute__((always_inline)) __u64 cs_port_bit(__u16 port)
{
	return 1ull << (port % CS_PORT_WORD_BITS);
}

/*
 * A target endpoint's key (map target_endpoints): the network namespace's
 * inode number above the 16-bit port.
 */
#define CS_ENDPOINT_PORT_BITS 16
#define CS_ENDPOINTS_MAX 1024 /* entries of target_endpoints */

static inline __attribute__((always_inline)) __u64 cs_endpoint_key(__u32 netns_ino, __u16 port)
{
	return (__u64)netns_ino << CS_ENDPOINT_PORT_BITS | port;
}

/* The ring buffer (map events): its size, MiB (--ring-mb), and its wake-up mark until --ring-mb sets a 32nd. */
#define CS_RING_MB_DEFAULT 8
#define CS_WAKEUP_BYTES_DEFAULT (256u << 10)

/* Target processes (map target_tgids, shared by the stack probes' object). */
#define CS_TARGET_TGIDS_MAX 4096

/*
 * The probes' first test of a process (the global target_tgid_bits): the
 * bit of tgid modulo 64 * CS_TGID_WORDS, set for every target by user
 * space and by the fork probe, never cleared (a stale or shared bit costs
 * one lookup in target_tgids, which decides).
 */
#define CS_TGID_WORDS 4096

static inline __attribute__((always_inline)) __u32 cs_tgid_word(__u32 tgid)
{
	return (tgid / 64) % CS_TGID_WORDS;
}

static inline __attribute__((always_inline)) __u64 cs_tgid_bit(__u32 tgid)
{
	return 1ull << (tgid % 64);
}

/* The listening sockets of one endpoint the gate below looks at; more: no gate. */
#define CS_ENDPOINT_LISTENERS 8

/*
 * A target endpoint's entry (map target_endpoints; user space creates it
 * zeroed). Following a local client's handshake costs two socket-storage
 * and hash updates a connection; it can only find a delay while the
 * endpoint's accept queue is filling, so the probes follow one only then:
 * a listener at least half full at the client's SYN, or a drop or a SYN
 * retransmit to the endpoint in the last CS_PRESSURE_HOLD_NS.
 */
struct cs_endpoint_state {
	__u64 listener_sk[CS_ENDPOINT_LISTENERS]; /* its listeners, as the latest walk found them */
	__u64 pressure_until_ns;                  /* a drop or SYN retransmit was seen: follow every handshake until then */
	__u32 walk;                               /* the walk (listener_walk) that filled listener_sk */
	__u32 listeners;                          /* listeners that walk found; 0: not walked yet (follow every one) */
};

#define CS_PRESSURE_HOLD_NS (3ull * 1000 * 1000 * 1000) /* past a SYN's second retransmit */

/*
 * What the iter/task walk writes per target thread (read by user space,
 * which turns it into CS_EV_THREAD_SAMPLE records; not a ring record). The
 * run-queue figures are the kernel's own (struct sched_info), since the
 * thread started: user space takes the difference from the first sample.
 */
struct cs_thread_sched_sample {
	__u64 run_delay_ns;     /* time runnable but not running, in all */
	__u64 max_run_delay_ns; /* the longest single wait, thread lifetime */
	__u64 run_count;        /* times it got a CPU (each after a wait) */
	__u64 start_ns;         /* when the thread started (CLOCK_MONOTONIC) */
	__u64 cpu_ns;           /* se.sum_exec_runtime: time on a CPU, in all */
	__u32 tid;
	__u32 tgid;
	char comm[CS_COMM_LEN];
	__u64 ready_polls; /* the thread's struct cs_ev_thread_polls totals */
	__u64 reads_own;
	__u64 reads_handed;
	__u64 handed_out;
	__u64 reads_blocking;
};

/* Index of the per-CPU counters the probes keep beside the ring buffer. */
enum cs_counter {
	CS_CTR_LOST = 0,            /* records that could not be reserved */
	CS_CTR_ACCEPT_UNMATCHED,    /* accepts of sockets without TCP's stamp of their establishment */
	CS_CTR_TABLE_FULL,          /* in-kernel tables full: entries not stored */
	CS_CTR_SOCKET_STORAGE,      /* socket storage could not be created (reported in table_full) */
	CS_CTR_CLOSE_LATE,          /* closes seen at a later state change: the exit's probe run was skipped */
	CS_CTR_WINDOW_CUT,          /* requests in progress when a tracing window closed: dropped */
	CS_CTR_HANDSHAKES_FOLLOWED, /* local clients' handshakes followed (cs_endpoint_state) */
	CS_CTR_UPSTREAMS_FOLLOWED,  /* connections a target opened (connect), followed as upstreams */
	CS_CTR_UPSTREAM_CUT,        /* upstream exchanges in progress when a tracing window closed: dropped */
	CS_CTR_MAX,
};


/*
 * ==== Stacks: `connscope flamegraph` (bpf/stacks.bpf.c, its own object and
 * ring buffer). These records never enter the engine or a trace file: their
 * type tags live apart from enum cs_event_type and do not change the wire
 * version above.
 */

#define CS_STACK_DEPTH 64 /* frames kept per stack, kernel and user each */

enum cs_stack_event_type {
	CS_EV_CPU_SAMPLE = 0x100, /* a target thread was on a CPU at a sampling tick */
	CS_EV_OFF_CPU = 0x101,    /* a target thread was off its CPU this long */
	CS_EV_USER_STACK = 0x102, /* a copy of a target thread's user stack, taken as it left its CPU */
};

/*
 * A copy of the user stack goes with the user registers, for user space to
 * unwind with the mapped files' CFI (.eh_frame), as perf --call-graph dwarf
 * does: code built without frame pointers (Debian's glibc, python3, libjvm)
 * breaks the frame-pointer walk at its first frame. The copy runs from the
 * user stack pointer up, at most this many bytes (a multiple of
 * CS_USER_STACK_CHUNK_BYTES); it is read a chunk at a time and ends at the
 * first chunk that cannot be read, so a stack near the top of its mapping
 * keeps what lies below the end. A record that carries a copy is reserved
 * in the ring with room for a whole one: its hdr.size says how much of it
 * is the record, and the ring's record may be longer.
 */
#define CS_USER_STACK_BYTES 16384
#define CS_USER_STACK_CHUNK_BYTES 4096

/*
 * Return addresses, leaf first, as bpf_get_stack() writes them (the kernel
 * stack, and the user stack walked by frame pointer), and the user
 * registers at the thread's last entry to the kernel.
 */
struct cs_stack {
	__u32 kernel_frames; /* valid entries of kernel_ips */
	__u32 user_frames;   /* valid entries of user_ips */
	__u64 kernel_ips[CS_STACK_DEPTH];
	__u64 user_ips[CS_STACK_DEPTH];
	__u64 user_ip;
	__u64 user_sp; /* 0: no user registers (a kernel thread) */
	__u64 user_bp;
	/*
	 * The copy of this user stack. A sample's follows it (up to
	 * hdr.size). An interval's was sent as it began, in the thread's
	 * CS_EV_USER_STACK record whose hdr.ts_ns this is: a thread that
	 * leaves its CPU from where it left it last time keeps its copy, and
	 * one record serves all its intervals from there. 0: no copy.
	 */
	__u64 user_stack_ns;
};

/*
 * A copy of a thread's user stack, taken at a switch-out where its stack
 * had moved (hdr.ts_ns: when, its name in the thread's intervals), the
 * registers it starts from, then hdr.size - sizeof(struct cs_ev_user_stack)
 * bytes of stack from sp up.
 */
struct cs_ev_user_stack {
	struct cs_event_header hdr;
	__u64 ip;
	__u64 sp;
	__u64 bp;
	__u32 tid;
	__u32 tgid;
};

/* An on-CPU sample. hdr.ts_ns is the sampling tick. */
struct cs_ev_cpu_sample {
	struct cs_event_header hdr;
	__u32 tid;
	__u32 tgid;
	struct cs_stack stack; /* then its copy: hdr.size - sizeof(struct cs_ev_cpu_sample) bytes */
};

/*
 * A target thread's time off its CPU: switched out at off_ns, woken at
 * wake_ns (== off_ns when it was preempted, still runnable), switched back
 * in at hdr.ts_ns. [off_ns, wake_ns) it was blocked, [wake_ns, hdr.ts_ns)
 * it waited for a CPU. stack: where it was switched out (user frames and
 * registers, the copy named) and where it slept (kernel frames).
 */
struct cs_ev_off_cpu {
	struct cs_event_header hdr;
	__u64 off_ns;
	__u64 wake_ns; /* 0: the wake-up was not seen (count it blocked) */
	__u32 tid;
	__u32 tgid;
	struct cs_stack stack;
};

/* Per-CPU counters of the stacks object. */
enum cs_stack_counter {
	CS_STK_SAMPLES = 0,       /* on-CPU samples of target threads sent */
	CS_STK_SAMPLES_LOST,      /* ... that could not be reserved in the ring */
	CS_STK_OFF_CPU,           /* off-CPU intervals sent */
	CS_STK_OFF_CPU_LOST,      /* ... that could not be reserved */
	CS_STK_OFF_CPU_SHORT,     /* intervals under the threshold: counted only */
	CS_STK_OFF_CPU_SHORT_NS,  /* their total time */
	CS_STK_USER_STACK_ERRORS, /* user stacks that could not be read */
	CS_STK_THREADS_FULL,      /* per-thread table full: a switch-out not followed */
	CS_STK_USER_STACK_REUSED, /* switch-outs whose user stack had not moved: not walked */
	CS_STK_USER_COPY_ERRORS,  /* user stacks whose copy could not be read at all */
	CS_STK_USER_COPY_BYTES,   /* bytes of user stack copied */
	CS_STK_USER_COPIES,       /* user stacks copied */
	CS_STK_USER_COPIES_LOST,  /* switch-outs' copies that could not be reserved in the ring */
	CS_STK_CTR_MAX,
};

#ifndef __BPF__
_Static_assert(sizeof(struct cs_event_header) == 16, "wire: header size");
_Static_assert(sizeof(struct cs_tuple) == 40, "wire: tuple size");
_Static_assert(sizeof(struct cs_ev_accept) == 136, "wire: accept size");
_Static_assert(sizeof(struct cs_ev_listener_sample) == 56, "wire: listener size");
_Static_assert(sizeof(struct cs_endpoint_state) == 8 * CS_ENDPOINT_LISTENERS + 16, "map: endpoint size");
_Static_assert(sizeof(struct cs_ev_handshake) == 112, "wire: handshake size");
_Static_assert(sizeof(struct cs_ev_proc) == 40, "wire: proc size");
_Static_assert(sizeof(struct cs_ev_request) == 160, "wire: request size");
_Static_assert(__builtin_offsetof(struct cs_ev_request, turn_runq_ns) == CS_EV_REQUEST_V18_SIZE, "wire: v18 request");
_Static_assert(__builtin_offsetof(struct cs_ev_request, handler_cpu_ns) == CS_EV_REQUEST_V17_SIZE, "wire: v17 request");
_Static_assert(__builtin_offsetof(struct cs_ev_request, client_key) == CS_EV_REQUEST_V16_SIZE, "wire: v16 request");
_Static_assert(sizeof(struct cs_ev_client_read) == 96, "wire: client read size");
_Static_assert(sizeof(struct cs_ev_upstream_path) == 152, "wire: upstream path size");
_Static_assert(__builtin_offsetof(struct cs_ev_request, loop_turned_ns) == CS_EV_REQUEST_V15_SIZE, "wire: v15 request");
_Static_assert(sizeof(struct cs_ev_request_bytes) == 96, "wire: request bytes size");
_Static_assert(sizeof(struct cs_ev_client_hello) == 32 + CS_HELLO_LEN, "wire: client hello size");
_Static_assert(sizeof(struct cs_ev_server_hello) == 32 + CS_SERVER_HELLO_LEN, "wire: server hello size");
_Static_assert(sizeof(struct cs_ev_conn_close) == 112, "wire: conn close size");
_Static_assert(__builtin_offsetof(struct cs_ev_conn_close, closer_runq_ns) == CS_EV_CONN_CLOSE_V8_SIZE, "wire: v8 close");
_Static_assert(__builtin_offsetof(struct cs_ev_conn_close, closer_tid) == CS_EV_CONN_CLOSE_V13_SIZE, "wire: v13 close");
_Static_assert(sizeof(struct cs_ev_reset) == 72, "wire: reset size");
_Static_assert(sizeof(struct cs_ev_thread_sample) == 64, "wire: thread sample size");
_Static_assert(sizeof(struct cs_ev_ack_overflow) == 56, "wire: ack overflow size");
_Static_assert(sizeof(struct cs_stack) == 40 + 16 * CS_STACK_DEPTH, "wire: stack size");
_Static_assert(sizeof(struct cs_ev_user_stack) == 48, "wire: user stack size");
_Static_assert(CS_USER_STACK_BYTES % CS_USER_STACK_CHUNK_BYTES == 0, "wire: whole chunks");
_Static_assert(sizeof(struct cs_ev_cpu_sample) + CS_USER_STACK_BYTES <= 0xffff, "wire: a record's size fits hdr.size");
_Static_assert(sizeof(struct cs_ev_cpu_sample) == 24 + sizeof(struct cs_stack), "wire: cpu sample size");
_Static_assert(sizeof(struct cs_ev_off_cpu) == 40 + sizeof(struct cs_stack), "wire: off-cpu size");
_Static_assert(sizeof(struct cs_ev_thread_cpu) == 32, "wire: thread cpu size");
_Static_assert(sizeof(struct cs_ev_thread_polls) == 64, "wire: thread polls size");
_Static_assert(sizeof(struct cs_ev_thread_name) == 88, "wire: thread name size");
_Static_assert(sizeof(struct cs_ev_runtime_pause) == 120, "wire: runtime pause size");
_Static_assert(__builtin_offsetof(struct cs_ev_runtime_pause, vm_runq_ns) == CS_EV_RUNTIME_PAUSE_V19_SIZE,
	       "wire: v19 runtime pause");
_Static_assert(sizeof(struct cs_ev_handback) == 56, "wire: request hand-back size");
_Static_assert(sizeof(struct cs_ev_prog_cost) == 56, "wire: prog cost size");
_Static_assert(sizeof(struct cs_ev_self_cost) == 48, "wire: self cost size");
_Static_assert(sizeof(struct cs_ev_upstream) == 152, "wire: upstream size");
_Static_assert(sizeof(struct cs_thread_sched_sample) == 104, "iter: thread sample size");
#endif

#endif /* CONNSCOPE_WIRE_H */
