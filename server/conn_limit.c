// SPDX-License-Identifier: BSD-2-Clause
#include "conn_limit.h"

#include <pthread.h>
#include <stdatomic.h>

#include "worker.h"

static pthread_mutex_t limit_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slot_freed = PTHREAD_COND_INITIALIZER;
static uint32_t limit_max;   /* 0: no limit; set before threads start */
static uint32_t limit_open;  /* slots taken */
static uint64_t limit_waits; /* acquires that had to wait */

void cs_conn_limit_init(uint32_t max_conns)
{
	limit_max = max_conns;
	limit_open = 0;
	limit_waits = 0;
}

bool cs_conn_limit_acquire(void)
{
	if (!limit_max)
		return true;
	pthread_mutex_lock(&limit_lock);
	bool waited = false;
	/* The stop flag is read under the lock that cs_conn_limit_stop takes
	 * before it broadcasts: a stop cannot slip in between the test and
	 * the wait. */
	while (limit_open >= limit_max && !atomic_load(&cs_stop_requested)) {
		waited = true;
		pthread_cond_wait(&slot_freed, &limit_lock);
	}
	bool taken = !atomic_load(&cs_stop_requested);
	if (taken)
		limit_open++;
	limit_waits += waited;
	pthread_mutex_unlock(&limit_lock);
	return taken;
}

void cs_conn_limit_release(void)
{
	if (!limit_max)
		return;
	pthread_mutex_lock(&limit_lock);
	if (limit_open > 0)
		limit_open--;
	pthread_cond_signal(&slot_freed);
	pthread_mutex_unlock(&limit_lock);
}

void cs_conn_limit_stop(void)
{
	pthread_mutex_lock(&limit_lock);
	pthread_cond_broadcast(&slot_freed);
	pthread_mutex_unlock(&limit_lock);
}

uint64_t cs_conn_limit_waits(void)
{
	pthread_mutex_lock(&limit_lock);
	uint64_t waits = limit_waits;
	pthread_mutex_unlock(&limit_lock);
	return waits;
}
