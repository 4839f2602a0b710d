/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The control socket's wire protocol (connscoped <-> connscope status,
 * snapshot, reset, top): framing and payload encodings only. Pure code, no
 * I/O, so the unit tests and fuzz_ctl_proto drive it byte by byte.
 *
 * A frame is a 16-byte header and a payload. Header fields are
 * little-endian:
 *
 *   0  magic     "CSCT"
 *   4  version   u16, CS_CTL_VERSION
 *   6  type      u16, enum cs_ctl_type (responses: request type | 0x80)
 *   8  length    u32, payload bytes
 *   12 reserved  u32, 0
 *
 * Requests' payloads are at most CS_CTL_REQUEST_MAX bytes; responses' at
 * most CS_CTL_RESPONSE_MAX. A frame that breaks the framing (bad magic,
 * version, reserved bits or size) desynchronises the stream: the peer gets
 * an ERROR and the connection is closed. A well-framed but unknown or
 * malformed request gets an ERROR and the connection stays usable.
 */
#ifndef CS_CTL_PROTO_H
#define CS_CTL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CS_CTL_MAGIC "CSCT"
#define CS_CTL_VERSION 1
#define CS_CTL_HEADER_LEN 16
#define CS_CTL_REQUEST_MAX (64u << 10)
#define CS_CTL_RESPONSE_MAX (16u << 20)
#define CS_CTL_DEFAULT_SOCKET "/run/connscope/connscoped.sock"

enum cs_ctl_type {
	CS_CTL_HELLO = 1,    /* payload: u16 min, u16 max version; reply: u16 version, text */
	CS_CTL_SNAPSHOT = 2, /* payload: struct cs_ctl_view_request; reply: the report */
	CS_CTL_STREAM = 3,   /* the same; replies: one STREAM frame a second until the client goes */
	CS_CTL_RESET = 4,    /* no payload; reply: empty */
	CS_CTL_STATUS = 5,   /* no payload; reply: one JSON object (see ctl_server.c) */
	CS_CTL_TYPE_MAX,
};

#define CS_CTL_RESPONSE 0x80u
#define CS_CTL_ERROR 0xffu   /* payload: u16 enum cs_ctl_error, u16 0, then text */

enum cs_ctl_error {
	CS_CTL_ERR_BAD_MAGIC = 1,
	CS_CTL_ERR_VERSION = 2,
	CS_CTL_ERR_TOO_BIG = 3,
	CS_CTL_ERR_UNKNOWN_TYPE = 4,
	CS_CTL_ERR_BAD_PAYLOAD = 5,
	CS_CTL_ERR_DENIED = 6,
	CS_CTL_ERR_BUSY = 7,
	CS_CTL_ERR_INTERNAL = 8,
	CS_CTL_ERR_TIMEOUT = 9,
};

struct cs_ctl_header {
	uint16_t version;
	uint16_t type;
	uint32_t length;
};

void cs_ctl_encode_header(uint8_t out[CS_CTL_HEADER_LEN], uint16_t type, uint32_t length);

/*
 * Decode the header at buf (len bytes available). Returns 0; -EAGAIN when
 * fewer than CS_CTL_HEADER_LEN bytes are there; -EPROTO for a bad magic or
 * non-zero reserved field; -EPROTONOSUPPORT for another version;
 * -EMSGSIZE when the payload is longer than max_payload. *hdr is filled
 * whenever the magic matched (the caller may log it).
 */
int cs_ctl_decode_header(const uint8_t *buf, size_t len, uint32_t max_payload,
			 struct cs_ctl_header *hdr);

/* The error code to answer a decode error with. */
enum cs_ctl_error cs_ctl_error_for(int decode_err);

/*
 * Reassembles frames from a byte stream however it is split. Bytes go in
 * with cs_ctl_reader_push; whole frames come out of cs_ctl_reader_next.
 */
struct cs_ctl_reader {
	uint8_t *buf;
	size_t have;          /* bytes held */
	size_t cap;
	size_t consumed;      /* the frame last returned: dropped on the next call */
	uint32_t max_payload;
	int error;            /* sticky: the stream cannot be resynchronised */
};

void cs_ctl_reader_init(struct cs_ctl_reader *reader, uint32_t max_payload);
void cs_ctl_reader_free(struct cs_ctl_reader *reader);

/* Append len bytes. Returns 0 or -ENOMEM (then the bytes are not taken). */
int cs_ctl_reader_push(struct cs_ctl_reader *reader, const void *data, size_t len);

/*
 * The next whole frame: returns 1 with *hdr and *payload (valid until the
 * next push or next call), 0 when more bytes are needed, or a negative
 * decode error (sticky, see cs_ctl_decode_header).
 */
int cs_ctl_reader_next(struct cs_ctl_reader *reader, struct cs_ctl_header *hdr, const uint8_t **payload);

/* Bytes held that do not yet form a whole frame (0: at a frame boundary). */
size_t cs_ctl_reader_pending(const struct cs_ctl_reader *reader);

/* ---- payloads ------------------------------------------------------------- */

#define CS_CTL_HELLO_LEN 4
void cs_ctl_hello_encode(uint8_t out[CS_CTL_HELLO_LEN], uint16_t min_version, uint16_t max_version);
int cs_ctl_hello_decode(const uint8_t *payload, size_t len, uint16_t *min_version, uint16_t *max_version);
/* The version both sides speak, or 0 when there is none. */
uint16_t cs_ctl_negotiate(uint16_t client_min, uint16_t client_max);

enum cs_ctl_format {
	CS_CTL_FORMAT_JSON = 0, /* the report JSON of `connscope attach --json`, plus "live" */
	CS_CTL_FORMAT_TEXT = 1, /* the text report */
};

/* What SNAPSHOT and STREAM ask for. */
struct cs_ctl_view_request {
	uint8_t format;           /* enum cs_ctl_format */
	uint16_t slowest;         /* list this many slowest requests (0-512; 0: none) */
	uint32_t tail_milli_pct;  /* the tail's percentile x 1000 (99000: p99); 0: default */
};

/* Payload: u8 format, u8 0, u16 slowest (little-endian), u32 tail_milli_pct. */
#define CS_CTL_VIEW_LEN 8
#define CS_CTL_SLOWEST_MAX 512
void cs_ctl_view_encode(uint8_t out[CS_CTL_VIEW_LEN], const struct cs_ctl_view_request *view);
/* An empty payload means the defaults (JSON, p99). Returns 0 or -EINVAL. */
int cs_ctl_view_decode(const uint8_t *payload, size_t len, struct cs_ctl_view_request *view);

/* ERROR: u16 code, u16 0, message (no NUL). Returns the payload length. */
size_t cs_ctl_error_encode(uint8_t *out, size_t cap, enum cs_ctl_error code, const char *message);
/* Returns 0 with the code and the message copied (NUL-terminated, cut to text_len), or -EINVAL. */
int cs_ctl_error_decode(const uint8_t *payload, size_t len, uint16_t *code, char *text, size_t text_len);

const char *cs_ctl_type_name(uint16_t type);

#endif /* CS_CTL_PROTO_H */
