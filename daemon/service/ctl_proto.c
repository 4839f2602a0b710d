// SPDX-License-Identifier: BSD-2-Clause
#include "ctl_proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* CS_CTL_MAGIC's bytes without its NUL: the wire has no terminator. */
static const uint8_t magic[4] = { 'C', 'S', 'C', 'T' };

static void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void cs_ctl_encode_header(uint8_t out[CS_CTL_HEADER_LEN], uint16_t type, uint32_t length)
{
	memcpy(out, magic, sizeof(magic));
	put_u16(out + 4, CS_CTL_VERSION);
	put_u16(out + 6, type);
	put_u32(out + 8, length);
	put_u32(out + 12, 0);
}

int cs_ctl_decode_header(const uint8_t *buf, size_t len, uint32_t max_payload, struct cs_ctl_header *hdr)
{
	/* A wrong magic is known from its first wrong byte: no need to wait for 16. */
	size_t magic_have = len < 4 ? len : 4;
	if (memcmp(buf, magic, magic_have) != 0)
		return -EPROTO;
	if (len < CS_CTL_HEADER_LEN)
		return -EAGAIN;
	hdr->version = get_u16(buf + 4);
	hdr->type = get_u16(buf + 6);
	hdr->length = get_u32(buf + 8);
	if (get_u32(buf + 12) != 0)
		return -EPROTO;
	if (hdr->version != CS_CTL_VERSION)
		return -EPROTONOSUPPORT;
	if (hdr->length > max_payload)
		return -EMSGSIZE;
	return 0;
}

enum cs_ctl_error cs_ctl_error_for(int decode_err)
{
	switch (decode_err) {
	case -EPROTONOSUPPORT:
		return CS_CTL_ERR_VERSION;
	case -EMSGSIZE:
		return CS_CTL_ERR_TOO_BIG;
	case -ENOMEM:
		return CS_CTL_ERR_INTERNAL;
	default:
		return CS_CTL_ERR_BAD_MAGIC;
	}
}

void cs_ctl_reader_init(struct cs_ctl_reader *reader, uint32_t max_payload)
{
	memset(reader, 0, sizeof(*reader));
	reader->max_payload = max_payload;
}

void cs_ctl_reader_free(struct cs_ctl_reader *reader)
{
	free(reader->buf);
	memset(reader, 0, sizeof(*reader));
}

static void drop_consumed(struct cs_ctl_reader *reader)
{
	if (!reader->consumed)
		return;
	memmove(reader->buf, reader->buf + reader->consumed, reader->have - reader->consumed);
	reader->have -= reader->consumed;
	reader->consumed = 0;
}

int cs_ctl_reader_push(struct cs_ctl_reader *reader, const void *data, size_t len)
{
	drop_consumed(reader);
	if (len > SIZE_MAX - reader->have)
		return -ENOMEM;
	size_t need = reader->have + len;
	if (need > reader->cap) {
		size_t cap = reader->cap ? reader->cap : 4096;
		while (cap < need)
			cap *= 2;
		uint8_t *bigger = realloc(reader->buf, cap);
		if (!bigger)
			return -ENOMEM;
		reader->buf = bigger;
		reader->cap = cap;
	}
	if (len)
		memcpy(reader->buf + reader->have, data, len);
	reader->have = need;
	return 0;
}

int cs_ctl_reader_next(struct cs_ctl_reader *reader, struct cs_ctl_header *hdr, const uint8_t **payload)
{
	if (reader->error)
		return reader->error;
	drop_consumed(reader);
	if (reader->have == 0)
		return 0;
	int err = cs_ctl_decode_header(reader->buf, reader->have, reader->max_payload, hdr);
	if (err == -EAGAIN)
		return 0;
	if (err) {
		reader->error = err;
		return err;
	}
	size_t frame = CS_CTL_HEADER_LEN + (size_t)hdr->length;
	if (reader->have < frame)
		return 0;
	*payload = reader->buf + CS_CTL_HEADER_LEN;
	reader->consumed = frame;
	return 1;
}

size_t cs_ctl_reader_pending(const struct cs_ctl_reader *reader)
{
	return reader->have - reader->consumed;
}

void cs_ctl_hello_encode(uint8_t out[CS_CTL_HELLO_LEN], uint16_t min_version, uint16_t max_version)
{
	put_u16(out, min_version);
	put_u16(out + 2, max_version);
}

int cs_ctl_hello_decode(const uint8_t *payload, size_t len, uint16_t *min_version, uint16_t *max_version)
{
	if (len < CS_CTL_HELLO_LEN)
		return -EINVAL;
	*min_version = get_u16(payload);
	*max_version = get_u16(payload + 2);
	return *min_version <= *max_version ? 0 : -EINVAL;
}

uint16_t cs_ctl_negotiate(uint16_t client_min, uint16_t client_max)
{
	/* One version so far: the highest both speak. */
	if (client_min <= CS_CTL_VERSION && client_max >= CS_CTL_VERSION)
		return CS_CTL_VERSION;
	return 0;
}

void cs_ctl_view_encode(uint8_t out[CS_CTL_VIEW_LEN], const struct cs_ctl_view_request *view)
{
	memset(out, 0, CS_CTL_VIEW_LEN);
	out[0] = view->format;
	out[2] = (uint8_t)(view->slowest & 0xff);
	out[3] = (uint8_t)(view->slowest >> 8);
	put_u32(out + 4, view->tail_milli_pct);
}

int cs_ctl_view_decode(const uint8_t *payload, size_t len, struct cs_ctl_view_request *view)
{
	memset(view, 0, sizeof(*view));
	if (len == 0)
		return 0;
	if (len != CS_CTL_VIEW_LEN || payload[1])
		return -EINVAL;
	view->format = payload[0];
	view->slowest = (uint16_t)(payload[2] | payload[3] << 8);
	if (view->slowest > CS_CTL_SLOWEST_MAX)
		return -EINVAL;
	view->tail_milli_pct = get_u32(payload + 4);
	if (view->format > CS_CTL_FORMAT_TEXT)
		return -EINVAL;
	/* The percentiles --tail accepts: 50 to 99.999. */
	if (view->tail_milli_pct && (view->tail_milli_pct < 50000 || view->tail_milli_pct > 99999))
		return -EINVAL;
	return 0;
}

size_t cs_ctl_error_encode(uint8_t *out, size_t cap, enum cs_ctl_error code, const char *message)
{
	if (cap < 4)
		return 0;
	put_u16(out, (uint16_t)code);
	put_u16(out + 2, 0);
	size_t len = strlen(message);
	if (len > cap - 4)
		len = cap - 4;
	/* The text travels counted (the frame's length), not NUL-terminated. */
	memcpy(out + 4, message, len); // NOLINT(bugprone-not-null-terminated-result)
	return 4 + len;
}

int cs_ctl_error_decode(const uint8_t *payload, size_t len, uint16_t *code, char *text, size_t text_len)
{
	if (len < 4 || text_len == 0)
		return -EINVAL;
	*code = get_u16(payload);
	size_t n = len - 4;
	if (n > text_len - 1)
		n = text_len - 1;
	/* Printable ASCII only: the text goes to a terminal. */
	for (size_t i = 0; i < n; i++) {
		uint8_t c = payload[4 + i];
		text[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	text[n] = '\0';
	return 0;
}

const char *cs_ctl_type_name(uint16_t type)
{
	switch (type & ~CS_CTL_RESPONSE) {
	case CS_CTL_HELLO:
		return "HELLO";
	case CS_CTL_SNAPSHOT:
		return "SNAPSHOT";
	case CS_CTL_STREAM:
		return "STREAM";
	case CS_CTL_RESET:
		return "RESET";
	case CS_CTL_STATUS:
		return "STATUS";
	default:
		return type == CS_CTL_ERROR ? "ERROR" : "unknown";
	}
}
