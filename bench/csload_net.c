// SPDX-License-Identifier: BSD-2-Clause
/*
 * One worker: an epoll loop over its connection slots.
 *
 * A slot is one client connection (or, with --no-keepalive, the place of
 * one: a new connection per request). A request's life:
 *
 *   due (intended_ns) -> [connect] -> send -> read until the response is
 *   complete -> record latency = done - intended.
 *
 * Closed loop: a slot issues its next request when the previous one is done
 * (+ --gap-ms). Open loop: requests fall due on a fixed schedule and each is
 * handed to the longest-idle slot; when no slot is idle, it waits, and the
 * wait is part of its latency (no coordinated omission).
 *
 * A slot has at most one timer (gap end, connect timeout or response
 * timeout), kept in an indexed heap; the heap's earliest deadline arms one
 * timerfd, so the loop wakes with nanosecond precision.
 */
#include "csload_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "csload_http.h"
#include "csload_timer.h"

#define MAX_EVENTS 256
#define SCRATCH_SIZE 65536
#define CARRY_SIZE CSL_HTTP_MAX_HEADER
#define LOG_BUF_SIZE 65536
#define LOG_LINE_MAX (CSL_MAX_PATH_LEN + 128)
#define POLL_NS 50000000ull        /* wake at least this often to see a stop */
#define SIGNAL_DRAIN_NS 200000000ull
#define TIMERFD_ID UINT32_MAX
#define NONE UINT32_MAX

enum phase {
	PH_IDLE,        /* no request; connected or not. Open loop: in the idle queue */
	PH_GAP,         /* closed loop: waiting --gap-ms before the next request */
	PH_CONNECTING,  /* request due, non-blocking connect in progress */
	PH_SENDING,     /* connected, request partly written */
	PH_WAITING,     /* request sent, reading the response */
	PH_RETIRED,     /* closed loop: no more requests for this slot */
};

struct slot {
	int fd;                  /* -1 when not connected */
	unsigned int id;
	enum phase phase;
	uint32_t events;         /* registered epoll interest, 0 if none */
	bool ever_connected;     /* the next connect is a reconnect */
	bool got_byte;           /* a response byte arrived */
	uint16_t local_port;
	unsigned int path;
	size_t written;
	uint64_t intended_ns;
	uint64_t began_ns;          /* the client actually started on the request */
	uint64_t connect_start_ns;
	uint64_t sent_ns;
	uint64_t sent_run_delay_ns; /* the thread's run_delay then (busy-poll) */
	struct csl_http_resp resp;
	char *carry;             /* unconsumed bytes of a partial head or line */
	size_t carry_len;
};

struct csl_worker {
	struct csl_run *run;
	const struct csl_config *cfg;
	unsigned int index;
	unsigned int nslots;
	struct slot *slots;
	int epfd;
	int tfd;
	uint64_t tfd_armed;      /* current timerfd deadline, 0 when disarmed */
	struct csl_timers timers;
	struct csl_stats stats;
	uint64_t rng;
	char scratch[SCRATCH_SIZE];

	unsigned int inflight;   /* slots with a request in progress */
	unsigned int retired;    /* closed loop: slots done */
	uint64_t spin_ns;        /* --spin-us */
	bool stopping;           /* no more requests will be issued */
	uint64_t stop_ns;        /* when issuing stopped */
	uint64_t drain_deadline; /* in-flight requests left then are unfinished */
	uint64_t last_done_ns;

	/* open loop */
	bool open;
	uint64_t quota;          /* requests for this worker; UINT64_MAX: time only */
	uint64_t next_k;         /* the next request of this worker's schedule */
	unsigned int *idle;      /* FIFO ring of idle slot ids; closed loop: ready
				  * to issue their next request */
	unsigned int idle_head, idle_count;

	char *logbuf;
	size_t loglen;
	int schedstat_fd;        /* /proc/thread-self/schedstat, busy-poll only; -1 */
};

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
	if (!inet_ntop(cfg->addr.ss_family, a, addr, sizeof(addr)))
		return -1;
	snprintf(run->host_header, sizeof(run->host_header),
		 cfg->addr.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", addr, cfg->port);
	for (unsigned int i = 0; i < cfg->npaths; i++) {
		run->request_len[i] = csl_http_request(run->request[i], sizeof(run->request[i]),
						       cfg->paths[i].path, run->host_header,
						       cfg->keepalive);
		if (run->request_len[i] < 0)
			return -1;
	}
	atomic_init(&run->stop, 0);
	atomic_init(&run->tickets, 0);
	atomic_init(&run->connect_ok, 0);
	atomic_init(&run->connect_fail, 0);
	atomic_init(&run->first_connect_errno, 0);
	atomic_init(&run->emfile_reported, 0);
	atomic_init(&run->log_errno, 0);
	return 0;
}

/* ---- small helpers */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A uniform double in [0, 1). */
static double rng_unit(struct csl_worker *w)
{
	return (double)(splitmix64(&w->rng) >> 11) * 0x1.0p-53;
}

static unsigned int pick_path(struct csl_worker *w)
{
	if (w->cfg->npaths == 1)
		return 0;
	double u = rng_unit(w), acc = 0;
	for (unsigned int i = 1; i < w->cfg->npaths; i++) {
		acc += w->cfg->paths[i].fraction;
		if (u < acc)
			return i;
	}
	return w->cfg->paths[0].fraction > 0 ? 0 : w->cfg->npaths - 1;
}

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

static void log_flush(struct csl_worker *w)
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

static void log_request(struct csl_worker *w, const struct slot *s, uint64_t done_ns)
{
	if (!w->logbuf)
		return;
	if (w->loglen + LOG_LINE_MAX > LOG_BUF_SIZE)
		log_flush(w);
	int n = snprintf(w->logbuf + w->loglen, LOG_BUF_SIZE - w->loglen,
			 "%llu %llu %llu %llu %u %d %s\n",
			 (unsigned long long)s->intended_ns, (unsigned long long)s->sent_ns,
			 (unsigned long long)done_ns,
			 (unsigned long long)(done_ns - s->intended_ns), s->local_port,
			 s->resp.status, w->cfg->paths[s->path].path);
	if (n > 0 && (size_t)n < LOG_BUF_SIZE - w->loglen)
		w->loglen += (size_t)n;
}

/* ---- epoll and timers */

static int watch(struct csl_worker *w, struct slot *s, uint32_t events)
{
	if (s->events == events)
		return 0;
	struct epoll_event ev = { .events = events, .data.u32 = s->id };
	int op = s->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if (epoll_ctl(w->epfd, op, s->fd, &ev) < 0)
		return -errno;
	s->events = events;
	return 0;
}

static void close_conn(struct csl_worker *w, struct slot *s)
{
	if (s->fd >= 0) {
		/* close() also drops the epoll registration: the fd is not shared. */
		close(s->fd);
		s->fd = -1;
	}
	s->events = 0;
	s->carry_len = 0;
	(void)w;
}

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

/* ---- the request state machine */

static void start_request(struct csl_worker *w, struct slot *s, uint64_t intended, uint64_t now);
static void slot_next(struct csl_worker *w, struct slot *s, uint64_t now);

/* The request failed: count it, drop the connection, move on. Never retried. */
static void fail_request(struct csl_worker *w, struct slot *s, enum csl_err kind, uint64_t now)
{
	csl_stats_error(&w->stats, s->path, kind);
	close_conn(w, s);
	slot_next(w, s, now);
}

static void connect_failed(struct csl_worker *w, struct slot *s, int err, enum csl_err kind,
			   uint64_t now)
{
	struct csl_run *run = w->run;
	int zero = 0;
	atomic_compare_exchange_strong(&run->first_connect_errno, &zero, err ? err : ETIMEDOUT);
	uint64_t fails = atomic_fetch_add(&run->connect_fail, 1) + 1;
	/* Nothing ever connected and every connection has tried: give up. */
	if (atomic_load(&run->connect_ok) == 0 && fails >= w->cfg->connections)
		atomic_store(&run->stop, 1);
	if (err == EMFILE || err == ENFILE) {
		if (atomic_exchange(&run->emfile_reported, 1) == 0)
			fprintf(stderr, "csload: out of file descriptors (%s); counted as connect errors\n",
				strerror(err));
	}
	fail_request(w, s, kind, now);
}

/*
 * How long this thread has waited for a CPU since it started (ns), from
 * its schedstat ("cpu_ns run_delay_ns timeslices"); 0 when not measured.
 */
static uint64_t thread_run_delay_ns(const struct csl_worker *w)
{
	char buf[96];
	if (w->schedstat_fd < 0)
		return 0;
	ssize_t n = pread(w->schedstat_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	unsigned long long cpu_ns = 0, run_delay_ns = 0;
	if (sscanf(buf, "%llu %llu", &cpu_ns, &run_delay_ns) != 2)
		return 0;
	return run_delay_ns;
}

static void complete_response(struct csl_worker *w, struct slot *s, uint64_t now, size_t extra)
{
	csl_timers_cancel(&w->timers, s->id);
	csl_stats_response(&w->stats, s->path, now - s->intended_ns, s->resp.status);
	csl_stats_service(&w->stats, now - s->began_ns, now - s->sent_ns);
	if (w->schedstat_fd >= 0) {
		uint64_t waited_ns = thread_run_delay_ns(w) - s->sent_run_delay_ns;
		uint64_t from_send_ns = now - s->sent_ns;
		csl_stats_from_send_running(&w->stats, waited_ns < from_send_ns ? from_send_ns - waited_ns : 0);
	}
	log_request(w, s, now);
	w->last_done_ns = now;
	if (extra) {
		/* Bytes no request asked for: the connection is out of step. */
		w->stats.unexpected_bytes += extra;
		close_conn(w, s);
	} else if (s->resp.close || !w->cfg->keepalive) {
		close_conn(w, s);
	} else {
		s->carry_len = 0;
		if (watch(w, s, EPOLLIN) < 0)
			close_conn(w, s);
	}
	slot_next(w, s, now);
}

static void try_send(struct csl_worker *w, struct slot *s)
{
	const char *req = w->run->request[s->path];
	size_t len = (size_t)w->run->request_len[s->path];

	while (s->written < len) {
		ssize_t n = send(s->fd, req + s->written, len - s->written, MSG_NOSIGNAL);
		if (n > 0) {
			s->written += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (watch(w, s, EPOLLOUT) < 0)
				fail_request(w, s, CSL_ERR_OTHER, csl_now_ns());
			return;
		}
		fail_request(w, s, (errno == ECONNRESET || errno == EPIPE) ? CSL_ERR_RESET : CSL_ERR_OTHER,
			     csl_now_ns());
		return;
	}
	s->sent_ns = csl_now_ns();
	s->sent_run_delay_ns = thread_run_delay_ns(w);
	csl_stats_sent(&w->stats, s->sent_ns - s->intended_ns);
	s->phase = PH_WAITING;
	if (watch(w, s, EPOLLIN) < 0) {
		fail_request(w, s, CSL_ERR_OTHER, s->sent_ns);
		return;
	}
	csl_timers_set(&w->timers, s->id, s->sent_ns + w->cfg->timeout_ms * 1000000ull);
}

static void connected(struct csl_worker *w, struct slot *s, uint64_t now)
{
	struct sockaddr_storage local = { 0 };
	socklen_t len = sizeof(local);

	csl_timers_cancel(&w->timers, s->id);
	atomic_fetch_add(&w->run->connect_ok, 1);
	csl_stats_connect(&w->stats, now - s->connect_start_ns);
	s->ever_connected = true;
	s->local_port = 0;
	/* getsockname() fills local: the analyzer loses that through the casts */
	if (getsockname(s->fd, (struct sockaddr *)&local, &len) == 0)
		s->local_port = ntohs(local.ss_family == AF_INET6 // NOLINT(clang-analyzer-core.CallAndMessage)
					      ? ((struct sockaddr_in6 *)&local)->sin6_port
					      : ((struct sockaddr_in *)&local)->sin_port);
	s->phase = PH_SENDING;
	try_send(w, s);
}

static void begin_connect(struct csl_worker *w, struct slot *s)
{
	const struct csl_config *cfg = w->cfg;
	int one = 1;

	if (cfg->keepalive && s->ever_connected)
		w->stats.reconnects++;
	s->phase = PH_CONNECTING;
	s->connect_start_ns = csl_now_ns();
	s->fd = socket(cfg->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		connect_failed(w, s, errno, CSL_ERR_CONNECT, csl_now_ns());
		return;
	}
	/* Small requests must not wait for Nagle. */
	if (setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0) {
		fail_request(w, s, CSL_ERR_OTHER, csl_now_ns());
		return;
	}
	s->connect_start_ns = csl_now_ns();
	if (connect(s->fd, (const struct sockaddr *)&cfg->addr, cfg->addr_len) == 0) {
		connected(w, s, csl_now_ns());
		return;
	}
	if (errno != EINPROGRESS) {
		connect_failed(w, s, errno, CSL_ERR_CONNECT, csl_now_ns());
		return;
	}
	if (watch(w, s, EPOLLOUT) < 0) {
		fail_request(w, s, CSL_ERR_OTHER, csl_now_ns());
		return;
	}
	csl_timers_set(&w->timers, s->id, s->connect_start_ns + cfg->connect_timeout_ms * 1000000ull);
}

static void start_request(struct csl_worker *w, struct slot *s, uint64_t intended, uint64_t now)
{
	(void)now;
	w->stats.attempts++;
	w->inflight++;
	s->intended_ns = intended;
	s->began_ns = csl_now_ns();
	s->path = pick_path(w);
	s->written = 0;
	s->got_byte = false;
	s->carry_len = 0;
	csl_http_resp_init(&s->resp);
	if (s->fd < 0) {
		begin_connect(w, s);
	} else {
		s->phase = PH_SENDING;
		try_send(w, s);
	}
}

/* Closed loop: may this slot send another request now? Takes a ticket. */
static bool may_issue_closed(struct csl_worker *w, uint64_t now)
{
	if (w->stopping || now >= w->run->time_limit_ns || atomic_load(&w->run->stop))
		return false;
	if (w->cfg->requests == 0)
		return true;
	return atomic_fetch_add(&w->run->tickets, 1) < w->cfg->requests;
}

static void retire(struct csl_worker *w, struct slot *s)
{
	if (s->phase == PH_RETIRED)
		return;
	csl_timers_cancel(&w->timers, s->id);
	s->phase = PH_RETIRED;
	w->retired++;
}

/*
 * Closed loop: the request is intended now, the moment the slot is free;
 * a fresh clock reading, not the loop's, so that slots issued one after
 * the other in one turn are not charged for the ones before them.
 */
static void closed_issue(struct csl_worker *w, struct slot *s, uint64_t now)
{
	if (!may_issue_closed(w, now)) {
		retire(w, s);
		return;
	}
	uint64_t t = csl_now_ns();
	start_request(w, s, t, t);
}

static void idle_push(struct csl_worker *w, struct slot *s)
{
	w->idle[(w->idle_head + w->idle_count) % w->nslots] = s->id;
	w->idle_count++;
}

static struct slot *idle_pop(struct csl_worker *w)
{
	struct slot *s = &w->slots[w->idle[w->idle_head]];
	/* nslots >= 1: csload_opts refuses more threads than connections */
	w->idle_head = (w->idle_head + 1) % w->nslots; // NOLINT(clang-analyzer-core.DivideZero)
	w->idle_count--;
	return s;
}

/* A request ended (response or error): the slot takes its next step. */
static void slot_next(struct csl_worker *w, struct slot *s, uint64_t now)
{
	csl_timers_cancel(&w->timers, s->id);
	w->inflight--;
	if (s->fd >= 0 && watch(w, s, EPOLLIN) < 0)
		close_conn(w, s);
	if (w->open) {
		s->phase = PH_IDLE;
		idle_push(w, s);
		return;
	}
	if (w->cfg->gap_ms > 0 && !w->stopping) {
		uint64_t due = now + (uint64_t)(w->cfg->gap_ms * 1e6);
		/* No request will follow the gap: do not wait for it. */
		if (due >= w->run->time_limit_ns ||
		    (w->cfg->requests && atomic_load(&w->run->tickets) >= w->cfg->requests)) {
			retire(w, s);
			return;
		}
		s->phase = PH_GAP;
		csl_timers_set(&w->timers, s->id, due);
		return;
	}
	/* Not closed_issue() here: a request that fails at once would recurse.
	 * The loop takes it from the ready queue on its next turn. */
	s->phase = PH_IDLE;
	idle_push(w, s);
}

/* ---- event handlers */

/* Data or EOF on a connection with no request: the server closed it. */
static void on_idle_readable(struct csl_worker *w, struct slot *s)
{
	for (;;) {
		ssize_t n = read(s->fd, w->scratch, sizeof(w->scratch));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n > 0) {
			/* Bytes nobody asked for (e.g. a 408 before an idle close):
			 * the connection is out of step, do not reuse it. */
			w->stats.unexpected_bytes += (uint64_t)n;
			close_conn(w, s);
			return;
		}
		w->stats.idle_closes++; /* EOF or reset: the server closed it */
		close_conn(w, s);
		return;
	}
}

static void on_readable(struct csl_worker *w, struct slot *s)
{
	for (;;) {
		char *dst;
		size_t room;
		if (s->carry_len) {
			dst = s->carry + s->carry_len;
			room = CARRY_SIZE - s->carry_len;
		} else {
			dst = w->scratch;
			room = sizeof(w->scratch);
		}
		ssize_t n = read(s->fd, dst, room);
		uint64_t now = csl_now_ns();
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			fail_request(w, s, errno == ECONNRESET ? CSL_ERR_RESET : CSL_ERR_OTHER, now);
			return;
		}
		if (n == 0) {
			if (!s->got_byte)
				fail_request(w, s, CSL_ERR_EOF_BEFORE, now);
			else if (s->carry_len == 0 && csl_http_resp_eof(&s->resp))
				complete_response(w, s, now, 0);
			else
				fail_request(w, s, CSL_ERR_EOF_MID, now);
			return;
		}
		s->got_byte = true;
		const char *data = s->carry_len ? s->carry : w->scratch;
		size_t len = s->carry_len + (size_t)n;
		ssize_t used = csl_http_resp_feed(&s->resp, data, len);
		if (used < 0) {
			fail_request(w, s, CSL_ERR_BAD_RESPONSE, now);
			return;
		}
		if (s->resp.state == CSL_HTTP_DONE) {
			complete_response(w, s, now, len - (size_t)used);
			return;
		}
		size_t rest = len - (size_t)used;
		if (rest == 0) {
			s->carry_len = 0;
			continue;
		}
		/* Keep the unfinished head or line for the next read. */
		if (!s->carry) {
			s->carry = malloc(CARRY_SIZE);
			if (!s->carry) {
				fail_request(w, s, CSL_ERR_OTHER, now);
				return;
			}
		}
		memmove(s->carry, data + used, rest);
		s->carry_len = rest;
	}
}

static void on_writable(struct csl_worker *w, struct slot *s)
{
	if (s->phase == PH_CONNECTING) {
		uint64_t now = csl_now_ns();
		int err = 0;
		socklen_t len = sizeof(err);
		if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err) {
			connect_failed(w, s, err, CSL_ERR_CONNECT, now);
			return;
		}
		connected(w, s, now);
	} else if (s->phase == PH_SENDING) {
		try_send(w, s);
	}
}

static void on_event(struct csl_worker *w, struct slot *s, uint32_t ev)
{
	/* As in Redis' ae: errors and hang-ups go to whichever handler the
	 * phase has; its syscall then reports what happened. */
	if (s->fd < 0)
		return;
	switch (s->phase) {
	case PH_CONNECTING:
	case PH_SENDING:
		if (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			on_writable(w, s);
		break;
	case PH_WAITING:
		if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP))
			on_readable(w, s);
		break;
	case PH_IDLE:
	case PH_GAP:
	case PH_RETIRED:
		if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP))
			on_idle_readable(w, s);
		break;
	}
}

static void on_timer(struct csl_worker *w, struct slot *s, uint64_t now)
{
	switch (s->phase) {
	case PH_GAP:
		s->phase = PH_IDLE;
		closed_issue(w, s, now);
		break;
	case PH_CONNECTING:
		connect_failed(w, s, ETIMEDOUT, CSL_ERR_CONNECT_TIMEOUT, now);
		break;
	case PH_SENDING:
	case PH_WAITING:
		fail_request(w, s, CSL_ERR_TIMEOUT, now);
		break;
	default:
		break;
	}
}

static void run_timers(struct csl_worker *w, uint64_t now)
{
	unsigned int id;
	uint64_t when;
	while (csl_timers_peek(&w->timers, &id, &when) && when <= now) {
		csl_timers_cancel(&w->timers, id);
		on_timer(w, &w->slots[id], now);
	}
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

static int worker_loop(struct csl_worker *w)
{
	struct epoll_event evs[MAX_EVENTS];
	struct csl_run *run = w->run;

	for (;;) {
		uint64_t now = csl_now_ns();
		if (!w->stopping) {
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
			}
			else if (atomic_load(&run->stop))
				begin_stop(w, now, SIGNAL_DRAIN_NS);
		}
		if (w->stopping && now >= w->drain_deadline)
			break;
		run_timers(w, now);
		if (w->open && !w->stopping)
			dispatch(w, now);
		else if (!w->open)
			issue_ready(w, now);
		if (finished(w))
			break;

		/* Slots ready to issue: only look at the sockets, do not sleep.
		 * Otherwise sleep until the next deadline, or until spin_ns before
		 * it and then poll without sleeping (--spin-us). */
		int timeout = 0;
		if (!w->cfg->busy_poll && (w->open || w->idle_count == 0)) {
			uint64_t wake = next_wake(w, now);
			if (wake > now + w->spin_ns) {
				arm_timerfd(w, wake - w->spin_ns);
				timeout = -1;
			}
		}
		int n = epoll_wait(w->epfd, evs, MAX_EVENTS, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("csload: epoll_wait");
			return -1;
		}
		if (n == 0 && w->cfg->busy_poll)
			sched_yield(); /* nothing to do: let a server thread have the CPU */
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

	/* What is still in flight will never complete: say so. */
	uint64_t now = csl_now_ns();
	for (unsigned int i = 0; i < w->nslots; i++) {
		struct slot *s = &w->slots[i];
		if (s->phase == PH_CONNECTING || s->phase == PH_SENDING || s->phase == PH_WAITING) {
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
	csl_stats_span(&w->stats, run->start_ns, end);
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

	/* A busy-polling client measures its own waits for a CPU (its thread's
	 * schedstat): what it then reads late is its own time, not a server's. */
	if (w->cfg->busy_poll)
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
