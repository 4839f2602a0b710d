// SPDX-License-Identifier: BSD-2-Clause
#include "probes.h"
#include "errmsg.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "connscope.skel.h"
#include "netns.h"
#include "procfs.h"
#include "u64map.h"

/* Threads whose run-queue baseline is kept; more are counted, not tracked. */
#define THREAD_BASELINES_MAX 65536
/* The socket walk that names new listeners runs at most this often. */
#define LISTENER_WALK_MIN_GAP_NS 1000000000ull
/* The per-packet probe stays attached this long after the last drain. */
#define XMIT_LINGER_NS 1000000000ull

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * A thread's run-queue counters when this run first saw it: samples report
 * what happened since. A thread born after the attach starts from zero.
 */
struct thread_baseline {
	uint64_t run_delay_ns;
	uint64_t max_run_delay_ns;
	uint64_t run_count;
	uint64_t cpu_ns;
};

/* What the iter/tcp walk taught us about a listener, by socket inode. */
struct listener_identity {
	uint64_t sk;          /* the kernel's socket address: the records' identity */
	uint32_t syn_queue;   /* half-open connections at that walk */
};

/* Run an iterator once, handing each whole record_size record to visit. */
static int read_iterator(struct bpf_link *link, size_t record_size,
			 void (*visit)(struct cs_probes *probes, const void *record, uint64_t now_ns),
			 struct cs_probes *probes, uint64_t now_ns)
{
	int fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0)
		return -errno;
	/* The iterator writes whole records; read() may split them, so buffer. */
	static char buf[16384];
	size_t have = 0;
	int err = 0;
	for (;;) {
		ssize_t len = read(fd, buf + have, sizeof(buf) - have);
		if (len < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (len == 0)
			break;
		have += (size_t)len;
		size_t used = 0;
		while (have - used >= record_size) {
			visit(probes, buf + used, now_ns);
			used += record_size;
		}
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	close(fd);
	return err;
}


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

static int check_kernel(char *errmsg, size_t errlen)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return cs_fail(errmsg, errlen,
			    "this kernel has no BTF (/sys/kernel/btf/vmlinux): connscope needs a kernel "
			    "built with CONFIG_DEBUG_INFO_BTF=y (most distribution kernels since 5.8)");
	return ensure_tracefs(errmsg, errlen);
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

/* Attach each program by name, so a failure can name its hook. */
static int attach_all(struct cs_probes *probes, char *errmsg, size_t errlen)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, probes->skel->obj) {
		if (prog == probes->skel->progs.sample_listeners ||
		    prog == probes->skel->progs.sample_threads ||
		    prog == probes->skel->progs.on_xmit || !bpf_program__autoload(prog))
			continue; /* iterators are attached below; optional hooks may be off */
		struct bpf_link *link = bpf_program__attach(prog);
		if (!link) {
			int err = -errno;
			return cs_fail(errmsg, errlen,
				    "cannot attach probe %s (%s): %s; this kernel may lack the hook",
				    bpf_program__name(prog), bpf_program__section_name(prog),
				    libbpf_last_line[0] ? libbpf_last_line : strerror(-err));
		}
		/* The skeleton frees links it knows; keep ours in the program's slot. */
		for (size_t i = 0; i < (size_t)probes->skel->skeleton->prog_cnt; i++)
			if (*probes->skel->skeleton->progs[i].prog == prog)
				*probes->skel->skeleton->progs[i].link = link;
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

int cs_probes_start(struct cs_probes *probes, const struct cs_probe_options *opts,
		    cs_record_fn on_record, void *ctx, char *errmsg, size_t errlen)
{
	memset(probes, 0, sizeof(*probes));
	if (cs_u64map_init(&probes->thread_baselines, sizeof(struct thread_baseline),
			   THREAD_BASELINES_MAX) ||
	    cs_u64map_init(&probes->listener_sks, sizeof(struct listener_identity), CS_MAX_LISTENERS))
		return cs_fail(errmsg, errlen, "out of memory");
	probes->attach_ns = monotonic_ns();
	probes->on_record = on_record;
	probes->ctx = ctx;
	libbpf_verbose = opts->verbose;
	libbpf_set_print(libbpf_log);

	if (cs_probes_preflight(errmsg, errlen))
		return -1;

	/* 1. open, 2. configure, 3. load, 4. attach */
	probes->skel = connscope_bpf__open();
	if (!probes->skel)
		return cs_fail(errmsg, errlen, "cannot open the BPF object: %s", strerror(errno));
	probes->skel->rodata->wakeup_bytes = opts->wakeup_bytes;
	probes->skel->rodata->trace_handshakes = opts->trace_handshakes;
	/* Optional hooks: leave out what this kernel does not have. */
	if (libbpf_find_vmlinux_btf_id("tcp_sendmsg_locked", BPF_TRACE_RAW_TP) < 0)
		bpf_program__set_autoload(probes->skel->progs.on_tcp_sendmsg, false);
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

int cs_probes_add_tgid(struct cs_probes *probes, uint32_t tgid)
{
	uint8_t one = 1;
	return bpf_map__update_elem(probes->skel->maps.target_tgids, &tgid, sizeof(tgid), &one,
				    sizeof(one), BPF_ANY);
}

int cs_probes_add_port(struct cs_probes *probes, uint16_t port)
{
	/* Only we write the bitmap, so read-modify-write cannot race. */
	uint32_t word = port / 64;
	uint64_t bits = 0;
	int err = bpf_map__lookup_elem(probes->skel->maps.target_ports, &word, sizeof(word), &bits,
				       sizeof(bits), 0);
	if (err)
		return err;
	bits |= 1ull << (port % 64);
	probes->port_bits[word] = bits;
	return bpf_map__update_elem(probes->skel->maps.target_ports, &word, sizeof(word), &bits,
				    sizeof(bits), BPF_ANY);
}

int cs_probes_remove_tgid(struct cs_probes *probes, uint32_t tgid)
{
	return bpf_map__delete_elem(probes->skel->maps.target_tgids, &tgid, sizeof(tgid), 0);
}

int cs_probes_remove_port(struct cs_probes *probes, uint16_t port)
{
	/* As cs_probes_add_port: only we write the bitmap. */
	uint32_t word = port / 64;
	uint64_t bits = 0;
	int err = bpf_map__lookup_elem(probes->skel->maps.target_ports, &word, sizeof(word), &bits,
				       sizeof(bits), 0);
	if (err)
		return err;
	if (!(bits & (1ull << (port % 64))))
		return -ENOENT;
	bits &= ~(1ull << (port % 64));
	probes->port_bits[word] = bits;
	return bpf_map__update_elem(probes->skel->maps.target_ports, &word, sizeof(word), &bits,
				    sizeof(bits), BPF_ANY);
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
	uint64_t now = monotonic_ns();
	if (probes->detached)
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

int cs_probes_poll(struct cs_probes *probes, int timeout_ms)
{
	attach_xmit_when_draining(probes);
	int n = ring_buffer__poll(probes->ring, timeout_ms);
	if (n < 0)
		return n;
	/* Records submitted without a wake-up are taken here. */
	int more = ring_buffer__consume(probes->ring);
	return more < 0 ? more : n + more;
}

static void visit_listener(struct cs_probes *probes, const void *record, uint64_t now_ns)
{
	struct cs_ev_listener_sample sample;
	(void)now_ns; /* the walk stamps its own records */
	memcpy(&sample, record, sizeof(sample));
	int created;
	struct listener_identity *identity = cs_u64map_put(&probes->listener_sks, sample.inode, &created);
	if (identity) {
		identity->sk = sample.sk;
		identity->syn_queue = sample.syn_queue;
	}
	probes->on_record(probes->ctx, record, sizeof(struct cs_ev_listener_sample));
}

/* The namespaces of the target endpoints (none yet: ours), distinct; how many. */
static size_t endpoint_namespaces(const struct cs_probes *probes, uint32_t *inos, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < probes->endpoint_count; i++) {
		uint32_t ino = (uint32_t)(probes->endpoints[i] >> 16);
		bool seen = false;
		for (size_t j = 0; j < n; j++)
			seen |= inos[j] == ino;
		if (!seen && n < max)
			inos[n++] = ino;
	}
	if (n == 0 && max)
		inos[n++] = cs_netns_self();
	return n;
}

int cs_probes_walk_listeners(struct cs_probes *probes, uint64_t now_ns)
{
	uint32_t inos[CS_MAX_NETNS];
	size_t n = endpoint_namespaces(probes, inos, CS_MAX_NETNS);
	int err = 0;
	probes->listener_walks++;
	probes->last_walk_ns = now_ns;
	/*
	 * An iter/tcp walk visits the namespace its reader is in when it
	 * starts. One we may no longer enter (connscoped, once it dropped
	 * CAP_SYS_ADMIN) is left out; the others are walked. The first error is told.
	 */
	for (size_t i = 0; i < n; i++) {
		int back;
		int ns_err = cs_netns_enter(inos[i], &back);
		if (!ns_err) {
			ns_err = read_iterator(probes->iter_link, sizeof(struct cs_ev_listener_sample),
					       visit_listener, probes, 0);
			cs_netns_leave(back);
		}
		if (!err)
			err = ns_err;
	}
	return err;
}

static bool is_target_endpoint(const struct cs_probes *probes, uint32_t netns_ino, uint16_t port)
{
	if (!(probes->port_bits[port / 64] & (1ull << (port % 64))))
		return false;
	for (size_t i = 0; i < probes->endpoint_count; i++)
		if (probes->endpoints[i] == cs_endpoint_key(netns_ino, port))
			return true;
	return false;
}

/*
 * Sample the target listeners of one namespace. Returns 1 when a listener
 * no walk has named yet wants a walk now.
 */
static int sample_namespace(struct cs_probes *probes, uint32_t netns_ino, uint64_t now_ns)
{
	static struct cs_listen_socket listeners[CS_MAX_LISTENERS];
	size_t count = 0;
	int err = cs_netns_list_listeners(netns_ino, listeners, CS_MAX_LISTENERS, &count);
	if (err && err != -ENOSPC)
		return err;
	/*
	 * sock_diag names a socket by inode; our records by its address, which
	 * only the iterator sees. A listener not met yet: walk (at most once a
	 * second: the walk visits every TCP socket, TIME_WAIT ones included).
	 */
	for (size_t i = 0; i < count; i++) {
		if (!is_target_endpoint(probes, netns_ino, listeners[i].port) ||
		    cs_u64map_get(&probes->listener_sks, listeners[i].inode))
			continue;
		if (now_ns - probes->last_walk_ns >= LISTENER_WALK_MIN_GAP_NS)
			return 1;
		break;
	}
	for (size_t i = 0; i < count; i++) {
		const struct cs_listen_socket *listener = &listeners[i];
		if (!is_target_endpoint(probes, netns_ino, listener->port))
			continue;
		const struct listener_identity *identity = cs_u64map_get(&probes->listener_sks, listener->inode);
		if (!identity) {
			probes->listener_samples_skipped++;
			continue;
		}
		struct cs_ev_listener_sample sample = {
			.hdr = { .ts_ns = now_ns, .type = CS_EV_LISTENER_SAMPLE, .size = sizeof(sample) },
			.sk = identity->sk,
			.inode = listener->inode,
			.backlog = listener->backlog,
			.backlog_limit = listener->backlog_limit,
			.syn_queue = identity->syn_queue,
			.drops = listener->drops,
			.port = listener->port,
			.family = listener->family,
		};
		probes->on_record(probes->ctx, &sample, sizeof(sample));
	}
	return 0;
}

int cs_probes_sample_listeners(struct cs_probes *probes, uint64_t now_ns)
{
	uint32_t inos[CS_MAX_NETNS];
	size_t n = endpoint_namespaces(probes, inos, CS_MAX_NETNS);
	int err = 0;
	for (size_t i = 0; i < n; i++) {
		int ret = sample_namespace(probes, inos[i], now_ns);
		/* A walk samples every namespace's target listeners itself. */
		if (ret == 1)
			return cs_probes_walk_listeners(probes, now_ns);
		if (ret < 0 && !err)
			err = ret; /* the other namespaces are sampled all the same */
	}
	return err;
}

/* One walk's thread record: the difference from its baseline, as a sample. */
static void emit_thread_sample(struct cs_probes *probes, const struct cs_thread_sched_sample *now_seen,
			       uint64_t now_ns)
{
	int created = 0;
	struct thread_baseline *base = cs_u64map_put(&probes->thread_baselines, now_seen->tid, &created);
	if (!base) {
		probes->threads_untracked++;
		return;
	}
	if (created && now_seen->start_ns < probes->attach_ns) {
		base->run_delay_ns = now_seen->run_delay_ns;
		base->max_run_delay_ns = now_seen->max_run_delay_ns;
		base->run_count = now_seen->run_count;
		base->cpu_ns = now_seen->cpu_ns;
	}
	struct cs_ev_thread_sample sample = {
		.hdr = { .ts_ns = now_ns, .type = CS_EV_THREAD_SAMPLE, .size = sizeof(sample) },
		.runq_total_ns = now_seen->run_delay_ns - base->run_delay_ns,
		.runq_waits = now_seen->run_count - base->run_count,
		.tid = now_seen->tid,
		.tgid = now_seen->tgid,
	};
	/*
	 * The kernel keeps one maximum per thread lifetime. If it moved during
	 * the run, that wait happened since the attach; if not, the longest
	 * since is unknown but at least the mean.
	 */
	if (now_seen->max_run_delay_ns > base->max_run_delay_ns)
		sample.runq_max_ns = now_seen->max_run_delay_ns;
	else if (sample.runq_waits)
		sample.runq_max_ns = sample.runq_total_ns / sample.runq_waits;
	memcpy(sample.comm, now_seen->comm, sizeof(sample.comm));
	sample.comm[sizeof(sample.comm) - 1] = '\0';
	probes->on_record(probes->ctx, &sample, sizeof(sample));
	struct cs_ev_thread_cpu cpu = {
		.hdr = { .ts_ns = now_ns, .type = CS_EV_THREAD_CPU, .size = sizeof(cpu) },
		.cpu_ns = now_seen->cpu_ns - base->cpu_ns,
		.tid = now_seen->tid,
		.tgid = now_seen->tgid,
	};
	probes->on_record(probes->ctx, &cpu, sizeof(cpu));
	/* The epoll path's totals count from the attach already (the probes' table). */
	if (!now_seen->ready_polls && !now_seen->reads_handed && !now_seen->reads_blocking)
		return;
	struct cs_ev_thread_polls polls = {
		.hdr = { .ts_ns = now_ns, .type = CS_EV_THREAD_POLLS, .size = sizeof(polls) },
		.ready_polls = now_seen->ready_polls,
		.reads_own = now_seen->reads_own,
		.reads_handed = now_seen->reads_handed,
		.handed_out = now_seen->handed_out,
		.reads_blocking = now_seen->reads_blocking,
		.tid = now_seen->tid,
		.tgid = now_seen->tgid,
	};
	probes->on_record(probes->ctx, &polls, sizeof(polls));
}

static void visit_thread(struct cs_probes *probes, const void *record, uint64_t now_ns)
{
	struct cs_thread_sched_sample seen;
	memcpy(&seen, record, sizeof(seen));
	emit_thread_sample(probes, &seen, now_ns);
}

int cs_probes_sample_threads(struct cs_probes *probes, uint64_t now_ns)
{
	return read_iterator(probes->thread_iter_link, sizeof(struct cs_thread_sched_sample),
			     visit_thread, probes, now_ns);
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
	connscope_bpf__detach(probes->skel);
	bpf_link__destroy(probes->xmit_link);
	probes->xmit_link = NULL;
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
	cs_u64map_free(&probes->thread_baselines);
	cs_u64map_free(&probes->listener_sks);
	connscope_bpf__destroy(probes->skel);
	memset(probes, 0, sizeof(*probes));
}
