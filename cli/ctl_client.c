// SPDX-License-Identifier: BSD-2-Clause
#include "ctl_client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "errmsg.h"
#include "probes.h"

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cs_ctl_send(struct cs_ctl_conn *conn, uint16_t type, const void *payload, size_t len)
{
	uint8_t header[CS_CTL_HEADER_LEN];
	cs_ctl_encode_header(header, type, (uint32_t)len);
	struct iovec parts[2] = { { header, sizeof(header) }, { (void *)payload, len } };
	struct msghdr msg = { .msg_iov = parts, .msg_iovlen = len ? 2 : 1 };
	size_t total = sizeof(header) + len, sent = 0;
	int64_t deadline = now_ms() + CS_CTL_TIMEOUT_MS;
	while (sent < total) {
		ssize_t n = sendmsg(conn->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				return -errno;
			struct pollfd pfd = { .fd = conn->fd, .events = POLLOUT };
			int64_t left = deadline - now_ms();
			if (left <= 0 || poll(&pfd, 1, (int)left) == 0)
				return -ETIMEDOUT;
			continue;
		}
		sent += (size_t)n;
		/* Move the iovecs past what went out. */
		size_t skip = (size_t)n;
		while (msg.msg_iovlen && skip >= msg.msg_iov[0].iov_len) {
			skip -= msg.msg_iov[0].iov_len;
			msg.msg_iov++;
			msg.msg_iovlen--;
		}
		if (msg.msg_iovlen) {
			msg.msg_iov[0].iov_base = (char *)msg.msg_iov[0].iov_base + skip;
			msg.msg_iov[0].iov_len -= skip;
		}
	}
	return 0;
}

int cs_ctl_recv(struct cs_ctl_conn *conn, int timeout_ms, struct cs_ctl_header *hdr, const uint8_t **payload,
		char *errmsg, size_t errlen)
{
	int64_t deadline = now_ms() + timeout_ms;
	for (;;) {
		int got = cs_ctl_reader_next(&conn->reader, hdr, payload);
		if (got < 0)
			return cs_fail(errmsg, errlen, "the daemon at %s sent something unreadable (%s)", conn->path,
				       strerror(-got));
		if (got > 0) {
			if (hdr->type != CS_CTL_ERROR)
				return 1;
			uint16_t code = 0;
			char text[256];
			if (cs_ctl_error_decode(*payload, hdr->length, &code, text, sizeof(text)))
				snprintf(text, sizeof(text), "an unreadable error");
			return cs_fail(errmsg, errlen, "the daemon refused: %s", text);
		}
		/* timeout_ms 0 still takes what has arrived: one poll that does not wait. */
		int64_t left = deadline - now_ms();
		struct pollfd pfd = { .fd = conn->fd, .events = POLLIN };
		int ready = poll(&pfd, 1, left > 0 ? (int)left : 0);
		if (ready < 0 && errno != EINTR)
			return cs_fail(errmsg, errlen, "poll: %s", strerror(errno));
		if (ready <= 0) {
			if (left <= 0)
				return 0;
			continue;
		}
		uint8_t buf[65536];
		ssize_t n = recv(conn->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0)
			return cs_fail(errmsg, errlen, "the daemon closed the connection");
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return cs_fail(errmsg, errlen, "reading from %s: %s", conn->path, strerror(errno));
		}
		if (cs_ctl_reader_push(&conn->reader, buf, (size_t)n))
			return cs_fail(errmsg, errlen, "out of memory");
	}
}

int cs_ctl_call(struct cs_ctl_conn *conn, uint16_t type, const void *payload, size_t len,
		struct cs_ctl_header *hdr, const uint8_t **reply, char *errmsg, size_t errlen)
{
	int err = cs_ctl_send(conn, type, payload, len);
	if (err) {
		/* Refused at once (not root, too many clients): its reason may be waiting. */
		if (cs_ctl_recv(conn, 0, hdr, reply, errmsg, errlen) < 0)
			return -1;
		return cs_fail(errmsg, errlen, "cannot send to the daemon at %s: %s", conn->path, strerror(-err));
	}
	int got = cs_ctl_recv(conn, CS_CTL_TIMEOUT_MS, hdr, reply, errmsg, errlen);
	if (got == 0)
		return cs_fail(errmsg, errlen, "the daemon at %s did not answer within %d s", conn->path,
			       CS_CTL_TIMEOUT_MS / 1000);
	if (got < 0)
		return -1;
	if (hdr->type != (type | CS_CTL_RESPONSE))
		return cs_fail(errmsg, errlen, "the daemon answered %s to %s", cs_ctl_type_name(hdr->type),
			       cs_ctl_type_name(type));
	return 0;
}

int cs_ctl_connect(struct cs_ctl_conn *conn, const char *path, char *errmsg, size_t errlen)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	memset(conn, 0, sizeof(*conn));
	conn->fd = -1;
	if (strlen(path) >= sizeof(addr.sun_path)) {
		cs_fail(errmsg, errlen, "--socket: the path must be shorter than %zu bytes", sizeof(addr.sun_path));
		return -ENAMETOOLONG;
	}
	strcpy(addr.sun_path, path);
	strcpy(conn->path, path);
	cs_ctl_reader_init(&conn->reader, CS_CTL_RESPONSE_MAX);
	conn->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (conn->fd < 0) {
		int err = -errno;
		cs_fail(errmsg, errlen, "cannot create a socket: %s", strerror(errno));
		return err;
	}
	if (connect(conn->fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		int err = -errno;
		if (err == -ENOENT || err == -ECONNREFUSED)
			cs_fail(errmsg, errlen, "no connscoped is running (nothing answers on %s): start one with "
				"'connscoped --port PORT', or use 'connscope attach --port PORT'", path);
		else if (err == -EACCES || err == -EPERM)
			cs_fail(errmsg, errlen, "cannot reach the daemon at %s: %s (run as root or as the daemon's user)",
				path, strerror(-err));
		else
			cs_fail(errmsg, errlen, "cannot reach the daemon at %s: %s", path, strerror(-err));
		cs_ctl_close(conn);
		return err;
	}
	uint8_t hello[CS_CTL_HELLO_LEN];
	cs_ctl_hello_encode(hello, CS_CTL_VERSION, CS_CTL_VERSION);
	struct cs_ctl_header hdr;
	const uint8_t *reply;
	if (cs_ctl_call(conn, CS_CTL_HELLO, hello, sizeof(hello), &hdr, &reply, errmsg, errlen)) {
		cs_ctl_close(conn);
		return -EPROTO;
	}
	return 0;
}

void cs_ctl_close(struct cs_ctl_conn *conn)
{
	if (conn->fd >= 0)
		close(conn->fd);
	conn->fd = -1;
	cs_ctl_reader_free(&conn->reader);
}

int cs_ctl_ask(const char *path, uint16_t type, const void *payload, size_t len, cs_ctl_show_fn show, void *ctx)
{
	char errmsg[CS_ERRMSG_LEN];
	struct cs_ctl_conn conn;
	if (cs_ctl_connect(&conn, path, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscope: %s\n", errmsg);
		return 1;
	}
	struct cs_ctl_header hdr;
	const uint8_t *reply;
	int rc;
	if (cs_ctl_call(&conn, type, payload, len, &hdr, &reply, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscope: %s\n", errmsg);
		rc = 1;
	} else {
		rc = show(reply, hdr.length, ctx);
	}
	cs_ctl_close(&conn);
	return rc;
}
