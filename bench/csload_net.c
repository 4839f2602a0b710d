// SPDX-License-Identifier: BSD-2-Clause
/*
 * csload's workers: the run they share, each one's epoll loop and its life
 * (csload_worker.h: what a worker is; csload_slot.c and csload_events.c:
 * its slots' requests).
 */
#include "csload_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "csload_worker.h"

#define MAX_EVENTS 256
#define POLL_NS 50000000ull /* wake at least this often to see a stop */
#define SIGNAL_DRAIN_NS 200000000ull
#define TIMERFD_ID UINT32_MAX

uint64_t csl_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- shared run */

int csl_run_init(struct csl_run *run, const struct csl_config *cfg, int log_fd)
{
	char addr[INET6_ADDRSTRLEN];
	const void *a;

	memset(run, 0, sizeof(*run));
	run->cfg = cfg;
	run->log_fd = log_fd;
	if (cfg->addr.ss_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)&cfg->addr)->sin6_addr;
	else
		a = &((const struct sockaddr_in *)&cfg->addr)->sin_addr;
	if (!inet_ntop(cfg->addr.ss_family, a, addr, sizeof(addr))) {
		perror("csload: inet_ntop");
		return -1;
	}
	snprintf(run->host_header, sizeof(run->host_header),
		 cfg->addr.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", addr, cfg->port);
	for (unsigned int i = 0; i < cfg->npaths; i++) {
		run->request_len[i] = csl_http_request(run->request[i], sizeof(run->request[i]),
						       cfg->paths[i].path, run->host_header,
						       cfg->keepalive);
		if (run->request_len[i] < 0) {
			fprintf(stderr, "csload: cannot build the request\n");
			return -1;
		}
	}
	if (cfg->tls && !(run->tls_ctx = csl_tls_ctx_new(cfg)))
		return -1;
	atomic_init(&run->stop, 0);
	atomic_init(&run->tickets, 0);
	atomic_init(&run->connect_ok, 0);
	atomic_init(&run->connect_fail, 0);
	atomic_init(&run->first_connect_errno, 0);
	atomic_init(&run->emfile_reported, 0);
	atomic_init(&run->log_errno, 0);
	atomic_init(&run->tls_ok, 0);
	atomic_init(&run->tls_fail, 0);
	atomic_init(&run->tls_error_taken, 0);
	return 0;
}

void csl_run_free(struct csl_run *run)
{
	if (run && run->tls_ctx) {
		csl_tls_ctx_free(run->tls_ctx);
		run->tls_ctx = NULL;
	}
}

/* ---- the open loop's schedule */

/* Open loop: intended time of this worker's request k. Worker t of T sends
 * the global requests t, t+T, t+2T, ... of a schedule 1/rate apart. */
static uint64_t intended_of(const struct csl_worker *w, uint64_t k)
{
	double global = (double)k * w->cfg->threads + w->index;
	return w->run->start_ns + (uint64_t)(global * 1e9 / w->cfg->rate);
}

/* Open loop: how many of this worker's requests fall due before t_ns. */
static uint64_t due_before(const struct csl_worker *w, uint64_t t_ns)
{
	if (t_ns <= w->run->start_ns)
		return 0;
	double x = (double)(t_ns - w->run->start_ns) * w->cfg->rate / 1e9; /* global slots */
	if (x <= w->index)
		return 0;
	double k = (x - w->index) / w->cfg->threads;
	uint64_t n = (uint64_t)k;
	if ((double)n < k)
		n++;
	return n < w->quota ? n : w->quota;
}

/* ---- --log */

void log_flush(struct csl_worker *w)
{
	size_t off = 0;
	while (off < w->loglen) {
		ssize_t n = write(w->run->log_fd, w->logbuf + off, w->loglen - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int zero = 0;
			atomic_compare_exchange_strong(&w->run->log_errno, &zero, n < 0 ? errno : EIO);
			break;
		}
		off += (size_t)n;
	}
	w->loglen = 0;
}

/* ---- the loop */

static void arm_timerfd(struct csl_worker *w, uint64_t when)
{
	if (when == w->tfd_armed)
		return;
	struct itimerspec its = { 0 };
	its.it_value.tv_sec = (time_t)(when / 1000000000ull);
	its.it_value.tv_nsec = (long)(when % 1000000000ull);
	/* An absolute time already past fires at once, as wanted. */
	if (timerfd_settime(w->tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
		perror("csload: timerfd_settime");
		return;
	}
	w->tfd_armed = when;
}

/* Open loop: hand every request that is due to an idle slot. */
static void dispatch(struct csl_worker *w, uint64_t now)
{
	while (w->idle_count > 0 && w->next_k < w->quota) {
		uint64_t t = intended_of(w, w->next_k);
		if (t > now || t >= w->run->time_limit_ns)
			break;
		w->next_k++;
		start_request(w, idle_pop(w), t, now);
	}
}

/* Closed loop: slots whose previous request ended issue the next one.
 * Only those queued before this call: the rest wait for the next turn. */
static void issue_ready(struct csl_worker *w, uint64_t now)
{
	for (unsigned int n = w->idle_count; n > 0 && w->idle_count > 0; n--) {
		struct slot *s = idle_pop(w);
		if (s->phase == PH_IDLE)
			closed_issue(w, s, now);
	}
}

/* Stop issuing: closed-loop slots that wait are retired; the rest drain. */
static void begin_stop(struct csl_worker *w, uint64_t now, uint64_t drain_ns)
{
	w->stopping = true;
	w->stop_ns = now < w->run->time_limit_ns ? now : w->run->time_limit_ns;
	w->drain_deadline = now + drain_ns;
	for (unsigned int i = 0; i < w->nslots; i++) {
		struct slot *s = &w->slots[i];
		if (!w->open && (s->phase == PH_GAP || s->phase == PH_IDLE))
			retire(w, s);
	}
	if (w->open) {
		uint64_t due = due_before(w, w->stop_ns);
		if (due > w->next_k)
			w->stats.unsent += due - w->next_k;
	} else {
		w->idle_count = 0; /* the ready queue: all retired above */
	}
}

static bool finished(const struct csl_worker *w)
{
	if (w->inflight > 0)
		return false;
	if (w->stopping)
		return true;
	if (w->open)
		return w->next_k >= w->quota;
	return w->retired == w->nslots;
}

static uint64_t next_wake(struct csl_worker *w, uint64_t now)
{
	uint64_t wake = now + POLL_NS;
	unsigned int id;
	uint64_t when;
	if (csl_timers_peek(&w->timers, &id, &when) && when < wake)
		wake = when;
	if (!w->stopping) {
		if (w->run->time_limit_ns < wake)
			wake = w->run->time_limit_ns;
		if (w->open && w->idle_count > 0 && w->next_k < w->quota) {
			uint64_t t = intended_of(w, w->next_k);
			if (t < wake)
				wake = t;
		}
	} else if (w->drain_deadline < wake) {
		wake = w->drain_deadline;
	}
	return wake;
}

/* Stops issuing at the end of the run, or once asked to (a signal, or
 * nothing connects). */
static void check_stop(struct csl_worker *w, uint64_t now)
{
	struct csl_run *run = w->run;

	if (w->stopping)
		return;
	if (now >= run->time_limit_ns) {
		/*
		 * Woken late at the end (descheduled, say): what fell
		 * due before it still goes out, late, its latency
		 * counted from when it was due. Only requests that find
		 * every connection busy are unsent.
		 */
		if (w->open)
			dispatch(w, now);
		begin_stop(w, now, CSL_DRAIN_NS);
	} else if (atomic_load(&run->stop))
		begin_stop(w, now, SIGNAL_DRAIN_NS);
}

/* Slots ready to issue: only look at the sockets, do not sleep (0).
 * Otherwise sleep until the next deadline (-1: the timerfd wakes the
 * loop), or until spin_ns before it and then poll without sleeping
 * (--spin-us). */
static int poll_timeout(struct csl_worker *w, uint64_t now)
{
	if (w->cfg->busy_poll || (!w->open && w->idle_count > 0))
		return 0;
	uint64_t wake = next_wake(w, now);
	if (wake <= now + w->spin_ns)
		return 0;
	arm_timerfd(w, wake - w->spin_ns);
	return -1;
}

static void handle_events(struct csl_worker *w, const struct epoll_event *evs, int n)
{
	for (int i = 0; i < n; i++) {
		uint32_t id = evs[i].data.u32;
		if (id == TIMERFD_ID) {
			uint64_t ticks;
			/* Drain it; a concurrent re-arm can make it EAGAIN. */
			if (read(w->tfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
				perror("csload: timerfd read");
			w->tfd_armed = 0;
			continue;
		}
		on_event(w, &w->slots[id], evs[i].events);
	}
}

/* The loop is over: what is still in flight will never complete, say so. */
static void end_loop(struct csl_worker *w)
{
	uint64_t now = csl_now_ns();
	for (unsigned int i = 0; i < w->nslots; i++) {
		struct slot *s = &w->slots[i];
		if (s->phase == PH_CONNECTING || s->phase == PH_HANDSHAKE || s->phase == PH_SENDING ||
		    s->phase == PH_WAITING) {
			csl_stats_error(&w->stats, s->path, CSL_ERR_UNFINISHED);
			w->inflight--;
			s->phase = PH_RETIRED;
		}
		close_conn(w, s);
	}
	if (!w->stopping) {
		w->stopping = true;
		w->stop_ns = now;
	}
	uint64_t end = w->last_done_ns > w->stop_ns ? w->last_done_ns : w->stop_ns;
	csl_stats_span(&w->stats, w->run->start_ns, end);
}

static int worker_loop(struct csl_worker *w)
{
	struct epoll_event evs[MAX_EVENTS];

	for (;;) {
		uint64_t now = csl_now_ns();
		check_stop(w, now);
		if (w->stopping && now >= w->drain_deadline)
			break;
		run_timers(w, now);
		if (w->open && !w->stopping)
			dispatch(w, now);
		else if (!w->open)
			issue_ready(w, now);
		if (finished(w))
			break;

		int n = epoll_wait(w->epfd, evs, MAX_EVENTS, poll_timeout(w, now));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("csload: epoll_wait");
			return -1;
		}
		if (n == 0 && w->cfg->busy_poll)
			sched_yield(); /* nothing to do: let a server thread have the CPU */
		handle_events(w, evs, n);
	}
	end_loop(w);
	return 0;
}

/* ---- worker life */

struct csl_worker *csl_worker_new(struct csl_run *run, unsigned int index, unsigned int nslots)
{
	const struct csl_config *cfg = run->cfg;
	struct csl_worker *w = calloc(1, sizeof(*w));
	if (!w) {
		fprintf(stderr, "csload: out of memory\n");
		return NULL;
	}
	w->run = run;
	w->cfg = cfg;
	w->index = index;
	w->nslots = nslots;
	w->epfd = w->tfd = w->schedstat_fd = -1;
	uint64_t seed = cfg->seed ^ (0x9e3779b97f4a7c15ull * (index + 1));
	w->rng = splitmix64(&seed);
	w->open = cfg->rate > 0;
	w->spin_ns = cfg->spin_us * 1000ull;
	w->quota = UINT64_MAX;
	if (w->open && cfg->requests)
		w->quota = cfg->requests / cfg->threads + (index < cfg->requests % cfg->threads);

	w->slots = calloc(nslots, sizeof(*w->slots));
	w->idle = calloc(nslots, sizeof(*w->idle));
	if (!w->slots || !w->idle || csl_timers_init(&w->timers, nslots) < 0 ||
	    csl_stats_init(&w->stats, cfg->npaths) < 0) {
		fprintf(stderr, "csload: out of memory for %u connections\n", nslots);
		goto fail;
	}
	if (run->log_fd >= 0 && !(w->logbuf = malloc(LOG_BUF_SIZE))) {
		fprintf(stderr, "csload: out of memory\n");
		goto fail;
	}
	for (unsigned int i = 0; i < nslots; i++) {
		w->slots[i].fd = -1;
		w->slots[i].id = i;
		w->slots[i].phase = PH_IDLE;
	}

	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (w->epfd < 0) {
		perror("csload: epoll_create1");
		goto fail;
	}
	w->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (w->tfd < 0) {
		perror("csload: timerfd_create");
		goto fail;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = TIMERFD_ID };
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->tfd, &ev) < 0) {
		perror("csload: epoll_ctl(timerfd)");
		goto fail;
	}
	return w;
fail:
	csl_worker_free(w);
	return NULL;
}

void *csl_worker_main(void *arg)
{
	struct csl_worker *w = arg;
	struct timespec start = {
		.tv_sec = (time_t)(w->run->start_ns / 1000000000ull),
		.tv_nsec = (long)(w->run->start_ns % 1000000000ull),
	};

	/* The client measures its own waits for a CPU (its thread's schedstat:
	 * spinning, or woken from epoll_wait and not yet run): what it then
	 * reads late is its own time, not a server's. */
	w->schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	/* Timer slack (50 us by default) would delay every scheduled send. */
	if (prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0) < 0)
		perror("csload: prctl(PR_SET_TIMERSLACK)");
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &start, NULL) == EINTR)
		;

	/* Every slot starts idle and unconnected: open loop, in the idle queue
	 * for the schedule; closed loop, ready to issue its first request. */
	for (unsigned int i = 0; i < w->nslots; i++)
		idle_push(w, &w->slots[i]);
	if (worker_loop(w) < 0)
		atomic_store(&w->run->stop, 1);
	if (w->logbuf)
		log_flush(w);
	return NULL;
}

struct csl_stats *csl_worker_stats(struct csl_worker *w)
{
	return &w->stats;
}

void csl_worker_free(struct csl_worker *w)
{
	if (!w)
		return;
	if (w->slots) {
		for (unsigned int i = 0; i < w->nslots; i++) {
			tls_close(w, &w->slots[i]);
			if (w->slots[i].fd >= 0)
				close(w->slots[i].fd);
			free(w->slots[i].carry);
		}
	}
	if (w->tfd >= 0)
		close(w->tfd);
	if (w->schedstat_fd >= 0)
		close(w->schedstat_fd);
	if (w->epfd >= 0)
		close(w->epfd);
	free(w->slots);
	free(w->idle);
	free(w->logbuf);
	csl_timers_free(&w->timers);
	csl_stats_free(&w->stats);
	free(w);
}
