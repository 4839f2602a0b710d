// SPDX-License-Identifier: BSD-2-Clause
#include "targets.h"
#include "errmsg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CGROUP_MOUNT "/sys/fs/cgroup"

int cs_target_add_name(struct cs_target_match *match, const char *name, char *errmsg, size_t errlen)
{
	size_t len = strlen(name);
	if (len == 0 || len >= CS_TARGET_NAME_LEN)
		return cs_fail(errmsg, errlen, "expects a process name (1-%d bytes), not '%s'",
			       CS_TARGET_NAME_LEN - 1, name);
	for (const char *p = name; *p; p++)
		if (*p == '/' || (unsigned char)*p < 0x20 || *p == 0x7f)
			return cs_fail(errmsg, errlen, "expects a process name (a command or an executable's "
				       "basename, without '/'), not '%s'", name);
	for (size_t i = 0; i < match->name_count; i++)
		if (!strcmp(match->names[i], name))
			return 0;
	if (match->name_count >= CS_MAX_MATCH_TARGETS)
		return cs_fail(errmsg, errlen, "takes at most %d process names", CS_MAX_MATCH_TARGETS);
	memcpy(match->names[match->name_count++], name, len + 1);
	return 0;
}

int cs_cgroup_normalize(const char *path, char *out, size_t len)
{
	if (!*path || len < 2)
		return -EINVAL;
	size_t used = 0;
	out[0] = '\0';
	/* Component by component: empty ones ("//", a trailing "/") vanish. */
	while (*path) {
		while (*path == '/')
			path++;
		size_t part = strcspn(path, "/");
		if (!part)
			break;
		if ((part == 1 && path[0] == '.') || (part == 2 && path[0] == '.' && path[1] == '.'))
			return -EINVAL;
		for (size_t i = 0; i < part; i++)
			if ((unsigned char)path[i] < 0x20 || path[i] == 0x7f)
				return -EINVAL;
		if (used + 1 + part + 1 > len)
			return -ENAMETOOLONG;
		out[used++] = '/';
		memcpy(out + used, path, part);
		used += part;
		out[used] = '\0';
		path += part;
	}
	/*
	 * The mount point may be written out: strip it from the normal form
	 * (so "/sys/fs//cgroup/a" is "/a"), as often as it is there, so that
	 * normalizing a normal path changes nothing.
	 */
	static const char *const mounts[] = { CGROUP_MOUNT "/unified", CGROUP_MOUNT };
	for (size_t i = 0; i < 2;) {
		size_t mount_len = strlen(mounts[i]);
		if (used >= mount_len && !strncmp(out, mounts[i], mount_len) &&
		    (out[mount_len] == '/' || !out[mount_len])) {
			memmove(out, out + mount_len, used - mount_len + 1);
			used -= mount_len;
			i = 0;
		} else {
			i++;
		}
	}
	if (!used) {
		out[0] = '/';
		out[1] = '\0';
	}
	return 0;
}

int cs_target_add_cgroup(struct cs_target_match *match, const char *path, char *errmsg, size_t errlen)
{
	char normal[CS_CGROUP_PATH_LEN];
	int err = cs_cgroup_normalize(path, normal, sizeof(normal));
	if (err == -ENAMETOOLONG)
		return cs_fail(errmsg, errlen, "expects a cgroup path shorter than %d bytes", CS_CGROUP_PATH_LEN);
	if (err)
		return cs_fail(errmsg, errlen, "expects a cgroup v2 path as /proc/PID/cgroup shows it (e.g. "
			       "/system.slice/nginx.service; no '.' or '..'), not '%s'", path);
	for (size_t i = 0; i < match->cgroup_count; i++)
		if (!strcmp(match->cgroups[i], normal))
			return 0;
	if (match->cgroup_count >= CS_MAX_MATCH_TARGETS)
		return cs_fail(errmsg, errlen, "takes at most %d cgroups", CS_MAX_MATCH_TARGETS);
	strcpy(match->cgroups[match->cgroup_count++], normal);
	return 0;
}

/* Copy a mountinfo field, undoing its octal escapes (\040 for a space). */
static int unescape_field(const char *field, size_t field_len, char *out, size_t len)
{
	size_t used = 0;
	for (size_t i = 0; i < field_len; i++) {
		char c = field[i];
		if (c == '\\' && i + 3 < field_len && field[i + 1] >= '0' && field[i + 1] <= '3' &&
		    field[i + 2] >= '0' && field[i + 2] <= '7' && field[i + 3] >= '0' && field[i + 3] <= '7') {
			c = (char)((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 + (field[i + 3] - '0'));
			i += 3;
		}
		if (used + 1 >= len)
			return -ENAMETOOLONG;
		out[used++] = c;
	}
	out[used] = '\0';
	return 0;
}

int cs_parse_cgroup2_mount(const char *mountinfo, char *out, size_t len)
{
	int found = -ENOENT;
	for (const char *line = mountinfo, *next; *line; line = next) {
		size_t line_len = strcspn(line, "\n");
		next = line + line_len + (line[line_len] == '\n');
		/* id parent major:minor root mount-point options [optional...] - fstype source super */
		const char *fields[5];
		const char *p = line;
		size_t n = 0;
		while (n < 5 && p < line + line_len) {
			fields[n++] = p;
			p += strcspn(p, " \n");
			while (*p == ' ')
				p++;
		}
		const char *dash = strstr(line, " - ");
		if (n < 5 || !dash || dash > line + line_len || strncmp(dash + 3, "cgroup2 ", 8) != 0)
			continue;
		if (strncmp(fields[3], "/ ", 2) != 0)
			continue; /* a bind mount of a sub-tree, not the hierarchy's root */
		char mount_point[CS_CGROUP_PATH_LEN];
		if (unescape_field(fields[4], strcspn(fields[4], " "), mount_point, sizeof(mount_point)))
			continue;
		bool preferred = !strcmp(mount_point, CGROUP_MOUNT);
		if (found == 0 && !preferred)
			continue;
		if (strlen(mount_point) >= len)
			return -ENAMETOOLONG;
		strcpy(out, mount_point);
		found = 0;
		if (preferred)
			break;
	}
	return found;
}

/* Is every string of items (item_count of them, stride bytes apart) in set? */
static bool strings_within(const char *set, size_t set_count, const char *items, size_t item_count,
			   size_t stride)
{
	for (size_t i = 0; i < item_count; i++) {
		bool found = false;
		for (size_t j = 0; j < set_count && !found; j++)
			found = !strcmp(set + j * stride, items + i * stride);
		if (!found)
			return false;
	}
	return true;
}

bool cs_target_match_equal(const struct cs_target_match *a, const struct cs_target_match *b)
{
	/* Neither holds duplicates: the same size and one within the other. */
	return a->name_count == b->name_count && a->cgroup_count == b->cgroup_count &&
	       strings_within(a->names[0], a->name_count, b->names[0], b->name_count, CS_TARGET_NAME_LEN) &&
	       strings_within(a->cgroups[0], a->cgroup_count, b->cgroups[0], b->cgroup_count,
			      CS_CGROUP_PATH_LEN);
}

int cs_parse_proc_stat(const char *text, char *comm, size_t comm_len, unsigned long *flags)
{
	const char *open = strchr(text, '(');
	const char *close = strrchr(text, ')');
	if (!open || !close || close < open || comm_len == 0)
		return -EINVAL;
	size_t len = (size_t)(close - open - 1);
	if (len >= comm_len)
		len = comm_len - 1;
	memcpy(comm, open + 1, len);
	comm[len] = '\0';
	/* After ") ": state, ppid, pgrp, session, tty_nr, tpgid, flags (the 9th field). */
	const char *p = close + 1;
	for (int field = 3; field <= 9; field++) {
		if (*p != ' ')
			return -EINVAL;
		p++;
		if (field == 9) {
			char *end;
			errno = 0;
			unsigned long value = strtoul(p, &end, 10);
			if (errno || end == p || (*end != ' ' && *end != '\n' && *end))
				return -EINVAL;
			*flags = value;
			return 0;
		}
		size_t field_len = strcspn(p, " \n");
		if (!field_len)
			return -EINVAL;
		p += field_len;
	}
	return -EINVAL;
}

void cs_exe_basename(const char *link, char *out, size_t len)
{
	if (!len)
		return;
	const char *slash = strrchr(link, '/');
	const char *base = slash ? slash + 1 : link;
	size_t base_len = strlen(base);
	static const char deleted[] = " (deleted)";
	size_t deleted_len = sizeof(deleted) - 1;
	if (base_len > deleted_len && !strcmp(base + base_len - deleted_len, deleted))
		base_len -= deleted_len;
	if (base_len >= len)
		base_len = len - 1;
	memcpy(out, base, base_len);
	out[base_len] = '\0';
}

bool cs_name_matches(const char *name, const char *comm, const char *exe_base)
{
	return !strcmp(name, comm) || (exe_base && *exe_base && !strcmp(name, exe_base));
}

const char *cs_match_name(const struct cs_target_match *match, const char *comm, const char *exe_base)
{
	for (size_t i = 0; i < match->name_count; i++)
		if (cs_name_matches(match->names[i], comm, exe_base))
			return match->names[i];
	return NULL;
}

int cs_parse_pid_list(const char *text, pid_t *pids, size_t max, size_t *count)
{
	*count = 0;
	int err = 0;
	while (*text) {
		if (*text < '0' || *text > '9')
			return -EINVAL;
		char *end;
		errno = 0;
		long pid = strtol(text, &end, 10);
		if (errno || pid <= 0 || pid > CS_PID_MAX_LIMIT || (*end != '\n' && *end))
			return -EINVAL;
		if (*count < max)
			pids[(*count)++] = (pid_t)pid;
		else
			err = -ENOSPC;
		text = *end ? end + 1 : end;
	}
	return err;
}
