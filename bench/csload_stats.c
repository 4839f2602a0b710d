// SPDX-License-Identifier: BSD-2-Clause
#include "csload_stats.h"

#include <stdlib.h>
#include <string.h>

static const char *const err_names[CSL_ERR__COUNT] = {
	[CSL_ERR_CONNECT] = "connect_errors",
	[CSL_ERR_CONNECT_TIMEOUT] = "connect_timeouts",
	[CSL_ERR_TLS_HANDSHAKE] = "tls_handshake_errors",
	[CSL_ERR_TIMEOUT] = "timeouts",
	[CSL_ERR_EOF_BEFORE] = "eof_before_response",
	[CSL_ERR_EOF_MID] = "eof_mid_response",
	[CSL_ERR_RESET] = "resets",
	[CSL_ERR_BAD_RESPONSE] = "bad_responses",
	[CSL_ERR_NON_2XX] = "non_2xx",
	[CSL_ERR_UNFINISHED] = "unfinished",
	[CSL_ERR_OTHER] = "other",
};

const char *csl_err_name(enum csl_err kind)
{
	return (unsigned int)kind < CSL_ERR__COUNT ? err_names[kind] : "?";
}

static struct cs_hist *hist_new(void)
{
	struct cs_hist *h = malloc(sizeof(*h));
	if (h)
		cs_hist_init(h);
	return h;
}

int csl_stats_init(struct csl_stats *st, unsigned int npaths)
{
	memset(st, 0, sizeof(*st));
	st->npaths = npaths;
	st->start_ns = UINT64_MAX;
	st->latency = hist_new();
	st->connect = hist_new();
	st->send_lag = hist_new();
	st->service = hist_new();
	st->from_send = hist_new();
	st->from_send_running = hist_new();
	st->handshake = hist_new();
	bool ok = st->latency && st->connect && st->send_lag && st->service && st->from_send &&
		  st->from_send_running && st->handshake;
	for (unsigned int i = 0; i < npaths; i++) {
		st->path_latency[i] = hist_new();
		ok = ok && st->path_latency[i];
	}
	if (!ok) {
		csl_stats_free(st);
		return -1;
	}
	return 0;
}

void csl_stats_free(struct csl_stats *st)
{
	free(st->latency);
	free(st->connect);
	free(st->send_lag);
	free(st->service);
	free(st->from_send);
	free(st->from_send_running);
	free(st->handshake);
	for (unsigned int i = 0; i < CSL_MAX_PATHS; i++)
		free(st->path_latency[i]);
	memset(st, 0, sizeof(*st));
}

void csl_stats_merge(struct csl_stats *into, const struct csl_stats *from)
{
	cs_hist_merge(into->latency, from->latency);
	cs_hist_merge(into->connect, from->connect);
	cs_hist_merge(into->send_lag, from->send_lag);
	cs_hist_merge(into->service, from->service);
	cs_hist_merge(into->from_send, from->from_send);
	cs_hist_merge(into->from_send_running, from->from_send_running);
	cs_hist_merge(into->handshake, from->handshake);
	for (unsigned int i = 0; i < into->npaths && i < from->npaths; i++) {
		cs_hist_merge(into->path_latency[i], from->path_latency[i]);
		into->path_requests[i] += from->path_requests[i];
		into->path_errors[i] += from->path_errors[i];
	}
	into->requests += from->requests;
	for (int k = 0; k < CSL_ERR__COUNT; k++)
		into->errors[k] += from->errors[k];
	into->attempts += from->attempts;
	into->connects += from->connects;
	into->connects_over_1s += from->connects_over_1s;
	into->reconnects += from->reconnects;
	into->tls12 += from->tls12;
	into->tls13 += from->tls13;
	into->tls_close_notify += from->tls_close_notify;
	into->idle_closes += from->idle_closes;
	into->unexpected_bytes += from->unexpected_bytes;
	into->unsent += from->unsent;
	for (int k = 0; k < 6; k++)
		into->status_classes[k] += from->status_classes[k];
	if (from->start_ns < into->start_ns)
		into->start_ns = from->start_ns;
	if (from->end_ns > into->end_ns)
		into->end_ns = from->end_ns;
}

void csl_stats_response(struct csl_stats *st, unsigned int path, uint64_t latency_ns, int status)
{
	st->requests++;
	cs_hist_record(st->latency, latency_ns);
	if (path < st->npaths) {
		cs_hist_record(st->path_latency[path], latency_ns);
		st->path_requests[path]++;
	}
	int cls = status / 100;
	st->status_classes[(cls >= 1 && cls <= 5) ? cls : 0]++;
	if (cls != 2)
		st->errors[CSL_ERR_NON_2XX]++;
}

void csl_stats_error(struct csl_stats *st, unsigned int path, enum csl_err kind)
{
	if ((unsigned int)kind < CSL_ERR__COUNT)
		st->errors[kind]++;
	if (path < st->npaths)
		st->path_errors[path]++;
}

void csl_stats_connect(struct csl_stats *st, uint64_t connect_ns)
{
	st->connects++;
	cs_hist_record(st->connect, connect_ns);
	if (connect_ns >= CSL_SLOW_CONNECT_NS)
		st->connects_over_1s++;
}

void csl_stats_handshake(struct csl_stats *st, uint64_t handshake_ns, unsigned int minor)
{
	cs_hist_record(st->handshake, handshake_ns);
	if (minor == 2)
		st->tls12++;
	else if (minor == 3)
		st->tls13++;
}

void csl_stats_sent(struct csl_stats *st, uint64_t lag_ns)
{
	cs_hist_record(st->send_lag, lag_ns);
}

void csl_stats_service(struct csl_stats *st, uint64_t service_ns, uint64_t from_send_ns)
{
	cs_hist_record(st->service, service_ns);
	cs_hist_record(st->from_send, from_send_ns);
}

void csl_stats_from_send_running(struct csl_stats *st, uint64_t ns)
{
	cs_hist_record(st->from_send_running, ns);
}

void csl_stats_span(struct csl_stats *st, uint64_t start_ns, uint64_t end_ns)
{
	if (start_ns < st->start_ns)
		st->start_ns = start_ns;
	if (end_ns > st->end_ns)
		st->end_ns = end_ns;
}

static double us(uint64_t ns)
{
	return (double)ns / 1000.0;
}

static void summarize_span(const struct cs_hist *h, struct csl_span_us *out)
{
	out->p50 = us(cs_hist_percentile(h, 50));
	out->p90 = us(cs_hist_percentile(h, 90));
	out->p99 = us(cs_hist_percentile(h, 99));
	out->p999 = us(cs_hist_percentile(h, 99.9));
	out->max = us(h->max);
}

void csl_stats_summarize(const struct csl_stats *st, struct csl_summary *out)
{
	memset(out, 0, sizeof(*out));
	if (st->end_ns > st->start_ns && st->start_ns != UINT64_MAX)
		out->duration_s = (double)(st->end_ns - st->start_ns) / 1e9;
	if (out->duration_s > 0)
		out->rate_rps = (double)st->requests / out->duration_s;
	for (int k = 0; k < CSL_ERR__COUNT; k++)
		if (k != CSL_ERR_NON_2XX)
			out->errors_total += st->errors[k];

	const struct cs_hist *h = st->latency;
	out->latency_us.p50 = us(cs_hist_percentile(h, 50));
	out->latency_us.p75 = us(cs_hist_percentile(h, 75));
	out->latency_us.p90 = us(cs_hist_percentile(h, 90));
	out->latency_us.p99 = us(cs_hist_percentile(h, 99));
	out->latency_us.p999 = us(cs_hist_percentile(h, 99.9));
	out->latency_us.p9999 = us(cs_hist_percentile(h, 99.99));
	out->latency_us.max = us(h->max);
	out->latency_us.min = h->count ? us(h->min) : 0;
	out->latency_us.mean = h->count ? (double)h->sum / (double)h->count / 1000.0 : 0;

	out->connect_us.p50 = us(cs_hist_percentile(st->connect, 50));
	out->connect_us.p99 = us(cs_hist_percentile(st->connect, 99));
	out->connect_us.max = us(st->connect->max);
	out->connect_us.count = st->connect->count;

	out->send_lag_us.p50 = us(cs_hist_percentile(st->send_lag, 50));
	out->send_lag_us.p99 = us(cs_hist_percentile(st->send_lag, 99));
	out->send_lag_us.max = us(st->send_lag->max);

	out->handshake_us.p50 = us(cs_hist_percentile(st->handshake, 50));
	out->handshake_us.p99 = us(cs_hist_percentile(st->handshake, 99));
	out->handshake_us.max = us(st->handshake->max);
	out->handshake_us.count = st->handshake->count;

	summarize_span(st->service, &out->service_us);
	summarize_span(st->from_send, &out->from_send_us);
	summarize_span(st->from_send_running, &out->from_send_running_us);
	out->from_send_running_count = st->from_send_running->count;

	for (unsigned int i = 0; i < st->npaths; i++) {
		out->path_us[i].p50 = us(cs_hist_percentile(st->path_latency[i], 50));
		out->path_us[i].p99 = us(cs_hist_percentile(st->path_latency[i], 99));
		out->path_us[i].max = us(st->path_latency[i]->max);
	}
}
