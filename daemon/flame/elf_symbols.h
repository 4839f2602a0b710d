/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ELF symbol tables for the symboliser (symbols.c): one struct cs_elf_file
 * per distinct file, cached by build-id (by device and inode without one):
 * its function symbols (.symtab, else the build-id debug file's, else
 * .dynsym), sorted, one name per address, and its PT_LOAD segments to turn
 * file offsets into ELF addresses.
 */
#ifndef CS_ELF_SYMBOLS_H
#define CS_ELF_SYMBOLS_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define CS_BUILD_ID_MAX 64

struct cs_elf_symbol {
	uint64_t addr;
	uint64_t size;
	char *name;
	int rank;           /* among aliases at one address, the higher is shown */
};

struct cs_elf_segment {
	uint64_t offset;    /* p_offset */
	uint64_t vaddr;     /* p_vaddr */
	uint64_t filesz;
};

struct cs_elf_file {
	unsigned char build_id[CS_BUILD_ID_MAX];
	size_t build_id_len;
	dev_t dev;            /* without a build-id: the file's identity */
	ino_t ino;
	char *module;         /* base name, for "module+0x..." */
	struct cs_elf_segment *segments;
	size_t segment_count;
	struct cs_elf_symbol *symbols;   /* sorted by addr, aliases folded */
	size_t symbol_count;
	struct cs_elf_file *next;
};

struct cs_elf_cache {
	struct cs_elf_file *files;
	size_t files_read;    /* distinct files whose symbols were read */
	size_t hits;          /* loads answered from the cache */
};

/*
 * The symbols of an ELF image (read from the cache when its build-id, or
 * st's device and inode, was seen before); path gives the module name's
 * base. Ends elf. NULL: not an ELF file, or out of memory.
 */
struct cs_elf_file *cs_elf_load(struct cs_elf_cache *cache, Elf *elf, const char *path, const struct stat *st);

void cs_elf_cache_free(struct cs_elf_cache *cache);

/* The function symbol containing vaddr, or NULL. */
const struct cs_elf_symbol *cs_elf_find_symbol(const struct cs_elf_file *file, uint64_t vaddr);

/* File offset to ELF virtual address, through the PT_LOAD that maps it. */
uint64_t cs_elf_offset_to_vaddr(const struct cs_elf_file *file, uint64_t offset);

#endif /* CS_ELF_SYMBOLS_H */
