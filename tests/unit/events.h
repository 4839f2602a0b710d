/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Synthetic wire records for the engine tests: each make_*() builds one
 * record exactly as the probes lay it out (bpf/connscope.h), each feed_*()
 * also hands it to the engine and asserts that the engine took it.
 *
 * Specs are passed as compound literals with designated initialisers, so a
 * test names only the fields it cares about:
 *
 *   feed_accept(eng, (struct accept_spec){ .port = 8080, .tid = 7,
 *                                          .established_ns = 100, .ts_ns = 350 });
 */
#ifndef CS_TEST_EVENTS_H
#define CS_TEST_EVENTS_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "connscope.h"
#include "engine.h"

#define US (1000ull)
#define MS (1000ull * US)
#define SEC (1000ull * MS)

/*
 * At a test file's top level: `engine`, a fresh engine for each test of
 * the suites that take setup and teardown (TestSuite(name, .init = setup,
 * .fini = teardown)).
 */
#define CS_ENGINE_FIXTURE                                 \
	static struct cs_engine *engine;                  \
	static void setup(void)                           \
	{                                                 \
		engine = cs_engine_new();                 \
		cr_assert_not_null(engine);               \
	}                                                 \
	static void teardown(void)                        \
	{                                                 \
		cs_engine_free(engine);                   \
	}

/* The listening socket cookie a test uses unless it names one. */
static inline uint64_t default_listener_sk(uint16_t port)
{
	return 0xffff888000000000ull | port;
}

static inline struct cs_event_header make_header(uint16_t type, uint16_t size, uint64_t ts_ns)
{
	return (struct cs_event_header){ .ts_ns = ts_ns, .type = type, .size = size, .cpu = 1 };
}

struct accept_spec {
	uint64_t ts_ns;          /* accept() returned */
	uint64_t established_ns; /* 0: not seen entering the queue */
	uint64_t enter_ns;       /* 0: same as ts_ns */
	uint64_t listener_sk;    /* 0: default_listener_sk(port) */
	uint16_t port;
	uint32_t tgid, tid;
	int32_t ret;             /* 0: a successful accept (fd 5) */
	uint32_t backlog, backlog_limit, drops;
	const char *comm;        /* NULL: "worker" */
};

static inline struct cs_ev_accept make_accept(struct accept_spec s)
{
	struct cs_ev_accept ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(CS_EV_ACCEPT, sizeof(ev), s.ts_ns);
	ev.listener_sk = s.listener_sk ? s.listener_sk : default_listener_sk(s.port);
	ev.established_ns = s.established_ns;
	ev.enter_ns = s.enter_ns ? s.enter_ns : s.ts_ns;
	ev.ret = s.ret ? s.ret : 5;
	ev.sk = ev.ret >= 0 ? 0xffff999000000000ull + s.ts_ns : 0;
	ev.tgid = s.tgid;
	ev.tid = s.tid;
	ev.backlog = s.backlog;
	ev.backlog_limit = s.backlog_limit;
	ev.listener_drops = s.drops;
	ev.listener_port = s.port;
	ev.tuple.local_port = s.port;
	ev.tuple.remote_port = 40000;
	ev.tuple.family = AF_INET;
	strncpy(ev.comm, s.comm ? s.comm : "worker", sizeof(ev.comm) - 1);
	return ev;
}

struct sample_spec {
	uint64_t ts_ns;
	uint64_t sk;             /* 0: default_listener_sk(port) */
	uint16_t port;
	uint32_t backlog, backlog_limit, drops, syn_queue;
};

static inline struct cs_ev_listener_sample make_sample(struct sample_spec s)
{
	struct cs_ev_listener_sample ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(CS_EV_LISTENER_SAMPLE, sizeof(ev), s.ts_ns);
	ev.sk = s.sk ? s.sk : default_listener_sk(s.port);
	ev.inode = 4242;
	ev.backlog = s.backlog;
	ev.backlog_limit = s.backlog_limit;
	ev.syn_queue = s.syn_queue;
	ev.drops = s.drops;
	ev.port = s.port;
	ev.family = AF_INET6;
	return ev;
}

struct handshake_spec {
	uint64_t ts_ns;          /* the handshake ended */
	uint16_t port;           /* the target port (the listener's) */
	uint64_t syn_sent_ns, last_syn_ns;
	uint32_t retransmits;
	bool gave_up;            /* false: the connection got in */
};

static inline struct cs_ev_handshake make_handshake(struct handshake_spec s)
{
	struct cs_ev_handshake ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(CS_EV_HANDSHAKE, sizeof(ev), s.ts_ns);
	ev.sk = 0xffff777000000000ull + s.ts_ns;
	ev.syn_sent_ns = s.syn_sent_ns;
	ev.last_syn_ns = s.last_syn_ns;
	/* Handshake records are in the server's view, their delay worked out. */
	ev.client_established_ns = s.gave_up ? 0 : s.last_syn_ns;
	ev.extra_ns = s.gave_up ? 0 : s.last_syn_ns - s.syn_sent_ns;
	ev.tuple.local_port = s.port;
	ev.tuple.remote_port = 51000;
	ev.tuple.family = AF_INET;
	ev.syn_retransmits = s.retransmits ? s.retransmits : 1;
	ev.tgid = 999;
	ev.established = !s.gave_up;
	return ev;
}

static inline struct cs_ev_proc make_proc(uint16_t type, uint64_t ts_ns, uint32_t pid)
{
	struct cs_ev_proc ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(type, sizeof(ev), ts_ns);
	ev.pid = pid;
	ev.parent_pid = type == CS_EV_PROC_FORK ? 1 : 0;
	strncpy(ev.comm, "target", sizeof(ev.comm) - 1);
	return ev;
}

/* Feed a record that must be accepted. */
#define FEED_OK(engine, ev)                                                                   \
	do {                                                                                  \
		__typeof__(ev) feed_ok_ev_ = (ev);                                            \
		int feed_ok_err_ = cs_engine_feed((engine), &feed_ok_ev_, sizeof(feed_ok_ev_)); \
		cr_assert_eq(feed_ok_err_, 0, "cs_engine_feed: %d", feed_ok_err_);            \
	} while (0)

static inline void feed_accept(struct cs_engine *engine, struct accept_spec s)
{
	FEED_OK(engine, make_accept(s));
}

static inline void feed_sample(struct cs_engine *engine, struct sample_spec s)
{
	FEED_OK(engine, make_sample(s));
}

static inline void feed_handshake(struct cs_engine *engine, struct handshake_spec s)
{
	FEED_OK(engine, make_handshake(s));
}

/* n successful accepts by one thread, each having waited wait_ns in the queue. */
static inline void feed_accepts(struct cs_engine *engine, uint16_t port, uint32_t tid, uint64_t n,
				uint64_t wait_ns, uint64_t *clock_ns)
{
	for (uint64_t i = 0; i < n; i++) {
		*clock_ns += 10 * US;
		feed_accept(engine, (struct accept_spec){ .port = port, .tgid = 100, .tid = tid,
							  .established_ns = *clock_ns - wait_ns,
							  .ts_ns = *clock_ns, .backlog_limit = 128 });
	}
}

/* n accept() calls by one thread that returned -EAGAIN. */
static inline void feed_eagains(struct cs_engine *engine, uint16_t port, uint32_t tid, uint64_t n,
				uint64_t *clock_ns)
{
	for (uint64_t i = 0; i < n; i++) {
		*clock_ns += 10 * US;
		feed_accept(engine, (struct accept_spec){ .port = port, .tgid = 100, .tid = tid,
							  .ret = -EAGAIN, .ts_ns = *clock_ns,
							  .backlog_limit = 128 });
	}
}

/* n periodic samples of a listener with the given depth and drop counter. */
static inline void feed_samples(struct cs_engine *engine, uint16_t port, uint64_t n,
				uint32_t backlog, uint32_t limit, uint32_t drops, uint64_t *clock_ns)
{
	for (uint64_t i = 0; i < n; i++) {
		*clock_ns += 10 * MS;
		feed_sample(engine, (struct sample_spec){ .port = port, .backlog = backlog,
							  .backlog_limit = limit, .drops = drops,
							  .ts_ns = *clock_ns });
	}
}

/* ---- requests, connection ends, resets, thread samples ------------------- */

/* addr = ::ffff:a.b.c.d, ipv4 given as 0xAABBCCDD (10.0.0.2 = 0x0a000002). */
static inline void set_ipv4(uint8_t addr[16], uint32_t ipv4)
{
	memset(addr, 0, 16);
	addr[10] = 0xff;
	addr[11] = 0xff;
	addr[12] = (uint8_t)(ipv4 >> 24);
	addr[13] = (uint8_t)(ipv4 >> 16);
	addr[14] = (uint8_t)(ipv4 >> 8);
	addr[15] = (uint8_t)ipv4;
}

/* The server's 4-tuple for a client at ipv4:port connected to the server's port. */
static inline struct cs_tuple server_tuple(uint16_t port, uint32_t client_ipv4, uint16_t client_port)
{
	struct cs_tuple t;
	memset(&t, 0, sizeof(t));
	set_ipv4(t.local_addr, 0x0a000001);
	set_ipv4(t.remote_addr, client_ipv4);
	t.local_port = port;
	t.remote_port = client_port;
	t.family = AF_INET;
	return t;
}

/* An accept of socket sk from a named client (make_accept() picks sk and client itself). */
static inline struct cs_ev_accept make_accept_of(struct accept_spec s, uint64_t sk, uint32_t client_ipv4,
						uint16_t client_port)
{
	struct cs_ev_accept ev = make_accept(s);
	ev.sk = sk;
	ev.tuple = server_tuple(s.port, client_ipv4, client_port);
	return ev;
}

/*
 * A local client's slow connect to the target port, as the kernel reports it
 * once joined with the server's side: the server's view of the tuple, and
 * extra_ns, the connect delay beyond one round trip.
 */
static inline struct cs_ev_handshake make_slow_handshake(struct handshake_spec s, uint64_t extra_ns,
							 uint32_t client_ipv4, uint16_t client_port)
{
	struct cs_ev_handshake ev = make_handshake(s);
	ev.tuple = server_tuple(s.port, client_ipv4, client_port);
	ev.extra_ns = s.gave_up ? 0 : extra_ns;
	ev.client_established_ns = s.gave_up ? 0 : s.ts_ns;
	return ev;
}

struct request_spec {
	uint64_t sk;
	uint64_t ts_ns;          /* 0: the request's end (latest of its phase times) */
	uint64_t start_ns, first_read_ns, first_send_ns, last_send_ns, drain_end_ns;
	uint64_t pickup_runq_ns, handler_runq_ns, drain_runq_ns;
	uint64_t handshake_extra_ns;
	uint64_t loop_turned_ns;
	uint64_t client_key;     /* its client's reads carry the same (cs_client_key) */
	uint64_t handler_cpu_ns; /* with CS_REQ_HANDLER_CPU in flags */
	uint64_t turn_runq_ns;   /* with CS_REQ_TURN_RUNQ in flags */
	uint32_t index;
	uint32_t tgid, reader_tid, sender_tid; /* 0: 100, 7, reader_tid */
	uint32_t bytes_in, bytes_out, send_eagain;
	uint16_t port;
	uint16_t flags;
};

static inline struct cs_ev_request make_request(struct request_spec s)
{
	struct cs_ev_request ev;
	memset(&ev, 0, sizeof(ev));
	uint64_t end = s.ts_ns;
	const uint64_t times[] = { s.start_ns, s.first_read_ns, s.first_send_ns, s.last_send_ns, s.drain_end_ns };
	for (size_t i = 0; !s.ts_ns && i < sizeof(times) / sizeof(times[0]); i++)
		end = times[i] > end ? times[i] : end;
	ev.hdr = make_header(CS_EV_REQUEST, sizeof(ev), end);
	ev.sk = s.sk;
	ev.start_ns = s.start_ns;
	ev.first_read_ns = s.first_read_ns;
	ev.first_send_ns = s.first_send_ns;
	ev.last_send_ns = s.last_send_ns;
	ev.drain_end_ns = s.drain_end_ns;
	ev.pickup_runq_ns = s.pickup_runq_ns;
	ev.handler_runq_ns = s.handler_runq_ns;
	ev.drain_runq_ns = s.drain_runq_ns;
	ev.handshake_extra_ns = s.handshake_extra_ns;
	ev.loop_turned_ns = s.loop_turned_ns;
	ev.client_key = s.client_key;
	ev.handler_cpu_ns = s.handler_cpu_ns;
	ev.turn_runq_ns = s.turn_runq_ns;
	ev.bytes_in = s.bytes_in;
	ev.bytes_out = s.bytes_out;
	ev.tgid = s.tgid ? s.tgid : 100;
	ev.reader_tid = s.reader_tid ? s.reader_tid : 7;
	ev.sender_tid = s.sender_tid ? s.sender_tid : ev.reader_tid;
	ev.index = s.index;
	ev.send_eagain = s.send_eagain;
	ev.listener_port = s.port;
	ev.flags = s.flags;
	return ev;
}

static inline void feed_request(struct cs_engine *engine, struct request_spec s)
{
	FEED_OK(engine, make_request(s));
}

/* A local client's read of an answer: at read_ns, of bytes that came at arrived_ns. */
struct client_read_spec {
	uint64_t client_key;
	uint64_t arrived_ns, read_ns, runq_ns;
	uint64_t thread_cpu_ns, thread_runq_ns;
	uint32_t tgid, tid; /* 0: 300, 301 */
	uint16_t flags;
	const char *comm;   /* NULL: "wrk" */
};

static inline struct cs_ev_client_read make_client_read(struct client_read_spec s)
{
	struct cs_ev_client_read ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(CS_EV_CLIENT_READ, sizeof(ev), s.read_ns);
	ev.sk = 0xffff888700000000ull + (s.client_key & 0xffff);
	ev.client_key = s.client_key;
	ev.arrived_ns = s.arrived_ns;
	ev.runq_ns = s.runq_ns;
	ev.thread_cpu_ns = s.thread_cpu_ns;
	ev.thread_runq_ns = s.thread_runq_ns;
	ev.tgid = s.tgid ? s.tgid : 300;
	ev.tid = s.tid ? s.tid : 301;
	ev.bytes = 100;
	ev.flags = s.flags;
	strncpy(ev.comm, s.comm ? s.comm : "wrk", sizeof(ev.comm) - 1);
	return ev;
}

/*
 * An exchange on an upstream connection (127.0.0.2:port by default). The
 * answer's first byte came at first_byte_ns, read at first_read_ns (the
 * record's time); open: the requests its sender had open over it (1:
 * request_read_ns is the one).
 */
struct upstream_spec {
	uint64_t sk;                /* 0: a cookie of the port */
	uint64_t start_ns, send_ns; /* start 0: send_ns */
	uint64_t first_byte_ns, first_read_ns;
	uint64_t connect_ns;        /* with CS_UP_CONNECT: the connect, from start_ns */
	uint64_t request_read_ns;
	uint64_t sender_cpu_ns;
	uint32_t upstream_ipv4;     /* 0: 127.0.0.2 */
	uint16_t port;              /* 0: 9000 */
	uint16_t open, reads_between, syn_retransmits, flags;
	uint32_t tid;               /* 0: 7, sender and reader */
	uint32_t index;
	uint64_t unix_hash;         /* not 0: a Unix socket's, its path's hash (no address, no port) */
};

static inline struct cs_ev_upstream make_upstream(struct upstream_spec s)
{
	struct cs_ev_upstream ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(CS_EV_UPSTREAM, sizeof(ev), s.first_read_ns);
	uint16_t port = s.port ? s.port : 9000;
	ev.sk = s.sk ? s.sk : 0xffff777000000000ull + port;
	ev.start_ns = s.start_ns ? s.start_ns : s.send_ns;
	ev.send_ns = s.send_ns;
	ev.first_byte_ns = s.first_byte_ns;
	ev.first_read_ns = s.first_read_ns;
	ev.connect_ns = s.connect_ns;
	ev.request_read_ns = s.open == 1 ? s.request_read_ns : 0;
	ev.sender_cpu_ns = s.sender_cpu_ns;
	set_ipv4(ev.tuple.local_addr, 0x7f000001);
	set_ipv4(ev.tuple.remote_addr, s.upstream_ipv4 ? s.upstream_ipv4 : 0x7f000002);
	ev.tuple.local_port = 45000;
	ev.tuple.remote_port = port;
	ev.tuple.family = AF_INET;
	if (s.unix_hash) {
		memset(&ev.tuple, 0, sizeof(ev.tuple));
		ev.tuple.family = AF_UNIX;
		memcpy(ev.tuple.remote_addr, &s.unix_hash, sizeof(s.unix_hash));
	}
	ev.tgid = 100;
	ev.sender_tid = ev.reader_tid = s.tid ? s.tid : 7;
	ev.index = s.index;
	ev.open_requests = s.open;
	ev.reads_between = s.reads_between;
	ev.syn_retransmits = s.syn_retransmits;
	ev.flags = s.flags;
	return ev;
}

/* A Unix upstream's path record (path_len bytes of path: an abstract name's first is 0). */
static inline struct cs_ev_upstream_path make_upstream_path(uint64_t sk, uint64_t hash, const char *path,
							    size_t path_len, uint64_t ts_ns)
{
	struct cs_ev_upstream_path ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(CS_EV_UPSTREAM_PATH, sizeof(ev), ts_ns);
	ev.sk = sk;
	ev.path_hash = hash;
	ev.tgid = 100;
	ev.path_len = (uint16_t)path_len;
	memcpy(ev.path, path, path_len);
	return ev;
}

static inline void feed_upstream(struct cs_engine *engine, struct upstream_spec s)
{
	FEED_OK(engine, make_upstream(s));
}

struct close_spec {
	uint64_t sk;
	uint64_t ts_ns;            /* left ESTABLISHED */
	uint64_t established_ns;
	uint64_t last_activity_ns;
	uint32_t requests;
	uint32_t client_ipv4;      /* 0: 10.0.0.2 */
	uint16_t client_port;      /* 0: 40000 */
	uint16_t port;
	uint8_t closed_by;         /* enum cs_closer */
	uint8_t partial;
	uint32_t flags;            /* enum cs_close_flags */
	uint64_t closer_runq_ns;
	uint32_t closer_tid; /* 0: not known */
};

/* A request-bytes record with nothing read in it yet: first bytes and TLS records are the caller's. */
static inline struct cs_ev_request_bytes make_request_bytes(uint64_t sk, uint32_t index, uint16_t port, uint64_t ts_ns,
							    uint8_t flags)
{
	struct cs_ev_request_bytes bytes;
	memset(&bytes, 0, sizeof(bytes));
	bytes.hdr = make_header(CS_EV_REQUEST_BYTES, sizeof(bytes), ts_ns);
	bytes.sk = sk;
	bytes.index = index;
	bytes.listener_port = port;
	bytes.flags = flags;
	return bytes;
}

/* A ClientHello record: len bytes copied of a hello record_len long (its body, from the handshake type on). */
static inline struct cs_ev_client_hello make_client_hello(uint64_t sk, uint16_t port, uint64_t ts_ns,
							  const uint8_t *hello, size_t record_len, size_t len)
{
	struct cs_ev_client_hello ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(CS_EV_CLIENT_HELLO, sizeof(ev), ts_ns);
	ev.sk = sk;
	ev.record_len = (uint32_t)record_len;
	ev.captured_len = (uint16_t)len;
	ev.listener_port = port;
	memcpy(ev.hello, hello, len);
	return ev;
}

static inline struct cs_ev_conn_close make_conn_close(struct close_spec s)
{
	struct cs_ev_conn_close ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(CS_EV_CONN_CLOSE, sizeof(ev), s.ts_ns);
	ev.sk = s.sk;
	ev.established_ns = s.established_ns;
	ev.last_activity_ns = s.last_activity_ns;
	ev.tuple = server_tuple(s.port, s.client_ipv4 ? s.client_ipv4 : 0x0a000002,
				s.client_port ? s.client_port : 40000);
	ev.requests = s.requests;
	ev.tgid = 100;
	ev.listener_port = s.port;
	ev.closed_by = s.closed_by;
	ev.partial = s.partial;
	ev.flags = s.flags;
	ev.closer_runq_ns = s.closer_runq_ns;
	ev.closer_tid = s.closer_tid;
	return ev;
}

static inline void feed_conn_close(struct cs_engine *engine, struct close_spec s)
{
	FEED_OK(engine, make_conn_close(s));
}

static inline struct cs_ev_reset make_reset(uint64_t ts_ns, uint16_t port, uint8_t direction, uint32_t reason)
{
	struct cs_ev_reset ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(CS_EV_RESET, sizeof(ev), ts_ns);
	ev.sk = 0xffff555000000000ull + ts_ns;
	ev.tuple = server_tuple(port, 0x0a000002, 40000);
	ev.reason = reason;
	ev.direction = direction;
	return ev;
}

static inline struct cs_ev_thread_sample make_thread_sample(uint64_t ts_ns, uint32_t tid, const char *comm,
							    uint64_t runq_total_ns, uint64_t runq_max_ns,
							    uint64_t runq_waits)
{
	struct cs_ev_thread_sample ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(CS_EV_THREAD_SAMPLE, sizeof(ev), ts_ns);
	ev.runq_total_ns = runq_total_ns;
	ev.runq_max_ns = runq_max_ns;
	ev.runq_waits = runq_waits;
	ev.tid = tid;
	ev.tgid = 100;
	strncpy(ev.comm, comm, sizeof(ev.comm) - 1);
	return ev;
}

/* A thread's epoll-path totals since attach (tgid 100). */
static inline struct cs_ev_thread_polls make_thread_polls(uint64_t ts_ns, uint32_t tid, uint64_t ready_polls,
							  uint64_t reads_own, uint64_t reads_handed,
							  uint64_t handed_out, uint64_t reads_blocking)
{
	struct cs_ev_thread_polls ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(CS_EV_THREAD_POLLS, sizeof(ev), ts_ns);
	ev.ready_polls = ready_polls;
	ev.reads_own = reads_own;
	ev.reads_handed = reads_handed;
	ev.handed_out = handed_out;
	ev.reads_blocking = reads_blocking;
	ev.tid = tid;
	ev.tgid = 100;
	return ev;
}

/* A parked request's hand-back (tgid 100): its worker ran it [handler_start_ns, handler_end_ns). */
static inline struct cs_ev_handback make_handback(uint64_t sk, uint64_t start_ns, uint64_t handler_start_ns,
							  uint64_t handler_end_ns, uint32_t worker_tid)
{
	struct cs_ev_handback ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(CS_EV_HANDBACK, sizeof(ev), handler_end_ns);
	ev.sk = sk;
	ev.start_ns = start_ns;
	ev.handler_start_ns = handler_start_ns;
	ev.handler_end_ns = handler_end_ns;
	ev.worker_tid = worker_tid;
	ev.tgid = 100;
	return ev;
}

static inline struct cs_ev_ack_overflow make_ack_overflow(uint64_t ts_ns, uint16_t port)
{
	struct cs_ev_ack_overflow ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(CS_EV_ACK_OVERFLOW, sizeof(ev), ts_ns);
	ev.tuple.local_port = port;
	ev.tuple.remote_port = 40000;
	return ev;
}

/* connscope's cost readings (cost records): what grew since the reading before. */
static inline struct cs_ev_prog_cost make_prog_cost(uint64_t ts_ns, uint32_t prog_id, const char *name,
						    uint64_t run_ns, uint64_t runs)
{
	struct cs_ev_prog_cost ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(CS_EV_PROG_COST, sizeof(ev), ts_ns);
	ev.prog_id = prog_id;
	ev.run_ns = run_ns;
	ev.runs = runs;
	snprintf(ev.name, sizeof(ev.name), "%s", name);
	return ev;
}

static inline struct cs_ev_self_cost make_self_cost(uint64_t ts_ns, uint64_t user_ns, uint64_t system_ns,
						    uint64_t wall_ns, uint32_t bpf_stats)
{
	struct cs_ev_self_cost ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(CS_EV_SELF_COST, sizeof(ev), ts_ns);
	ev.user_ns = user_ns;
	ev.system_ns = system_ns;
	ev.wall_ns = wall_ns;
	ev.bpf_stats = bpf_stats;
	return ev;
}

/* A JVM safepoint of process tgid from begin_ns to end_ns (the operation named op, or "" for none). */
static inline struct cs_ev_runtime_pause make_pause(uint32_t tgid, uint64_t begin_ns, uint64_t end_ns, const char *op,
						    uint16_t flags)
{
	struct cs_ev_runtime_pause ev;
	memset(&ev, 0, sizeof(ev));
	ev.hdr = make_header(CS_EV_RUNTIME_PAUSE, sizeof(ev), end_ns);
	ev.begin_ns = begin_ns;
	ev.reached_ns = begin_ns + 50 * US;
	ev.op_end_ns = end_ns - 10 * US;
	ev.tgid = tgid;
	ev.vm_tid = tgid + 1;
	ev.flags = flags | (op[0] ? CS_PAUSE_OP_NAMED : 0);
	if (flags & CS_PAUSE_GC) {
		ev.gc_ns = end_ns - begin_ns - 100 * US;
		ev.gc_count = 1;
	}
	snprintf(ev.op_name, sizeof(ev.op_name), "%s", op);
	return ev;
}

#endif /* CS_TEST_EVENTS_H */
