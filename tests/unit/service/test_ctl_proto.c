// SPDX-License-Identifier: BSD-2-Clause
/* The control socket's framing and payloads (daemon/service/ctl_proto.c). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_proto.h"

/* A whole frame in buf; returns its length. */
static size_t frame(uint8_t *buf, uint16_t type, const char *payload)
{
	size_t len = payload ? strlen(payload) : 0;
	cs_ctl_encode_header(buf, type, (uint32_t)len);
	if (len)
		memcpy(buf + CS_CTL_HEADER_LEN, payload, len);
	return CS_CTL_HEADER_LEN + len;
}

Test(ctl_proto, header_round_trip_and_layout)
{
	uint8_t buf[CS_CTL_HEADER_LEN];
	cs_ctl_encode_header(buf, CS_CTL_SNAPSHOT, 0x01020304);
	cr_expect_eq(memcmp(buf, "CSCT", 4), 0);
	/* little-endian on the wire, whatever the host */
	cr_expect_eq(buf[4], 1);
	cr_expect_eq(buf[5], 0);
	cr_expect_eq(buf[6], CS_CTL_SNAPSHOT);
	cr_expect_eq(buf[8], 0x04);
	cr_expect_eq(buf[11], 0x01);
	struct cs_ctl_header hdr;
	cr_expect_eq(cs_ctl_decode_header(buf, sizeof(buf), UINT32_MAX, &hdr), 0);
	cr_expect_eq(hdr.type, CS_CTL_SNAPSHOT);
	cr_expect_eq(hdr.length, 0x01020304u);
	cr_expect_eq(hdr.version, CS_CTL_VERSION);
}

Test(ctl_proto, truncated_header_asks_for_more)
{
	uint8_t buf[CS_CTL_HEADER_LEN];
	cs_ctl_encode_header(buf, CS_CTL_HELLO, 4);
	struct cs_ctl_header hdr;
	for (size_t len = 1; len < CS_CTL_HEADER_LEN; len++)
		cr_expect_eq(cs_ctl_decode_header(buf, len, 100, &hdr), -EAGAIN, "at %zu bytes", len);
}

Test(ctl_proto, bad_magic_is_known_from_its_first_byte)
{
	struct cs_ctl_header hdr;
	cr_expect_eq(cs_ctl_decode_header((const uint8_t *)"G", 1, 100, &hdr), -EPROTO);
	cr_expect_eq(cs_ctl_decode_header((const uint8_t *)"GET / HTTP/1.1\r\n", 16, 100, &hdr), -EPROTO);
	cr_expect_eq(cs_ctl_decode_header((const uint8_t *)"CSCx", 4, 100, &hdr), -EPROTO);
	cr_expect_eq(cs_ctl_error_for(-EPROTO), CS_CTL_ERR_BAD_MAGIC);
}

Test(ctl_proto, other_version_reserved_bits_and_oversize_are_refused)
{
	uint8_t buf[CS_CTL_HEADER_LEN];
	struct cs_ctl_header hdr;
	cs_ctl_encode_header(buf, CS_CTL_HELLO, 0);
	buf[4] = 2;
	cr_expect_eq(cs_ctl_decode_header(buf, sizeof(buf), 100, &hdr), -EPROTONOSUPPORT);
	cr_expect_eq(hdr.version, 2);
	cr_expect_eq(cs_ctl_error_for(-EPROTONOSUPPORT), CS_CTL_ERR_VERSION);

	cs_ctl_encode_header(buf, CS_CTL_HELLO, 0);
	buf[15] = 1;
	cr_expect_eq(cs_ctl_decode_header(buf, sizeof(buf), 100, &hdr), -EPROTO);

	cs_ctl_encode_header(buf, CS_CTL_SNAPSHOT, CS_CTL_REQUEST_MAX);
	cr_expect_eq(cs_ctl_decode_header(buf, sizeof(buf), CS_CTL_REQUEST_MAX, &hdr), 0);
	cs_ctl_encode_header(buf, CS_CTL_SNAPSHOT, CS_CTL_REQUEST_MAX + 1);
	cr_expect_eq(cs_ctl_decode_header(buf, sizeof(buf), CS_CTL_REQUEST_MAX, &hdr), -EMSGSIZE);
	cr_expect_eq(hdr.length, CS_CTL_REQUEST_MAX + 1);
	cr_expect_eq(cs_ctl_error_for(-EMSGSIZE), CS_CTL_ERR_TOO_BIG);
}

Test(ctl_proto, reader_reassembles_frames_split_at_every_byte)
{
	uint8_t stream[256];
	size_t len = frame(stream, CS_CTL_HELLO, "abcd");
	len += frame(stream + len, CS_CTL_RESET, NULL);
	len += frame(stream + len, CS_CTL_SNAPSHOT, "12345678");

	/* Every way of cutting the stream in two, and byte by byte. */
	for (size_t cut = 0; cut <= len; cut++) {
		struct cs_ctl_reader reader;
		cs_ctl_reader_init(&reader, CS_CTL_REQUEST_MAX);
		struct cs_ctl_header hdr;
		const uint8_t *payload;
		uint16_t types[3];
		int frames = 0, got;
		cr_assert_eq(cs_ctl_reader_push(&reader, stream, cut), 0);
		while ((got = cs_ctl_reader_next(&reader, &hdr, &payload)) == 1)
			types[frames++] = hdr.type;
		cr_assert_eq(got, 0);
		cr_assert_eq(cs_ctl_reader_push(&reader, stream + cut, len - cut), 0);
		while ((got = cs_ctl_reader_next(&reader, &hdr, &payload)) == 1) {
			cr_assert_lt(frames, 3);
			types[frames++] = hdr.type;
			if (hdr.type == CS_CTL_SNAPSHOT)
				cr_expect_eq(memcmp(payload, "12345678", 8), 0);
		}
		cr_assert_eq(got, 0);
		cr_expect_eq(frames, 3, "cut at %zu", cut);
		cr_expect_eq(types[0], CS_CTL_HELLO);
		cr_expect_eq(types[1], CS_CTL_RESET);
		cr_expect_eq(types[2], CS_CTL_SNAPSHOT);
		cr_expect_eq(cs_ctl_reader_pending(&reader), 0);
		cs_ctl_reader_free(&reader);
	}

	struct cs_ctl_reader reader;
	cs_ctl_reader_init(&reader, CS_CTL_REQUEST_MAX);
	int frames = 0;
	for (size_t i = 0; i < len; i++) {
		struct cs_ctl_header hdr;
		const uint8_t *payload;
		cr_assert_eq(cs_ctl_reader_push(&reader, stream + i, 1), 0);
		while (cs_ctl_reader_next(&reader, &hdr, &payload) == 1)
			frames++;
	}
	cr_expect_eq(frames, 3);
	cs_ctl_reader_free(&reader);
}

Test(ctl_proto, reader_truncated_frame_stays_pending)
{
	uint8_t stream[64];
	size_t len = frame(stream, CS_CTL_SNAPSHOT, "12345678");
	struct cs_ctl_reader reader;
	cs_ctl_reader_init(&reader, CS_CTL_REQUEST_MAX);
	struct cs_ctl_header hdr;
	const uint8_t *payload;
	cs_ctl_reader_push(&reader, stream, len - 1);
	cr_expect_eq(cs_ctl_reader_next(&reader, &hdr, &payload), 0);
	cr_expect_eq(cs_ctl_reader_pending(&reader), len - 1);
	cs_ctl_reader_free(&reader);
}

Test(ctl_proto, reader_errors_are_sticky)
{
	uint8_t stream[64];
	size_t len = frame(stream, CS_CTL_HELLO, "abcd");
	struct cs_ctl_reader reader;
	cs_ctl_reader_init(&reader, 2); /* HELLO's 4 bytes are over this limit */
	struct cs_ctl_header hdr;
	const uint8_t *payload;
	cs_ctl_reader_push(&reader, stream, len);
	cr_expect_eq(cs_ctl_reader_next(&reader, &hdr, &payload), -EMSGSIZE);
	/* Whatever follows, the stream is out of step: no frame comes out of it. */
	len = frame(stream, CS_CTL_RESET, NULL);
	cs_ctl_reader_push(&reader, stream, len);
	cr_expect_eq(cs_ctl_reader_next(&reader, &hdr, &payload), -EMSGSIZE);
	cs_ctl_reader_free(&reader);

	cs_ctl_reader_init(&reader, 100);
	cs_ctl_reader_push(&reader, "XXXX", 4);
	cr_expect_eq(cs_ctl_reader_next(&reader, &hdr, &payload), -EPROTO);
	cs_ctl_reader_free(&reader);
}

Test(ctl_proto, oversized_length_is_refused_before_the_payload_arrives)
{
	/* A header that announces 4 GiB: refused at once, nothing allocated for it. */
	uint8_t buf[CS_CTL_HEADER_LEN];
	cs_ctl_encode_header(buf, CS_CTL_SNAPSHOT, UINT32_MAX);
	struct cs_ctl_reader reader;
	cs_ctl_reader_init(&reader, CS_CTL_REQUEST_MAX);
	struct cs_ctl_header hdr;
	const uint8_t *payload;
	cs_ctl_reader_push(&reader, buf, sizeof(buf));
	cr_expect_eq(cs_ctl_reader_next(&reader, &hdr, &payload), -EMSGSIZE);
	cr_expect_leq(reader.cap, 4096);
	cs_ctl_reader_free(&reader);
}

Test(ctl_proto, hello_negotiation)
{
	uint8_t buf[CS_CTL_HELLO_LEN];
	uint16_t min, max;
	cs_ctl_hello_encode(buf, 1, 3);
	cr_expect_eq(cs_ctl_hello_decode(buf, sizeof(buf), &min, &max), 0);
	cr_expect_eq(min, 1);
	cr_expect_eq(max, 3);
	cr_expect_eq(cs_ctl_negotiate(1, 3), CS_CTL_VERSION);
	cr_expect_eq(cs_ctl_negotiate(2, 5), 0);
	cr_expect_eq(cs_ctl_hello_decode(buf, 3, &min, &max), -EINVAL);
	cs_ctl_hello_encode(buf, 3, 1);
	cr_expect_eq(cs_ctl_hello_decode(buf, sizeof(buf), &min, &max), -EINVAL);
}

Test(ctl_proto, view_request)
{
	uint8_t buf[CS_CTL_VIEW_LEN];
	struct cs_ctl_view_request in = { .format = CS_CTL_FORMAT_TEXT, .slowest = 300, .tail_milli_pct = 99900 }, out;
	cs_ctl_view_encode(buf, &in);
	cr_expect_eq(cs_ctl_view_decode(buf, sizeof(buf), &out), 0);
	cr_expect_eq(out.format, CS_CTL_FORMAT_TEXT);
	cr_expect_eq(out.slowest, 300);
	cr_expect_eq(out.tail_milli_pct, 99900);
	in.slowest = 513;
	cs_ctl_view_encode(buf, &in);
	cr_expect_eq(cs_ctl_view_decode(buf, sizeof(buf), &out), -EINVAL, "more than the 512 kept");
	in.slowest = 0;
	cs_ctl_view_encode(buf, &in);
	cr_expect_eq(cs_ctl_view_decode(buf, 0, &out), 0, "empty: the defaults");
	cr_expect_eq(out.format, CS_CTL_FORMAT_JSON);
	cr_expect_eq(out.tail_milli_pct, 0);
	cr_expect_eq(cs_ctl_view_decode(buf, 7, &out), -EINVAL);
	buf[0] = 7;
	cr_expect_eq(cs_ctl_view_decode(buf, sizeof(buf), &out), -EINVAL, "unknown format");
	in.tail_milli_pct = 100000;
	cs_ctl_view_encode(buf, &in);
	cr_expect_eq(cs_ctl_view_decode(buf, sizeof(buf), &out), -EINVAL, "p100 is no tail");
	in.tail_milli_pct = 49999;
	cs_ctl_view_encode(buf, &in);
	cr_expect_eq(cs_ctl_view_decode(buf, sizeof(buf), &out), -EINVAL);
}

Test(ctl_proto, error_payload_is_cut_and_made_printable)
{
	uint8_t buf[32];
	size_t len = cs_ctl_error_encode(buf, sizeof(buf), CS_CTL_ERR_TOO_BIG, "a message longer than the buffer has room for");
	cr_expect_eq(len, sizeof(buf));
	uint16_t code;
	char text[16];
	cr_expect_eq(cs_ctl_error_decode(buf, len, &code, text, sizeof(text)), 0);
	cr_expect_eq(code, CS_CTL_ERR_TOO_BIG);
	cr_expect_str_eq(text, "a message longe");
	uint8_t hostile[] = { 1, 0, 0, 0, 'o', 'k', 0x1b, '[', '2', 'J' };
	char shown[32];
	cs_ctl_error_decode(hostile, sizeof(hostile), &code, shown, sizeof(shown));
	cr_expect_str_eq(shown, "ok?[2J", "no escape sequence reaches the terminal");
	cr_expect_eq(cs_ctl_error_decode(buf, 3, &code, text, sizeof(text)), -EINVAL);
}
