/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Between the control server's socket loop (ctl_loop.c) and its answers
 * (ctl_server.c): a client, and what the loop asks of the answers. Not
 * for the server's users.
 */
#ifndef CS_CTL_INTERNAL_H
#define CS_CTL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ctl_proto.h"
#include "ctl_server.h"

struct cs_ctl_client {
	int fd;
	pid_t pid;
	uid_t uid;
	struct cs_ctl_reader reader;
	uint8_t *out;
	size_t out_len, out_sent;
	uint64_t last_activity_ns;   /* last byte in or out */
	uint64_t partial_since_ns;   /* a request began arriving, 0: none pending */
	uint64_t out_since_ns;       /* output has waited since */
	bool streaming;
	bool spoke;                  /* sent a byte: from then on idle between requests, not silent */
	struct cs_ctl_view_request view;
	bool closing;                /* close once the output is sent */
};

/* A line on stderr, "connscoped: control: ...", within the log's budget a second. */
__attribute__((format(printf, 2, 3)))
void cs_ctl_log(struct cs_ctl_server *server, const char *fmt, ...);

/* Bytes c sent, read at now: whole requests are answered, a broken frame rejected (c->closing). */
void cs_ctl_take_bytes(struct cs_ctl_server *server, struct cs_ctl_client *c, const uint8_t *buf, size_t len,
		       uint64_t now);

/* Count, log and answer a request refused. */
void cs_ctl_reject(struct cs_ctl_server *server, struct cs_ctl_client *c, enum cs_ctl_error code,
		   const char *why);

/* Render a view (JSON or text) of the engine now. Returns the text (malloc'd) or NULL. */
char *cs_ctl_render_view(struct cs_ctl_server *server, const struct cs_ctl_view_request *view, size_t *len);

/* Queue a rendered view for c (text: NULL when rendering failed). */
void cs_ctl_queue_view(struct cs_ctl_server *server, struct cs_ctl_client *c, uint16_t type, const char *text,
		       size_t len);

#endif /* CS_CTL_INTERNAL_H */
