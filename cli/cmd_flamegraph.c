// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope flamegraph (--pid PID | --port PORT)... -o OUT.svg|OUT.folded
 *
 * Runs the main probes and the engine as attach does, plus the stack
 * probes (daemon/flame/stacks.c); keeps the slowest requests with their phase
 * windows and the target threads' samples and off-CPU intervals
 * (daemon/flame/flame_collect.c); at the end joins them (daemon/flame/flame_join.c),
 * names the frames (daemon/flame/symbols.c) and writes folded stacks or an SVG
 * (daemon/flame/flame_tree.c, flame_svg.c).
 */
#include "cmd_flamegraph.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "ctl_client.h"
#include "target_args.h"
#include "attrib.h"
#include "engine.h"
#include "flame_collect.h"
#include "flame_join.h"
#include "flame_tree.h"
#include "jvm.h"
#include "procfs.h"
#include "report.h"
#include "session.h"
#include "stacks.h"
#include "symbols.h"
#include "targets.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define MAX_TGIDS 4096
#define NAME_LEN 256

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void help(FILE *out)
{
	fprintf(out,
		"Usage: connscope flamegraph (--pid PID | --port PORT | --name NAME | --cgroup PATH)...\n"
		"                            -o OUT.svg|OUT.folded [options]\n"
		"\n"
		"Where the tail requests' time went, as stacks. Follows every request as attach\n"
		"does and samples the target threads on and off their CPUs; then each tail\n"
		"request's event_loop, handler and run_queue time is filled with its serving\n"
		"thread's stacks inside that phase. Frames, root to leaf: target, listener,\n"
		"cause, what the thread was doing (on-cpu, off-cpu, runnable, [not sampled]),\n"
		"then the stack. accept_queue, listen_overflow and send_drain have no stack.\n"
		"\n"
		"Targets (at least one; each repeatable):\n"
		"  -p, --pid PID         all threads of process PID and the TCP ports it listens on\n"
		"  -P, --port PORT       every process listening on PORT\n"
		"  -n, --name NAME       processes whose command or executable is NAME, that listen\n"
		"  -c, --cgroup PATH     processes that listen, in cgroup v2 PATH or below it\n"
		"  -N, --netns NS        --port's listeners are in network namespace NS ('ip netns'\n"
		"                        name, PID or /proc/PID/ns/net)\n"
		"\n"
		"Options:\n"
		"  -o, --output FILE     OUT.svg: an interactive SVG (hover, click to zoom, search);\n"
		"                        OUT.folded: folded stacks, weights in microseconds;\n"
		"                        repeatable (both from one run)\n"
		"  -d, --duration SEC    stop after SEC seconds (default: until Ctrl-C or the target exits)\n"
		"      --hz N            on-CPU samples per second per CPU (1-10000, default 99)\n"
		"  -t, --tail P          the tail: requests at or above percentile P (50-99.999, default 99)\n"
		"      --min-off-cpu-us N  off-CPU intervals shorter than N us are counted, not kept\n"
		"                        (1-1000000, default 100)\n"
		"      --no-jvm          do not ask java targets for their thread names and\n"
		"                        compiled methods (/tmp/perf-PID.map, Compiler.perfmap)\n"
		"  -q, --quiet           no progress lines on stderr\n"
		"  -v, --verbose         show libbpf's log\n"
		"  -h, --help            this help\n"
		"\n"
		"Example:\n"
		"  connscope flamegraph --port 8080 --duration 10 -o tail.svg\n");
}

enum output_kind { OUT_SVG, OUT_FOLDED };
#define MAX_OUTPUTS 4

struct fg_args {
	struct cs_session_options session;
	const char *outputs[MAX_OUTPUTS];
	enum output_kind kinds[MAX_OUTPUTS];
	size_t output_count;
	unsigned int hz;
	uint64_t min_off_cpu_ns;
	double tail_percentile;
};

static bool ends_with(const char *text, const char *suffix)
{
	size_t a = strlen(text), b = strlen(suffix);
	return a > b && !strcmp(text + a - b, suffix);
}

/* Returns -1 to go on, else an exit code. */
static int parse_args(int argc, char **argv, struct fg_args *args)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "port", required_argument, NULL, 'P' },
		{ "name", required_argument, NULL, 'n' },
		{ "cgroup", required_argument, NULL, 'c' },
		{ "netns", required_argument, NULL, 'N' },
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "hz", required_argument, NULL, 'Z' },
		{ "tail", required_argument, NULL, 't' },
		{ "min-off-cpu-us", required_argument, NULL, 'M' },
		{ "no-jvm", no_argument, NULL, 'J' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct cs_session_options *opts = &args->session;
	long value;
	int c;

	memset(args, 0, sizeof(*args));
	args->hz = 99;
	args->min_off_cpu_ns = 100 * 1000;
	args->tail_percentile = 99;
	cs_session_defaults(opts, &stop_requested);

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:P:n:c:N:o:d:t:qvh", longopts, NULL)) != -1) {
		char why[320];
		switch (cs_target_arg(c, optarg, opts, why, sizeof(why))) {
		case CS_TARGET_ARG_TAKEN:
			continue;
		case CS_TARGET_ARG_BAD:
			return cs_cli_usage("flamegraph", "%s", why);
		case CS_TARGET_ARG_NOT_MINE:
			break;
		}
		switch (c) {
		case 'o':
			if (args->output_count == MAX_OUTPUTS)
				return cs_cli_usage("flamegraph", "at most %d -o options", MAX_OUTPUTS);
			if (ends_with(optarg, ".svg"))
				args->kinds[args->output_count] = OUT_SVG;
			else if (ends_with(optarg, ".folded"))
				args->kinds[args->output_count] = OUT_FOLDED;
			else
				return cs_cli_usage("flamegraph", "-o expects a file name ending in .svg or .folded, not '%s'", optarg);
			args->outputs[args->output_count++] = optarg;
			break;
		case 'Z':
			if (!parse_long(optarg, 1, 10000, &value))
				return cs_cli_usage("flamegraph", "--hz expects samples per second, 1-10000, not '%s'", optarg);
			args->hz = (unsigned int)value;
			break;
		case 't':
			if (!parse_double(optarg, 50.0, 99.999, &args->tail_percentile))
				return cs_cli_usage("flamegraph", "--tail expects a percentile from 50 to 99.999, not '%s'", optarg);
			break;
		case 'M':
			if (!parse_long(optarg, 1, 1000000, &value))
				return cs_cli_usage("flamegraph", "--min-off-cpu-us expects microseconds, 1-1000000, not '%s'", optarg);
			args->min_off_cpu_ns = (uint64_t)value * 1000;
			break;
		case 'J':
			opts->no_jvm = true;
			break;
		case 'q':
			opts->quiet = true;
			break;
		case 'v':
			opts->probe.verbose = true;
			break;
		case 'h':
			help(stdout);
			return 0;
		case ':':
			return cs_cli_usage("flamegraph", "option '%s' needs a value", argv[optind - 1]);
		default:
			return cs_cli_usage("flamegraph", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cs_cli_usage("flamegraph", "unexpected argument '%s'", argv[optind]);
	if (opts->pid_count == 0 && opts->port_count == 0 && !cs_target_match_any(&opts->match))
		return cs_cli_usage("flamegraph", "name a target with --pid PID, --port PORT, --name NAME or --cgroup PATH");
	if (!args->output_count)
		return cs_cli_usage("flamegraph", "name the output with -o OUT.svg or -o OUT.folded");

	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	return -1;
}

/* ---- the run --------------------------------------------------------------------- */

struct fg_run {
	const struct fg_args *args;
	struct cs_engine *engine;
	struct cs_flame_collector collector;
	struct cs_stack_probes stacks;
	struct cs_symbolizer *symbols;
	uint64_t callers_restored;    /* frames the frame-pointer walk had skipped */

	/* Frame names, built once per stack and per process. */
	char ***stack_names;          /* [stack][frame], root first; NULL until needed */
	size_t *stack_name_counts;
	struct { uint32_t tgid; char name[NAME_LEN]; } targets[MAX_TGIDS];
	size_t target_count;
	struct cs_flame_tree tree;
};

static int collect_request(void *ctx, const void *record, size_t len)
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
	if (known_target(run, tgid) || run->target_count == MAX_TGIDS)
		return;
	char comm[64] = "?";
	cs_proc_comm((pid_t)tgid, comm, sizeof(comm));
	run->targets[run->target_count].tgid = tgid;
	snprintf(run->targets[run->target_count].name, NAME_LEN, "%s (pid %u)", comm, tgid);
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
	static union {
		struct cs_ev_cpu_sample sample;
		struct cs_ev_off_cpu off_cpu;
	} copy;
	if (hdr->type == CS_EV_CPU_SAMPLE && len == sizeof(copy.sample)) {
		memcpy(&copy.sample, record, len);
		restore_skipped_callers(run, copy.sample.tgid, &copy.sample.stack);
		record = &copy.sample;
	} else if (hdr->type == CS_EV_OFF_CPU && len == sizeof(copy.off_cpu)) {
		memcpy(&copy.off_cpu, record, len);
		restore_skipped_callers(run, copy.off_cpu.tgid, &copy.off_cpu.stack);
		record = &copy.off_cpu;
	}
	cs_flame_collect_stack_record(&run->collector, record, len);
	return 0;
}

/* Every process the probes follow now (the shared target map). */
/* With jvm, a JVM's compiled Java methods too: the perf map it writes for this, removed once read. */
static void snapshot_targets(struct fg_run *run, bool jvm)
{
	uint32_t tgids[MAX_TGIDS];
	size_t count = 0;
	cs_stacks_targets(&run->stacks, tgids, MAX_TGIDS, &count);
	struct cs_jvm_perfmaps maps = { .count = 0 };
	if (jvm)
		cs_jvm_write_perfmaps(tgids, count, run->args->session.quiet, &maps);
	for (size_t i = 0; i < count; i++)
		snapshot_process(run, tgids[i]);
	cs_jvm_remove_perfmaps(&maps);
}

static int start_stacks(void *ctx, struct cs_probes *probes, char *errmsg, size_t errlen)
{
	struct fg_run *run = ctx;
	struct cs_stack_options options = {
		.hz = run->args->hz,
		.min_off_cpu_ns = run->args->min_off_cpu_ns,
		.verbose = run->args->session.probe.verbose,
	};
	if (cs_stacks_start(&run->stacks, &options, probes, collect_stack, run, errmsg, errlen))
		return -1;
	snapshot_targets(run, false);
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
	char buf[NAME_LEN];
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

static void add_path(void *ctx, const struct cs_flame_path *path, uint64_t weight_ns)
{
	struct fg_run *run = ctx;
	char target[NAME_LEN], port[32];
	const char *frames[4 + 2 * CS_STACK_DEPTH];
	size_t n = 0;
	frames[n++] = target_name(run, path->tgid, target, sizeof(target));
	snprintf(port, sizeof(port), "port %u", path->port);
	frames[n++] = port;
	frames[n++] = cs_cause_names[path->cause];
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

/* ---- output ------------------------------------------------------------------------ */

static FILE *create_output(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return NULL;
	FILE *out = fdopen(fd, "w");
	if (!out)
		close(fd);
	return out;
}

/* Writes one output; a failure is reported on stderr. */
static int write_output(const char *path, enum output_kind kind, const struct cs_flame_tree *tree,
			const struct cs_flame_svg_options *svg)
{
	FILE *out = create_output(path);
	if (!out) {
		fprintf(stderr, "connscope: cannot create %s: %s%s\n", path, strerror(errno),
			errno == ELOOP ? " (it is a symlink: connscope does not write through links)" : "");
		return -1;
	}
	int err = kind == OUT_SVG ? cs_flame_write_svg(out, tree, svg) : cs_flame_write_folded(out, tree);
	if (fclose(out) && !err)
		err = -errno;
	if (err) {
		fprintf(stderr, "connscope: writing %s failed: %s\n", path, strerror(-err));
		return -1;
	}
	return 0;
}

static void free_run(struct fg_run *run)
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

int cmd_flamegraph(int argc, char **argv)
{
	static struct fg_args args;
	int rc = parse_args(argc, argv, &args);
	if (rc >= 0)
		return rc;

	static struct fg_run run;
	memset(&run, 0, sizeof(run));
	run.args = &args;
	cs_flame_tree_init(&run.tree);
	run.engine = cs_engine_new();
	run.symbols = cs_symbolizer_new();
	if (!run.engine || !run.symbols || cs_flame_collect_init(&run.collector)) {
		fprintf(stderr, "connscope: out of memory\n");
		free_run(&run);
		return EXIT_RUNTIME;
	}
	args.session.tee = collect_request;
	args.session.tee_ctx = &run;
	args.session.on_attached = start_stacks;
	args.session.on_attached_ctx = &run;

	struct cs_session_result result;
	char errmsg[CS_ERRMSG_LEN];
	if (cs_session_run(&args.session, run.engine, &result, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscope: %s\n", errmsg);
		free_run(&run);
		return EXIT_RUNTIME;
	}
	uint64_t counters[CS_STK_CTR_MAX];
	cs_stacks_counters(&run.stacks, counters);
	const char *event_name = run.stacks.event_name;
	int cpus = run.stacks.cpus_sampled;
	snapshot_targets(&run, !args.session.no_jvm); /* again: libraries loaded since; gone processes keep their first */
	cs_stacks_stop(&run.stacks);

	/* The tail, as attach's report computes it. */
	static struct cs_tail tail;
	cs_compute_tail(run.engine, args.tail_percentile, &tail);
	size_t tail_count = cs_flame_collect_tail(&run.collector, tail.threshold_ns);
	if (!tail_count) {
		fprintf(stderr, "connscope: no complete request was seen on %s in %.1f s: nothing to draw\n",
			result.target, result.meta.duration_s);
		free_run(&run);
		return EXIT_RUNTIME;
	}

	run.stack_names = calloc(run.collector.stack_count + 1, sizeof(*run.stack_names));
	run.stack_name_counts = calloc(run.collector.stack_count + 1, sizeof(*run.stack_name_counts));
	struct cs_flame_input input = {
		.requests = run.collector.requests,
		.request_count = tail_count,
		.samples = run.collector.samples,
		.sample_count = run.collector.sample_count,
		.off_cpu = run.collector.off_cpu,
		.off_cpu_count = run.collector.off_cpu_count,
		.sample_period_ns = 1000000000ull / args.hz,
	};
	struct cs_flame_stats stats;
	if (!run.stack_names || !run.stack_name_counts || cs_flame_join(&input, add_path, &run, &stats)) {
		fprintf(stderr, "connscope: out of memory while joining stacks to requests\n");
		free_run(&run);
		return EXIT_RUNTIME;
	}
	cs_flame_tree_sort(&run.tree);

	/* What the graph covers and what it lost, for the summary and the SVG. */
	char threshold[32], total[32], short_total[32];
	cs_format_duration(threshold, sizeof(threshold), tail.threshold_ns);
	cs_format_duration(total, sizeof(total), stats.total_ns);
	cs_format_duration(short_total, sizeof(short_total), counters[CS_STK_OFF_CPU_SHORT_NS]);
	char title[512], subtitle[768];
	snprintf(title, sizeof(title), "connscope: where the tail went, %s (p%g: %zu requests >= %s, %s)",
		 result.target, args.tail_percentile, tail_count, threshold, total);
	snprintf(subtitle, sizeof(subtitle),
		 "%.1f s; on-CPU: %s at %u Hz on %d CPUs, %llu samples (%llu lost); off-CPU: %llu intervals "
		 ">= %llu us (%llu lost), %llu shorter not kept (%s); %.0f%% of the time sampled",
		 result.meta.duration_s, event_name ? event_name : "?", args.hz, cpus,
		 (unsigned long long)counters[CS_STK_SAMPLES], (unsigned long long)counters[CS_STK_SAMPLES_LOST],
		 (unsigned long long)counters[CS_STK_OFF_CPU], (unsigned long long)(args.min_off_cpu_ns / 1000),
		 (unsigned long long)counters[CS_STK_OFF_CPU_LOST], (unsigned long long)counters[CS_STK_OFF_CPU_SHORT],
		 short_total, stats.total_ns ? 100.0 * (double)stats.sampled_ns / (double)stats.total_ns : 0);

	for (size_t i = 0; i < args.output_count; i++) {
		const struct cs_flame_svg_options svg = { .title = title, .subtitle = subtitle, .context_depth = 4 };
		if (write_output(args.outputs[i], args.kinds[i], &run.tree, &svg)) {
			free_run(&run);
			return EXIT_RUNTIME;
		}
	}

	if (!args.session.quiet) {
		fprintf(stderr, "%s\n", title);
		fprintf(stderr, "connscope: %s\n", subtitle);
		fprintf(stderr,
			"connscope: tail requests %llu, joined %zu (the %zu slowest of %llu kept with their phases); "
			"total %llu us; events lost %llu; user stacks unreadable %llu; threads not followed %llu; "
			"stack records dropped %llu; callers restored %llu; user stacks reused %llu\n",
			(unsigned long long)tail.requests, tail_count, run.collector.request_count,
			(unsigned long long)run.collector.requests_seen, (unsigned long long)((stats.total_ns + 500) / 1000),
			(unsigned long long)result.meta.events_lost,
			(unsigned long long)counters[CS_STK_USER_STACK_ERRORS],
			(unsigned long long)counters[CS_STK_THREADS_FULL],
			(unsigned long long)run.collector.records_dropped + (unsigned long long)run.collector.malformed,
			(unsigned long long)run.callers_restored,
			(unsigned long long)counters[CS_STK_USER_STACK_REUSED]);
		for (size_t i = 0; i < args.output_count; i++)
			fprintf(stderr, "connscope: wrote %s\n", args.outputs[i]);
	}
	free_run(&run);
	return 0;
}
