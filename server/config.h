/* SPDX-License-Identifier: BSD-2-Clause */
/* The reference server's settings, as parsed from its command line. */
#ifndef CS_CONFIG_H
#define CS_CONFIG_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#define CS_MAX_WORKERS 64

/* How connections get from the listen queue to the workers. */
enum cs_accept_mode {
	CS_ACCEPT_SHARED,    /* one listener in every worker's epoll (herd) */
	CS_ACCEPT_EXCLUSIVE, /* the same, registered with EPOLLEXCLUSIVE */
	CS_ACCEPT_REUSEPORT, /* one SO_REUSEPORT listener per worker */
	CS_ACCEPT_ACCEPTOR,  /* one blocking accept thread hands off to workers */
	CS_ACCEPT_POOL,      /* acceptor, one epoll poller, a pool serving (pool.h) */
	CS_ACCEPT_PREFORK,   /* each worker accepts, then serves that connection (pool.h) */
};

struct cs_config {
	struct sockaddr_storage bind_addr; /* port included */
	socklen_t bind_addr_len;
	char bind_text[64]; /* the address as printed: 127.0.0.1 or [::1] */
	int port;           /* 0: the kernel picks one */
	int workers;
	int backlog;
	enum cs_accept_mode accept_mode;
	bool multi_accept; /* accept until EAGAIN on each readiness event */
	uint32_t accept_delay_us;
	uint32_t max_conns; /* acceptor mode: no accept() while this many are open; 0: none */
	bool keepalive;
	bool nagle;                 /* leave Nagle's algorithm on (no TCP_NODELAY) */
	uint32_t idle_timeout_ms;   /* 0: keep idle connections forever */
	uint32_t header_timeout_ms; /* 0: no limit */
	uint32_t max_header_bytes;
	int block_worker; /* -1: /block blocks on every worker */
	bool quiet;
};

const char *cs_accept_mode_name(enum cs_accept_mode mode);

#endif /* CS_CONFIG_H */
