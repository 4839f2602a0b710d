// SPDX-License-Identifier: BSD-2-Clause
/* What flamegraph keeps while it runs (see flame_collect.h). Pure. */
#include "flame_collect.h"
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
	keep_request(c, &r);
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
