// SPDX-License-Identifier: BSD-2-Clause
/*
 * The target's local clients (client_stats.h): each read of an answer at
 * the client's end of a connection, and the join of that read to the
 * server's request it answered, by the connection's key (cs_client_key)
 * that both ends' records carry. The two records come in either order: a
 * kept-alive connection's request record is written when its next request
 * arrives (after the client read this answer), a closed one's at the
 * server's close (before). Whichever comes first waits in the other's
 * entry for a second.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "units.h"

/* Connections whose read or request waits for the other: bounded, and swept a second after. */
#define CLIENT_PENDING_MAX (1u << 16)
#define CLIENT_PENDING_NS NS_PER_SEC

struct client_pending {
	uint64_t updated_ns;        /* its latest record's time */
	uint64_t arrived_ns;        /* an unjoined read: its answer's arrival (0: none) */
	uint64_t read_ns;           /* ... the latest read of it */
	uint64_t req_first_send_ns; /* an unjoined request: its answer's start (0: none) */
	uint64_t req_end_ns;        /* ... its last byte out */
	uint64_t req_total_ns;      /* ... the server's latency */
	uint16_t client;            /* index + 1 into engine->clients of the read's client */
	uint8_t pad[6];
};

/*
 * A server connection's client, local or not, told by whichever comes
 * first: the client's first read (local) or the server's close. A
 * server that closes first writes its close before its client reads
 * the last answer: a close waits a second for that read before its
 * connection is counted remote.
 */
enum client_conn_state {
	CLIENT_SIDE_SEEN = 1, /* its client read: local, until its close */
	CLOSED_UNSEEN,        /* closed with requests, no client read yet */
};

struct client_conn {
	uint64_t closed_ns;
	uint32_t state; /* enum client_conn_state */
	uint32_t pad;
};

#define CLIENT_CONNS_MAX (1u << 18)

int cs_clients_init(struct cs_engine *engine)
{
	if (cs_u64map_init(&engine->client_pending, sizeof(struct client_pending), CLIENT_PENDING_MAX) ||
	    cs_u64map_init(&engine->client_conns, sizeof(struct client_conn), CLIENT_CONNS_MAX))
		return -ENOMEM;
	return 0;
}

void cs_clients_free(struct cs_engine *engine)
{
	for (size_t i = 0; i < engine->client_count; i++) {
		struct cs_client_stats *c = &engine->clients[i];
		free(c->read_delay_ns);
		free(c->runq_ns);
		free(c->seen_ns);
		free(c->server_ns);
	}
	free(engine->clients);
	cs_u64map_free(&engine->client_pending);
	cs_u64map_free(&engine->client_conns);
}

static struct cs_client_stats *client_of(struct cs_engine *engine, uint32_t tgid)
{
	for (size_t i = 0; i < engine->client_count; i++)
		if (engine->clients[i].tgid == tgid)
			return &engine->clients[i];
	if (engine->client_count == CS_CLIENTS_MAX)
		return NULL;
	if (!engine->clients) {
		engine->clients = calloc(CS_CLIENTS_MAX, sizeof(*engine->clients));
		if (!engine->clients)
			return NULL;
	}
	struct cs_client_stats *c = &engine->clients[engine->client_count];
	memset(c, 0, sizeof(*c));
	struct cs_hist **hists[] = { &c->read_delay_ns, &c->runq_ns, &c->seen_ns, &c->server_ns };
	for (size_t h = 0; h < sizeof(hists) / sizeof(hists[0]); h++) {
		*hists[h] = malloc(sizeof(struct cs_hist));
		if (!*hists[h]) {
			for (size_t k = 0; k < h; k++)
				free(*hists[k]);
			return NULL;
		}
		cs_hist_init(*hists[h]);
	}
	c->tgid = tgid;
	engine->client_count++;
	return c;
}

/* The reading thread's totals, at its first read and its latest. */
static void note_thread(struct cs_client_stats *c, const struct cs_ev_client_read *ev)
{
	struct cs_client_thread *t = NULL;
	uint32_t followed = c->threads_seen < CS_CLIENT_THREADS_MAX ? c->threads_seen : CS_CLIENT_THREADS_MAX;
	for (uint32_t i = 0; i < followed && !t; i++)
		if (c->threads[i].tid == ev->tid)
			t = &c->threads[i];
	if (!t) {
		c->threads_seen++;
		if (followed == CS_CLIENT_THREADS_MAX)
			return;
		t = &c->threads[followed];
		t->tid = ev->tid;
		t->first_ns = ev->hdr.ts_ns;
		t->first_cpu_ns = ev->thread_cpu_ns;
		t->first_runq_ns = ev->thread_runq_ns;
	}
	t->reads++;
	t->last_ns = ev->hdr.ts_ns;
	t->last_cpu_ns = ev->thread_cpu_ns;
	t->last_runq_ns = ev->thread_runq_ns;
}

static uint64_t span(uint64_t from, uint64_t to)
{
	return to > from ? to - from : 0;
}

/* A request joined to its client's read: what the client saw of it. */
static void join(struct cs_engine *engine, const struct client_pending *read, uint64_t first_send_ns,
		 uint64_t end_ns, uint64_t total_ns)
{
	if (!read->client || read->client > engine->client_count || read->arrived_ns < first_send_ns)
		return;
	struct cs_client_stats *c = &engine->clients[read->client - 1];
	c->joined++;
	cs_hist_record(c->server_ns, total_ns);
	cs_hist_record(c->seen_ns, total_ns + span(end_ns, read->read_ns));
}

/* A connection's client read from its end: a local one (its server's close may have come already). */
static void client_side_seen(struct cs_engine *engine, uint64_t key)
{
	struct client_conn *conn = cs_u64map_get(&engine->client_conns, key);
	if (conn && conn->state == CLOSED_UNSEEN) {
		cs_u64map_remove(&engine->client_conns, key);
		return;
	}
	conn = cs_u64map_put(&engine->client_conns, key, NULL);
	if (conn)
		conn->state = CLIENT_SIDE_SEEN;
}

void cs_clients_on_close(struct cs_engine *engine, const struct cs_ev_conn_close *ev)
{
	uint32_t client_addr;
	memcpy(&client_addr, &ev->tuple.remote_addr[12], sizeof(client_addr)); /* v4-mapped, or v6's last word */
	uint64_t key = cs_client_key(client_addr, ev->tuple.remote_port, ev->tuple.local_port);
	struct client_conn *conn = cs_u64map_get(&engine->client_conns, key);
	if (conn && conn->state == CLIENT_SIDE_SEEN) {
		cs_u64map_remove(&engine->client_conns, key);
		return;
	}
	if (!ev->requests || !ev->tuple.remote_port || !(ev->flags & CS_CLOSE_CLIENTS_FOLLOWED))
		return;
	conn = cs_u64map_put(&engine->client_conns, key, NULL);
	if (!conn) {
		engine->remote_connections++; /* full: counted now, not waited for */
		return;
	}
	conn->state = CLOSED_UNSEEN;
	conn->closed_ns = ev->hdr.ts_ns;
}

int cs_on_client_read(struct cs_engine *engine, const struct cs_ev_client_read *ev)
{
	struct cs_client_stats *c = client_of(engine, ev->tgid);
	if (!c) {
		engine->client_reads_untracked++;
		return 0;
	}
	if (ev->comm[0]) { /* a socket's first read names its thread; the others leave it empty */
		memcpy(c->comm, ev->comm, CS_COMM_LEN);
		c->comm[CS_COMM_LEN - 1] = '\0';
	}
	if (ev->flags & CS_CLIENT_FIRST) {
		c->connections++;
		client_side_seen(engine, ev->client_key);
	}
	note_thread(c, ev);
	if (!(ev->flags & CS_CLIENT_LEFTOVER)) {
		c->reads++;
		cs_hist_record(c->read_delay_ns, span(ev->arrived_ns, ev->hdr.ts_ns));
		if (!(ev->flags & CS_CLIENT_RUNQ_UNKNOWN))
			cs_hist_record(c->runq_ns, ev->runq_ns);
	}
	int created;
	struct client_pending *p = cs_u64map_put(&engine->client_pending, ev->client_key, &created);
	if (!p)
		return 0; /* full: this answer is not joined (the read itself is counted) */
	p->updated_ns = ev->hdr.ts_ns;
	if (!p->arrived_ns || !(ev->flags & CS_CLIENT_LEFTOVER))
		p->arrived_ns = ev->arrived_ns;
	p->read_ns = ev->hdr.ts_ns;
	p->client = (uint16_t)(c - engine->clients + 1);
	if (p->req_first_send_ns) { /* its request's record came first (the server closed) */
		join(engine, p, p->req_first_send_ns, p->req_end_ns, p->req_total_ns);
		cs_u64map_remove(&engine->client_pending, ev->client_key);
	}
	return 0;
}

void cs_clients_on_request(struct cs_engine *engine, const struct cs_ev_request *req,
			   const struct cs_request_split *split)
{
	if (!req->client_key || !engine->client_count)
		return;
	struct client_pending *p = cs_u64map_get(&engine->client_pending, req->client_key);
	uint64_t end_ns = req->drain_end_ns > req->last_send_ns ? req->drain_end_ns : req->last_send_ns;
	if (p && p->arrived_ns) {
		if (split)
			join(engine, p, req->first_send_ns, end_ns, split->total_ns);
		cs_u64map_remove(&engine->client_pending, req->client_key);
		return;
	}
	if (!split)
		return;
	int created;
	p = cs_u64map_put(&engine->client_pending, req->client_key, &created);
	if (!p)
		return;
	p->updated_ns = req->hdr.ts_ns;
	p->req_first_send_ns = req->first_send_ns;
	p->req_end_ns = end_ns;
	p->req_total_ns = split->total_ns;
}

static int pending_stale(uint64_t key, const void *value, void *ctx)
{
	(void)key;
	const struct client_pending *p = value;
	return p->updated_ns + CLIENT_PENDING_NS < *(const uint64_t *)ctx;
}

static int closed_unseen(uint64_t key, const void *value, void *ctx)
{
	(void)key;
	const struct client_conn *conn = value;
	return conn->state == CLOSED_UNSEEN && conn->closed_ns + CLIENT_PENDING_NS < *(const uint64_t *)ctx;
}

void cs_clients_sweep(struct cs_engine *engine, uint64_t now_ns)
{
	if (engine->client_pending.count)
		cs_u64map_remove_if(&engine->client_pending, pending_stale, &now_ns);
	if (engine->client_conns.count)
		engine->remote_connections += cs_u64map_remove_if(&engine->client_conns, closed_unseen, &now_ns);
}

static void count_closed_unseen(uint64_t key, void *value, void *ctx)
{
	(void)key;
	*(uint64_t *)ctx += ((const struct client_conn *)value)->state == CLOSED_UNSEEN;
}

uint64_t cs_engine_remote_connections(const struct cs_engine *engine)
{
	uint64_t closed_unseen = 0;
	cs_u64map_each(&engine->client_conns, count_closed_unseen, &closed_unseen);
	return engine->remote_connections + closed_unseen;
}

void cs_client_load(const struct cs_client_stats *client, struct cs_client_load *load)
{
	memset(load, 0, sizeof(*load));
	uint32_t followed = client->threads_seen < CS_CLIENT_THREADS_MAX ? client->threads_seen : CS_CLIENT_THREADS_MAX;
	for (uint32_t i = 0; i < followed; i++) {
		const struct cs_client_thread *t = &client->threads[i];
		uint64_t span_ns = span(t->first_ns, t->last_ns);
		if (t->reads < 2 || !span_ns)
			continue;
		uint64_t cpu = span(t->first_cpu_ns, t->last_cpu_ns);
		uint64_t runq = span(t->first_runq_ns, t->last_runq_ns);
		load->threads++;
		load->cpu_ns += cpu;
		load->runq_ns += runq;
		if (span_ns > load->span_ns)
			load->span_ns = span_ns;
		double share = (double)cpu / (double)span_ns;
		if (share > load->busiest_share) {
			load->busiest_share = share;
			load->busiest_runq_share = (double)runq / (double)span_ns;
		}
	}
}
