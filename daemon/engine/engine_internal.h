/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The record handlers of requests.c, roles.c and limit.c, which engine.c
 * dispatches to; not for the engine's users. The tables they share are
 * tables.h.
 */
#ifndef CS_ENGINE_INTERNAL_H
#define CS_ENGINE_INTERNAL_H

#include "engine.h"

int cs_requests_init(struct cs_engine *engine);
void cs_requests_free(struct cs_engine *engine);
void cs_conn_accepted(struct cs_engine *engine, const struct cs_ev_accept *ev);
int cs_on_request(struct cs_engine *engine, const struct cs_ev_request *req);
/* exchanges.c: what the server read in a connection's first exchanges, and what each exchange is. */
int cs_on_request_bytes(struct cs_engine *engine, const struct cs_ev_request_bytes *ev);
int cs_on_client_hello(struct cs_engine *engine, const struct cs_ev_client_hello *ev);
/* Whether an exchange is a request, and what it paid before it began when it is its connection's first. */
bool cs_exchange_is_request(struct cs_engine *engine, struct cs_conn *conn, const struct cs_ev_request *req,
			    struct cs_request_setup *setup);

int cs_on_conn_close(struct cs_engine *engine, const struct cs_ev_conn_close *ev);
int cs_on_reset(struct cs_engine *engine, const struct cs_ev_reset *ev);
void cs_conns_sweep(struct cs_engine *engine, uint64_t now_ns);
int cs_on_thread_sample(struct cs_engine *engine, const struct cs_ev_thread_sample *ev);
int cs_on_thread_cpu(struct cs_engine *engine, const struct cs_ev_thread_cpu *ev);

/* limit.c: open connections per listener, and waits at a connection limit. */
void cs_limit_on_open(struct cs_listener_stats *listener, uint64_t now_ns);
void cs_limit_on_close(struct cs_listener_stats *listener, uint64_t now_ns, uint64_t accepted_ns,
		       enum cs_slot_freer kind);
void cs_limit_on_forget(struct cs_listener_stats *listener, uint64_t now_ns);
void cs_limit_on_accept(struct cs_listener_stats *listener, uint64_t previous_return_ns,
			const struct cs_ev_accept *ev);
int cs_on_thread_polls(struct cs_engine *engine, const struct cs_ev_thread_polls *ev);
int cs_on_thread_name(struct cs_engine *engine, const struct cs_ev_thread_name *ev);

#endif /* CS_ENGINE_INTERNAL_H */
