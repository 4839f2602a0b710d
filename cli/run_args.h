/* SPDX-License-Identifier: BSD-2-Clause */
/* What attach and record share: their options (targets, probes, duration) and the report. */
#ifndef CS_CLI_RUN_ARGS_H
#define CS_CLI_RUN_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cli.h"
#include "engine.h"
#include "report.h"
#include "session.h"

/* The options part of attach's and record's --help. */
#define CS_RUN_OPTIONS_HELP \
	"Targets (at least one; each repeatable):\n" \
	"  -p, --pid PID        all threads of process PID and the TCP ports it listens on\n" \
	"  -P, --port PORT      every process listening on PORT, and workers they fork later\n" \
	"  -n, --name NAME      processes whose command or executable is NAME, that listen\n" \
	"  -c, --cgroup PATH    processes that listen, in cgroup v2 PATH (as\n" \
	"                       /proc/PID/cgroup shows it) or below it\n" \
	"  -N, --netns NS       --port's listeners are in network namespace NS: a name\n" \
	"                       'ip netns list' shows, a PID, or a /proc/PID/ns/net\n" \
	"                       (--pid, --name, --cgroup look in their process's own)\n" \
	"\n" \
	"Options:\n" \
	"  -d, --duration SEC   stop after SEC seconds (default: until Ctrl-C or the target exits)\n" \
	"  -t, --tail P         the tail is the requests at or above percentile P (default " CS_STR(CS_TAIL_DEFAULT) ")\n" \
	"      --slowest N      (attach) also list the N slowest requests (1-512): when, peer,\n" \
	"                       listener, thread, index on the connection, split by cause\n" \
	"      --sample-hz N    listener queue samples per second (1-1000, default " CS_STR(CS_SAMPLE_HZ_DEFAULT) ")\n" \
	"      --ring-mb N      ring buffer size in MiB, a power of two (1-1024, default " CS_STR(CS_RING_MB_DEFAULT) ")\n" \
	"      --trace always|W/P  (attach) trace requests W seconds at the start of every\n" \
	"                       P seconds only, the request probes detached between\n" \
	"                       (as connscoped by default); default always\n" \
	"      --no-handshakes  do not follow local clients' SYN retransmits\n" \
	"      --no-clients     do not follow local clients' reads of their answers\n" \
	"                       (their own delay, client_bound)\n" \
	"      --no-pauses      do not attach the JVM pause probes (uprobes on a java\n" \
	"                       target's libjvm.so): runtime_pause is then not measured\n" \
	"      --bpf-stats yes|always|no  the kernel's BPF run-time statistics, for the\n" \
	"                       report's BPF cost: yes (default) turns them on in sampled\n" \
	"                       seconds (about 1 in 10) and estimates from those; always,\n" \
	"                       the whole run (two clock reads around every BPF run on\n" \
	"                       the machine); no (or --no-bpf-stats): not measured\n" \
	"      --no-jvm         do not ask java targets for their thread names at the end\n" \
	"                       (through the JVM's attach mechanism, as jcmd does)\n" \
	"  -q, --quiet          no progress lines on stderr\n" \
	"  -v, --verbose        show libbpf's log\n" \
	"  -h, --help           this help\n"

struct run_args {
	struct cs_session_options session;
	bool recording;              /* record: -o required, no --json or --slowest */
	bool json;
	const char *output;          /* the trace file: record's, or attach's copy of the stream */
	double tail_percentile;
	size_t slowest;
};

/* attach's or record's command line into args (signals caught): CS_CLI_GO_ON, or an exit code. */
int cs_run_args_parse(struct cs_cli *cli, int argc, char **argv, struct run_args *args);

/* The report, as text or JSON, on stdout (attach, report). */
void cs_print_report(const struct cs_engine *engine, const struct cs_report_meta *meta, bool json);

/* An engine, or NULL after saying "out of memory". */
struct cs_engine *cs_cli_engine_new(void);

#endif /* CS_CLI_RUN_ARGS_H */
