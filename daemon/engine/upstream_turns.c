// SPDX-License-Identifier: BSD-2-Clause
/*
 * An event loop's ambiguous exchanges, joined by the loop's turn.
 *
 * A loop serving many requests at once (nginx, HAProxy) has several open
 * over each of its upstream exchanges: which one an exchange served is
 * not told by what was open. What the loop does tells it: it answers a
 * request in the turn that read that request's upstream answer (it reads
 * the answer, then writes the client's). So when, on the request's
 * thread, between the thread's previous answer (or the request's first
 * read, if later) and this request's first send, exactly one exchange's
 * answer was read, that exchange begun after the request was read, the
 * exchange is the request's. Where two were read in that turn (the loop
 * read two answers, then wrote), or the one read was joined already, it
 * stays not joined (ambiguous): never guessed. The thread's answers are
 * known as their requests' records come, not always in their order: a
 * previous answer not known yet widens the turn, which can only find more
 * exchanges in it, and so join fewer.
 */
#include <string.h>

#include "engine_internal.h"

/* The exchanges a loop thread read last (a ring, the oldest overwritten). */
#define TURNS_RECENT 32
#define TURN_THREADS_MAX 16384
#define TURN_TIMEOUT_NS CS_CONN_TIMEOUT_NS

struct turn {
	struct cs_upstream_exchange x;
	uint8_t ambiguous; /* not joined when it came: its sender had several requests open */
	uint8_t taken;     /* joined by its turn since */
	uint8_t pad[6];
};

struct turn_thread {
	struct turn turns[TURNS_RECENT];
	uint64_t answers_ns[TURNS_RECENT]; /* its requests' first sends, as their records came */
	uint64_t last_ns;                  /* its latest exchange's record */
	uint32_t next;
	uint32_t next_answer;
};

int cs_upstream_turns_init(struct cs_engine *engine)
{
	return cs_u64map_init(&engine->upstream_turns, sizeof(struct turn_thread), TURN_THREADS_MAX);
}

void cs_upstream_turns_free(struct cs_engine *engine)
{
	cs_u64map_free(&engine->upstream_turns);
}

void cs_upstream_turn_note(struct cs_engine *engine, const struct cs_ev_upstream *ev, const struct cs_upstream_exchange *x,
			   bool ambiguous)
{
	/* A loop's turn: its sender read the answer (a thread that handed it on has no such turn). */
	if (!ev->first_read_ns || ev->reader_tid != ev->sender_tid)
		return;
	struct turn_thread *thread = cs_u64map_put(&engine->upstream_turns, ev->reader_tid ? ev->reader_tid : 1, NULL);
	if (!thread)
		return;
	thread->turns[thread->next % TURNS_RECENT] = (struct turn){ .x = *x, .ambiguous = ambiguous };
	thread->next++;
	thread->last_ns = ev->hdr.ts_ns;
}

/* The turn that answered req began: its thread's latest known answer before it, or req's first read. */
static uint64_t turn_began(const struct turn_thread *thread, const struct cs_ev_request *req)
{
	uint64_t began = req->first_read_ns;
	for (uint32_t i = 0; i < TURNS_RECENT && i < thread->next_answer; i++)
		if (thread->answers_ns[i] < req->first_send_ns && thread->answers_ns[i] > began)
			began = thread->answers_ns[i];
	return began;
}

/* The one exchange whose answer the thread read in (from, to]; NULL: none, several, or some no longer kept. */
static struct turn *only_read_in(struct turn_thread *thread, uint64_t from, uint64_t to)
{
	struct turn *only = NULL;
	uint64_t oldest = UINT64_MAX;
	for (uint32_t i = 0; i < TURNS_RECENT && i < thread->next; i++) {
		struct turn *t = &thread->turns[i];
		if (t->x.first_read_ns < oldest)
			oldest = t->x.first_read_ns;
		if (t->x.first_read_ns <= from || t->x.first_read_ns > to)
			continue;
		if (only)
			return NULL;
		only = t;
	}
	/* The ring wrapped after the turn began: an exchange of it may have been overwritten. */
	if (thread->next > TURNS_RECENT && oldest > from)
		return NULL;
	return only;
}

static void note_answer(struct turn_thread *thread, uint64_t first_send_ns)
{
	thread->answers_ns[thread->next_answer % TURNS_RECENT] = first_send_ns;
	thread->next_answer++;
}

void cs_upstream_turn_claim(struct cs_engine *engine, const struct cs_ev_request *req, struct cs_upstream_claim *claim)
{
	if (!req->first_read_ns || !req->first_send_ns)
		return;
	struct turn_thread *thread = cs_u64map_get(&engine->upstream_turns, req->reader_tid ? req->reader_tid : 1);
	if (!thread)
		return;
	struct turn *t = claim->count ? NULL : only_read_in(thread, turn_began(thread, req), req->first_send_ns);
	note_answer(thread, req->first_send_ns);
	if (!t || !t->ambiguous || t->taken || t->x.start_ns < req->first_read_ns)
		return;
	t->taken = 1;
	claim->exchanges[claim->count++] = t->x;
	/* Counted ambiguous when it came: now its request's to join (or find unmatched). */
	if (t->x.upstream && t->x.upstream <= engine->upstream_count) {
		struct cs_upstream_stats *u = &engine->upstreams[t->x.upstream - 1];
		if (u->not_joined[CS_UNJOINED_AMBIGUOUS])
			u->not_joined[CS_UNJOINED_AMBIGUOUS]--;
		u->joined_by_turn++;
	}
}

static int turns_expired(uint64_t key, const void *value, void *ctx)
{
	(void)key;
	const struct turn_thread *thread = value;
	uint64_t now_ns = *(const uint64_t *)ctx;
	return now_ns > thread->last_ns && now_ns - thread->last_ns >= TURN_TIMEOUT_NS;
}

void cs_upstream_turns_sweep(struct cs_engine *engine, uint64_t now_ns)
{
	cs_u64map_remove_if(&engine->upstream_turns, turns_expired, &now_ns);
}
