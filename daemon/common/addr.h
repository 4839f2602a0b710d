/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The wire's addresses (cs_tuple: 16 bytes, IPv4 stored IPv4-mapped) as
 * people write them: "127.0.0.1", "::1"; with a port, "127.0.0.1:8081",
 * "[::1]:8081". An identity, as a thread's comm is: the analysis names an
 * upstream by it, the renderers print it.
 */
#ifndef CS_ADDR_H
#define CS_ADDR_H

#include <stddef.h>
#include <stdint.h>

/* Room for the longest: an IPv6 address in brackets and a port. */
#define CS_ENDPOINT_LEN 56

/* The address; "?" when it cannot be written. */
void cs_format_addr(char *buf, size_t len, const uint8_t addr[16]);
/* The address and port. */
void cs_format_endpoint(char *buf, size_t len, const uint8_t addr[16], uint16_t port);

#endif /* CS_ADDR_H */
