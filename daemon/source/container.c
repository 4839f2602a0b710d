// SPDX-License-Identifier: BSD-2-Clause
#include "container.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define ID_HEX_LEN 64   /* a container id: sha256 in hex */
#define ID_SHOWN_LEN 12 /* what the runtimes' ps commands show */

/* Is s (len bytes) a whole container id? */
static bool is_id(const char *s, size_t len)
{
	if (len != ID_HEX_LEN)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	return true;
}

/* One path component: "docker-ID.scope" and its kin, or a bare ID. */
static bool component_id(const char *comp, size_t len, bool in_docker, bool in_kubepods, const char **runtime,
			 const char **id)
{
	static const struct {
		const char *prefix, *runtime;
	} scopes[] = {
		{ "docker-", "docker" }, { "cri-containerd-", "containerd" },
		{ "crio-", "cri-o" },    { "libpod-", "podman" },
	};
	const char *suffix = ".scope";
	size_t suffix_len = strlen(suffix);
	for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
		size_t plen = strlen(scopes[i].prefix);
		if (len == plen + ID_HEX_LEN + suffix_len && !strncmp(comp, scopes[i].prefix, plen) &&
		    !strncmp(comp + plen + ID_HEX_LEN, suffix, suffix_len) && is_id(comp + plen, ID_HEX_LEN)) {
			*runtime = scopes[i].runtime;
			*id = comp + plen;
			return true;
		}
	}
	/* cgroupfs drivers: /docker/ID, /kubepods/burstable/podUID/ID */
	if ((in_docker || in_kubepods) && is_id(comp, len)) {
		*runtime = in_docker ? "docker" : "containerd";
		*id = comp;
		return true;
	}
	return false;
}

int cs_container_of_cgroup(const char *cgroup, char *out, size_t len)
{
	const char *runtime = NULL, *id = NULL, *unit = NULL;
	size_t unit_len = 0;
	bool in_docker = false, in_kubepods = false;
	if (len)
		out[0] = '\0';
	for (const char *p = cgroup; *p;) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (!n)
			break;
		const char *r, *i;
		/* The innermost container wins (a container in a container's cgroup). */
		if (component_id(p, n, in_docker, in_kubepods, &r, &i)) {
			runtime = r;
			id = i;
		} else if (n > 8 && !strncmp(p + n - 8, ".service", 8)) {
			unit = p;
			unit_len = n;
		}
		in_docker |= n == 6 && !strncmp(p, "docker", 6);
		in_kubepods |= n >= 8 && !strncmp(p, "kubepods", 8);
		p += n;
	}
	if (id) {
		snprintf(out, len, "%s:%.*s", runtime, ID_SHOWN_LEN, id);
		return 0;
	}
	if (unit) {
		snprintf(out, len, "systemd:%.*s", (int)unit_len, unit);
		return 0;
	}
	return -1;
}

int cs_parse_proc_cgroup(const char *text, char *out, size_t len)
{
	if (len)
		out[0] = '\0';
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);
		if (n >= 3 && !strncmp(line, "0::", 3)) {
			snprintf(out, len, "%.*s", (int)(n - 3), line + 3);
			return 0;
		}
		line = end ? end + 1 : NULL;
	}
	return -1;
}
