// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of the symboliser (daemon/flame/symbols.c) against this very process:
 * its own functions (a PIE executable with .symtab), libc (a shared
 * object), an address with no function, unmapped memory, a JIT's perf
 * map, kernel addresses from /proc/kallsyms.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbols.h"

static struct cs_symbolizer *sym;

static void setup(void)
{
	sym = cs_symbolizer_new();
	cr_assert_not_null(sym);
}

static void teardown(void)
{
	cs_symbolizer_free(sym);
}

TestSuite(symbols, .init = setup, .fini = teardown);

/* A function of the test binary with a known name; kept out of line. */
__attribute__((noinline)) uintptr_t cs_symbols_test_target(uintptr_t x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

/* The address its caller resumes at: a return address in this binary. */
__attribute__((noinline)) static uintptr_t where_am_i_called_from(void)
{
	return (uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0));
}

static const char no_code_here[64] = "rodata, not code";

static const char *name_of(uintptr_t addr, bool return_address)
{
	static char buf[256];
	cs_symbolize_user(sym, getpid(), addr, return_address, buf, sizeof(buf));
	return buf;
}

Test(symbols, a_function_of_this_executable)
{
	cr_assert_eq(cs_symbolizer_add_process(sym, getpid()), 0);
	uintptr_t fn = (uintptr_t)&cs_symbols_test_target;
	cr_assert_str_eq(name_of(fn, false), "cs_symbols_test_target");
	cr_assert_str_eq(name_of(fn + 3, false), "cs_symbols_test_target");
	/* A return address right after the function's end still names it, read as addr - 1. */
	cr_assert_eq(cs_symbols_test_target(1), 4);
}

Test(symbols, a_function_of_a_shared_library)
{
	cr_assert_eq(cs_symbolizer_add_process(sym, getpid()), 0);
	const char *name = name_of((uintptr_t)&getpid, false);
	cr_assert(strstr(name, "getpid") != NULL, "libc's getpid resolved to '%s'", name);
	name = name_of((uintptr_t)&strlen, false);
	cr_assert(strstr(name, "strlen") != NULL, "libc's strlen resolved to '%s'", name);
}

Test(symbols, addresses_outside_code_are_unknown_by_address)
{
	cr_assert_eq(cs_symbolizer_add_process(sym, getpid()), 0);
	/* Read-only data is mapped, but not executable: no code there to name. */
	char expected[64];
	snprintf(expected, sizeof(expected), "[unknown]+0x%" PRIxPTR, (uintptr_t)no_code_here);
	cr_assert_str_eq(name_of((uintptr_t)no_code_here, false), expected);
	cr_assert_str_eq(name_of(0x10, false), "[unknown]+0x10");
	/* A process never added: no name either. */
	char buf[64];
	cs_symbolize_user(sym, 0x7ffffff0, 0x401000, false, buf, sizeof(buf));
	cr_assert_str_eq(buf, "[unknown]+0x401000");
}

Test(symbols, a_text_address_outside_every_symbol_gives_module_offset)
{
	cr_assert_eq(cs_symbolizer_add_process(sym, getpid()), 0);
	/* Find an executable mapping of this binary and an address in it past the last function. */
	FILE *maps = fopen("/proc/self/maps", "r");
	cr_assert_not_null(maps);
	char line[4096], exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	cr_assert_gt(len, 0);
	exe[len] = '\0';
	uintptr_t start = 0, end = 0;
	while (fgets(line, sizeof(line), maps)) {
		char perms[8];
		uintptr_t s, e;
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &s, &e, perms) == 3 && strchr(perms, 'x') &&
		    strstr(line, exe)) {
			start = s;
			end = e;
		}
	}
	fclose(maps);
	cr_assert_neq(end, 0, "this binary has an executable mapping");
	/* The last bytes of the text mapping are page padding after the last function. */
	const char *name = name_of(end - 1, false);
	const char *base = strrchr(exe, '/') + 1;
	char prefix[512];
	snprintf(prefix, sizeof(prefix), "%s+0x", base);
	cr_assert(strncmp(name, prefix, strlen(prefix)) == 0, "end of text resolved to '%s', not %s...", name, prefix);
	(void)start;
}

Test(symbols, jit_code_from_the_perf_map)
{
	void *code = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(code, MAP_FAILED);
	char path[64];
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	FILE *map = fopen(path, "w");
	cr_assert_not_null(map);
	fprintf(map, "%" PRIxPTR " 100 LazyCompile:*handleRequest server.js:42\n", (uintptr_t)code + 0x40);
	fclose(map);

	int err = cs_symbolizer_add_process(sym, getpid());
	unlink(path);
	cr_assert_eq(err, 0);
	cr_assert_str_eq(name_of((uintptr_t)code + 0x50, false), "LazyCompile:*handleRequest server.js:42");
	/* The same anonymous mapping outside the JIT's entry: anonymous code, by address. */
	const char *name = name_of((uintptr_t)code + 0x200, false);
	cr_assert(strncmp(name, "[anon]+0x", 9) == 0, "got '%s'", name);
	munmap(code, 4096);
}

Test(symbols, a_return_address_names_its_caller)
{
	cr_assert_eq(cs_symbolizer_add_process(sym, getpid()), 0);
	uintptr_t ret = where_am_i_called_from();
	const char *name = name_of(ret, true);
	cr_assert(strstr(name, "a_return_address_names_its_caller") != NULL, "return address named '%s'", name);
}

Test(symbols, files_are_read_once_by_build_id)
{
	cr_assert_eq(cs_symbolizer_add_process(sym, getpid()), 0);
	struct cs_symbolizer_stats first;
	cs_symbolizer_stats(sym, &first);
	cr_assert_gt(first.elf_files, 1, "this binary and libc at least");
	cr_assert_eq(cs_symbolizer_add_process(sym, getpid()), 0);
	struct cs_symbolizer_stats again;
	cs_symbolizer_stats(sym, &again);
	cr_assert_eq(again.elf_files, first.elf_files, "nothing read twice");
	cr_assert_gt(again.elf_cache_hits, first.elf_cache_hits);
	cr_assert_eq(again.processes, 1, "a new snapshot replaces the old one");
	cr_assert_eq(cs_symbolizer_add_process(sym, 0x7ffffff0), -ENOENT, "no such process");
}

Test(symbols, kernel_addresses)
{
	FILE *kallsyms = fopen("/proc/kallsyms", "r");
	cr_assert_not_null(kallsyms);
	char line[512];
	uint64_t schedule = 0;
	while (fgets(line, sizeof(line), kallsyms)) {
		uint64_t addr;
		char type, name[256];
		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) == 3 && !strcmp(name, "schedule") &&
		    (type == 'T' || type == 't'))
			schedule = addr;
	}
	fclose(kallsyms);
	char buf[256];
	if (schedule) {
		cs_symbolize_kernel(sym, schedule + 4, false, buf, sizeof(buf));
		cr_assert_str_eq(buf, "schedule");
	} else {
		/* kptr_restrict hides the addresses: no name may be made up. */
		cs_symbolize_kernel(sym, 0xffffffff81234567ull, false, buf, sizeof(buf));
		cr_assert_str_eq(buf, "[kernel]+0xffffffff81234567");
	}
	cs_symbolize_kernel(sym, 0x1000, false, buf, sizeof(buf));
	cr_assert_str_eq(buf, "[kernel]+0x1000", "below the kernel: no name");
}
