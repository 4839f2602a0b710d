/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Targets chosen by what a process is rather than by its pid or port: its
 * name (comm or executable), its cgroup. The pure half: validating what the
 * user wrote, parsing what /proc and cgroupfs say, deciding whether a
 * process matches. The /proc and cgroupfs walks are in procfs.c.
 */
#ifndef CS_TARGETS_H
#define CS_TARGETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CS_MAX_MATCH_TARGETS 16  /* --name and --cgroup options, each */
#define CS_TARGET_NAME_LEN 256   /* NAME_MAX + 1: an executable's basename */
#define CS_CGROUP_PATH_LEN 512
#define CS_PID_MAX_LIMIT 4194304 /* the kernel's upper bound for pid_max */
#define CS_COMM_LEN 16           /* the kernel's TASK_COMM_LEN */

struct cs_target_match {
	char names[CS_MAX_MATCH_TARGETS][CS_TARGET_NAME_LEN];
	size_t name_count;
	/* Normalized: "/" or "/a/b", relative to the cgroup v2 mount. */
	char cgroups[CS_MAX_MATCH_TARGETS][CS_CGROUP_PATH_LEN];
	size_t cgroup_count;
};

/*
 * Add a process name: 1 to 255 bytes, no '/', no control characters.
 * Duplicates are kept once. Returns 0, or -1 with what is wrong in errmsg
 * ("expects ..., not '...'", for the caller to prefix with the option).
 */
int cs_target_add_name(struct cs_target_match *match, const char *name, char *errmsg, size_t errlen);

/*
 * Add a cgroup v2 path, relative to the hierarchy's root, as
 * /proc/PID/cgroup shows it ("/system.slice/x", "system.slice/x" and
 * "/sys/fs/cgroup/system.slice/x" are the same);
 * no "." or ".." components. Returns 0 or -1 as cs_target_add_name().
 */
int cs_target_add_cgroup(struct cs_target_match *match, const char *path, char *errmsg, size_t errlen);

/*
 * Normalize a cgroup path into out (see cs_target_add_cgroup): the path as
 * /proc/PID/cgroup's "0::" line shows it. A leading /sys/fs/cgroup (or
 * /sys/fs/cgroup/unified, the v2 mount of hybrid systems) is dropped.
 * 0, or -EINVAL / -ENAMETOOLONG.
 */
int cs_cgroup_normalize(const char *path, char *out, size_t len);

/*
 * The cgroup v2 hierarchy's mount point from the text of
 * /proc/self/mountinfo (its root mount, /sys/fs/cgroup preferred).
 * Returns 0, -ENOENT when none is mounted, -ENAMETOOLONG.
 */
int cs_parse_cgroup2_mount(const char *mountinfo, char *out, size_t len);

/* Is the set the same (order aside)? */
bool cs_target_match_equal(const struct cs_target_match *a, const struct cs_target_match *b);

/* Does any name or cgroup say to look? */
static inline bool cs_target_match_any(const struct cs_target_match *match)
{
	return match->name_count || match->cgroup_count;
}

/*
 * From the text of /proc/PID/stat: the command (between the first '(' and
 * the last ')': it may hold spaces and parentheses) and the flags field.
 * Returns 0 or -EINVAL.
 */
int cs_parse_proc_stat(const char *text, char *comm, size_t comm_len, unsigned long *flags);

/* PF_KTHREAD: kernel threads are never targets. */
#define CS_PF_KTHREAD 0x00200000ul

/*
 * The basename of /proc/PID/exe's link text, without the " (deleted)" the
 * kernel appends when the file was replaced (a server upgraded in place).
 */
void cs_exe_basename(const char *link, char *out, size_t len);

/*
 * Does a process with this comm and executable basename (may be "") match
 * name? The comm is matched whole; it is cut to 15 bytes by the kernel, so
 * longer names match through the executable.
 */
bool cs_name_matches(const char *name, const char *comm, const char *exe_base);

/* Which of match's names matches, or NULL. */
const char *cs_match_name(const struct cs_target_match *match, const char *comm, const char *exe_base);

/*
 * Parse a cgroup.procs file: one decimal pid per line. Returns 0, -EINVAL
 * on anything else, -ENOSPC when more than max (the first max are kept).
 */
int cs_parse_pid_list(const char *text, pid_t *pids, size_t max, size_t *count);

#endif /* CS_TARGETS_H */
