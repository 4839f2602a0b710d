// SPDX-License-Identifier: BSD-2-Clause
#include "acceptor.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "conn_limit.h"
#include "log.h"

#define ACCEPT_PAUSE_MS 100

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
		fd = accept4(a->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			cs_conn_limit_release();
			if (atomic_load(&cs_stop_requested))
				break; /* shutdown() woke us: EINVAL */
			if (errno == EINTR)
				continue;
			a->accept_errors++;
			if (errno == EINVAL) {
				cs_log_error("acceptor: accept4: %s", strerror(errno));
				cs_fatal_stop();
				break;
			}
			if (cs_accept_failed(errno, -1))
				cs_sleep_ns(ACCEPT_PAUSE_MS * CS_NS_PER_MS);
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
