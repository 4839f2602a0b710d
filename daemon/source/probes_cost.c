// SPDX-License-Identifier: BSD-2-Clause
/*
 * What connscope costs the user: its BPF programs' run time as the kernel
 * counts it (bpf_prog_info.run_time_ns and run_cnt), and its own CPU time.
 *
 * The kernel counts run time only while BPF statistics are on: two clock
 * reads around every run of every BPF program on the machine, about as
 * much as the dispatch of a run itself. So by default the counting is
 * held on over every tracing window (where most runs are) and over one in
 * CS_BPF_STATS_SAMPLE_EVERY of the other spans between readings; the
 * engine scales what those spans measured by the time they stand for.
 * --bpf-stats always holds it the whole run. A holder process does the holding (stats_holder.h): the
 * kernel keeps a count of holders (the kernel.bpf_stats_enabled sysctl is
 * one, never written here), so its exit restores whatever was there
 * before, even when connscope is killed.
 */
#include "probes.h"
#include "probes_internal.h"
#include "probes_pauses.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "connscope.skel.h"
#include "units.h"

#define BPF_STATS_SYSCTL "/proc/sys/kernel/bpf_stats_enabled"

/* kernel.bpf_stats_enabled is 1: someone keeps the counting on already. */
static bool stats_sysctl_on(void)
{
	char value[8] = "";
	int fd = open(BPF_STATS_SYSCTL, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t got = read(fd, value, sizeof(value) - 1);
	close(fd);
	return got > 0 && value[0] == '1';
}

void cs_probes_cost_init(struct cs_probes *probes, const struct cs_probe_options *opts)
{
	struct cs_cost_sampler *cost = &probes->cost;
	memset(cost, 0, sizeof(*cost));
	cost->holder.sock = -1;
	if (stats_sysctl_on()) {
		cost->bpf_stats = CS_BPF_STATS_ALREADY_ON;
		return;
	}
	if (opts->no_bpf_stats) {
		cost->bpf_stats = CS_BPF_STATS_OFF;
		return;
	}
	int err = cs_stats_holder_start(&cost->holder);
	cost->sampling = !opts->bpf_stats_always;
	cost->bpf_stats = err              ? CS_BPF_STATS_FAILED
			  : cost->sampling ? CS_BPF_STATS_SAMPLED_ON
					   : CS_BPF_STATS_ENABLED;
	cost->error = -err;
}

void cs_probes_cost_free(struct cs_probes *probes)
{
	cs_stats_holder_stop(&probes->cost.holder);
}

/* This process's user and system CPU time, every thread's. */
static void self_cpu_ns(uint64_t *user_ns, uint64_t *system_ns)
{
	struct rusage usage;
	if (getrusage(RUSAGE_SELF, &usage)) {
		*user_ns = *system_ns = 0;
		return;
	}
	*user_ns = (uint64_t)usage.ru_utime.tv_sec * NS_PER_SEC + (uint64_t)usage.ru_utime.tv_usec * 1000;
	*system_ns = (uint64_t)usage.ru_stime.tv_sec * NS_PER_SEC + (uint64_t)usage.ru_stime.tv_usec * 1000;
}

void cs_probes_cost_begin(struct cs_probes *probes, uint64_t now_ns, bool in_window)
{
	struct cs_cost_sampler *cost = &probes->cost;
	cost->last_ns = now_ns;
	/* Held from the start (cs_probes_cost_init): a window's span, or the first sampled one. */
	cost->in_window = in_window;
	cost->plain_spans = in_window ? 0 : 1;
	self_cpu_ns(&cost->user_ns, &cost->system_ns);
}

static uint64_t grew(uint64_t latest, uint64_t before)
{
	return latest > before ? latest - before : 0;
}

/*
 * One program's reading: a record when it ran since the last one, over a
 * span that is measured (one not held while sampling is not: what others'
 * holding counted there is left out, as is a run that was under way when
 * the counting was let go).
 */
static void sample_program(struct cs_probes *probes, struct bpf_program *prog, size_t index, uint64_t now_ns,
			   bool measured)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	int fd = bpf_program__fd(prog);
	memset(&info, 0, sizeof(info));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return;
	typeof(probes->cost.progs[0]) *last = &probes->cost.progs[index];
	struct cs_ev_prog_cost ev = {
		.hdr = { .ts_ns = now_ns, .type = CS_EV_PROG_COST, .size = sizeof(ev) },
		.run_ns = grew(info.run_time_ns, last->run_ns),
		.runs = grew(info.run_cnt, last->runs),
		.prog_id = info.id,
	};
	last->prog_id = info.id;
	last->run_ns = info.run_time_ns;
	last->runs = info.run_cnt;
	if (!measured || (!ev.runs && !ev.run_ns))
		return;
	snprintf(ev.name, sizeof(ev.name), "%s", bpf_program__name(prog));
	probes->on_record(probes->ctx, &ev, sizeof(ev));
}

/* Hold the counting on or let it go; a holder that fails leaves the rest of the run unmeasured. */
static void hold(struct cs_cost_sampler *cost, bool on)
{
	int err = cs_stats_holder_set(&cost->holder, on);
	if (err) {
		cost->bpf_stats = CS_BPF_STATS_FAILED;
		cost->error = -err;
	}
}

void cs_probes_sample_cost(struct cs_probes *probes, uint64_t now_ns, bool next_in_window)
{
	struct cs_cost_sampler *cost = &probes->cost;
	if (!probes->skel || !cost->last_ns)
		return;
	bool sampling = cost->sampling && cost->bpf_stats != CS_BPF_STATS_FAILED;
	uint32_t span_stats = !sampling          ? cost->bpf_stats
			      : !cost->holder.on ? CS_BPF_STATS_SAMPLED_OFF
			      : cost->in_window  ? CS_BPF_STATS_SAMPLED_WINDOW
						 : CS_BPF_STATS_SAMPLED_ON;
	bool next_on = next_in_window || cs_bpf_stats_span_sampled(cost->plain_spans);
	/* Let go before the reading, take hold after it: no run of one span counts in the other. */
	if (sampling && cost->holder.on && !next_on)
		hold(cost, false);
	/* The pause probes' programs after the main object's: their places stay when they load later. */
	struct bpf_object *objects[] = { probes->skel->obj, cs_probes_pauses_object(probes) };
	struct bpf_program *prog;
	size_t index = 0;
	for (size_t o = 0; o < sizeof(objects) / sizeof(objects[0]); o++) {
		if (!objects[o])
			continue;
		bpf_object__for_each_program(prog, objects[o]) {
			if (index == CS_COST_PROGS_MAX)
				break;
			sample_program(probes, prog, index++, now_ns, span_stats != CS_BPF_STATS_SAMPLED_OFF);
		}
	}
	uint64_t user_ns, system_ns;
	self_cpu_ns(&user_ns, &system_ns);
	struct cs_ev_self_cost ev = {
		.hdr = { .ts_ns = now_ns, .type = CS_EV_SELF_COST, .size = sizeof(ev) },
		.user_ns = grew(user_ns, cost->user_ns),
		.system_ns = grew(system_ns, cost->system_ns),
		.wall_ns = grew(now_ns, cost->last_ns),
		.bpf_stats = span_stats,
		.error = cost->error,
	};
	cost->user_ns = user_ns;
	cost->system_ns = system_ns;
	cost->last_ns = now_ns;
	cost->plain_spans += !next_in_window;
	cost->in_window = next_in_window;
	probes->on_record(probes->ctx, &ev, sizeof(ev));
	if (sampling && cost->bpf_stats != CS_BPF_STATS_FAILED && !cost->holder.on && next_on)
		hold(cost, true);
}
