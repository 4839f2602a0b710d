// SPDX-License-Identifier: BSD-2-Clause
#include "csload_http.h"

#include <stdio.h>
#include <string.h>

#define MAX_CHUNK_LINE 1024
#define MAX_CHUNK_SIZE (UINT64_C(1) << 60)

void csl_http_resp_init(struct csl_http_resp *r)
{
	memset(r, 0, sizeof(*r));
	r->state = CSL_HTTP_HEAD;
}

int csl_http_request(char *buf, size_t size, const char *path, const char *host_header,
		     bool keepalive)
{
	int n = snprintf(buf, size,
			 "GET %s HTTP/1.1\r\n"
			 "Host: %s\r\n"
			 "User-Agent: csload/1\r\n"
			 "Accept: */*\r\n"
			 "%s"
			 "\r\n",
			 path, host_header, keepalive ? "" : "Connection: close\r\n");
	if (n < 0 || (size_t)n >= size)
		return -1;
	return n;
}

static char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* Case-insensitive compare of [s, s+len) with the lower-case word w. */
static bool word_eq(const char *s, size_t len, const char *w)
{
	size_t wl = strlen(w);
	if (len != wl)
		return false;
	for (size_t i = 0; i < len; i++)
		if (lower(s[i]) != w[i])
			return false;
	return true;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* Trims spaces, tabs and a final CR off [*s, *s + *len). */
static void trim(const char **s, size_t *len)
{
	while (*len > 0 && is_space(**s)) {
		(*s)++;
		(*len)--;
	}
	while (*len > 0 && (is_space((*s)[*len - 1]) || (*s)[*len - 1] == '\r'))
		(*len)--;
}

/*
 * Offset just past the blank line that ends the head in buf[0, len), or 0
 * when it is not there yet. Accepts CRLF and bare LF line ends.
 */
static size_t head_end(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		p++;
		if (p < end && *p == '\n')
			return (size_t)(p + 1 - buf);
		if (p + 1 < end && p[0] == '\r' && p[1] == '\n')
			return (size_t)(p + 2 - buf);
	}
	return 0;
}

struct head_info {
	bool has_length;
	uint64_t length;
	bool chunked;
	bool te_other; /* a Transfer-Encoding other than chunked last */
	bool conn_close;
	bool conn_keepalive;
};

/* "HTTP/1.x SSS[ reason]" */
static int parse_status_line(struct csl_http_resp *r, const char *s, size_t len)
{
	if (len < 12 || memcmp(s, "HTTP/1.", 7) != 0 || s[7] < '0' || s[7] > '9' || s[8] != ' ')
		return -1;
	for (int i = 9; i < 12; i++)
		if (s[i] < '0' || s[i] > '9')
			return -1;
	if (len > 12 && s[12] != ' ')
		return -1;
	r->minor_version = s[7] - '0';
	r->status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
	if (r->status < 100)
		return -1;
	return 0;
}

/* Comma-separated tokens of a Connection header. */
static void parse_connection(struct head_info *h, const char *v, size_t len)
{
	size_t i = 0;
	while (i < len) {
		size_t start = i;
		while (i < len && v[i] != ',')
			i++;
		const char *tok = v + start;
		size_t tl = i - start;
		trim(&tok, &tl);
		if (word_eq(tok, tl, "close"))
			h->conn_close = true;
		else if (word_eq(tok, tl, "keep-alive"))
			h->conn_keepalive = true;
		i++; /* the comma */
	}
}

static int parse_header(struct head_info *h, const char *s, size_t len)
{
	const char *colon = memchr(s, ':', len);
	if (!colon || colon == s)
		return -1;
	size_t nlen = (size_t)(colon - s);
	for (size_t i = 0; i < nlen; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return -1; /* no whitespace inside or before the colon */
	const char *v = colon + 1;
	size_t vlen = len - nlen - 1;
	trim(&v, &vlen);

	if (word_eq(s, nlen, "content-length")) {
		uint64_t n = 0;
		if (vlen == 0 || vlen > 18)
			return -1;
		for (size_t i = 0; i < vlen; i++) {
			if (v[i] < '0' || v[i] > '9')
				return -1;
			n = n * 10 + (uint64_t)(v[i] - '0');
		}
		if (h->has_length && h->length != n)
			return -1; /* conflicting lengths: request smuggling territory */
		h->has_length = true;
		h->length = n;
	} else if (word_eq(s, nlen, "transfer-encoding")) {
		/* Only the last coding matters: chunked must be last to frame the body. */
		const char *last = v;
		size_t ll = vlen;
		const char *comma = NULL;
		for (size_t i = 0; i < vlen; i++)
			if (v[i] == ',')
				comma = v + i;
		if (comma) {
			last = comma + 1;
			ll = (size_t)(v + vlen - last);
		}
		trim(&last, &ll);
		if (word_eq(last, ll, "chunked")) {
			h->chunked = true;
			h->te_other = false;
		} else {
			h->chunked = false;
			h->te_other = true;
		}
	} else if (word_eq(s, nlen, "connection")) {
		parse_connection(h, v, vlen);
	}
	return 0;
}

/* Parses a complete head buf[0, len) and sets the body state. */
static int parse_head(struct csl_http_resp *r, const char *buf, size_t len)
{
	struct head_info h = { 0 };
	const char *p = buf, *end = buf + len;
	bool first = true;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			return -1; /* cannot happen: head_end() found the blank line */
		size_t ll = (size_t)(nl - p);
		if (ll > 0 && p[ll - 1] == '\r')
			ll--;
		if (first) {
			if (parse_status_line(r, p, ll) < 0)
				return -1;
			first = false;
		} else if (ll == 0) {
			break; /* the blank line */
		} else if (is_space(p[0])) {
			/* obsolete line folding: continues the previous value, ignored */
		} else if (parse_header(&h, p, ll) < 0) {
			return -1;
		}
		p = nl + 1;
	}

	r->close = h.conn_close || (r->minor_version == 0 && !h.conn_keepalive);
	if (r->status == 101)
		return -1; /* we never ask for an upgrade */
	if (r->status < 200 || r->status == 204 || r->status == 304) {
		r->state = CSL_HTTP_DONE; /* no body; 1xx is handled by the caller */
	} else if (h.chunked) {
		r->state = CSL_HTTP_CHUNK_SIZE;
	} else if (h.has_length && !h.te_other) {
		r->remaining = h.length;
		r->state = h.length ? CSL_HTTP_BODY_LENGTH : CSL_HTTP_DONE;
	} else {
		/* another transfer coding, or no length: the body ends at EOF */
		r->state = CSL_HTTP_BODY_EOF;
		r->close = true;
	}
	return 0;
}

/* "1a2b[ ;ext]" with the line end already cut off. */
static int parse_chunk_size(const char *s, size_t len, uint64_t *out)
{
	uint64_t n = 0;
	size_t i = 0;
	for (; i < len; i++) {
		char c = lower(s[i]);
		unsigned int d;
		if (c >= '0' && c <= '9')
			d = (unsigned int)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned int)(c - 'a' + 10);
		else
			break;
		n = n * 16 + d;
		if (n > MAX_CHUNK_SIZE)
			return -1;
	}
	if (i == 0)
		return -1;
	while (i < len && is_space(s[i]))
		i++;
	if (i < len && s[i] != ';')
		return -1;
	*out = n;
	return 0;
}

/* What a step of csl_http_resp_feed() returns when the bytes it has do not
 * hold the whole head or line it needs. */
#define NEED_MORE (-2)

/*
 * Each step below takes the avail bytes at p (avail > 0) in r's state and
 * returns how many it consumed (0 too can be progress: a state change),
 * NEED_MORE, or -1 for a malformed response.
 */
static ssize_t feed_head(struct csl_http_resp *r, const char *p, size_t avail)
{
	size_t hl = head_end(p, avail);
	if (hl == 0)
		return avail >= CSL_HTTP_MAX_HEADER ? -1 : NEED_MORE;
	if (hl > CSL_HTTP_MAX_HEADER)
		return -1;
	if (parse_head(r, p, hl) < 0)
		return -1;
	if (r->status < 200) {
		/* An interim 1xx response: the real one follows. */
		r->status = 0;
		r->close = false;
		r->state = CSL_HTTP_HEAD;
	}
	return (ssize_t)hl;
}

static ssize_t feed_body(struct csl_http_resp *r, size_t avail)
{
	uint64_t take = r->remaining < avail ? r->remaining : avail;
	r->remaining -= take;
	r->body_bytes += take;
	if (r->remaining == 0) {
		if (r->state == CSL_HTTP_BODY_LENGTH) {
			r->state = CSL_HTTP_DONE;
		} else {
			r->state = CSL_HTTP_CHUNK_END;
			r->chunk_cr = false;
		}
	}
	return (ssize_t)take;
}

/* The CRLF after a chunk's data. */
static ssize_t feed_chunk_end(struct csl_http_resp *r, const char *p)
{
	if (!r->chunk_cr && p[0] == '\r') {
		r->chunk_cr = true;
		return 1;
	}
	if (p[0] == '\n') {
		r->state = CSL_HTTP_CHUNK_SIZE;
		return 1;
	}
	return -1;
}

/* A chunk-size line, or a trailer line (an empty one ends the response). */
static ssize_t feed_chunk_line(struct csl_http_resp *r, const char *p, size_t avail)
{
	const char *nl = memchr(p, '\n', avail);
	if (!nl)
		return avail >= MAX_CHUNK_LINE ? -1 : NEED_MORE;
	size_t ll = (size_t)(nl - p);
	if (ll >= MAX_CHUNK_LINE)
		return -1;
	ssize_t used = (ssize_t)(ll + 1);
	if (ll > 0 && p[ll - 1] == '\r')
		ll--;
	if (r->state == CSL_HTTP_TRAILER) {
		if (ll == 0)
			r->state = CSL_HTTP_DONE;
		return used;
	}
	uint64_t size;
	if (parse_chunk_size(p, ll, &size) < 0)
		return -1;
	if (size == 0) {
		r->state = CSL_HTTP_TRAILER;
	} else {
		r->remaining = size;
		r->state = CSL_HTTP_CHUNK_DATA;
	}
	return used;
}

static ssize_t feed_step(struct csl_http_resp *r, const char *p, size_t avail)
{
	switch (r->state) {
	case CSL_HTTP_HEAD:
		return feed_head(r, p, avail);
	case CSL_HTTP_BODY_LENGTH:
	case CSL_HTTP_CHUNK_DATA:
		return feed_body(r, avail);
	case CSL_HTTP_CHUNK_END:
		return feed_chunk_end(r, p);
	case CSL_HTTP_CHUNK_SIZE:
	case CSL_HTTP_TRAILER:
		return feed_chunk_line(r, p, avail);
	case CSL_HTTP_BODY_EOF:
		r->body_bytes += avail;
		return (ssize_t)avail;
	case CSL_HTTP_DONE:
		break;
	}
	return 0;
}

ssize_t csl_http_resp_feed(struct csl_http_resp *r, const char *buf, size_t len)
{
	size_t pos = 0;

	while (pos < len && r->state != CSL_HTTP_DONE) {
		ssize_t n = feed_step(r, buf + pos, len - pos);
		if (n == NEED_MORE)
			break;
		if (n < 0)
			return -1;
		pos += (size_t)n;
	}
	r->total_bytes += pos;
	return (ssize_t)pos;
}

bool csl_http_resp_eof(struct csl_http_resp *r)
{
	if (r->state == CSL_HTTP_BODY_EOF) {
		r->state = CSL_HTTP_DONE;
		return true;
	}
	return r->state == CSL_HTTP_DONE;
}
