// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope status: is connscoped up, what does it watch, for how long,
 * how many events has it taken and lost. Exit 0 when it answers, 1 when
 * none runs (one line saying so).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "ctl_client.h"
#include "json.h"

static const char usage[] =
	"Usage: connscope status [--socket PATH] [--json]\n"
	"\n"
	"Ask the connscope daemon (connscoped) whether it is up, what it watches, since\n"
	"when, how many events it has taken in and lost, and how many probe runs the\n"
	"kernel skipped.\n"
	"\n"
	"  -s, --socket PATH  the daemon's control socket (default " CS_CTL_DEFAULT_SOCKET ")\n"
	"  -j, --json         print the daemon's answer as it is (one JSON object)\n"
	"  -h, --help         this help\n"
	"\n"
	"Exit status: 0 the daemon answered, 1 no daemon (or it failed), 2 usage error.\n";

struct status_args {
	const char *path;
	bool json;
};

/* Its options, in the order a usage error lists them (cli.c defines each). */
static const char status_options[] = "socket json help";

static int take(struct cs_cli *cli, int opt, const char *arg, void *ctx)
{
	struct status_args *args = ctx;
	(void)cli;
	if (opt == 's')
		args->path = arg;
	else
		args->json = true;
	return CS_CLI_GO_ON;
}

static void uptime(char *buf, size_t len, double seconds)
{
	uint64_t s = (uint64_t)seconds;
	if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
}

static double number(const json_t *obj, const char *key)
{
	return cs_json_num(obj, key, 0);
}

/* "  listeners  :80 :443", "  processes  12 (nginx)" */
static void print_targets(const json_t *status)
{
	const json_t *ports = json_object_get(status, "ports"), *processes = json_object_get(status, "processes");
	const json_t *item;
	size_t i;
	printf("  listeners ");
	if (json_array_size(ports) == 0)
		printf(" none seen yet");
	json_array_foreach(ports, i, item)
		if (i < 64)
			printf(" :%.0f", json_is_number(item) ? json_number_value(item) : 0.0);
	printf("\n  processes ");
	if (json_array_size(processes) == 0)
		printf(" none seen yet");
	json_array_foreach(processes, i, item) {
		char comm[64];
		if (i >= 32)
			break;
		/* A process names itself: cs_json_str keeps control characters from the terminal. */
		cs_json_str(item, "comm", comm, sizeof(comm));
		printf(" %.0f (%s)", number(item, "pid"), comm);
	}
	printf("\n");
}

/* "  cost       BPF 3.7 us per request, ...; connscoped 1.20% of one CPU", or why a figure is missing. */
static void print_cost(const json_t *status)
{
	const json_t *cost = json_object_get(status, "cost");
	char note[160];
	if (!json_is_true(json_object_get(cost, "recorded"))) {
		printf("  cost       not measured yet\n");
		return;
	}
	printf("  cost       ");
	if (json_is_true(json_object_get(cost, "bpf_measured")) && json_is_true(json_object_get(cost, "bpf_sampled")))
		printf("BPF %.0f ns per request, %.0f ns per connection (%.0f runs, statistics on %.1f %% of the time); ",
		       number(cost, "bpf_ns_per_request"), number(cost, "bpf_ns_per_connection"), number(cost, "bpf_runs"),
		       100.0 * number(cost, "bpf_measured_share"));
	else if (json_is_true(json_object_get(cost, "bpf_measured")))
		printf("BPF %.0f ns per request, %.0f ns per connection (%.0f runs); ",
		       number(cost, "bpf_ns_per_request"), number(cost, "bpf_ns_per_connection"), number(cost, "bpf_runs"));
	else if (cs_json_str(cost, "note", note, sizeof(note)))
		printf("BPF %s; ", note);
	printf("connscoped %.2f%% of one CPU\n", 100.0 * number(cost, "cpu_share"));
}

/* "  between    the kernel counted in network namespace N (every port and process in it) ..." */
static void print_between(const json_t *counts)
{
	if (!json_is_true(json_object_get(counts, "valid"))) {
		printf("  between    nothing followed between windows; the kernel's counters could not be read\n");
		return;
	}
	printf("  between    the kernel counted in network namespace %.0f (every port and process in it) over %.0f "
	       "gap(s), %.1f s: %.0f connection(s) opened, %.0f listen overflow(s), %.0f listen drop(s), %.0f "
	       "established connection(s) reset, %.0f reset(s) sent\n",
	       number(counts, "netns"), number(counts, "gaps"), number(counts, "gap_s"),
	       number(counts, "connections_opened"), number(counts, "listen_overflows"),
	       number(counts, "listen_drops"), number(counts, "established_resets"), number(counts, "resets_sent"));
}

/* "  tracing    1 s in every 10 s: 10.0 % of the time, 351 requests traced of ~3510" */
static void print_tracing(const json_t *tracing)
{
	char mode[16];
	if (!tracing)
		return;
	cs_json_str(tracing, "mode", mode, sizeof(mode));
	if (strcmp(mode, "windows") != 0) {
		printf("  tracing    always: every request\n");
		return;
	}
	char schedule[48] = "always since a reload";
	if (number(tracing, "period_s") > 0)
		snprintf(schedule, sizeof(schedule), "%g s in every %g s", number(tracing, "window_s"),
			 number(tracing, "period_s"));
	char between[16] = "";
	cs_json_str(tracing, "between_windows", between, sizeof(between));
	bool counters = !strcmp(between, "counters");
	printf("  tracing    %s: %.1f %% of the time, %.0f requests traced of ~%.0f (%s)\n", schedule,
	       100 * number(tracing, "traced_share"), number(tracing, "requests_traced"),
	       number(tracing, "requests_estimated"),
	       counters ? "accepts, drops, resets, closes from the windows" : "accepts, drops, resets, closes exact");
	if (counters)
		print_between(json_object_get(tracing, "between_counts"));
}

static void print_status(const json_t *status, const char *path)
{
	char target[256], up[32], since[32];
	cs_json_str(status, "target", target, sizeof(target));
	uptime(up, sizeof(up), number(status, "uptime_s"));
	uptime(since, sizeof(since), number(status, "since_reset_s"));
	printf("connscoped is up (pid %.0f, socket %s)\n", number(status, "daemon_pid"), path);
	printf("  target     %s\n", target);
	print_targets(status);
	printf("  uptime     %s (statistics since %s ago)\n", up, since);
	printf("  events     %.0f taken in, %.0f lost, %.0f probe runs skipped by the kernel; %.0f requests\n",
	       number(status, "events"), number(status, "lost"), number(status, "skipped"),
	       number(status, "requests"));
	/* Connections older than the daemon (its start, or a restart's): said only when there were some. */
	if (number(status, "connections_adopted") > 0 || number(status, "requests_in_flight_at_attach") > 0)
		printf("  adopted    %.0f connections older than the attach, adopted at their first idle moment; "
		       "%.0f requests in flight at the attach left out\n", number(status, "connections_adopted"),
		       number(status, "requests_in_flight_at_attach"));
	print_cost(status);
	print_tracing(json_object_get(status, "tracing"));
	const json_t *control = json_object_get(status, "control");
	printf("  control    %.0f connection(s), %.0f refused, %.0f request(s) rejected, %.0f stream(s) dropped, "
	       "%.0f idle client(s) closed to make room\n",
	       number(control, "connections"), number(control, "refused"), number(control, "rejected"),
	       number(control, "streams_dropped"), number(control, "idle_dropped"));
}

static int show(const uint8_t *reply, size_t len, void *ctx)
{
	const struct status_args *args = ctx;
	if (args->json) {
		fwrite(reply, 1, len, stdout);
		return 0;
	}
	char err[512];
	json_t *status = cs_json_load((const char *)reply, len, "the daemon's status", err, sizeof(err));
	if (!json_is_object(status)) {
		if (status)
			snprintf(err, sizeof(err), "the daemon's status is not a JSON object");
		fprintf(stderr, "connscope: %s\n", err);
		json_decref(status);
		return 1;
	}
	print_status(status, args->path);
	json_decref(status);
	return 0;
}

static int run(struct cs_cli *cli, int argc, char **argv)
{
	struct status_args args = { .path = CS_CTL_DEFAULT_SOCKET };
	int rc = cs_cli_parse(cli, argc, argv, status_options, take, &args);
	if (rc != CS_CLI_GO_ON)
		return rc;
	return cs_ctl_ask(args.path, CS_CTL_STATUS, NULL, 0, show, &args);
}

/* Its entry in connscope.c's command table. */
const struct cs_cmd cs_cmd_status = {
	"status", "is the daemon (connscoped) up, what does it watch",
	run, usage, 0, NULL, false,
};
