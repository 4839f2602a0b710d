// SPDX-License-Identifier: BSD-2-Clause
/*
 * An event loop's ambiguous exchanges, joined by the loop's turn.
 *
 * A loop serving many requests at once (nginx, HAProxy) has several open
 * over each of its upstream exchanges: which one an exchange served is
 * not told by what was open. What the loop does tells it: it answers a
 * request in the turn that read that request's upstream answer (it reads
 * the answer, then writes the client's). A request's turn is the run of
 * exchange reads on its thread before its first send, back to the
 * thread's previous answer (or the request's first read, if later). When
 * that turn read one exchange's answer, begun after the request was read,
 * that exchange is the request's. When it read several (the loop read
 * two answers, then wrote two), which was whose is not told: they are
 * joined only when alike (their starts and their reads within 5 % of
 * their length, or 50 us), so that any of them gives the request the same
 * split (joined_alike); otherwise they stay not joined (ambiguous), never
 * guessed. The thread's answers are known as their requests' records
 * come, not always in their order: a previous answer not known yet widens
 * the turn, which can only find more exchanges in it, and so join fewer.
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

/* Exchanges read in one turn that the turn join weighs at most (more: not joined). */
#define TURN_READS_MAX 8

/*
 * The exchanges read in the turn that answered req (into reads, at most
 * TURN_READS_MAX): the run of reads before its first send, back to the
 * thread's latest known answer before them, or req's first read. Returns
 * how many; 0 when none, too many, or some no longer kept.
 */
static size_t turn_reads(struct turn_thread *thread, const struct cs_ev_request *req, struct turn **reads)
{
	uint64_t last = 0, from = req->first_read_ns, oldest = UINT64_MAX;
	uint32_t kept = thread->next < TURNS_RECENT ? thread->next : TURNS_RECENT;
	for (uint32_t i = 0; i < kept; i++) {
		uint64_t read = thread->turns[i].x.first_read_ns;
		if (read > req->first_read_ns && read <= req->first_send_ns && read > last)
			last = read;
	}
	if (!last)
		return 0;
	for (uint32_t i = 0; i < TURNS_RECENT && i < thread->next_answer; i++)
		if (thread->answers_ns[i] < last && thread->answers_ns[i] > from)
			from = thread->answers_ns[i];
	size_t n = 0;
	for (uint32_t i = 0; i < kept; i++) {
		struct turn *t = &thread->turns[i];
		oldest = t->x.first_read_ns < oldest ? t->x.first_read_ns : oldest;
		if (t->x.first_read_ns <= from || t->x.first_read_ns > last)
			continue;
		if (n == TURN_READS_MAX)
			return 0;
		reads[n++] = t;
	}
	/* The ring wrapped after the turn began: an exchange of it may have been overwritten. */
	if (thread->next > TURNS_RECENT && oldest > from)
		return 0;
	return n;
}

static uint64_t distance(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* The turn's exchanges are alike: one upstream, starts and reads within 5 % of their length (or 50 us). */
static bool alike(struct turn *const *reads, size_t n)
{
	const struct cs_upstream_exchange *first = &reads[0]->x;
	uint64_t length = first->first_read_ns > first->start_ns ? first->first_read_ns - first->start_ns : 0;
	uint64_t tolerance = length / 20 > 50000 ? length / 20 : 50000;
	for (size_t i = 1; i < n; i++) {
		const struct cs_upstream_exchange *x = &reads[i]->x;
		if (x->upstream != first->upstream || distance(x->start_ns, first->start_ns) > tolerance ||
		    distance(x->first_read_ns, first->first_read_ns) > tolerance)
			return false;
	}
	return true;
}

/* Of req's turn's n exchanges, the one it takes: the turn's one, or the first free of alike ones; NULL: none. */
static struct turn *turn_exchange(struct turn *const *reads, size_t n, const struct cs_ev_request *req)
{
	if (n > 1 && !alike(reads, n))
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (reads[i]->ambiguous && !reads[i]->taken && reads[i]->x.start_ns >= req->first_read_ns)
			return reads[i];
	return NULL;
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
	struct turn *reads[TURN_READS_MAX];
	size_t in_turn = claim->count ? 0 : turn_reads(thread, req, reads);
	struct turn *t = in_turn ? turn_exchange(reads, in_turn, req) : NULL;
	note_answer(thread, req->first_send_ns);
	if (!t)
		return;
	t->taken = 1;
	claim->exchanges[claim->count++] = t->x;
	/* Counted ambiguous when it came: now its request's to join (or find unmatched). */
	if (t->x.upstream && t->x.upstream <= engine->upstream_count) {
		struct cs_upstream_stats *u = &engine->upstreams[t->x.upstream - 1];
		if (u->not_joined[CS_UNJOINED_AMBIGUOUS])
			u->not_joined[CS_UNJOINED_AMBIGUOUS]--;
		u->joined_by_turn++;
		u->joined_alike += in_turn > 1;
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
