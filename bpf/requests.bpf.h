/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The request state each socket keeps, emitted as one record per request.
 */
#ifndef CS_REQUESTS_BPF_H
#define CS_REQUESTS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"
#include "sock_reads.bpf.h"

/* ---- requests ------------------------------------------------------------ */

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

/*
 * Of the time between a connection's last activity and the current thread
 * closing it, how long that thread waited to run. Exact when a probe looked
 * at the thread since the activity (the worker that sent the answer); 0
 * when none did, since its waits then cannot be placed in that span, or
 * when the close came too soon to need it. Reads, never creates, storage:
 * a thread without it was never seen.
 */
static __always_inline __u64 closer_runq(__u64 last_activity_ns, __u64 now)
{
	if (!last_activity_ns || now < last_activity_ns + CS_CLOSE_RUNQ_FROM_NS)
		return 0;
	struct thread_obs *obs = bpf_task_storage_get(&thread_obs, bpf_get_current_task_btf(), 0, 0);

	if (!obs || obs->seen_ns < last_activity_ns || obs->seen_ns > now)
		return 0;
	return at_most(current_run_delay() - obs->run_delay_ns, now - obs->seen_ns);
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
		/* The request record's index: the same count, and one more when its first went unseen. */
		bytes->index = (conn->requests ? conn->requests - 1 : 0) + conn->first_unseen;
		bytes->listener_port = conn->port;
		bytes->first_len = conn->peek_first_len;
		bytes->record_count = conn->peek_records;
		__builtin_memcpy(bytes->first, conn->peek_first, sizeof(bytes->first));
		__builtin_memcpy(bytes->record_types, conn->peek_types, sizeof(bytes->record_types));
		__builtin_memcpy(bytes->record_read_us, conn->peek_read_us, sizeof(bytes->record_read_us));
		bytes->flags = conn->peek_flags;
		bytes->messages = conn->msg_flags;
		bytes->commands = 0;
		bytes->protocol = conn->wire_protocol;
		if (conn->peek_conn == PEEK_PG || (conn->peek_flags & CS_PEEK_PG)) {
			bytes->flags |= CS_PEEK_PG;
			bytes->commands = conn->msg_commands;
		} else if (conn->wire_protocol == CS_WIRE_PROTOCOL_MYSQL) {
			bytes->commands = conn->msg_commands;
		} else if (conn->peek_conn == PEEK_RESP || conn->peek_conn == PEEK_RESP_INLINE ||
			   (conn->peek_flags & CS_PEEK_RESP)) {
			bytes->flags |= CS_PEEK_RESP;
			bytes->commands = conn->msg_commands;
		}
		__builtin_memset(bytes->pad2, 0, sizeof(bytes->pad2));
		submit_event(bytes);
	}
	conn->peek_seen = conn->peek_flags = conn->peek_first_len = conn->peek_records = 0;
	conn->msg_commands = conn->msg_flags = 0;
	__builtin_memset(conn->peek_first, 0, sizeof(conn->peek_first));
	__builtin_memset(conn->peek_types, 0, sizeof(conn->peek_types));
	__builtin_memset(conn->peek_read_us, 0, sizeof(conn->peek_read_us));
}

/*
 * ---- the requests each thread has read and not begun to answer -----------
 * (reading_threads): what an upstream exchange of that thread may serve.
 */

/*
 * The reader began this request (in its thread): open on its thread until
 * its answer begins. Its read overtakes the thread's other open requests:
 * the first such read is when the thread turned from each of them to
 * another, and the thread's run-queue counter then (run_delay, read at
 * this read) splits each one's waits for a CPU at its turn. The thread's
 * voluntary switches so far tell, at the answer, whether it slept meanwhile
 * (loop_turned).
 */
static __always_inline void open_read(struct conn_state *conn, __u64 run_delay)
{
	struct reading_thread *thread = bpf_map_lookup_elem(&reading_threads, &conn->reader_tid);
	const struct task_struct *task = bpf_get_current_task_btf();

	conn->read_nvcsw = task->nvcsw;
	conn->read_cpu_ns = task->se.sum_exec_runtime;

	if (!thread) {
		struct reading_thread fresh = { .reads = 1 };
		fresh.open_read_ns[0] = conn->first_read_ns;
		if (bpf_map_update_elem(&reading_threads, &conn->reader_tid, &fresh, BPF_NOEXIST) == -E2BIG)
			count(CS_CTR_TABLE_FULL);
		return;
	}
	thread->reads++;
	bool placed = false;
	for (__u32 i = 0; i < CS_UP_OPEN_FOLLOWED; i++) {
		if (thread->open_read_ns[i]) {
			if (!thread->overtaken_ns[i]) {
				thread->overtaken_ns[i] = conn->first_read_ns;
				thread->overtaken_run_delay_ns[i] = run_delay;
			}
		} else if (!placed) {
			thread->open_read_ns[i] = conn->first_read_ns;
			thread->overtaken_ns[i] = 0;
			placed = true;
		}
	}
	if (!placed)
		thread->crowded++;
}

/*
 * Its answer began, or it ended unanswered: no longer open on its reader's
 * thread. Returns when another read first overtook it (0: none, or not
 * followed), and the thread's run-queue counter then in *run_delay.
 */
static __always_inline __u64 close_read(const struct conn_state *conn, __u64 *run_delay)
{
	struct reading_thread *thread = bpf_map_lookup_elem(&reading_threads, &conn->reader_tid);

	if (!thread)
		return 0;
	for (__u32 i = 0; i < CS_UP_OPEN_FOLLOWED; i++) {
		if (thread->open_read_ns[i] == conn->first_read_ns) {
			__u64 overtaken_ns = thread->overtaken_ns[i];
			*run_delay = thread->overtaken_run_delay_ns[i];
			thread->open_read_ns[i] = 0;
			thread->overtaken_ns[i] = 0;
			return overtaken_ns;
		}
	}
	if (thread->crowded)
		thread->crowded--;
	return 0;
}

/*
 * A loop that reads every ready request and runs each to completion before
 * it writes their answers (Redis: replies go out before its next poll)
 * makes a request read early in a pass wait, after its own short handling,
 * for the requests read after it: from the first of those reads to its
 * answer, the loop was busy with others (event_loop, not its handler). Said
 * only when the request was read and answered in one pass of an epoll loop
 * that never slept meanwhile: the same thread, no ready poll since its read,
 * no voluntary context switch. A loop that polled or slept (for an
 * upstream's answer, a timer, a worker's hand-back) was not busy.
 */
static __always_inline __u64 loop_turned(const struct conn_state *conn, __u32 tid, __u64 overtaken_ns)
{
	if (!overtaken_ns || overtaken_ns <= conn->first_read_ns || tid != conn->reader_tid ||
	    bpf_get_current_task_btf()->nvcsw != conn->read_nvcsw)
		return 0;
	struct poll_thread *poller = bpf_map_lookup_elem(&poll_threads, &tid);
	if (!poller || !poller->ready_exit_ns || poller->ready_exit_ns >= conn->first_read_ns)
		return 0;
	return overtaken_ns;
}

static __always_inline void reset_request(struct conn_state *conn)
{
	__u64 unused_run_delay;
	if (conn->phase == PHASE_HANDLING)
		close_read(conn, &unused_run_delay);
	conn->phase = PHASE_IDLE;
	conn->start_ns = conn->first_read_ns = conn->first_send_ns = 0;
	conn->last_send_ns = conn->drain_end_ns = 0;
	conn->pickup_runq_ns = conn->handler_runq_ns = conn->drain_runq_ns = 0;
	conn->start_run_delay_ns = conn->read_run_delay_ns = conn->send_run_delay_ns = 0;
	conn->bytes_in = conn->bytes_out = conn->send_eagain = 0;
	conn->reader_tid = conn->sender_tid = conn->worker_tid = 0;
	conn->handler_start_ns = conn->handler_end_ns = conn->loop_turned_ns = conn->turn_runq_ns = 0;
	conn->read_cpu_ns = conn->handler_cpu_ns = 0;
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
	conn->msg_commands = conn->msg_flags = 0;
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
	/*
	 * Reads went by unseen: no first bytes to look at, a TLS framing
	 * lost. A Redis connection's commands are counted on from its next
	 * read that begins one; a PostgreSQL connection's messages from its
	 * next read, which must begin one of a known type.
	 */
	if (counts_messages(conn)) {
		conn->msg_skip = conn->resp_elems_left = 0;
		conn->resp_resync = 1;
		conn->pg_untyped = 0;
		return;
	}
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
	/* A framed protocol's exchange is said when it read other than one request, or set-up, or a goodbye. */
	if (conn->peek_seen || (counts_messages(conn) && (conn->msg_commands != 1 || conn->msg_flags)))
		emit_request_bytes(sk, conn, now);
	conn->msg_commands = conn->msg_flags = 0; /* (not emitted: one command, nothing else) */
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
		ev->loop_turned_ns = conn->loop_turned_ns;
		ev->turn_runq_ns = conn->turn_runq_ns;
		ev->client_key = server_client_key(sk);
		ev->handler_cpu_ns = conn->handler_cpu_ns;
		ev->listener_port = conn->port;
		__u16 flags = conn->flags;
		if (conn->partial)
			flags |= CS_REQ_PARTIAL;
		else if (conn->adopted == ADOPT_DUE || conn->adopted == ADOPT_DUE_STAMPED) {
			flags |= CS_REQ_ADOPTED | (conn->adopted == ADOPT_DUE_STAMPED ? CS_REQ_ADOPTED_STAMPED : 0);
			conn->adopted = ADOPT_SAID;
		}
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
/*
 * The run-queue total of a thread seen earlier (task: its address, tid: its
 * id then), read from another thread's context; 0 when it is gone.
 */
static __always_inline __u64 thread_run_delay(__u64 task, __u32 tid)
{
	const struct task_struct *thread = kernel_ptr(struct task_struct, task);

	if (!task || (__u32)thread->pid != tid)
		return 0;
	return thread->sched_info.run_delay;
}

static __always_inline __u64 reader_run_delay(const struct conn_state *conn)
{
	return thread_run_delay(conn->last_reader_task, conn->last_reader_tid);
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
 * The reader's time on a CPU over its handler, read and first send in its
 * own thread (a parked request's handler ran in another): what tells a
 * thread that held the request while it ran from one that held it blocked
 * (a virtual thread's carrier pinned in file I/O). A thread that never
 * slept meanwhile (no voluntary switch) was on a CPU throughout, but for
 * its waits for one (taken apart in user space). One that slept: the
 * kernel's CPU total, which is brought up to date at ticks and switches,
 * not at each read of it.
 */
static __always_inline void note_handler_cpu(struct conn_state *conn, __u64 now)
{
	if ((conn->flags & CS_REQ_PARKED) || !conn->read_cpu_ns)
		return;
	const struct task_struct *task = bpf_get_current_task_btf();
	if (task->nvcsw == conn->read_nvcsw) {
		conn->handler_cpu_ns = now - conn->first_read_ns;
	} else {
		__u64 cpu_ns = task->se.sum_exec_runtime; /* only a thread that slept needs its total */
		if (cpu_ns < conn->read_cpu_ns)
			return;
		conn->handler_cpu_ns = cpu_ns - conn->read_cpu_ns;
	}
	conn->flags |= CS_REQ_HANDLER_CPU;
}

/*
 * The serving thread began to answer. in_thread: we run in that thread
 * (the send probes) and can read its run-queue counter; otherwise (the
 * answer seen from the client's side) its handler wait stays unknown: 0.
 */
static __always_inline void mark_first_send(struct conn_state *conn, __u32 tid, __u64 now,
					    bool in_thread)
{
	__u64 turn_run_delay = 0;
	__u64 overtaken_ns = close_read(conn, &turn_run_delay);
	conn->phase = PHASE_SENDING;
	conn->first_send_ns = now;
	conn->last_send_ns = now;
	conn->sender_tid = tid;
	if (!in_thread)
		return;
	conn->loop_turned_ns = loop_turned(conn, tid, overtaken_ns);
	if (tid == conn->reader_tid) {
		note_parked(conn, tid, now);
		note_handler_cpu(conn, now);
	}
	__u64 run_delay = current_run_delay();
	conn->send_run_delay_ns = run_delay;
	if (tid == conn->reader_tid && conn->read_run_delay_ns) { /* exact: both looks in this thread */
		conn->handler_runq_ns = at_most(run_delay - conn->read_run_delay_ns,
						now - conn->first_read_ns);
		/* The loop turned: which of those waits came before its turn (the third look, there). */
		if (conn->loop_turned_ns && turn_run_delay >= conn->read_run_delay_ns && turn_run_delay <= run_delay) {
			conn->turn_runq_ns = at_most(turn_run_delay - conn->read_run_delay_ns,
						     conn->loop_turned_ns - conn->first_read_ns);
			conn->flags |= CS_REQ_TURN_RUNQ;
		}
	} else {
		conn->handler_runq_ns = runq_since(conn->first_read_ns, now, run_delay);
	}
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

#endif /* CS_REQUESTS_BPF_H */
