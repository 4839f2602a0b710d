// SPDX-License-Identifier: BSD-2-Clause
/*
 * The target's upstreams, one by one: the servers it called on
 * connections it opened, their exchanges, connect time and wait for the
 * first byte, how many exchanges were joined to the request they served
 * (and why the others were not), and their part of the tail.
 */
#include <inttypes.h>
#include <sys/socket.h>

#include "addr.h"
#include "json.h"
#include "report.h"
#include "report_view.h"

#define JI(x) ((json_int_t)(x))

/* "p50 X  p99 Y" of a histogram, "-" when it is empty. */
static void text_p50_p99(FILE *out, const char *what, const struct cs_hist *hist)
{
	char p50[32] = "-", p99[32] = "-";
	if (hist->count) {
		cs_format_duration(p50, sizeof(p50), cs_hist_percentile(hist, 50.0));
		cs_format_duration(p99, sizeof(p99), cs_hist_percentile(hist, 99.0));
	}
	fprintf(out, "    %-11s p50 %s  p99 %s", what, p50, p99);
}

static void text_upstream(FILE *out, const struct cs_upstream_stats *u, double tail_share)
{
	char endpoint[CS_UPSTREAM_NAME_LEN], waited[32];
	cs_upstream_name(endpoint, sizeof(endpoint), u);
	cs_format_duration(waited, sizeof(waited), u->waited_ns);
	fprintf(out, "  %s  %" PRIu64 " exchange(s): joined %" PRIu64, endpoint, u->exchanges, u->joined);
	if (u->joined_alike)
		fprintf(out, " (%" PRIu64 " by their loop's turn, %" PRIu64 " of them among alike ones)", u->joined_by_turn,
			u->joined_alike);
	else if (u->joined_by_turn)
		fprintf(out, " (%" PRIu64 " by their loop's turn)", u->joined_by_turn);
	fprintf(out, ", not joined %" PRIu64 " (ambiguous %" PRIu64 ", no request %" PRIu64 ", unmatched %" PRIu64
		", awaiting their request %" PRIu64 ")",
		cs_upstream_not_joined(u), u->not_joined[CS_UNJOINED_AMBIGUOUS], u->not_joined[CS_UNJOINED_NO_REQUEST],
		u->not_joined[CS_UNJOINED_UNMATCHED], u->pending);
	if (u->unread)
		fprintf(out, "; %" PRIu64 " unread (closed first)", u->unread);
	fprintf(out, "\n    %" PRIu64 " request(s) waited %s on it", u->requests_waited, waited);
	if (u->loop_waits)
		fprintf(out, " (%" PRIu64 " behind a loop blocked on it)", u->loop_waits);
	fprintf(out, "; %.1f%% of the tail's time\n", 100.0 * tail_share);
	if (u->queued_requests) {
		char queued[32];
		cs_format_duration(queued, sizeof(queued), u->queued_ns);
		fprintf(out, "    %" PRIu64 " of them waited %s for a free connection to it (its connections all busy)\n",
			u->queued_requests, queued);
	}
	text_p50_p99(out, "connect", u->connect_ns);
	if (u->connects_retransmitted)
		fprintf(out, "  (%" PRIu64 " connect(s), %" PRIu64 " waited for a SYN retransmit: %" PRIu64 " in all)\n",
			u->connects, u->connects_retransmitted, u->syn_retransmits);
	else
		fprintf(out, "  (%" PRIu64 " connect(s), 0 SYN retransmit(s))\n", u->connects);
	text_p50_p99(out, "first byte", u->wait_ns);
	fputc('\n', out);
	text_p50_p99(out, "read", u->read_ns);
	fputc('\n', out);
}

void cs_report_upstreams_text(FILE *out, const struct cs_report_view *view)
{
	if (!view->upstream_count && !view->upstream_untracked)
		return;
	fprintf(out, "upstreams (connections the target opened; exchanges joined to the request they served)\n");
	for (size_t i = 0; i < view->upstream_count; i++)
		text_upstream(out, &view->upstreams[i], view->analysis.upstreams.share[i]);
	if (view->upstream_untracked)
		fprintf(out, "  and %" PRIu64 " exchange(s) with more upstreams than the %d told apart\n",
			view->upstream_untracked, CS_UPSTREAMS_MAX);
	fputc('\n', out);
}

static json_t *upstream_value(const struct cs_upstream_stats *u, double tail_share)
{
	char address[CS_UPSTREAM_NAME_LEN];
	cs_upstream_address(address, sizeof(address), u);
	json_t *by = json_object();
	for (int i = 0; i < CS_UNJOINED_COUNT; i++)
		json_object_set_new(by, cs_unjoined_names[i], json_integer(JI(u->not_joined[i])));
	json_object_set_new(by, "awaiting_request", json_integer(JI(u->pending)));
	json_t *o = json_pack("{s:o,s:I,s:I,s:I,s:I,s:I,s:o,s:o,s:o}", "address", cs_json_text(address), "port",
			      JI(u->port), "exchanges", JI(u->exchanges), "unread", JI(u->unread), "connects",
			      JI(u->connects), "syn_retransmits", JI(u->syn_retransmits), "connect_us",
			      cs_report_percentiles_us(u->connect_ns), "wait_us", cs_report_percentiles_us(u->wait_ns),
			      "read_us", cs_report_percentiles_us(u->read_ns));
	json_object_set_new(o, "transport", json_string(u->family == AF_UNIX ? "unix" : "tcp"));
	json_object_set_new(o, "connects_retransmitted", json_integer(JI(u->connects_retransmitted)));
	json_object_set_new(o, "joined", json_integer(JI(u->joined)));
	json_object_set_new(o, "joined_by_turn", json_integer(JI(u->joined_by_turn)));
	json_object_set_new(o, "joined_alike", json_integer(JI(u->joined_alike)));
	json_object_set_new(o, "not_joined", json_integer(JI(cs_upstream_not_joined(u))));
	json_object_set_new(o, "not_joined_by", by);
	json_object_set_new(o, "requests_waited", json_integer(JI(u->requests_waited)));
	json_object_set_new(o, "loop_waits", json_integer(JI(u->loop_waits)));
	json_object_set_new(o, "waited_us", cs_json_us(u->waited_ns));
	json_object_set_new(o, "queued_requests", json_integer(JI(u->queued_requests)));
	json_object_set_new(o, "queued_us", cs_json_us(u->queued_ns));
	json_object_set_new(o, "tail_share", cs_json_4(tail_share));
	return o;
}

json_t *cs_report_upstreams_value(const struct cs_report_view *view)
{
	json_t *list = json_array();
	for (size_t i = 0; i < view->upstream_count; i++)
		json_array_append_new(list, upstream_value(&view->upstreams[i], view->analysis.upstreams.share[i]));
	return list;
}
