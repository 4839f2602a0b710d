// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope flamegraph (--pid PID | --port PORT)... -o OUT.svg|OUT.folded
 *
 * Runs the main probes and the engine as attach does, plus the stack
 * probes (daemon/flame/stacks.c); keeps the slowest requests with their
 * phase windows and the target threads' samples and off-CPU intervals
 * (daemon/flame/flame_collect.c, through cli/flame_run.c); at the end joins
 * them (daemon/flame/flame_join.c), names the frames (daemon/flame/symbols.c)
 * and writes folded stacks or an SVG (daemon/flame/flame_tree.c,
 * flame_svg.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "flame_run.h"
#include "target_args.h"

#define HZ_DEFAULT 99                 /* --hz: on-CPU samples per second per CPU */
#define MIN_OFF_CPU_US_DEFAULT 100    /* --min-off-cpu-us */

static const char usage[] =
	"Usage: connscope flamegraph (--pid PID | --port PORT | --name NAME | --cgroup PATH)...\n"
	"                            -o OUT.svg|OUT.folded [options]\n"
	"\n"
	"Where the tail requests' time went, as stacks. Follows every request as attach\n"
	"does and samples the target threads on and off their CPUs; then each tail\n"
	"request's event_loop, handler and run_queue time is filled with its serving\n"
	"thread's stacks inside that phase; a wait for a pool (worker_pool; accept_queue\n"
	"in a pool of workers that accept) with the stacks of the pool's threads that\n"
	"were serving meanwhile, under [pool threads busy] or [pool workers busy].\n"
	"Frames, root to leaf: target, listener, cause, what the thread was doing\n"
	"(on-cpu, off-cpu, runnable, [not sampled]), then the stack. listen_overflow,\n"
	"send_drain and other accept_queue time have no stack.\n"
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
	"      --hz N            on-CPU samples per second per CPU (1-10000, default " CS_STR(HZ_DEFAULT) ")\n"
	"  -t, --tail P          the tail: requests at or above percentile P (50-99.999, default " CS_STR(CS_TAIL_DEFAULT) ")\n"
	"      --min-off-cpu-us N  off-CPU intervals shorter than N us are counted, not kept\n"
	"                        (1-1000000, default " CS_STR(MIN_OFF_CPU_US_DEFAULT) ")\n"
	"      --no-jvm          do not ask java targets for their thread names and\n"
	"                        compiled methods (/tmp/perf-PID.map, Compiler.perfmap)\n"
	"  -q, --quiet           no progress lines on stderr\n"
	"  -v, --verbose         show libbpf's log\n"
	"  -h, --help            this help\n"
	"\n"
	"Example:\n"
	"  connscope flamegraph --port 8080 --duration 10 -o tail.svg\n";

static const struct cs_number number_hz = { "--hz", 1, 10000, CS_NUMBER_INTEGER,
					    "samples per second, 1-10000" };
static const struct cs_number number_min_off_cpu = { "--min-off-cpu-us", 1, 1000000, CS_NUMBER_INTEGER,
						     "microseconds, 1-1000000" };

/* Its options, in the order a usage error lists them (cli.c defines each). */
static const char flamegraph_options[] =
	CS_TARGET_OPTIONS " output duration hz tail min-off-cpu-us no-jvm quiet verbose help";

static bool ends_with(const char *text, const char *suffix)
{
	size_t a = strlen(text), b = strlen(suffix);
	return a > b && !strcmp(text + a - b, suffix);
}

/* -o: one more output, its kind from its name. */
static int take_output(const struct cs_cli *cli, const char *arg, struct fg_args *args)
{
	if (args->output_count == FG_MAX_OUTPUTS)
		return cs_cli_usage(cli, "at most %d -o options", FG_MAX_OUTPUTS);
	if (ends_with(arg, ".svg"))
		args->kinds[args->output_count] = OUT_SVG;
	else if (ends_with(arg, ".folded"))
		args->kinds[args->output_count] = OUT_FOLDED;
	else
		return cs_cli_usage(cli, "-o expects a file name ending in .svg or .folded, not '%s'", arg);
	args->outputs[args->output_count++] = arg;
	return CS_CLI_GO_ON;
}

static int take(struct cs_cli *cli, int opt, const char *arg, void *ctx)
{
	struct fg_args *args = ctx;
	long value;
	if (opt == 'o')
		return take_output(cli, arg, args);
	if (opt == 't')
		return cs_cli_real(cli, &cs_number_tail, arg, &args->tail_percentile) ? CS_CLI_GO_ON : CS_EXIT_USAGE;
	/* --hz or --min-off-cpu-us */
	bool hz = opt == CS_OPT_HZ;
	if (!cs_cli_integer(cli, hz ? &number_hz : &number_min_off_cpu, arg, &value))
		return CS_EXIT_USAGE;
	if (hz)
		args->hz = (unsigned int)value;
	else
		args->min_off_cpu_ns = (uint64_t)value * 1000;
	return CS_CLI_GO_ON;
}

/* Returns CS_CLI_GO_ON, else an exit code. */
static int parse_args(struct cs_cli *cli, int argc, char **argv, struct fg_args *args)
{
	args->hz = HZ_DEFAULT;
	args->min_off_cpu_ns = MIN_OFF_CPU_US_DEFAULT * 1000;
	args->tail_percentile = CS_TAIL_DEFAULT;
	int rc = cs_target_parse(cli, argc, argv, flamegraph_options, take, args, &args->session);
	if (rc != CS_CLI_GO_ON)
		return rc;
	if (!args->output_count)
		return cs_cli_usage(cli, "name the output with -o OUT.svg or -o OUT.folded");
	cs_cli_catch_stop();
	return CS_CLI_GO_ON;
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

/* ---- the run ------------------------------------------------------------------------ */

/* The probes, the engine and the stacks until the end: 0, or CS_EXIT_RUNTIME after saying why. */
static int collect(struct fg_run *run)
{
	cs_flame_tree_init(&run->tree);
	run->engine = cs_engine_new();
	run->symbols = cs_symbolizer_new();
	if (!run->engine || !run->symbols || cs_flame_collect_init(&run->collector)) {
		fprintf(stderr, "connscope: out of memory\n");
		return CS_EXIT_RUNTIME;
	}
	struct cs_session_options *session = &run->args.session;
	session->tee = fg_collect_request;
	session->tee_ctx = run;
	session->on_attached = fg_start_stacks;
	session->on_attached_ctx = run;
	char errmsg[CS_ERRMSG_LEN];
	if (cs_session_run(session, run->engine, &run->result, errmsg, sizeof(errmsg))) {
		fprintf(stderr, "connscope: %s\n", errmsg);
		return CS_EXIT_RUNTIME;
	}
	cs_stacks_counters(&run->stacks, run->counters);
	run->event_name = run->stacks.event_name;
	run->cpus_sampled = run->stacks.cpus_sampled;
	/* Again: libraries loaded since; gone processes keep their first. */
	fg_snapshot_targets(run, !session->no_jvm);
	return 0;
}

/* The tail, as attach's report computes it, joined to the stacks into the tree. */
static int join_tail(struct fg_run *run)
{
	cs_compute_tail(run->engine, run->args.tail_percentile, &run->tail);
	run->tail_count = cs_flame_collect_tail(&run->collector, run->tail.threshold_ns);
	if (!run->tail_count) {
		fprintf(stderr, "connscope: no complete request was seen on %s in %.1f s: nothing to draw\n",
			run->result.target, run->result.meta.duration_s);
		return CS_EXIT_RUNTIME;
	}
	if (cs_flame_collect_pools(&run->collector, run->engine)) {
		fprintf(stderr, "connscope: out of memory while finding the pools' threads\n");
		return CS_EXIT_RUNTIME;
	}
	run->stack_names = calloc(run->collector.stack_count + 1, sizeof(*run->stack_names));
	run->stack_name_counts = calloc(run->collector.stack_count + 1, sizeof(*run->stack_name_counts));
	struct cs_flame_input input = {
		.requests = run->collector.requests,
		.request_count = run->tail_count,
		.samples = run->collector.samples,
		.sample_count = run->collector.sample_count,
		.off_cpu = run->collector.off_cpu,
		.off_cpu_count = run->collector.off_cpu_count,
		.serving = run->collector.serving,
		.serving_count = run->collector.serving_count,
		.pool_threads = run->collector.pool_threads,
		.pool_thread_count = run->collector.pool_thread_count,
		.sample_period_ns = 1000000000ull / run->args.hz,
	};
	if (!run->stack_names || !run->stack_name_counts || cs_flame_join(&input, fg_add_path, run, &run->stats)) {
		fprintf(stderr, "connscope: out of memory while joining stacks to requests\n");
		return CS_EXIT_RUNTIME;
	}
	cs_flame_tree_sort(&run->tree);
	return 0;
}

/*
 * What the target's connections spoke, most connections first (two at
 * most, and "..." for more): " speaking resp", " speaking http1 and tls";
 * empty when no connection's first bytes were seen.
 */
static void protocols_spoken(const struct cs_request_stats *r, char *out, size_t len)
{
	bool named[CS_PROTOCOL_COUNT] = { false };
	size_t used = 0, count = 0;
	out[0] = '\0';
	for (;;) {
		int best = -1;
		for (int p = 0; p < CS_PROTOCOL_COUNT; p++)
			if (!named[p] && r->connections_by_protocol[p] &&
			    (best < 0 || r->connections_by_protocol[p] > r->connections_by_protocol[best]))
				best = p;
		if (best < 0)
			return;
		named[best] = true;
		const char *lead = count == 0 ? " speaking " : count == 1 ? " and " : NULL;
		int n = lead ? snprintf(out + used, len - used, "%s%s", lead, cs_protocol_names[best])
			     : snprintf(out + used, len - used, ", ...");
		if (n < 0 || (size_t)n >= len - used || !lead)
			return;
		used += (size_t)n;
		count++;
	}
}

/* What the graph covers and what it lost, for the summary and the SVG. */
static void describe(struct fg_run *run)
{
	const struct fg_args *args = &run->args;
	const uint64_t *counters = run->counters;
	const char *event_name = run->event_name;
	char threshold[32], total[32], short_total[32];
	cs_format_duration(threshold, sizeof(threshold), run->tail.threshold_ns);
	cs_format_duration(total, sizeof(total), run->stats.total_ns);
	cs_format_duration(short_total, sizeof(short_total), counters[CS_STK_OFF_CPU_SHORT_NS]);
	char spoken[64];
	protocols_spoken(&run->engine->requests, spoken, sizeof(spoken));
	snprintf(run->title, sizeof(run->title), "connscope: where the tail went, %s%s (p%g: %zu requests >= %s, %s)",
		 run->result.target, spoken, args->tail_percentile, run->tail_count, threshold, total);
	snprintf(run->subtitle, sizeof(run->subtitle),
		 "%.1f s; on-CPU: %s at %u Hz on %d CPUs, %llu samples (%llu lost); off-CPU: %llu intervals "
		 ">= %llu us (%llu lost), %llu shorter not kept (%s); %.0f%% of the time sampled",
		 run->result.meta.duration_s, event_name ? event_name : "?", args->hz, run->cpus_sampled,
		 (unsigned long long)counters[CS_STK_SAMPLES], (unsigned long long)counters[CS_STK_SAMPLES_LOST],
		 (unsigned long long)counters[CS_STK_OFF_CPU], (unsigned long long)(args->min_off_cpu_ns / 1000),
		 (unsigned long long)counters[CS_STK_OFF_CPU_LOST], (unsigned long long)counters[CS_STK_OFF_CPU_SHORT],
		 short_total,
		 run->stats.total_ns ? 100.0 * (double)run->stats.sampled_ns / (double)run->stats.total_ns : 0);
}

static void print_summary(const struct fg_run *run)
{
	const uint64_t *counters = run->counters;
	fprintf(stderr, "%s\n", run->title);
	fprintf(stderr, "connscope: %s\n", run->subtitle);
	fprintf(stderr,
		"connscope: tail requests %llu, joined %zu (the %zu slowest of %llu kept with their phases); "
		"total %llu us; events lost %llu; user stacks unreadable %llu; threads not followed %llu; "
		"stack records dropped %llu; user stacks reused %llu\n",
		(unsigned long long)run->tail.requests, run->tail_count, run->collector.request_count,
		(unsigned long long)run->collector.requests_seen,
		(unsigned long long)((run->stats.total_ns + 500) / 1000),
		(unsigned long long)run->result.meta.events_lost,
		(unsigned long long)counters[CS_STK_USER_STACK_ERRORS],
		(unsigned long long)counters[CS_STK_THREADS_FULL],
		(unsigned long long)run->collector.records_dropped + (unsigned long long)run->collector.malformed,
		(unsigned long long)counters[CS_STK_USER_STACK_REUSED]);
	struct cs_unwind_stats unwind = { 0 };
	if (run->unwinder)
		cs_unwinder_stats(run->unwinder, &unwind);
	uint64_t copies = counters[CS_STK_USER_COPIES];
	fprintf(stderr,
		"connscope: user stacks copied %llu (%llu bytes each on average; %llu could not be read, %llu lost); "
		"unwound %llu in %.1f us each (%llu found no caller, %llu wanted more than the copy, "
		"deepest frame %llu bytes up); frames from the copy %llu, from the frame-pointer walk %llu; "
		"copies missing %llu\n",
		(unsigned long long)copies, (unsigned long long)(copies ? counters[CS_STK_USER_COPY_BYTES] / copies : 0),
		(unsigned long long)counters[CS_STK_USER_COPY_ERRORS], (unsigned long long)counters[CS_STK_USER_COPIES_LOST],
		(unsigned long long)unwind.stacks,
		unwind.stacks ? (double)unwind.elapsed_ns / 1000.0 / (double)unwind.stacks : 0.0,
		(unsigned long long)unwind.failures, (unsigned long long)unwind.short_copies,
		(unsigned long long)unwind.deepest_bytes, (unsigned long long)run->unwind.unwound,
		(unsigned long long)run->unwind.walk_kept, (unsigned long long)run->unwind.copies_missing);
	for (size_t i = 0; i < run->args.output_count; i++)
		fprintf(stderr, "connscope: wrote %s\n", run->args.outputs[i]);
}

static int flamegraph(struct fg_run *run)
{
	int rc = collect(run);
	cs_stacks_stop(&run->stacks);
	if (!rc)
		rc = join_tail(run);
	if (rc)
		return rc;
	describe(run);
	const struct cs_flame_svg_options svg = { .title = run->title, .subtitle = run->subtitle,
						  .context_depth = 4 };
	for (size_t i = 0; i < run->args.output_count; i++)
		if (write_output(run->args.outputs[i], run->args.kinds[i], &run->tree, &svg))
			return CS_EXIT_RUNTIME;
	if (!run->args.session.quiet)
		print_summary(run);
	return 0;
}

static int run(struct cs_cli *cli, int argc, char **argv)
{
	/* On the heap: the run keeps the name of every target process, and the tail. */
	struct fg_run *run = calloc(1, sizeof(*run));
	if (!run) {
		fprintf(stderr, "connscope: out of memory\n");
		return CS_EXIT_RUNTIME;
	}
	int rc = parse_args(cli, argc, argv, &run->args);
	if (rc == CS_CLI_GO_ON) {
		rc = flamegraph(run);
		fg_free_run(run);
	}
	free(run);
	return rc;
}

/* Its entry in connscope.c's command table. */
const struct cs_cmd cs_cmd_flamegraph = {
	"flamegraph", "where the tail requests' time went, as stacks (SVG or folded stacks)",
	run, usage, 0, NULL, false,
};
