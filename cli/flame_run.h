/* SPDX-License-Identifier: BSD-2-Clause */
/* connscope flamegraph's options and run, shared by cmd_flamegraph.c and flame_run.c. */
#ifndef CS_CLI_FLAME_RUN_H
#define CS_CLI_FLAME_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attrib.h"
#include "engine.h"
#include "flame_collect.h"
#include "flame_join.h"
#include "flame_tree.h"
#include "report.h"
#include "session.h"
#include "stacks.h"
#include "symbols.h"
#include "u64map.h"
#include "unwind.h"

#define FG_MAX_TGIDS 4096
#define FG_MAX_THREADS 4096 /* threads whose latest stack copy is kept (16 KiB each): the probes' table */
#define FG_NAME_LEN 256
#define FG_MAX_OUTPUTS 4

enum output_kind { OUT_SVG, OUT_FOLDED };

struct fg_args {
	struct cs_session_options session;
	const char *outputs[FG_MAX_OUTPUTS];
	enum output_kind kinds[FG_MAX_OUTPUTS];
	size_t output_count;
	unsigned int hz;
	uint64_t min_off_cpu_ns;
	double tail_percentile;
};

/* One flamegraph's run, from the options to the written files. */
struct fg_run {
	struct fg_args args;
	struct cs_engine *engine;
	struct cs_flame_collector collector;
	struct cs_stack_probes stacks;
	struct cs_symbolizer *symbols;
	struct cs_unwinder *unwinder;
	struct cs_u64map copies;      /* tid -> its latest switch-out copy (flame_run.c) */
	struct {
		uint64_t unwound;         /* user stacks whose frames came from their copy */
		uint64_t walk_kept;       /* ... from the frame-pointer walk, which got as far */
		uint64_t copies_missing;  /* copies named by an interval but not kept (lost, or too many threads) */
	} unwind;
	union {                       /* a stack record's fixed part, its user frames unwound */
		struct cs_ev_cpu_sample sample;
		struct cs_ev_off_cpu off_cpu;
	} copy;

	/* Frame names, built once per stack and per process. */
	char ***stack_names;          /* [stack][frame], root first; NULL until needed */
	size_t *stack_name_counts;
	struct { uint32_t tgid; char name[FG_NAME_LEN]; } targets[FG_MAX_TGIDS];
	size_t target_count;
	struct cs_flame_tree tree;

	/* At the end: what the session saw, the tail, what the join covered. */
	struct cs_session_result result;
	uint64_t counters[CS_STK_CTR_MAX];
	const char *event_name;       /* the stack probes', kept past cs_stacks_stop */
	int cpus_sampled;
	struct cs_tail tail;
	size_t tail_count;            /* the tail requests kept with their phases */
	struct cs_flame_stats stats;
	char title[512], subtitle[768];
};

/* The session's tee: every record, for the requests the collector keeps. */
int fg_collect_request(void *ctx, const void *record, size_t len);

/* The session's on_attached: the stack probes, once the main ones know their targets. */
int fg_start_stacks(void *ctx, struct cs_probes *probes, char *errmsg, size_t errlen);

/*
 * Every process the probes follow now (the shared target map): its name and
 * mappings. With jvm, a JVM's compiled Java methods too: the perf map it
 * writes for this, removed once read.
 */
void fg_snapshot_targets(struct fg_run *run, bool jvm);

/* cs_flame_join's callback: a path of the tree, named frame by frame. */
void fg_add_path(void *ctx, const struct cs_flame_path *path, uint64_t weight_ns);

void fg_free_run(struct fg_run *run);

#endif /* CS_CLI_FLAME_RUN_H */
