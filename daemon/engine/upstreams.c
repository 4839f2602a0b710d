// SPDX-License-Identifier: BSD-2-Clause
/*
 * The target's upstreams: each exchange on a connection it opened
 * (struct cs_ev_upstream), its upstream's statistics, and its join to the
 * request it served.
 *
 * The join. An exchange's record comes before the record of the request
 * it served: it is written at the answer's first read, the request's once
 * its answer is out. The probes say which requests the exchange's thread
 * had read and not answered over the whole exchange: a thread that blocks
 * in the call had one, the request it serves; an event loop may have had
 * several, and then the exchange is not joined (ambiguous), never given
 * to one of them. With exactly one, the exchange waits here, keyed by that
 * request's thread and first read, for the request's record, whose
 * handler time it then splits: the exchange's connect, its wait for the
 * first byte and the read are upstream, the rest stays handler.
 *
 * A loop that blocked in an exchange (it read no request meanwhile, and
 * was off its CPU for most of it) kept the requests that came meanwhile
 * waiting: of their wait for the loop (event_loop), the time it spent
 * blocked is upstream too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "engine_internal.h"
#include "tables.h"

const char *const cs_unjoined_names[CS_UNJOINED_COUNT] = {
	[CS_UNJOINED_NO_REQUEST] = "no_request",
	[CS_UNJOINED_AMBIGUOUS] = "ambiguous",
	[CS_UNJOINED_UNMATCHED] = "unmatched",
};

/* A request waiting for its record: its exchanges, in the order they came. */
struct pending_request {
	uint64_t read_ns;  /* its first read */
	uint64_t last_ns;  /* its latest exchange's record */
	uint32_t tid;      /* its reader, the exchanges' sender */
	uint32_t count;
	struct cs_upstream_exchange exchanges[CS_UPSTREAM_CLAIM_MAX];
};

/* The exchanges a thread last blocked in (a ring, the oldest overwritten). */
#define BLOCKED_RECENT 8

struct blocked_thread {
	struct cs_upstream_exchange spans[BLOCKED_RECENT];
	uint32_t next;
	uint32_t pad;
};

/* A request waiting this long for its record is taken for lost, as a connection without a record is. */
#define PENDING_TIMEOUT_NS CS_CONN_TIMEOUT_NS
#define PENDING_MAX 65536
#define BLOCKED_THREADS_MAX 16384

int cs_upstreams_init(struct cs_engine *engine)
{
	if (cs_u64map_init(&engine->upstream_pending, sizeof(struct pending_request), PENDING_MAX) ||
	    cs_u64map_init(&engine->upstream_blocked, sizeof(struct blocked_thread), BLOCKED_THREADS_MAX) ||
	    cs_upstream_turns_init(engine) || cs_upstream_queue_init(engine))
		return -ENOMEM;
	return 0;
}

void cs_upstreams_free(struct cs_engine *engine)
{
	for (size_t i = 0; i < engine->upstream_count; i++) {
		free(engine->upstreams[i].connect_ns);
		free(engine->upstreams[i].wait_ns);
		free(engine->upstreams[i].read_ns);
	}
	free(engine->upstreams);
	cs_u64map_free(&engine->upstream_pending);
	cs_u64map_free(&engine->upstream_blocked);
	cs_upstream_turns_free(engine);
	cs_upstream_queue_free(engine);
}

struct cs_upstream_stats *cs_get_upstream(struct cs_engine *engine, const struct cs_tuple *tuple)
{
	for (size_t i = 0; i < engine->upstream_count; i++) {
		struct cs_upstream_stats *u = &engine->upstreams[i];
		if (u->port == tuple->remote_port && !memcmp(u->addr, tuple->remote_addr, sizeof(u->addr)) &&
		    (u->family == AF_UNIX) == (tuple->family == AF_UNIX))
			return u;
	}
	if (engine->upstream_count == CS_UPSTREAMS_MAX)
		return NULL;
	if (!engine->upstreams) {
		engine->upstreams = calloc(CS_UPSTREAMS_MAX, sizeof(*engine->upstreams));
		if (!engine->upstreams)
			return NULL;
	}
	struct cs_upstream_stats *u = &engine->upstreams[engine->upstream_count];
	memset(u, 0, sizeof(*u));
	u->connect_ns = malloc(sizeof(*u->connect_ns));
	u->wait_ns = malloc(sizeof(*u->wait_ns));
	u->read_ns = malloc(sizeof(*u->read_ns));
	if (!u->connect_ns || !u->wait_ns || !u->read_ns) {
		free(u->connect_ns);
		free(u->wait_ns);
		free(u->read_ns);
		return NULL;
	}
	cs_hist_init(u->connect_ns);
	cs_hist_init(u->wait_ns);
	cs_hist_init(u->read_ns);
	memcpy(u->addr, tuple->remote_addr, sizeof(u->addr));
	u->port = tuple->remote_port;
	u->family = tuple->family;
	engine->upstream_count++;
	return u;
}

static uint64_t span(uint64_t from, uint64_t to)
{
	return to > from ? to - from : 0;
}

/* A request's key: its reader and its first read (never 0). */
static uint64_t request_key(uint32_t tid, uint64_t read_ns)
{
	uint64_t key = ((uint64_t)tid * 0x9e3779b97f4a7c15ull) ^ read_ns;
	return key ? key : 1;
}

/* The exchange as its request's split takes it. */
static void exchange_of(const struct cs_ev_upstream *ev, uint16_t upstream, struct cs_upstream_exchange *x)
{
	bool connect = (ev->flags & CS_UP_CONNECT) != 0;
	*x = (struct cs_upstream_exchange){
		.start_ns = ev->start_ns,
		.connect_ns = connect ? ev->connect_ns : 0,
		.send_ns = ev->send_ns,
		.first_byte_ns = ev->first_byte_ns,
		.first_read_ns = ev->first_read_ns,
		.sk = ev->sk,
		.syn_retransmits = connect ? ev->syn_retransmits : 0,
		.upstream = upstream,
		.local_port = ev->tuple.local_port,
	};
}

/*
 * Its thread blocked in it: read no request meanwhile, and was on a CPU
 * for less than half of it (sum_exec_runtime, to a tick).
 */
static bool thread_blocked(const struct cs_ev_upstream *ev)
{
	uint64_t length = span(ev->start_ns, ev->first_read_ns);
	return !ev->reads_between && !(ev->flags & CS_UP_CPU_UNKNOWN) && length && 2 * ev->sender_cpu_ns < length;
}

static void note_blocked(struct cs_engine *engine, const struct cs_ev_upstream *ev, const struct cs_upstream_exchange *x)
{
	if (!x->blocked)
		return;
	struct blocked_thread *thread = cs_u64map_put(&engine->upstream_blocked, ev->sender_tid ? ev->sender_tid : 1, NULL);
	if (!thread)
		return;
	thread->spans[thread->next % BLOCKED_RECENT] = *x;
	thread->next++;
}

/* Whether the exchange served exactly one request; else why not. */
static bool served_one(const struct cs_ev_upstream *ev, enum cs_upstream_unjoined *why)
{
	if (ev->flags & CS_UP_CROWDED || ev->open_requests > 1) {
		*why = CS_UNJOINED_AMBIGUOUS;
		return false;
	}
	if (ev->open_requests == 0 || !ev->request_read_ns) {
		*why = CS_UNJOINED_NO_REQUEST;
		return false;
	}
	return true;
}

/* The exchange waits for its request's record; false: no room (unmatched). */
static bool add_pending(struct cs_engine *engine, const struct cs_ev_upstream *ev, const struct cs_upstream_exchange *x)
{
	int created = 0;
	struct pending_request *p = cs_u64map_put(&engine->upstream_pending,
						  request_key(ev->sender_tid, ev->request_read_ns), &created);
	if (!p)
		return false;
	if (created) {
		p->read_ns = ev->request_read_ns;
		p->tid = ev->sender_tid;
	} else if (p->read_ns != ev->request_read_ns || p->tid != ev->sender_tid) {
		return false; /* another request's key: not this one's to take */
	}
	if (p->count == CS_UPSTREAM_CLAIM_MAX)
		return false;
	p->exchanges[p->count++] = *x;
	p->last_ns = ev->hdr.ts_ns;
	return true;
}

int cs_on_upstream(struct cs_engine *engine, const struct cs_ev_upstream *ev)
{
	struct cs_upstream_stats *u = cs_get_upstream(engine, &ev->tuple);
	if (!u) {
		engine->upstream_untracked++;
		return 0;
	}
	if (ev->connect_ns) {
		u->connects++;
		u->syn_retransmits += ev->syn_retransmits;
		u->connects_retransmitted += ev->syn_retransmits > 0;
		cs_hist_record(u->connect_ns, ev->connect_ns);
	}
	if (ev->flags & CS_UP_UNREAD) {
		u->unread++;
		return 0;
	}
	u->exchanges++;
	uint64_t answered_ns = ev->first_byte_ns ? ev->first_byte_ns : ev->first_read_ns;
	cs_hist_record(u->wait_ns, span(ev->send_ns, answered_ns));
	if (ev->first_byte_ns)
		cs_hist_record(u->read_ns, span(ev->first_byte_ns, ev->first_read_ns));
	struct cs_upstream_exchange x;
	exchange_of(ev, (uint16_t)(u - engine->upstreams + 1), &x);
	x.blocked = thread_blocked(ev);
	note_blocked(engine, ev, &x);
	enum cs_upstream_unjoined why = CS_UNJOINED_UNMATCHED;
	bool one = served_one(ev, &why);
	cs_upstream_turn_note(engine, ev, &x, !one && why == CS_UNJOINED_AMBIGUOUS);
	cs_upstream_queue_note(engine, &x);
	if (!one || !add_pending(engine, ev, &x))
		u->not_joined[why]++;
	else
		u->pending++;
	return 0;
}

static struct cs_upstream_stats *upstream_at(struct cs_engine *engine, uint16_t upstream)
{
	return upstream && upstream <= engine->upstream_count ? &engine->upstreams[upstream - 1] : NULL;
}

/* Exchanges that will not be joined after all: unmatched. */
static void unmatched(struct cs_engine *engine, const struct cs_upstream_exchange *x, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		struct cs_upstream_stats *u = upstream_at(engine, x[i].upstream);
		if (u)
			u->not_joined[CS_UNJOINED_UNMATCHED]++;
	}
}

void cs_upstream_claim(struct cs_engine *engine, const struct cs_ev_request *req, struct cs_upstream_claim *claim)
{
	claim->count = 0;
	/* No exchange waits for its request, no loop's turn is kept: nothing to claim (most targets, always). */
	if (!engine->upstream_pending.count && !engine->upstream_turns.count)
		return;
	uint64_t key = request_key(req->reader_tid, req->first_read_ns);
	struct pending_request *p = req->first_read_ns ? cs_u64map_get(&engine->upstream_pending, key) : NULL;
	if (p && p->tid == req->reader_tid && p->read_ns == req->first_read_ns) {
		claim->count = p->count;
		memcpy(claim->exchanges, p->exchanges, p->count * sizeof(p->exchanges[0]));
		cs_u64map_remove(&engine->upstream_pending, key);
		for (size_t i = 0; i < claim->count; i++) {
			struct cs_upstream_stats *u = upstream_at(engine, claim->exchanges[i].upstream);
			if (u && u->pending)
				u->pending--;
		}
	}
	cs_upstream_turn_claim(engine, req, claim); /* a loop's: by its turn, when none was joined so */
}

void cs_upstream_unclaimed(struct cs_engine *engine, const struct cs_upstream_claim *claim)
{
	unmatched(engine, claim->exchanges, claim->count);
}

/* An exchange's parts: the request's wait for a connection to it, its connect, its wait for the first byte, the read. */
struct parts {
	uint64_t queue_ns, connect_ns, wait_ns, read_ns;
};

static uint64_t parts_sum(const struct parts *p)
{
	return p->queue_ns + p->connect_ns + p->wait_ns + p->read_ns;
}

/*
 * The parts cut to take in all: the read first (the thread's own pickup
 * of the answer, where its waits for a CPU fall), then the wait for the
 * first byte, then the connect, then the wait for a connection.
 */
static void parts_cut(struct parts *p, uint64_t take)
{
	uint64_t *cut_first[] = { &p->read_ns, &p->wait_ns, &p->connect_ns, &p->queue_ns };
	uint64_t excess = parts_sum(p) > take ? parts_sum(p) - take : 0;
	for (size_t i = 0; i < sizeof(cut_first) / sizeof(cut_first[0]) && excess; i++) {
		uint64_t cut = *cut_first[i] < excess ? *cut_first[i] : excess;
		*cut_first[i] -= cut;
		excess -= cut;
	}
}

/* The parts of x that lie within [from, to] (no wait for a connection: cs_upstream_queued tells it). */
static void parts_within(const struct cs_upstream_exchange *x, uint64_t from, uint64_t to, struct parts *p)
{
	p->queue_ns = 0;
	uint64_t answered = x->first_byte_ns ? x->first_byte_ns : x->first_read_ns;
	uint64_t connect_end = x->start_ns + x->connect_ns;
#define OVERLAP(a, b) span((a) > from ? (a) : from, (b) < to ? (b) : to)
	p->connect_ns = x->connect_ns ? OVERLAP(x->start_ns, connect_end) : 0;
	p->wait_ns = OVERLAP(x->send_ns, answered);
	p->read_ns = x->first_byte_ns ? OVERLAP(x->first_byte_ns, x->first_read_ns) : 0;
#undef OVERLAP
}

/* Move up to the parts' time from x's cause to upstream, into use (and its upstream's figures). */
static void take_parts(struct cs_engine *engine, struct parts *p, const struct cs_upstream_exchange *x,
		       enum cs_cause cause, struct cs_request_split *split, struct cs_upstream_use *use)
{
	uint16_t upstream = x->upstream;
	uint64_t sum = parts_sum(p), take = sum < split->cause_ns[cause] ? sum : split->cause_ns[cause];
	if (!take)
		return;
	parts_cut(p, take);
	split->cause_ns[cause] -= take;
	split->cause_ns[CS_CAUSE_UPSTREAM] += take;
	use->queue_ns += p->queue_ns;
	use->connect_ns += p->connect_ns;
	use->wait_ns += p->wait_ns;
	use->read_ns += p->read_ns;
	struct cs_upstream_stats *u = upstream_at(engine, upstream);
	if (u) {
		u->waited_ns += take;
		u->queued_requests += p->queue_ns > 0;
		u->queued_ns += p->queue_ns;
	}
	/* The upstream that took the most of it names the request's. */
	if (upstream == use->upstream) {
		use->upstream_ns += take;
	} else if (take > use->upstream_ns) {
		use->upstream = upstream;
		use->upstream_ns = take;
		use->exchange_take_ns = 0;
	}
	/* Its exchange that took the most: where the request went on the upstream's side (a chained hop). */
	if (upstream == use->upstream && take > use->exchange_take_ns) {
		use->exchange_take_ns = take;
		use->local_port = x->local_port;
		use->exchange_send_ns = x->send_ns;
		use->exchange_answer_ns = x->first_byte_ns ? x->first_byte_ns : x->first_read_ns;
	}
}

/*
 * Of the request's run-queue time between its read and its send, what
 * fell while it waited for its upstream's first byte: its thread was
 * runnable then (serving others), but the request waited on the upstream,
 * not on a CPU. A thread that blocked in its calls waited for a CPU only
 * outside them (once woken by the answer): all that the rest of the span
 * cannot hold. A loop that served others meanwhile waited all along: its
 * share of the span, at least that.
 */
static uint64_t runq_while_waiting(const struct cs_ev_request *req, uint64_t waited_ns, bool blocked)
{
	uint64_t handler_span = span(req->first_read_ns, req->first_send_ns);
	uint64_t runq = req->handler_runq_ns < handler_span ? req->handler_runq_ns : handler_span;
	uint64_t elsewhere = handler_span > waited_ns ? handler_span - waited_ns : 0;
	uint64_t at_least = runq > elsewhere ? runq - elsewhere : 0;
	if (blocked || !handler_span)
		return at_least;
	uint64_t spread = (uint64_t)((unsigned __int128)runq * (waited_ns < handler_span ? waited_ns : handler_span) /
				     handler_span);
	return spread > at_least ? spread : at_least;
}

/* The joined exchanges that lie within the request's read -> send: out of its handler time. */
static void take_joined(struct cs_engine *engine, const struct cs_ev_request *req, const struct cs_upstream_claim *claim,
			struct cs_request_split *split, struct cs_upstream_use *use)
{
	struct parts parts[CS_UPSTREAM_CLAIM_MAX] = { { 0 } };
	bool within[CS_UPSTREAM_CLAIM_MAX] = { false };
	uint64_t waited = 0;
	bool blocked = true;
	for (size_t i = 0; i < claim->count; i++) {
		const struct cs_upstream_exchange *x = &claim->exchanges[i];
		within[i] = x->start_ns >= req->first_read_ns && x->first_read_ns <= req->first_send_ns;
		if (!within[i]) {
			unmatched(engine, x, 1);
			continue;
		}
		parts_within(x, x->start_ns, x->first_read_ns, &parts[i]);
		parts[i].queue_ns = cs_upstream_queued(engine, req->first_read_ns, x);
		waited += parts[i].queue_ns + parts[i].connect_ns + parts[i].wait_ns;
		blocked &= x->blocked;
	}
	uint64_t runq = runq_while_waiting(req, waited, blocked);
	if (runq > split->cause_ns[CS_CAUSE_RUN_QUEUE])
		runq = split->cause_ns[CS_CAUSE_RUN_QUEUE];
	split->cause_ns[CS_CAUSE_RUN_QUEUE] -= runq;
	split->cause_ns[CS_CAUSE_HANDLER] += runq;
	for (size_t i = 0; i < claim->count; i++) {
		if (!within[i])
			continue;
		struct cs_upstream_stats *u = upstream_at(engine, claim->exchanges[i].upstream);
		if (u)
			u->joined++;
		use->exchanges++;
		use->syn_retransmits += claim->exchanges[i].syn_retransmits;
		take_parts(engine, &parts[i], &claim->exchanges[i], CS_CAUSE_HANDLER, split, use);
	}
}

/* Its wait for its loop, while the loop was blocked in an exchange: out of event_loop. */
static void take_blocked_loop(struct cs_engine *engine, const struct cs_ev_request *req, uint64_t pickup_from,
			      struct cs_request_split *split, struct cs_upstream_use *use)
{
	if ((req->flags & CS_REQ_HANDED_OFF) || !split->cause_ns[CS_CAUSE_EVENT_LOOP])
		return;
	const struct blocked_thread *thread = cs_u64map_get(&engine->upstream_blocked, req->reader_tid ? req->reader_tid : 1);
	if (!thread)
		return;
	for (size_t i = 0; i < BLOCKED_RECENT && i < thread->next; i++) {
		struct parts p;
		parts_within(&thread->spans[i], pickup_from, req->first_read_ns, &p);
		uint64_t before = split->cause_ns[CS_CAUSE_UPSTREAM];
		take_parts(engine, &p, &thread->spans[i], CS_CAUSE_EVENT_LOOP, split, use);
		use->loop_blocked |= split->cause_ns[CS_CAUSE_UPSTREAM] > before;
	}
}

/* Count the request once for each upstream that took some of its time. */
static void count_waited(struct cs_engine *engine, const struct cs_upstream_claim *claim, const struct cs_upstream_use *use)
{
	uint16_t counted[CS_UPSTREAM_CLAIM_MAX + 1];
	size_t n = 0;
	if (!use->upstream)
		return;
	counted[n++] = use->upstream;
	for (size_t i = 0; i < claim->count; i++) {
		size_t j = 0;
		while (j < n && counted[j] != claim->exchanges[i].upstream)
			j++;
		if (j == n)
			counted[n++] = claim->exchanges[i].upstream;
	}
	for (size_t i = 0; i < n; i++) {
		struct cs_upstream_stats *u = upstream_at(engine, counted[i]);
		if (u) {
			u->requests_waited++;
			u->loop_waits += use->loop_blocked && counted[i] == use->upstream;
		}
	}
}

void cs_upstream_take(struct cs_engine *engine, const struct cs_ev_request *req, const struct cs_upstream_claim *claim,
		      uint64_t pickup_from, struct cs_request_split *split, struct cs_upstream_use *use)
{
	memset(use, 0, sizeof(*use));
	/*
	 * Most requests have nothing to take, and a target without upstreams
	 * never does: then the three steps below change nothing. take_joined,
	 * with no exchange, waited 0 and so moves no run-queue time
	 * (runq_while_waiting gives 0); take_blocked_loop finds no thread in
	 * an empty map; count_waited sees no upstream in use.
	 */
	if (!claim->count && !engine->upstream_blocked.count)
		return;
	take_joined(engine, req, claim, split, use);
	take_blocked_loop(engine, req, pickup_from, split, use);
	count_waited(engine, claim, use);
}

struct sweep_ctx {
	struct cs_engine *engine;
	uint64_t now_ns;
};

static int pending_expired(uint64_t key, const void *value, void *ctx_ptr)
{
	(void)key;
	const struct pending_request *p = value;
	struct sweep_ctx *ctx = ctx_ptr;
	if (ctx->now_ns <= p->last_ns || ctx->now_ns - p->last_ns < PENDING_TIMEOUT_NS)
		return 0;
	for (size_t i = 0; i < p->count; i++) {
		struct cs_upstream_stats *u = upstream_at(ctx->engine, p->exchanges[i].upstream);
		if (u && u->pending)
			u->pending--;
	}
	unmatched(ctx->engine, p->exchanges, p->count);
	return 1;
}

/* A thread whose latest blocking exchange is that old (or that has gone) holds no request's wait. */
static int blocked_expired(uint64_t key, const void *value, void *ctx_ptr)
{
	(void)key;
	const struct blocked_thread *thread = value;
	const struct sweep_ctx *ctx = ctx_ptr;
	uint64_t last_ns = thread->next ? thread->spans[(thread->next - 1) % BLOCKED_RECENT].first_read_ns : 0;
	return ctx->now_ns > last_ns && ctx->now_ns - last_ns >= PENDING_TIMEOUT_NS;
}

void cs_upstreams_sweep(struct cs_engine *engine, uint64_t now_ns)
{
	struct sweep_ctx ctx = { .engine = engine, .now_ns = now_ns };
	cs_u64map_remove_if(&engine->upstream_pending, pending_expired, &ctx);
	cs_u64map_remove_if(&engine->upstream_blocked, blocked_expired, &ctx);
	cs_upstream_turns_sweep(engine, now_ns);
}
