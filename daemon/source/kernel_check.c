// SPDX-License-Identifier: BSD-2-Clause
#include "kernel_check.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "errmsg.h"

/* A trace event the probes attach to (tp_btf: the hook's arguments are the event's). */
struct required_event {
	const char *group, *name;
	const char *field; /* a field of its format the probes read, or NULL */
	const char *since; /* the kernel that brought it (with the field) */
};

/* Newest first: a kernel that has the first is likely to have the rest. */
static const struct required_event required[] = {
	/* on_send_reset reads the reason (the rstreason series). */
	{ "tcp", "tcp_send_reset", "reason", "6.10" },
	/* The request probes: bytes arrived, read, sent. */
	{ "sock", "sk_data_ready", NULL, "6.3" },
	{ "sock", "sock_recv_length", NULL, "6.3" },
	{ "sock", "sock_send_length", NULL, "6.3" },
};

const char *cs_tracefs_root(void)
{
	static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[64];
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		snprintf(path, sizeof(path), "%s/events", roots[i]);
		if (!access(path, F_OK))
			return roots[i];
	}
	return NULL;
}

/*
 * A stat, where libbpf_find_vmlinux_btf_id() would parse the kernel's
 * whole BTF (some 5 MB, a tenth of a second) for one name, and the load
 * parses it again.
 */
bool cs_kernel_has_event(const char *root, const char *group, const char *name)
{
	char path[512];
	if (!root)
		return false;
	snprintf(path, sizeof(path), "%s/events/%s/%s", root, group, name);
	return !access(path, F_OK);
}

/* The event's format lists field (a line "field:TYPE NAME;" of it)? */
static bool event_has_field(const char *root, const struct required_event *event)
{
	char path[512], line[512], want[128];
	snprintf(path, sizeof(path), "%s/events/%s/%s/format", root, event->group, event->name);
	snprintf(want, sizeof(want), " %s;", event->field);
	FILE *format = fopen(path, "r");
	if (!format)
		return false;
	bool found = false;
	while (!found && fgets(line, sizeof(line), format))
		found = strstr(line, "field:") && strstr(line, want);
	fclose(format);
	return found;
}

int cs_kernel_check(const char *root, const char *release, char *errmsg, size_t errlen)
{
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		const struct required_event *event = &required[i];
		bool has = cs_kernel_has_event(root, event->group, event->name) &&
			   (!event->field || event_has_field(root, event));
		if (has)
			continue;
		return cs_fail(errmsg, errlen,
			       "this kernel%s%s%s has no trace event %s/%s%s%s (Linux %s): connscope needs Linux "
			       CS_KERNEL_MIN " or later",
			       release ? " (" : "", release ? release : "", release ? ")" : "", event->group, event->name,
			       event->field ? " with its field " : "", event->field ? event->field : "", event->since);
	}
	return 0;
}
