// SPDX-License-Identifier: BSD-2-Clause
#include "worker.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "conn.h"
#include "log.h"

#define MAX_EVENTS 256
#define TIMERS_PER_TURN 1024 /* expired timers handled before polling again */
#define INBOX_BATCH 64
#define INBOX_PER_WAKE 1024 /* hand-offs opened before polling again */
#define INITIAL_TIMERS 1024

atomic_bool cs_stop_requested;
atomic_int cs_exit_code;

static _Atomic uint64_t accept_warned_ns, wake_warned_ns;

void cs_fatal_stop(void)
{
	atomic_store(&cs_exit_code, 1);
	/* Main waits for SIGTERM in sigwait(); if the signal cannot be sent,
	 * the flag at least stops the other loops. */
	if (kill(getpid(), SIGTERM) != 0)
		atomic_store(&cs_stop_requested, true);
}

void cs_accept_delay(const struct cs_config *cfg)
{
	if (cfg->accept_delay_us)
		cs_sleep_ns((uint64_t)cfg->accept_delay_us * CS_NS_PER_US);
}

bool cs_accept_failed(int err, int worker_id)
{
	bool out_of_resources = err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
	char who[32];

	/* A client that reset before we accepted it is routine. */
	if (err == ECONNABORTED || err == EPROTO)
		return false;
	if (!cs_log_ratelimit(&accept_warned_ns, cs_now_ns(), CS_NS_PER_S))
		return out_of_resources;
	if (worker_id >= 0)
		snprintf(who, sizeof(who), "worker %d", worker_id);
	else
		snprintf(who, sizeof(who), "acceptor");
	if (err == EMFILE) {
		struct rlimit rl;
		long limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (long)rl.rlim_cur : -1;
		cs_log_warn("%s: accept: %s (limit %ld): pausing accepts for %d ms; "
			    "raise it with ulimit -n",
			    who, strerror(err), limit, CS_ACCEPT_PAUSE_MS);
	} else if (out_of_resources) {
		cs_log_warn("%s: accept: %s: pausing accepts for %d ms", who, strerror(err),
			    CS_ACCEPT_PAUSE_MS);
	} else {
		cs_log_warn("%s: accept: %s", who, strerror(err));
	}
	return out_of_resources;
}

/* ---- the listener ---- */

static int worker_arm_listener(struct cs_worker *w)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &w->listener };

	/* Level-triggered: a connection left in the queue (one accept per
	 * event) wakes us again on the next epoll_wait. */
	if (w->cfg->accept_mode == CS_ACCEPT_EXCLUSIVE)
		ev.events |= EPOLLEXCLUSIVE;
	if (epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, w->listener.fd, &ev) != 0)
		return -1;
	w->listener_armed = true;
	w->accept_resume_ns = 0;
	return 0;
}

/*
 * Out of fds: the listener stays readable, so a level-triggered epoll
 * would return at once, forever. Take it out of this worker's epoll set
 * for a while instead (the other workers' registrations are their own).
 */
static void worker_pause_accept(struct cs_worker *w)
{
	if (w->listener_armed) {
		if (epoll_ctl(w->epoll_fd, EPOLL_CTL_DEL, w->listener.fd, NULL) != 0)
			cs_log_warn("worker %d: epoll_ctl(DEL, listener): %s", w->id, strerror(errno));
		w->listener_armed = false;
	}
	w->accept_resume_ns = cs_now_ns() + CS_ACCEPT_PAUSE_MS * CS_NS_PER_MS;
}

static void worker_resume_accept(struct cs_worker *w)
{
	if (w->listener_armed || w->accept_resume_ns == 0 || w->now_ns < w->accept_resume_ns)
		return;
	if (worker_arm_listener(w) != 0) {
		cs_log_warn("worker %d: epoll_ctl(ADD, listener): %s", w->id, strerror(errno));
		w->accept_resume_ns = w->now_ns + CS_ACCEPT_PAUSE_MS * CS_NS_PER_MS;
	}
}

static void worker_accept(struct cs_worker *w)
{
	const struct cs_config *cfg = w->cfg;
	unsigned int accepted = 0;

	do {
		int fd;

		cs_accept_delay(cfg);
		fd = accept4(w->listener.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			w->stats.accepted++;
			accepted++;
			cs_conn_open(w, fd);
			continue;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			/* Woken for nothing: another worker took it (the
			 * herd). The EAGAIN that ends --multi-accept is not. */
			if (accepted == 0)
				w->stats.accept_eagain++;
			return;
		}
		if (errno == EINTR)
			continue;
		w->stats.accept_errors++;
		if (cs_accept_failed(errno, w->id)) {
			worker_pause_accept(w);
			return;
		}
	} while (cfg->multi_accept && !atomic_load_explicit(&cs_stop_requested, memory_order_relaxed));
}

/* ---- wake-ups and the hand-off inbox ---- */

void cs_worker_wake(struct cs_worker *w)
{
	uint64_t one = 1;

	/* EAGAIN would mean the counter is about to overflow: a wake-up is
	 * pending anyway. */
	if (write(w->wake.fd, &one, sizeof(one)) < 0 && errno != EAGAIN &&
	    cs_log_ratelimit(&wake_warned_ns, cs_now_ns(), CS_NS_PER_S))
		cs_log_warn("worker %d: write(eventfd): %s", w->id, strerror(errno));
}

static int inbox_grow(struct cs_worker *w)
{
	size_t cap = w->inbox_cap ? w->inbox_cap * 2 : 64;
	int *fds = malloc(cap * sizeof(*fds));

	if (!fds)
		return -ENOMEM;
	for (size_t i = 0; i < w->inbox_len; i++)
		fds[i] = w->inbox[(w->inbox_head + i) % w->inbox_cap];
	free(w->inbox);
	w->inbox = fds;
	w->inbox_cap = cap;
	w->inbox_head = 0;
	return 0;
}

int cs_worker_hand_off(struct cs_worker *w, int fd)
{
	bool was_empty;

	pthread_mutex_lock(&w->inbox_lock);
	if (w->inbox_len == w->inbox_cap && inbox_grow(w) != 0) {
		pthread_mutex_unlock(&w->inbox_lock);
		return -ENOMEM;
	}
	w->inbox[(w->inbox_head + w->inbox_len) % w->inbox_cap] = fd;
	was_empty = w->inbox_len++ == 0;
	pthread_mutex_unlock(&w->inbox_lock);
	/* While the inbox is not empty a wake-up is already on its way (the
	 * worker drains until empty after reading the eventfd), so only the
	 * first hand-off of a batch costs a write(). */
	if (was_empty)
		cs_worker_wake(w);
	return 0;
}

/* Takes up to max fds out of the inbox. */
static size_t inbox_take(struct cs_worker *w, int *fds, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&w->inbox_lock);
	while (n < max && w->inbox_len > 0) {
		fds[n++] = w->inbox[w->inbox_head];
		w->inbox_head = (w->inbox_head + 1) % w->inbox_cap;
		w->inbox_len--;
	}
	pthread_mutex_unlock(&w->inbox_lock);
	return n;
}

static void worker_on_wake(struct cs_worker *w)
{
	uint64_t count;
	size_t opened = 0;
	int fds[INBOX_BATCH];

	/* Read the eventfd before draining: a hand-off that lands after the
	 * drain finds the inbox empty and writes the eventfd again. */
	if (read(w->wake.fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		cs_log_warn("worker %d: read(eventfd): %s", w->id, strerror(errno));
	for (;;) {
		size_t n = inbox_take(w, fds, INBOX_BATCH);
		if (n == 0)
			return;
		for (size_t i = 0; i < n; i++) {
			w->stats.accepted++;
			cs_conn_open(w, fds[i]);
		}
		opened += n;
		if (opened >= INBOX_PER_WAKE) {
			/* Let the connections already open have a turn; come
			 * back for the rest right after. */
			cs_worker_wake(w);
			return;
		}
	}
}

/* ---- the loop ---- */

/* epoll_wait's timeout: until the earliest timer or accept resumption,
 * rounded up (waking before a deadline would only spin), -1 for none. */
static int worker_poll_timeout_ms(const struct cs_worker *w)
{
	struct cs_timer *first = cs_timer_heap_peek(&w->timers);
	uint64_t next_ns = first ? first->deadline_ns : 0;
	uint64_t ms;

	if (w->ready_count > 0)
		return 0;
	if (!w->listener_armed && w->accept_resume_ns &&
	    (next_ns == 0 || w->accept_resume_ns < next_ns))
		next_ns = w->accept_resume_ns;
	if (next_ns == 0)
		return -1;
	if (next_ns <= w->now_ns)
		return 0;
	ms = (next_ns - w->now_ns + CS_NS_PER_MS - 1) / CS_NS_PER_MS;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

static void worker_run_timers(struct cs_worker *w)
{
	struct cs_timer *timer;

	for (int n = 0; n < TIMERS_PER_TURN; n++) {
		timer = cs_timer_heap_pop_expired(&w->timers, w->now_ns);
		if (!timer)
			return;
		cs_conn_on_timer(cs_conn_of_timer(timer));
	}
}

static void worker_dispatch(struct cs_worker *w, const struct epoll_event *ev)
{
	struct cs_handle *handle = ev->data.ptr;

	switch (handle->kind) {
	case CS_HANDLE_LISTENER:
		worker_accept(w);
		break;
	case CS_HANDLE_WAKE:
		worker_on_wake(w);
		break;
	case CS_HANDLE_CONN:
		cs_conn_on_event((struct cs_conn *)handle, ev->events);
		break;
	}
}

static void *worker_main(void *arg)
{
	struct cs_worker *w = arg;
	struct epoll_event events[MAX_EVENTS];
	char name[16];
	int err;

	snprintf(name, sizeof(name), "csw-%d", w->id);
	err = pthread_setname_np(pthread_self(), name);
	if (err)
		cs_log_warn("worker %d: pthread_setname_np: %s", w->id, strerror(err));

	while (!atomic_load(&cs_stop_requested)) {
		int n;

		w->now_ns = cs_now_ns();
		n = epoll_wait(w->epoll_fd, events, MAX_EVENTS, worker_poll_timeout_ms(w));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			cs_log_error("worker %d: epoll_wait: %s", w->id, strerror(errno));
			cs_fatal_stop();
			break;
		}
		w->now_ns = cs_now_ns();
		for (int i = 0; i < n; i++)
			worker_dispatch(w, &events[i]);
		cs_conn_run_ready(w);
		worker_run_timers(w);
		worker_resume_accept(w);
	}
	return NULL;
}

/* ---- life cycle ---- */

int cs_worker_init(struct cs_worker *w, int id, const struct cs_config *cfg,
		   int listen_fd, char *err, size_t err_len)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int rc;

	memset(w, 0, sizeof(*w));
	w->id = id;
	w->cfg = cfg;
	w->epoll_fd = -1;
	w->wake = (struct cs_handle){ .kind = CS_HANDLE_WAKE, .fd = -1 };
	w->listener = (struct cs_handle){ .kind = CS_HANDLE_LISTENER, .fd = listen_fd };
	rc = pthread_mutex_init(&w->inbox_lock, NULL);
	if (rc) {
		snprintf(err, err_len, "pthread_mutex_init: %s", strerror(rc));
		return -1;
	}
	if (cs_timer_heap_init(&w->timers, INITIAL_TIMERS) != 0) {
		snprintf(err, err_len, "out of memory for the timer heap");
		return -1;
	}
	w->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (w->epoll_fd < 0) {
		snprintf(err, err_len, "epoll_create1: %s", strerror(errno));
		return -1;
	}
	w->wake.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->wake.fd < 0) {
		snprintf(err, err_len, "eventfd: %s", strerror(errno));
		return -1;
	}
	ev.data.ptr = &w->wake;
	if (epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, w->wake.fd, &ev) != 0) {
		snprintf(err, err_len, "epoll_ctl(ADD, eventfd): %s", strerror(errno));
		return -1;
	}
	if (listen_fd >= 0 && worker_arm_listener(w) != 0) {
		snprintf(err, err_len, "epoll_ctl(ADD, listener): %s", strerror(errno));
		return -1;
	}
	return 0;
}

int cs_worker_start(struct cs_worker *w, char *err, size_t err_len)
{
	int rc = pthread_create(&w->thread, NULL, worker_main, w);

	if (rc) {
		snprintf(err, err_len, "pthread_create: %s", strerror(rc));
		return -1;
	}
	w->started = true;
	return 0;
}

void cs_worker_join(struct cs_worker *w)
{
	if (!w->started)
		return;
	pthread_join(w->thread, NULL);
	w->started = false;
}

void cs_worker_destroy(struct cs_worker *w)
{
	int fds[INBOX_BATCH];
	size_t n;

	cs_conn_close_all(w);
	if (w->inbox_cap) {
		while ((n = inbox_take(w, fds, INBOX_BATCH)) > 0)
			for (size_t i = 0; i < n; i++)
				close(fds[i]);
	}
	free(w->inbox);
	w->inbox = NULL;
	if (w->wake.fd >= 0)
		close(w->wake.fd);
	if (w->epoll_fd >= 0)
		close(w->epoll_fd);
	cs_timer_heap_free(&w->timers);
	pthread_mutex_destroy(&w->inbox_lock);
}
