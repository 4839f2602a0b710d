// SPDX-License-Identifier: BSD-2-Clause
#include "metrics.h"
#include "metrics_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "report.h"

const double cs_mx_bucket_bounds_s[CS_MX_BUCKETS] = {
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

void cs_mx_label_value(FILE *out, const char *value)
{
	for (; *value; value++) {
		if (*value == '\\' || *value == '"')
			fprintf(out, "\\%c", *value);
		else if (*value == '\n')
			fputs("\\n", out);
		else
			fputc(*value, out);
	}
}

size_t cs_mx_escape(char *buf, size_t len, const char *value)
{
	size_t n = 0;
	for (; *value && n + 2 < len; value++) {
		if (*value == '\\' || *value == '"' || *value == '\n')
			buf[n++] = '\\';
		buf[n++] = *value == '\n' ? 'n' : *value;
	}
	if (len)
		buf[n < len ? n : len - 1] = '\0';
	return n;
}

static bool ends_with(const char *text, const char *suffix)
{
	size_t len = strlen(text), suffix_len = strlen(suffix);
	return len >= suffix_len && !strcmp(text + len - suffix_len, suffix);
}

void cs_mx_header(const struct cs_mx_out *w, const char *name, const char *type, const char *help)
{
	int len = (int)strlen(name);
	if (w->openmetrics && !strcmp(type, "counter") && ends_with(name, "_total"))
		len -= 6;
	fprintf(w->out, "# HELP %.*s %s\n# TYPE %.*s %s\n", len, name, help, len, name, type);
	/* OpenMetrics: a unit named must be the family name's suffix, as it is here. */
	if (w->openmetrics && ends_with(name, "_seconds"))
		fprintf(w->out, "# UNIT %s seconds\n", name);
}

void cs_mx_series(const struct cs_mx_out *w, const char *name, const char *extra)
{
	fprintf(w->out, "%s{target=\"", name);
	cs_mx_label_value(w->out, w->target);
	fputc('"', w->out);
	if (extra && extra[0])
		fprintf(w->out, ",%s", extra);
}

void cs_mx_sample(const struct cs_mx_out *w, const char *name, const char *extra, uint64_t value)
{
	cs_mx_series(w, name, extra);
	fprintf(w->out, "} %" PRIu64 "\n", value);
}

void cs_mx_sample_double(const struct cs_mx_out *w, const char *name, const char *extra, double value)
{
	cs_mx_series(w, name, extra);
	fprintf(w->out, "} %.9g\n", value);
}

void cs_mx_histogram(const struct cs_mx_out *w, const char *name, const char *extra, const struct cs_hist *hist,
		     const struct cs_mx_exemplars *ex)
{
	char bucket[128], label[64];
	snprintf(bucket, sizeof(bucket), "%s_bucket", name);
	for (size_t i = 0; i <= CS_MX_BUCKETS; i++) {
		bool inf = i == CS_MX_BUCKETS;
		uint64_t count = inf ? hist->count
				     : cs_hist_count_at_or_below(hist, (uint64_t)(cs_mx_bucket_bounds_s[i] * 1e9));
		if (inf)
			snprintf(label, sizeof(label), "le=\"+Inf\"");
		else
			snprintf(label, sizeof(label), "le=\"%g\"", cs_mx_bucket_bounds_s[i]);
		if (extra && extra[0]) {
			cs_mx_series(w, bucket, extra);
			fprintf(w->out, ",%s} %" PRIu64, label, count);
		} else {
			cs_mx_series(w, bucket, label);
			fprintf(w->out, "} %" PRIu64, count);
		}
		if (w->openmetrics && ex && ex->pick[i])
			cs_mx_write_exemplar(w, ex->pick[i], ex->value_ns[i]);
		fputc('\n', w->out);
	}
	char series[128];
	snprintf(series, sizeof(series), "%s_sum", name);
	cs_mx_series(w, series, extra);
	fprintf(w->out, "} %.9f\n", (double)hist->sum / 1e9);
	snprintf(series, sizeof(series), "%s_count", name);
	cs_mx_sample(w, series, extra, hist->count);
}

static void port_label(char *buf, size_t len, uint16_t port)
{
	snprintf(buf, len, "port=\"%u\"", port);
}

/* The histograms: latency per listener, each cause's time, accept wait per listener. */
static void render_histograms(const struct cs_mx_out *w)
{
	const struct cs_report_view *view = w->view;
	struct cs_mx_exemplars ex;
	char port[32];

	cs_mx_header(w, "connscope_request_duration_seconds", "histogram",
		     "Server-side request latency, from the kernel's view: first byte in to last byte out.");
	for (size_t i = 0; i < view->listener_count; i++) {
		port_label(port, sizeof(port), view->listeners[i].port);
		cs_mx_pick_exemplars(view->requests, view->listeners[i].port, -1, &ex);
		cs_mx_histogram(w, "connscope_request_duration_seconds", port, view->listeners[i].latency_ns, &ex);
	}

	cs_mx_header(w, "connscope_request_cause_seconds", "histogram",
		     "Each request's time in each cause (accept_queue, listen_overflow, run_queue, "
		     "event_loop, worker_pool, handler, send_drain).");
	for (int c = 0; c < CS_CAUSE_COUNT; c++) {
		char cause[48];
		snprintf(cause, sizeof(cause), "cause=\"%s\"", cs_cause_names[c]);
		cs_mx_pick_exemplars(view->requests, 0, c, &ex);
		cs_mx_histogram(w, "connscope_request_cause_seconds", cause, view->requests->cause_ns[c], &ex);
	}

	cs_mx_header(w, "connscope_accept_wait_seconds", "histogram",
		     "Time connections waited in the accept queue: ESTABLISHED to accept().");
	for (size_t i = 0; i < view->listener_count; i++) {
		port_label(port, sizeof(port), view->listeners[i].port);
		cs_mx_histogram(w, "connscope_accept_wait_seconds", port, view->listeners[i].accept_wait_ns, NULL);
	}
}

/* A per-listener family: one series per port. */
static void per_listener(const struct cs_mx_out *w, const char *name, const char *type, const char *help,
			 uint64_t (*value)(const struct cs_listener_stats *))
{
	char port[32];
	cs_mx_header(w, name, type, help);
	for (size_t i = 0; i < w->view->listener_count; i++) {
		port_label(port, sizeof(port), w->view->listeners[i].port);
		cs_mx_sample(w, name, port, value(&w->view->listeners[i]));
	}
}

static uint64_t l_requests(const struct cs_listener_stats *l) { return l->requests; }
static uint64_t l_accepts(const struct cs_listener_stats *l) { return l->accepts; }
static uint64_t l_eagain(const struct cs_listener_stats *l) { return l->eagain; }
static uint64_t l_backlog_limit(const struct cs_listener_stats *l) { return l->backlog_limit; }

static void render_listeners(const struct cs_mx_out *w)
{
	per_listener(w, "connscope_requests_total", "counter", "Requests with a full timeline.", l_requests);
	per_listener(w, "connscope_accepts_total", "counter", "Connections accepted.", l_accepts);
	per_listener(w, "connscope_listen_drops_total", "counter",
		     "SYNs and handshake ACKs dropped because the accept queue was full (ListenOverflows).",
		     cs_listener_drops);
	per_listener(w, "connscope_accept_eagain_total", "counter",
		     "accept() calls that found the queue empty: wake-ups for nothing.", l_eagain);
	per_listener(w, "connscope_backlog_limit", "gauge", "The listener's accept queue limit.", l_backlog_limit);
}

static void render_lifecycle(const struct cs_mx_out *w)
{
	const struct cs_lifecycle_stats *life = w->view->lifecycle;
	cs_mx_header(w, "connscope_connections_closed_total", "counter", "Connections closed, by who closed first.");
	cs_mx_sample(w, "connscope_connections_closed_total", "by=\"server\"", life->closed_by[CS_CLOSED_BY_SERVER]);
	cs_mx_sample(w, "connscope_connections_closed_total", "by=\"client\"", life->closed_by[CS_CLOSED_BY_CLIENT]);
	cs_mx_sample(w, "connscope_connections_closed_total", "by=\"abort\"", life->closed_by[CS_CLOSED_BY_ABORT]);
	cs_mx_header(w, "connscope_idle_closes_total", "counter",
		     "Keep-alive connections the server closed after an idle gap.");
	cs_mx_sample(w, "connscope_idle_closes_total", NULL, life->server_idle_closes);
	cs_mx_header(w, "connscope_keepalive_race_resets_total", "counter",
		     "Resets sent because a request reached a connection the server had just closed.");
	cs_mx_sample(w, "connscope_keepalive_race_resets_total", NULL, life->keepalive_race_resets);
	cs_mx_header(w, "connscope_requests_unanswered_total", "counter",
		     "Requests on connections that closed before the server answered.");
	cs_mx_sample(w, "connscope_requests_unanswered_total", NULL, w->view->requests->unanswered);
	cs_mx_header(w, "connscope_connections_multiplexed_total", "counter",
		     "Connections whose requests overlap (HTTP/2, pipelining): in no request figure.");
	cs_mx_sample(w, "connscope_connections_multiplexed_total", NULL, w->view->requests->connections_multiplexed);
	cs_mx_header(w, "connscope_tls_handshake_exchanges_total", "counter",
		     "TLS handshake exchanges counted as connection set-up, not as requests.");
	cs_mx_sample(w, "connscope_tls_handshake_exchanges_total", NULL, w->view->requests->tls_handshake_exchanges);
}

/* One series: where the target runs. Join on target to label the others. */
static void render_target_info(const struct cs_mx_out *w)
{
	const struct cs_report_meta *meta = w->meta;
	if (!meta->labels || !meta->labels->netns_ino)
		return;
	cs_mx_header(w, "connscope_target_info", "gauge",
		     "Where the target runs: its network namespace (inode), cgroup v2 path and container.");
	cs_mx_series(w, "connscope_target_info", NULL);
	fprintf(w->out, ",netns=\"%" PRIu32 "\",cgroup=\"", meta->labels->netns_ino);
	cs_mx_label_value(w->out, meta->labels->cgroup);
	fputs("\",container=\"", w->out);
	cs_mx_label_value(w->out, meta->labels->container);
	fputs("\"} 1\n", w->out);
}

/*
 * --between-windows counters: what the kernel counted in the gaps between
 * windows, in the first target's network namespace (every port and
 * process in it), where no probe ran for a connection.
 */
static void render_between(const struct cs_mx_out *w)
{
	const struct cs_between_counts *between = &w->meta->trace.between;
	if (!w->meta->trace.counters_between || !between->valid)
		return;
	char netns[48];
	snprintf(netns, sizeof(netns), "netns=\"%" PRIu32 "\"", between->netns_ino);
	cs_mx_header(w, "connscope_between_windows_seconds_total", "counter",
		     "Time between tracing windows, where nothing was followed port by port (between-windows = counters).");
	cs_mx_sample_double(w, "connscope_between_windows_seconds_total", netns, between->gap_s);
	cs_mx_header(w, "connscope_between_windows_connections_opened_total", "counter",
		     "Connections a listener's handshake made between windows: the kernel's PassiveOpens of the "
		     "namespace, every port.");
	cs_mx_sample(w, "connscope_between_windows_connections_opened_total", netns, between->added.passive_opens);
	cs_mx_header(w, "connscope_between_windows_listen_drops_total", "counter",
		     "Drops at the namespace's listeners between windows (the kernel's ListenOverflows: the accept queue "
		     "full; ListenDrops: those and the other drops).");
	char labels[96];
	snprintf(labels, sizeof(labels), "%s,counter=\"ListenOverflows\"", netns);
	cs_mx_sample(w, "connscope_between_windows_listen_drops_total", labels, between->added.listen_overflows);
	snprintf(labels, sizeof(labels), "%s,counter=\"ListenDrops\"", netns);
	cs_mx_sample(w, "connscope_between_windows_listen_drops_total", labels, between->added.listen_drops);
	cs_mx_header(w, "connscope_between_windows_resets_total", "counter",
		     "Resets in the namespace between windows: established connections reset (EstabResets), resets "
		     "sent (OutRsts).");
	snprintf(labels, sizeof(labels), "%s,counter=\"EstabResets\"", netns);
	cs_mx_sample(w, "connscope_between_windows_resets_total", labels, between->added.estab_resets);
	snprintf(labels, sizeof(labels), "%s,counter=\"OutRsts\"", netns);
	cs_mx_sample(w, "connscope_between_windows_resets_total", labels, between->added.out_rsts);
}

/*
 * What was traced: connscoped attaches its request probes in windows.
 * Counters of accepts, drops, resets and closes are exact; the request
 * series (connscope_requests_total, the latency histograms) count the
 * traced windows only.
 */
static void render_tracing(const struct cs_mx_out *w)
{
	struct cs_traced_summary summary;
	summary = w->view->tracing;
	cs_mx_header(w, "connscope_traced_seconds_total", "counter",
		     "Time the per-request probes were attached: the request series cover only this time "
		     "(accepts, drops, resets and closes are counted all the time, unless between-windows = counters).");
	cs_mx_sample_double(w, "connscope_traced_seconds_total", NULL, summary.traced_s);
	cs_mx_header(w, "connscope_traced_ratio", "gauge",
		     "Share of the run the per-request probes were attached (1: trace = always).");
	cs_mx_sample_double(w, "connscope_traced_ratio", NULL, summary.share);
	cs_mx_header(w, "connscope_trace_windows_total", "counter", "Tracing windows opened.");
	cs_mx_sample(w, "connscope_trace_windows_total", NULL, w->meta->trace.sampled ? w->meta->trace.windows : 1);
	cs_mx_header(w, "connscope_requests_estimated", "gauge",
		     "Requests that ended in the run, estimated from the traced windows (exact with trace = always); "
		     "connscope_requests_total counts the traced ones.");
	cs_mx_sample_double(w, "connscope_requests_estimated", NULL, round(summary.requests_estimated));
	cs_mx_header(w, "connscope_requests_cut_total", "counter",
		     "Requests in progress when a tracing window closed: in no latency.");
	cs_mx_sample(w, "connscope_requests_cut_total", NULL, w->meta->trace.requests_cut);
}

static void render_health(const struct cs_mx_out *w)
{
	const struct cs_report_view *view = w->view;
	const struct cs_report_meta *meta = w->meta;
	cs_mx_header(w, "connscope_events_lost_total", "counter",
		     "Events the probes could not hand over (ring buffer full): figures are a lower bound.");
	cs_mx_sample(w, "connscope_events_lost_total", NULL, meta->events_lost);
	cs_mx_header(w, "connscope_probe_runs_skipped_total", "counter",
		     "Probe runs the kernel skipped (a probe interrupted on its own CPU by the same hook): "
		     "each may be an event lost; most concern other sockets.");
	cs_mx_sample(w, "connscope_probe_runs_skipped_total", NULL, meta->probe_runs_skipped);
	struct cs_conn_partial partial = view->partial;
	cs_mx_header(w, "connscope_partial_total", "counter",
		     "Connections older than the attach, seen only in part (never in a latency), by what was seen.");
	cs_mx_sample(w, "connscope_partial_total", "seen=\"accept\"", partial.accepts);
	cs_mx_sample(w, "connscope_partial_total", "seen=\"request\"", partial.requests);
	cs_mx_sample(w, "connscope_partial_total", "seen=\"close\"", partial.closes);
	cs_mx_header(w, "connscope_connections_adopted_total", "counter",
		     "Connections older than the attach followed from their first idle moment (their requests in "
		     "flight then: connscope_partial_total{seen=\"request\"}).");
	cs_mx_sample(w, "connscope_connections_adopted_total", NULL, view->requests->connections_adopted);
	cs_mx_header(w, "connscope_connections_forgotten_total", "counter",
		     "Connections the engine stopped following: evicted from a full table, timed out without events, "
		     "or at a tracing window's close when nothing is seen of them between windows.");
	cs_mx_sample(w, "connscope_connections_forgotten_total", "why=\"evicted\"", view->conns_evicted);
	cs_mx_sample(w, "connscope_connections_forgotten_total", "why=\"timed_out\"", view->conns_timed_out);
	cs_mx_sample(w, "connscope_connections_forgotten_total", "why=\"window_closed\"", view->conns_forgotten_between);
	render_tracing(w);
	render_between(w);
	render_target_info(w);
	cs_mx_header(w, "connscope_events_total", "counter", "Events the engine took in.");
	cs_mx_sample(w, "connscope_events_total", NULL, view->totals->records);
}

int cs_metrics_render(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta,
		      const char *target, enum cs_metrics_format format)
{
	struct cs_report_view *view = cs_report_view_new(engine, meta);
	if (!view)
		return -ENOMEM;
	const struct cs_mx_out w = { .out = out, .openmetrics = format == CS_METRICS_OPENMETRICS,
				     .target = target, .view = view, .meta = meta, .analysis = &view->analysis };
	render_histograms(&w);
	render_listeners(&w);
	render_lifecycle(&w);
	cs_mx_render_upstreams(&w);
	cs_mx_render_clients(&w);
	render_health(&w);
	cs_mx_render_cost(&w);
	cs_mx_render_series(&w);
	if (w.openmetrics)
		fputs("# EOF\n", out);
	cs_report_view_free(view);
	return 0;
}

/* The q of one media range's parameters ("; q=0.5; x=y"): 1 when none is given. */
static double media_range_q(const char *params, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (params[i] != ';')
			continue;
		size_t j = i + 1;
		while (j < len && (params[j] == ' ' || params[j] == '\t'))
			j++;
		if (j + 2 <= len && (params[j] == 'q' || params[j] == 'Q') && params[j + 1] == '=') {
			/* A copy: the value may end the buffer, with no NUL after it for strtod. */
			char q[16] = "";
			size_t q_len = len - j - 2 < sizeof(q) - 1 ? len - j - 2 : sizeof(q) - 1;
			memcpy(q, params + j + 2, q_len);
			return strtod(q, NULL);
		}
	}
	return 1.0;
}

enum cs_metrics_format cs_metrics_negotiate_accept(const char *value, size_t value_len)
{
	static const char type[] = "application/openmetrics-text";
	const char *range = value, *end = value + value_len;
	while (range < end) {
		const char *comma = memchr(range, ',', (size_t)(end - range));
		size_t len = comma ? (size_t)(comma - range) : (size_t)(end - range);
		const char *start = range;
		while (start < range + len && (*start == ' ' || *start == '\t'))
			start++;
		size_t rest = (size_t)(range + len - start);
		if (rest >= sizeof(type) - 1 && !strncasecmp(start, type, sizeof(type) - 1) &&
		    media_range_q(start + sizeof(type) - 1, rest - (sizeof(type) - 1)) > 0)
			return CS_METRICS_OPENMETRICS;
		range += len + 1;
	}
	return CS_METRICS_PROMETHEUS;
}

enum cs_metrics_format cs_metrics_negotiate(const char *request_head)
{
	for (const char *line = strchr(request_head, '\n'); line; line = strchr(line, '\n')) {
		line++;
		if (strncasecmp(line, "Accept:", 7) != 0)
			continue;
		if (cs_metrics_negotiate_accept(line + 7, strcspn(line + 7, "\r\n")) == CS_METRICS_OPENMETRICS)
			return CS_METRICS_OPENMETRICS;
	}
	return CS_METRICS_PROMETHEUS;
}

int cs_parse_listen_address(const char *text, struct sockaddr_storage *addr, unsigned int *addr_len)
{
	char host[64] = "127.0.0.1";
	const char *port_text = text;
	memset(addr, 0, sizeof(*addr));

	if (text[0] == '[') {
		const char *close = strchr(text, ']');
		if (!close || close[1] != ':' || (size_t)(close - text - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, text + 1, (size_t)(close - text - 1));
		host[close - text - 1] = '\0';
		port_text = close + 2;
	} else {
		const char *colon = strrchr(text, ':');
		if (colon) {
			if ((size_t)(colon - text) >= sizeof(host) || colon == text)
				return -EINVAL;
			memcpy(host, text, (size_t)(colon - text));
			host[colon - text] = '\0';
			port_text = colon + 1;
		}
	}
	char *end;
	errno = 0;
	long port = strtol(port_text, &end, 10);
	if (errno || end == port_text || *end || port < 1 || port > 65535)
		return -EINVAL;

	struct sockaddr_in *in4 = (struct sockaddr_in *)addr;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)addr;
	if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
		*addr_len = sizeof(*in4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*addr_len = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

