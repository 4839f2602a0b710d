// SPDX-License-Identifier: BSD-2-Clause
/*
 * Hostile-but-well-formed record streams (a corrupt or crafted trace file
 * replayed with `connscope report`): regressions for what the fuzzers and
 * the sanitizers found (tests/fuzz/). Each record here is valid on the
 * wire; its values are not what a kernel would ever produce.
 *
 * These run in every unit-test pass, and under ASan/UBSan (make test-asan)
 * and valgrind (make test-valgrind), where the undefined behaviour they
 * once triggered is an error.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "events.h"
#include "json_check.h"
#include "report.h"

static char *render(const struct cs_engine *engine, bool json)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	struct cs_report_meta meta = { .target = "hostile", .duration_s = 1.0 };
	if (json)
		cs_report_json(out, engine, &meta);
	else
		cs_report_text(out, engine, &meta);
	cr_assert_eq(fclose(out), 0);
	return text;
}

/*
 * One listener costs three histograms; unbounded, a 3.6 MB trace with one
 * record per port would take 7.5 GB. The engine follows as many ports as the probes
 * can (1024) and counts the rest as malformed.
 */
Test(hostile, listener_ports_are_bounded)
{
	struct cs_engine *engine = cs_engine_new();
	cr_assert_not_null(engine);
	uint64_t refused = 0;
	for (uint32_t port = 1; port <= 3000; port++) {
		struct cs_ev_ack_overflow ev = make_ack_overflow(port * US, (uint16_t)port);
		int err = cs_engine_feed(engine, &ev, sizeof(ev));
		if (err) {
			cr_assert_eq(err, -ENOMEM, "port %u: %d", port, err);
			refused++;
		}
	}
	cr_assert_eq(engine->listener_count, 1024);
	cr_assert_eq(refused, 3000 - 1024);
	cr_assert_eq(engine->totals.malformed, refused);
	/* Ports already followed still take records. */
	FEED_OK(engine, make_ack_overflow(SEC, 7));
	cr_assert_eq(cs_engine_listener(engine, 7)->ack_overflows, 2);
	cr_assert_null(cs_engine_listener(engine, 2000));
	char *text = render(engine, false);
	cr_assert(strstr(text, "malformed record(s)"), "the text report notes the refused records");
	free(text);
	cs_engine_free(engine);
}

/*
 * Cause times near 2^64 make a request's total wrap around, so a cause's
 * share of the tail is far above 1. Converting that share to int for the
 * text report's bar would be undefined behaviour (fuzz_engine's seed
 * tests/fuzz/corpus/fuzz_engine/regress-text-bar-share-overflow): the bar
 * clamps it.
 */
Test(hostile, wrapped_cause_times_still_render)
{
	struct cs_engine *engine = cs_engine_new();
	cr_assert_not_null(engine);
	feed_request(engine, (struct request_spec){
		.sk = 1, .port = 8080, .index = 0,
		.handshake_extra_ns = UINT64_MAX - 1000,
		.start_ns = SEC, .first_read_ns = SEC + 10 * US,
		.first_send_ns = SEC + 20 * US, .last_send_ns = SEC + 30 * US,
	});
	cr_assert_eq(engine->requests.requests, 1);

	char *text = render(engine, false);
	const char *line = strstr(text, "listen_overflow");
	cr_assert_not_null(line, "the tail names the wrapped cause:\n%s", text);
	line += strlen("listen_overflow");
	line += strspn(line, " ");
	size_t bar = strspn(line, "#.");
	cr_assert_eq(bar, 30, "a bar is 30 characters, however large the share:\n%s", text);
	cr_assert_eq(strspn(line, "#"), 30, "a share above 1 shows as a full bar");
	free(text);

	char *json = render(engine, true);
	json_free(json_parse(json));
	free(json);
	cs_engine_free(engine);
}
