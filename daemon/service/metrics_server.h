/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A minimal HTTP endpoint for Prometheus: GET /metrics and nothing else, on
 * loopback unless told otherwise, in a thread of its own. Requests are
 * size- and time-limited; anything else gets 404/405/400 and a close.
 */
#ifndef CS_METRICS_SERVER_H
#define CS_METRICS_SERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "run_meta.h"

struct cs_metrics_server {
	int listen_fd;
	pthread_t thread;
	bool running;
	volatile int stop;
	pthread_mutex_t *engine_lock;      /* held while rendering */
	const struct cs_engine *engine;
	const struct cs_report_meta *meta;
	const char *target;
	uint64_t scrapes;
	uint64_t rejected;                 /* malformed, oversized or other requests */
};

/* Bind and start serving; on failure a one-line message in errmsg. */
int cs_metrics_server_start(struct cs_metrics_server *server, const char *address,
			    pthread_mutex_t *engine_lock, const struct cs_engine *engine,
			    const struct cs_report_meta *meta, const char *target,
			    char *errmsg, size_t errlen);

void cs_metrics_server_stop(struct cs_metrics_server *server);

#endif /* CS_METRICS_SERVER_H */
