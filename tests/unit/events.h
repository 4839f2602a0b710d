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
#include <string.h>
#include <sys/socket.h>

#include "connscope.h"
#include "engine.h"

#define US (1000ull)
#define MS (1000ull * US)
#define SEC (1000ull * MS)

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
	uint16_t port;           /* the target port (client's remote port) */
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
	ev.tuple.local_port = 51000;
	ev.tuple.remote_port = s.port;
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

#endif /* CS_TEST_EVENTS_H */
