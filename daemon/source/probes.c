// SPDX-License-Identifier: BSD-2-Clause
/*
 * The probes' life: preflight, open, configure, load, attach; polling the
 * ring; the end (detach and drain, stop). The samples the loop asks for
 * are probes_samples.c's; the target maps' updates probes_targets.c's.
 */
#include "probes.h"
#include "errmsg.h"
#include "probes_internal.h"
#include "probes_pauses.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "connscope.skel.h"
#include "kernel_check.h"
#include "units.h"

/* The per-packet probe stays attached this long after the last drain. */
#define XMIT_LINGER_NS NS_PER_SEC

/* The capability bits of CAP_PERFMON and CAP_BPF (Linux 5.8), which older headers lack. */
#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT 39

/* libbpf's log: echoed with --verbose, otherwise its last line is kept. */
static bool libbpf_verbose;
static char libbpf_last_line[256];

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (libbpf_verbose)
		return vfprintf(stderr, fmt, ap);
	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(libbpf_last_line, sizeof(libbpf_last_line), fmt, ap);
	libbpf_last_line[strcspn(libbpf_last_line, "\n")] = '\0';
	return 0;
}

static bool has_cap(const struct __user_cap_data_struct caps[2], int cap)
{
	return caps[cap / 32].effective & (1u << (cap % 32));
}

/* Tracing programs need CAP_BPF + CAP_PERFMON, or CAP_SYS_ADMIN. */
static int check_privileges(char *errmsg, size_t errlen)
{
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct caps[2] = {};

	if (syscall(SYS_capget, &header, caps))
		return cs_fail(errmsg, errlen, "cannot read this process's capabilities: %s", strerror(errno));
	if (has_cap(caps, CAP_SYS_ADMIN))
		return 0;
	bool bpf = has_cap(caps, CAP_BPF_BIT), perfmon = has_cap(caps, CAP_PERFMON_BIT);
	if (bpf && perfmon)
		return 0;
	return cs_fail(errmsg, errlen,
		    "missing %s%s%s: run as root, or grant them with "
		    "'sudo setcap cap_bpf,cap_perfmon,cap_sys_ptrace,cap_dac_read_search+ep connscope'",
		    bpf ? "" : "CAP_BPF", !bpf && !perfmon ? " and " : "", perfmon ? "" : "CAP_PERFMON");
}

/*
 * Classic tracepoints (the syscalls) are found through tracefs. Minimal
 * systems often leave it unmounted: mount it where libbpf looks first.
 */
static int ensure_tracefs(char *errmsg, size_t errlen)
{
	if (!access("/sys/kernel/tracing/events", F_OK) ||
	    !access("/sys/kernel/debug/tracing/events", F_OK))
		return 0;
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0)
		return 0;
	return cs_fail(errmsg, errlen,
		    "tracefs is not mounted and mounting it failed (%s): run "
		    "'mount -t tracefs nodev /sys/kernel/tracing' as root", strerror(errno));
}

/* BTF, tracefs, and the trace events of kernel_check.c: what the probes cannot do without. */
static int check_kernel(char *errmsg, size_t errlen)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return cs_fail(errmsg, errlen,
			    "this kernel has no BTF (/sys/kernel/btf/vmlinux): connscope needs a kernel "
			    "built with CONFIG_DEBUG_INFO_BTF=y (most distribution kernels since 5.8)");
	if (ensure_tracefs(errmsg, errlen))
		return -1;
	struct utsname names;
	const char *root = cs_tracefs_root();
	if (!root)
		return cs_fail(errmsg, errlen, "tracefs has no events/ directory: cannot tell which trace events "
			       "this kernel has");
	return cs_kernel_check(root, uname(&names) ? NULL : names.release, errmsg, errlen);
}

int cs_probes_preflight(char *errmsg, size_t errlen)
{
	if (check_privileges(errmsg, errlen) || check_kernel(errmsg, errlen))
		return -1;
	return 0;
}

static int handle_record(void *ctx, void *data, size_t len)
{
	struct cs_probes *probes = ctx;
	return probes->on_record(probes->ctx, data, len);
}

/* The skeleton's slot for prog's link: it frees the links it knows. */
static struct bpf_link **link_slot(struct cs_probes *probes, const struct bpf_program *prog)
{
	for (size_t i = 0; i < (size_t)probes->skel->skeleton->prog_cnt; i++)
		if (*probes->skel->skeleton->progs[i].prog == prog)
			return probes->skel->skeleton->progs[i].link;
	return NULL;
}

static void *destroy_link(void *slot)
{
	bpf_link__destroy(*(struct bpf_link **)slot);
	return NULL;
}

/*
 * Destroys the links in SLOTS (empty ones skipped) and empties them, side
 * by side. A classic tracepoint's link (a perf event: the syscall hooks)
 * waits in the kernel for RCU grace periods as it goes, some 70 ms here:
 * one after the other, seven of them held every stop for half a second.
 * One thread each, they wait for the same grace periods.
 */
#define MAX_LINKS_AT_ONCE 64
static void destroy_links(struct bpf_link **slots[], size_t count)
{
	pthread_t threads[MAX_LINKS_AT_ONCE];
	bool started[MAX_LINKS_AT_ONCE] = { false };

	if (count > MAX_LINKS_AT_ONCE)
		count = MAX_LINKS_AT_ONCE; /* the callers' arrays hold no more */
	for (size_t i = 0; i < count; i++) {
		if (!*slots[i])
			continue;
		started[i] = pthread_create(&threads[i], NULL, destroy_link, slots[i]) == 0;
		if (!started[i]) /* no thread: one after the other */
			destroy_link(slots[i]);
	}
	for (size_t i = 0; i < count; i++) {
		if (started[i])
			pthread_join(threads[i], NULL);
		*slots[i] = NULL;
	}
}

static int attach_one(struct cs_probes *probes, struct bpf_program *prog, char *errmsg, size_t errlen)
{
	struct bpf_link *link = bpf_program__attach(prog);
	if (!link) {
		int err = -errno;
		return cs_fail(errmsg, errlen, "cannot attach probe %s (%s): %s; this kernel may lack the hook",
			       bpf_program__name(prog), bpf_program__section_name(prog),
			       libbpf_last_line[0] ? libbpf_last_line : strerror(-err));
	}
	struct bpf_link **slot = link_slot(probes, prog);
	if (slot)
		*slot = link;
	return 0;
}

/*
 * The probes that run for every request, read, send or poll of the
 * machine (their cost grows with the load): detached between tracing
 * windows. on_xmit and on_waking, attached on demand, go with them.
 */
static bool is_request_probe(const struct cs_probes *probes, const struct bpf_program *prog)
{
	const struct connscope_bpf *skel = probes->skel;
	if (probes->windows_only) /* all but the iterators, the on-demand pair and process followers */
		return prog != skel->progs.sample_listeners && prog != skel->progs.sample_threads &&
		       prog != skel->progs.on_xmit && prog != skel->progs.on_waking &&
		       prog != skel->progs.on_fork && prog != skel->progs.on_exit;
	return prog == skel->progs.on_data_ready || prog == skel->progs.on_recv ||
	       prog == skel->progs.on_tcp_sendmsg || prog == skel->progs.on_send ||
	       prog == skel->progs.on_exit_epoll_wait || prog == skel->progs.on_exit_epoll_pwait ||
	       prog == skel->progs.on_exit_epoll_pwait2;
}

/* Attach each program by name, so a failure can name its hook. */
static int attach_all(struct cs_probes *probes, char *errmsg, size_t errlen)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, probes->skel->obj) {
		if (prog == probes->skel->progs.sample_listeners ||
		    prog == probes->skel->progs.sample_threads ||
		    prog == probes->skel->progs.on_xmit || prog == probes->skel->progs.on_waking ||
		    !bpf_program__autoload(prog))
			continue; /* iterators are attached below, two hooks when needed; optional hooks may be off */
		if (attach_one(probes, prog, errmsg, errlen))
			return -1;
	}
	probes->iter_link = bpf_program__attach_iter(probes->skel->progs.sample_listeners, NULL);
	if (!probes->iter_link)
		return cs_fail(errmsg, errlen, "cannot create the TCP socket iterator (iter/tcp): %s",
			    strerror(errno));
	probes->thread_iter_link = bpf_program__attach_iter(probes->skel->progs.sample_threads, NULL);
	if (!probes->thread_iter_link)
		return cs_fail(errmsg, errlen, "cannot create the task iterator (iter/task): %s",
			    strerror(errno));
	return 0;
}

/*
 * A seam for the tests: build/connscope-test links tests/hooks/probes_hooks.c,
 * whose definition makes the probes do on purpose, between open and load,
 * what the kernel does by chance. connscope and connscoped have this one,
 * which does nothing.
 */
__attribute__((weak)) void cs_probes_test_hooks(struct cs_probes *probes)
{
	(void)probes;
}

/*
 * For bench/run.py only, which measures what a group of probes costs:
 * CONNSCOPE_BENCH_PROBES=no-epoll leaves out the epoll path and the
 * wake-up probe that needs it (thread roles, hand-offs and parked requests
 * are then missing from the report); =waking-at-start attaches the wake-up
 * probe from the start, as if a request had been parked.
 */
static void bench_probe_choice(struct cs_probes *probes)
{
	const char *choice = getenv("CONNSCOPE_BENCH_PROBES");
	if (!choice)
		return;
	struct connscope_bpf *skel = probes->skel;
	if (strstr(choice, "no-epoll")) {
		bpf_program__set_autoload(skel->progs.on_exit_epoll_wait, false);
		bpf_program__set_autoload(skel->progs.on_exit_epoll_pwait, false);
		bpf_program__set_autoload(skel->progs.on_exit_epoll_pwait2, false);
		bpf_program__set_autoload(skel->progs.on_waking, false);
	}
	probes->waking_at_start = strstr(choice, "waking-at-start") != NULL;
}

int cs_probes_start(struct cs_probes *probes, const struct cs_probe_options *opts,
		    cs_record_fn on_record, void *ctx, char *errmsg, size_t errlen)
{
	memset(probes, 0, sizeof(*probes));
	if (cs_probes_samples_init(probes))
		return cs_fail(errmsg, errlen, "out of memory");
	probes->attach_ns = cs_monotonic_ns();
	probes->on_record = on_record;
	probes->ctx = ctx;
	libbpf_verbose = opts->verbose;
	libbpf_set_print(libbpf_log);

	if (cs_probes_preflight(errmsg, errlen))
		return -1;
	/* Counting from before the attach: every run of the probes is in the cost. */
	cs_probes_cost_init(probes, opts);

	/* 1. open, 2. configure, 3. load, 4. attach */
	probes->skel = connscope_bpf__open();
	if (!probes->skel)
		return cs_fail(errmsg, errlen, "cannot open the BPF object: %s", strerror(errno));
	probes->skel->rodata->wakeup_bytes = opts->wakeup_bytes;
	probes->skel->rodata->trace_handshakes = opts->trace_handshakes;
	probes->skel->rodata->follow_clients = opts->follow_clients;
	probes->skel->rodata->counters_between = opts->between_counters;
	probes->no_pauses = opts->no_pauses;
	probes->skel->rodata->attach_ns = probes->attach_ns;
	/* Optional hooks: leave out what this kernel does not have. */
	if (!cs_kernel_has_event(cs_tracefs_root(), "tcp", "tcp_sendmsg_locked"))
		bpf_program__set_autoload(probes->skel->progs.on_tcp_sendmsg, false);
	probes->windows_only = opts->between_counters;
	bench_probe_choice(probes);
	cs_probes_test_hooks(probes);
	if (bpf_map__set_max_entries(probes->skel->maps.events, opts->ring_bytes))
		return cs_fail(errmsg, errlen, "ring buffer size %u is not a power of two", opts->ring_bytes);

	int err = connscope_bpf__load(probes->skel);
	if (err) {
		return cs_fail(errmsg, errlen,
			    "the kernel refused connscope's BPF programs (%s)%s%s; run with --verbose for "
			    "the verifier log", strerror(-err), libbpf_last_line[0] ? ": " : "",
			    libbpf_last_line);
	}
	if (attach_all(probes, errmsg, errlen))
		return -1;

	probes->ring = ring_buffer__new(bpf_map__fd(probes->skel->maps.events), handle_record, probes, NULL);
	if (!probes->ring)
		return cs_fail(errmsg, errlen, "cannot map the ring buffer: %s", strerror(errno));
	return 0;
}

/*
 * The per-packet probe (net_dev_start_xmit: every packet of the machine,
 * both ways on loopback) is attached only while some answer has bytes held
 * back, and detached a second after the last one went out. Until it is
 * attached (one poll interval at most), a held-back answer counts as out
 * at the connection's next event, as when the probe is missing.
 */
static void attach_xmit_when_draining(struct cs_probes *probes)
{
	uint64_t now = cs_monotonic_ns();
	if (probes->detached || probes->window_closed)
		return;
	if (probes->skel->bss->draining_sockets > 0) {
		probes->xmit_wanted_ns = now;
		if (!probes->xmit_link && !probes->xmit_failed) {
			probes->xmit_link = bpf_program__attach(probes->skel->progs.on_xmit);
			if (!probes->xmit_link)
				probes->xmit_failed = true; /* not again: drains end at the next event */
			else
				probes->xmit_attaches++;
		}
	} else if (probes->xmit_link && now - probes->xmit_wanted_ns >= XMIT_LINGER_NS) {
		bpf_link__destroy(probes->xmit_link);
		probes->xmit_link = NULL;
	}
}

/*
 * The wake-up probe (sched_waking: every wake-up of the machine) is attached
 * once a target's reader parked a request (polled again before answering:
 * an event loop that gives requests to executor threads), and stays. Until
 * then (one poll interval at most) a parked request's read -> send is all
 * handler, as without the probe.
 */
static void attach_waking_when_parked(struct cs_probes *probes)
{
	struct bpf_program *prog = probes->skel->progs.on_waking;
	if (probes->detached || probes->window_closed || probes->waking_link || probes->waking_failed ||
	    (!probes->skel->bss->parked_requests && !probes->waking_at_start) || !bpf_program__autoload(prog))
		return;
	probes->waking_link = bpf_program__attach(prog);
	probes->waking_attached = probes->waking_link != NULL;
	probes->waking_failed = !probes->waking_link;
}

int cs_probes_poll(struct cs_probes *probes, int timeout_ms)
{
	attach_xmit_when_draining(probes);
	attach_waking_when_parked(probes);
	int n = ring_buffer__poll(probes->ring, timeout_ms);
	if (n < 0)
		return n;
	/* Records submitted without a wake-up are taken here. */
	int more = ring_buffer__consume(probes->ring);
	return more < 0 ? more : n + more;
}

int cs_probes_wait(struct cs_probes *probes, int timeout_ms)
{
	/* The ring's own epoll set: level-triggered, so the poll after this still finds it ready. */
	struct epoll_event event;
	int n = epoll_wait(ring_buffer__epoll_fd(probes->ring), &event, 1, timeout_ms);
	return n < 0 ? -errno : n > 0;
}

void cs_probes_close_window(struct cs_probes *probes, uint32_t number, cs_window_edge_fn at_edge, void *ctx)
{
	struct bpf_program *prog;
	if (!probes->skel || probes->detached || probes->window_closed)
		return;
	struct bpf_link **slots[MAX_LINKS_AT_ONCE];
	size_t count = 0;
	/*
	 * Numbered first: no request is emitted while some probes are gone,
	 * and with every connection probe going, none counts from here on.
	 */
	probes->skel->data->trace_window = number;
	if (at_edge)
		at_edge(ctx);
	bpf_object__for_each_program(prog, probes->skel->obj) {
		struct bpf_link **slot = link_slot(probes, prog);
		if (is_request_probe(probes, prog) && slot && count < MAX_LINKS_AT_ONCE - 2)
			slots[count++] = slot;
	}
	slots[count++] = &probes->xmit_link;
	slots[count++] = &probes->waking_link; /* attached again in the next window (parked_requests stays) */
	destroy_links(slots, count);
	probes->window_closed = true;
}

int cs_probes_open_window(struct cs_probes *probes, uint32_t number, cs_window_edge_fn at_edge, void *ctx,
			  char *errmsg, size_t errlen)
{
	struct bpf_program *prog;
	if (!probes->skel || probes->detached || !probes->window_closed)
		return 0;
	probes->window_closed = false;
	bpf_object__for_each_program(prog, probes->skel->obj) {
		if (is_request_probe(probes, prog) && bpf_program__autoload(prog) &&
		    attach_one(probes, prog, errmsg, errlen))
			return -1;
	}
	if (at_edge)
		at_edge(ctx);
	/*
	 * Numbered last: state built while some probes were still missing is
	 * dropped, and with every connection probe attached again, they count
	 * from here on (between_counters).
	 */
	probes->skel->data->trace_window = number;
	return 0;
}


int cs_probes_counters(struct cs_probes *probes, uint64_t counters[CS_CTR_MAX])
{
	int cpus = libbpf_num_possible_cpus();
	if (cpus <= 0)
		return cpus ? cpus : -EINVAL;
	if (!probes->skel)
		return -ENODEV; /* not loaded (a failed start) */
	uint64_t values[cpus];
	for (uint32_t key = 0; key < CS_CTR_MAX; key++) {
		int err = bpf_map__lookup_elem(probes->skel->maps.counters, &key, sizeof(key), values,
					       sizeof(values), 0);
		if (err)
			return err;
		counters[key] = 0;
		for (int cpu = 0; cpu < cpus; cpu++)
			counters[key] += values[cpu];
	}
	return 0;
}

uint64_t cs_probes_skipped_runs(struct cs_probes *probes, FILE *by_probe)
{
	struct bpf_program *prog;
	uint64_t skipped = 0;

	if (!probes->skel)
		return 0;
	bpf_object__for_each_program(prog, probes->skel->obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);
		memset(&info, 0, sizeof(info));
		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) || !info.recursion_misses)
			continue;
		skipped += info.recursion_misses;
		if (by_probe)
			fprintf(by_probe, "connscope: probe %s: %llu runs skipped by the kernel\n",
				bpf_program__name(prog), (unsigned long long)info.recursion_misses);
	}
	return skipped;
}

/* An empty ring this many times in a row, this far apart, is drained. */
#define DRAIN_QUIET_PASSES 3
#define DRAIN_PASS_US 2000

int cs_probes_detach_and_drain(struct cs_probes *probes)
{
	if (!probes->skel || !probes->ring)
		return 0;
	/* The skeleton holds every event probe's link (attach_all puts them there). */
	struct bpf_link **slots[MAX_LINKS_AT_ONCE];
	size_t count = 0;
	for (int i = 0; i < probes->skel->skeleton->prog_cnt && count < MAX_LINKS_AT_ONCE - 2; i++)
		slots[count++] = probes->skel->skeleton->progs[i].link;
	slots[count++] = &probes->xmit_link;
	slots[count++] = &probes->waking_link;
	destroy_links(slots, count);
	cs_probes_pauses_detach(probes);
	probes->detached = true;
	/*
	 * A program that was running at the detach may still be writing its
	 * record; reading stops at a record not yet committed. Read until the
	 * ring has stayed empty for a few passes (a few ms at the end of a run).
	 */
	int total = 0;
	for (int quiet = 0; quiet < DRAIN_QUIET_PASSES;) {
		int n = ring_buffer__consume(probes->ring);
		if (n < 0)
			return n;
		total += n;
		quiet = n ? 0 : quiet + 1;
		if (quiet)
			usleep(DRAIN_PASS_US);
	}
	probes->records_after_detach += (uint64_t)total;
	return total;
}

void cs_probes_stop(struct cs_probes *probes)
{
	ring_buffer__free(probes->ring);
	bpf_link__destroy(probes->iter_link);
	bpf_link__destroy(probes->thread_iter_link);
	bpf_link__destroy(probes->xmit_link);
	bpf_link__destroy(probes->waking_link);
	cs_probes_samples_free(probes);
	cs_probes_pauses_free(probes);
	connscope_bpf__destroy(probes->skel);
	cs_probes_cost_free(probes);
	memset(probes, 0, sizeof(*probes));
}
