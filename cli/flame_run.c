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
	if (known_target(run, tgid) || run->target_count == FG_MAX_TGIDS)
		return;
	char comm[64] = "?";
	cs_proc_comm((pid_t)tgid, comm, sizeof(comm));
	run->targets[run->target_count].tgid = tgid;
	snprintf(run->targets[run->target_count].name, FG_NAME_LEN, "%s (pid %u)", comm, tgid);
	run->target_count++;
}

/*
 * A leaf without a frame pointer (libc's system call wrappers) leaves the
 * frame pointer on its caller's frame, so the walk skips that caller (the
 * handler that called nanosleep()). Its return address lies between the
 * stack pointer and that frame: the words there (the first
 * CS_STACK_SCAN_WORDS) that point right after a call instruction are
 * inserted behind the leaf, in stack order.
 */
static void restore_skipped_callers(struct fg_run *run, uint32_t tgid, struct cs_stack *stack)
{
	if (stack->user_frames < 2 || !stack->user_sp || stack->user_bp <= stack->user_sp)
		return;
	/* A leaf with a frame of its own skipped nothing: the words are its locals. */
	if (cs_symbolizer_leaf_has_frame(run->symbols, (pid_t)tgid, stack->user_ips[0]))
		return;
	/* The caller's return address sits just above the leaf's small frame. */
	uint64_t found[8];
	size_t n = 0, words = (stack->user_bp - stack->user_sp) / sizeof(uint64_t);
	if (words > CS_STACK_SCAN_WORDS)
		words = CS_STACK_SCAN_WORDS;
	for (size_t i = 0; i < words && n < 8; i++)
		if (cs_symbolizer_is_return_address(run->symbols, (pid_t)tgid, stack->user_words[i]))
			found[n++] = stack->user_words[i];
	if (!n)
		return;
	size_t have = stack->user_frames < CS_STACK_DEPTH ? stack->user_frames : CS_STACK_DEPTH;
	size_t keep = have + n <= CS_STACK_DEPTH ? have : CS_STACK_DEPTH - n;
	memmove(&stack->user_ips[1 + n], &stack->user_ips[1], (keep - 1) * sizeof(uint64_t));
	memcpy(&stack->user_ips[1], found, n * sizeof(uint64_t));
	stack->user_frames = (uint32_t)(keep + n);
	run->callers_restored += n;
}

static int collect_stack(void *ctx, const void *record, size_t len)
{
	struct fg_run *run = ctx;
	const struct cs_event_header *hdr = record;
	/* A worker forked since the start: its mappings, before its stacks are read. */
	if (len >= sizeof(struct cs_ev_cpu_sample) && (hdr->type == CS_EV_CPU_SAMPLE || hdr->type == CS_EV_OFF_CPU)) {
		uint32_t tgid = hdr->type == CS_EV_CPU_SAMPLE ? ((const struct cs_ev_cpu_sample *)record)->tgid
							      : ((const struct cs_ev_off_cpu *)record)->tgid;
		if (!known_target(run, tgid))
			snapshot_process(run, tgid);
	}
	if (hdr->type == CS_EV_CPU_SAMPLE && len == sizeof(run->copy.sample)) {
		memcpy(&run->copy.sample, record, len);
		restore_skipped_callers(run, run->copy.sample.tgid, &run->copy.sample.stack);
		record = &run->copy.sample;
	} else if (hdr->type == CS_EV_OFF_CPU && len == sizeof(run->copy.off_cpu)) {
		memcpy(&run->copy.off_cpu, record, len);
		restore_skipped_callers(run, run->copy.off_cpu.tgid, &run->copy.off_cpu.stack);
		record = &run->copy.off_cpu;
	}
	cs_flame_collect_stack_record(&run->collector, record, len);
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
	cs_symbolizer_free(run->symbols);
	cs_flame_collect_free(&run->collector);
	cs_engine_free(run->engine);
}
