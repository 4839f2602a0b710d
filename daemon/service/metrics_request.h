/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the metrics endpoint makes of the bytes a client has sent so far:
 * wait for more, serve /metrics, or refuse with an HTTP status. Pure (no
 * I/O, no allocation, no NUL needed after the bytes), so that the server,
 * a unit test and a fuzz target drive the same code.
 *
 * A verdict comes as soon as the bytes allow one: a bad request line is
 * refused when its line ends, a bad header line when that line ends, a
 * byte no request line may hold at once, and a head that outgrows the
 * limit when the limit is reached. Only a well-formed GET or HEAD of
 * /metrics waits for the blank line that ends the head.
 */
#ifndef CS_METRICS_REQUEST_H
#define CS_METRICS_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "metrics.h"

enum cs_metrics_verdict {
	CS_MREQ_MORE,          /* the head is not whole yet, nothing wrong so far */
	CS_MREQ_SERVE,         /* GET or HEAD /metrics, whole */
	CS_MREQ_BAD,           /* 400: not HTTP/1.x as RFC 9112 frames it */
	CS_MREQ_NOT_FOUND,     /* 404: another path */
	CS_MREQ_NOT_ALLOWED,   /* 405: another method */
	CS_MREQ_TOO_LARGE,     /* 431: the head outgrew max_len */
};

struct cs_metrics_request {
	enum cs_metrics_verdict verdict;
	size_t head_len;       /* CS_MREQ_SERVE: bytes up to and with the blank line */
	bool head_only;        /* HEAD: the answer's head without its body */
	bool keep_alive;       /* the client may send another request on the connection */
	enum cs_metrics_format format;
};

/*
 * Judge buf[0, len), the start of what a client sent, with a head of at
 * most max_len bytes allowed. Bytes after the head (a pipelined request)
 * are left for the next call, from buf + head_len.
 */
void cs_metrics_request_parse(const char *buf, size_t len, size_t max_len, struct cs_metrics_request *req);

/* The status line's code and reason for a refusal (NULL for MORE and SERVE). */
const char *cs_metrics_verdict_status(enum cs_metrics_verdict verdict);

#endif /* CS_METRICS_REQUEST_H */
