// SPDX-License-Identifier: BSD-2-Clause
#include "csload_report.h"

#include <inttypes.h>

/* "123.4us", "12.35ms", "1.234s": a latency in a width-9 column. */
static void put_us(FILE *out, double us)
{
	if (us < 1000.0)
		fprintf(out, "%7.1fus", us);
	else if (us < 1e6)
		fprintf(out, "%7.2fms", us / 1e3);
	else
		fprintf(out, "%8.3fs", us / 1e6);
}

static const char *target_fmt(const struct csl_config *cfg)
{
	return cfg->addr.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u";
}

/* The run's first lines: what was measured, how much. */
static void report_run(FILE *out, const struct csl_config *cfg, const struct csl_stats *st,
		       const struct csl_summary *sum)
{
	fprintf(out, "csload ");
	fprintf(out, target_fmt(cfg), cfg->host, cfg->port);
	if (cfg->rate > 0)
		fprintf(out, ": open loop at %.6g req/s", cfg->rate);
	else
		fprintf(out, ": closed loop");
	fprintf(out, ", %s%s, %u connection%s, %u thread%s\n",
		cfg->keepalive ? "keep-alive" : "no keep-alive", cfg->tls ? ", TLS" : "",
		cfg->connections,
		cfg->connections == 1 ? "" : "s", cfg->threads, cfg->threads == 1 ? "" : "s");
	fprintf(out, "  %" PRIu64 " requests in %.3f s, %.1f req/s\n", st->requests,
		sum->duration_s, sum->rate_rps);
	if (st->unsent)
		fprintf(out, "  WARNING: %" PRIu64 " requests fell due but were never sent: "
			     "every connection was busy (the server could not keep up)\n",
			st->unsent);
}

/* Latency: the summary row, the distribution, and the send lag. */
static void report_latency(FILE *out, const struct csl_stats *st, const struct csl_summary *sum)
{
	fprintf(out, "  Latency, from the intended send time:\n");
	fprintf(out, "        min      p50      p90      p99    p99.9   p99.99      max     mean\n");
	fprintf(out, "  ");
	double row[] = { sum->latency_us.min, sum->latency_us.p50, sum->latency_us.p90,
			 sum->latency_us.p99, sum->latency_us.p999, sum->latency_us.p9999,
			 sum->latency_us.max, sum->latency_us.mean };
	for (unsigned int i = 0; i < sizeof(row) / sizeof(row[0]); i++)
		put_us(out, row[i]);
	fprintf(out, "\n");

	fprintf(out, "  Latency distribution:\n");
	static const double pcts[] = { 50, 75, 90, 99, 99.9, 99.99, 100 };
	for (unsigned int i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++) {
		fprintf(out, "    %7.3f%%  ", pcts[i]);
		put_us(out, (double)cs_hist_percentile(st->latency, pcts[i]) / 1e3);
		fprintf(out, "\n");
	}

	fprintf(out, "  Send lag (written - intended): p50 ");
	put_us(out, sum->send_lag_us.p50);
	fprintf(out, ", p99 ");
	put_us(out, sum->send_lag_us.p99);
	fprintf(out, ", max ");
	put_us(out, sum->send_lag_us.max);
	fprintf(out, "\n");
}

/* Connects, errors by kind, and each --mix path's share. */
static void report_connects_errors(FILE *out, const struct csl_config *cfg,
				   const struct csl_stats *st, const struct csl_summary *sum)
{
	fprintf(out, "  Connects: %" PRIu64 ", p50 ", sum->connect_us.count);
	put_us(out, sum->connect_us.p50);
	fprintf(out, ", p99 ");
	put_us(out, sum->connect_us.p99);
	fprintf(out, ", max ");
	put_us(out, sum->connect_us.max);
	fprintf(out, "\n    %" PRIu64 " took >= 1 s (SYN retransmits); %" PRIu64 " reconnects; %" PRIu64 " idle connections closed by the server\n",
		st->connects_over_1s, st->reconnects, st->idle_closes);
	if (cfg->tls) {
		fprintf(out, "  TLS handshakes: %" PRIu64 " (1.2: %" PRIu64 ", 1.3: %" PRIu64 "), p50 ",
			sum->handshake_us.count, st->tls12, st->tls13);
		put_us(out, sum->handshake_us.p50);
		fprintf(out, ", p99 ");
		put_us(out, sum->handshake_us.p99);
		fprintf(out, ", max ");
		put_us(out, sum->handshake_us.max);
		fprintf(out, "; failed: %" PRIu64 "\n", st->errors[CSL_ERR_TLS_HANDSHAKE]);
	}

	fprintf(out, "  Errors: ");
	bool any = false;
	for (int k = 0; k < CSL_ERR__COUNT; k++) {
		if (!st->errors[k])
			continue;
		fprintf(out, "%s%s %" PRIu64, any ? ", " : "", csl_err_name(k), st->errors[k]);
		any = true;
	}
	fprintf(out, "%s\n", any ? "" : "none");
	if (st->unexpected_bytes)
		fprintf(out, "  %" PRIu64 " unexpected bytes arrived outside any response\n",
			st->unexpected_bytes);

	if (cfg->npaths > 1) {
		fprintf(out, "  %-26s %10s %8s %9s%9s%9s\n", "Per path:", "requests", "errors", "p50",
			"p99", "max");
		for (unsigned int i = 0; i < cfg->npaths; i++) {
			fprintf(out, "    %-24s %10" PRIu64 " %8" PRIu64 " ", cfg->paths[i].path,
				st->path_requests[i], st->path_errors[i]);
			put_us(out, sum->path_us[i].p50);
			put_us(out, sum->path_us[i].p99);
			put_us(out, sum->path_us[i].max);
			fprintf(out, "\n");
		}
	}
}

void csl_report_text(FILE *out, const struct csl_config *cfg, const struct csl_stats *st)
{
	struct csl_summary sum;
	csl_stats_summarize(st, &sum);

	report_run(out, cfg, st, &sum);
	report_latency(out, st, &sum);
	report_connects_errors(out, cfg, st, &sum);
}

/* Paths are printable ASCII (csl_path_valid): only " and \ need escapes. */
static void put_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void put_span_json(FILE *out, const char *name, const struct csl_span_us *span)
{
	fprintf(out, ",\n \"%s\": {\"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, \"p999\": %.3f, \"max\": %.3f}",
		name, span->p50, span->p90, span->p99, span->p999, span->max);
}

/* --tls: the version asked for, and the handshakes that completed (the
 * failed ones are errors: tls_handshake_errors). */
static void put_tls_json(FILE *out, const struct csl_config *cfg, const struct csl_stats *st,
			 const struct csl_summary *sum)
{
	fprintf(out, ",\n \"tls_version\": \"%s\"",
		cfg->tls_version == 12   ? "1.2"
		: cfg->tls_version == 13 ? "1.3"
					 : "negotiated");
	fprintf(out, ",\n \"tls_handshakes\": {\"count\": %" PRIu64 ", \"tls12\": %" PRIu64 ", \"tls13\": %" PRIu64 ", \"p50_us\": %.3f, \"p99_us\": %.3f, \"max_us\": %.3f}",
		sum->handshake_us.count, st->tls12, st->tls13, sum->handshake_us.p50,
		sum->handshake_us.p99, sum->handshake_us.max);
	fprintf(out, ",\n \"tls_close_notify\": %" PRIu64, st->tls_close_notify);
}

void csl_report_json(FILE *out, const struct csl_config *cfg, const struct csl_stats *st)
{
	struct csl_summary sum;
	csl_stats_summarize(st, &sum);

	fprintf(out, "{\"target\": \"");
	fprintf(out, target_fmt(cfg), cfg->host, cfg->port);
	fprintf(out, "\", \"mode\": \"%s\", \"keepalive\": %s, \"tls\": %s, \"connections\": %u, \"threads\": %u",
		cfg->rate > 0 ? "open" : "closed", cfg->keepalive ? "true" : "false",
		cfg->tls ? "true" : "false", cfg->connections, cfg->threads);
	if (cfg->rate > 0)
		fprintf(out, ", \"rate_target\": %.6f", cfg->rate);
	fprintf(out, ",\n \"requests\": %" PRIu64 ", \"attempts\": %" PRIu64 ", \"duration_s\": %.6f, \"rate_rps\": %.3f",
		st->requests, st->attempts, sum.duration_s, sum.rate_rps);

	fprintf(out, ",\n \"errors\": {\"total\": %" PRIu64, sum.errors_total);
	for (int k = 0; k < CSL_ERR__COUNT; k++)
		fprintf(out, ", \"%s\": %" PRIu64, csl_err_name(k), st->errors[k]);
	fprintf(out, "}");

	fprintf(out, ",\n \"latency_us\": {\"p50\": %.3f, \"p75\": %.3f, \"p90\": %.3f, "
		     "\"p99\": %.3f, \"p999\": %.3f, \"p9999\": %.3f, \"max\": %.3f, \"mean\": %.3f, "
		     "\"min\": %.3f}",
		sum.latency_us.p50, sum.latency_us.p75, sum.latency_us.p90, sum.latency_us.p99,
		sum.latency_us.p999, sum.latency_us.p9999, sum.latency_us.max, sum.latency_us.mean,
		sum.latency_us.min);
	fprintf(out, ",\n \"connect_us\": {\"p50\": %.3f, \"p99\": %.3f, \"max\": %.3f, "
		     "\"count\": %" PRIu64 "}",
		sum.connect_us.p50, sum.connect_us.p99, sum.connect_us.max, sum.connect_us.count);
	fprintf(out, ",\n \"send_lag_us\": {\"p50\": %.3f, \"p99\": %.3f, \"max\": %.3f}",
		sum.send_lag_us.p50, sum.send_lag_us.p99, sum.send_lag_us.max);
	if (cfg->tls)
		put_tls_json(out, cfg, st, &sum);
	put_span_json(out, "service_us", &sum.service_us);
	put_span_json(out, "from_send_us", &sum.from_send_us);
	if (sum.from_send_running_count)
		put_span_json(out, "from_send_running_us", &sum.from_send_running_us);
	fprintf(out, ",\n \"connects_over_1s\": %" PRIu64 ", \"reconnects\": %" PRIu64 ", \"idle_closes\": %" PRIu64 ", \"unsent\": %" PRIu64 ", \"unexpected_bytes\": %" PRIu64,
		st->connects_over_1s, st->reconnects, st->idle_closes, st->unsent,
		st->unexpected_bytes);
	fprintf(out, ",\n \"status\": {\"1xx\": %" PRIu64 ", \"2xx\": %" PRIu64 ", \"3xx\": %" PRIu64 ", \"4xx\": %" PRIu64 ", \"5xx\": %" PRIu64 ", \"other\": %" PRIu64 "}",
		st->status_classes[1], st->status_classes[2], st->status_classes[3],
		st->status_classes[4], st->status_classes[5], st->status_classes[0]);

	fprintf(out, ",\n \"per_path\": [");
	for (unsigned int i = 0; i < cfg->npaths; i++) {
		fprintf(out, "%s\n  {\"path\": ", i ? "," : "");
		put_json_string(out, cfg->paths[i].path);
		fprintf(out, ", \"fraction\": %.6f, \"requests\": %" PRIu64 ", \"errors\": %" PRIu64 ", \"latency_us\": {\"p50\": %.3f, \"p99\": %.3f, \"max\": %.3f}}",
			cfg->paths[i].fraction, st->path_requests[i], st->path_errors[i], sum.path_us[i].p50,
			sum.path_us[i].p99, sum.path_us[i].max);
	}
	fprintf(out, "]}\n");
}
