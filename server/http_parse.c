// SPDX-License-Identifier: BSD-2-Clause
#include "http_parse.h"

#include <limits.h>
#include <string.h>
#include <strings.h>

/* RFC 9110 5.6.2 tchar: what a method or a field name is made of. */
static const bool tchar[256] = {
	['0' ... '9'] = true,
	['A' ... 'Z'] = true,
	['a' ... 'z'] = true,
	['!'] = true,
	['#'] = true,
	['$'] = true,
	['%'] = true,
	['&'] = true,
	['\''] = true,
	['*'] = true,
	['+'] = true,
	['-'] = true,
	['.'] = true,
	['^'] = true,
	['_'] = true,
	['`'] = true,
	['|'] = true,
	['~'] = true,
};

/* Request-target: visible ASCII, plus obs-text that some clients send
 * unescaped (UTF-8 paths). No SP, no controls, no DEL. */
static const bool target_char[256] = {
	[0x21 ... 0x7e] = true,
	[0x80 ... 0xff] = true,
};

/* RFC 9110 5.5 field-value: HTAB, SP, visible ASCII and obs-text. */
static const bool value_char[256] = {
	['\t'] = true,
	[0x20 ... 0x7e] = true,
	[0x80 ... 0xff] = true,
};

static bool is_tchar(char c) { return tchar[(unsigned char)c]; }
static bool is_target_char(char c) { return target_char[(unsigned char)c]; }
static bool is_value_char(char c) { return value_char[(unsigned char)c]; }
static bool is_ows(char c) { return c == ' ' || c == '\t'; }

/*
 * Does a line ending start at p (p < end)? Returns its length, 2 for CRLF
 * or 1 for a bare LF (RFC 9112 2.2 lets a recipient accept it), 0 if p is
 * not a line ending, CS_HTTP_INCOMPLETE for a CR that is the last byte and
 * CS_HTTP_BAD for a CR not followed by LF.
 */
static int line_end(const char *p, const char *end)
{
	if (*p == '\n')
		return 1;
	if (*p != '\r')
		return 0;
	if (p + 1 == end)
		return CS_HTTP_INCOMPLETE;
	return p[1] == '\n' ? 2 : CS_HTTP_BAD;
}

/*
 * Could buf hold the empty line that ends a header, in the bytes that came
 * after last_len? The line before it ends with LF, so look for LF LF or
 * LF CR LF starting up to 2 bytes before the new data (a terminator may
 * straddle the old and new bytes). A false "yes" only costs a full parse.
 */
static bool may_end_header(const char *buf, size_t len, size_t last_len)
{
	const char *end = buf + len;
	const char *p = buf + (last_len >= 2 ? last_len - 2 : 0);

	while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		if (p + 1 < end && p[1] == '\n')
			return true;
		if (p + 2 < end && p[1] == '\r' && p[2] == '\n')
			return true;
		p++;
	}
	return false;
}

/* "GET /path HTTP/1.1" CRLF. *pp advances past the line on success. */
static int parse_request_line(const char **pp, const char *end,
			      struct cs_http_request *req)
{
	static const char version_prefix[] = "HTTP/1.";
	const char *p = *pp;
	int r;

	req->method = p;
	while (p < end && is_tchar(*p))
		p++;
	if (p == end)
		return CS_HTTP_INCOMPLETE;
	if (*p != ' ' || p == req->method)
		return CS_HTTP_BAD;
	req->method_len = (size_t)(p - req->method);
	p++;

	req->target = p;
	while (p < end && is_target_char(*p))
		p++;
	if (p == end)
		return CS_HTTP_INCOMPLETE;
	if (*p != ' ' || p == req->target)
		return CS_HTTP_BAD;
	req->target_len = (size_t)(p - req->target);
	p++;

	/* Compare byte by byte so that a wrong prefix is rejected at once,
	 * before the rest of it has arrived (a TLS hello, say). */
	for (size_t i = 0; i < sizeof(version_prefix) - 1; i++, p++) {
		if (p == end)
			return CS_HTTP_INCOMPLETE;
		if (*p != version_prefix[i])
			return CS_HTTP_BAD;
	}
	if (p == end)
		return CS_HTTP_INCOMPLETE;
	if (*p < '0' || *p > '9')
		return CS_HTTP_BAD;
	req->minor_version = *p - '0';
	p++;

	if (p == end)
		return CS_HTTP_INCOMPLETE;
	r = line_end(p, end);
	if (r == 0)
		return CS_HTTP_BAD;
	if (r < 0)
		return r;
	*pp = p + r;
	return 0;
}

/* Header fields up to and including the empty line. */
static int parse_fields(const char **pp, const char *end, struct cs_http_request *req)
{
	const char *p = *pp;

	for (;;) {
		const char *name, *name_end, *value, *value_end;
		int r;

		if (p == end)
			return CS_HTTP_INCOMPLETE;
		r = line_end(p, end);
		if (r < 0)
			return r;
		if (r > 0) {
			*pp = p + r;
			return 0;
		}
		/* A line that starts with whitespace is obs-fold (RFC 9112
		 * 5.2): rejecting it is allowed and is the safe choice. */
		if (is_ows(*p))
			return CS_HTTP_BAD;

		name = p;
		while (p < end && is_tchar(*p))
			p++;
		if (p == end)
			return CS_HTTP_INCOMPLETE;
		/* No whitespace before the colon (RFC 9112 5.1: MUST reject). */
		if (*p != ':' || p == name)
			return CS_HTTP_BAD;
		name_end = p;
		p++;

		while (p < end && is_ows(*p))
			p++;
		value = p;
		while (p < end && is_value_char(*p))
			p++;
		if (p == end)
			return CS_HTTP_INCOMPLETE;
		r = line_end(p, end);
		if (r == 0)
			return CS_HTTP_BAD; /* a control character in the value */
		if (r < 0)
			return r;
		value_end = p;
		while (value_end > value && is_ows(value_end[-1]))
			value_end--;
		p += r;

		if (req->num_headers == CS_HTTP_MAX_HEADERS)
			return CS_HTTP_BAD;
		req->headers[req->num_headers++] = (struct cs_http_header){
			.name = name,
			.name_len = (size_t)(name_end - name),
			.value = value,
			.value_len = (size_t)(value_end - value),
		};
	}
}

int cs_http_parse_request(const char *buf, size_t len, size_t last_len,
			  struct cs_http_request *req)
{
	const char *p = buf;
	const char *end;
	int r;

	if (len > INT_MAX)
		len = INT_MAX;
	end = buf + len;
	req->num_headers = 0;

	if (last_len != 0 && last_len <= len && !may_end_header(buf, len, last_len))
		return CS_HTTP_INCOMPLETE;

	/* RFC 9112 2.2: ignore empty lines before the request line (some
	 * clients send a CRLF after a request body). */
	for (;;) {
		if (p == end)
			return CS_HTTP_INCOMPLETE;
		r = line_end(p, end);
		if (r < 0)
			return r;
		if (r == 0)
			break;
		p += r;
	}

	r = parse_request_line(&p, end, req);
	if (r != 0)
		return r;
	r = parse_fields(&p, end, req);
	if (r != 0)
		return r;
	return (int)(p - buf);
}

static bool token_eq(const char *s, size_t len, const char *token)
{
	return strlen(token) == len && strncasecmp(s, token, len) == 0;
}

const struct cs_http_header *cs_http_find_header(const struct cs_http_request *req,
						 const char *name)
{
	for (size_t i = 0; i < req->num_headers; i++) {
		const struct cs_http_header *h = &req->headers[i];
		if (token_eq(h->name, h->name_len, name))
			return h;
	}
	return NULL;
}

bool cs_http_list_has_token(const char *value, size_t len, const char *token)
{
	const char *p = value, *end = value + len;

	while (p < end) {
		const char *elem, *elem_end;

		while (p < end && (is_ows(*p) || *p == ','))
			p++;
		elem = p;
		while (p < end && *p != ',')
			p++;
		elem_end = p;
		while (elem_end > elem && is_ows(elem_end[-1]))
			elem_end--;
		if (elem_end > elem && token_eq(elem, (size_t)(elem_end - elem), token))
			return true;
	}
	return false;
}

/* 1*DIGIT that fits in a uint64_t; no sign, no spaces, no list. */
static int parse_content_length(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0)
		return CS_HTTP_BAD;
	for (size_t i = 0; i < len; i++) {
		unsigned int digit = (unsigned char)s[i] - '0';
		if (digit > 9 || v > (UINT64_MAX - digit) / 10)
			return CS_HTTP_BAD;
		v = v * 10 + digit;
	}
	*out = v;
	return 0;
}

int cs_http_request_framing(const struct cs_http_request *req,
			    struct cs_http_framing *framing)
{
	bool conn_close = false, conn_keep_alive = false;

	memset(framing, 0, sizeof(*framing));
	for (size_t i = 0; i < req->num_headers; i++) {
		const struct cs_http_header *h = &req->headers[i];

		if (token_eq(h->name, h->name_len, "Content-Length")) {
			uint64_t n;
			if (parse_content_length(h->value, h->value_len, &n) != 0)
				return CS_HTTP_BAD;
			/* Repeated fields must agree (RFC 9112 6.3 item 5). */
			if (framing->has_content_length && framing->content_length != n)
				return CS_HTTP_BAD;
			framing->has_content_length = true;
			framing->content_length = n;
		} else if (token_eq(h->name, h->name_len, "Transfer-Encoding")) {
			framing->has_transfer_encoding = true;
		} else if (token_eq(h->name, h->name_len, "Connection")) {
			conn_close |= cs_http_list_has_token(h->value, h->value_len, "close");
			conn_keep_alive |= cs_http_list_has_token(h->value, h->value_len,
								  "keep-alive");
		}
	}
	/* RFC 9112 9.3: "close" always wins; otherwise HTTP/1.1 persists by
	 * default and HTTP/1.0 only when asked to. */
	framing->keep_alive = !conn_close && (req->minor_version >= 1 || conn_keep_alive);
	return 0;
}
