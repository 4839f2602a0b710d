// SPDX-License-Identifier: BSD-2-Clause
/* What flamegraph keeps while it runs (see flame_collect.h). Pure. */
#include "flame_collect.h"
#include "accept_pool.h"
#include "slowest.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

int cs_flame_collect_init(struct cs_flame_collector *c)
{
	memset(c, 0, sizeof(*c));
	c->requests = calloc(CS_FLAME_MAX_REQUESTS, sizeof(*c->requests));
	if (!c->requests || cs_u64map_init(&c->stack_index, sizeof(uint32_t), CS_FLAME_MAX_STACKS)) {
		free(c->requests);
		return -ENOMEM;
	}
	return 0;
}

void cs_flame_collect_free(struct cs_flame_collector *c)
{
	for (size_t i = 0; i < c->stack_count; i++)
		free(c->stacks[i]);
	free(c->stacks);
	free(c->samples);
	free(c->off_cpu);
	free(c->requests);
	free(c->serving);
	free(c->pool_threads);
	cs_u64map_free(&c->stack_index);
	memset(c, 0, sizeof(*c));
}

/* Room for one more element of size in *array; false at the limit or out of memory. */
static bool grow(void **array, size_t *cap, size_t count, size_t size, size_t limit)
{
	if (count < *cap)
		return true;
	if (count >= limit)
		return false;
	size_t next = *cap ? 2 * *cap : 1024;
	if (next > limit)
		next = limit;
	void *grown = realloc(*array, next * size);
	if (!grown)
		return false;
	*array = grown;
	*cap = next;
	return true;
}

static uint64_t hash_stack(uint32_t tgid, const struct cs_stack *s, uint32_t nk, uint32_t nu)
{
	uint64_t hash = 1469598103934665603ull ^ tgid; /* FNV-1a over the words */
	hash = (hash ^ ((uint64_t)nk << 32 | nu)) * 1099511628211ull;
	for (uint32_t i = 0; i < nk; i++)
		hash = (hash ^ s->kernel_ips[i]) * 1099511628211ull;
	for (uint32_t i = 0; i < nu; i++)
		hash = (hash ^ s->user_ips[i]) * 1099511628211ull;
	return hash ? hash : 1;
}

static bool same_stack(const struct cs_flame_stack *a, uint32_t tgid, const struct cs_stack *s, uint32_t nk,
		       uint32_t nu)
{
	return a->tgid == tgid && a->kernel_frames == nk && a->user_frames == nu &&
	       !memcmp(a->ips, s->kernel_ips, nk * sizeof(uint64_t)) &&
	       !memcmp(a->ips + nk, s->user_ips, nu * sizeof(uint64_t));
}

/* The index of this stack, stored once; CS_FLAME_NO_STACK when it cannot be kept. */
static uint32_t intern(struct cs_flame_collector *c, uint32_t tgid, const struct cs_stack *s)
{
	uint32_t nk = s->kernel_frames < CS_STACK_DEPTH ? s->kernel_frames : CS_STACK_DEPTH;
	uint32_t nu = s->user_frames < CS_STACK_DEPTH ? s->user_frames : CS_STACK_DEPTH;
	uint64_t hash = hash_stack(tgid, s, nk, nu);
	uint32_t *slot = cs_u64map_get(&c->stack_index, hash);
	if (slot && same_stack(c->stacks[*slot - 1], tgid, s, nk, nu))
		return *slot - 1;
	if (!grow((void **)&c->stacks, &c->stack_cap, c->stack_count, sizeof(struct cs_flame_stack *), CS_FLAME_MAX_STACKS))
		return CS_FLAME_NO_STACK;
	struct cs_flame_stack *stack = malloc(sizeof(*stack) + (nk + nu) * sizeof(uint64_t));
	if (!stack)
		return CS_FLAME_NO_STACK;
	stack->tgid = tgid;
	stack->kernel_frames = (uint16_t)nk;
	stack->user_frames = (uint16_t)nu;
	memcpy(stack->ips, s->kernel_ips, nk * sizeof(uint64_t));
	memcpy(stack->ips + nk, s->user_ips, nu * sizeof(uint64_t));
	uint32_t index = (uint32_t)c->stack_count;
	c->stacks[c->stack_count++] = stack;
	/* A hash collision with another stack: this one is kept, just not indexed. */
	if (!slot) {
		slot = cs_u64map_put(&c->stack_index, hash, NULL);
		if (slot)
			*slot = index + 1;
	}
	return index;
}

int cs_flame_collect_stack_record(struct cs_flame_collector *c, const void *record, size_t len)
{
	const struct cs_event_header *hdr = record;
	if (len < sizeof(*hdr) || hdr->size != len) {
		c->malformed++;
		return -EINVAL;
	}
	if (hdr->type == CS_EV_CPU_SAMPLE && len == sizeof(struct cs_ev_cpu_sample)) {
		const struct cs_ev_cpu_sample *ev = record;
		if (!grow((void **)&c->samples, &c->sample_cap, c->sample_count, sizeof(*c->samples),
			  CS_FLAME_MAX_RECORDS)) {
			c->records_dropped++;
			return 0;
		}
		c->samples[c->sample_count++] = (struct cs_flame_sample){
			.ts_ns = hdr->ts_ns, .tid = ev->tid, .stack = intern(c, ev->tgid, &ev->stack),
		};
		return 0;
	}
	if (hdr->type == CS_EV_OFF_CPU && len == sizeof(struct cs_ev_off_cpu)) {
		const struct cs_ev_off_cpu *ev = record;
		if (ev->off_ns >= hdr->ts_ns) {
			c->malformed++;
			return -EINVAL;
		}
		if (!grow((void **)&c->off_cpu, &c->off_cpu_cap, c->off_cpu_count, sizeof(*c->off_cpu),
			  CS_FLAME_MAX_RECORDS)) {
			c->records_dropped++;
			return 0;
		}
		c->off_cpu[c->off_cpu_count++] = (struct cs_flame_off_cpu){
			.off_ns = ev->off_ns, .wake_ns = ev->wake_ns, .on_ns = hdr->ts_ns, .tid = ev->tid,
			.stack = intern(c, ev->tgid, &ev->stack),
		};
		return 0;
	}
	c->malformed++;
	return -EINVAL;
}

/* ---- the slowest requests (slowest.h) ----------------------------------------- */

_Static_assert(offsetof(struct cs_flame_request, split) == 0, "a request begins with its split");

static void keep_request(struct cs_flame_collector *c, const struct cs_flame_request *r)
{
	if (c->request_count >= CS_FLAME_MAX_REQUESTS)
		c->requests_not_kept++;
	cs_slowest_keep(c->requests, &c->request_count, CS_FLAME_MAX_REQUESTS, sizeof(*r), r);
}

static void add_serving(struct cs_flame_collector *c, uint32_t tid, uint64_t from_ns, uint64_t to_ns)
{
	if (!tid || to_ns <= from_ns)
		return;
	if (!grow((void **)&c->serving, &c->serving_cap, c->serving_count, sizeof(*c->serving),
		  CS_FLAME_MAX_RECORDS)) {
		c->records_dropped++;
		return;
	}
	c->serving[c->serving_count++] = (struct cs_flame_serving){ .from_ns = from_ns, .to_ns = to_ns, .tid = tid };
}

/*
 * The request's waits for a pool, the windows the split measured
 * (requests.c, handbacks.c), and the serving it gave its threads: the
 * reader's first read to last send, a worker's handler run for the reader.
 */
static void pool_waits(struct cs_flame_collector *c, const struct cs_engine *engine, const struct cs_ev_request *req,
		       struct cs_flame_request *r)
{
	const struct cs_conn *conn = cs_u64map_get(&engine->conns, req->sk);
	if (r->split.cause_ns[CS_CAUSE_ACCEPT_QUEUE] && conn) {
		r->accept_from_ns = conn->established_ns;
		r->accept_to_ns = conn->accept_ns;
	}
	struct cs_request_worker worker;
	bool handed_back = cs_request_worker(engine, req, &worker);
	if (r->split.cause_ns[CS_CAUSE_WORKER_POOL]) {
		r->pool_from_ns = req->flags & CS_REQ_HANDED_OFF ? r->pickup_ns : req->first_read_ns;
		r->pool_to_ns = handed_back ? worker.handler_start_ns : req->first_read_ns;
	}
	uint64_t end_ns = req->last_send_ns > req->first_read_ns ? req->last_send_ns : req->first_send_ns;
	add_serving(c, req->reader_tid, req->first_read_ns, end_ns);
	if (handed_back)
		add_serving(c, worker.worker_tid, worker.handler_start_ns, worker.handler_end_ns);
}

void cs_flame_collect_request(struct cs_flame_collector *c, const struct cs_engine *engine, const void *record,
			      size_t len)
{
	const struct cs_event_header *hdr = record;
	if (len != sizeof(struct cs_ev_request) || hdr->type != CS_EV_REQUEST || hdr->size != len)
		return;
	const struct cs_ev_request *req = record;
	struct cs_flame_request r = {};
	/* The engine, fed first, knows what the record was: a TLS handshake's exchange is no request. */
	struct cs_request_setup setup;
	int verdict = cs_engine_request_verdict(engine, req, &setup);
	if (verdict == 0)
		return;
	if (verdict < 0)
		cs_setup_from_record(req, &setup);
	if (!cs_split_request_setup(engine, req, &setup, &r.split))
		return;
	c->requests_seen++;
	/* The same windows cs_split_request measured. */
	r.pickup_ns = req->start_ns;
	if (setup.first && !setup.tls && r.split.cause_ns[CS_CAUSE_ACCEPT_QUEUE]) {
		const struct cs_conn *conn = cs_u64map_get(&engine->conns, req->sk);
		if (conn)
			r.pickup_ns = conn->accept_ns;
	}
	r.first_read_ns = req->first_read_ns;
	r.first_send_ns = req->first_send_ns;
	r.drain_end_ns = req->drain_end_ns > req->last_send_ns ? req->drain_end_ns : req->last_send_ns;
	r.reader_tid = req->reader_tid;
	r.sender_tid = req->sender_tid ? req->sender_tid : req->reader_tid;
	r.tgid = req->tgid;
	r.port = req->listener_port;
	pool_waits(c, engine, req, &r);
	keep_request(c, &r);
}

/* ---- the pools' threads ------------------------------------------------------------ */

static void add_pool_thread(struct cs_flame_collector *c, enum cs_cause cause, uint32_t key, uint32_t tid)
{
	if (!grow((void **)&c->pool_threads, &c->pool_thread_cap, c->pool_thread_count, sizeof(*c->pool_threads),
		  CS_FLAME_MAX_RECORDS)) {
		c->records_dropped++;
		return;
	}
	c->pool_threads[c->pool_thread_count++] = (struct cs_flame_pool_thread){ .cause = cause, .key = key, .tid = tid };
}

static void visit_thread(uint64_t tid, void *value, void *ctx)
{
	const struct cs_thread_stats *t = value;
	if (cs_thread_roles(t) & (CS_ROLE_WORKER | CS_ROLE_CARRIER))
		add_pool_thread(ctx, CS_CAUSE_WORKER_POOL, t->tgid, (uint32_t)tid);
}

int cs_flame_collect_pools(struct cs_flame_collector *c, const struct cs_engine *engine)
{
	uint64_t dropped = c->records_dropped;
	c->pool_thread_count = 0;
	cs_u64map_each(&engine->threads, visit_thread, c);
	for (size_t i = 0; i < engine->listener_count; i++) {
		const struct cs_listener_stats *l = &engine->listeners[i];
		struct cs_accept_pool pool;
		if (!cs_listener_accept_pool(engine, l, &pool))
			continue;
		for (size_t w = 0; w < l->worker_count; w++)
			if (cs_accept_pool_worker(engine, &l->workers[w]))
				add_pool_thread(c, CS_CAUSE_ACCEPT_QUEUE, l->port, l->workers[w].tid);
	}
	return c->records_dropped == dropped ? 0 : -ENOMEM;
}

static int cmp_slowest_first(const void *a, const void *b)
{
	const struct cs_flame_request *x = a, *y = b;
	return x->split.total_ns > y->split.total_ns ? -1 : x->split.total_ns < y->split.total_ns;
}

size_t cs_flame_collect_tail(struct cs_flame_collector *c, uint64_t threshold_ns)
{
	qsort(c->requests, c->request_count, sizeof(*c->requests), cmp_slowest_first);
	size_t n = 0;
	while (n < c->request_count && c->requests[n].split.total_ns >= threshold_ns)
		n++;
	return n;
}
