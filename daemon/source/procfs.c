// SPDX-License-Identifier: BSD-2-Clause
#include "procfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define TCP_LISTEN_STATE 10
/* One recv of sock_diag's answers: many listeners a datagram. */
#define SOCK_DIAG_BUF_BYTES 32768

/* Ask sock_diag for every listening TCP socket of family, with its memory counters. */
static int send_dump_request(int fd, int family)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} request = {
		.nlh = {
			.nlmsg_len = sizeof(request),
			.nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		},
		.req = {
			.sdiag_family = (uint8_t)family,
			.sdiag_protocol = IPPROTO_TCP,
			.idiag_states = 1u << TCP_LISTEN_STATE,
			.idiag_ext = 1u << (INET_DIAG_SKMEMINFO - 1),
		},
	};
	return send(fd, &request, sizeof(request), 0) < 0 ? -errno : 0;
}

/* One sock_diag answer as a listener. */
static void read_listener(const struct nlmsghdr *nlh, struct cs_listen_socket *listener)
{
	const struct inet_diag_msg *msg = NLMSG_DATA(nlh);
	memset(listener, 0, sizeof(*listener));
	listener->inode = msg->idiag_inode;
	listener->port = ntohs(msg->id.idiag_sport);
	listener->family = msg->idiag_family;
	/* For a listener the queues are the accept queue and its limit. */
	listener->backlog = msg->idiag_rqueue;
	listener->backlog_limit = msg->idiag_wqueue;
	int attrs_len = (int)(nlh->nlmsg_len - NLMSG_LENGTH(sizeof(*msg)));
	for (const struct rtattr *attr = (const struct rtattr *)(msg + 1); RTA_OK(attr, attrs_len);
	     attr = RTA_NEXT(attr, attrs_len)) {
		if (attr->rta_type == INET_DIAG_SKMEMINFO &&
		    RTA_PAYLOAD(attr) >= (SK_MEMINFO_DROPS + 1) * sizeof(uint32_t)) {
			uint32_t meminfo[SK_MEMINFO_DROPS + 1];
			memcpy(meminfo, RTA_DATA(attr), sizeof(meminfo));
			listener->drops = meminfo[SK_MEMINFO_DROPS];
		}
	}
}

/* Where a dump's answers go, and how it ended. */
struct dump {
	struct cs_listen_socket *out;
	size_t max, *count;
	int err;
	bool done;
};

/* The messages of one datagram: listeners, then NLMSG_DONE or an error. */
static void read_answers(struct dump *dump, struct nlmsghdr *nlh, size_t len)
{
	for (; NLMSG_OK(nlh, len); nlh = NLMSG_NEXT(nlh, len)) {
		if (nlh->nlmsg_type == NLMSG_DONE) {
			dump->done = true;
			return;
		}
		if (nlh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *nl_err = NLMSG_DATA(nlh);
			dump->err = nl_err->error ? nl_err->error : -EIO;
			dump->done = true;
			return;
		}
		if (*dump->count >= dump->max) {
			dump->err = -ENOSPC; /* read on: the dump must be drained */
			continue;
		}
		read_listener(nlh, &dump->out[(*dump->count)++]);
	}
}

/*
 * Ask sock_diag for the listening TCP sockets of one address family, on
 * netlink socket nl_fd (-1: one of our own namespace, for this call).
 */
static int dump_listeners(int nl_fd, int family, struct cs_listen_socket *out, size_t max, size_t *count)
{
	int fd = nl_fd >= 0 ? nl_fd : socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	struct dump dump = { .out = out, .max = max, .count = count };
	dump.err = send_dump_request(fd, family);
	dump.done = dump.err != 0;
	char buf[SOCK_DIAG_BUF_BYTES] __attribute__((aligned(NLMSG_ALIGNTO)));
	while (!dump.done) {
		ssize_t len = recv(fd, buf, sizeof(buf), 0);
		if (len < 0 && errno == EINTR)
			continue;
		if (len < 0)
			dump.err = -errno;
		if (len <= 0)
			break;
		read_answers(&dump, (struct nlmsghdr *)buf, (size_t)len);
	}
	if (fd != nl_fd)
		close(fd);
	return dump.err;
}

int cs_list_listeners(struct cs_listen_socket *out, size_t max, size_t *count)
{
	return cs_list_listeners_on(-1, out, max, count);
}

int cs_list_listeners_on(int nl_fd, struct cs_listen_socket *out, size_t max, size_t *count)
{
	*count = 0;
	int err = dump_listeners(nl_fd, AF_INET, out, max, count);
	if (err)
		return err;
	return dump_listeners(nl_fd, AF_INET6, out, max, count);
}

int cs_proc_alive(pid_t pid)
{
	char path[64], state = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	/* Field 3 follows the command in parentheses, which may hold spaces. */
	char line[512];
	if (fgets(line, sizeof(line), f)) {
		char *close_paren = strrchr(line, ')');
		if (close_paren && close_paren[1] == ' ')
			state = close_paren[2];
	}
	fclose(f);
	return (state == 'Z' || state == 'X' || state == 0) ? -ESRCH : 0;
}

int cs_proc_tgid(pid_t pid, pid_t *tgid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	int err = -ENODATA;
	while (fgets(line, sizeof(line), f)) {
		int value;
		if (sscanf(line, "Tgid: %d", &value) == 1) {
			*tgid = (pid_t)value;
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

int cs_proc_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static const struct cs_listen_socket *find_inode(const struct cs_listen_socket *listeners,
						 size_t count, uint64_t inode)
{
	for (size_t i = 0; i < count; i++)
		if (listeners[i].inode == inode)
			return &listeners[i];
	return NULL;
}

/*
 * Calls visit(listener, ctx) for each listening socket among pid's open
 * files. Returns 0, or -errno when /proc/PID/fd cannot be read.
 */
static int for_each_listen_fd(pid_t pid, const struct cs_listen_socket *listeners, size_t count,
			      void (*visit)(const struct cs_listen_socket *, void *), void *ctx)
{
	char dir_path[64];
	snprintf(dir_path, sizeof(dir_path), "/proc/%d/fd", (int)pid);
	DIR *dir = opendir(dir_path);
	if (!dir)
		return -errno;
	struct dirent *entry;
	while ((entry = readdir(dir))) {
		if (entry->d_name[0] == '.')
			continue;
		char link[64];
		ssize_t len = readlinkat(dirfd(dir), entry->d_name, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		uint64_t inode;
		if (sscanf(link, "socket:[%" SCNu64 "]", &inode) != 1)
			continue;
		const struct cs_listen_socket *listener = find_inode(listeners, count, inode);
		if (listener)
			visit(listener, ctx);
	}
	closedir(dir);
	return 0;
}

struct port_set {
	uint16_t *ports;
	size_t max, count;
	bool overflow;
};

static void add_port(const struct cs_listen_socket *listener, void *ctx)
{
	struct port_set *set = ctx;
	for (size_t i = 0; i < set->count; i++)
		if (set->ports[i] == listener->port)
			return;
	if (set->count >= set->max) {
		set->overflow = true;
		return;
	}
	set->ports[set->count++] = listener->port;
}

int cs_proc_listen_ports(pid_t pid, const struct cs_listen_socket *listeners, size_t listener_count,
			 uint16_t *ports, size_t max, size_t *count)
{
	struct port_set set = { .ports = ports, .max = max };
	int err = for_each_listen_fd(pid, listeners, listener_count, add_port, &set);
	*count = set.count;
	if (err)
		return err;
	return set.overflow ? -ENOSPC : 0;
}

struct port_match {
	uint16_t port;
	bool found;
};

static void match_port(const struct cs_listen_socket *listener, void *ctx)
{
	struct port_match *match = ctx;
	if (listener->port == match->port)
		match->found = true;
}

int cs_pids_on_port(uint16_t port, const struct cs_listen_socket *listeners, size_t listener_count,
		    pid_t *pids, size_t max, size_t *count)
{
	*count = 0;
	DIR *proc = opendir("/proc");
	if (!proc)
		return -errno;
	struct dirent *entry;
	int err = 0;
	while ((entry = readdir(proc))) {
		char *end;
		long pid = strtol(entry->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		struct port_match match = { .port = port };
		/* Processes may vanish or deny us: skip them. */
		if (for_each_listen_fd((pid_t)pid, listeners, listener_count, match_port, &match) ||
		    !match.found)
			continue;
		if (*count >= max) {
			err = -ENOSPC;
			break;
		}
		pids[(*count)++] = (pid_t)pid;
	}
	closedir(proc);
	return err;
}

/* A pid set kept sorted and unique (sets are small: binary search is plenty). */
struct pid_set {
	pid_t *pids;
	size_t max, count;
	bool overflow;
};

static void pid_set_add(struct pid_set *set, pid_t pid)
{
	size_t lo = 0, hi = set->count;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (set->pids[mid] == pid)
			return;
		if (set->pids[mid] < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (set->count >= set->max) {
		set->overflow = true;
		return;
	}
	memmove(set->pids + lo + 1, set->pids + lo, (set->count - lo) * sizeof(pid_t));
	set->pids[lo] = pid;
	set->count++;
}

/* Read a small file whole (at most cap - 1 bytes), NUL-terminated. */
static ssize_t read_small_file(int dirfd, const char *path, char *buf, size_t cap)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t have = 0;
	while (have < cap - 1) {
		ssize_t n = read(fd, buf + have, cap - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	close(fd);
	buf[have] = '\0';
	return (ssize_t)have;
}

/* Every process of /proc whose comm or executable matches a name. */
static void add_by_name(const struct cs_target_match *match, struct pid_set *set)
{
	DIR *proc = opendir("/proc");
	if (!proc)
		return;
	struct dirent *entry;
	while ((entry = readdir(proc))) {
		char *end;
		long pid = strtol(entry->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		char path[64], text[1024], comm[CS_COMM_LEN * 4];
		unsigned long flags = 0;
		snprintf(path, sizeof(path), "%ld/stat", pid);
		/* Processes vanish while we look: skip them. */
		if (read_small_file(dirfd(proc), path, text, sizeof(text)) <= 0 ||
		    cs_parse_proc_stat(text, comm, sizeof(comm), &flags) || (flags & CS_PF_KTHREAD))
			continue;
		char exe_link[4096] = "", exe_base[CS_TARGET_NAME_LEN] = "";
		if (!cs_match_name(match, comm, NULL)) {
			snprintf(path, sizeof(path), "%ld/exe", pid);
			ssize_t len = readlinkat(dirfd(proc), path, exe_link, sizeof(exe_link) - 1);
			if (len <= 0)
				continue;
			exe_link[len] = '\0';
			cs_exe_basename(exe_link, exe_base, sizeof(exe_base));
			if (!cs_match_name(match, comm, exe_base))
				continue;
		}
		pid_set_add(set, (pid_t)pid);
	}
	closedir(proc);
}

#define CGROUP_MAX_DEPTH 32

/* cgroup.procs of dirfd's cgroup and of every cgroup below it. */
static void add_cgroup_tree(int dirfd, struct pid_set *set, int depth)
{
	/* Not on the stack: this recurses; the text is done with before the recursion. */
	static char text[65536];
	if (read_small_file(dirfd, "cgroup.procs", text, sizeof(text)) > 0) {
		pid_t pids[1024];
		size_t count = 0;
		/* A list cut at the buffer's end may end in half a number: drop it. */
		char *last = strrchr(text, '\n');
		if (last)
			last[1] = '\0';
		if (cs_parse_pid_list(text, pids, 1024, &count) != -EINVAL)
			for (size_t i = 0; i < count; i++)
				pid_set_add(set, pids[i]);
	}
	if (depth >= CGROUP_MAX_DEPTH)
		return;
	int dup_fd = dup(dirfd);
	if (dup_fd < 0)
		return;
	DIR *dir = fdopendir(dup_fd);
	if (!dir) {
		close(dup_fd);
		return;
	}
	struct dirent *entry;
	while ((entry = readdir(dir))) {
		if (entry->d_type != DT_DIR || entry->d_name[0] == '.')
			continue;
		int child = openat(dirfd, entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (child < 0)
			continue;
		add_cgroup_tree(child, set, depth + 1);
		close(child);
	}
	closedir(dir);
}

const char *cs_cgroup2_mount(void)
{
	/* Found once: the hierarchy does not move while we run (not a session's state). */
	static char mount_point[CS_CGROUP_PATH_LEN];
	static char text[65536];
	if (mount_point[0])
		return mount_point;
	if (read_small_file(AT_FDCWD, "/proc/self/mountinfo", text, sizeof(text)) <= 0 ||
	    cs_parse_cgroup2_mount(text, mount_point, sizeof(mount_point)))
		return NULL;
	return mount_point;
}

/* The directory of a normalized cgroup path; false without a v2 hierarchy. */
static bool cgroup_dir(const char *path, char *out, size_t len)
{
	const char *mount_point = cs_cgroup2_mount();
	if (!mount_point)
		return false;
	snprintf(out, len, "%s%s", mount_point, strcmp(path, "/") ? path : "");
	return true;
}

bool cs_cgroup_exists(const char *path)
{
	char full[2 * CS_CGROUP_PATH_LEN];
	struct stat st;
	return cgroup_dir(path, full, sizeof(full)) && stat(full, &st) == 0 && S_ISDIR(st.st_mode);
}

int cs_pids_matching(const struct cs_target_match *match, pid_t *pids, size_t max, size_t *count)
{
	struct pid_set set = { .pids = pids, .max = max };
	if (match->name_count)
		add_by_name(match, &set);
	for (size_t i = 0; i < match->cgroup_count; i++) {
		char full[2 * CS_CGROUP_PATH_LEN];
		if (!cgroup_dir(match->cgroups[i], full, sizeof(full)))
			break;
		int fd = open(full, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		add_cgroup_tree(fd, &set, 0);
		close(fd);
	}
	*count = set.count;
	return set.overflow ? -ENOSPC : 0;
}

/* A counter of a /proc/net file's table, by its column's name. */
struct counter_column {
	const char *name;
	uint64_t *value;
};

/* The header line that starts with prefix ("TcpExt:" must not match "MPTcpExt:"), or NULL. */
static const char *table_header(const char *text, const char *prefix)
{
	size_t prefix_len = strlen(prefix);
	const char *header = text;
	while (header && strncmp(header, prefix, prefix_len) != 0) {
		header = strchr(header, '\n');
		if (header)
			header++;
	}
	return header;
}

/*
 * The columns of the table whose two lines start with prefix: a header
 * line of names, then one of values. 0 when every column asked for was
 * there; -ENOENT without the table, -EINVAL when its lines do not agree.
 */
static int parse_counter_table(const char *text, const char *prefix, const struct counter_column *columns,
			       size_t column_count)
{
	const char *header = table_header(text, prefix);
	size_t prefix_len = strlen(prefix);
	if (!header)
		return -ENOENT;
	const char *values = strchr(header, '\n');
	if (!values || strncmp(values + 1, prefix, prefix_len) != 0)
		return -EINVAL;
	values += 1 + prefix_len;
	const char *name = header + prefix_len;
	size_t found = 0;

	/* Walk the names and the values side by side. */
	while (*name && *name != '\n') {
		while (*name == ' ')
			name++;
		while (*values == ' ')
			values++;
		if (*name == '\n' || !*name)
			break;
		size_t name_len = strcspn(name, " \n");
		if (*values == '\n' || !*values)
			return -EINVAL; /* fewer values than names */
		char *value_end;
		/* (Tcp's MaxConn is -1: read as a huge number, and not asked for.) */
		unsigned long long value = strtoull(values, &value_end, 10);
		if (value_end == values)
			return -EINVAL;
		values = value_end;
		for (size_t i = 0; i < column_count; i++)
			if (strlen(columns[i].name) == name_len && !strncmp(name, columns[i].name, name_len)) {
				*columns[i].value = value;
				found++;
			}
		name += name_len;
	}
	return found == column_count ? 0 : -EINVAL;
}

int cs_parse_tcp_counters(const char *text, struct cs_tcp_counters *out)
{
	memset(out, 0, sizeof(*out));
	const struct counter_column columns[] = {
		{ "ListenOverflows", &out->listen_overflows },
		{ "ListenDrops", &out->listen_drops },
		{ "SyncookiesSent", &out->syncookies_sent },
	};
	return parse_counter_table(text, "TcpExt:", columns, sizeof(columns) / sizeof(columns[0]));
}

int cs_parse_tcp_snmp(const char *text, struct cs_tcp_counters *out)
{
	const struct counter_column columns[] = {
		{ "PassiveOpens", &out->passive_opens },
		{ "EstabResets", &out->estab_resets },
		{ "OutRsts", &out->out_rsts },
	};
	return parse_counter_table(text, "Tcp:", columns, sizeof(columns) / sizeof(columns[0]));
}
