/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Names for code addresses: user addresses of a process through its
 * mappings (/proc/PID/maps) and the ELF symbol tables of the mapped files
 * (.symtab, else a build-id debug file's, else .dynsym), JIT code through
 * /tmp/perf-PID.map, kernel addresses through /proc/kallsyms.
 *
 * Files are read through /proc/PID/map_files (or /proc/PID/root), so a
 * binary replaced on disk since the process started still resolves right;
 * their symbol tables are cached by build-id (by path and inode without
 * one), so a hundred nginx workers cost one table.
 *
 * An address that cannot be named becomes "module+0xOFFSET" (OFFSET: the
 * ELF virtual address, what addr2line and objdump take), "[kernel]+0xADDR"
 * or "[unknown]+0xADDR": never a wrong name.
 */
#ifndef CS_SYMBOLS_H
#define CS_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct cs_symbolizer;

struct cs_symbolizer *cs_symbolizer_new(void);
void cs_symbolizer_free(struct cs_symbolizer *sym);

/*
 * Reads pid's mappings now (again, if already known: the newest wins).
 * Call while the process lives; its files are opened then too. Returns 0
 * or -errno (no such process, no permission).
 */
int cs_symbolizer_add_process(struct cs_symbolizer *sym, pid_t pid);

/*
 * The name of addr in pid. return_address: addr is where a call returns
 * to (every frame but a stack's leaf), so the call itself is at addr - 1.
 */
void cs_symbolize_user(struct cs_symbolizer *sym, pid_t pid, uint64_t addr, bool return_address, char *buf,
		       size_t len);

/* The name of a kernel address (kallsyms read on first use). */
void cs_symbolize_kernel(struct cs_symbolizer *sym, uint64_t addr, bool return_address, char *buf, size_t len);

struct cs_symbolizer_stats {
	size_t processes;
	size_t elf_files;        /* distinct files whose symbols were read */
	size_t elf_cache_hits;   /* mappings that reused a file already read */
	size_t elf_failures;     /* files that could not be opened or parsed */
};

void cs_symbolizer_stats(const struct cs_symbolizer *sym, struct cs_symbolizer_stats *stats);

#endif /* CS_SYMBOLS_H */
