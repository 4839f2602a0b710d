/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The client side of connscoped's control socket, for connscope status,
 * snapshot, reset and top: connect, greet (HELLO), ask, read the answer,
 * each bounded in time. And what those commands share: the one-line
 * "no daemon" message, one request and its answer.
 */
#ifndef CS_CLI_CTL_CLIENT_H
#define CS_CLI_CTL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_proto.h"

#define CS_CTL_TIMEOUT_MS 5000

struct cs_ctl_conn {
	int fd;
	struct cs_ctl_reader reader;
	char path[108];
};

/*
 * Connect to the daemon at path and agree on the protocol. Returns 0;
 * -ENOENT or -ECONNREFUSED when no daemon serves there (*errmsg says so in
 * one line, naming connscoped and connscope attach); other -errno.
 */
int cs_ctl_connect(struct cs_ctl_conn *conn, const char *path, char *errmsg, size_t errlen);
void cs_ctl_close(struct cs_ctl_conn *conn);

int cs_ctl_send(struct cs_ctl_conn *conn, uint16_t type, const void *payload, size_t len);

/*
 * Wait up to timeout_ms for the next frame. Returns 1 with the frame; 0 on
 * timeout; -1 with a message (the daemon went away, sent an ERROR, or
 * something unreadable).
 */
int cs_ctl_recv(struct cs_ctl_conn *conn, int timeout_ms, struct cs_ctl_header *hdr, const uint8_t **payload,
		char *errmsg, size_t errlen);

/* Send a request and wait for its answer (of type | CS_CTL_RESPONSE). 0 or -1 with a message. */
int cs_ctl_call(struct cs_ctl_conn *conn, uint16_t type, const void *payload, size_t len,
		struct cs_ctl_header *hdr, const uint8_t **reply, char *errmsg, size_t errlen);

/* What a command does with the daemon's answer: 0, or 1 after saying why on stderr. */
typedef int (*cs_ctl_show_fn)(const uint8_t *reply, size_t len, void *ctx);

/*
 * One question to the daemon at path (connscope status, snapshot, reset):
 * connect, send the request, hand the answer to show, close. Returns the
 * command's exit code: show's, or 1 after a one-line message on stderr.
 */
int cs_ctl_ask(const char *path, uint16_t type, const void *payload, size_t len, cs_ctl_show_fn show, void *ctx);

#endif /* CS_CLI_CTL_CLIENT_H */
