// SPDX-License-Identifier: BSD-2-Clause
#include "privileges.h"
#include "errmsg.h"
#include "units.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define DROP_WAIT_MS 2000  /* every thread answers in microseconds; a stuck one fails the drop */

static const struct {
	int cap;
	const char *name;
} cap_names[] = {
	{ CS_CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH" },
	{ CS_CAP_SYS_PTRACE, "CAP_SYS_PTRACE" },
	{ CS_CAP_SYS_ADMIN, "CAP_SYS_ADMIN" },
	{ CS_CAP_PERFMON, "CAP_PERFMON" },
	{ CS_CAP_BPF, "CAP_BPF" },
};

void cs_caps_describe(uint64_t caps, char *out, size_t len)
{
	size_t used = 0;
	out[0] = '\0';
	for (size_t i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]) && used < len; i++)
		if (caps & (1ull << cap_names[i].cap))
			used += (size_t)snprintf(out + used, len - used, "%s%s", used ? " " : "", cap_names[i].name);
}

static int read_caps(struct __user_cap_data_struct caps[2])
{
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	return syscall(SYS_capget, &header, caps) ? -errno : 0;
}

static bool has(const struct __user_cap_data_struct caps[2], int cap)
{
	return caps[cap / 32].effective & (1u << (cap % 32));
}

int cs_privileges_check(char *errmsg, size_t errlen)
{
	struct __user_cap_data_struct caps[2] = {};
	int err = read_caps(caps);
	if (err)
		return cs_fail(errmsg, errlen, "cannot read this process's capabilities: %s", strerror(-err));
	const char *missing[4];
	size_t count = 0;
	bool admin = has(caps, CS_CAP_SYS_ADMIN);
	if (!admin && !has(caps, CS_CAP_BPF))
		missing[count++] = "CAP_BPF";
	if (!admin && !has(caps, CS_CAP_PERFMON))
		missing[count++] = "CAP_PERFMON";
	if (!has(caps, CS_CAP_SYS_PTRACE))
		missing[count++] = "CAP_SYS_PTRACE";
	if (!has(caps, CS_CAP_DAC_READ_SEARCH))
		missing[count++] = "CAP_DAC_READ_SEARCH";
	if (!count)
		return 0;
	char list[128] = "";
	size_t used = 0;
	for (size_t i = 0; i < count && used < sizeof(list); i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
					 i == 0 ? "" : i + 1 == count ? " and " : ", ", missing[i]);
	char exe[256] = "connscoped";
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len > 0)
		exe[len] = '\0';
	return cs_fail(errmsg, errlen,
		       "missing %s (CAP_BPF and CAP_PERFMON load the probes; CAP_SYS_PTRACE and "
		       "CAP_DAC_READ_SEARCH find the processes behind a port): run as root, or grant them "
		       "with systemd's 'AmbientCapabilities=CAP_BPF CAP_PERFMON CAP_SYS_PTRACE "
		       "CAP_DAC_READ_SEARCH' or 'sudo setcap cap_bpf,cap_perfmon,cap_sys_ptrace,"
		       "cap_dac_read_search+ep %s'", list, exe);
}

/* ---- the drop, in every thread ------------------------------------------------ */

static uint64_t drop_keep;                 /* the set to keep, fixed before any signal */
/* Counted from handlers in several threads at once: atomic adds. */
static int drop_failures;
static int drop_answers;

/* Only raw system calls: this also runs in a signal handler. */
static int drop_self(void)
{
	for (unsigned long cap = 0; cap < 64; cap++)
		if (!(drop_keep & (1ull << cap)))
			/* EINVAL past the kernel's last capability; EPERM without
			 * CAP_SETPCAP (not root): no_new_privs then guards exec. */
			syscall(SYS_prctl, PR_CAPBSET_DROP, cap, 0, 0, 0);
	syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct caps[2] = {};
	if (syscall(SYS_capget, &header, caps))
		return -1;
	for (int i = 0; i < 2; i++) {
		uint32_t keep = (uint32_t)(drop_keep >> (32 * i));
		caps[i].permitted &= keep;
		caps[i].effective = caps[i].permitted;
		caps[i].inheritable = 0;
	}
	return syscall(SYS_capset, &header, caps) ? -1 : 0;
}

static void on_drop_signal(int sig)
{
	(void)sig;
	int saved = errno;
	if (drop_self())
		__atomic_fetch_add(&drop_failures, 1, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&drop_answers, 1, __ATOMIC_SEQ_CST);
	errno = saved;
}

/* CapEff and CapPrm of one thread, from its status file. */
static int thread_caps(const char *tid, uint64_t *effective, uint64_t *permitted)
{
	char path[300], line[256];
	snprintf(path, sizeof(path), "/proc/self/task/%s/status", tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	int found = 0;
	while (fgets(line, sizeof(line), f))
		found += (sscanf(line, "CapEff: %" SCNx64, effective) == 1) +
			 (sscanf(line, "CapPrm: %" SCNx64, permitted) == 1);
	fclose(f);
	return found == 2 ? 0 : -EINVAL;
}

int cs_privileges_drop(uint64_t keep, char *errmsg, size_t errlen)
{
	struct __user_cap_data_struct caps[2] = {};
	int err = read_caps(caps);
	if (err)
		return cs_fail(errmsg, errlen, "cannot read this process's capabilities: %s", strerror(-err));
	uint64_t permitted = caps[0].permitted | ((uint64_t)caps[1].permitted << 32);
	drop_keep = keep & permitted;

	/* The other threads first (they are told by a signal, as glibc does for setuid). */
	struct sigaction action = { .sa_handler = on_drop_signal, .sa_flags = SA_RESTART };
	/* Left installed: a late signal must not fall to the default action (exit). */
	int sig = SIGRTMIN;
	sigaction(sig, &action, NULL);
	pid_t self = (pid_t)syscall(SYS_gettid);
	DIR *tasks = opendir("/proc/self/task");
	if (!tasks)
		return cs_fail(errmsg, errlen, "cannot list this process's threads: %s", strerror(errno));
	struct dirent *entry;
	int sent = 0;
	while ((entry = readdir(tasks))) {
		pid_t tid = (pid_t)atoi(entry->d_name);
		if (tid <= 0 || tid == self)
			continue;
		if (syscall(SYS_tgkill, getpid(), tid, sig) == 0)
			sent++;
	}
	closedir(tasks);
	int answers = 0;
	for (int waited_ms = 0; waited_ms < DROP_WAIT_MS; waited_ms++) {
		answers = __atomic_load_n(&drop_answers, __ATOMIC_SEQ_CST);
		if (answers >= sent)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = (long)NS_PER_MS }, NULL);
	}
	int failures = __atomic_load_n(&drop_failures, __ATOMIC_SEQ_CST);
	if (answers < sent || failures)
		return cs_fail(errmsg, errlen, "dropping capabilities failed in %d of %d other thread(s)",
			       sent - answers + failures, sent);
	if (drop_self())
		return cs_fail(errmsg, errlen, "dropping capabilities failed: %s", strerror(errno));

	/* Trust, but verify: every thread's status shows only what is kept. */
	tasks = opendir("/proc/self/task");
	if (!tasks)
		return cs_fail(errmsg, errlen, "cannot list this process's threads: %s", strerror(errno));
	int ret = 0;
	while ((entry = readdir(tasks)) && !ret) {
		if (entry->d_name[0] == '.')
			continue;
		uint64_t effective = ~0ull, thread_permitted = ~0ull;
		if (thread_caps(entry->d_name, &effective, &thread_permitted) == 0 &&
		    ((effective | thread_permitted) & ~drop_keep))
			ret = cs_fail(errmsg, errlen, "thread %s still has capabilities %#" PRIx64 " after the drop",
				      entry->d_name, effective | thread_permitted);
	}
	closedir(tasks);
	return ret;
}
