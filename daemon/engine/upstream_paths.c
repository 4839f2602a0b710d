// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unix-socket upstreams: their names. An exchange's record carries its
 * upstream's identity, a hash of the path its peer listens on; the path
 * itself comes once per connection, before its exchanges
 * (cs_ev_upstream_path), and names the upstream of that hash.
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "addr.h"
#include "engine_internal.h"

int cs_on_upstream_path(struct cs_engine *engine, const struct cs_ev_upstream_path *ev)
{
	struct cs_tuple tuple;
	memset(&tuple, 0, sizeof(tuple));
	tuple.family = AF_UNIX;
	memcpy(tuple.remote_addr, &ev->path_hash, sizeof(ev->path_hash));
	struct cs_upstream_stats *u = cs_get_upstream(engine, &tuple);
	if (!u || u->path_len || !ev->path_len) /* past CS_UPSTREAMS_MAX: its exchanges are counted */
		return 0;
	u->path_len = ev->path_len < CS_UNIX_PATH_LEN ? ev->path_len : CS_UNIX_PATH_LEN;
	memcpy(u->path, ev->path, u->path_len);
	return 0;
}

/* A path as a name: printable bytes kept, others as '?'; an abstract name's leading 0 byte as '@'. */
static void path_text(char *buf, size_t len, const struct cs_upstream_stats *u)
{
	size_t n = 0, path_len = u->path_len;
	/* A pathname's trailing 0 bytes, as the kernel may count them. */
	while (path_len > 1 && !u->path[path_len - 1] && u->path[0])
		path_len--;
	for (size_t i = 0; i < path_len && n + 1 < len; i++) {
		char c = u->path[i];
		buf[n++] = i == 0 && c == '\0' ? '@' : (c >= 0x20 && c < 0x7f ? c : '?');
	}
	buf[n] = '\0';
}

void cs_upstream_address(char *buf, size_t len, const struct cs_upstream_stats *u)
{
	if (u->family != AF_UNIX) {
		cs_format_addr(buf, len, u->addr);
		return;
	}
	if (u->path_len) {
		path_text(buf, len, u);
		return;
	}
	uint64_t hash;
	memcpy(&hash, u->addr, sizeof(hash));
	snprintf(buf, len, "unix socket #%016llx", (unsigned long long)hash);
}

void cs_upstream_name(char *buf, size_t len, const struct cs_upstream_stats *u)
{
	if (u->family == AF_UNIX)
		cs_upstream_address(buf, len, u);
	else
		cs_format_endpoint(buf, len, u->addr, u->port);
}
