// SPDX-License-Identifier: BSD-2-Clause
#include "jvm.h"
#include "units.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* How long a JVM gets to start its attach listener, and to answer a command. */
#define LISTENER_WAIT_MS 5000
#define ANSWER_TIMEOUT_S 5
/* A Thread.print of thousands of threads stays well below this. */
#define OUTPUT_MAX_BYTES (32u << 20)

bool cs_jvm_is_java(pid_t pid)
{
	char path[64], exe[4096];
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	const char *base = strrchr(exe, '/');
	return !strcmp(base ? base + 1 : exe, "java");
}

/*
 * A "Key:\t..." line of /proc/PID[/task/TID]/status, its text after the
 * tab, or false when there is none.
 */
static bool status_field(const char *path, const char *key, char *out, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	char line[512];
	size_t key_len = strlen(key);
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, key_len) != 0 || line[key_len] != ':')
			continue;
		const char *value = line + key_len + 1;
		value += strspn(value, " \t");
		snprintf(out, len, "%s", value);
		out[strcspn(out, "\n")] = '\0';
		found = true;
	}
	fclose(f);
	return found;
}

/* The last NSpid field: the id in the innermost pid namespace, the JVM's own. */
static pid_t ns_id(const char *status_path, pid_t fallback)
{
	char value[256];
	if (!status_field(status_path, "NSpid", value, sizeof(value)))
		return fallback;
	const char *last = strrchr(value, '\t');
	long id = strtol(last ? last + 1 : value, NULL, 10);
	return id > 0 ? (pid_t)id : fallback;
}

/*
 * A JVM started with -Xrs does not catch SIGQUIT (it starts its attach
 * listener at once instead, unless the attach mechanism is off): the
 * signal would end it. Ask the kernel before sending.
 */
static bool catches_sigquit(pid_t pid)
{
	char path[64], value[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!status_field(path, "SigCgt", value, sizeof(value)))
		return false;
	unsigned long long caught = strtoull(value, NULL, 16);
	return caught & (1ull << (SIGQUIT - 1));
}

static bool is_socket(const char *path)
{
	struct stat st;
	return !stat(path, &st) && S_ISSOCK(st.st_mode);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / MS_PER_SEC, .tv_nsec = (ms % MS_PER_SEC) * (long)NS_PER_MS };
	nanosleep(&ts, NULL);
}

/*
 * The attach listener's socket, /tmp/.java_pidNSPID in the JVM's own root.
 * If it is not there yet: a trigger file .attach_pidNSPID in the JVM's
 * working directory (or its /tmp), then SIGQUIT, which the JVM takes as
 * "start the listener" when the trigger is there, as jcmd does.
 */
static int start_listener(pid_t pid, pid_t nspid, char *sock, size_t sock_len, char *why, size_t why_len)
{
	snprintf(sock, sock_len, "/proc/%d/root/tmp/.java_pid%d", (int)pid, (int)nspid);
	if (is_socket(sock))
		return 0;
	if (!catches_sigquit(pid)) {
		snprintf(why, why_len, "it has no attach listener and does not catch SIGQUIT, which would end it "
			 "(-XX:+DisableAttachMechanism?)");
		return -1;
	}
	char trigger[128];
	snprintf(trigger, sizeof(trigger), "/proc/%d/cwd/.attach_pid%d", (int)pid, (int)nspid);
	int fd = open(trigger, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		snprintf(trigger, sizeof(trigger), "/proc/%d/root/tmp/.attach_pid%d", (int)pid, (int)nspid);
		fd = open(trigger, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	}
	if (fd < 0) {
		snprintf(why, why_len, "cannot create its attach trigger file: %s", strerror(errno));
		return -1;
	}
	close(fd);
	int err = 0;
	if (kill(pid, SIGQUIT)) {
		snprintf(why, why_len, "cannot signal it: %s", strerror(errno));
		err = -1;
	}
	for (long waited_ms = 0; !err && !is_socket(sock); waited_ms += 20) {
		if (waited_ms >= LISTENER_WAIT_MS) {
			snprintf(why, why_len, "its attach listener did not start within %d s (-XX:+DisableAttachMechanism?)",
				 LISTENER_WAIT_MS / 1000);
			err = -1;
		}
		sleep_ms(20);
	}
	unlink(trigger);
	return err;
}

/* All the socket gives until the JVM closes it, NUL-terminated; NULL on failure. */
static char *read_all(int fd, char *why, size_t why_len)
{
	size_t used = 0, cap = 64u << 10;
	char *buf = malloc(cap);
	while (buf) {
		if (cap - used < 4096) {
			char *grown = cap < OUTPUT_MAX_BYTES ? realloc(buf, cap * 2) : NULL;
			if (!grown) {
				snprintf(why, why_len, "its answer is too large");
				break;
			}
			buf = grown;
			cap *= 2;
		}
		ssize_t n = read(fd, buf + used, cap - used - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(why, why_len, "reading its answer failed: %s", strerror(errno));
			break;
		}
		if (n == 0) {
			buf[used] = '\0';
			return buf;
		}
		used += (size_t)n;
	}
	free(buf);
	return NULL;
}

/* One command on a fresh connection: protocol "1", then "jcmd" and its three arguments. */
static char *ask(const char *sock, const char *cmd, char *why, size_t why_len)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	if (strlen(sock) >= sizeof(addr.sun_path)) {
		snprintf(why, why_len, "its attach socket path is too long");
		return NULL;
	}
	strcpy(addr.sun_path, sock);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(why, why_len, "socket: %s", strerror(errno));
		return NULL;
	}
	struct timeval timeout = { .tv_sec = ANSWER_TIMEOUT_S };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
	char request[256];
	int len = snprintf(request, sizeof(request), "1%cjcmd%c%s%c%c%c", 0, 0, cmd, 0, 0, 0);
	char *answer = NULL;
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)))
		snprintf(why, why_len, "cannot connect to its attach listener: %s", strerror(errno));
	else if (write(fd, request, (size_t)len) != len)
		snprintf(why, why_len, "cannot send it the command: %s", strerror(errno));
	else
		answer = read_all(fd, why, why_len);
	close(fd);
	return answer;
}

char *cs_jvm_command(pid_t pid, const char *cmd, char *why, size_t why_len)
{
	char status[64], sock[128];
	snprintf(status, sizeof(status), "/proc/%d/status", (int)pid);
	pid_t nspid = ns_id(status, pid);
	if (start_listener(pid, nspid, sock, sizeof(sock), why, why_len))
		return NULL;
	char *answer = ask(sock, cmd, why, why_len);
	if (!answer)
		return NULL;
	/* The first line is the result: 0, or an error code with the reason after it. */
	char *body = strchr(answer, '\n');
	if (strtol(answer, NULL, 10) != 0 || !body) {
		const char *reason = body ? body + 1 : answer;
		snprintf(why, why_len, "it refused %s: %.*s", cmd, (int)strcspn(reason, "\n"), reason);
		free(answer);
		return NULL;
	}
	memmove(answer, body + 1, strlen(body + 1) + 1);
	return answer;
}

/* Host tid of the JVM's nid: the same unless the JVM has a pid namespace of its own. */
static uint32_t host_tid(pid_t pid, long nid)
{
	char path[64], status[128];
	snprintf(status, sizeof(status), "/proc/%d/status", (int)pid);
	if (ns_id(status, pid) == pid)
		return (uint32_t)nid;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *dir = opendir(path);
	uint32_t found = 0;
	for (struct dirent *d; dir && !found && (d = readdir(dir));) {
		long tid = strtol(d->d_name, NULL, 10);
		if (tid <= 0)
			continue;
		snprintf(status, sizeof(status), "/proc/%d/task/%ld/status", (int)pid, tid);
		if (ns_id(status, (pid_t)tid) == nid)
			found = (uint32_t)tid;
	}
	if (dir)
		closedir(dir);
	return found;
}

/*
 * Thread.print's header line of each thread:
 *   "http-nio-8080-exec-1" #25 daemon prio=5 os_prio=0 ... tid=0x7f.. nid=0x1f2e waiting ...
 * The name is quoted (it may hold quotes itself: it ends at the last quote
 * before the fields); nid is the kernel's thread id, in hex up to JDK 18.
 */
size_t cs_jvm_parse_threads(const char *output, pid_t pid,
			    void (*fn)(void *ctx, uint32_t tid, const char *name), void *ctx)
{
	size_t found = 0;
	for (const char *line = output; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		size_t len = strcspn(line, "\n");
		if (line[0] != '"')
			continue;
		const char *nid = NULL;
		for (const char *p = line; p + 5 <= line + len && !nid; p++)
			if (!strncmp(p, " nid=", 5))
				nid = p;
		const char *end = nid;
		while (end && end > line && *end != '"')
			end--;
		if (!nid || end <= line)
			continue;
		char name[CS_RUNTIME_NAME_LEN];
		snprintf(name, sizeof(name), "%.*s", (int)(end - line - 1), line + 1);
		long id = strtol(nid + 5, NULL, 0);
		uint32_t tid = id > 0 ? host_tid(pid, id) : 0;
		if (!tid)
			continue;
		fn(ctx, tid, name);
		found++;
	}
	return found;
}

struct emit_ctx {
	cs_jvm_record_fn on_record;
	void *ctx;
	uint32_t tgid;
	uint64_t now_ns;
};

static void emit_name(void *ctx_ptr, uint32_t tid, const char *name)
{
	struct emit_ctx *e = ctx_ptr;
	struct cs_ev_thread_name ev = {
		.hdr = { .ts_ns = e->now_ns, .type = CS_EV_THREAD_NAME, .size = sizeof(ev) },
		.tid = tid,
		.tgid = e->tgid,
	};
	snprintf(ev.name, sizeof(ev.name), "%s", name);
	e->on_record(e->ctx, &ev, sizeof(ev));
}

size_t cs_jvm_collect(const pid_t *pids, size_t count, bool quiet, cs_jvm_record_fn on_record, void *ctx,
		      uint64_t now_ns)
{
	size_t named = 0;
	for (size_t i = 0; i < count; i++) {
		if (!cs_jvm_is_java(pids[i]))
			continue;
		char why[256];
		char *threads = cs_jvm_command(pids[i], "Thread.print", why, sizeof(why));
		struct emit_ctx e = { .on_record = on_record, .ctx = ctx, .tgid = (uint32_t)pids[i], .now_ns = now_ns };
		bool answered = threads != NULL;
		size_t found = answered ? cs_jvm_parse_threads(threads, pids[i], emit_name, &e) : 0;
		free(threads);
		named += found;
		if (!quiet && answered)
			fprintf(stderr, "connscope: java pid %d: %zu thread names from the JVM\n",
				(int)pids[i], found);
		else if (!quiet)
			fprintf(stderr, "connscope: java pid %d did not give its thread names (%s): threads keep "
				"their kernel names\n", (int)pids[i], why);
	}
	return named;
}

/* Where the JVM writes its map: its own /tmp, named by its own pid. */
static void perfmap_path(pid_t pid, char *path, size_t len)
{
	char status[64];
	snprintf(status, sizeof(status), "/proc/%d/status", (int)pid);
	snprintf(path, len, "/proc/%d/root/tmp/perf-%d.map", (int)pid, (int)ns_id(status, pid));
}

void cs_jvm_write_perfmaps(const uint32_t *tgids, size_t count, bool quiet, struct cs_jvm_perfmaps *maps)
{
	for (size_t i = 0; i < count; i++) {
		pid_t pid = (pid_t)tgids[i];
		if (!cs_jvm_is_java(pid))
			continue;
		char path[96], why[256];
		perfmap_path(pid, path, sizeof(path));
		bool existed = !access(path, F_OK);
		char *done = cs_jvm_command(pid, "Compiler.perfmap", why, sizeof(why));
		if (!done && !quiet)
			fprintf(stderr, "connscope: java pid %d did not write its perf map (%s): its compiled Java "
				"frames stay unnamed\n", (int)pid, why);
		if (done && !existed && maps->count < sizeof(maps->pids) / sizeof(maps->pids[0]))
			maps->pids[maps->count++] = pid;
		free(done);
	}
}

void cs_jvm_remove_perfmaps(const struct cs_jvm_perfmaps *maps)
{
	for (size_t i = 0; i < maps->count; i++) {
		char path[96];
		perfmap_path(maps->pids[i], path, sizeof(path));
		unlink(path);
	}
}
