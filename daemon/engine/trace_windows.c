// SPDX-License-Identifier: BSD-2-Clause
#include "trace_windows.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

struct cs_trace_schedule cs_trace_schedule_default(void)
{
	return (struct cs_trace_schedule){ CS_TRACE_DEFAULT_WINDOW_NS, CS_TRACE_DEFAULT_PERIOD_NS };
}

struct cs_trace_schedule cs_trace_schedule_always(void)
{
	return (struct cs_trace_schedule){ 0, 0 };
}

bool cs_trace_schedule_is_always(const struct cs_trace_schedule *schedule)
{
	return schedule->window_ns >= schedule->period_ns;
}

/* Seconds, as a decimal number, in ns; false if it is not one. */
static bool seconds_ns(const char *text, size_t len, uint64_t *out_ns)
{
	char copy[32];
	if (len == 0 || len >= sizeof(copy))
		return false;
	memcpy(copy, text, len);
	copy[len] = '\0';
	char *end;
	errno = 0;
	double seconds = strtod(copy, &end);
	if (errno || end == copy || *end || !isfinite(seconds) || seconds <= 0 ||
	    seconds > (double)CS_TRACE_MAX_PERIOD_NS / NS_PER_SEC)
		return false;
	*out_ns = (uint64_t)llround(seconds * NS_PER_SEC);
	return true;
}

int cs_trace_schedule_parse(const char *text, struct cs_trace_schedule *schedule, char *errmsg, size_t errlen)
{
	if (!strcmp(text, "always")) {
		*schedule = cs_trace_schedule_always();
		return 0;
	}
	const char *slash = strchr(text, '/');
	struct cs_trace_schedule parsed;
	if (!slash || !seconds_ns(text, (size_t)(slash - text), &parsed.window_ns) ||
	    !seconds_ns(slash + 1, strlen(slash + 1), &parsed.period_ns)) {
		snprintf(errmsg, errlen, "expects 'always' or WINDOW/PERIOD in seconds (e.g. 1/10), not '%s'",
			 text);
		return -1;
	}
	if (parsed.window_ns < CS_TRACE_MIN_WINDOW_NS || parsed.window_ns > parsed.period_ns) {
		snprintf(errmsg, errlen, "expects a window of at least 0.1 s and no longer than its period "
			 "(at most 3600 s), not '%s'", text);
		return -1;
	}
	*schedule = parsed;
	if (cs_trace_schedule_is_always(schedule))
		*schedule = cs_trace_schedule_always();
	return 0;
}

void cs_trace_schedule_format(const struct cs_trace_schedule *schedule, char *out, size_t len)
{
	if (cs_trace_schedule_is_always(schedule))
		snprintf(out, len, "always");
	else
		snprintf(out, len, "%g/%g", (double)schedule->window_ns / NS_PER_SEC,
			 (double)schedule->period_ns / NS_PER_SEC);
}

void cs_trace_windows_start(struct cs_trace_windows *tw, const struct cs_trace_schedule *schedule,
			    uint64_t now_ns)
{
	memset(tw, 0, sizeof(*tw));
	tw->schedule = *schedule;
	tw->start_ns = now_ns;
	tw->opened_ns = now_ns;
	tw->windows = 1;
	tw->number = 1; /* odd: open, as the BPF side starts */
	tw->tracing = true;
}

/* The start of the first period at or after now_ns. */
static uint64_t next_period_start(const struct cs_trace_windows *tw, uint64_t now_ns)
{
	uint64_t period = tw->schedule.period_ns;
	uint64_t since = now_ns - tw->start_ns;
	return tw->start_ns + (since + period - 1) / period * period;
}

enum cs_trace_edge cs_trace_windows_step(struct cs_trace_windows *tw, uint64_t now_ns)
{
	if (cs_trace_schedule_is_always(&tw->schedule)) {
		if (tw->tracing)
			return CS_TRACE_KEEP;
		tw->next_open_ns = now_ns; /* a reload to always: open at once */
	}
	if (tw->tracing) {
		if (now_ns - tw->opened_ns < tw->schedule.window_ns)
			return CS_TRACE_KEEP;
		tw->closed_traced_ns += now_ns - tw->opened_ns;
		tw->tracing = false;
		tw->number++;
		/* The next period's start: a window held open longer (a stalled loop, a reload) delays it. */
		tw->next_open_ns = next_period_start(tw, now_ns);
		return CS_TRACE_CLOSE;
	}
	if (now_ns < tw->next_open_ns)
		return CS_TRACE_KEEP;
	tw->tracing = true;
	tw->opened_ns = now_ns;
	tw->windows++;
	tw->number++;
	return CS_TRACE_OPEN;
}

void cs_trace_windows_reschedule(struct cs_trace_windows *tw, const struct cs_trace_schedule *schedule)
{
	tw->schedule = *schedule;
	if (!tw->tracing && !cs_trace_schedule_is_always(schedule))
		tw->next_open_ns = next_period_start(tw, tw->next_open_ns);
}

uint64_t cs_trace_windows_traced_ns(const struct cs_trace_windows *tw, uint64_t now_ns)
{
	uint64_t open_ns = tw->tracing && now_ns > tw->opened_ns ? now_ns - tw->opened_ns : 0;
	return tw->closed_traced_ns + open_ns;
}

double cs_trace_estimate(uint64_t traced_count, uint64_t traced_ns, uint64_t span_ns)
{
	if (!traced_ns || traced_ns >= span_ns)
		return (double)traced_count;
	return (double)traced_count * (double)span_ns / (double)traced_ns;
}

void cs_trace_meta_configured(const struct cs_trace_schedule *schedule, struct cs_trace_meta *meta)
{
	bool always = cs_trace_schedule_is_always(schedule);
	memset(meta, 0, sizeof(*meta));
	meta->sampled = !always;
	meta->window_s = always ? 0 : (double)schedule->window_ns / NS_PER_SEC;
	meta->period_s = always ? 0 : (double)schedule->period_ns / NS_PER_SEC;
}

void cs_trace_windows_meta(const struct cs_trace_windows *tw, uint64_t now_ns, struct cs_trace_meta *meta)
{
	bool always = cs_trace_schedule_is_always(&tw->schedule);
	meta->sampled = !always || tw->windows > 1;
	meta->window_s = always ? 0 : (double)tw->schedule.window_ns / NS_PER_SEC;
	meta->period_s = always ? 0 : (double)tw->schedule.period_ns / NS_PER_SEC;
	meta->traced_s = (double)cs_trace_windows_traced_ns(tw, now_ns) / NS_PER_SEC;
	meta->windows = tw->windows;
	meta->tracing = tw->tracing;
	meta->as_of_ns = now_ns;
}

double cs_trace_meta_traced_s(const struct cs_trace_meta *meta, uint64_t now_ns)
{
	double open_s = meta->tracing && now_ns > meta->as_of_ns ? (double)(now_ns - meta->as_of_ns) / NS_PER_SEC : 0;
	return meta->traced_s + open_s;
}

void cs_trace_meta_advance(struct cs_report_meta *meta, uint64_t now_ns)
{
	struct cs_trace_meta *trace = &meta->trace;
	if (!trace->as_of_ns || now_ns <= trace->as_of_ns)
		return;
	meta->duration_s += (double)(now_ns - trace->as_of_ns) / NS_PER_SEC;
	trace->traced_s = cs_trace_meta_traced_s(trace, now_ns);
	trace->as_of_ns = now_ns;
}

void cs_traced_summarize(const struct cs_trace_meta *meta, double duration_s, uint64_t requests_traced,
			uint64_t requests_seen, struct cs_traced_summary *summary)
{
	memset(summary, 0, sizeof(*summary));
	summary->requests_traced = requests_traced;
	summary->share = 1;
	summary->traced_s = duration_s;
	summary->requests_estimated = (double)requests_traced;
	if (!meta->sampled)
		return;
	summary->sampled = true;
	summary->traced_s = meta->traced_s < duration_s ? meta->traced_s : duration_s;
	summary->share = duration_s > 0 ? summary->traced_s / duration_s : 1;
	uint64_t traced_ns = (uint64_t)(summary->traced_s * NS_PER_SEC);
	summary->requests_estimated = cs_trace_estimate(requests_seen, traced_ns, (uint64_t)(duration_s * NS_PER_SEC));
}

static uint64_t rise(uint64_t from, uint64_t to)
{
	return to > from ? to - from : 0;
}

void cs_between_add(struct cs_between_counts *sum, const struct cs_tcp_counters *from,
		    const struct cs_tcp_counters *to, uint64_t gap_ns)
{
	struct cs_tcp_counters *added = &sum->added;
	added->listen_overflows += rise(from->listen_overflows, to->listen_overflows);
	added->listen_drops += rise(from->listen_drops, to->listen_drops);
	added->syncookies_sent += rise(from->syncookies_sent, to->syncookies_sent);
	added->passive_opens += rise(from->passive_opens, to->passive_opens);
	added->estab_resets += rise(from->estab_resets, to->estab_resets);
	added->out_rsts += rise(from->out_rsts, to->out_rsts);
	sum->gaps++;
	sum->gap_s += (double)gap_ns / NS_PER_SEC;
}
