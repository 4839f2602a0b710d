// SPDX-License-Identifier: BSD-2-Clause
/* ELF symbol tables, cached by build-id (see elf_symbols.h). Reads files. */
#include "elf_symbols.h"

#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NT_GNU_BUILD_ID_TYPE 3

static size_t read_build_id(Elf *elf, unsigned char *out)
{
	size_t count;
	if (elf_getphdrnum(elf, &count))
		return 0;
	for (size_t i = 0; i < count; i++) {
		GElf_Phdr phdr;
		if (!gelf_getphdr(elf, (int)i, &phdr) || phdr.p_type != PT_NOTE)
			continue;
		Elf_Data *data = elf_getdata_rawchunk(elf, (int64_t)phdr.p_offset, phdr.p_filesz, ELF_T_NHDR);
		if (!data)
			continue;
		size_t offset = 0, name_off, desc_off;
		GElf_Nhdr note;
		while ((offset = gelf_getnote(data, offset, &note, &name_off, &desc_off)) > 0) {
			if (note.n_type == NT_GNU_BUILD_ID_TYPE && note.n_namesz == 4 &&
			    !memcmp((char *)data->d_buf + name_off, "GNU", 4) && note.n_descsz <= CS_BUILD_ID_MAX) {
				memcpy(out, (char *)data->d_buf + desc_off, note.n_descsz);
				return note.n_descsz;
			}
		}
	}
	return 0;
}

static int cmp_symbol(const void *a, const void *b)
{
	const struct cs_elf_symbol *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return y->rank - x->rank; /* the preferred alias first */
}

/* Global beats weak beats local; a name without leading underscores beats one with. */
static int symbol_rank(const GElf_Sym *s, const char *name)
{
	int bind = GELF_ST_BIND(s->st_info);
	int rank = bind == STB_GLOBAL ? 4 : bind == STB_WEAK ? 2 : 0;
	if (name[0] != '_')
		rank++;
	return rank;
}

/* Adds the function symbols of one symbol table section. Returns how many. */
static size_t read_symbols(Elf *elf, Elf_Scn *scn, struct cs_elf_file *file)
{
	GElf_Shdr shdr;
	if (!gelf_getshdr(scn, &shdr) || !shdr.sh_entsize)
		return 0;
	Elf_Data *data = elf_getdata(scn, NULL);
	if (!data)
		return 0;
	size_t count = shdr.sh_size / shdr.sh_entsize, added = 0;
	struct cs_elf_symbol *grown = realloc(file->symbols, (file->symbol_count + count) * sizeof(*grown));
	if (!grown)
		return 0;
	file->symbols = grown;
	for (size_t i = 0; i < count; i++) {
		GElf_Sym s;
		if (!gelf_getsym(data, (int)i, &s))
			continue;
		int type = GELF_ST_TYPE(s.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		const char *name = elf_strptr(elf, shdr.sh_link, s.st_name);
		if (!name || !name[0])
			continue;
		/* "clock_nanosleep@GLIBC_2.2.5" (debug files): the version says nothing here. */
		char *copy = strndup(name, strcspn(name, "@"));
		if (!copy)
			break;
		file->symbols[file->symbol_count++] = (struct cs_elf_symbol){
			.addr = s.st_value, .size = s.st_size, .name = copy, .rank = symbol_rank(&s, name),
		};
		added++;
	}
	return added;
}

/* The first section of type in elf, or NULL. */
static Elf_Scn *find_section(Elf *elf, uint32_t type)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == type)
			return scn;
	}
	return NULL;
}

/* Debian's -dbgsym packages put the full symbol table here, by build-id. */
static size_t read_debug_file_symbols(struct cs_elf_file *file)
{
	if (file->build_id_len < 2)
		return 0;
	char path[64 + 2 * CS_BUILD_ID_MAX];
	int used = snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%02x/", file->build_id[0]);
	for (size_t i = 1; i < file->build_id_len; i++)
		used += snprintf(path + used, sizeof(path) - (size_t)used, "%02x", file->build_id[i]);
	snprintf(path + used, sizeof(path) - (size_t)used, ".debug");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t added = 0;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf) {
		Elf_Scn *scn = find_section(elf, SHT_SYMTAB);
		if (scn)
			added = read_symbols(elf, scn, file);
		elf_end(elf);
	}
	close(fd);
	return added;
}

/* Sort, and keep one name per address (the best-ranked alias). */
static void finish_symbols(struct cs_elf_file *file)
{
	if (!file->symbol_count)
		return;
	qsort(file->symbols, file->symbol_count, sizeof(*file->symbols), cmp_symbol);
	size_t kept = 0;
	for (size_t i = 0; i < file->symbol_count; i++) {
		if (kept && file->symbols[kept - 1].addr == file->symbols[i].addr) {
			struct cs_elf_symbol *best = &file->symbols[kept - 1];
			if (!best->size)
				best->size = file->symbols[i].size;
			free(file->symbols[i].name);
			continue;
		}
		file->symbols[kept++] = file->symbols[i];
	}
	file->symbol_count = kept;
}

static struct cs_elf_file *find_cached(struct cs_elf_cache *cache, const unsigned char *build_id, size_t len,
				       const struct stat *st)
{
	for (struct cs_elf_file *f = cache->files; f; f = f->next) {
		if (len && f->build_id_len == len && !memcmp(f->build_id, build_id, len))
			return f;
		if (!len && !f->build_id_len && f->dev == st->st_dev && f->ino == st->st_ino)
			return f;
	}
	return NULL;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

struct cs_elf_file *cs_elf_load(struct cs_elf_cache *cache, Elf *elf, const char *path, const struct stat *st)
{
	if (elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		return NULL;
	}
	unsigned char build_id[CS_BUILD_ID_MAX];
	size_t build_id_len = read_build_id(elf, build_id);
	struct cs_elf_file *file = find_cached(cache, build_id, build_id_len, st);
	if (file) {
		cache->hits++;
		elf_end(elf);
		return file;
	}
	file = calloc(1, sizeof(*file));
	if (!file || !(file->module = strdup(base_name(path)))) {
		free(file);
		elf_end(elf);
		return NULL;
	}
	memcpy(file->build_id, build_id, build_id_len);
	file->build_id_len = build_id_len;
	file->dev = st->st_dev;
	file->ino = st->st_ino;

	size_t count = 0;
	if (!elf_getphdrnum(elf, &count) && count)
		file->segments = calloc(count, sizeof(*file->segments));
	for (size_t i = 0; file->segments && i < count; i++) {
		GElf_Phdr phdr;
		if (gelf_getphdr(elf, (int)i, &phdr) && phdr.p_type == PT_LOAD)
			file->segments[file->segment_count++] = (struct cs_elf_segment){
				.offset = phdr.p_offset, .vaddr = phdr.p_vaddr, .filesz = phdr.p_filesz,
			};
	}
	/* .symtab has every function; stripped files keep only .dynsym. */
	Elf_Scn *symtab = find_section(elf, SHT_SYMTAB);
	if (!symtab || !read_symbols(elf, symtab, file)) {
		if (!read_debug_file_symbols(file)) {
			Elf_Scn *dynsym = find_section(elf, SHT_DYNSYM);
			if (dynsym)
				read_symbols(elf, dynsym, file);
		}
	}
	elf_end(elf);
	finish_symbols(file);
	file->next = cache->files;
	cache->files = file;
	cache->files_read++;
	return file;
}

const struct cs_elf_symbol *cs_elf_find_symbol(const struct cs_elf_file *file, uint64_t vaddr)
{
	size_t lo = 0, hi = file->symbol_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (file->symbols[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct cs_elf_symbol *s = &file->symbols[lo - 1];
	if (s->size && vaddr >= s->addr + s->size)
		return NULL;
	/* Without a size, only up to the next symbol (and not past the file's last). */
	if (!s->size && lo == file->symbol_count)
		return NULL;
	return s;
}

uint64_t cs_elf_offset_to_vaddr(const struct cs_elf_file *file, uint64_t offset)
{
	for (size_t i = 0; i < file->segment_count; i++) {
		const struct cs_elf_segment *seg = &file->segments[i];
		if (offset >= seg->offset && offset < seg->offset + seg->filesz)
			return offset - seg->offset + seg->vaddr;
	}
	return offset;
}

void cs_elf_cache_free(struct cs_elf_cache *cache)
{
	while (cache->files) {
		struct cs_elf_file *next = cache->files->next;
		for (size_t i = 0; i < cache->files->symbol_count; i++)
			free(cache->files->symbols[i].name);
		free(cache->files->symbols);
		free(cache->files->segments);
		free(cache->files->module);
		free(cache->files);
		cache->files = next;
	}
}
