/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * User stacks unwound from a copy, as perf --call-graph dwarf does: the
 * registers a thread had at its last entry to the kernel and the bytes of
 * its stack from the stack pointer up, walked with the mapped files' call
 * frame information (.eh_frame) by elfutils' libdwfl. Code without CFI
 * (a JIT's) is walked by frame pointer, libdwfl's fallback. Every read of
 * stack memory comes from the copy: the thread has run on since.
 *
 * A process is known from its mappings (read while it runs, again when it
 * may have mapped more); the files' CFI is read once per process, when
 * first needed. x86-64 only: elsewhere every unwind fails.
 */
#ifndef CS_UNWIND_H
#define CS_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct cs_unwinder;

/* A thread's user stack as taken: its registers and len bytes of stack from regs.sp up. */
struct cs_user_stack {
	uint64_t ip;
	uint64_t sp;
	uint64_t bp;
	const void *bytes;
	size_t len;
};

struct cs_unwind_stats {
	uint64_t processes;      /* processes whose mappings were read */
	uint64_t stacks;         /* unwinds asked for */
	uint64_t failures;       /* ... that found no frame above the leaf */
	uint64_t frames;         /* frames found, leaves included */
	uint64_t short_copies;   /* unwinds that read past the copy's end */
	uint64_t elapsed_ns;     /* time spent unwinding */
	uint64_t deepest_bytes;  /* the farthest frame above the stack pointer any unwind reached */
};

/* NULL when out of memory. */
struct cs_unwinder *cs_unwinder_new(void);
void cs_unwinder_free(struct cs_unwinder *u);

/*
 * Reads pid's mappings now (again, if known: files mapped since are
 * added, those unmapped dropped, the others keep what was read of them).
 * Call while the process lives. Returns 0 or -errno.
 */
int cs_unwinder_add_process(struct cs_unwinder *u, pid_t pid);

/*
 * Unwinds stack, taken from a thread of pid: up to max_ips code
 * addresses into ips, leaf first. ips[0] is stack->ip; the others are
 * return addresses (a call's next instruction; a frame interrupted by a
 * signal is given one past its address, so that every frame above the
 * leaf reads the same way). Returns how many, at least 1, or -ESRCH for a
 * process never added, -EINVAL for an empty stack, -ENOTSUP off x86-64.
 */
int cs_unwind(struct cs_unwinder *u, pid_t pid, const struct cs_user_stack *stack, uint64_t *ips, size_t max_ips);

void cs_unwinder_stats(const struct cs_unwinder *u, struct cs_unwind_stats *stats);

#endif /* CS_UNWIND_H */
