// SPDX-License-Identifier: BSD-2-Clause
#include "route.h"

#include <string.h>

#define MAX_DIGITS 12 /* enough for every limit, far from overflow */

static const struct {
	const char *prefix;
	enum cs_route route;
} numbered_routes[] = {
	{ "/bytes/", CS_ROUTE_BYTES },
	{ "/sleep/", CS_ROUTE_SLEEP },
	{ "/block/", CS_ROUTE_BLOCK },
	{ "/spin/", CS_ROUTE_SPIN },
	{ "/split/", CS_ROUTE_SPLIT },
};

static int parse_decimal(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > MAX_DIGITS)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

enum cs_route cs_route_match(const char *target, size_t len, uint64_t *arg)
{
	const char *query = memchr(target, '?', len);
	size_t path_len = query ? (size_t)(query - target) : len;

	*arg = 0;
	if (path_len == 1 && target[0] == '/')
		return CS_ROUTE_ROOT;
	for (size_t i = 0; i < sizeof(numbered_routes) / sizeof(numbered_routes[0]); i++) {
		size_t plen = strlen(numbered_routes[i].prefix);
		if (path_len > plen && memcmp(target, numbered_routes[i].prefix, plen) == 0) {
			if (parse_decimal(target + plen, path_len - plen, arg) != 0)
				return CS_ROUTE_NOT_FOUND;
			return numbered_routes[i].route;
		}
	}
	return CS_ROUTE_NOT_FOUND;
}
