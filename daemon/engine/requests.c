// SPDX-License-Identifier: BSD-2-Clause
/*
 * Requests and connection lifecycles: joins each request record with its
 * connection (accept, SYN retransmits), splits its time into causes, and
 * keeps per-latency-bucket cause totals so that the tail's causes can be
 * read off exactly at any percentile.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "tables.h"
#include "units.h"


const char *const cs_cause_names[CS_CAUSE_COUNT] = {
	[CS_CAUSE_ACCEPT_QUEUE] = "accept_queue",
	[CS_CAUSE_LISTEN_OVERFLOW] = "listen_overflow",
	[CS_CAUSE_RUN_QUEUE] = "run_queue",
	[CS_CAUSE_EVENT_LOOP] = "event_loop",
	[CS_CAUSE_WORKER_POOL] = "worker_pool",
	[CS_CAUSE_HANDLER] = "handler",
	[CS_CAUSE_SEND_DRAIN] = "send_drain",
	[CS_CAUSE_TLS_HANDSHAKE] = "tls_handshake",
	[CS_CAUSE_PROTOCOL_SETUP] = "protocol_setup",
	[CS_CAUSE_RUNTIME_PAUSE] = "runtime_pause",
	[CS_CAUSE_UPSTREAM] = "upstream",
};

int cs_requests_init(struct cs_engine *engine)
{
	struct cs_request_stats *r = &engine->requests;
	struct cs_lifecycle_stats *l = &engine->lifecycle;
	r->latency_ns = malloc(sizeof(*r->latency_ns));
	r->bucket_cause_ns = calloc(CS_HIST_BUCKETS, sizeof(*r->bucket_cause_ns));
	r->bucket_dominant = calloc(CS_HIST_BUCKETS, sizeof(*r->bucket_dominant));
	r->bucket_pool_busy_ns = calloc(CS_HIST_BUCKETS, sizeof(*r->bucket_pool_busy_ns));
	l->idle_gap_ns = malloc(sizeof(*l->idle_gap_ns));
	l->lifetime_ns = malloc(sizeof(*l->lifetime_ns));
	for (int c = 0; c < CS_CAUSE_COUNT; c++) {
		r->cause_ns[c] = malloc(sizeof(*r->cause_ns[c]));
		if (!r->cause_ns[c])
			return -ENOMEM;
		cs_hist_init(r->cause_ns[c]);
	}
	if (!r->latency_ns || !r->bucket_cause_ns || !r->bucket_dominant || !r->bucket_pool_busy_ns ||
	    !l->idle_gap_ns || !l->lifetime_ns)
		return -ENOMEM;
	cs_hist_init(r->latency_ns);
	cs_hist_init(l->idle_gap_ns);
	cs_hist_init(l->lifetime_ns);
	if (cs_u64map_init(&engine->conns, sizeof(struct cs_conn), CS_MAX_CONNS) ||
	    cs_u64map_init(&engine->threads, sizeof(struct cs_thread_stats), 65536) ||
	    cs_u64map_init(&engine->idle_closed_from, sizeof(struct cs_idle_closes), 65536) ||
	    cs_u64map_init(&engine->handbacks, sizeof(struct cs_handback), 65536) ||
	    cs_u64map_init(&engine->tls_closed, sizeof(uint64_t), 65536) ||
	    cs_u64map_init(&engine->unfollowed, sizeof(struct cs_unfollowed), 65536))
		return -ENOMEM;
	return 0;
}

void cs_requests_free(struct cs_engine *engine)
{
	free(engine->requests.latency_ns);
	free(engine->requests.bucket_cause_ns);
	free(engine->requests.bucket_dominant);
	free(engine->requests.bucket_pool_busy_ns);
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		free(engine->requests.cause_ns[c]);
	free(engine->lifecycle.idle_gap_ns);
	free(engine->lifecycle.lifetime_ns);
	cs_u64map_free(&engine->conns);
	cs_u64map_free(&engine->threads);
	cs_u64map_free(&engine->idle_closed_from);
	cs_u64map_free(&engine->handbacks);
	cs_u64map_free(&engine->tls_closed);
	cs_u64map_free(&engine->unfollowed);
}

/* ---- the accept side: connections the engine follows ---------------------- */

struct sweep_ctx {
	uint64_t now_ns;
	struct cs_engine *engine;
};

/* A followed connection is no longer counted open on its listener. */
static void conn_forgotten(struct cs_engine *engine, const struct cs_conn *conn, uint64_t now_ns)
{
	struct cs_listener_stats *listener = cs_get_listener(engine, conn->port);
	if (listener)
		cs_limit_on_forget(listener, now_ns);
}

static int conn_timed_out(uint64_t key, const void *value, void *ctx_ptr)
{
	(void)key;
	const struct cs_conn *conn = value;
	struct sweep_ctx *ctx = ctx_ptr;
	int expired = ctx->now_ns > conn->last_seen_ns && ctx->now_ns - conn->last_seen_ns >= CS_CONN_TIMEOUT_NS;
	if (expired && ctx->engine)
		conn_forgotten(ctx->engine, conn, ctx->now_ns);
	return expired;
}

static int tls_close_expired(uint64_t key, const void *value, void *ctx_ptr)
{
	(void)key;
	const uint64_t *close_ns = value;
	const struct sweep_ctx *ctx = ctx_ptr;
	return ctx->now_ns > *close_ns && ctx->now_ns - *close_ns > CS_RECONNECT_WINDOW_NS;
}

uint64_t cs_tuple_key(const struct cs_tuple *tuple, uint16_t listener_port)
{
	uint16_t local_port = tuple->local_port ? tuple->local_port : listener_port;
	uint64_t key = (uint64_t)cs_addr_hash(tuple->remote_addr) << 32 | (uint64_t)tuple->remote_port << 16 |
		       local_port;
	return key ? key : 1;
}

static int unfollowed_expired(uint64_t key, const void *value, void *ctx_ptr)
{
	(void)key;
	const struct cs_unfollowed *u = value;
	const struct sweep_ctx *ctx = ctx_ptr;
	uint64_t keep_ns = u->closed ? CS_RECONNECT_WINDOW_NS : CS_CONN_TIMEOUT_NS;
	return ctx->now_ns > u->last_ns && ctx->now_ns - u->last_ns > keep_ns;
}

static int idle_closes_expired(uint64_t key, const void *value, void *ctx_ptr)
{
	(void)key;
	const struct cs_idle_closes *closes = value;
	const struct sweep_ctx *ctx = ctx_ptr;
	return ctx->now_ns > closes->last_close_ns && ctx->now_ns - closes->last_close_ns > CS_RECONNECT_WINDOW_NS;
}

/*
 * Forget connections without a record for CS_CONN_TIMEOUT_NS, and idle
 * closes that no reconnect can answer any more: neither table grows with
 * lost close records or client addresses that never come back.
 */
void cs_conns_sweep(struct cs_engine *engine, uint64_t now_ns)
{
	struct sweep_ctx ctx = { .now_ns = now_ns, .engine = engine };
	engine->conns_timed_out += cs_u64map_remove_if(&engine->conns, conn_timed_out, &ctx);
	cs_u64map_remove_if(&engine->idle_closed_from, idle_closes_expired, &ctx);
	cs_u64map_remove_if(&engine->tls_closed, tls_close_expired, &ctx);
	cs_u64map_remove_if(&engine->unfollowed, unfollowed_expired, &ctx);
	cs_upstreams_sweep(engine, now_ns);
	cs_clients_sweep(engine, now_ns);
}

static int conn_forget(uint64_t key, const void *value, void *ctx_ptr)
{
	(void)key;
	struct sweep_ctx *ctx = ctx_ptr;
	conn_forgotten(ctx->engine, value, ctx->now_ns);
	return 1;
}

void cs_engine_forget_connections(struct cs_engine *engine, uint64_t now_ns)
{
	struct sweep_ctx ctx = { .now_ns = now_ns, .engine = engine };
	engine->conns_forgotten_between += cs_u64map_remove_if(&engine->conns, conn_forget, &ctx);
}

/*
 * The table is full: forget the least recently seen of CS_CONN_EVICT_SAMPLE
 * connections from a cursor that moves on each time (an approximate LRU at
 * a fixed cost per eviction). Returns 1 when one went.
 */
static int evict_one(struct cs_engine *engine)
{
	struct cs_u64map *conns = &engine->conns;
	uint64_t oldest_key = 0, oldest_seen_ns = UINT64_MAX, key;
	size_t seen = 0;
	for (size_t step = 0; step < conns->capacity && seen < CS_CONN_EVICT_SAMPLE; step++) {
		size_t slot = (engine->evict_cursor + step) & (conns->capacity - 1);
		const struct cs_conn *conn = cs_u64map_slot(conns, slot, &key);
		if (!conn)
			continue;
		seen++;
		if (conn->last_seen_ns <= oldest_seen_ns) {
			oldest_seen_ns = conn->last_seen_ns;
			oldest_key = key;
		}
		engine->evict_cursor = slot + 1;
	}
	if (!oldest_key)
		return 0;
	const struct cs_conn *oldest = cs_u64map_get(conns, oldest_key);
	if (oldest)
		conn_forgotten(engine, oldest, oldest_seen_ns);
	cs_u64map_remove(conns, oldest_key);
	engine->conns_evicted++;
	return 1;
}

void cs_conn_accepted(struct cs_engine *engine, const struct cs_ev_accept *ev)
{
	if (!ev->sk)
		return;
	int created;
	struct cs_conn *conn = cs_u64map_put(&engine->conns, ev->sk, &created);
	if (!conn && engine->conns.max_count && engine->conns.count >= engine->conns.max_count &&
	    evict_one(engine))
		conn = cs_u64map_put(&engine->conns, ev->sk, &created);
	if (!conn) {
		engine->conns_evicted++;
		return;
	}
	/* A recycled socket address starts a new connection (the old one's
	 * close was lost: it is no longer open). */
	if (!created)
		conn_forgotten(engine, conn, ev->hdr.ts_ns);
	memset(conn, 0, sizeof(*conn));
	cs_u64map_remove(&engine->unfollowed, ev->sk);
	conn->established_ns = ev->established_ns;
	conn->accept_ns = ev->hdr.ts_ns;
	conn->last_seen_ns = ev->hdr.ts_ns;
	conn->accept_tid = ev->tid;
	conn->port = ev->listener_port;
	conn->remote_port = ev->tuple.remote_port;
	conn->remote_addr_hash = cs_addr_hash(ev->tuple.remote_addr);
	conn->family = ev->tuple.family;
	memcpy(conn->remote_addr, ev->tuple.remote_addr, sizeof(conn->remote_addr));
	struct cs_listener_stats *listener = cs_get_listener(engine, conn->port);
	if (listener)
		cs_limit_on_open(listener, ev->hdr.ts_ns);

	/* A client coming back soon after the server closed its idle connection. */
	struct cs_idle_closes *closes = cs_u64map_get(&engine->idle_closed_from, conn->remote_addr_hash);
	if (closes && closes->pending && ev->hdr.ts_ns - closes->last_close_ns <= CS_RECONNECT_WINDOW_NS) {
		engine->lifecycle.reconnects++;
		closes->pending--;
	}
}

/* ---- requests ------------------------------------------------------------ */

static uint64_t span(uint64_t from, uint64_t to)
{
	return to > from ? to - from : 0;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

int cs_engine_request_verdict(const struct cs_engine *engine, const struct cs_ev_request *req,
			      struct cs_request_setup *setup)
{
	const struct cs_request_stats *stats = &engine->requests;
	if (stats->last_sk != req->sk || stats->last_index != req->index)
		return -1;
	*setup = stats->last_setup;
	return stats->last_was_request;
}

void cs_setup_from_record(const struct cs_ev_request *req, struct cs_request_setup *setup)
{
	memset(setup, 0, sizeof(*setup));
	setup->commands = 1;
	setup->first = req->index == 0;
	setup->began_ns = req->start_ns;
	setup->extra_ns = req->handshake_extra_ns;
}

bool cs_split_request(const struct cs_engine *engine, const struct cs_ev_request *req,
		      struct cs_request_split *split)
{
	struct cs_request_setup setup;
	cs_setup_from_record(req, &setup);
	return cs_split_request_setup(engine, req, &setup, split);
}

/*
 * The first request may have waited in the accept queue: it began then.
 * Over TLS its connection's first bytes were the ClientHello, or for a
 * protocol with a set-up of its own (PostgreSQL's start-up) its first
 * message: from the accept (or those bytes, if later) to the request's
 * start, that set-up ran. Returns where the wait for its reader began.
 */
static uint64_t split_setup(const struct cs_engine *engine, const struct cs_ev_request *req,
			    const struct cs_request_setup *setup, struct cs_phase_spans *spans,
			    struct cs_request_split *split)
{
	uint64_t pickup_from = req->start_ns;
	if (!setup->first)
		return pickup_from;
	bool handshake = setup->tls || setup->protocol;
	enum cs_cause setup_cause = setup->tls ? CS_CAUSE_TLS_HANDSHAKE : CS_CAUSE_PROTOCOL_SETUP;
	const struct cs_conn *conn = cs_u64map_get(&engine->conns, req->sk);
	uint64_t setup_from = setup->began_ns;
	if (conn && conn->accept_ns && conn->established_ns && setup->began_ns <= conn->accept_ns) {
		split->cause_ns[CS_CAUSE_ACCEPT_QUEUE] = span(conn->established_ns, conn->accept_ns);
		spans->accept_from_ns = conn->established_ns;
		spans->accept_to_ns = conn->accept_ns;
		setup_from = conn->accept_ns;
		if (!handshake)
			pickup_from = conn->accept_ns;
	}
	split->cause_ns[CS_CAUSE_LISTEN_OVERFLOW] = setup->extra_ns;
	if (handshake) {
		split->cause_ns[setup_cause] = span(setup_from, req->start_ns);
		spans->tls_from_ns = setup_from;
		spans->tls_to_ns = req->start_ns;
		spans->setup_cause = setup_cause;
	}
	return pickup_from;
}

/*
 * First read -> first send, on its own thread. Where that thread read
 * another request meanwhile, in the same pass of its loop (loop_turned_ns,
 * see the probes), the request's handling was over: from that read on the
 * loop served the others, and the request waited for it (event_loop). Its
 * run-queue time falls on each side of that turn as the probes measured
 * it (CS_REQ_TURN_RUNQ; older traces: out of the loop's wait first).
 * Returns whether the loop took part.
 */
static bool split_handler(const struct cs_ev_request *req, uint64_t handler, uint64_t handler_runq,
			  struct cs_request_split *split)
{
	bool turned = req->loop_turned_ns > req->first_read_ns && req->loop_turned_ns < req->first_send_ns &&
		      req->sender_tid == req->reader_tid;
	uint64_t loop_ns = turned ? span(req->loop_turned_ns, req->first_send_ns) : 0;
	uint64_t loop_runq = min_u64(handler_runq, loop_ns);
	if (turned && (req->flags & CS_REQ_TURN_RUNQ)) {
		uint64_t before_turn = min_u64(min_u64(req->turn_runq_ns, handler_runq), handler - loop_ns);
		loop_runq = min_u64(handler_runq - before_turn, loop_ns);
	}
	split->cause_ns[CS_CAUSE_EVENT_LOOP] += loop_ns - loop_runq;
	split->loop_after_read_ns = loop_ns - loop_runq;
	split->cause_ns[CS_CAUSE_HANDLER] = handler - loop_ns - (handler_runq - loop_runq);
	return loop_ns > 0;
}

bool cs_split_request_setup(const struct cs_engine *engine, const struct cs_ev_request *req,
			    const struct cs_request_setup *setup, struct cs_request_split *split)
{
	memset(split, 0, sizeof(*split));
	if (req->flags & (CS_REQ_NO_RESPONSE | CS_REQ_PARTIAL) || !req->start_ns ||
	    !req->first_read_ns || !req->first_send_ns)
		return false;
	/*
	 * The request began inside its exchange, after the TLS handshake's
	 * end: its phases start there (what was sent before it, session
	 * tickets, was the handshake's: its answer's first send is not known
	 * apart, so its handler time shows as send_drain).
	 */
	const struct cs_ev_request *recorded = req; /* a hand-back names the recorded times */
	struct cs_ev_request moved;
	if (setup->start_ns > req->start_ns) {
		moved = *req;
		moved.start_ns = setup->start_ns;
		if (moved.first_read_ns < moved.start_ns)
			moved.first_read_ns = moved.start_ns;
		if (moved.first_send_ns < moved.first_read_ns)
			moved.first_send_ns = moved.first_read_ns;
		req = &moved;
	}

	struct cs_phase_spans spans = { .tgid = req->tgid, .setup_cause = CS_CAUSE_TLS_HANDSHAKE };
	uint64_t pickup_from = split_setup(engine, req, setup, &spans, split);

	uint64_t pickup = span(pickup_from, req->first_read_ns);
	uint64_t handler = span(req->first_read_ns, req->first_send_ns);
	uint64_t drain_end = req->drain_end_ns > req->last_send_ns ? req->drain_end_ns : req->last_send_ns;
	uint64_t drain = span(req->first_send_ns, drain_end);
	uint64_t pickup_runq = min_u64(req->pickup_runq_ns, pickup);
	uint64_t handler_runq = min_u64(req->handler_runq_ns, handler);
	uint64_t drain_runq = min_u64(req->drain_runq_ns, drain);

	split->cause_ns[CS_CAUSE_RUN_QUEUE] = pickup_runq + handler_runq + drain_runq;
	/* Ready, not yet read: the poller's thread pool was busy, or the loop was. */
	enum cs_cause waited = req->flags & CS_REQ_HANDED_OFF ? CS_CAUSE_WORKER_POOL : CS_CAUSE_EVENT_LOOP;
	split->cause_ns[waited] = pickup - pickup_runq;
	const struct cs_handback *hb = cs_handback_of(engine, recorded);
	spans.handed_back = hb && hb->handler_start_ns >= req->first_read_ns;
	if (spans.handed_back)
		cs_split_handed_back(req, hb, handler_runq, split);
	else
		spans.loop_turned = split_handler(req, handler, handler_runq, split);
	split->cause_ns[CS_CAUSE_SEND_DRAIN] = drain - drain_runq;
	cs_take_pauses(engine, req, &spans, pickup_from, drain_end, waited, split);
	split->pool_busy_ns = cs_pool_wait_busy_ns(engine, req, spans.handed_back ? hb : NULL, pickup_from, split);
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		split->total_ns += split->cause_ns[c];
	return true;
}

/*
 * Its handler on a CPU or blocked, when measured: the handler's time
 * (already less its waits for a CPU) split by the reader's CPU time over
 * it, which a tick's staleness may put above it.
 */
static void note_handler_cpu(struct cs_thread_stats *thread, const struct cs_ev_request *req,
			     const struct cs_request_split *split)
{
	if (!(req->flags & CS_REQ_HANDLER_CPU))
		return;
	uint64_t handler_ns = split->cause_ns[CS_CAUSE_HANDLER];
	uint64_t cpu_ns = req->handler_cpu_ns < handler_ns ? req->handler_cpu_ns : handler_ns;
	uint64_t blocked_ns = handler_ns - cpu_ns;
	thread->handlers_measured++;
	thread->handler_cpu_ns += cpu_ns;
	thread->handler_blocked_ns += blocked_ns;
	thread->handler_cpu_weight += (double)cpu_ns * (double)handler_ns;
	thread->handler_blocked_weight += (double)blocked_ns * (double)handler_ns;
}

/* The reading thread's share of a request. */
static void thread_took(struct cs_engine *engine, const struct cs_ev_request *req, const struct cs_request_split *split,
			uint32_t requests)
{
	struct cs_thread_stats *thread = cs_get_thread(engine, req->reader_tid, req->tgid, NULL);
	if (!thread)
		return;
	thread->requests += requests;
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		thread->cause_ns[c] += split->cause_ns[c];
	cs_coarse_record(thread->runq_per_request, split->cause_ns[CS_CAUSE_RUN_QUEUE]);
	uint64_t end_ns = req->last_send_ns > req->first_read_ns ? req->last_send_ns : req->first_send_ns;
	thread->serving_ns += span(req->first_read_ns, end_ns);
	cs_note_served(thread, req->first_read_ns, end_ns);
	if (!thread->first_read_ns || req->first_read_ns < thread->first_read_ns)
		thread->first_read_ns = req->first_read_ns;
	if (end_ns > thread->last_send_ns)
		thread->last_send_ns = end_ns;
	thread->handed_requests += (req->flags & CS_REQ_HANDED_OFF) != 0;
	note_handler_cpu(thread, req, split);
}

/*
 * A connection older than the attach, adopted at its first idle moment:
 * said once, by its first request record, whatever that exchange turns
 * out to be. One stamped since the attach whose accept was seen was
 * established between tracing windows: not older.
 */
static void count_adopted(struct cs_request_stats *stats, const struct cs_conn *conn, const struct cs_ev_request *req)
{
	if ((req->flags & CS_REQ_ADOPTED) && !(conn && (req->flags & CS_REQ_ADOPTED_STAMPED))) {
		stats->connections_adopted++;
		stats->adopted_tls += (req->flags & CS_REQ_ADOPTED_TLS) != 0;
	}
	stats->not_a_start += (req->flags & CS_REQ_NOT_A_START) != 0;
}

/* The latency, and its causes' time in the latency's bucket: the tail is read off these. */
static void record_split(struct cs_request_stats *stats, const struct cs_request_split *split)
{
	size_t bucket = cs_hist_bucket_index(split->total_ns);
	cs_hist_record(stats->latency_ns, split->total_ns);
	int dominant = 0;
	for (int c = 0; c < CS_CAUSE_COUNT; c++) {
		stats->bucket_cause_ns[bucket][c] += split->cause_ns[c];
		cs_hist_record(stats->cause_ns[c], split->cause_ns[c]);
		if (split->cause_ns[c] > split->cause_ns[dominant])
			dominant = c;
	}
	stats->bucket_dominant[bucket][dominant]++;
	stats->bucket_pool_busy_ns[bucket] += split->pool_busy_ns;
}

/*
 * An exchange of several requests whose times are one (a Redis pipeline:
 * read at once, answered in its writes): each is a request of the
 * exchange's latency and causes, in every count and histogram; the
 * thread's time and the slowest list take the exchange once.
 */
static void record_requests(struct cs_engine *engine, const struct cs_ev_request *req,
			    const struct cs_request_split *split, uint32_t requests)
{
	struct cs_request_stats *stats = &engine->requests;
	struct cs_listener_stats *listener = cs_get_listener(engine, req->listener_port);
	for (uint32_t i = 0; i < requests; i++) {
		record_split(stats, split);
		if (listener && listener->latency_ns)
			cs_hist_record(listener->latency_ns, split->total_ns);
	}
	stats->requests += requests;
	if (listener && listener->latency_ns)
		listener->requests += requests;
	if (requests > 1) {
		stats->pipelined_exchanges++;
		stats->pipelined_commands += requests;
	}
	thread_took(engine, req, split, requests);
}

/* A first request's set-up: accept queue, SYN retries, TLS handshake. */
static void count_setup(struct cs_request_stats *stats, const struct cs_request_setup *setup,
			const struct cs_request_split *split)
{
	if (!setup->first)
		return;
	stats->first_on_connection++;
	stats->setup_accept_ns += split->cause_ns[CS_CAUSE_ACCEPT_QUEUE];
	stats->setup_tcp_ns += split->cause_ns[CS_CAUSE_LISTEN_OVERFLOW];
	stats->setup_tls_ns += split->cause_ns[CS_CAUSE_TLS_HANDSHAKE];
	stats->setup_protocol_ns += split->cause_ns[CS_CAUSE_PROTOCOL_SETUP];
	stats->setup_ns += split->cause_ns[CS_CAUSE_ACCEPT_QUEUE] + split->cause_ns[CS_CAUSE_LISTEN_OVERFLOW] +
			   split->cause_ns[CS_CAUSE_TLS_HANDSHAKE] + split->cause_ns[CS_CAUSE_PROTOCOL_SETUP];
	stats->tls_handshakes += setup->tls;
	stats->protocol_setups += setup->protocol;
}

/* The request kept whole if it is among the slowest. */
static void keep_exemplar(struct cs_request_stats *stats, const struct cs_ev_request *req, const struct cs_conn *conn,
			  const struct cs_request_split *split, const struct cs_upstream_use *use, uint32_t commands)
{
	if (!cs_exemplar_admits(stats, split->total_ns))
		return;
	struct cs_exemplar exemplar = {
		.split = *split,
		.end_ns = req->hdr.ts_ns,
		.reader_tid = req->reader_tid,
		.sender_tid = req->sender_tid,
		.tgid = req->tgid,
		.bytes_out = req->bytes_out,
		.send_eagain = req->send_eagain,
		.port = req->listener_port,
		.flags = req->flags,
		.index = req->index,
		.commands = commands,
		.upstream = *use,
	};
	if (conn) {
		exemplar.protocol = conn->protocol;
		exemplar.peer_family = conn->family;
		exemplar.peer_port = conn->remote_port;
		memcpy(exemplar.peer_addr, conn->remote_addr, sizeof(exemplar.peer_addr));
	}
	cs_keep_exemplar(stats, &exemplar);
}

/* Where the wait for its reader began: its bytes came, or, for a first request, its accept if later. */
static uint64_t pickup_from(const struct cs_conn *conn, const struct cs_ev_request *req,
			    const struct cs_request_setup *setup)
{
	if (setup->first && !setup->tls && !setup->protocol && conn && conn->accept_ns > req->start_ns)
		return conn->accept_ns;
	return req->start_ns;
}

/* Not a request the engine times: counted as what it is, its upstream exchanges unjoined. */
static int not_timed(struct cs_engine *engine, const struct cs_ev_request *req, const struct cs_upstream_claim *claim,
		     bool request)
{
	cs_upstream_unclaimed(engine, claim);
	if (request && (req->flags & CS_REQ_NO_RESPONSE))
		engine->requests.unanswered++;
	else if (request)
		engine->requests.partial++;
	return 0;
}

int cs_on_request(struct cs_engine *engine, const struct cs_ev_request *req)
{
	struct cs_request_stats *stats = &engine->requests;
	struct cs_request_split split;

	struct cs_conn *conn = cs_u64map_get(&engine->conns, req->sk);
	if (conn && req->hdr.ts_ns > conn->last_seen_ns)
		conn->last_seen_ns = req->hdr.ts_ns;
	if (req->flags & CS_REQ_UNREAD) /* its close follows: the probes write the two together */
		engine->lifecycle.unread_sk = req->sk;
	if (req->flags & CS_REQ_HELD_BACK)
		stats->held_back++;
	count_adopted(stats, conn, req);
	stats->send_eagain += req->send_eagain;
	struct cs_upstream_claim claim;
	cs_upstream_claim(engine, req, &claim);
	struct cs_request_setup setup;
	stats->last_sk = req->sk;
	stats->last_index = req->index;
	stats->last_was_request = cs_exchange_is_request(engine, conn, req, &setup);
	stats->last_setup = setup;
	if (!stats->last_was_request || !cs_split_request_setup(engine, req, &setup, &split)) {
		cs_clients_on_request(engine, req, NULL);
		return not_timed(engine, req, &claim, stats->last_was_request);
	}

	if (conn)
		conn->requests_counted += setup.commands;
	count_setup(stats, &setup, &split);
	struct cs_upstream_use use;
	cs_upstream_take(engine, req, &claim, pickup_from(conn, req, &setup), &split, &use);
	record_requests(engine, req, &split, setup.commands);
	cs_clients_on_request(engine, req, &split);
	cs_note_pauses(engine, req, &split);
	cs_note_worker(engine, req);
	keep_exemplar(stats, req, conn, &split, &use, setup.commands);
	return 0;
}
