// SPDX-License-Identifier: BSD-2-Clause
/*
 * The metrics endpoint's request reading (metrics_request.h): RFC 9112's
 * request line and header fields, as strictly as a server that answers
 * one path needs. Every byte is looked at within [buf, buf + len) only.
 */
#include "metrics_request.h"

#include <string.h>
#include <strings.h>

/* RFC 9110 5.6.2: a token's characters. */
static bool is_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A field value's characters (VCHAR, obs-text, SP, HTAB): no controls. */
static bool is_field_char(unsigned char c)
{
	return c == ' ' || c == '\t' || (c > 0x20 && c != 0x7f);
}

/* A line's end: the LF's offset, or len when the line is not whole yet. */
static size_t line_end(const char *buf, size_t from, size_t len)
{
	const char *lf = memchr(buf + from, '\n', len - from);
	return lf ? (size_t)(lf - buf) : len;
}

/* Bytes [from, to) with a CR allowed only as the last (before the LF). */
static size_t strip_cr(const char *buf, size_t from, size_t to, bool whole)
{
	return whole && to > from && buf[to - 1] == '\r' ? to - 1 : to;
}

/*
 * The request line's bytes so far, "METHOD SP TARGET SP HTTP/1.d": false
 * as soon as one of them cannot be there. whole: the line has ended.
 */
static bool request_line_ok(const char *line, size_t n, bool whole)
{
	static const char version[] = "HTTP/1.";
	size_t i = 0;
	while (i < n && is_tchar((unsigned char)line[i]))
		i++;
	if (i == n)
		return !whole;
	if (i == 0 || line[i] != ' ')
		return false;
	size_t target = ++i;
	while (i < n && line[i] > 0x20 && line[i] != 0x7f)
		i++;
	if (i == n)
		return !whole;
	if (i == target || line[i] != ' ')
		return false;
	size_t v = ++i, v_len = n - v;
	size_t cmp = v_len < sizeof(version) - 1 ? v_len : sizeof(version) - 1;
	if (memcmp(line + v, version, cmp) != 0)
		return false;
	if (v_len <= sizeof(version) - 1)
		return !whole;
	return v_len == sizeof(version) && line[n - 1] >= '0' && line[n - 1] <= '9';
}

/* The path of a whole, well-formed request line's target is /metrics (origin or absolute form). */
static bool target_is_metrics(const char *target, size_t len)
{
	static const char scheme[] = "http://";
	if (len >= sizeof(scheme) - 1 && !strncasecmp(target, scheme, sizeof(scheme) - 1)) {
		const char *path = memchr(target + sizeof(scheme) - 1, '/', len - (sizeof(scheme) - 1));
		if (!path)
			return false;
		len -= (size_t)(path - target);
		target = path;
	}
	const char *query = memchr(target, '?', len);
	size_t path_len = query ? (size_t)(query - target) : len;
	return path_len == 8 && !memcmp(target, "/metrics", 8);
}

/* The verdict on a whole request line: method, then path; sets head_only and keep_alive's default. */
static enum cs_metrics_verdict judge_request_line(const char *line, size_t n, struct cs_metrics_request *req)
{
	const char *sp = memchr(line, ' ', n);
	size_t method_len = (size_t)(sp - line);
	const char *target = sp + 1;
	const char *sp2 = memchr(target, ' ', n - method_len - 1);
	req->head_only = method_len == 4 && !memcmp(line, "HEAD", 4);
	if (!req->head_only && !(method_len == 3 && !memcmp(line, "GET", 3)))
		return CS_MREQ_NOT_ALLOWED;
	if (!target_is_metrics(target, (size_t)(sp2 - target)))
		return CS_MREQ_NOT_FOUND;
	req->keep_alive = line[n - 1] != '0'; /* HTTP/1.1 keeps the connection, 1.0 does not */
	return CS_MREQ_MORE;
}

/* A field's value without the whitespace around it. */
static void trim(const char **value, size_t *len)
{
	while (*len && ((*value)[0] == ' ' || (*value)[0] == '\t'))
		(*value)++, (*len)--;
	while (*len && ((*value)[*len - 1] == ' ' || (*value)[*len - 1] == '\t'))
		(*len)--;
}

/* Whether a comma-separated list of tokens (Connection) holds token, any case. */
static bool has_token(const char *value, size_t len, const char *token)
{
	size_t token_len = strlen(token);
	for (size_t i = 0; i < len;) {
		const char *comma = memchr(value + i, ',', len - i);
		size_t end = comma ? (size_t)(comma - value) : len;
		const char *item = value + i;
		size_t item_len = end - i;
		trim(&item, &item_len);
		if (item_len == token_len && !strncasecmp(item, token, token_len))
			return true;
		i = end + 1;
	}
	return false;
}

/* What a whole header field line changes; false when it is not one. */
static bool take_field(const char *line, size_t n, struct cs_metrics_request *req, int *hosts)
{
	size_t name_len = 0;
	while (name_len < n && is_tchar((unsigned char)line[name_len]))
		name_len++;
	if (name_len == 0 || name_len == n || line[name_len] != ':')
		return false; /* also an obs-fold line, which starts with a blank (RFC 9112 5.2) */
	const char *value = line + name_len + 1;
	size_t len = n - name_len - 1;
	for (size_t i = 0; i < len; i++)
		if (!is_field_char((unsigned char)value[i]))
			return false;
	trim(&value, &len);
	if (name_len == 4 && !strncasecmp(line, "Host", 4))
		(*hosts)++;
	else if (name_len == 6 && !strncasecmp(line, "Accept", 6) &&
		 cs_metrics_negotiate_accept(value, len) == CS_METRICS_OPENMETRICS)
		req->format = CS_METRICS_OPENMETRICS;
	else if (name_len == 10 && !strncasecmp(line, "Connection", 10)) {
		if (has_token(value, len, "close"))
			req->keep_alive = false;
		else if (has_token(value, len, "keep-alive"))
			req->keep_alive = true;
	} else if ((name_len == 14 && !strncasecmp(line, "Content-Length", 14) && !(len == 1 && value[0] == '0')) ||
		   (name_len == 17 && !strncasecmp(line, "Transfer-Encoding", 17)))
		req->keep_alive = false; /* a body is not read: answer, then close rather than misread it */
	return true;
}

/* The header fields from `at`, after a well-formed GET or HEAD /metrics line of HTTP/1.minor. */
static void judge_fields(const char *buf, size_t at, size_t len, size_t max_len, bool http11,
			 struct cs_metrics_request *req)
{
	int hosts = 0;
	while (at < len) {
		size_t end = line_end(buf, at, len);
		if (end == len)
			break;
		size_t n = strip_cr(buf, at, end, true) - at;
		if (memchr(buf + at, '\r', n)) {
			req->verdict = CS_MREQ_BAD; /* a CR anywhere but before the LF */
			return;
		}
		if (n == 0) {
			/* RFC 9112 3.2: an HTTP/1.1 request names its Host exactly once. */
			req->verdict = http11 && hosts != 1 ? CS_MREQ_BAD : CS_MREQ_SERVE;
			req->head_len = end + 1;
			return;
		}
		if (!take_field(buf + at, n, req, &hosts)) {
			req->verdict = CS_MREQ_BAD;
			return;
		}
		at = end + 1;
	}
	/* A field line under way: a control byte (a CR but as its last so far) already makes it bad. */
	for (size_t i = at; i < len; i++)
		if (!is_field_char((unsigned char)buf[i]) && !(buf[i] == '\r' && i + 1 == len)) {
			req->verdict = CS_MREQ_BAD;
			return;
		}
	req->verdict = len >= max_len ? CS_MREQ_TOO_LARGE : CS_MREQ_MORE;
}

void cs_metrics_request_parse(const char *buf, size_t len, size_t max_len, struct cs_metrics_request *req)
{
	*req = (struct cs_metrics_request){ .verdict = CS_MREQ_MORE, .format = CS_METRICS_PROMETHEUS };
	if (len > max_len)
		len = max_len; /* a head that ends past the limit is too large, whatever follows */
	size_t at = 0;
	/* RFC 9112 2.2: empty lines before the request line are ignored (a client's stray CRLF). */
	while (at < len && (buf[at] == '\n' || (buf[at] == '\r' && at + 1 < len && buf[at + 1] == '\n')))
		at += buf[at] == '\r' ? 2 : 1;
	size_t end = line_end(buf, at, len);
	bool whole = end < len;
	size_t n = strip_cr(buf, at, end, whole) - at;
	bool trailing_cr = !whole && n > 0 && buf[at + n - 1] == '\r';
	if (!request_line_ok(buf + at, trailing_cr ? n - 1 : n, whole) ||
	    memchr(buf + at, '\r', trailing_cr ? n - 1 : n)) {
		req->verdict = CS_MREQ_BAD;
		return;
	}
	if (!whole) {
		req->verdict = len >= max_len ? CS_MREQ_TOO_LARGE : CS_MREQ_MORE;
		return;
	}
	req->verdict = judge_request_line(buf + at, n, req);
	if (req->verdict != CS_MREQ_MORE)
		return;
	judge_fields(buf, end + 1, len, max_len, buf[at + n - 1] != '0', req);
}

const char *cs_metrics_verdict_status(enum cs_metrics_verdict verdict)
{
	switch (verdict) {
	case CS_MREQ_BAD:
		return "400 Bad Request";
	case CS_MREQ_NOT_FOUND:
		return "404 Not Found";
	case CS_MREQ_NOT_ALLOWED:
		return "405 Method Not Allowed";
	case CS_MREQ_TOO_LARGE:
		return "431 Request Header Fields Too Large";
	case CS_MREQ_MORE:
	case CS_MREQ_SERVE:
		break;
	}
	return NULL;
}
