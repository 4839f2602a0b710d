// SPDX-License-Identifier: BSD-2-Clause
/*
 * Parked requests: a thread read the request and went back to its poll
 * while another thread (an executor) ran the handler and woke it with the
 * answer. The probes record that hand-back (struct cs_ev_handback) just
 * before the request; here it is kept for its request, splits the
 * request's read -> send into the wait for a worker, the worker's run and
 * the reader's pick-up, and credits the worker thread.
 */
#include "engine_internal.h"
#include "tables.h"

static uint64_t span(uint64_t from, uint64_t to)
{
	return to > from ? to - from : 0;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

int cs_on_request_handback(struct cs_engine *engine, const struct cs_ev_handback *ev)
{
	struct cs_handback *hb = cs_u64map_put(&engine->handbacks, ev->sk, NULL);
	if (!hb) {
		engine->handbacks_dropped++;
		return 0;
	}
	*hb = (struct cs_handback){
		.start_ns = ev->start_ns,
		.handler_start_ns = ev->handler_start_ns,
		.handler_end_ns = ev->handler_end_ns,
		.worker_tid = ev->worker_tid,
	};
	return 0;
}

/*
 * The hand-back of a parked request, if one came for it and its times lie
 * within its read -> send. Kept until the socket's next one (the flame
 * graph splits the same request again).
 */
const struct cs_handback *cs_handback_of(const struct cs_engine *engine, const struct cs_ev_request *req)
{
	if (!(req->flags & CS_REQ_PARKED))
		return NULL;
	const struct cs_handback *hb = cs_u64map_get(&engine->handbacks, req->sk);
	if (!hb || hb->start_ns != req->start_ns || hb->handler_start_ns < req->first_read_ns ||
	    hb->handler_start_ns > hb->handler_end_ns || hb->handler_end_ns > req->first_send_ns)
		return NULL;
	return hb;
}

bool cs_request_worker(const struct cs_engine *engine, const struct cs_ev_request *req,
		       struct cs_request_worker *worker)
{
	const struct cs_handback *hb = cs_handback_of(engine, req);
	if (!hb)
		return false;
	*worker = (struct cs_request_worker){
		.handler_start_ns = hb->handler_start_ns, .handler_end_ns = hb->handler_end_ns,
		.worker_tid = hb->worker_tid,
	};
	return true;
}

/* Take up to *left from part: what the thread spent runnable, not running, out of it. */
static uint64_t less_runq(uint64_t part, uint64_t *left)
{
	uint64_t taken = min_u64(part, *left);
	*left -= taken;
	return part - taken;
}

/*
 * First read -> first send of a request its reader parked and a worker
 * answered: waiting for the worker (busy with earlier requests) is the
 * pool's, its run the handler's, and the reader's delay picking the answer
 * up the event loop's. The reader's run-queue time in the window is taken
 * first from that last part, where it woke up.
 */
void cs_split_handed_back(const struct cs_ev_request *req, const struct cs_handback *hb, uint64_t runq,
			      struct cs_request_split *split)
{
	uint64_t left = runq;
	split->cause_ns[CS_CAUSE_EVENT_LOOP] += less_runq(span(hb->handler_end_ns, req->first_send_ns), &left);
	split->cause_ns[CS_CAUSE_WORKER_POOL] += less_runq(span(req->first_read_ns, hb->handler_start_ns), &left);
	split->cause_ns[CS_CAUSE_HANDLER] = less_runq(span(hb->handler_start_ns, hb->handler_end_ns), &left);
}

/* A parked request's worker served it: the worker is a pool thread, its reader handed it out. */
void cs_note_worker(struct cs_engine *engine, const struct cs_ev_request *req)
{
	const struct cs_handback *hb = cs_handback_of(engine, req);
	if (!hb)
		return;
	struct cs_thread_stats *reader = cs_get_thread(engine, req->reader_tid, req->tgid, NULL);
	if (reader)
		reader->parked_out++;
	struct cs_thread_stats *worker = cs_get_thread(engine, hb->worker_tid, req->tgid, NULL);
	if (!worker)
		return;
	worker->executed++;
	worker->serving_ns += span(hb->handler_start_ns, hb->handler_end_ns);
	cs_note_served(worker, hb->handler_start_ns, hb->handler_end_ns);
	if (!worker->first_read_ns || hb->handler_start_ns < worker->first_read_ns)
		worker->first_read_ns = hb->handler_start_ns;
	if (hb->handler_end_ns > worker->last_send_ns)
		worker->last_send_ns = hb->handler_end_ns;
}
