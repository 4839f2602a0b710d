// SPDX-License-Identifier: BSD-2-Clause
#include "acceptor.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "conn_limit.h"
#include "listener.h"
#include "log.h"

static _Atomic uint64_t hand_off_warned_ns;

static void *acceptor_main(void *arg)
{
	struct cs_acceptor *a = arg;
	int next = 0;
	int err = pthread_setname_np(pthread_self(), "cs-acceptor");

	if (err)
		cs_log_warn("acceptor: pthread_setname_np: %s", strerror(err));

	while (!atomic_load(&cs_stop_requested)) {
		int fd;

		/* --max-conns: a slot first, as Tomcat's acceptor counts up its
		 * latch before accept(); connections queue meanwhile. */
		if (!cs_conn_limit_acquire())
			break;
		cs_accept_delay(a->cfg);
		/* The listener blocks; the connection does not (it goes to an
		 * epoll loop). */
		fd = cs_accept_blocking(a->listen_fd, &a->accept_errors);
		if (fd < 0) {
			cs_conn_limit_release();
			if (fd == CS_ACCEPT_STOP)
				break;
			continue;
		}
		a->accepted++;
		if (cs_worker_hand_off(&a->workers[next], fd) != 0) {
			a->hand_off_failures++;
			if (cs_log_ratelimit(&hand_off_warned_ns, cs_now_ns(), CS_NS_PER_S))
				cs_log_warn("acceptor: out of memory for hand-offs: closing connections");
			close(fd);
			cs_conn_limit_release();
		}
		next = (next + 1) % a->worker_count;
	}
	return NULL;
}

int cs_acceptor_start(struct cs_acceptor *a, char *err, size_t err_len)
{
	int rc = pthread_create(&a->thread, NULL, acceptor_main, a);

	if (rc) {
		snprintf(err, err_len, "pthread_create: %s", strerror(rc));
		return -1;
	}
	a->started = true;
	return 0;
}

void cs_acceptor_stop(struct cs_acceptor *a)
{
	if (!a->started)
		return;
	/*
	 * A signal to the thread could arrive just before it enters accept()
	 * and be lost. Shutting the listener down cannot: Linux fails every
	 * accept() on it with EINVAL from then on, the blocked one included.
	 */
	cs_conn_limit_stop(); /* a wait for a free slot ends too */
	if (shutdown(a->listen_fd, SHUT_RD) != 0) {
		cs_log_warn("acceptor: shutdown(listener): %s; cancelling the thread",
			    strerror(errno));
		pthread_cancel(a->thread); /* accept() is a cancellation point */
	}
	pthread_join(a->thread, NULL);
	a->started = false;
}
