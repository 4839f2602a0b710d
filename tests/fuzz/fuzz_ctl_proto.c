// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: what crosses the control socket, on both sides.
 *
 * Input: byte 0 picks the payload limit (the daemon's 64 KiB for requests,
 * or the client's 16 MiB for responses, or a small one), byte 1 the size
 * of the reads the bytes arrive in; the rest is the byte stream. The
 * stream goes through cs_ctl_reader as the daemon and the client read it,
 * and every frame's payload through the decoder of its type: HELLO, the
 * view request, ERROR; a SNAPSHOT or STREAM answer through jansson
 * into top's model and its layout at 80x24 and at 3x7, as connscope
 * top would draw it.
 *
 * Checked beyond "no crash, no sanitizer report, no leak": reading the
 * stream in one piece and in small reads gives the same frames and the
 * same verdict; no frame is longer than the limit; decoded values are in
 * their ranges; the model's numbers are finite.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_proto.h"
#include "top_model.h"
#include "top_render.h"

#define MAX_FRAMES 64

struct frame_log {
	int count;
	uint16_t types[MAX_FRAMES];
	uint32_t lengths[MAX_FRAMES];
	int verdict; /* the reader's last return: 0 (needs more) or an error */
};

static void draw(const struct cs_top_model *model, int rows, int cols)
{
	struct cs_top_screen screen;
	if (cs_top_screen_init(&screen, rows, cols))
		abort();
	struct cs_top_ui ui = { .unicode = cols > 40, .once = rows > 20 };
	cs_top_render(&screen, model, &ui);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	if (!out)
		abort();
	cs_top_screen_print(&screen, out, true);
	fclose(out);
	free(text);
	cs_top_screen_free(&screen);
}

static void check_model(const struct cs_top_model *m)
{
	const double values[] = { m->duration_s, m->uptime_s, m->requests_per_s, m->total.p99_us, m->window.p99_us,
				  m->tail_percentile, m->tail_threshold_us };
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
		if (!isfinite(values[i]) || values[i] < 0)
			abort();
	if (m->tail_percentile > 100 || m->series_len > CS_WINDOW_SECONDS || m->thread_count > CS_TOP_THREADS ||
	    m->listener_count > CS_TOP_LISTENERS || m->cause_count > CS_CAUSE_COUNT)
		abort();
	for (int i = 0; i < m->cause_count; i++)
		if (!(m->causes[i].share >= 0 && m->causes[i].share <= 1))
			abort();
	if (memchr(m->target, '\0', sizeof(m->target)) == NULL)
		abort();
}

static void payload(uint16_t type, const uint8_t *data, uint32_t len)
{
	switch (type) {
	case CS_CTL_HELLO: {
		uint16_t min, max;
		if (cs_ctl_hello_decode(data, len, &min, &max) == 0 && min > max)
			abort();
		break;
	}
	case CS_CTL_SNAPSHOT:
	case CS_CTL_STREAM: {
		struct cs_ctl_view_request view;
		if (cs_ctl_view_decode(data, len, &view) == 0 &&
		    (view.format > CS_CTL_FORMAT_TEXT ||
		     (view.tail_milli_pct && (view.tail_milli_pct < 50000 || view.tail_milli_pct > 99999))))
			abort();
		break;
	}
	case CS_CTL_ERROR: {
		uint16_t code;
		char text[64];
		if (cs_ctl_error_decode(data, len, &code, text, sizeof(text)) == 0)
			for (const char *p = text; *p; p++)
				if (*p < 0x20 || *p > 0x7e)
					abort();
		break;
	}
	case CS_CTL_SNAPSHOT | CS_CTL_RESPONSE:
	case CS_CTL_STREAM | CS_CTL_RESPONSE: {
		struct cs_top_model *model = malloc(sizeof(*model));
		if (!model)
			abort();
		char why[256];
		int err = cs_top_model_read(model, (const char *)data, len, "fuzz", why, sizeof(why));
		if (err != 0 && err != -EINVAL)
			abort();
		if (err == 0)
			check_model(model);
		draw(model, 24, 80);
		draw(model, 3, 7);
		free(model);
		break;
	}
	default:
		break;
	}
}

/* Read stream in reads of chunk bytes; log the frames. */
static void read_stream(const uint8_t *stream, size_t len, size_t chunk, uint32_t limit, bool decode,
			struct frame_log *log)
{
	struct cs_ctl_reader reader;
	cs_ctl_reader_init(&reader, limit);
	memset(log, 0, sizeof(*log));
	int got = 0;
	for (size_t at = 0; at < len && got >= 0 && log->count < MAX_FRAMES; at += chunk) {
		size_t n = len - at < chunk ? len - at : chunk;
		if (cs_ctl_reader_push(&reader, stream + at, n))
			abort();
		struct cs_ctl_header hdr;
		const uint8_t *data;
		while (log->count < MAX_FRAMES && (got = cs_ctl_reader_next(&reader, &hdr, &data)) == 1) {
			if (hdr.length > limit)
				abort();
			log->types[log->count] = hdr.type;
			log->lengths[log->count++] = hdr.length;
			if (decode)
				payload(hdr.type, data, hdr.length);
		}
	}
	log->verdict = got;
	cs_ctl_reader_free(&reader);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint32_t limit = data[0] >= 128 ? CS_CTL_RESPONSE_MAX : data[0] >= 64 ? CS_CTL_REQUEST_MAX : data[0];
	size_t chunk = (size_t)data[1] % 64 + 1;
	const uint8_t *stream = data + 2;
	size_t len = size - 2;

	struct frame_log whole, pieces;
	read_stream(stream, len, len ? len : 1, limit, true, &whole);
	read_stream(stream, len, chunk, limit, false, &pieces);
	/* However the bytes arrive, the same frames and the same verdict. */
	if (whole.count != pieces.count || whole.verdict != pieces.verdict ||
	    memcmp(whole.types, pieces.types, sizeof(whole.types)) ||
	    memcmp(whole.lengths, pieces.lengths, sizeof(whole.lengths)))
		abort();
	return 0;
}
