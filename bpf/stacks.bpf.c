// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * connscope flamegraph: where target threads spend their time, as stacks.
 *
 * Its own object, loaded beside the main probes (connscope.bpf.c) only by
 * `connscope flamegraph`; it shares their target_tgids map (user space
 * reuses the main object's map fd), so processes the main probes follow
 * are followed here too.
 *
 *   perf_event (CPU clock, every CPU)   : on-CPU samples of target threads,
 *                                         kernel + user stack
 *   tp_btf/sched_switch (out)           : a target thread leaves its CPU:
 *                                         time and user stack kept per thread
 *                                         (read again only if it moved)
 *   tp_btf/sched_wakeup{,_new}          : it became runnable again
 *   tp_btf/sched_switch (in)            : back on a CPU: one record per
 *                                         interval >= min_off_cpu_ns, with
 *                                         its kernel stack; the shorter
 *                                         ones only counted
 *
 * A user stack is the frame-pointer walk's return addresses and the user
 * registers with a copy of the stack (connscope.h), for user space to
 * unwind by CFI. A sample carries its copy; a switch-out where the stack
 * moved sends its copy at once, in a record of its own, and the
 * thread's intervals from there name it. Records with a copy are reserved
 * whole and written in place: the copy goes from the thread's stack,
 * still in the CPU's cache, straight into the ring.
 *
 * Every probe checks its target first: the tgid map for samples and
 * switch-outs; the per-thread table (target threads only) otherwise.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "connscope.h"
#include "cs_helpers.bpf.h"
#include "target_tgids.bpf.h"

#define STACK_BYTES (CS_STACK_DEPTH * sizeof(__u64))
#define PAGE_BYTES 4096

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by user space between open and load. */
const volatile __u64 min_off_cpu_ns = 1000000; /* shorter intervals are only counted */

/* A target thread off its CPU: since when, and where it stopped. */
struct off_cpu_state {
	__u64 off_ns; /* 0: on its CPU (or never seen off it) */
	__u64 wake_ns;
	__u64 first_return; /* the word at user bp + 8 when the stack was read */
	__u64 stack_end;    /* where its user stack stops being readable; 0: not known */
	__u32 tgid;
	__u32 pad;
	struct cs_stack stack;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct off_cpu_state);
} off_cpu SEC(".maps");

/* A zeroed value to create entries from: too big for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct off_cpu_state);
} zero_state SEC(".maps");

_Static_assert(CS_USER_STACK_CHUNK_BYTES == PAGE_BYTES, "a chunk that faults is retried up to its page's end");

/* The ring's records that carry a copy, as reserved: room for a whole one. */
struct cpu_sample_record {
	struct cs_ev_cpu_sample ev;
	__u8 user_stack[CS_USER_STACK_BYTES];
};

struct user_stack_record {
	struct cs_ev_user_stack ev;
	__u8 user_stack[CS_USER_STACK_BYTES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CS_STK_CTR_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stack_counters SEC(".maps");

/*
 * A record with a copy takes 17 KiB of the ring: 16 MiB holds a second
 * and more of what the busiest targets send (nginx at 3000 requests a
 * second: a copy every 0.2 ms), for a reader that polls every 20 ms and
 * unwinds as it reads.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 * 1024 * 1024);
} stack_events SEC(".maps");

/* The helpers of cs_helpers.bpf.h, bound to this object's maps. */
static __always_inline void add(__u32 which, __u64 amount)
{
	cs_counter_add(&stack_counters, which, amount);
}

static __always_inline bool is_target_tgid(__u32 tgid)
{
	return cs_is_target_tgid(&target_tgids, tgid);
}

/*
 * The user stack from sp up into copy, a chunk at a time, up to the
 * stack's end when an earlier copy found it (*end; NULL: not kept). A
 * chunk that faults ends the copy, after what of it lies below its page
 * boundary, and that is the end: a read that faults costs more than a
 * whole chunk's copy, and the next copies stop short of it. Returns the
 * bytes copied.
 */
static __always_inline __u32 copy_user_stack(__u8 *copy, __u64 sp, __u64 *end)
{
	__u64 limit = CS_USER_STACK_BYTES, copied = 0;

	if (end && *end > sp && *end - sp < limit)
		limit = *end - sp;
	for (__u64 i = 0; i < CS_USER_STACK_BYTES / CS_USER_STACK_CHUNK_BYTES; i++) {
		__u64 at = i * CS_USER_STACK_CHUNK_BYTES;
		if (at >= limit)
			break;
		/*
		 * 64-bit and opaque to the compiler, so that the clamp is
		 * checked on the register the read is given: the verifier
		 * cannot know that limit > at.
		 */
		__u64 len = limit - at;
		barrier_var(len);
		if (len > CS_USER_STACK_CHUNK_BYTES)
			len = CS_USER_STACK_CHUNK_BYTES;
		if (!bpf_probe_read_user(copy + at, len, (void *)(sp + at))) {
			copied = at + len;
			continue;
		}
		__u64 in_page = (PAGE_BYTES - ((sp + at) & (PAGE_BYTES - 1))) & (CS_USER_STACK_CHUNK_BYTES - 1);
		if (in_page && in_page < len && !bpf_probe_read_user(copy + at, in_page, (void *)(sp + at)))
			copied = at + in_page;
		if (end)
			*end = sp + copied;
		break;
	}
	return copied;
}

/*
 * The current task's user stack walked by frame pointer, and its user
 * registers, saved at its last entry to the kernel; no copy yet. A walk
 * that fails is counted.
 */
static __always_inline void walk_user_stack(void *ctx, struct cs_stack *stack)
{
	long len = bpf_get_stack(ctx, stack->user_ips, STACK_BYTES, BPF_F_USER_STACK);
	if (len < 0)
		add(CS_STK_USER_STACK_ERRORS, 1);
	stack->user_frames = len > 0 ? len / sizeof(__u64) : 0;

	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	stack->user_ip = regs ? regs->ip : 0;
	stack->user_sp = regs ? regs->sp : 0;
	stack->user_bp = regs ? regs->bp : 0;
	stack->user_stack_ns = 0;
}

/* copy_user_stack, counted: the bytes copied, or 0 when not one could be read. */
static __always_inline __u32 copy_counted(__u8 *copy, __u64 sp, __u64 *end)
{
	__u32 copied = copy_user_stack(copy, sp, end);
	if (!copied) {
		add(CS_STK_USER_COPY_ERRORS, 1);
		return 0;
	}
	add(CS_STK_USER_COPIES, 1);
	add(CS_STK_USER_COPY_BYTES, copied);
	return copied;
}

/* A record of fixed_bytes and its copy's bytes (never more than the buffer holds). */
static __always_inline __u32 record_size(__u32 fixed_bytes, __u32 copy_bytes)
{
	return fixed_bytes + (copy_bytes <= CS_USER_STACK_BYTES ? copy_bytes : 0);
}

/*
 * The user stack at a switch-out, read again only when it moved. An
 * event loop leaves its CPU from the same epoll_wait() call again and
 * again: same instruction, stack and frame pointers, same return address
 * above, so the same stack. Reading it costs some 6 us here for the walk
 * and 1-2 us for the copy (bench/flame_cost.py), more than the context
 * switch itself; comparing costs a 16-byte read. Its copy goes to the
 * ring now, and the thread's intervals from here name it.
 */
static __always_inline void read_user_stack_if_moved(void *ctx, struct off_cpu_state *state, __u32 tid)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	struct cs_stack *stack = &state->stack;
	__u64 first_return = 0;

	if (regs) {
		__u64 ip = regs->ip, sp = regs->sp, bp = regs->bp;
		/* The return address, just above the saved frame pointer. */
		bpf_probe_read_user(&first_return, sizeof(first_return), (void *)(bp + sizeof(__u64)));
		if ((stack->user_frames || stack->user_stack_ns) && stack->user_sp == sp && stack->user_bp == bp &&
		    stack->user_ip == ip && state->first_return == first_return) {
			add(CS_STK_USER_STACK_REUSED, 1);
			return;
		}
	}
	walk_user_stack(ctx, stack);
	state->first_return = first_return;
	if (!stack->user_sp)
		return;
	struct user_stack_record *record = bpf_ringbuf_reserve(&stack_events, sizeof(*record), 0);
	if (!record) {
		add(CS_STK_USER_COPIES_LOST, 1);
		return;
	}
	__u32 copied = copy_counted(record->user_stack, stack->user_sp, &state->stack_end);
	if (!copied) {
		bpf_ringbuf_discard(record, BPF_RB_NO_WAKEUP);
		return;
	}
	struct cs_ev_user_stack *ev = &record->ev;
	__u64 now = bpf_ktime_get_ns();
	ev->ip = stack->user_ip;
	ev->sp = stack->user_sp;
	ev->bp = stack->user_bp;
	ev->tid = tid;
	ev->tgid = state->tgid;
	cs_event_header(&ev->hdr, now, CS_EV_USER_STACK, record_size(sizeof(*ev), copied));
	bpf_ringbuf_submit(record, BPF_RB_NO_WAKEUP);
	stack->user_stack_ns = now;
}

/* A kernel stack is empty when the task was in user mode: that is no error. */
static __always_inline void set_kernel_frames(struct cs_stack *stack, long len)
{
	stack->kernel_frames = len > 0 ? len / sizeof(__u64) : 0;
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = cs_tgid_of(pid_tgid);

	if (!tgid || !is_target_tgid(tgid))
		return 0;
	struct cpu_sample_record *sample = bpf_ringbuf_reserve(&stack_events, sizeof(*sample), 0);
	if (!sample) {
		add(CS_STK_SAMPLES_LOST, 1);
		return 0;
	}
	struct cs_ev_cpu_sample *ev = &sample->ev;
	ev->tid = cs_tid_of(pid_tgid);
	ev->tgid = tgid;
	set_kernel_frames(&ev->stack, bpf_get_stack(ctx, ev->stack.kernel_ips, STACK_BYTES, 0));
	walk_user_stack(ctx, &ev->stack);
	/* The thread's entry, if it left its CPU before, knows where its stack ends. */
	struct off_cpu_state *state = bpf_map_lookup_elem(&off_cpu, &ev->tid);
	__u32 copied = ev->stack.user_sp ? copy_counted(sample->user_stack, ev->stack.user_sp,
							state ? &state->stack_end : NULL)
					 : 0;
	__u64 now = bpf_ktime_get_ns();
	ev->stack.user_stack_ns = copied ? now : 0;
	cs_event_header(&ev->hdr, now, CS_EV_CPU_SAMPLE, record_size(sizeof(*ev), copied));
	/* No wake-up: the reader polls on a short timer. */
	bpf_ringbuf_submit(sample, BPF_RB_NO_WAKEUP);
	add(CS_STK_SAMPLES, 1);
	return 0;
}

/* A target thread's entry in off_cpu, created if missing. */
static __always_inline struct off_cpu_state *state_of(__u32 tid, __u32 tgid)
{
	struct off_cpu_state *state = bpf_map_lookup_elem(&off_cpu, &tid);
	if (state)
		return state;
	__u32 zero = 0;
	struct off_cpu_state *fresh = bpf_map_lookup_elem(&zero_state, &zero);
	if (!fresh)
		return NULL;
	fresh->tgid = tgid;
	if (bpf_map_update_elem(&off_cpu, &tid, fresh, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&off_cpu, &tid)) {
		add(CS_STK_THREADS_FULL, 1);
		return NULL;
	}
	return bpf_map_lookup_elem(&off_cpu, &tid);
}

static __always_inline void mark_woken(struct task_struct *task)
{
	__u32 tid = task->pid;
	struct off_cpu_state *state = bpf_map_lookup_elem(&off_cpu, &tid);

	if (state && state->off_ns && !state->wake_ns)
		state->wake_ns = bpf_ktime_get_ns();
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_stack_wakeup, struct task_struct *task)
{
	mark_woken(task);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_stack_wakeup_new, struct task_struct *task)
{
	mark_woken(task);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_stack_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();

	/*
	 * Out: runs in prev's context, so its user stack is the current one,
	 * kept now (only the current task's can be read). Its kernel stack
	 * stays as it is while it is off its CPU: read on the way back in,
	 * and only for intervals that are kept (a kernel unwind per context
	 * switch would cost more than everything else here).
	 */
	__u32 prev_tgid = prev->tgid;
	if (prev_tgid && is_target_tgid(prev_tgid)) {
		struct off_cpu_state *state = state_of(prev->pid, prev_tgid);
		if (state) {
			state->off_ns = now;
			/* Preempted: runnable all along, no wake-up will come. */
			state->wake_ns = preempt || prev_state == TASK_RUNNING ? now : 0;
			state->tgid = prev_tgid;
			read_user_stack_if_moved(ctx, state, prev->pid);
		}
	}

	/* In: only target threads have entries. */
	__u32 tid = next->pid;
	struct off_cpu_state *state = bpf_map_lookup_elem(&off_cpu, &tid);
	if (!state || !state->off_ns)
		return 0;
	__u64 off_ns = state->off_ns;
	state->off_ns = 0;
	/* A recycled tid of another process: not ours. */
	if (state->tgid != (__u32)next->tgid)
		return 0;
	if (now - off_ns < min_off_cpu_ns) {
		add(CS_STK_OFF_CPU_SHORT, 1);
		add(CS_STK_OFF_CPU_SHORT_NS, now - off_ns);
		return 0;
	}
	struct cs_ev_off_cpu *ev = cs_event_reserve(&stack_events, sizeof(*ev), CS_EV_OFF_CPU, now);
	if (!ev) {
		add(CS_STK_OFF_CPU_LOST, 1);
		return 0;
	}
	ev->off_ns = off_ns;
	ev->wake_ns = state->wake_ns;
	ev->tid = tid;
	ev->tgid = state->tgid;
	bpf_probe_read_kernel(&ev->stack, sizeof(ev->stack), &state->stack);
	set_kernel_frames(&ev->stack, bpf_get_task_stack(next, ev->stack.kernel_ips, STACK_BYTES, 0));
	bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
	add(CS_STK_OFF_CPU, 1);
	return 0;
}
