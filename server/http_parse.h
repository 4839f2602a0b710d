/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * HTTP/1.x request-header parser, pure code: no I/O, no allocation, no
 * global state. In the manner of picohttpparser, the parser hands back
 * pointers into the caller's buffer and returns
 *
 *   > 0                  bytes consumed: the request line, the header
 *                        fields and the empty line that ends them;
 *   CS_HTTP_INCOMPLETE   (-2) the bytes so far are a valid prefix of a
 *                        request header: read more and call again;
 *   CS_HTTP_BAD          (-1) not a request we accept (answer 400).
 *
 * It never reads past buf + len, so a request may sit at the very end of
 * a mapping. It is strict where leniency would let two parsers disagree
 * about framing (request smuggling): a single SP between request-line
 * parts, no whitespace between a field name and its colon, no obs-fold,
 * no control characters. It is lenient where RFC 9112 asks for it: bare
 * LF ends a line, and empty lines before the request line are skipped.
 *
 * The size limit is the caller's: this parser accepts a header of any
 * length, so the caller answers 413 once its buffer is full and the
 * parser still says CS_HTTP_INCOMPLETE.
 */
#ifndef CS_HTTP_PARSE_H
#define CS_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CS_HTTP_BAD (-1)
#define CS_HTTP_INCOMPLETE (-2)

/* More header fields than this is a bad request (real clients send ~10). */
#define CS_HTTP_MAX_HEADERS 64

struct cs_http_header {
	const char *name;  /* field name as sent (compare case-insensitively) */
	const char *value; /* field value, leading and trailing SP/HTAB removed */
	size_t name_len;
	size_t value_len;
};

struct cs_http_request {
	const char *method; /* e.g. "GET", not NUL-terminated */
	const char *target; /* request-target as sent, query string included */
	size_t method_len;
	size_t target_len;
	int minor_version; /* 0 for HTTP/1.0, 1 for HTTP/1.1 */
	size_t num_headers;
	struct cs_http_header headers[CS_HTTP_MAX_HEADERS];
};

/*
 * Parses the request header at the start of buf[0..len).
 *
 * last_len is the length of buf at the previous call for this same request
 * that returned CS_HTTP_INCOMPLETE (0 on the first call). With it, the
 * parser first looks for the end of the header only in the new bytes and
 * answers CS_HTTP_INCOMPLETE without a full parse while there is none, so
 * a client that sends a byte at a time costs O(n) and not O(n^2).
 *
 * On success req describes the request; on any other result its content
 * is unspecified. Buffers longer than INT_MAX bytes are examined only in
 * their first INT_MAX bytes.
 */
int cs_http_parse_request(const char *buf, size_t len, size_t last_len,
			  struct cs_http_request *req);

/* How the request is framed and whether the client wants the connection
 * kept open afterwards, read from its header fields. */
struct cs_http_framing {
	uint64_t content_length; /* body bytes that follow; 0 without one */
	bool has_content_length;
	bool has_transfer_encoding; /* the body length is in-band (chunked) */
	bool keep_alive;            /* HTTP/1.1 unless "close"; HTTP/1.0 only
				     * with "keep-alive" */
};

/*
 * Fills framing from a parsed request. Returns 0, or CS_HTTP_BAD when the
 * framing is ambiguous: a Content-Length that is not a plain decimal
 * number or is too large, or several Content-Length fields that disagree.
 */
int cs_http_request_framing(const struct cs_http_request *req,
			    struct cs_http_framing *framing);

/* First header field named name (case-insensitive), or NULL. */
const struct cs_http_header *cs_http_find_header(const struct cs_http_request *req,
						 const char *name);

/*
 * True if the comma-separated list value[0..len) holds token, compared
 * case-insensitively, e.g. "close" in "Keep-Alive, close".
 */
bool cs_http_list_has_token(const char *value, size_t len, const char *token);

#endif /* CS_HTTP_PARSE_H */
