// SPDX-License-Identifier: BSD-2-Clause
#include "handlers.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "route.h"

static bool method_is(const struct cs_http_request *req, const char *name)
{
	size_t len = strlen(name);
	return req->method_len == len && memcmp(req->method, name, len) == 0;
}

/* A route's number is above its limit: a well-formed request, so the
 * connection stays open. */
static bool over_limit(struct cs_conn *c, uint64_t arg, uint64_t max, const char *unit)
{
	char text[96];

	if (arg <= max)
		return false;
	snprintf(text, sizeof(text), "%" PRIu64 " %s is over the limit of %" PRIu64 "\n",
		 arg, unit, max);
	cs_conn_respond_text(c, 400, text);
	return true;
}

void handle_block(uint64_t ms)
{
	cs_sleep_ns(ms * CS_NS_PER_MS);
}

void handle_spin(uint64_t ms)
{
	uint64_t end_ns = cs_now_ns() + ms * CS_NS_PER_MS;
	volatile uint64_t sink = 0;

	/* Some arithmetic between clock reads, so that the samples land in
	 * this function rather than in the vDSO. */
	while (cs_now_ns() < end_ns) {
		for (uint64_t i = 0; i < 4096; i++)
			sink += i * i;
	}
	(void)sink;
}

static void serve_block(struct cs_conn *c, uint64_t ms)
{
	struct cs_worker *w = c->worker;
	int target = w->cfg->block_worker;
	char text[64];

	if (target < 0 || target == w->id) {
		handle_block(ms);
		w->now_ns = cs_now_ns();
		snprintf(text, sizeof(text), "blocked worker %d for %" PRIu64 " ms\n", w->id, ms);
	} else {
		snprintf(text, sizeof(text), "worker %d does not block\n", w->id);
	}
	cs_conn_respond_text(c, 200, text);
}

static void serve_spin(struct cs_conn *c, uint64_t ms)
{
	struct cs_worker *w = c->worker;
	char text[64];

	handle_spin(ms);
	w->now_ns = cs_now_ns();
	snprintf(text, sizeof(text), "spun worker %d for %" PRIu64 " ms\n", w->id, ms);
	cs_conn_respond_text(c, 200, text);
}

void cs_handle_wake(struct cs_conn *c)
{
	char text[64];

	snprintf(text, sizeof(text), "slept %" PRIu32 " ms\n", c->sleep_ms);
	cs_conn_respond_text(c, 200, text);
}

void cs_handle_request(struct cs_conn *c, const struct cs_http_request *req)
{
	uint64_t arg;

	if (method_is(req, "HEAD")) {
		c->head_only = true;
	} else if (!method_is(req, "GET")) {
		cs_conn_respond_text(c, 405, "method not allowed\n");
		return;
	}

	switch (cs_route_match(req->target, req->target_len, &arg)) {
	case CS_ROUTE_ROOT:
		cs_conn_respond_text(c, 200, "ok\n");
		break;
	case CS_ROUTE_BYTES:
		if (!over_limit(c, arg, CS_ROUTE_MAX_BYTES, "bytes"))
			cs_conn_respond_pattern(c, arg);
		break;
	case CS_ROUTE_SLEEP:
		if (!over_limit(c, arg, CS_ROUTE_MAX_SLEEP_MS, "ms"))
			cs_conn_respond_later(c, (uint32_t)arg);
		break;
	case CS_ROUTE_BLOCK:
		if (!over_limit(c, arg, CS_ROUTE_MAX_BLOCK_MS, "ms"))
			serve_block(c, arg);
		break;
	case CS_ROUTE_SPIN:
		if (!over_limit(c, arg, CS_ROUTE_MAX_SPIN_MS, "ms"))
			serve_spin(c, arg);
		break;
	case CS_ROUTE_SPLIT:
		if (!over_limit(c, arg, CS_ROUTE_MAX_BYTES, "bytes")) {
			c->split_write = true;
			cs_conn_respond_pattern(c, arg);
		}
		break;
	case CS_ROUTE_NOT_FOUND:
		cs_conn_respond_text(c, 404, "not found\n");
		break;
	}
}
