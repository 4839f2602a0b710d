// SPDX-License-Identifier: BSD-2-Clause
#include "stats_holder.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define HOLDER_FD 3              /* the child's end, moved here; every other descriptor closed */
#define HOLDER_REPLY_TIMEOUT_S 2 /* a holder that does not answer by then is stopped */
#define CAP_SYS_ADMIN_BIT 21

/* Nothing but CAP_SYS_ADMIN, and no way to gain more. */
static void child_keep_admin_only(void)
{
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct caps[2] = {};
	for (unsigned long cap = 0; cap < 64; cap++)
		if (cap != CAP_SYS_ADMIN_BIT)
			prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
	caps[0].permitted = caps[0].effective = 1u << CAP_SYS_ADMIN_BIT;
	syscall(SYS_capset, &header, caps);
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

/*
 * The child: no descriptor of the parent's is kept (a BPF link held here
 * would keep a probe attached that the parent detached), its signals are
 * ignored (the parent's end closing is what stops it), and it dies with
 * the parent.
 */
static void child_setup(int sock, pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	prctl(PR_SET_NAME, "connscope-stats");
	/* The socket to its place first: a parent started with its stdio closed made it 0, 1 or 2. */
	if (sock != HOLDER_FD && dup2(sock, HOLDER_FD) < 0)
		_exit(1);
	int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < HOLDER_FD; fd++)
		if (null_fd >= 0)
			dup2(null_fd, fd);
	syscall(SYS_close_range, HOLDER_FD + 1, ~0u, 0);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	child_keep_admin_only();
}

/* bpf(BPF_ENABLE_STATS): a descriptor that holds the run-time counting on, or -1 (errno). */
static int enable_stats(void)
{
	union bpf_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.enable_stats.type = BPF_STATS_RUN_TIME;
	return (int)syscall(SYS_bpf, BPF_ENABLE_STATS, &attr, sizeof(attr));
}

/* Each request is one byte, '1' (on) or '0' (off); each answer an errno (0: done). */
static void child_serve(void)
{
	int stats_fd = enable_stats();
	int32_t answer = stats_fd >= 0 ? 0 : errno;
	for (;;) {
		if (send(HOLDER_FD, &answer, sizeof(answer), 0) != (ssize_t)sizeof(answer))
			_exit(0);
		char request;
		ssize_t got;
		do
			got = recv(HOLDER_FD, &request, 1, 0);
		while (got < 0 && errno == EINTR);
		if (got <= 0)
			_exit(0); /* the parent's end closed: the exit lets the counting go */
		answer = 0;
		if (request == '1' && stats_fd < 0) {
			stats_fd = enable_stats();
			answer = stats_fd >= 0 ? 0 : errno;
		} else if (request == '0' && stats_fd >= 0) {
			close(stats_fd);
			stats_fd = -1;
		}
	}
}

static int read_answer(struct cs_stats_holder *holder)
{
	int32_t answer;
	ssize_t got;
	do
		got = recv(holder->sock, &answer, sizeof(answer), 0);
	while (got < 0 && errno == EINTR);
	if (got != (ssize_t)sizeof(answer))
		return got < 0 ? -errno : -EPIPE;
	return -answer;
}

int cs_stats_holder_start(struct cs_stats_holder *holder)
{
	int pair[2];
	holder->sock = -1;
	holder->pid = 0;
	holder->on = false;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair))
		return -errno;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int err = -errno;
		close(pair[0]);
		close(pair[1]);
		return err;
	}
	if (pid == 0) {
		child_setup(pair[1], parent);
		child_serve();
	}
	close(pair[1]);
	holder->sock = pair[0];
	holder->pid = pid;
	struct timeval timeout = { .tv_sec = HOLDER_REPLY_TIMEOUT_S };
	setsockopt(holder->sock, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
	int err = read_answer(holder);
	if (err) {
		cs_stats_holder_stop(holder);
		return err;
	}
	holder->on = true;
	return 0;
}

int cs_stats_holder_set(struct cs_stats_holder *holder, bool on)
{
	if (holder->sock < 0)
		return -EBADF;
	if (holder->on == on)
		return 0;
	char request = on ? '1' : '0';
	int err = send(holder->sock, &request, 1, MSG_NOSIGNAL) == 1 ? read_answer(holder) : -errno;
	if (err) {
		cs_stats_holder_stop(holder);
		return err;
	}
	holder->on = on;
	return 0;
}

void cs_stats_holder_stop(struct cs_stats_holder *holder)
{
	if (holder->sock >= 0)
		close(holder->sock);
	holder->sock = -1;
	holder->on = false;
	if (holder->pid > 0) {
		/* Its exit is what lets the counting go: done once this returns. */
		kill(holder->pid, SIGKILL);
		while (waitpid(holder->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	holder->pid = 0;
}

/* splitmix64's finaliser: a well-mixed 64-bit hash of x. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * Is span number span (0: from the start to the first reading) one the
 * counting is held on in? One in every block of CS_BPF_STATS_SAMPLE_EVERY,
 * at an offset drawn from a hash of the block: the share is exact, the
 * longest gap under two blocks, and the held spans fall on every phase of
 * a tracing period alike (a fixed stride would keep landing on the same
 * phase: always a window, or never one). The first span is held too, for
 * a figure from the first reading on.
 */
bool cs_bpf_stats_span_sampled(uint64_t span)
{
	uint64_t block = span / CS_BPF_STATS_SAMPLE_EVERY;
	return span == 0 || span % CS_BPF_STATS_SAMPLE_EVERY == mix64(block) % CS_BPF_STATS_SAMPLE_EVERY;
}
