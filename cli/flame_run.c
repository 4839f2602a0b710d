// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope flamegraph's run: the records it takes (the requests' for the
 * collector, the stack probes' samples and off-CPU intervals), the target
 * processes' names and mappings taken while they run, and the frames'
 * names for the tree, built once per stack.
 */
#include "flame_run.h"

#include <stdlib.h>
#include <string.h>

#include "attrib.h"
#include "jvm.h"
#include "procfs.h"
#include "words.h"

int fg_collect_request(void *ctx, const void *record, size_t len)
{
	struct fg_run *run = ctx;
	cs_flame_collect_request(&run->collector, run->engine, record, len);
	return 0;
}

/* The target entry of tgid, or NULL when it is not known yet. */
static const char *known_target(const struct fg_run *run, uint32_t tgid)
{
	for (size_t i = 0; i < run->target_count; i++)
		if (run->targets[i].tgid == tgid)
			return run->targets[i].name;
	return NULL;
}

/* Read a target's mappings (again) and remember its name, while it runs. */
static void snapshot_process(struct fg_run *run, uint32_t tgid)
{
	cs_symbolizer_add_process(run->symbols, (pid_t)tgid);
	cs_unwinder_add_process(run->unwinder, (pid_t)tgid);
	if (known_target(run, tgid) || run->target_count == FG_MAX_TGIDS)
		return;
	char comm[64] = "?";
	cs_proc_comm((pid_t)tgid, comm, sizeof(comm));
	run->targets[run->target_count].tgid = tgid;
	snprintf(run->targets[run->target_count].name, FG_NAME_LEN, "%s (pid %u)", comm, tgid);
	run->target_count++;
}

/*
 * A thread's latest switch-out copy, unwound when an interval first names
 * it: a switch-out's interval is often too short to keep (an event loop's
 * busy moments), and then its copy is never needed.
 */
#define NOT_UNWOUND UINT32_MAX

struct kept_copy {
	uint64_t taken_ns;
	uint32_t tgid;
	uint32_t count; /* frames in ips; NOT_UNWOUND: not yet */
	uint64_t ips[CS_STACK_DEPTH];
	uint64_t ip, sp, bp;
	size_t len;
	unsigned char bytes[CS_USER_STACK_BYTES];
};

/* The copy a stack was taken with, unwound: up to CS_STACK_DEPTH frames into ips; 0 when none. */
static size_t unwind_copy(struct fg_run *run, uint32_t tgid, const struct cs_user_stack *copy, uint64_t *ips)
{
	int n = cs_unwind(run->unwinder, (pid_t)tgid, copy, ips, CS_STACK_DEPTH);
	return n > 0 ? (size_t)n : 0;
}

/*
 * The user frames of stack: those unwound from its copy where they get
 * further than the frame-pointer walk's (which stops at the first frame
 * of code built without frame pointers: Debian's glibc, python3,
 * libjvm), else the walk's.
 */
static void take_frames(struct fg_run *run, struct cs_stack *stack, const uint64_t *ips, size_t count)
{
	uint32_t walked = stack->user_frames < CS_STACK_DEPTH ? stack->user_frames : CS_STACK_DEPTH;
	if (count <= walked) {
		run->unwind.walk_kept++;
		return;
	}
	memcpy(stack->user_ips, ips, count * sizeof(ips[0]));
	stack->user_frames = (uint32_t)count;
	run->unwind.unwound++;
}

/* A switch-out's copy (struct cs_ev_user_stack and its bytes), kept for its thread. */
static void keep_copy(struct fg_run *run, const struct cs_ev_user_stack *ev, size_t len)
{
	/* Past FG_MAX_THREADS threads: its intervals count it missing. */
	struct kept_copy *kept = cs_u64map_put(&run->copies, ev->tid, NULL);
	if (!kept)
		return;
	kept->taken_ns = ev->hdr.ts_ns;
	kept->tgid = ev->tgid;
	kept->count = NOT_UNWOUND;
	kept->ip = ev->ip;
	kept->sp = ev->sp;
	kept->bp = ev->bp;
	kept->len = len - sizeof(*ev) <= sizeof(kept->bytes) ? len - sizeof(*ev) : sizeof(kept->bytes);
	memcpy(kept->bytes, ev + 1, kept->len);
}

/* An interval's user frames: its thread's copy, named by the time it was taken. */
static void interval_frames(struct fg_run *run, struct cs_ev_off_cpu *ev)
{
	if (!ev->stack.user_stack_ns)
		return;
	struct kept_copy *kept = cs_u64map_get(&run->copies, ev->tid);
	if (!kept || kept->taken_ns != ev->stack.user_stack_ns || kept->tgid != ev->tgid) {
		run->unwind.copies_missing++;
		run->unwind.walk_kept++;
		return;
	}
	if (kept->count == NOT_UNWOUND) {
		const struct cs_user_stack copy = {
			.ip = kept->ip, .sp = kept->sp, .bp = kept->bp, .bytes = kept->bytes, .len = kept->len,
		};
		kept->count = (uint32_t)unwind_copy(run, ev->tgid, &copy, kept->ips);
	}
	take_frames(run, &ev->stack, kept->ips, kept->count);
}

/* A sample's user frames: its own copy, which follows it. */
static void sample_frames(struct fg_run *run, struct cs_ev_cpu_sample *ev, const void *bytes, size_t len)
{
	if (!ev->stack.user_stack_ns)
		return;
	const struct cs_user_stack copy = {
		.ip = ev->stack.user_ip, .sp = ev->stack.user_sp, .bp = ev->stack.user_bp, .bytes = bytes, .len = len,
	};
	uint64_t ips[CS_STACK_DEPTH];
	size_t count = unwind_copy(run, ev->tgid, &copy, ips);
	take_frames(run, &ev->stack, ips, count);
}

/* The size of a stack record of type without its copy, and its process; 0 for another type. */
static size_t fixed_part(const void *record, uint32_t *tgid)
{
	const struct cs_event_header *hdr = record;
	switch (hdr->type) {
	case CS_EV_CPU_SAMPLE:
		*tgid = ((const struct cs_ev_cpu_sample *)record)->tgid;
		return sizeof(struct cs_ev_cpu_sample);
	case CS_EV_OFF_CPU:
		*tgid = ((const struct cs_ev_off_cpu *)record)->tgid;
		return sizeof(struct cs_ev_off_cpu);
	case CS_EV_USER_STACK:
		*tgid = ((const struct cs_ev_user_stack *)record)->tgid;
		return sizeof(struct cs_ev_user_stack);
	default:
		return 0;
	}
}

/*
 * The stack probes' records. A record with a copy is reserved with room
 * for a whole one: its header says how much of it is the record.
 */
static int collect_stack(void *ctx, const void *record, size_t len)
{
	struct fg_run *run = ctx;
	const struct cs_event_header *hdr = record;
	uint32_t tgid = 0;
	size_t fixed = len >= sizeof(struct cs_ev_user_stack) ? fixed_part(record, &tgid) : 0;
	if (!fixed || hdr->size < fixed || hdr->size > len || (hdr->type == CS_EV_OFF_CPU && hdr->size != fixed)) {
		cs_flame_collect_stack_record(&run->collector, record, len); /* counted as malformed */
		return 0;
	}
	/* A worker forked since the start: its mappings, before its stacks are read. */
	if (!known_target(run, tgid))
		snapshot_process(run, tgid);
	if (hdr->type == CS_EV_USER_STACK) {
		keep_copy(run, record, hdr->size);
		return 0;
	}
	/* The fixed part, its user frames unwound; a sample's copy is not kept. */
	memcpy(&run->copy, record, fixed);
	if (hdr->type == CS_EV_CPU_SAMPLE)
		sample_frames(run, &run->copy.sample, (const char *)record + fixed, hdr->size - fixed);
	else
		interval_frames(run, &run->copy.off_cpu);
	run->copy.sample.hdr.size = (uint16_t)fixed;
	cs_flame_collect_stack_record(&run->collector, &run->copy, fixed);
	return 0;
}

void fg_snapshot_targets(struct fg_run *run, bool jvm)
{
	uint32_t tgids[FG_MAX_TGIDS];
	size_t count = 0;
	cs_stacks_targets(&run->stacks, tgids, FG_MAX_TGIDS, &count);
	struct cs_jvm_perfmaps maps = { .count = 0 };
	if (jvm)
		cs_jvm_write_perfmaps(tgids, count, run->args.session.quiet, &maps);
	for (size_t i = 0; i < count; i++)
		snapshot_process(run, tgids[i]);
	cs_jvm_remove_perfmaps(&maps);
}

int fg_start_stacks(void *ctx, struct cs_probes *probes, char *errmsg, size_t errlen)
{
	struct fg_run *run = ctx;
	run->unwinder = cs_unwinder_new();
	if (!run->unwinder || cs_u64map_init(&run->copies, sizeof(struct kept_copy), FG_MAX_THREADS)) {
		snprintf(errmsg, errlen, "out of memory");
		return -1;
	}
	struct cs_stack_options options = {
		.hz = run->args.hz,
		.min_off_cpu_ns = run->args.min_off_cpu_ns,
		.verbose = run->args.session.probe.verbose,
	};
	if (cs_stacks_start(&run->stacks, &options, probes, collect_stack, run, errmsg, errlen))
		return -1;
	fg_snapshot_targets(run, false);
	return 0;
}

/* ---- frames ------------------------------------------------------------------------ */

/*
 * Kernel stacks taken from a scheduler tracepoint begin (leaf side) with
 * the BPF machinery that took them: not the thread's work.
 */
static bool is_probe_frame(const char *name)
{
	return !strncmp(name, "bpf_", 4) || !strncmp(name, "__bpf_", 6) || !strncmp(name, "__traceiter_", 12) ||
	       !strncmp(name, "perf_trace_", 11);
}

/* The names of a stack's frames, root first: user frames, then kernel ones. */
static char **stack_frames(struct fg_run *run, uint32_t index, size_t *count)
{
	if (run->stack_names[index]) {
		*count = run->stack_name_counts[index];
		return run->stack_names[index];
	}
	const struct cs_flame_stack *stack = run->collector.stacks[index];
	size_t nk = stack->kernel_frames, nu = stack->user_frames;
	char **names = calloc(nk + nu + 1, sizeof(*names));
	if (!names) {
		*count = 0;
		return NULL;
	}
	size_t n = 0;
	char buf[FG_NAME_LEN];
	for (size_t i = nu; i-- > 0;) {
		cs_symbolize_user(run->symbols, (pid_t)stack->tgid, stack->ips[nk + i], i > 0, buf, sizeof(buf));
		names[n++] = strdup(buf);
	}
	/* Kernel frames, skipping the probe's own at the leaf end. */
	size_t skip = 0;
	for (; skip < nk; skip++) {
		cs_symbolize_kernel(run->symbols, stack->ips[skip], skip > 0, buf, sizeof(buf));
		if (!is_probe_frame(buf))
			break;
	}
	for (size_t i = nk; i-- > skip;) {
		cs_symbolize_kernel(run->symbols, stack->ips[i], i > 0, buf, sizeof(buf));
		size_t used = strlen(buf);
		snprintf(buf + used, sizeof(buf) - used, "_[k]"); /* flamegraph.pl's kernel mark */
		names[n++] = strdup(buf);
	}
	for (size_t i = 0; i < n; i++)
		if (!names[i])
			names[i] = strdup("[out of memory]");
	run->stack_names[index] = names;
	run->stack_name_counts[index] = n;
	*count = n;
	return names;
}

static const char *target_name(struct fg_run *run, uint32_t tgid, char *buf, size_t len)
{
	const char *name = known_target(run, tgid);
	if (name)
		return name;
	snprintf(buf, len, "pid %u", tgid);
	return buf;
}

void fg_add_path(void *ctx, const struct cs_flame_path *path, uint64_t weight_ns)
{
	struct fg_run *run = ctx;
	char target[FG_NAME_LEN], port[32];
	const char *frames[5 + 2 * CS_STACK_DEPTH]; /* target, port, cause, pool, phase, stack */
	size_t n = 0;
	frames[n++] = target_name(run, path->tgid, target, sizeof(target));
	snprintf(port, sizeof(port), "port %u", path->port);
	frames[n++] = port;
	frames[n++] = cs_cause_names[path->cause];
	const char *pool = path->pool ? cs_cause_pool_frame(path->cause) : NULL;
	if (pool)
		frames[n++] = pool;
	if (path->phase == CS_FLAME_UNSAMPLED)
		frames[n++] = "[not sampled]";
	else if (path->phase != CS_FLAME_NONE)
		frames[n++] = cs_flame_phase_names[path->phase];
	if (path->stack != CS_FLAME_NO_STACK) {
		size_t count = 0;
		char **names = stack_frames(run, path->stack, &count);
		for (size_t i = 0; names && i < count && n < sizeof(frames) / sizeof(frames[0]); i++)
			frames[n++] = names[i];
		if (!count)
			frames[n++] = "[no stack]";
	} else if (path->phase == CS_FLAME_ON_CPU || path->phase == CS_FLAME_OFF_CPU ||
		   path->phase == CS_FLAME_RUNNABLE) {
		frames[n++] = "[stack not kept]";
	}
	cs_flame_tree_add(&run->tree, frames, n, weight_ns);
}

void fg_free_run(struct fg_run *run)
{
	for (size_t i = 0; run->stack_names && i < run->collector.stack_count; i++) {
		if (!run->stack_names[i])
			continue;
		for (size_t j = 0; j < run->stack_name_counts[i]; j++)
			free(run->stack_names[i][j]);
		free(run->stack_names[i]);
	}
	free(run->stack_names);
	free(run->stack_name_counts);
	cs_flame_tree_free(&run->tree);
	cs_stacks_stop(&run->stacks);
	cs_unwinder_free(run->unwinder);
	cs_u64map_free(&run->copies);
	cs_symbolizer_free(run->symbols);
	cs_flame_collect_free(&run->collector);
	cs_engine_free(run->engine);
}
