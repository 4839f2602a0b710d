// SPDX-License-Identifier: BSD-2-Clause
#include "stacks.h"
#include "errmsg.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "connscope.skel.h"
#include "stacks.skel.h"
#include "units.h"

static int perf_event_open(struct perf_event_attr *attr, int cpu)
{
	return (int)syscall(SYS_perf_event_open, attr, -1 /* every task */, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/*
 * One sampling event on cpu: hardware cycles at hz where there is a PMU,
 * else the software CPU clock every 1/hz s (a VM without a virtual PMU
 * says ENOENT or EOPNOTSUPP for cycles). Both give about hz samples per
 * second a CPU is busy. Returns the fd or -errno.
 */
static int open_sampler(unsigned int hz, int cpu, bool *software)
{
	if (!*software) {
		struct perf_event_attr hw = {
			.size = sizeof(hw), .type = PERF_TYPE_HARDWARE, .config = PERF_COUNT_HW_CPU_CYCLES,
			.freq = 1, .sample_freq = hz,
		};
		int fd = perf_event_open(&hw, cpu);
		if (fd >= 0)
			return fd;
		if (errno != ENOENT && errno != EOPNOTSUPP && errno != EINVAL)
			return -errno;
		*software = true;
	}
	struct perf_event_attr sw = {
		.size = sizeof(sw), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = NS_PER_SEC / hz,
	};
	int fd = perf_event_open(&sw, cpu);
	return fd >= 0 ? fd : -errno;
}

static int attach_samplers(struct cs_stack_probes *stacks, unsigned int hz, char *errmsg, size_t errlen)
{
	bool software = false;
	int first_err = 0;
	stacks->perf_links = calloc((size_t)stacks->cpu_count, sizeof(struct bpf_link *));
	stacks->perf_fds = malloc((size_t)stacks->cpu_count * sizeof(*stacks->perf_fds));
	if (!stacks->perf_links || !stacks->perf_fds)
		return cs_fail(errmsg, errlen, "out of memory");
	for (int cpu = 0; cpu < stacks->cpu_count; cpu++)
		stacks->perf_fds[cpu] = -1;
	for (int cpu = 0; cpu < stacks->cpu_count; cpu++) {
		int fd = open_sampler(hz, cpu, &software);
		if (fd == -ENODEV)
			continue; /* an offline CPU runs nothing */
		if (fd < 0) {
			if (!first_err)
				first_err = fd;
			continue;
		}
		stacks->perf_fds[cpu] = fd;
		stacks->perf_links[cpu] = bpf_program__attach_perf_event(stacks->skel->progs.on_cpu_sample, fd);
		if (!stacks->perf_links[cpu])
			return cs_fail(errmsg, errlen, "cannot attach the sampling program to the perf event of CPU %d: %s",
				       cpu, strerror(errno));
		stacks->cpus_sampled++;
	}
	stacks->event_name = software ? "cpu-clock" : "cycles";
	if (stacks->cpus_sampled)
		return 0;
	if (first_err == -EACCES || first_err == -EPERM)
		return cs_fail(errmsg, errlen,
			       "perf_event_open refused (%s): run as root or grant CAP_PERFMON; "
			       "kernel.perf_event_paranoid is checked for other users", strerror(-first_err));
	return cs_fail(errmsg, errlen, "no CPU could be sampled: perf_event_open: %s",
		       strerror(first_err ? -first_err : ENODEV));
}

static int handle_stack_record(void *ctx, void *data, size_t len)
{
	struct cs_stack_probes *stacks = ctx;
	return stacks->on_record(stacks->ctx, data, len);
}

int cs_stacks_start(struct cs_stack_probes *stacks, const struct cs_stack_options *opts, struct cs_probes *probes,
		    cs_record_fn on_record, void *ctx, char *errmsg, size_t errlen)
{
	memset(stacks, 0, sizeof(*stacks));
	stacks->cpu_count = libbpf_num_possible_cpus();
	if (stacks->cpu_count <= 0)
		return cs_fail(errmsg, errlen, "cannot count this machine's CPUs");

	stacks->skel = stacks_bpf__open();
	if (!stacks->skel)
		return cs_fail(errmsg, errlen, "cannot open the stack probes' BPF object: %s", strerror(errno));
	stacks->skel->rodata->min_off_cpu_ns = opts->min_off_cpu_ns;
	/* One target list for both objects: forks the main probes follow are ours too. */
	int err = bpf_map__reuse_fd(stacks->skel->maps.target_tgids, bpf_map__fd(probes->skel->maps.target_tgids));
	if (err)
		return cs_fail(errmsg, errlen, "cannot share the target map with the stack probes: %s", strerror(-err));
	err = stacks_bpf__load(stacks->skel);
	if (err)
		return cs_fail(errmsg, errlen,
			       "the kernel refused the stack probes (%s); run with --verbose for the verifier log",
			       strerror(-err));
	err = stacks_bpf__attach(stacks->skel); /* the scheduler hooks; perf events below */
	if (err)
		return cs_fail(errmsg, errlen, "cannot attach the scheduler hooks of the stack probes: %s",
			       strerror(-err));
	if (attach_samplers(stacks, opts->hz, errmsg, errlen))
		return -1;

	stacks->on_record = on_record;
	stacks->ctx = ctx;
	err = ring_buffer__add(probes->ring, bpf_map__fd(stacks->skel->maps.stack_events), handle_stack_record, stacks);
	if (err)
		return cs_fail(errmsg, errlen, "cannot map the stack probes' ring buffer: %s", strerror(-err));
	return 0;
}

int cs_stacks_counters(struct cs_stack_probes *stacks, uint64_t counters[CS_STK_CTR_MAX])
{
	memset(counters, 0, CS_STK_CTR_MAX * sizeof(counters[0]));
	if (!stacks->skel)
		return -EINVAL;
	uint64_t values[stacks->cpu_count];
	for (uint32_t key = 0; key < CS_STK_CTR_MAX; key++) {
		int err = bpf_map__lookup_elem(stacks->skel->maps.stack_counters, &key, sizeof(key), values,
					       sizeof(values), 0);
		if (err)
			return err;
		for (int cpu = 0; cpu < stacks->cpu_count; cpu++)
			counters[key] += values[cpu];
	}
	return 0;
}

int cs_stacks_targets(struct cs_stack_probes *stacks, uint32_t *tgids, size_t max, size_t *count)
{
	*count = 0;
	if (!stacks->skel)
		return -EINVAL;
	int fd = bpf_map__fd(stacks->skel->maps.target_tgids);
	uint32_t key, next;
	uint32_t *prev = NULL;
	while (*count < max && bpf_map_get_next_key(fd, prev, &next) == 0) {
		tgids[(*count)++] = next;
		key = next;
		prev = &key;
	}
	return 0;
}

void cs_stacks_stop(struct cs_stack_probes *stacks)
{
	for (int cpu = 0; stacks->perf_links && cpu < stacks->cpu_count; cpu++)
		bpf_link__destroy(stacks->perf_links[cpu]);
	for (int cpu = 0; stacks->perf_fds && cpu < stacks->cpu_count; cpu++)
		if (stacks->perf_fds[cpu] >= 0)
			close(stacks->perf_fds[cpu]);
	free(stacks->perf_links);
	free(stacks->perf_fds);
	stacks_bpf__destroy(stacks->skel);
	memset(stacks, 0, sizeof(*stacks));
}
