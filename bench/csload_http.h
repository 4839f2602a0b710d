/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * HTTP/1.1 for csload: the request text and an incremental, zero-copy
 * response parser. Pure code: bytes in, state out.
 */
#ifndef CSLOAD_HTTP_H
#define CSLOAD_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CSL_HTTP_MAX_HEADER 16384 /* a response head larger than this is bad */

enum csl_http_state {
	CSL_HTTP_HEAD,        /* status line and headers */
	CSL_HTTP_BODY_LENGTH, /* Content-Length bytes */
	CSL_HTTP_CHUNK_SIZE,  /* a chunk-size line */
	CSL_HTTP_CHUNK_DATA,  /* chunk bytes */
	CSL_HTTP_CHUNK_END,   /* the CRLF after chunk data */
	CSL_HTTP_TRAILER,     /* trailer lines after the last chunk */
	CSL_HTTP_BODY_EOF,    /* body runs to the end of the connection */
	CSL_HTTP_DONE,        /* the response is complete */
};

struct csl_http_resp {
	enum csl_http_state state;
	int status;           /* of the final (non-1xx) response */
	int minor_version;    /* HTTP/1.x */
	bool close;           /* the connection must close after this response */
	bool chunk_cr;        /* CHUNK_END: the CR was seen */
	uint64_t remaining;   /* BODY_LENGTH / CHUNK_DATA: bytes still due */
	uint64_t body_bytes;  /* body bytes seen so far */
	uint64_t total_bytes; /* all bytes consumed, head included */
};

void csl_http_resp_init(struct csl_http_resp *r);

/*
 * Feeds len bytes. Returns the number consumed (0..len), or -1 when the
 * response is malformed. It consumes as much as it can: when it stops short
 * of len, either the response is DONE (the rest belongs to no response) or
 * it needs more bytes to finish a line or the head, and the caller must
 * keep the unconsumed bytes and feed them again with what follows. A head
 * still incomplete at CSL_HTTP_MAX_HEADER bytes is malformed.
 */
ssize_t csl_http_resp_feed(struct csl_http_resp *r, const char *buf, size_t len);

/*
 * The connection reached EOF. Returns true when that completes the
 * response (a body delimited by the close), false when it was cut short.
 */
bool csl_http_resp_eof(struct csl_http_resp *r);

/*
 * Writes "GET path HTTP/1.1" with Host, User-Agent and, when !keepalive,
 * Connection: close. Returns the length, or -1 when it does not fit.
 */
int csl_http_request(char *buf, size_t size, const char *path, const char *host_header,
		     bool keepalive);

#endif /* CSLOAD_HTTP_H */
