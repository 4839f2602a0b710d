/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Everything the probes keep about one server-side connection, in its
 * socket's storage (map conns, maps.bpf.h): the request under way, its
 * phase, and what the first reads showed.
 */
#ifndef CS_CONN_STATE_BPF_H
#define CS_CONN_STATE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "connscope.h"

/* Request phase of a connection. */
enum conn_phase {
	PHASE_IDLE = 0, /* no request in progress */
	PHASE_WAITING,  /* bytes ready, the server has not read them yet */
	PHASE_HANDLING, /* read, no response sent yet */
	PHASE_SENDING,  /* response (partly) sent */
};

enum peek_conn_state {
	PEEK_START = 0,   /* the connection's first read is still to come */
	PEEK_TLS,         /* it began with a TLS record header: the framing is followed */
	PEEK_PLAIN,       /* it began with an HTTP/1.x method: first reads scanned (http_peek.bpf.h) */
	PEEK_OFF,         /* not TLS, the framing lost, or older than the attach: no more looks */
	PEEK_ADOPTED,     /* adopted at an idle moment: its next read's first bytes must start a message */
	PEEK_RESP,        /* Redis, commands as RESP arrays: every read's commands counted (resp_peek.bpf.h) */
	PEEK_RESP_INLINE, /* Redis, inline commands (a line each): every read's lines counted */
	PEEK_PG,          /* PostgreSQL: every read's messages walked (pg_peek.bpf.h) */
	PEEK_MYSQL,       /* MySQL, MariaDB: every read's packets walked (mysql_peek.bpf.h) */
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
	__u64 loop_turned_ns;   /* see cs_ev_request.loop_turned_ns */
	__u64 turn_runq_ns;     /* see cs_ev_request.turn_runq_ns */
	__u64 read_nvcsw;       /* the reader's voluntary context switches at the first read */
	__u64 read_cpu_ns;      /* the reader's time on a CPU at the first read (sum_exec_runtime) */
	__u64 handler_cpu_ns;   /* see cs_ev_request.handler_cpu_ns */
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
	__u8 peek_scanned;      /* PEEK_PLAIN: the exchange (requests) whose first read was scanned */
	__u8 tls_records_seen;  /* a TLS record header was followed: the next is not the ClientHello */
	__u8 server_hello_seen; /* PEEK_TLS: its server's first flight was copied (or could not be) */
	__u32 tls_skip;         /* bytes of the TLS record under way still to be read */
	__u32 hello_len;        /* the ClientHello record's length; 0: its body was copied (or not TLS) */
	__u32 rcv_nxt_seen;     /* partial: TCP's rcv_nxt at the last look (see idle_since_last_look) */
	/* Framed protocols' messages, counted (resp_peek.bpf.h, pg_peek.bpf.h, mysql_peek.bpf.h). */
	__u32 msg_skip;         /* bytes of the message under way (a bulk string and its CRLF) still to come */
	__u32 resp_elems_left;  /* PEEK_RESP: bulk strings of the command under way still to come */
	__u16 msg_commands;     /* requests the exchange read (commands, queries), at most 65535 */
	__u8 resp_resync;       /* PEEK_RESP: reads went by unseen: the next must begin a command */
	__u8 pg_untyped;        /* PEEK_PG: the next message has no type byte (a start-up) */
	__u8 msg_flags;         /* enum cs_msg_flags of the exchange: what it read, a greeting before it */
	__u8 wire_protocol;     /* enum cs_wire_protocol: told at its start, kept when the walk is lost */
	__u8 mysql_authed;      /* PEEK_MYSQL: past the handshake (a command was read) */
	__u8 mysql_continued;   /* PEEK_MYSQL: the packet under way continues in the next */
	__u8 mysql_ssl;         /* PEEK_MYSQL: an SSL request was read: TLS comes next */
	__u8 mysql_command_due; /* PEEK_MYSQL: a command's header ended the last read */
	__u8 peek_first[CS_PEEK_FIRST_LEN];
	__u8 peek_types[CS_PEEK_TLS_RECORDS];
	__u32 peek_read_us[CS_PEEK_TLS_RECORDS];
};


/* A framed protocol's connection: every read's messages counted (Redis, PostgreSQL, MySQL). */
static __always_inline bool counts_messages(const struct conn_state *conn)
{
	return conn->peek_conn == PEEK_RESP || conn->peek_conn == PEEK_RESP_INLINE || conn->peek_conn == PEEK_PG ||
	       conn->peek_conn == PEEK_MYSQL;
}

/*
 * After a framed protocol's walk of one read (pg_peek.bpf.h,
 * mysql_peek.bpf.h): the queries it brought add to the exchange's, and
 * the message under way is kept for the next read. A TLS record where a
 * message would be (the server took up SSL) ends the walks: encrypted from
 * there, its exchanges are requests. A walk lost is said on the exchange
 * (lost_flags), and the connection is walked no more.
 */
static __always_inline void keep_walk(struct conn_state *conn, __u32 skip, __u32 queries, __u8 msg_flags, bool tls,
				      bool lost, __u8 lost_flags)
{
	if (tls)
		conn->peek_conn = PEEK_OFF;
	__u32 total = conn->msg_commands + queries;
	conn->msg_commands = total > 65535 ? 65535 : (__u16)total;
	conn->msg_skip = skip;
	conn->msg_flags |= msg_flags;
	if (lost) {
		conn->peek_flags |= lost_flags;
		conn->peek_seen = 1;
		conn->peek_conn = PEEK_OFF;
	}
}

#endif /* CS_CONN_STATE_BPF_H */
