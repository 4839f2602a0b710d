// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Runtime pauses: a JVM's safepoints, when every Java thread of the
 * process stops (a collection, or another VM operation).
 *
 * Its own object, loaded beside the main probes (connscope.bpf.c) when a
 * target is a JVM; user space attaches it to that JVM's libjvm.so, by
 * process, and hands it the main object's ring buffer and counters (map
 * fds reused), so that a pause's record sits in the one stream in the
 * order it happened, before the records of the requests it delayed.
 *
 *   usdt hs_private:safepoint__begin   : the VM thread asks every thread to stop:
 *                                        a first record (the pause began)
 *   usdt hotspot:vmops__begin(name,len): all stopped; the operation begins
 *   usdt hotspot:gc__begin(full)/end   : a collection inside it
 *   usdt hotspot:vmops__end            : the operation ended: the pause's
 *                                        record, before the threads go on
 *   usdt hs_private:safepoint__end     : the threads went on (the record, if
 *                                        no operation was seen)
 *   uprobe SafepointSynchronize::begin/end : the same pause where a JDK was
 *                                        built without the USDT notes
 *
 * At each begin and end the VM thread's sched_info.run_delay is read too:
 * its waits for a CPU while the other threads stood stopped (behind the
 * collector's own threads on few cores, or behind other processes).
 *
 * HotSpot fires these without any -XX flag (no semaphore guards them). One
 * VM thread runs every safepoint of a process: the state is per process.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>
#include "connscope.h"
#include "cs_helpers.bpf.h"
#include "stream.bpf.h" /* the main object's maps, reused by user space before load */

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* A safepoint in progress, per process: the record it will become. */
struct pause_state {
	struct cs_ev_runtime_pause ev;
	__u64 begin_run_delay_ns; /* the VM thread's sched_info.run_delay as it began */
	__u32 depth;              /* VM operations begun and not ended (one may run another) */
	__u32 pad;
};

/* A collection in progress: when it began, and its thread's run-queue time then. */
struct gc_start {
	__u64 began_ns;
	__u64 run_delay_ns;
	__u32 tid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct pause_state);
} pausing SEC(".maps");

/* A collection in progress, per process: when it began. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct gc_start);
} gc_began SEC(".maps");

/* A copy of the pause so far as a record stamped now_ns, with flags added. */
static __always_inline void emit(const struct cs_ev_runtime_pause *pause, __u64 now_ns, __u16 flags, __u64 wake)
{
	struct cs_ev_runtime_pause *ev = cs_event_reserve(&events, sizeof(*ev), CS_EV_RUNTIME_PAUSE, now_ns);

	if (!ev) {
		cs_counter_add(&counters, CS_CTR_LOST, 1);
		return;
	}
	struct cs_event_header hdr = ev->hdr;
	__builtin_memcpy(ev, pause, sizeof(*ev));
	ev->hdr = hdr;
	ev->flags |= flags;
	bpf_ringbuf_submit(ev, wake);
}

static __always_inline void pause_begin(__u16 flags)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = cs_tgid_of(pid_tgid);
	struct pause_state state = {
		.ev = {
			.begin_ns = bpf_ktime_get_ns(),
			.tgid = tgid,
			.vm_tid = cs_tid_of(pid_tgid),
			.flags = flags | CS_PAUSE_RUNQ,
		},
		.begin_run_delay_ns = current_run_delay(),
	};

	if (bpf_map_update_elem(&pausing, &tgid, &state, BPF_ANY))
		cs_counter_add(&counters, CS_CTR_TABLE_FULL, 1);
	emit(&state.ev, state.ev.begin_ns, CS_PAUSE_BEGUN, BPF_RB_NO_WAKEUP);
}

/*
 * The pause's end record, once: at its operation's end, before the VM
 * thread lets the threads go (a VM thread preempted after that would
 * leave them running while the pause still looked open), or at the
 * safepoint's end when no operation was seen (the uprobes).
 */
static __always_inline void pause_end(struct pause_state *state, __u32 tgid, __u64 now_ns)
{
	/* The VM thread's waits need one thread from begin to end (a JDK's uprobe
	 * fallback could see another end it). */
	if (cs_tid_of(bpf_get_current_pid_tgid()) == state->ev.vm_tid)
		state->ev.vm_runq_ns = current_run_delay() - state->begin_run_delay_ns;
	else
		state->ev.flags &= ~CS_PAUSE_RUNQ;
	/* A pause is rare (a few a second at most): wake the reader now. */
	emit(&state->ev, now_ns, 0, 0);
	bpf_map_delete_elem(&pausing, &tgid);
}

static __always_inline void safepoint_ended(void)
{
	__u32 tgid = cs_tgid_of(bpf_get_current_pid_tgid());
	struct pause_state *state = bpf_map_lookup_elem(&pausing, &tgid);

	if (state) /* none: begun before the attach, or ended with its operation */
		pause_end(state, tgid, bpf_ktime_get_ns());
}

SEC("usdt")
int BPF_USDT(safepoint_begin)
{
	pause_begin(0);
	return 0;
}

SEC("usdt")
int BPF_USDT(safepoint_end)
{
	safepoint_ended();
	return 0;
}

SEC("uprobe")
int safepoint_begin_uprobe(struct pt_regs *ctx)
{
	pause_begin(CS_PAUSE_UPROBE);
	return 0;
}

/* At SafepointSynchronize::end()'s entry: before it lets the threads go. */
SEC("uprobe")
int safepoint_end_uprobe(struct pt_regs *ctx)
{
	safepoint_ended();
	return 0;
}

/* The operation of the safepoint in progress; one outside a safepoint (a handshake) is none. */
SEC("usdt")
int BPF_USDT(vmop_begin, const char *name, long len)
{
	__u32 tgid = cs_tgid_of(bpf_get_current_pid_tgid());
	struct pause_state *state = bpf_map_lookup_elem(&pausing, &tgid);

	if (!state)
		return 0;
	if (state->depth++)
		return 0; /* an operation run by the first: the first names the pause */
	state->ev.reached_ns = bpf_ktime_get_ns();
	/* HotSpot's names are C strings of its own (len is strlen's): read up to the NUL. */
	if (len > 0 && bpf_probe_read_user_str(state->ev.op_name, sizeof(state->ev.op_name), name) > 1)
		state->ev.flags |= CS_PAUSE_OP_NAMED;
	return 0;
}

SEC("usdt")
int BPF_USDT(vmop_end)
{
	__u32 tgid = cs_tgid_of(bpf_get_current_pid_tgid());
	struct pause_state *state = bpf_map_lookup_elem(&pausing, &tgid);
	__u64 now = bpf_ktime_get_ns();

	if (!state || !state->depth || --state->depth)
		return 0;
	state->ev.op_end_ns = now;
	pause_end(state, tgid, now);
	return 0;
}

SEC("usdt")
int BPF_USDT(gc_begin, long full)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = cs_tgid_of(pid_tgid);
	struct pause_state *state = bpf_map_lookup_elem(&pausing, &tgid);
	struct gc_start start = {
		.began_ns = bpf_ktime_get_ns(),
		.run_delay_ns = current_run_delay(),
		.tid = cs_tid_of(pid_tgid),
	};

	if (!state)
		return 0; /* a concurrent collector's phase outside a safepoint stops no thread */
	state->ev.flags |= CS_PAUSE_GC | (full ? CS_PAUSE_GC_FULL : 0);
	bpf_map_update_elem(&gc_began, &tgid, &start, BPF_ANY);
	return 0;
}

SEC("usdt")
int BPF_USDT(gc_end)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = cs_tgid_of(pid_tgid);
	struct pause_state *state = bpf_map_lookup_elem(&pausing, &tgid);
	struct gc_start *start = bpf_map_lookup_elem(&gc_began, &tgid);

	if (!state || !start || !start->began_ns)
		return 0;
	state->ev.gc_ns += bpf_ktime_get_ns() - start->began_ns;
	state->ev.gc_count++;
	if (start->tid == cs_tid_of(pid_tgid))
		state->ev.gc_runq_ns += current_run_delay() - start->run_delay_ns;
	else
		state->ev.flags &= ~CS_PAUSE_RUNQ;
	start->began_ns = 0;
	return 0;
}
