/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * connscope top's model: what one frame shows, read from a snapshot's
 * JSON (daemon/render/live.h). The daemon and the in-process engine both hand top
 * that JSON, so top has one source format whichever runs the probes.
 *
 * Why JSON rather than a binary snapshot: it is the format `connscope
 * snapshot --json` already prints for scripts, so there is one encoding to
 * keep in step with the engine instead of two; at one frame a second its
 * cost (tens of microseconds to parse) does not matter; and it is read
 * with jansson, fuzzed here (tests/fuzz/fuzz_ctl_proto.c).
 *
 * Pure code; every field is clamped or cut to fit, so any JSON (valid or
 * hostile) yields a drawable model.
 */
#ifndef CS_TOP_MODEL_H
#define CS_TOP_MODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "window.h"

#define CS_TOP_LISTENERS 16
#define CS_TOP_THREADS 256
#define CS_TOP_CONDITIONS 9
#define CS_TOP_UPSTREAMS 8
#define CS_TOP_CLIENTS 4

struct cs_top_latency {
	double p50_us, p90_us, p99_us, p999_us, max_us;
	uint64_t count;
};

struct cs_top_listener {
	uint16_t port;
	double accepts_per_s;
	uint32_t backlog_now, backlog_max, backlog_limit;
	uint64_t drops;
	double accept_wait_p99_us;
};

struct cs_top_thread {
	uint32_t tid, pid;
	char comm[CS_COMM_LEN * 2];
	double requests_per_s;
	uint64_t requests, accepts;
	double runq_p99_us;
	double busy_share;
	char roles[8];              /* one letter a role: a acceptor, p poller, l event loop, w worker */
};

/* A server the target calls (the snapshot's upstreams[]). */
struct cs_top_upstream {
	char endpoint[136];         /* "127.0.0.1:6379", "[::1]:8081", "/run/redis/redis.sock" */
	uint64_t exchanges, not_joined;
	uint64_t connects_retransmitted; /* connects that waited for a SYN retransmit */
	double wait_p50_us, wait_p99_us; /* sent -> the answer's first byte */
	double connect_p99_us;
	double tail_share;          /* of the tail's time, waiting on it */
};

/* A local client of the target (the snapshot's clients[]): its own delay beside the server's. */
struct cs_top_client {
	char comm[16];
	uint32_t pid;
	uint64_t connections;
	double read_delay_p99_us;   /* answers arrived -> read by the client */
	double runq_p99_us;         /* of that, waiting for a CPU */
	double measured_p99_us;     /* what the client measured of the joined requests */
	double server_p99_us;       /* the server's own latency of the same requests */
	double busy_share;          /* its busiest thread's time on a CPU */
	bool bound;                 /* client_bound: its own delay weighs */
};

struct cs_top_condition {
	char name[32];
	char advice[128];
};

struct cs_top_model {
	char target[160];
	char netns[16];             /* the target's network namespace (inode); "" not known */
	char container[80];         /* "docker:ID", "systemd:x.service"; "" none */
	char source[32];
	double duration_s;          /* the statistics' span (since start or reset) */
	double uptime_s;
	uint64_t events, lost, skipped; /* records received and lost; probe runs the kernel skipped */
	bool cost_recorded;         /* the snapshot's "cost": what connscope costs */
	double bpf_ns_per_request;  /* < 0: not measured (BPF statistics off) or no request */
	double cpu_share;           /* the daemon's (or connscope's) CPU, share of one CPU */
	uint64_t requests;
	uint64_t multiplexed;       /* connections whose requests overlap: not in the latency */
	uint64_t adopted;           /* connections older than the attach, followed from an idle moment */
	uint64_t in_flight_at_attach; /* their requests under way then: left out */
	double requests_per_s;      /* the last second */
	struct {
		bool sampled;           /* requests traced in windows (the report's "tracing") */
		double window_s, period_s, share;
		uint64_t requests_traced;
		double requests_estimated;
		bool counters_between;  /* nothing followed between windows: the kernel's counts instead */
		bool between_valid;
		uint64_t between_netns, between_opened, between_drops, between_resets;
	} tracing;
	struct cs_top_latency total;   /* since the statistics began */
	struct cs_top_latency window;  /* the last minute */
	int window_seconds;
	double p99_series_us[CS_WINDOW_SECONDS]; /* oldest first; < 0: no request that second */
	int series_len;
	double tail_percentile, tail_threshold_us;
	uint64_t tail_requests;
	struct {
		char name[24];
		double share;
	} causes[CS_CAUSE_COUNT];
	int cause_count;
	struct cs_top_listener listeners[CS_TOP_LISTENERS];
	int listener_count;
	int upstream_count;
	uint64_t upstreams_more;    /* upstreams not shown */
	struct cs_top_upstream upstreams[CS_TOP_UPSTREAMS]; /* the most of the tail first */
	int client_count;
	uint64_t clients_more;      /* clients not shown */
	struct cs_top_client clients[CS_TOP_CLIENTS]; /* as the snapshot lists them */
	struct cs_top_condition conditions[CS_TOP_CONDITIONS];
	int condition_count;
	struct cs_top_thread threads[CS_TOP_THREADS];
	int thread_count;
};

/* The model of a parsed snapshot; anything missing or mistyped reads as zero or empty. */
void cs_top_model_from_value(struct cs_top_model *m, const json_t *root);
/*
 * Parses len bytes of json (a snapshot from what: the daemon, a file)
 * into the model. Returns 0, or -EINVAL with err saying where the JSON
 * broke (cs_json_load); the model is then empty.
 */
int cs_top_model_read(struct cs_top_model *m, const char *json, size_t len, const char *what, char *err,
		      size_t err_len);

#endif /* CS_TOP_MODEL_H */
