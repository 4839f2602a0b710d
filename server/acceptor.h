/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --accept acceptor: one thread (cs-acceptor) blocks in accept4() on a
 * blocking listener and hands each connection to the next worker in turn
 * through the worker's inbox and eventfd, as Undertow/XNIO's accept
 * thread does. The listen queue then drains only as fast as this one
 * thread runs.
 */
#ifndef CS_ACCEPTOR_H
#define CS_ACCEPTOR_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "worker.h"

struct cs_acceptor {
	const struct cs_config *cfg;
	int listen_fd; /* blocking */
	struct cs_worker *workers;
	int worker_count;
	pthread_t thread;
	bool started;
	uint64_t accepted;
	uint64_t accept_errors;
	uint64_t hand_off_failures; /* out of memory: connection closed */
};

int cs_acceptor_start(struct cs_acceptor *a, char *err, size_t err_len);
/* Wakes the thread out of accept() and joins it; cs_stop_requested must
 * be set first. */
void cs_acceptor_stop(struct cs_acceptor *a);

#endif /* CS_ACCEPTOR_H */
