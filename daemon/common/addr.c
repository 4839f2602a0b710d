// SPDX-License-Identifier: BSD-2-Clause
#include "addr.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool is_v4_mapped(const uint8_t addr[16])
{
	static const uint8_t v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	return !memcmp(addr, v4_mapped, sizeof(v4_mapped));
}

void cs_format_addr(char *buf, size_t len, const uint8_t addr[16])
{
	bool v4 = is_v4_mapped(addr);
	if (!inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? addr + 12 : addr, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

void cs_format_endpoint(char *buf, size_t len, const uint8_t addr[16], uint16_t port)
{
	char text[INET6_ADDRSTRLEN];
	cs_format_addr(text, sizeof(text), addr);
	snprintf(buf, len, is_v4_mapped(addr) ? "%s:%u" : "[%s]:%u", text, port);
}
