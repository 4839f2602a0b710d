/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reports: the engine's statistics as a human report or one JSON object,
 * and the diagnosis (one finding per problem, with advice). Renderers take
 * a FILE * and do no other I/O, so tests can render into memory.
 */
#ifndef CS_REPORT_H
#define CS_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "engine.h"
#include "run_stamp.h"

/* Kernel-wide TCP counters (TcpExt of /proc/PID/net/netstat) over the run. */
struct cs_netstat_delta {
	bool valid;
	uint64_t listen_overflows;
	uint64_t listen_drops;
	uint64_t syncookies_sent;
};

/* What the engine cannot know: the run around it. */
/* Where the target runs: its network namespace and cgroup (the first target's). */
struct cs_target_labels {
	uint32_t netns_ino;        /* the namespace's inode, as /proc/PID/ns/net shows it */
	char cgroup[512];          /* its cgroup v2 path; "" not known */
	char container[80];        /* "docker:ID", "systemd:x.service" (container.h); "" none */
};

struct cs_report_meta {
	const char *target;        /* e.g. "pid 1234 (csserver)" or "port 8080" */
	double duration_s;
	uint64_t events_lost;      /* ring-buffer records that could not be reserved */
	uint64_t table_full;       /* in-kernel table inserts that failed */
	uint64_t probe_runs_skipped; /* probe runs the kernel skipped (recursion): each may be an event lost */
	uint64_t records_read;     /* records taken off the ring buffer */
	double tail_percentile;    /* the tail: requests at or above it (0: 99) */
	size_t slowest;            /* list this many slowest requests (0: none) */
	double window_from_s;      /* a part of a recording (report --from/--to), from its */
	double window_to_s;        /* first record; to 0: the whole run */
	struct cs_netstat_delta netstat;
	struct cs_run_stamp stamp;  /* when and where the run started */
	const struct cs_target_labels *labels; /* NULL: not known (a trace file) */
};

#define CS_FINDING_CODE_LEN 32
#define CS_FINDING_TEXT_LEN 512

struct cs_finding {
	char code[CS_FINDING_CODE_LEN];   /* stable name, e.g. "backlog_full" */
	uint16_t port;                    /* listener it concerns, 0: whole run */
	char text[CS_FINDING_TEXT_LEN];   /* what was seen, with its numbers */
	char advice[CS_FINDING_TEXT_LEN]; /* what an operator can do */
};

/* Fills at most max findings, most serious first; returns how many. */
size_t cs_diagnose(const struct cs_engine *engine, const struct cs_report_meta *meta,
		   struct cs_finding *findings, size_t max);

/* The meta->slowest slowest requests, one by one (report_slowest.c). */
void cs_report_slowest_text(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta);
void cs_report_slowest_json(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta);
void cs_report_text(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta);
void cs_report_json(FILE *out, const struct cs_engine *engine, const struct cs_report_meta *meta);

/* text as a JSON string: escaped, invalid UTF-8 replaced by U+FFFD. */
void cs_json_write_string(FILE *out, const char *text);
/* ,"roles":[...] of a thread (names of enum cs_thread_role). */
void cs_json_roles(FILE *out, const struct cs_thread_stats *thread);

/* "850 us", "12.3 ms", "3.00 s": a duration in ns made readable. */
void cs_format_duration(char *buf, size_t len, uint64_t ns);

#endif /* CS_REPORT_H */
