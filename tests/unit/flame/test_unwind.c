// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of the unwinder (daemon/flame/unwind.c) on this very process: a
 * function called back by glibc's qsort() (glibc keeps no frame pointers,
 * so a frame-pointer walk from there loses its callers) takes its own
 * registers and a copy of its stack, as the stack probes do at a
 * thread's entry to the kernel; the unwind of that copy must name the
 * functions that led to it, through glibc's frames, by their CFI.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols.h"
#include "unwind.h"

#if defined(__x86_64__)

#define COPY_BYTES 16384      /* the most of the stack kept */
#define COPY_CHUNK_BYTES 4096 /* read at a time */
#define MAX_FRAMES 64

/* What a probe keeps: the registers and the stack above the stack pointer. */
static struct cs_user_stack taken;
static unsigned char taken_bytes[COPY_BYTES];

/*
 * The stack from sp up, a chunk at a time through /proc/self/mem, ending
 * at the first chunk that cannot be read: as the probes read it.
 */
static size_t copy_own_stack(uint64_t sp)
{
	int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	size_t copied = 0;
	while (copied < sizeof(taken_bytes)) {
		ssize_t n = pread(fd, taken_bytes + copied, COPY_CHUNK_BYTES, (off_t)(sp + copied));
		if (n <= 0)
			break;
		copied += (size_t)n;
	}
	close(fd);
	return copied;
}

/* Takes this thread's registers and stack, here. */
__attribute__((noinline)) static void take_own_stack(void)
{
	uint64_t ip, sp;
	__asm__ volatile("lea 0(%%rip), %0" : "=r"(ip));
	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	taken.ip = ip;
	taken.sp = sp;
	taken.bp = (uint64_t)(uintptr_t)__builtin_frame_address(0);
	taken.bytes = taken_bytes;
	taken.len = copy_own_stack(sp);
}

static int compares;

/* glibc's qsort() calls it: the stack is taken from its first call. */
__attribute__((noinline)) static int cs_unwind_test_compare(const void *a, const void *b)
{
	if (!compares++)
		take_own_stack();
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* The caller of qsort(), which the unwind must find above glibc's frames. */
__attribute__((noinline)) int cs_unwind_test_sort(void)
{
	int numbers[] = { 3, 1, 2 };
	compares = 0;
	qsort(numbers, 3, sizeof(numbers[0]), cs_unwind_test_compare);
	return numbers[0] * 100 + numbers[1] * 10 + numbers[2];
}

/* The names of the first count frames of ips, joined by ';'. */
static const char *frame_names(pid_t pid, const uint64_t *ips, int count)
{
	static char names[8192];
	struct cs_symbolizer *sym = cs_symbolizer_new();
	cr_assert_not_null(sym);
	cr_assert_eq(cs_symbolizer_add_process(sym, pid), 0);
	size_t used = 0;
	names[0] = '\0';
	for (int i = 0; i < count && used < sizeof(names) - 256; i++) {
		char name[256];
		cs_symbolize_user(sym, pid, ips[i], i > 0, name, sizeof(name));
		used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", i ? ";" : "", name);
	}
	cs_symbolizer_free(sym);
	return names;
}

Test(unwind, a_copy_unwinds_through_glibc_to_its_callers)
{
	cr_assert_eq(cs_unwind_test_sort(), 123);
	cr_assert_gt(taken.len, 512, "the stack copy holds %zu bytes", taken.len);
	struct cs_unwinder *u = cs_unwinder_new();
	cr_assert_not_null(u);
	cr_assert_eq(cs_unwinder_add_process(u, getpid()), 0);
	uint64_t ips[MAX_FRAMES];
	int count = cs_unwind(u, getpid(), &taken, ips, MAX_FRAMES);
	cr_assert_geq(count, 4, "got %d frames", count);
	cr_assert_eq(ips[0], taken.ip, "the leaf is where the registers were taken");
	const char *names = frame_names(getpid(), ips, count);
	const char *leaf = strstr(names, "take_own_stack"), *compare = strstr(names, "cs_unwind_test_compare");
	const char *sorter = strstr(names, "cs_unwind_test_sort");
	cr_assert(leaf == names, "the leaf first: %s", names);
	cr_assert(compare && compare > leaf, "the comparison next: %s", names);
	cr_assert(sorter && sorter > compare && strstr(compare, "qsort"), "then glibc's qsort and its caller: %s",
		  names);
	struct cs_unwind_stats stats;
	cs_unwinder_stats(u, &stats);
	cr_assert_eq(stats.stacks, 1);
	cr_assert_eq(stats.failures, 0);
	cr_assert_eq(stats.frames, (uint64_t)count);
	cr_assert_gt(stats.deepest_bytes, 0);
	cs_unwinder_free(u);
}

Test(unwind, a_short_copy_stops_the_unwind_and_says_so)
{
	cr_assert_eq(cs_unwind_test_sort(), 123);
	struct cs_unwinder *u = cs_unwinder_new();
	cr_assert_not_null(u);
	cr_assert_eq(cs_unwinder_add_process(u, getpid()), 0);
	uint64_t ips[MAX_FRAMES];
	struct cs_user_stack whole = taken, cut = taken;
	int all = cs_unwind(u, getpid(), &whole, ips, MAX_FRAMES);
	cut.len = 64; /* take_own_stack's own frame, about */
	int some = cs_unwind(u, getpid(), &cut, ips, MAX_FRAMES);
	cr_assert_geq(some, 1);
	cr_assert_lt(some, all, "a copy of 64 bytes gave %d frames of %d", some, all);
	struct cs_unwind_stats stats;
	cs_unwinder_stats(u, &stats);
	cr_assert_eq(stats.short_copies, 1, "the short copy is counted");
	cs_unwinder_free(u);
}

Test(unwind, what_cannot_be_unwound_keeps_the_leaf_or_is_refused)
{
	struct cs_unwinder *u = cs_unwinder_new();
	cr_assert_not_null(u);
	uint64_t ips[MAX_FRAMES], word = 0;
	struct cs_user_stack stack = { .ip = 0x10, .sp = (uint64_t)(uintptr_t)&word, .bytes = &word, .len = 8 };
	cr_assert_eq(cs_unwind(u, getpid(), &stack, ips, MAX_FRAMES), -ESRCH, "a process never added");
	cr_assert_eq(cs_unwinder_add_process(u, getpid()), 0);
	/* Code that is no module's: the leaf alone, counted as a failure. */
	cr_assert_eq(cs_unwind(u, getpid(), &stack, ips, MAX_FRAMES), 1);
	cr_assert_eq(ips[0], 0x10);
	struct cs_user_stack empty = { .ip = 0 };
	cr_assert_eq(cs_unwind(u, getpid(), &empty, ips, MAX_FRAMES), -EINVAL);
	cr_assert_eq(cs_unwinder_add_process(u, 0x7ffffff0), -ENOENT, "no such process");
	struct cs_unwind_stats stats;
	cs_unwinder_stats(u, &stats);
	cr_assert_eq(stats.stacks, 1);
	cr_assert_eq(stats.failures, 1);
	cr_assert_eq(stats.processes, 1);
	cs_unwinder_free(u);
}

#endif
