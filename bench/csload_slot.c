// SPDX-License-Identifier: BSD-2-Clause
/*
 * A slot's requests (csload_worker.h: the life of one): connect, send,
 * complete or fail, then the slot's next step; the idle queue; --log lines.
 */
#include "csload_worker.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define LOG_LINE_MAX (CSL_MAX_PATH_LEN + 160)

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

/*
 * running_ns: from the send, less this thread's waits for a CPU meanwhile;
 * NO_RUNNING_NS when not measured (logged as "-").
 */
#define NO_RUNNING_NS UINT64_MAX
static void log_request(struct csl_worker *w, const struct slot *s, uint64_t done_ns, uint64_t running_ns)
{
	if (!w->logbuf)
		return;
	if (w->loglen + LOG_LINE_MAX > LOG_BUF_SIZE)
		log_flush(w);
	char running[24] = "-";
	if (running_ns != NO_RUNNING_NS)
		snprintf(running, sizeof(running), "%llu", (unsigned long long)running_ns);
	int n = snprintf(w->logbuf + w->loglen, LOG_BUF_SIZE - w->loglen,
			 "%llu %llu %llu %llu %u %d %s %s\n",
			 (unsigned long long)s->intended_ns, (unsigned long long)s->sent_ns,
			 (unsigned long long)done_ns,
			 (unsigned long long)(done_ns - s->intended_ns), s->local_port,
			 s->resp.status, w->cfg->paths[s->path].path, running);
	if (n > 0 && (size_t)n < LOG_BUF_SIZE - w->loglen)
		w->loglen += (size_t)n;
}

int watch(struct csl_worker *w, struct slot *s, uint32_t events)
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

void close_conn(struct csl_worker *w, struct slot *s)
{
	tls_close(w, s);
	if (s->fd >= 0) {
		/* close() also drops the epoll registration: the fd is not shared. */
		close(s->fd);
		s->fd = -1;
	}
	s->events = 0;
	s->carry_len = 0;
	(void)w;
}

/* ---- the request state machine */

static void slot_next(struct csl_worker *w, struct slot *s, uint64_t now);

/* The request failed: count it, drop the connection, move on. Never retried. */
void fail_request(struct csl_worker *w, struct slot *s, enum csl_err kind, uint64_t now)
{
	csl_stats_error(&w->stats, s->path, kind);
	close_conn(w, s);
	slot_next(w, s, now);
}

void connect_failed(struct csl_worker *w, struct slot *s, int err, enum csl_err kind,
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

void complete_response(struct csl_worker *w, struct slot *s, uint64_t now, size_t extra)
{
	csl_timers_cancel(&w->timers, s->id);
	csl_stats_response(&w->stats, s->path, now - s->intended_ns, s->resp.status);
	csl_stats_service(&w->stats, now - s->began_ns, now - s->sent_ns);
	uint64_t running_ns = NO_RUNNING_NS;
	if (w->schedstat_fd >= 0) {
		uint64_t waited_ns = thread_run_delay_ns(w) - s->sent_run_delay_ns;
		uint64_t from_send_ns = now - s->sent_ns;
		running_ns = waited_ns < from_send_ns ? from_send_ns - waited_ns : 0;
		csl_stats_from_send_running(&w->stats, running_ns);
	}
	log_request(w, s, now, running_ns);
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

void try_send(struct csl_worker *w, struct slot *s)
{
	const char *req = w->run->request[s->path];
	size_t len = (size_t)w->run->request_len[s->path];

	while (s->written < len) {
		ssize_t n = conn_write(s, req + s->written, len - s->written);
		if (n > 0) {
			s->written += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (watch(w, s, s->again_events) < 0)
				fail_request(w, s, CSL_ERR_OTHER, csl_now_ns());
			return;
		}
		fail_request(w, s, (errno == ECONNRESET || errno == EPIPE) ? CSL_ERR_RESET : CSL_ERR_OTHER,
			     csl_now_ns());
		return;
	}
	/* Sent: the request's last byte is the kernel's (with --tls, its last
	 * record: encrypting it was the client's time, no server's). */
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

void connected(struct csl_worker *w, struct slot *s, uint64_t now)
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
	if (w->cfg->tls) {
		tls_start(w, s, now);
		return;
	}
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

void start_request(struct csl_worker *w, struct slot *s, uint64_t intended, uint64_t now)
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

void retire(struct csl_worker *w, struct slot *s)
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
void closed_issue(struct csl_worker *w, struct slot *s, uint64_t now)
{
	if (!may_issue_closed(w, now)) {
		retire(w, s);
		return;
	}
	uint64_t t = csl_now_ns();
	start_request(w, s, t, t);
}

void idle_push(struct csl_worker *w, struct slot *s)
{
	w->idle[(w->idle_head + w->idle_count) % w->nslots] = s->id;
	w->idle_count++;
}

struct slot *idle_pop(struct csl_worker *w)
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
