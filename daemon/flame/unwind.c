// SPDX-License-Identifier: BSD-2-Clause
/* User stacks unwound from a copy by CFI, with elfutils' libdwfl (see unwind.h). Reads /proc. */
#include "unwind.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* DWARF's numbers for the x86-64 registers the copy comes with. */
#define DWARF_REG_RBP 6
#define DWARF_REG_RSP 7

/*
 * A read this far past the copy's end is still the stack (threads' stacks
 * are larger): the copy was too short for that unwind. Farther is some
 * other memory, which a frame pointer that is no frame pointer points at.
 */
#define STACK_REACH_BYTES (1u << 20)

/* One target process: its mappings as libdwfl modules, and the stack being unwound. */
struct process {
	pid_t pid;
	Dwfl *dwfl;
	const struct cs_user_stack *stack; /* during cs_unwind only */
	bool read_past_copy;
	struct process *next;
};

struct cs_unwinder {
	struct process *processes;
	struct cs_unwind_stats stats;
};

/* ---- modules: the mapped files -------------------------------------------------- */

/*
 * A mapped file, opened in the process's own mount namespace (a
 * container's files are not the host's); libdwfl's own lookup for the
 * rest (the vDSO and deleted files, read from the process's memory).
 */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base, char **file_name,
		    Elf **elfp)
{
	const struct process *p = *userdata;
	if (p && name[0] == '/') {
		char path[PATH_MAX + 32];
		snprintf(path, sizeof(path), "/proc/%d/root%s", (int)p->pid, name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			*file_name = strdup(path);
			return fd;
		}
	}
	return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
}

/*
 * No separate debug files: the CFI an unwind needs is the loaded file's
 * .eh_frame, and names come from the symboliser. Opening a debug file
 * (glibc's is 5 MB) would only add a second copy of the same CFI.
 */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base, const char *file_name,
			const char *debuglink, GElf_Word crc, char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)name, (void)base, (void)file_name, (void)debuglink, (void)crc;
	*debuginfo_file_name = NULL;
	return -1;
}

static const Dwfl_Callbacks module_callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = no_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* Each module's user data is its process, for find_elf. */
static int set_module_process(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start, void *arg)
{
	(void)mod, (void)name, (void)start;
	*userdata = arg;
	return DWARF_CB_OK;
}

/* The process's mappings, (re)reported. Returns 0 or -errno. */
static int report_mappings(struct process *p)
{
	dwfl_report_begin(p->dwfl);
	int err = dwfl_linux_proc_report(p->dwfl, p->pid);
	if (dwfl_report_end(p->dwfl, NULL, NULL) && !err)
		err = ENOMEM;
	if (err)
		return err > 0 ? -err : -EIO;
	dwfl_getmodules(p->dwfl, set_module_process, p, 0);
	return 0;
}

/* ---- threads: the copy in place of the live thread -------------------------------- */

/* Only the thread being unwound, asked for by id: none to list. */
static pid_t next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	(void)dwfl, (void)dwfl_arg, (void)thread_argp;
	return 0;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp)
{
	(void)dwfl, (void)tid;
	*thread_argp = dwfl_arg;
	return true;
}

/* Stack memory, from the copy only. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	(void)dwfl;
	struct process *p = dwfl_arg;
	const struct cs_user_stack *stack = p->stack;
	uint64_t end = stack->sp + stack->len;
	if (addr >= stack->sp && addr < end && end - addr >= sizeof(*result)) {
		memcpy(result, (const char *)stack->bytes + (addr - stack->sp), sizeof(*result));
		return true;
	}
	if (addr >= end && addr - end < STACK_REACH_BYTES)
		p->read_past_copy = true;
	return false;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct process *p = thread_arg;
	const Dwarf_Word regs[] = { p->stack->bp, p->stack->sp }; /* DWARF_REG_RBP, DWARF_REG_RSP */
	if (!dwfl_thread_state_registers(thread, DWARF_REG_RBP, 2, regs))
		return false;
	dwfl_thread_state_register_pc(thread, p->stack->ip);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* ---- processes ---------------------------------------------------------------------- */

struct cs_unwinder *cs_unwinder_new(void)
{
	return calloc(1, sizeof(struct cs_unwinder));
}

void cs_unwinder_free(struct cs_unwinder *u)
{
	if (!u)
		return;
	while (u->processes) {
		struct process *next = u->processes->next;
		dwfl_end(u->processes->dwfl);
		free(u->processes);
		u->processes = next;
	}
	free(u);
}

static struct process *find_process(const struct cs_unwinder *u, pid_t pid)
{
	for (struct process *p = u->processes; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

int cs_unwinder_add_process(struct cs_unwinder *u, pid_t pid)
{
	struct process *p = find_process(u, pid);
	if (p)
		return report_mappings(p);
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->dwfl = dwfl_begin(&module_callbacks);
	int err = p->dwfl ? report_mappings(p) : -ENOMEM;
	/* The architecture comes from the first module libdwfl can read. */
	if (!err && !dwfl_attach_state(p->dwfl, NULL, pid, &thread_callbacks, p))
		err = -ENOEXEC;
	if (err) {
		dwfl_end(p->dwfl);
		free(p);
		return err;
	}
	p->next = u->processes;
	u->processes = p;
	u->stats.processes++;
	return 0;
}

/* ---- the unwind ------------------------------------------------------------------------ */

struct frames {
	uint64_t *ips;
	size_t max, count;
	uint64_t first_sp, last_sp;
};

static int take_frame(Dwfl_Frame *frame, void *arg)
{
	struct frames *f = arg;
	Dwarf_Addr pc;
	bool activation;
	if (!dwfl_frame_pc(frame, &pc, &activation) || !pc)
		return DWARF_CB_ABORT;
	/* Above the leaf, a frame a signal interrupted reads as a return address too. */
	f->ips[f->count] = f->count && activation ? pc + 1 : pc;
	f->count++;
	Dwarf_Word sp;
	if (dwfl_frame_reg(frame, DWARF_REG_RSP, &sp) == 0 && sp > f->last_sp)
		f->last_sp = sp;
	return f->count < f->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int cs_unwind(struct cs_unwinder *u, pid_t pid, const struct cs_user_stack *stack, uint64_t *ips, size_t max_ips)
{
#if !defined(__x86_64__)
	(void)u, (void)pid, (void)stack, (void)ips, (void)max_ips;
	return -ENOTSUP;
#else
	if (!stack->ip || !stack->sp || !max_ips)
		return -EINVAL;
	struct process *p = find_process(u, pid);
	if (!p)
		return -ESRCH;
	uint64_t start_ns = now_ns();
	struct frames f = { .ips = ips, .max = max_ips, .first_sp = stack->sp, .last_sp = stack->sp };
	p->stack = stack;
	p->read_past_copy = false;
	/* An error ends the walk where it got to: the frames found so far stand. */
	dwfl_getthread_frames(p->dwfl, pid, take_frame, &f);
	p->stack = NULL;
	if (!f.count)
		ips[f.count++] = stack->ip;
	u->stats.stacks++;
	u->stats.failures += f.count < 2;
	u->stats.frames += f.count;
	u->stats.short_copies += p->read_past_copy;
	u->stats.elapsed_ns += now_ns() - start_ns;
	if (f.last_sp - f.first_sp > u->stats.deepest_bytes)
		u->stats.deepest_bytes = f.last_sp - f.first_sp;
	return (int)f.count;
#endif
}

void cs_unwinder_stats(const struct cs_unwinder *u, struct cs_unwind_stats *stats)
{
	*stats = u->stats;
}
