// SPDX-License-Identifier: BSD-2-Clause
/*
 * csidle: many connections to a loopback HTTP server, for the scale
 * benchmark.
 *
 *   csidle --port P --connections N [--sources K] [--hold SEC]
 *       open N keep-alive connections, one GET / on each, then hold them
 *       idle until SIGINT/SIGTERM or SEC seconds. Prints "csidle: open N"
 *       once all are open.
 *   csidle --port P --churn SEC [--parallel C] [--threads T] [--sources K]
 *       for SEC seconds keep C connections in flight per thread, each one
 *       connect, GET / with "Connection: close", read to EOF, close; then
 *       print "csidle: churn CONNS in SECS s = RATE/s, errors E".
 *
 * One 4-tuple space per source address: connections are spread over
 * 127.0.0.2 .. 127.0.0.(K+1) (IP_BIND_ADDRESS_NO_PORT: the port is picked
 * at connect time), so N may exceed the ~28k ephemeral ports of one
 * address. RLIMIT_NOFILE is raised to fit N where the hard limit allows;
 * past it, run several csidle processes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

#define RESPONSE_MAX 2048

enum conn_phase {
	CONNECTING,
	READING,
	IDLE
};

struct conn {
	int fd;
	enum conn_phase phase;
	size_t have;
	char buf[RESPONSE_MAX];
};

struct options {
	uint16_t port;
	long connections;
	int sources;
	double hold_s;
	double churn_s;
	int parallel;
	int threads;
};

struct churn_result {
	long done;
	long errors;
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char keepalive_request[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
static const char close_request[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";

/* A non-blocking connect from 127.0.0.(2 + source) to 127.0.0.1:port. */
static int start_connect(const struct options *opts, long index)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	struct sockaddr_in src = { .sin_family = AF_INET };
	src.sin_addr.s_addr = htonl(0x7f000002u + (uint32_t)(index % opts->sources));
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(opts->port) };
	dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) ||
	    (connect(fd, (struct sockaddr *)&dst, sizeof(dst)) && errno != EINPROGRESS)) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Whole response in buf: headers, then Content-Length bytes. */
static bool response_complete(const struct conn *c)
{
	const char *end = memmem(c->buf, c->have, "\r\n\r\n", 4);
	if (!end)
		return false;
	size_t header = (size_t)(end - c->buf) + 4;
	long length = 0;
	for (const char *p = c->buf; p < end; p++) {
		if ((p == c->buf || p[-1] == '\n') && !strncasecmp(p, "Content-Length:", 15)) {
			length = strtol(p + 15, NULL, 10);
			break;
		}
	}
	return c->have >= header + (size_t)length;
}

/* Readable or writable: move the connection on. 1 done, 0 not yet, <0 error. */
static int advance(struct conn *c, bool until_eof)
{
	if (c->phase == CONNECTING) {
		int err = 0;
		socklen_t len = sizeof(err);
		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err)
			return -err;
		const char *req = until_eof ? close_request : keepalive_request;
		size_t req_len = until_eof ? sizeof(close_request) - 1 : sizeof(keepalive_request) - 1;
		/* A few dozen bytes into an empty send buffer: one write. */
		if (write(c->fd, req, req_len) != (ssize_t)req_len)
			return -EIO;
		c->phase = READING;
		c->have = 0;
		return 0;
	}
	for (;;) {
		char *into = c->buf + c->have;
		size_t room = sizeof(c->buf) - c->have;
		if (room == 0) { /* only until EOF: keep the tail */
			c->have = 0;
			into = c->buf;
			room = sizeof(c->buf);
		}
		ssize_t n = read(c->fd, into, room);
		if (n > 0) {
			c->have += (size_t)n;
			if (!until_eof && response_complete(c))
				return 1;
			continue;
		}
		if (n == 0)
			return until_eof ? 1 : -ECONNRESET;
		return errno == EAGAIN ? 0 : -errno;
	}
}

/*
 * Raise RLIMIT_NOFILE to fit `want` descriptors, as far as the hard limit
 * allows (raising that needs CAP_SYS_RESOURCE). Returns the limit in force.
 */
static long raise_nofile(long want)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -1;
	if (rl.rlim_cur >= (rlim_t)want)
		return (long)rl.rlim_cur;
	rl.rlim_cur = (rlim_t)want;
	if (rl.rlim_max < rl.rlim_cur)
		rl.rlim_max = rl.rlim_cur;
	if (setrlimit(RLIMIT_NOFILE, &rl)) {
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	getrlimit(RLIMIT_NOFILE, &rl);
	return (long)rl.rlim_cur;
}

/* Open opts->connections keep-alive connections, 256 handshakes at a time. */
static int open_idle(const struct options *opts)
{
	long n = opts->connections, started = 0, open = 0, failed = 0, in_flight = 0;
	if (n <= 0)
		return 2;
	struct conn *conns = calloc((size_t)n, sizeof(*conns));
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (!conns || ep < 0) {
		fprintf(stderr, "csidle: out of memory\n");
		free(conns);
		if (ep >= 0)
			close(ep);
		return 1;
	}
	struct epoll_event events[256];
	double deadline = now_s() + 120;
	while (open + failed < n && !stop_requested && now_s() < deadline) {
		while (started < n && in_flight < opts->parallel) {
			int fd = start_connect(opts, started);
			if (fd < 0) {
				if (failed++ < 3)
					fprintf(stderr, "csidle: connect %ld: %s\n", started, strerror(-fd));
				started++;
				continue;
			}
			conns[started] = (struct conn){ .fd = fd, .phase = CONNECTING };
			struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.ptr = &conns[started] };
			epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
			started++;
			in_flight++;
		}
		int ready = epoll_wait(ep, events, 256, 100);
		for (int i = 0; i < ready; i++) {
			struct conn *c = events[i].data.ptr;
			int r = advance(c, false);
			if (c->phase == READING && r == 0) {
				struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
				epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
			}
			if (r == 0)
				continue;
			in_flight--;
			epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
			if (r > 0) {
				c->phase = IDLE;
				open++;
			} else {
				if (failed++ < 3)
					fprintf(stderr, "csidle: connection failed: %s\n", strerror(-r));
				close(c->fd);
				c->fd = -1;
			}
		}
	}
	printf("csidle: open %ld failed %ld\n", open, failed);
	fflush(stdout);
	double until = opts->hold_s > 0 ? now_s() + opts->hold_s : 0;
	while (!stop_requested && (!until || now_s() < until))
		usleep(50 * 1000);
	/* Exit closes them all at once; the server sees a burst of FINs. */
	free(conns);
	close(ep);
	return open == n ? 0 : 1;
}

static void *churn_thread(void *arg)
{
	const struct options *opts = ((void **)arg)[0];
	struct churn_result *result = ((void **)arg)[1];
	long index = (long)(intptr_t)((void **)arg)[2];
	struct conn *conns = calloc((size_t)opts->parallel, sizeof(*conns));
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event events[256];
	if (!conns || ep < 0) {
		free(conns);
		if (ep >= 0)
			close(ep);
		return NULL;
	}
	for (int i = 0; i < opts->parallel; i++)
		conns[i].fd = -1;
	double end = now_s() + opts->churn_s;
	int in_flight = 0;
	for (;;) {
		bool ending = stop_requested || now_s() >= end;
		for (int i = 0; !ending && i < opts->parallel; i++) {
			if (conns[i].fd >= 0)
				continue;
			int fd = start_connect(opts, index++);
			if (fd < 0) {
				result->errors++;
				continue;
			}
			conns[i] = (struct conn){ .fd = fd, .phase = CONNECTING };
			struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.ptr = &conns[i] };
			epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
			in_flight++;
		}
		if (ending && in_flight == 0)
			break;
		int ready = epoll_wait(ep, events, 256, 100);
		if (ending && ready == 0)
			break; /* stragglers after the end are not counted */
		for (int i = 0; i < ready; i++) {
			struct conn *c = events[i].data.ptr;
			int r = advance(c, true);
			if (c->phase == READING && r == 0) {
				struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
				epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
			}
			if (r == 0)
				continue;
			if (r > 0)
				result->done++;
			else
				result->errors++;
			close(c->fd);
			c->fd = -1;
			in_flight--;
		}
	}
	for (int i = 0; i < opts->parallel; i++)
		if (conns[i].fd >= 0)
			close(conns[i].fd);
	free(conns);
	close(ep);
	return NULL;
}

static int churn(const struct options *opts)
{
	pthread_t threads[64];
	struct churn_result results[64] = {};
	void *args[64][3];
	double start = now_s();
	for (int t = 0; t < opts->threads; t++) {
		args[t][0] = (void *)opts;
		args[t][1] = &results[t];
		args[t][2] = (void *)(intptr_t)((long)t * 1000003);
		pthread_create(&threads[t], NULL, churn_thread, args[t]);
	}
	long done = 0, errors = 0;
	for (int t = 0; t < opts->threads; t++) {
		pthread_join(threads[t], NULL);
		done += results[t].done;
		errors += results[t].errors;
	}
	double took = now_s() - start;
	printf("csidle: churn %ld in %.3f s = %.0f/s, errors %ld\n", done, took, (double)done / took, errors);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: csidle --port P --connections N [--sources K] [--hold SEC] [--parallel C]\n"
		"       csidle --port P --churn SEC [--parallel C] [--threads T] [--sources K]\n");
}

int main(int argc, char **argv)
{
	struct options opts = { .sources = 8, .parallel = 256, .threads = 1 };
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
		if (!value) {
			usage();
			return 2;
		}
		if (!strcmp(arg, "--port"))
			opts.port = (uint16_t)atoi(value);
		else if (!strcmp(arg, "--connections"))
			opts.connections = atol(value);
		else if (!strcmp(arg, "--sources"))
			opts.sources = atoi(value);
		else if (!strcmp(arg, "--hold"))
			opts.hold_s = atof(value);
		else if (!strcmp(arg, "--churn"))
			opts.churn_s = atof(value);
		else if (!strcmp(arg, "--parallel"))
			opts.parallel = atoi(value);
		else if (!strcmp(arg, "--threads"))
			opts.threads = atoi(value);
		else {
			usage();
			return 2;
		}
		i++;
	}
	if (!opts.port || opts.sources < 1 || opts.sources > 250 || opts.parallel < 1 ||
	    opts.threads < 1 || opts.threads > 64 || (opts.connections <= 0) == (opts.churn_s <= 0)) {
		usage();
		return 2;
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	long want = opts.connections + (long)opts.parallel * opts.threads + 64;
	long limit = raise_nofile(want);
	if (limit < want) {
		fprintf(stderr, "csidle: RLIMIT_NOFILE is %ld, %ld needed (the hard limit needs "
				"CAP_SYS_RESOURCE to raise): run several csidle processes\n",
			limit, want);
		return 1;
	}
	return opts.churn_s > 0 ? churn(&opts) : open_idle(&opts);
}
