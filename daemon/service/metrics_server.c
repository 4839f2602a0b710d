// SPDX-License-Identifier: BSD-2-Clause
/*
 * The metrics endpoint (metrics_server.h): one epoll loop over the
 * listening socket and every connection, each a small state machine:
 *
 *   READING  request bytes come in (none yet: idle); judged after each read
 *   WRITING  an answer, rendered whole beforehand, goes out as the client takes it
 *   LINGER   after a refusal: our side is shut, what the client still sends is
 *            read and dropped, so that closing does not reset the answer away
 *
 * Level-triggered: a connection is asked only for what its state needs.
 */
#include <sys/socket.h>

#include "metrics_server.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "metrics.h"
#include "metrics_request.h"
#include "trace_windows.h"
#include "units.h"

#define HEAD_MAX_BYTES 8192      /* a scrape's request is a few hundred bytes */
#define CONNS_MAX 1024           /* connections held at once; then the oldest idle one goes */
#define FDS_KEPT 64              /* descriptors left to the rest of the daemon under RLIMIT_NOFILE */
/* First request, or a later one once begun: whole within this. */
#define REQUEST_DEADLINE_NS (10 * NS_PER_SEC)
/* Kept alive between requests: longer than Prometheus's default 1 m interval, so its connection stays. */
#define IDLE_DEADLINE_NS (65 * NS_PER_SEC)
/* An answer is taken whole within this, or its reader is dropped. */
#define ANSWER_DEADLINE_NS (10 * NS_PER_SEC)
#define LINGER_DEADLINE_NS (1 * NS_PER_SEC)
#define LOOP_WAKE_MS 100         /* how soon stop is noticed and deadlines are checked */
#define ACCEPT_PAUSE_NS (100 * NS_PER_MS)
#define EVENTS_PER_WAIT 64
#define LINGER_CHUNK 4096

enum conn_state { CONN_READING, CONN_WRITING, CONN_LINGER };

struct cs_metrics_conn {
	int fd;
	size_t slot;               /* index in server->conns */
	enum conn_state state;
	bool served;               /* one answer given: between requests it is kept alive */
	bool close_after;          /* close (linger) once the answer is out */
	bool pipelined;            /* a request's bytes wait in `in`, read before its answer was due */
	char *in;                  /* HEAD_MAX_BYTES, taken at the first byte: idle costs none */
	size_t in_len;
	char *out;
	size_t out_len, out_sent;
	uint64_t since_ns;         /* start of what the state's deadline measures */
};

static uint32_t state_events(enum conn_state state)
{
	return state == CONN_WRITING ? EPOLLOUT : EPOLLIN | EPOLLRDHUP;
}

static void conn_set_state(struct cs_metrics_server *server, struct cs_metrics_conn *c, enum conn_state state,
			   uint64_t now)
{
	if (state != c->state) {
		struct epoll_event ev = { .events = state_events(state), .data.ptr = c };
		epoll_ctl(server->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
	}
	c->state = state;
	c->since_ns = now;
}

static void conn_close(struct cs_metrics_server *server, struct cs_metrics_conn *c)
{
	/*
	 * Out of the epoll set first: close() alone leaves it there while another
	 * process holds the socket too (the BPF statistics holder, forked at the
	 * probes' start, has a copy of every descriptor until it closes them),
	 * and its next event would carry this freed connection.
	 */
	epoll_ctl(server->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	struct cs_metrics_conn *last = server->conns[--server->conn_count];
	server->conns[c->slot] = last;
	last->slot = c->slot;
	free(c->in);
	free(c->out);
	free(c);
}

/* Queue a whole answer: the head written here, the body (malloc'd, taken over) after it. */
static void queue_answer(struct cs_metrics_conn *c, const char *status, const char *content_type, char *body,
			 size_t body_len, bool head_only, bool keep_alive)
{
	char head[320];
	if (!body)
		body_len = 0; /* out of memory for the text: the status alone */
	int head_len = snprintf(head, sizeof(head),
				"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: %s\r\n\r\n",
				status, content_type, body_len,
				!strncmp(status, "405", 3) ? "Allow: GET, HEAD\r\n" : "",
				keep_alive ? "keep-alive" : "close");
	size_t send_body = head_only ? 0 : body_len;
	free(c->out);
	c->out = malloc((size_t)head_len + send_body);
	c->out_sent = 0;
	c->out_len = c->out ? (size_t)head_len + send_body : 0;
	if (c->out) {
		memcpy(c->out, head, (size_t)head_len);
		if (send_body)
			memcpy(c->out + head_len, body, send_body);
	}
	free(body);
	c->close_after = !keep_alive || !c->out;
}

/* Render the metrics into memory under the engine's lock; the client is written to after. */
static char *render(struct cs_metrics_server *server, enum cs_metrics_format format, size_t *len)
{
	char *body = NULL;
	FILE *out = open_memstream(&body, len);
	if (!out)
		return NULL;
	pthread_mutex_lock(server->engine_lock);
	struct cs_report_meta meta = *server->meta;
	cs_trace_meta_advance(&meta, cs_monotonic_ns());
	int rendered = cs_metrics_render(out, server->engine, &meta, server->target, format);
	pthread_mutex_unlock(server->engine_lock);
	if (fclose(out) || rendered) {
		free(body);
		return NULL;
	}
	return body;
}

static void answer(struct cs_metrics_server *server, struct cs_metrics_conn *c, const struct cs_metrics_request *req)
{
	const char *status = cs_metrics_verdict_status(req->verdict);
	if (status) {
		server->rejected++;
		char *text = strdup(req->verdict == CS_MREQ_NOT_FOUND ? "see /metrics\n" : "GET /metrics only\n");
		queue_answer(c, status, "text/plain", text, text ? strlen(text) : 0, false, false);
		c->in_len = 0; /* nothing more is read as a request */
		return;
	}
	size_t body_len = 0;
	char *body = render(server, req->format, &body_len);
	if (!body) {
		queue_answer(c, "500 Internal Server Error", "text/plain", strdup("out of memory\n"), 14, false, false);
		c->in_len = 0;
		return;
	}
	server->scrapes++;
	queue_answer(c, "200 OK", req->format == CS_METRICS_OPENMETRICS ? CS_OPENMETRICS_CONTENT_TYPE :
			 CS_METRICS_CONTENT_TYPE, body, body_len, req->head_only, req->keep_alive);
	/* Pipelined bytes after the head stay for the next request. */
	c->in_len -= req->head_len;
	memmove(c->in, c->in + req->head_len, c->in_len);
}

/* Judge what has arrived; answer when there is a verdict. True when an answer was queued. */
static bool judge(struct cs_metrics_server *server, struct cs_metrics_conn *c, uint64_t now)
{
	struct cs_metrics_request req;
	c->pipelined = false; /* judged now, whoever asked */
	cs_metrics_request_parse(c->in, c->in_len, HEAD_MAX_BYTES, &req);
	if (req.verdict == CS_MREQ_MORE)
		return false;
	answer(server, c, &req);
	conn_set_state(server, c, CONN_WRITING, now);
	return true;
}

/* Send what the client takes now; false when the connection is to be closed. */
static bool conn_write(struct cs_metrics_server *server, struct cs_metrics_conn *c, uint64_t now)
{
	while (c->out_sent < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_sent, c->out_len - c->out_sent, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		c->out_sent += (size_t)n;
	}
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_sent = 0;
	if (c->close_after) {
		shutdown(c->fd, SHUT_WR);
		conn_set_state(server, c, CONN_LINGER, now);
		return true;
	}
	c->served = true;
	conn_set_state(server, c, CONN_READING, now);
	/* A pipelined request already here: no event will say so; the loop answers it on its next turn
	   (not now: a client pipelining hundreds of requests must not have them rendered in a row). */
	c->pipelined = c->in_len > 0;
	return true;
}

/* Take what the client sent; false when the connection is to be closed. */
static bool conn_read(struct cs_metrics_server *server, struct cs_metrics_conn *c, uint64_t now)
{
	if (c->state == CONN_LINGER) {
		char drop[LINGER_CHUNK];
		ssize_t n = recv(c->fd, drop, sizeof(drop), MSG_DONTWAIT);
		return n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR));
	}
	if (!c->in && !(c->in = malloc(HEAD_MAX_BYTES)))
		return false;
	ssize_t n = recv(c->fd, c->in + c->in_len, HEAD_MAX_BYTES - c->in_len, MSG_DONTWAIT);
	if (n == 0)
		return false; /* the client is gone or done: an unfinished request is never answered */
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	if (c->in_len == 0)
		c->since_ns = now; /* a request begins: its deadline starts */
	c->in_len += (size_t)n;
	if (judge(server, c, now))
		return conn_write(server, c, now);
	return true;
}

static void conn_event(struct cs_metrics_server *server, struct cs_metrics_conn *c, uint32_t events, uint64_t now)
{
	bool keep = true;
	if (events & (EPOLLERR | EPOLLHUP))
		keep = false;
	else if (c->state == CONN_WRITING)
		keep = conn_write(server, c, now);
	else
		keep = conn_read(server, c, now);
	if (!keep)
		conn_close(server, c);
}

/*
 * One pipelined request a connection a turn, each judged as if its bytes
 * had just come. True when some connection has another one waiting: the
 * loop's next turn is then at once.
 */
static bool answer_pipelined(struct cs_metrics_server *server, uint64_t now)
{
	bool more = false;
	for (size_t i = 0; i < server->conn_count;) {
		struct cs_metrics_conn *c = server->conns[i];
		bool keep = true;
		if (c->pipelined && c->state == CONN_READING) {
			c->since_ns = now; /* the request's deadline starts now it is the connection's turn */
			if (judge(server, c, now))
				keep = conn_write(server, c, now);
		}
		if (!keep) {
			conn_close(server, c); /* the last slot moved into i: look at i again */
			continue;
		}
		more |= c->pipelined;
		i++;
	}
	return more;
}

/* How long c may stay in its state. */
static uint64_t deadline_ns(const struct cs_metrics_conn *c)
{
	switch (c->state) {
	case CONN_WRITING:
		return ANSWER_DEADLINE_NS;
	case CONN_LINGER:
		return LINGER_DEADLINE_NS;
	case CONN_READING:
		break;
	}
	return c->served && c->in_len == 0 ? IDLE_DEADLINE_NS : REQUEST_DEADLINE_NS;
}

/* Close what is past its deadline; a late request gets 408 first. */
static void expire(struct cs_metrics_server *server, uint64_t now)
{
	for (size_t i = 0; i < server->conn_count;) {
		struct cs_metrics_conn *c = server->conns[i];
		if (now <= c->since_ns || now - c->since_ns <= deadline_ns(c)) {
			i++;
			continue;
		}
		if (c->state == CONN_READING && c->in_len) {
			server->rejected++;
			queue_answer(c, "408 Request Timeout", "text/plain", strdup("request too slow\n"), 17, false, false);
			c->in_len = 0;
			conn_set_state(server, c, CONN_WRITING, now);
			if (conn_write(server, c, now)) {
				i++;
				continue;
			}
		} else {
			server->timed_out++;
		}
		conn_close(server, c); /* the last slot moved into i: look at i again */
	}
}

/* The connection to let go at the cap: the oldest idle one, else the oldest lingering, else the oldest. */
static struct cs_metrics_conn *victim(const struct cs_metrics_server *server)
{
	struct cs_metrics_conn *best = NULL;
	int best_rank = 3;
	for (size_t i = 0; i < server->conn_count; i++) {
		struct cs_metrics_conn *c = server->conns[i];
		int rank = c->state == CONN_READING && c->in_len == 0 ? 0 : c->state == CONN_LINGER ? 1 : 2;
		if (rank < best_rank || (rank == best_rank && c->since_ns < best->since_ns)) {
			best = c;
			best_rank = rank;
		}
	}
	return best;
}

static void add_conn(struct cs_metrics_server *server, int fd, uint64_t now)
{
	struct cs_metrics_conn *c = calloc(1, sizeof(*c));
	struct epoll_event ev = { .events = state_events(CONN_READING), .data.ptr = c };
	if (!c || epoll_ctl(server->epoll_fd, EPOLL_CTL_ADD, fd, &ev)) {
		free(c);
		close(fd);
		return;
	}
	c->fd = fd;
	c->state = CONN_READING;
	c->since_ns = now;
	c->slot = server->conn_count++;
	server->conns[c->slot] = c;
}

/* Take the waiting connections (a bounded number a turn), making room at the cap. */
static void accept_conns(struct cs_metrics_server *server, uint64_t now)
{
	for (int taken = 0; taken < EVENTS_PER_WAIT; taken++) {
		if (server->conn_count == server->conns_max) {
			server->evicted++;
			conn_close(server, victim(server));
		}
		int fd = accept4(server->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			add_conn(server, fd, now);
			continue;
		}
		if ((errno == EMFILE || errno == ENFILE) && server->conn_count) {
			server->evicted++; /* out of descriptors below our cap: make room the same way */
			conn_close(server, victim(server));
			continue;
		}
		if (errno == EMFILE || errno == ENFILE) {
			/* Nothing of ours to free: stop asking (the socket stays readable) for a while. */
			epoll_ctl(server->epoll_fd, EPOLL_CTL_DEL, server->listen_fd, NULL);
			server->accept_paused_until_ns = now + ACCEPT_PAUSE_NS;
		}
		return;
	}
}

static void resume_accepting(struct cs_metrics_server *server, uint64_t now)
{
	if (!server->accept_paused_until_ns || now < server->accept_paused_until_ns)
		return;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	epoll_ctl(server->epoll_fd, EPOLL_CTL_ADD, server->listen_fd, &ev);
	server->accept_paused_until_ns = 0;
}

static void *serve_loop(void *arg)
{
	struct cs_metrics_server *server = arg;
	struct epoll_event events[EVENTS_PER_WAIT];
	uint64_t next_expire_ns = 0;
	bool pipelined = false;
	while (!server->stop) {
		int n = epoll_wait(server->epoll_fd, events, EVENTS_PER_WAIT, pipelined ? 0 : LOOP_WAKE_MS);
		uint64_t now = cs_monotonic_ns();
		bool listener = false;
		/* Connections first, the listener last: taking a connection may close another (at the cap). */
		for (int i = 0; i < n; i++) {
			if (events[i].data.ptr)
				conn_event(server, events[i].data.ptr, events[i].events, now);
			else
				listener = true;
		}
		pipelined = answer_pipelined(server, now);
		if (listener)
			accept_conns(server, now);
		if (now >= next_expire_ns) {
			expire(server, now);
			resume_accepting(server, now);
			next_expire_ns = now + LOOP_WAKE_MS * NS_PER_MS;
		}
	}
	while (server->conn_count)
		conn_close(server, server->conns[0]);
	return NULL;
}

/*
 * Connections held at once: CONNS_MAX, or fewer when RLIMIT_NOFILE leaves
 * less (its soft limit raised to the hard one first: systemd's default
 * soft limit, 1024, would hold only what the daemon's own files leave).
 */
static size_t conns_max(void)
{
	struct rlimit limit;
	if (getrlimit(RLIMIT_NOFILE, &limit))
		return CONNS_MAX / 4;
	if (limit.rlim_cur < limit.rlim_max) {
		limit.rlim_cur = limit.rlim_max;
		setrlimit(RLIMIT_NOFILE, &limit);
		getrlimit(RLIMIT_NOFILE, &limit);
	}
	if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= CONNS_MAX + 2 * FDS_KEPT)
		return CONNS_MAX;
	return limit.rlim_cur > 2 * FDS_KEPT + 16 ? (size_t)(limit.rlim_cur - 2 * FDS_KEPT) : 16;
}

static int listen_on(const char *address, char *errmsg, size_t errlen)
{
	struct sockaddr_storage addr;
	unsigned int addr_len;
	if (cs_parse_listen_address(address, &addr, &addr_len)) {
		snprintf(errmsg, errlen, "--metrics expects ADDR:PORT, [ADDR6]:PORT or PORT, not '%s'", address);
		return -EINVAL;
	}
	int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	/* A full backlog: connections arriving in a burst wait for the loop, not for a retransmit. */
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&addr, addr_len) || listen(fd, SOMAXCONN)) {
		int err = errno;
		snprintf(errmsg, errlen, "cannot serve metrics on %s: %s", address, strerror(err));
		if (fd >= 0)
			close(fd);
		return -err;
	}
	return fd;
}

int cs_metrics_server_start(struct cs_metrics_server *server, const char *address,
			    pthread_mutex_t *engine_lock, const struct cs_engine *engine,
			    const struct cs_report_meta *meta, const char *target,
			    char *errmsg, size_t errlen)
{
	memset(server, 0, sizeof(*server));
	server->listen_fd = server->epoll_fd = -1;
	int fd = listen_on(address, errmsg, errlen);
	if (fd < 0)
		return fd;
	server->listen_fd = fd;
	server->conns_max = conns_max();
	server->conns = calloc(server->conns_max, sizeof(struct cs_metrics_conn *));
	server->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	if (!server->conns || server->epoll_fd < 0 || epoll_ctl(server->epoll_fd, EPOLL_CTL_ADD, fd, &ev)) {
		int err = server->conns ? errno : ENOMEM;
		snprintf(errmsg, errlen, "cannot serve metrics: %s", strerror(err));
		cs_metrics_server_stop(server);
		return -err;
	}
	server->engine_lock = engine_lock;
	server->engine = engine;
	server->meta = meta;
	server->target = target;
	int err = pthread_create(&server->thread, NULL, serve_loop, server);
	if (err) {
		snprintf(errmsg, errlen, "cannot start the metrics thread: %s", strerror(err));
		cs_metrics_server_stop(server);
		return -err;
	}
	/* Named, so that top, ps and the tests find the thread whose waits for a CPU delay a scrape. */
	pthread_setname_np(server->thread, "cs-metrics");
	server->running = true;
	return 0;
}

void cs_metrics_server_stop(struct cs_metrics_server *server)
{
	if (server->running) {
		server->stop = 1;
		pthread_join(server->thread, NULL);
		server->running = false;
	}
	if (server->epoll_fd >= 0)
		close(server->epoll_fd);
	if (server->listen_fd >= 0)
		close(server->listen_fd);
	server->epoll_fd = server->listen_fd = -1;
	free(server->conns);
	server->conns = NULL;
}
