// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of the engine (daemon/engine/engine.c): synthetic wire records with
 * explicit timestamps in, listener and worker statistics out.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine.h"
#include "events.h"

CS_ENGINE_FIXTURE

TestSuite(engine, .init = setup, .fini = teardown);

static const struct cs_listener_stats *listener_of(uint16_t port)
{
	const struct cs_listener_stats *l = cs_engine_listener(engine, port);
	cr_assert_not_null(l, "no listener for port %u", port);
	return l;
}

static const struct cs_worker_stats *worker_of(const struct cs_listener_stats *l, uint32_t tid)
{
	for (size_t i = 0; i < l->worker_count; i++)
		if (l->workers[i].tid == tid)
			return &l->workers[i];
	cr_assert_fail("no worker with tid %u on port %u", tid, l->port);
	return NULL;
}

static void assert_near(uint64_t got, uint64_t want, const char *what)
{
	double err = fabs((double)got - (double)want) / (double)want;
	cr_assert_leq(err, 0.004, "%s: %llu, want %llu", what, (unsigned long long)got,
		      (unsigned long long)want);
}

Test(engine, record_sizes)
{
	cr_assert_eq(cs_record_size(CS_EV_ACCEPT), sizeof(struct cs_ev_accept));
	cr_assert_eq(cs_record_size(CS_EV_LISTENER_SAMPLE), sizeof(struct cs_ev_listener_sample));
	cr_assert_eq(cs_record_size(CS_EV_HANDSHAKE), sizeof(struct cs_ev_handshake));
	cr_assert_eq(cs_record_size(CS_EV_PROC_FORK), sizeof(struct cs_ev_proc));
	cr_assert_eq(cs_record_size(CS_EV_PROC_EXIT), sizeof(struct cs_ev_proc));
	cr_assert_eq(cs_record_size(0), 0);
	cr_assert_eq(cs_record_size(CS_EV_TYPE_MAX), 0);
	cr_assert_eq(cs_record_size(0xffff), 0);
	/* At the current wire version every type has its current size (the trace reader counts on it). */
	for (uint32_t type = 0; type <= 0xffff; type++)
		cr_assert_eq(cs_record_size_in((uint16_t)type, CS_WIRE_VERSION), cs_record_size((uint16_t)type),
			     "type %u", type);
}

Test(engine, empty)
{
	cr_assert_eq(engine->listener_count, 0);
	cr_assert_null(cs_engine_listener(engine, 8080));
	cr_assert_eq(engine->totals.records, 0);
}

Test(engine, accept_waits_land_in_the_listener)
{
	/* 1000 accepts; the i-th waited i * 10 us (10 us .. 10 ms). */
	uint64_t t = 5 * SEC;
	for (uint64_t i = 1; i <= 1000; i++) {
		t += 20 * US;
		feed_accept(engine, (struct accept_spec){ .port = 8080, .tgid = 10, .tid = 11,
							  .established_ns = t - i * 10 * US,
							  .enter_ns = t - 3 * US, .ts_ns = t,
							  .backlog_limit = 511 });
	}
	const struct cs_listener_stats *l = listener_of(8080);
	cr_assert_eq(l->accepts, 1000);
	cr_assert_eq(l->accepts_unmatched, 0);
	cr_assert_eq(l->eagain, 0);
	cr_assert_eq(l->accept_errors, 0);
	cr_assert_eq(l->accept_wait_ns->count, 1000);
	cr_assert_eq(l->accept_wait_ns->min, 10 * US);
	cr_assert_eq(l->accept_wait_ns->max, 10 * MS);
	assert_near(cs_hist_percentile(l->accept_wait_ns, 50.0), 5 * MS, "p50");
	assert_near(cs_hist_percentile(l->accept_wait_ns, 90.0), 9 * MS, "p90");
	assert_near(cs_hist_percentile(l->accept_wait_ns, 99.0), 9900 * US, "p99");
	cr_assert_eq(l->first_accept_ns, 5 * SEC + 20 * US);
	cr_assert_eq(l->last_accept_ns, t);
	cr_assert_eq(l->backlog_limit, 511);

	const struct cs_worker_stats *w = worker_of(l, 11);
	cr_assert_eq(w->pid, 10);
	cr_assert_str_eq(w->comm, "worker");
	cr_assert_eq(w->accepts, 1000);
	cr_assert_eq(w->in_accept_ns, 1000 * 3 * US, "time inside accept(): enter -> return");
}

Test(engine, accepts_without_established_are_partial)
{
	uint64_t t = SEC;
	feed_accepts(engine, 8080, 1, 5, 2 * MS, &t);
	/* Queued before attach: established_ns = 0. */
	for (int i = 0; i < 3; i++)
		feed_accept(engine, (struct accept_spec){ .port = 8080, .tid = 1, .ts_ns = t += US });
	/* A clock that makes no sense (established after the return) is no wait either. */
	feed_accept(engine, (struct accept_spec){ .port = 8080, .tid = 1, .ts_ns = t + US,
						  .established_ns = t + 2 * US });

	const struct cs_listener_stats *l = listener_of(8080);
	cr_assert_eq(l->accepts, 9, "partial accepts are still accepts");
	cr_assert_eq(l->accepts_unmatched, 4);
	cr_assert_eq(l->accept_wait_ns->count, 5, "only matched accepts have a wait");
	cr_assert_eq(l->accept_wait_ns->min, 2 * MS);
	cr_assert_eq(l->accept_wait_ns->max, 2 * MS);
}

Test(engine, errors_per_worker_and_listener)
{
	uint64_t t = SEC;
	feed_accepts(engine, 8080, 1, 4, 100 * US, &t);
	feed_eagains(engine, 8080, 1, 2, &t);
	feed_eagains(engine, 8080, 2, 7, &t);
	feed_accept(engine, (struct accept_spec){ .port = 8080, .tgid = 100, .tid = 2, .ret = -EMFILE,
						  .ts_ns = t += US });
	feed_accept(engine, (struct accept_spec){ .port = 8080, .tgid = 100, .tid = 3, .ret = -ECONNABORTED,
						  .ts_ns = t += US });
	feed_eagains(engine, 9090, 4, 1, &t);

	const struct cs_listener_stats *l = listener_of(8080);
	cr_assert_eq(l->accepts, 4, "failed calls are not accepts");
	cr_assert_eq(l->eagain, 9);
	cr_assert_eq(l->accept_errors, 2);
	cr_assert_eq(l->accept_wait_ns->count, 4);
	cr_assert_eq(l->accepts_unmatched, 0, "a failed accept is not a partial one");
	cr_assert_eq(l->worker_count, 3, "every thread that called accept() is a worker");

	const struct cs_worker_stats *w1 = worker_of(l, 1), *w2 = worker_of(l, 2), *w3 = worker_of(l, 3);
	cr_assert_eq(w1->accepts, 4);
	cr_assert_eq(w1->eagain, 2);
	cr_assert_eq(w1->errors, 0);
	cr_assert_eq(w2->accepts, 0);
	cr_assert_eq(w2->eagain, 7);
	cr_assert_eq(w2->errors, 1);
	cr_assert_eq(w3->errors, 1);
	cr_assert_eq(w3->eagain, 0);

	const struct cs_listener_stats *other = listener_of(9090);
	cr_assert_eq(other->eagain, 1);
	cr_assert_eq(other->accepts, 0);
	cr_assert_eq(other->first_accept_ns, 0, "EAGAIN is not an accept");
}

Test(engine, fairness)
{
	uint64_t t = SEC;
	const struct cs_listener_stats *l;

	feed_eagains(engine, 8080, 40, 3, &t);
	l = listener_of(8080);
	cr_assert_null(cs_listener_busiest_worker(l), "no accepts: no busiest worker");
	cr_assert_eq(cs_listener_accepting_threads(l), 0);

	feed_accepts(engine, 8080, 10, 30, US, &t);
	feed_accepts(engine, 8080, 20, 50, US, &t);
	feed_accepts(engine, 8080, 30, 20, US, &t);
	feed_accepts(engine, 8080, 10, 5, US, &t); /* still below tid 20 */
	l = listener_of(8080);
	const struct cs_worker_stats *busiest = cs_listener_busiest_worker(l);
	cr_assert_not_null(busiest);
	cr_assert_eq(busiest->tid, 20);
	cr_assert_eq(busiest->accepts, 50);
	cr_assert_eq(cs_listener_accepting_threads(l), 3, "the EAGAIN-only thread took nothing");
	cr_assert_eq(l->worker_count, 4);
	cr_assert_eq(l->accepts, 105);

	/* Same tid in another process is another worker. */
	feed_accept(engine, (struct accept_spec){ .port = 8080, .tgid = 777, .tid = 20, .ts_ns = t += US,
						  .established_ns = t - US });
	l = listener_of(8080);
	cr_assert_eq(l->worker_count, 5);
	cr_assert_eq(cs_listener_accepting_threads(l), 4);
}

Test(engine, backlog_samples)
{
	uint64_t t = SEC;
	const uint32_t depths[] = { 0, 0, 5, 128, 129, 0, 129, 17 };
	uint64_t sum = 0;
	for (size_t i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
		feed_sample(engine, (struct sample_spec){ .port = 8080, .backlog = depths[i],
							  .backlog_limit = 128, .ts_ns = t += MS });
		sum += depths[i];
	}
	const struct cs_listener_stats *l = listener_of(8080);
	cr_assert_eq(l->backlog_samples, 8);
	/* sk_acceptq_is_full(): backlog > limit. 128 of 128 is not full yet. */
	cr_assert_eq(l->backlog_full_samples, 2);
	cr_assert_eq(l->backlog_nonempty_samples, 5);
	cr_assert_eq(l->backlog_sample_sum, sum);
	cr_assert_eq(l->backlog_max, 129);
	cr_assert_eq(l->backlog_limit, 128);
	cr_assert_eq(l->accepts, 0, "samples are not accepts");
	cr_assert_eq(l->socket_count, 1);
}

Test(engine, backlog_left_at_accept)
{
	uint64_t t = SEC;
	const uint32_t left[] = { 3, 0, 40, 7 };
	for (size_t i = 0; i < 4; i++)
		feed_accept(engine, (struct accept_spec){ .port = 8080, .tid = 1, .ts_ns = t += MS,
							  .established_ns = t - US, .backlog = left[i],
							  .backlog_limit = 64 });
	/* EAGAIN saw an empty queue: not part of the depth left by accepts. */
	feed_accept(engine, (struct accept_spec){ .port = 8080, .tid = 1, .ret = -EAGAIN,
						  .ts_ns = t += MS, .backlog = 0, .backlog_limit = 64 });
	const struct cs_listener_stats *l = listener_of(8080);
	cr_assert_eq(l->backlog_at_accept_sum, 50);
	cr_assert_eq(l->backlog_at_accept_max, 40);
	cr_assert_eq(l->backlog_max, 40, "a depth seen by accept() is a backlog observation");
	cr_assert_eq(l->backlog_limit, 64);
	cr_assert_eq(l->backlog_samples, 0, "accepts are not periodic samples");
}

Test(engine, drops_baseline_is_the_first_sighting)
{
	uint64_t t = SEC;
	/* 1000 drops happened before we attached: not ours. */
	feed_sample(engine, (struct sample_spec){ .port = 8080, .drops = 1000, .backlog_limit = 8,
						  .ts_ns = t += MS });
	cr_assert_eq(cs_listener_drops(listener_of(8080)), 0);
	feed_sample(engine, (struct sample_spec){ .port = 8080, .drops = 1010, .backlog_limit = 8,
						  .ts_ns = t += MS });
	/* An accept on the same socket reports its counter too. */
	feed_accept(engine, (struct accept_spec){ .port = 8080, .tid = 1, .drops = 1025,
						  .established_ns = t, .ts_ns = t += MS });
	cr_assert_eq(cs_listener_drops(listener_of(8080)), 25);
	feed_sample(engine, (struct sample_spec){ .port = 8080, .drops = 1050, .backlog_limit = 8,
						  .ts_ns = t += MS });
	cr_assert_eq(cs_listener_drops(listener_of(8080)), 50);
	cr_assert_eq(listener_of(8080)->socket_count, 1);
}

Test(engine, drops_summed_over_reuseport_sockets)
{
	uint64_t t = SEC;
	const uint64_t a = 0xa000, b = 0xb000, c = 0xc000;
	feed_sample(engine, (struct sample_spec){ .port = 443, .sk = a, .drops = 10, .ts_ns = t += MS });
	feed_sample(engine, (struct sample_spec){ .port = 443, .sk = b, .drops = 500, .ts_ns = t += MS });
	feed_sample(engine, (struct sample_spec){ .port = 443, .sk = a, .drops = 20, .ts_ns = t += MS });
	feed_accept(engine, (struct accept_spec){ .port = 443, .listener_sk = b, .tid = 1, .drops = 530,
						  .established_ns = t, .ts_ns = t += MS });
	/* First seen through an accept: baseline there too. */
	feed_accept(engine, (struct accept_spec){ .port = 443, .listener_sk = c, .tid = 2, .drops = 7,
						  .established_ns = t, .ts_ns = t += MS });
	feed_sample(engine, (struct sample_spec){ .port = 443, .sk = c, .drops = 9, .ts_ns = t += MS });
	/* Another port's socket is not counted here. */
	feed_sample(engine, (struct sample_spec){ .port = 80, .sk = 0xd000, .drops = 1, .ts_ns = t += MS });
	feed_sample(engine, (struct sample_spec){ .port = 80, .sk = 0xd000, .drops = 99, .ts_ns = t += MS });

	const struct cs_listener_stats *l = listener_of(443);
	cr_assert_eq(l->socket_count, 3);
	cr_assert_eq(cs_listener_drops(l), 10 + 30 + 2);
	cr_assert_eq(cs_listener_drops(listener_of(80)), 98);
}

Test(engine, drops_across_a_32_bit_wrap)
{
	feed_sample(engine, (struct sample_spec){ .port = 8080, .drops = 0xfffffff0u, .ts_ns = SEC });
	feed_sample(engine, (struct sample_spec){ .port = 8080, .drops = 0x10, .ts_ns = 2 * SEC });
	cr_assert_eq(cs_listener_drops(listener_of(8080)), 0x20);
}

Test(engine, third_ack_overflows_are_not_counted_twice)
{
	/* sk_drops grew by 10, of which 3 third ACKs counted twice: 7 overflows. */
	feed_sample(engine, (struct sample_spec){ .port = 8080, .drops = 100, .ts_ns = SEC });
	for (int i = 0; i < 3; i++) {
		struct cs_ev_ack_overflow ev;
		memset(&ev, 0, sizeof(ev));
		ev.hdr = make_header(CS_EV_ACK_OVERFLOW, sizeof(ev), SEC + (uint64_t)i * MS);
		ev.tuple.local_port = 8080;
		ev.tuple.remote_port = 50000;
		FEED_OK(engine, ev);
	}
	feed_sample(engine, (struct sample_spec){ .port = 8080, .drops = 110, .ts_ns = 2 * SEC });
	cr_assert_eq(listener_of(8080)->ack_overflows, 3);
	cr_assert_eq(cs_listener_drops(listener_of(8080)), 7);

	/* Never below zero. */
	for (int i = 0; i < 20; i++) {
		struct cs_ev_ack_overflow ev;
		memset(&ev, 0, sizeof(ev));
		ev.hdr = make_header(CS_EV_ACK_OVERFLOW, sizeof(ev), 3 * SEC);
		ev.tuple.local_port = 8080;
		FEED_OK(engine, ev);
	}
	cr_assert_eq(cs_listener_drops(listener_of(8080)), 0);
}

Test(engine, worker_busy_share)
{
	/* 10 calls: each spends 1 ms in accept(), one every 10 ms. */
	uint64_t t = SEC;
	for (int i = 0; i < 10; i++, t += 10 * MS)
		feed_accept(engine, (struct accept_spec){ .port = 8080, .tid = 1, .enter_ns = t,
							  .ts_ns = t + MS, .established_ns = t });
	const struct cs_worker_stats *w = worker_of(listener_of(8080), 1);
	cr_assert_eq(w->in_accept_ns, 10 * MS);
	cr_assert_eq(w->first_call_ns, SEC);
	cr_assert_eq(w->last_call_ns, SEC + 91 * MS);
	/* Active 91 ms, 10 of them inside accept(). */
	cr_assert(fabs(cs_worker_busy_share(w) - 81.0 / 91.0) < 1e-9, "busy %f",
		  cs_worker_busy_share(w));

	/* One call only: no span to speak of. */
	feed_accept(engine, (struct accept_spec){ .port = 8080, .tid = 2, .enter_ns = t, .ts_ns = t + MS });
	cr_assert_eq(cs_worker_busy_share(worker_of(listener_of(8080), 2)), 0.0);

	/* Blocked in accept() all along: not busy. */
	for (int i = 0; i < 5; i++, t += 10 * MS)
		feed_accept(engine, (struct accept_spec){ .port = 8080, .tid = 3, .enter_ns = t,
							  .ts_ns = t + 10 * MS });
	cr_assert_eq(cs_worker_busy_share(worker_of(listener_of(8080), 3)), 0.0);
}

Test(engine, handshakes)
{
	uint64_t t = 10 * SEC;
	/* Retransmitted but quick: 200 ms extra. */
	feed_handshake(engine, (struct handshake_spec){ .port = 8080, .syn_sent_ns = t,
							.last_syn_ns = t + 200 * MS, .ts_ns = t + 201 * MS });
	/* Exactly 1 s: delayed. */
	feed_handshake(engine, (struct handshake_spec){ .port = 8080, .syn_sent_ns = t,
							.last_syn_ns = t + SEC, .ts_ns = t + SEC + MS });
	/* 3 s after two retransmits. */
	feed_handshake(engine, (struct handshake_spec){ .port = 8080, .syn_sent_ns = t,
							.last_syn_ns = t + 3 * SEC, .retransmits = 2,
							.ts_ns = t + 3 * SEC + MS });
	/* Gave up after 63 s: failed, and no extra time recorded. */
	feed_handshake(engine, (struct handshake_spec){ .port = 8080, .syn_sent_ns = t,
							.last_syn_ns = t + 63 * SEC, .retransmits = 6,
							.gave_up = true, .ts_ns = t + 130 * SEC });
	/* Another target port. */
	feed_handshake(engine, (struct handshake_spec){ .port = 9090, .syn_sent_ns = t,
							.last_syn_ns = t + 999 * MS, .ts_ns = t + SEC });

	const struct cs_listener_stats *l = listener_of(8080);
	cr_assert_eq(l->handshakes_retransmitted, 4);
	cr_assert_eq(l->handshakes_failed, 1);
	cr_assert_eq(l->handshakes_delayed_1s, 2);
	cr_assert_eq(l->handshake_extra_ns->count, 3);
	cr_assert_eq(l->handshake_extra_ns->min, 200 * MS);
	cr_assert_eq(l->handshake_extra_ns->max, 3 * SEC);
	cr_assert_eq(l->accepts, 0);

	const struct cs_listener_stats *other = listener_of(9090);
	cr_assert_eq(other->handshakes_retransmitted, 1);
	cr_assert_eq(other->handshakes_delayed_1s, 0, "999 ms is below 1 s");
}

Test(engine, malformed_records_are_counted_and_ignored)
{
	struct cs_ev_accept good = make_accept((struct accept_spec){ .port = 8080, .tid = 1,
								     .established_ns = SEC, .ts_ns = 2 * SEC });
	struct cs_ev_accept bad;
	int malformed = 0;

	/* Shorter than a header. */
	cr_assert_eq(cs_engine_feed(engine, &good, 0), -EINVAL);
	cr_assert_eq(cs_engine_feed(engine, &good, sizeof(struct cs_event_header) - 1), -EINVAL);
	malformed += 2;

	/* Unknown types. */
	const uint16_t unknown[] = { 0, CS_EV_TYPE_MAX, 77, 0xffff };
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		bad = good;
		bad.hdr.type = unknown[i];
		cr_assert_eq(cs_engine_feed(engine, &bad, sizeof(bad)), -EINVAL, "type %u", unknown[i]);
		malformed++;
	}

	/* The header's size disagrees with the type's. */
	const uint16_t sizes[] = { 0, 16, sizeof(good) - 8, sizeof(good) + 8, 0xffff };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		bad = good;
		bad.hdr.size = sizes[i];
		cr_assert_eq(cs_engine_feed(engine, &bad, sizeof(bad)), -EINVAL, "size %u", sizes[i]);
		malformed++;
	}

	/* Right header, but the buffer is shorter than the record. */
	cr_assert_eq(cs_engine_feed(engine, &good, sizeof(good) - 1), -EINVAL);
	cr_assert_eq(cs_engine_feed(engine, &good, sizeof(struct cs_event_header)), -EINVAL);
	malformed += 2;

	/* A record of one type labelled as another. */
	struct cs_ev_proc proc = make_proc(CS_EV_PROC_FORK, SEC, 5);
	proc.hdr.type = CS_EV_ACCEPT;
	cr_assert_eq(cs_engine_feed(engine, &proc, sizeof(proc)), -EINVAL);
	malformed++;

	cr_assert_eq(engine->totals.malformed, (uint64_t)malformed);
	cr_assert_eq(engine->totals.records, 0);
	cr_assert_eq(engine->listener_count, 0, "nothing of a malformed record is used");
	cr_assert_eq(engine->totals.first_ts_ns, 0);

	/* And the engine still works. */
	cr_assert_eq(cs_engine_feed(engine, &good, sizeof(good)), 0);
	cr_assert_eq(engine->totals.records, 1);
	cr_assert_eq(listener_of(8080)->accepts, 1);
	cr_assert_eq(engine->totals.malformed, (uint64_t)malformed);
}

Test(engine, random_garbage_never_crashes)
{
	/* Room for the largest record (a ClientHello's), its length claimed in full. */
	unsigned char buf[2048];
	cr_assert_geq(sizeof(buf), cs_record_size(CS_EV_CLIENT_HELLO) + 2);
	uint64_t state = 12345;
	uint64_t accepted = 0, rejected = 0;
	for (int round = 0; round < 6000; round++) {
		for (size_t i = 0; i < sizeof(buf); i++) {
			state = state * 6364136223846793005ull + 1442695040888963407ull;
			buf[i] = (unsigned char)(state >> 56);
		}
		/* Half the time, a plausible header so the handlers run on garbage. */
		size_t len = (state >> 8) % 256;
		if (round % 2) {
			uint16_t type = 1 + (uint16_t)((state >> 20) % (CS_EV_TYPE_MAX - 1));
			uint16_t size = (uint16_t)cs_record_size(type);
			memcpy(buf + 8, &type, 2);
			memcpy(buf + 10, &size, 2);
			len = size + (state >> 30) % 3;
		}
		/* Few ports, or every record would open a new listener. */
		uint16_t port = 8000 + (uint16_t)(state % 4);
		memcpy(buf + offsetof(struct cs_ev_accept, listener_port), &port, 2);
		memcpy(buf + offsetof(struct cs_ev_listener_sample, port), &port, 2);
		memcpy(buf + offsetof(struct cs_ev_handshake, tuple.remote_port), &port, 2);
		int err = cs_engine_feed(engine, buf, len);
		cr_assert(err == 0 || err == -EINVAL || err == -ENOMEM, "feed: %d", err);
		if (err)
			rejected++;
		else
			accepted++;
	}
	cr_assert_eq(engine->totals.records, accepted);
	cr_assert_eq(engine->totals.malformed, rejected);
	cr_assert_gt(accepted, 1500);
}

/* A copy of len bytes that ends where an inaccessible page starts. */
static void *at_page_end(const void *data, size_t len, void **map, size_t *map_len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	*map_len = 2 * page;
	*map = mmap(NULL, *map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(*map, MAP_FAILED);
	cr_assert_eq(mprotect((char *)*map + page, page, PROT_NONE), 0);
	char *at = (char *)*map + page - len;
	memcpy(at, data, len);
	return at;
}

Test(engine, no_read_past_the_record)
{
	struct cs_ev_accept ev = make_accept((struct accept_spec){ .port = 8080, .tid = 1,
								   .established_ns = SEC, .ts_ns = 2 * SEC });
	void *map;
	size_t map_len;

	/* A whole record right before a PROT_NONE page. */
	void *at = at_page_end(&ev, sizeof(ev), &map, &map_len);
	cr_assert_eq(cs_engine_feed(engine, at, sizeof(ev)), 0);
	munmap(map, map_len);

	/* Its request there too (aligned: read where it lies, not copied), and one a byte earlier (copied). */
	struct cs_ev_request req = make_request((struct request_spec){
		.sk = ev.sk, .port = 8080, .index = 1, .start_ns = 2 * SEC, .first_read_ns = 2 * SEC + 10 * US,
		.first_send_ns = 2 * SEC + 90 * US, .last_send_ns = 2 * SEC + 90 * US });
	at = at_page_end(&req, sizeof(req), &map, &map_len);
	cr_assert_eq(cs_engine_feed(engine, at, sizeof(req)), 0);
	munmap(map, map_len);
	unsigned char odd[1 + sizeof(req)];
	req.index = 2;
	memcpy(odd + 1, &req, sizeof(req));
	cr_assert_eq(cs_engine_feed(engine, odd + 1, sizeof(req)), 0);
	cr_assert_eq(engine->requests.requests, 2);
	cr_assert_eq(engine->requests.latency_ns->min, 90 * US, "the same split either way");
	cr_assert_eq(engine->requests.latency_ns->max, 90 * US);

	/* A record cut short by the buffer, its header claiming more. */
	at = at_page_end(&ev, 40, &map, &map_len);
	cr_assert_eq(cs_engine_feed(engine, at, 40), -EINVAL);
	munmap(map, map_len);

	/* Fewer bytes than a header. */
	at = at_page_end(&ev, 3, &map, &map_len);
	cr_assert_eq(cs_engine_feed(engine, at, 3), -EINVAL);
	munmap(map, map_len);
}

Test(engine, unaligned_records)
{
	/* Records packed back to back at odd offsets, as in a replay file. */
	static unsigned char buf[1 + 3 * sizeof(struct cs_ev_accept) + sizeof(struct cs_ev_listener_sample) +
				 sizeof(struct cs_ev_handshake)];
	struct cs_ev_accept a1 = make_accept((struct accept_spec){ .port = 8080, .tid = 1, .tgid = 9,
								   .established_ns = SEC, .ts_ns = SEC + 3 * MS,
								   .backlog = 4, .backlog_limit = 16,
								   .drops = 100 });
	struct cs_ev_listener_sample s = make_sample((struct sample_spec){ .port = 8080, .backlog = 17,
									 .backlog_limit = 16, .drops = 130,
									 .ts_ns = SEC + 4 * MS });
	struct cs_ev_handshake h = make_handshake((struct handshake_spec){ .port = 8080, .syn_sent_ns = SEC,
									 .last_syn_ns = 2 * SEC,
									 .ts_ns = 2 * SEC + MS });
	struct cs_ev_accept a2 = make_accept((struct accept_spec){ .port = 8080, .tid = 2, .tgid = 9,
								   .ret = -EAGAIN, .drops = 130,
								   .ts_ns = 3 * SEC });
	size_t off = 1;
	memcpy(buf + off, &a1, sizeof(a1));
	cr_assert_eq(cs_engine_feed(engine, buf + off, sizeof(a1)), 0);
	off += sizeof(a1);
	memcpy(buf + off, &s, sizeof(s));
	cr_assert_eq(cs_engine_feed(engine, buf + off, sizeof(s)), 0);
	off += sizeof(s);
	memcpy(buf + off, &h, sizeof(h));
	cr_assert_eq(cs_engine_feed(engine, buf + off, sizeof(h)), 0);
	off += sizeof(h);
	memcpy(buf + off, &a2, sizeof(a2));
	cr_assert_eq(cs_engine_feed(engine, buf + off, sizeof(a2)), 0);

	const struct cs_listener_stats *l = listener_of(8080);
	cr_assert_eq(l->accepts, 1);
	cr_assert_eq(l->accept_wait_ns->max, 3 * MS);
	cr_assert_eq(l->backlog_full_samples, 1);
	cr_assert_eq(cs_listener_drops(l), 30);
	cr_assert_eq(l->handshakes_delayed_1s, 1);
	cr_assert_eq(l->eagain, 1);
	cr_assert_eq(engine->totals.records, 4);
}

Test(engine, totals)
{
	FEED_OK(engine, make_proc(CS_EV_PROC_FORK, 5 * SEC, 200));
	feed_sample(engine, (struct sample_spec){ .port = 8080, .ts_ns = 3 * SEC }); /* out of order */
	feed_accept(engine, (struct accept_spec){ .port = 8080, .tid = 1, .established_ns = SEC,
						  .ts_ns = 7 * SEC });
	FEED_OK(engine, make_proc(CS_EV_PROC_EXIT, 6 * SEC, 200));
	FEED_OK(engine, make_proc(CS_EV_PROC_FORK, 4 * SEC, 201));
	feed_handshake(engine, (struct handshake_spec){ .port = 8080, .syn_sent_ns = SEC,
							.last_syn_ns = 2 * SEC, .ts_ns = 2 * SEC });

	const struct cs_engine_totals *tot = &engine->totals;
	cr_assert_eq(tot->records, 6);
	cr_assert_eq(tot->by_type[CS_EV_ACCEPT], 1);
	cr_assert_eq(tot->by_type[CS_EV_LISTENER_SAMPLE], 1);
	cr_assert_eq(tot->by_type[CS_EV_HANDSHAKE], 1);
	cr_assert_eq(tot->by_type[CS_EV_PROC_FORK], 2);
	cr_assert_eq(tot->by_type[CS_EV_PROC_EXIT], 1);
	cr_assert_eq(tot->forks, 2);
	cr_assert_eq(tot->exits, 1);
	cr_assert_eq(tot->first_ts_ns, 2 * SEC);
	cr_assert_eq(tot->last_ts_ns, 7 * SEC);
	cr_assert_eq(tot->malformed, 0);
}

Test(engine, many_listeners_and_workers)
{
	/* Enough to make every table grow several times while pointers are in use. */
	uint64_t t = SEC;
	for (uint32_t round = 0; round < 3; round++)
		for (uint16_t port = 1000; port < 1040; port++)
			for (uint32_t tid = 1; tid <= 30; tid++) {
				t += US;
				feed_accept(engine, (struct accept_spec){
					.port = port, .tgid = 1, .tid = tid, .ts_ns = t,
					.listener_sk = 0x100000ull * port + tid % 5,
					.established_ns = t - (port - 999) * US,
					.drops = round * 10 + tid % 5 });
			}
	cr_assert_eq(engine->listener_count, 40);
	for (uint16_t port = 1000; port < 1040; port++) {
		const struct cs_listener_stats *l = listener_of(port);
		cr_assert_eq(l->accepts, 90);
		cr_assert_eq(l->worker_count, 30);
		cr_assert_eq(l->socket_count, 5);
		cr_assert_eq(cs_listener_drops(l), 5 * 20);
		cr_assert_eq(l->accept_wait_ns->min, (uint64_t)(port - 999) * US);
		cr_assert_eq(l->accept_wait_ns->max, (uint64_t)(port - 999) * US);
		for (uint32_t tid = 1; tid <= 30; tid++)
			cr_assert_eq(worker_of(l, tid)->accepts, 3);
	}
}

Test(engine, comm_is_terminated)
{
	struct cs_ev_accept ev = make_accept((struct accept_spec){ .port = 8080, .tid = 1, .ts_ns = SEC });
	memset(ev.comm, 'x', sizeof(ev.comm)); /* no NUL from the kernel side */
	cr_assert_eq(cs_engine_feed(engine, &ev, sizeof(ev)), 0);
	const struct cs_worker_stats *w = worker_of(listener_of(8080), 1);
	cr_assert_eq(strnlen(w->comm, sizeof(w->comm)), CS_COMM_LEN - 1);
}
