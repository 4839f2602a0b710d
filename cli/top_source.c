// SPDX-License-Identifier: BSD-2-Clause
#include "top_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "live.h"
#include "units.h"

uint64_t top_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void *local_run(void *arg)
{
	struct local_source *src = arg;
	src->rc = cs_session_run(&src->opts, src->engine, &src->result, src->errmsg, sizeof(src->errmsg));
	__atomic_store_n(&src->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

int local_start(struct local_source *src)
{
	if (src->opts.port_count)
		snprintf(src->target, sizeof(src->target), "port %u", src->opts.ports[0]);
	else
		snprintf(src->target, sizeof(src->target), "pid %d", (int)src->opts.pids[0]);
	src->engine = cs_engine_new();
	if (!src->engine || cs_window_init(&src->window)) {
		snprintf(src->errmsg, sizeof(src->errmsg), "out of memory");
		return -1;
	}
	pthread_mutex_init(&src->lock, NULL);
	src->opts.engine_lock = &src->lock;
	src->opts.live_meta = &src->meta;
	src->opts.stop = &cs_cli_stop;
	src->opts.quiet = true;
	src->start_ns = top_now_ns();
	cs_window_tick(&src->window, src->engine, src->start_ns);
	if (pthread_create(&src->thread, NULL, local_run, src)) {
		snprintf(src->errmsg, sizeof(src->errmsg), "cannot start the session thread");
		return -1;
	}
	return 0;
}

void local_stop(struct local_source *src)
{
	cs_cli_stop = 1;
	pthread_join(src->thread, NULL);
	cs_window_free(&src->window);
	cs_engine_free(src->engine);
}

bool local_done(struct local_source *src)
{
	return __atomic_load_n(&src->done, __ATOMIC_ACQUIRE);
}

json_t *local_frame(struct local_source *src, double tail, bool tick)
{
	uint64_t now = top_now_ns();
	pthread_mutex_lock(&src->lock);
	if (tick)
		cs_window_tick(&src->window, src->engine, now);
	struct cs_report_meta meta = src->meta;
	meta.target = src->target;
	meta.duration_s = (double)(now - src->start_ns) / 1e9;
	meta.tail_percentile = tail;
	struct cs_live_info info = { .source = "in-process", .uptime_s = meta.duration_s,
				     .since_reset_s = meta.duration_s };
	json_t *snapshot = cs_snapshot_value(src->engine, &meta, &src->window, &info);
	pthread_mutex_unlock(&src->lock);
	return snapshot;
}

void local_settle(struct local_source *src)
{
	/* Attach, then two whole seconds, so that "the last second" means one. */
	uint64_t next_ns = top_now_ns() + NS_PER_SEC;
	while (!local_done(src) && !cs_cli_stop) {
		pthread_mutex_lock(&src->lock);
		double attached_s = src->meta.duration_s;
		pthread_mutex_unlock(&src->lock);
		if (attached_s >= 2.9)
			break;
		usleep(50000);
		if (top_now_ns() >= next_ns) {
			pthread_mutex_lock(&src->lock);
			cs_window_tick(&src->window, src->engine, top_now_ns());
			pthread_mutex_unlock(&src->lock);
			next_ns += NS_PER_SEC;
		}
	}
}
