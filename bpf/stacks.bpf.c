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
 *                                         (walked again only if it moved)
 *   tp_btf/sched_wakeup{,_new}          : it became runnable again
 *   tp_btf/sched_switch (in)            : back on a CPU: one record per
 *                                         interval >= min_off_cpu_ns, with
 *                                         its kernel stack; the shorter
 *                                         ones only counted
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

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by user space between open and load. */
const volatile __u64 min_off_cpu_ns = 1000000; /* shorter intervals are only counted */


/* A target thread off its CPU: since when, and where it stopped. */
struct off_cpu_state {
	__u64 off_ns; /* 0: on its CPU (or never seen off it) */
	__u64 wake_ns;
	__u64 first_return; /* the word at user bp + 8 when stack was walked */
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

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CS_STK_CTR_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stack_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 * 1024 * 1024);
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
 * The current task's user stack, with the registers and words user space
 * needs to put back callers a frameless leaf hides. A user stack that
 * cannot be read (a fault) is counted.
 */
static __always_inline void read_user_stack(void *ctx, struct cs_stack *stack)
{
	long len = bpf_get_stack(ctx, stack->user_ips, STACK_BYTES, BPF_F_USER_STACK);
	if (len < 0)
		add(CS_STK_USER_STACK_ERRORS, 1);
	stack->user_frames = len > 0 ? len / sizeof(__u64) : 0;

	/* The user registers saved at the last entry to the kernel. */
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	stack->user_sp = 0;
	stack->user_bp = 0;
	if (!stack->user_frames || !regs)
		return;
	__u64 sp = regs->sp, bp = regs->bp;
	if (bpf_probe_read_user(stack->user_words, sizeof(stack->user_words), (void *)sp))
		return;
	stack->user_sp = sp;
	stack->user_bp = bp;
}

/*
 * The user stack at a switch-out, walked again only when it moved. An
 * event loop leaves its CPU from the same epoll_wait() call again and
 * again: same instruction, stack and frame pointers, same return address
 * above, so the same stack. Walking it costs about 5 us here, a context
 * switch's worth; comparing costs a 16-byte read.
 */
static __always_inline void read_user_stack_if_moved(void *ctx, struct off_cpu_state *state)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	__u64 first_return = 0;

	if (!regs) {
		read_user_stack(ctx, &state->stack);
		return;
	}
	__u64 ip = regs->ip, sp = regs->sp, bp = regs->bp;
	/* The return address, just above the saved frame pointer. */
	bpf_probe_read_user(&first_return, sizeof(first_return), (void *)(bp + sizeof(__u64)));
	if (state->stack.user_frames && state->stack.user_sp == sp && state->stack.user_bp == bp &&
	    state->stack.user_ips[0] == ip && state->first_return == first_return) {
		add(CS_STK_USER_STACK_REUSED, 1);
		return;
	}
	read_user_stack(ctx, &state->stack);
	state->first_return = first_return;
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
	struct cs_ev_cpu_sample *ev = cs_event_reserve(&stack_events, sizeof(*ev), CS_EV_CPU_SAMPLE,
						       bpf_ktime_get_ns());
	if (!ev) {
		add(CS_STK_SAMPLES_LOST, 1);
		return 0;
	}
	ev->tid = cs_tid_of(pid_tgid);
	ev->tgid = tgid;
	set_kernel_frames(&ev->stack, bpf_get_stack(ctx, ev->stack.kernel_ips, STACK_BYTES, 0));
	read_user_stack(ctx, &ev->stack);
	/* No wake-up: the reader polls on a short timer. */
	bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
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
			read_user_stack_if_moved(ctx, state);
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
