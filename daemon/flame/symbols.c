// SPDX-License-Identifier: BSD-2-Clause
/* Code addresses to names (see symbols.h): processes, JIT maps, the kernel. Reads /proc. */
#include "symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_symbols.h"

struct mapping {
	uint64_t start, end, offset;
	char *path;             /* NULL: anonymous */
	struct cs_elf_file *elf; /* NULL: could not be read */
};

struct jit_symbol {
	uint64_t start, size;
	char *name;
};

struct process {
	pid_t pid;
	struct mapping *mappings;   /* executable ones, sorted by start */
	size_t mapping_count;
	struct jit_symbol *jit;     /* /tmp/perf-PID.map, sorted */
	size_t jit_count;
	struct process *next;
};

struct kernel_symbol {
	uint64_t addr;
	char *name;
};

struct cs_symbolizer {
	struct process *processes;
	struct cs_elf_cache elf_cache;
	struct kernel_symbol *kernel;
	size_t kernel_count;
	bool kernel_loaded;
	struct cs_symbolizer_stats stats;
};

struct cs_symbolizer *cs_symbolizer_new(void)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	return calloc(1, sizeof(struct cs_symbolizer));
}

static void free_process(struct process *p)
{
	for (size_t i = 0; i < p->mapping_count; i++)
		free(p->mappings[i].path);
	free(p->mappings);
	for (size_t i = 0; i < p->jit_count; i++)
		free(p->jit[i].name);
	free(p->jit);
	free(p);
}

void cs_symbolizer_free(struct cs_symbolizer *sym)
{
	if (!sym)
		return;
	while (sym->processes) {
		struct process *next = sym->processes->next;
		free_process(sym->processes);
		sym->processes = next;
	}
	cs_elf_cache_free(&sym->elf_cache);
	for (size_t i = 0; i < sym->kernel_count; i++)
		free(sym->kernel[i].name);
	free(sym->kernel);
	free(sym);
}

void cs_symbolizer_stats(const struct cs_symbolizer *sym, struct cs_symbolizer_stats *stats)
{
	*stats = sym->stats;
	stats->elf_files = sym->elf_cache.files_read;
	stats->elf_cache_hits = sym->elf_cache.hits;
}

/* ---- ELF files --------------------------------------------------------------- */

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* The ELF file open on fd; path names it. */
static struct cs_elf_file *load_elf(struct cs_symbolizer *sym, int fd, const char *path)
{
	struct stat st;
	if (fstat(fd, &st))
		return NULL;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	return elf ? cs_elf_load(&sym->elf_cache, elf, path, &st) : NULL;
}

/* The vDSO: an ELF image the kernel maps into every process, read from its memory. */
static struct cs_elf_file *load_vdso(struct cs_symbolizer *sym, pid_t pid, uint64_t start, uint64_t end)
{
	if (end - start > (1u << 20))
		return NULL;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t len = end - start;
	char *image = malloc(len);
	struct cs_elf_file *file = NULL;
	if (image && pread(fd, image, len, (off_t)start) == (ssize_t)len) {
		Elf *elf = elf_memory(image, len);
		/* No build-id would leave this identity: one vDSO per kernel. */
		struct stat st = { .st_dev = 0, .st_ino = 1 };
		if (elf)
			file = cs_elf_load(&sym->elf_cache, elf, "[vdso]", &st);
	}
	free(image);
	close(fd);
	return file;
}

/* ---- processes ------------------------------------------------------------------ */

/* The mapped file as the process sees it, even if replaced or in another mount namespace. */
static int open_mapped_file(pid_t pid, const struct mapping *m)
{
	char path[4096 + 64];
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->start, m->end);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, m->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	return open(m->path, O_RDONLY | O_CLOEXEC);
}

static int cmp_jit(const void *a, const void *b)
{
	const struct jit_symbol *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* /tmp/perf-PID.map: "START SIZE name" per line, hex, written by JIT runtimes. */
static void read_perf_map(struct process *p)
{
	char path[64];
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)p->pid);
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(path, sizeof(path), "/proc/%d/root/tmp/perf-%d.map", (int)p->pid, (int)p->pid);
		f = fopen(path, "re");
	}
	if (!f)
		return;
	char line[1024];
	size_t cap = 0;
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, size;
		int name_at = 0;
		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %n", &start, &size, &name_at) != 2 || !name_at)
			continue;
		char *name = line + name_at;
		name[strcspn(name, "\n")] = '\0';
		if (!name[0])
			continue;
		if (p->jit_count == cap) {
			size_t grown_cap = cap ? 2 * cap : 256;
			struct jit_symbol *grown = realloc(p->jit, grown_cap * sizeof(*grown));
			if (!grown)
				break;
			p->jit = grown;
			cap = grown_cap;
		}
		char *copy = strdup(name);
		if (!copy)
			break;
		p->jit[p->jit_count++] = (struct jit_symbol){ .start = start, .size = size, .name = copy };
	}
	fclose(f);
	if (p->jit_count)
		qsort(p->jit, p->jit_count, sizeof(*p->jit), cmp_jit);
}

/* Executable mappings of pid, in address order (maps lists them so). */
static int read_maps(struct cs_symbolizer *sym, struct process *p)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)p->pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char line[4096 + 128];
	size_t cap = 0;
	int err = 0;
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end, offset;
		char perms[8];
		int path_at = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*x:%*x %*u %n", &start, &end, perms,
			   &offset, &path_at) != 4)
			continue;
		if (!strchr(perms, 'x'))
			continue;
		char *name = path_at ? line + path_at : line + strlen(line);
		name[strcspn(name, "\n")] = '\0';
		if (p->mapping_count == cap) {
			size_t grown_cap = cap ? 2 * cap : 64;
			struct mapping *grown = realloc(p->mappings, grown_cap * sizeof(*grown));
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			p->mappings = grown;
			cap = grown_cap;
		}
		struct mapping *m = &p->mappings[p->mapping_count];
		*m = (struct mapping){ .start = start, .end = end, .offset = offset };
		if (name[0] == '/') {
			m->path = strdup(name);
			if (!m->path) {
				err = -ENOMEM;
				break;
			}
			int fd = open_mapped_file(p->pid, m);
			if (fd >= 0) {
				m->elf = load_elf(sym, fd, name);
				close(fd);
			}
			if (!m->elf)
				sym->stats.elf_failures++;
		} else if (name[0]) {
			m->path = strdup(name); /* [vdso], [vsyscall], ... */
			if (!strcmp(name, "[vdso]"))
				m->elf = load_vdso(sym, p->pid, start, end);
		}
		p->mapping_count++;
	}
	fclose(f);
	return err;
}

int cs_symbolizer_add_process(struct cs_symbolizer *sym, pid_t pid)
{
	struct process *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	int err = read_maps(sym, p);
	if (err) {
		free_process(p);
		return err;
	}
	read_perf_map(p);
	/* The newest snapshot replaces an older one. */
	for (struct process **link = &sym->processes; *link; link = &(*link)->next)
		if ((*link)->pid == pid) {
			struct process *old = *link;
			*link = old->next;
			free_process(old);
			sym->stats.processes--;
			break;
		}
	p->next = sym->processes;
	sym->processes = p;
	sym->stats.processes++;
	return 0;
}

/* ---- lookups -------------------------------------------------------------------- */

static const struct process *find_process(const struct cs_symbolizer *sym, pid_t pid)
{
	for (const struct process *p = sym->processes; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

static const struct mapping *find_mapping(const struct process *p, uint64_t addr)
{
	size_t lo = 0, hi = p->mapping_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->mappings[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= p->mappings[lo - 1].end)
		return NULL;
	return &p->mappings[lo - 1];
}

static const struct jit_symbol *find_jit(const struct process *p, uint64_t addr)
{
	size_t lo = 0, hi = p->jit_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->jit[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct jit_symbol *j = &p->jit[lo - 1];
	return addr < j->start + j->size ? j : NULL;
}

void cs_symbolize_user(struct cs_symbolizer *sym, pid_t pid, uint64_t addr, bool return_address, char *buf,
		       size_t len)
{
	uint64_t lookup = return_address && addr ? addr - 1 : addr;
	const struct process *p = find_process(sym, pid);
	if (!p) {
		snprintf(buf, len, "[unknown]+0x%" PRIx64, addr);
		return;
	}
	const struct mapping *m = find_mapping(p, lookup);
	if (m && m->elf) {
		uint64_t vaddr = cs_elf_offset_to_vaddr(m->elf, lookup - m->start + m->offset);
		const struct cs_elf_symbol *s = cs_elf_find_symbol(m->elf, vaddr);
		if (s)
			snprintf(buf, len, "%s", s->name);
		else
			snprintf(buf, len, "%s+0x%" PRIx64, m->elf->module, vaddr + (lookup != addr));
		return;
	}
	/* Anonymous executable memory: a JIT's code, if it says so. */
	const struct jit_symbol *j = find_jit(p, lookup);
	if (j) {
		snprintf(buf, len, "%s", j->name);
		return;
	}
	if (m && m->path)
		snprintf(buf, len, "%s+0x%" PRIx64, m->path[0] == '/' ? base_name(m->path) : m->path,
			 addr - m->start + m->offset);
	else if (m)
		snprintf(buf, len, "[anon]+0x%" PRIx64, addr);
	else
		snprintf(buf, len, "[unknown]+0x%" PRIx64, addr);
}

/* ---- the kernel ----------------------------------------------------------------- */

static int cmp_kernel_symbol(const void *a, const void *b)
{
	const struct kernel_symbol *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void load_kallsyms(struct cs_symbolizer *sym)
{
	sym->kernel_loaded = true;
	FILE *f = fopen("/proc/kallsyms", "re");
	if (!f)
		return;
	char line[512];
	size_t cap = 0;
	while (fgets(line, sizeof(line), f)) {
		uint64_t addr;
		char type, name[256];
		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) != 3 || !addr)
			continue;
		/* Text only: T/t (functions), W/w (weak). */
		if (type != 'T' && type != 't' && type != 'W' && type != 'w')
			continue;
		if (sym->kernel_count == cap) {
			size_t grown_cap = cap ? 2 * cap : 65536;
			struct kernel_symbol *grown = realloc(sym->kernel, grown_cap * sizeof(*grown));
			if (!grown)
				break;
			sym->kernel = grown;
			cap = grown_cap;
		}
		char *copy = strdup(name);
		if (!copy)
			break;
		sym->kernel[sym->kernel_count++] = (struct kernel_symbol){ .addr = addr, .name = copy };
	}
	fclose(f);
	if (sym->kernel_count)
		qsort(sym->kernel, sym->kernel_count, sizeof(*sym->kernel), cmp_kernel_symbol);
}

void cs_symbolize_kernel(struct cs_symbolizer *sym, uint64_t addr, bool return_address, char *buf, size_t len)
{
	if (!sym->kernel_loaded)
		load_kallsyms(sym);
	uint64_t lookup = return_address && addr ? addr - 1 : addr;
	size_t lo = 0, hi = sym->kernel_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (sym->kernel[mid].addr <= lookup)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Past the last text symbol is not text we know: no name. */
	if (!lo || lo == sym->kernel_count) {
		snprintf(buf, len, "[kernel]+0x%" PRIx64, addr);
		return;
	}
	snprintf(buf, len, "%s", sym->kernel[lo - 1].name);
}
