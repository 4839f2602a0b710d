// SPDX-License-Identifier: BSD-2-Clause
#include "metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

/* Bucket bounds in seconds: 100 us to 10 s, the range of request tails. */
static const double bucket_bounds_s[] = {
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};
#define BUCKET_COUNT (sizeof(bucket_bounds_s) / sizeof(bucket_bounds_s[0]))

/* A label value with \, " and newline escaped, as the format requires. */
static void label_value(FILE *out, const char *value)
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

static void header(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Labels: target="...", then extra (e.g. port="80"), already formatted. */
static void labels(FILE *out, const char *target, const char *extra)
{
	fputs("{target=\"", out);
	label_value(out, target);
	fputc('"', out);
	if (extra && extra[0])
		fprintf(out, ",%s", extra);
}

/* One histogram series in seconds from a nanosecond cs_hist. */
static void histogram(FILE *out, const char *name, const char *target, const char *extra,
		      const struct cs_hist *hist)
{
	for (size_t i = 0; i < BUCKET_COUNT; i++) {
		uint64_t bound_ns = (uint64_t)(bucket_bounds_s[i] * 1e9);
		fprintf(out, "%s_bucket", name);
		labels(out, target, extra);
		fprintf(out, ",le=\"%g\"} %" PRIu64 "\n", bucket_bounds_s[i],
			cs_hist_count_at_or_below(hist, bound_ns));
	}
	fprintf(out, "%s_bucket", name);
	labels(out, target, extra);
	fprintf(out, ",le=\"+Inf\"} %" PRIu64 "\n", hist->count);
	fprintf(out, "%s_sum", name);
	labels(out, target, extra);
	fprintf(out, "} %.9f\n", (double)hist->sum / 1e9);
	fprintf(out, "%s_count", name);
	labels(out, target, extra);
	fprintf(out, "} %" PRIu64 "\n", hist->count);
}

static void sample(FILE *out, const char *name, const char *target, const char *extra, uint64_t value)
{
	fputs(name, out);
	labels(out, target, extra);
	fprintf(out, "} %" PRIu64 "\n", value);
}

static void port_label(char *buf, size_t len, uint16_t port)
{
	snprintf(buf, len, "port=\"%u\"", port);
}

void cs_metrics_render(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta,
		       const char *target)
{
	char port[32];

	header(out, "connscope_request_duration_seconds", "histogram",
	       "Server-side request latency, from the kernel's view: first byte in to last byte out.");
	for (size_t i = 0; i < engine->listener_count; i++) {
		port_label(port, sizeof(port), engine->listeners[i].port);
		histogram(out, "connscope_request_duration_seconds", target, port,
			  engine->listeners[i].latency_ns);
	}

	header(out, "connscope_request_cause_seconds", "histogram",
	       "Each request's time in each cause (accept_queue, listen_overflow, run_queue, "
	       "event_loop, worker_pool, handler, send_drain).");
	for (int c = 0; c < CS_CAUSE_COUNT; c++) {
		char cause[48];
		snprintf(cause, sizeof(cause), "cause=\"%s\"", cs_cause_names[c]);
		histogram(out, "connscope_request_cause_seconds", target, cause, engine->requests.cause_ns[c]);
	}

	header(out, "connscope_accept_wait_seconds", "histogram",
	       "Time connections waited in the accept queue: ESTABLISHED to accept().");
	for (size_t i = 0; i < engine->listener_count; i++) {
		port_label(port, sizeof(port), engine->listeners[i].port);
		histogram(out, "connscope_accept_wait_seconds", target, port, engine->listeners[i].accept_wait_ns);
	}

	header(out, "connscope_requests_total", "counter", "Requests with a full timeline.");
	for (size_t i = 0; i < engine->listener_count; i++) {
		port_label(port, sizeof(port), engine->listeners[i].port);
		sample(out, "connscope_requests_total", target, port, engine->listeners[i].requests);
	}
	header(out, "connscope_accepts_total", "counter", "Connections accepted.");
	for (size_t i = 0; i < engine->listener_count; i++) {
		port_label(port, sizeof(port), engine->listeners[i].port);
		sample(out, "connscope_accepts_total", target, port, engine->listeners[i].accepts);
	}
	header(out, "connscope_listen_drops_total", "counter",
	       "SYNs and handshake ACKs dropped because the accept queue was full (ListenOverflows).");
	for (size_t i = 0; i < engine->listener_count; i++) {
		port_label(port, sizeof(port), engine->listeners[i].port);
		sample(out, "connscope_listen_drops_total", target, port, cs_listener_drops(&engine->listeners[i]));
	}
	header(out, "connscope_accept_eagain_total", "counter",
	       "accept() calls that found the queue empty: wake-ups for nothing.");
	for (size_t i = 0; i < engine->listener_count; i++) {
		port_label(port, sizeof(port), engine->listeners[i].port);
		sample(out, "connscope_accept_eagain_total", target, port, engine->listeners[i].eagain);
	}
	header(out, "connscope_backlog_limit", "gauge", "The listener's accept queue limit.");
	for (size_t i = 0; i < engine->listener_count; i++) {
		port_label(port, sizeof(port), engine->listeners[i].port);
		sample(out, "connscope_backlog_limit", target, port, engine->listeners[i].backlog_limit);
	}

	const struct cs_lifecycle_stats *life = &engine->lifecycle;
	header(out, "connscope_connections_closed_total", "counter", "Connections closed, by who closed first.");
	sample(out, "connscope_connections_closed_total", target, "by=\"server\"", life->closed_by[CS_CLOSED_BY_SERVER]);
	sample(out, "connscope_connections_closed_total", target, "by=\"client\"", life->closed_by[CS_CLOSED_BY_CLIENT]);
	sample(out, "connscope_connections_closed_total", target, "by=\"abort\"", life->closed_by[CS_CLOSED_BY_ABORT]);
	header(out, "connscope_idle_closes_total", "counter",
	       "Keep-alive connections the server closed after an idle gap.");
	sample(out, "connscope_idle_closes_total", target, NULL, life->server_idle_closes);
	header(out, "connscope_keepalive_race_resets_total", "counter",
	       "Resets sent because a request reached a connection the server had just closed.");
	sample(out, "connscope_keepalive_race_resets_total", target, NULL, life->keepalive_race_resets);
	header(out, "connscope_requests_unanswered_total", "counter",
	       "Requests on connections that closed before the server answered.");
	sample(out, "connscope_requests_unanswered_total", target, NULL, engine->requests.unanswered);

	header(out, "connscope_events_lost_total", "counter",
	       "Events the probes could not hand over (ring buffer full): figures are a lower bound.");
	sample(out, "connscope_events_lost_total", target, NULL, meta->events_lost);
	header(out, "connscope_probe_runs_skipped_total", "counter",
	       "Probe runs the kernel skipped (a probe interrupted on its own CPU by the same hook): "
	       "each may be an event lost; most concern other sockets.");
	sample(out, "connscope_probe_runs_skipped_total", target, NULL, meta->probe_runs_skipped);
	struct cs_conn_partial partial = cs_engine_partial(engine);
	header(out, "connscope_partial_total", "counter",
	       "Connections older than the attach, seen only in part (never in a latency), by what was seen.");
	sample(out, "connscope_partial_total", target, "seen=\"accept\"", partial.accepts);
	sample(out, "connscope_partial_total", target, "seen=\"request\"", partial.requests);
	sample(out, "connscope_partial_total", target, "seen=\"close\"", partial.closes);
	header(out, "connscope_connections_forgotten_total", "counter",
	       "Connections the engine stopped following: evicted from a full table, or timed out without events.");
	sample(out, "connscope_connections_forgotten_total", target, "why=\"evicted\"", engine->conns_evicted);
	sample(out, "connscope_connections_forgotten_total", target, "why=\"timed_out\"", engine->conns_timed_out);
	if (meta->labels && meta->labels->netns_ino) {
		/* One series: where the target runs. Join on target to label the others. */
		header(out, "connscope_target_info", "gauge",
		       "Where the target runs: its network namespace (inode), cgroup v2 path and container.");
		fputs("connscope_target_info", out);
		fputs("{target=\"", out);
		label_value(out, target);
		fprintf(out, "\",netns=\"%" PRIu32 "\",cgroup=\"", meta->labels->netns_ino);
		label_value(out, meta->labels->cgroup);
		fputs("\",container=\"", out);
		label_value(out, meta->labels->container);
		fputs("\"} 1\n", out);
	}
	header(out, "connscope_events_total", "counter", "Events the engine took in.");
	sample(out, "connscope_events_total", target, NULL, engine->totals.records);
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

