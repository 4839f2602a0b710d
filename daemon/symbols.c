// SPDX-License-Identifier: BSD-2-Clause
/* Code addresses to names (see symbols.h). Reads /proc and ELF files. */
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

#include "u64map.h"

#define NT_GNU_BUILD_ID_TYPE 3
#define BUILD_ID_MAX 64

struct symbol {
	uint64_t addr;
	uint64_t size;
	char *name;
	int rank;           /* among aliases at one address, the higher is shown */
};

struct segment {
	uint64_t offset;    /* p_offset */
	uint64_t vaddr;     /* p_vaddr */
	uint64_t filesz;
};

/* One ELF file's symbols; shared by every mapping of it (by build-id). */
struct elf_file {
	unsigned char build_id[BUILD_ID_MAX];
	size_t build_id_len;
	dev_t dev;            /* without a build-id: the file's identity */
	ino_t ino;
	char *module;         /* base name, for "module+0x..." */
	struct segment *segments;
	size_t segment_count;
	struct symbol *symbols;   /* sorted by addr, aliases folded */
	size_t symbol_count;
	struct elf_file *next;
};

struct mapping {
	uint64_t start, end, offset;
	char *path;             /* NULL: anonymous */
	struct elf_file *elf;   /* NULL: could not be read */
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
	int mem_fd;                 /* /proc/PID/mem, for code bytes; -1: none */
	struct cs_u64map call_sites;  /* address -> 1: after a call, 2: not */
	struct process *next;
};

struct kernel_symbol {
	uint64_t addr;
	char *name;
};

struct cs_symbolizer {
	struct process *processes;
	struct elf_file *files;
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
	if (p->mem_fd >= 0)
		close(p->mem_fd);
	cs_u64map_free(&p->call_sites);
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
	while (sym->files) {
		struct elf_file *next = sym->files->next;
		for (size_t i = 0; i < sym->files->symbol_count; i++)
			free(sym->files->symbols[i].name);
		free(sym->files->symbols);
		free(sym->files->segments);
		free(sym->files->module);
		free(sym->files);
		sym->files = next;
	}
	for (size_t i = 0; i < sym->kernel_count; i++)
		free(sym->kernel[i].name);
	free(sym->kernel);
	free(sym);
}

void cs_symbolizer_stats(const struct cs_symbolizer *sym, struct cs_symbolizer_stats *stats)
{
	*stats = sym->stats;
}

/* ---- ELF files --------------------------------------------------------------- */

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
			    !memcmp((char *)data->d_buf + name_off, "GNU", 4) && note.n_descsz <= BUILD_ID_MAX) {
				memcpy(out, (char *)data->d_buf + desc_off, note.n_descsz);
				return note.n_descsz;
			}
		}
	}
	return 0;
}

static int cmp_symbol(const void *a, const void *b)
{
	const struct symbol *x = a, *y = b;
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
static size_t read_symbols(Elf *elf, Elf_Scn *scn, struct elf_file *file)
{
	GElf_Shdr shdr;
	if (!gelf_getshdr(scn, &shdr) || !shdr.sh_entsize)
		return 0;
	Elf_Data *data = elf_getdata(scn, NULL);
	if (!data)
		return 0;
	size_t count = shdr.sh_size / shdr.sh_entsize, added = 0;
	struct symbol *grown = realloc(file->symbols, (file->symbol_count + count) * sizeof(*grown));
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
		file->symbols[file->symbol_count++] = (struct symbol){
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
static size_t read_debug_file_symbols(struct elf_file *file)
{
	if (file->build_id_len < 2)
		return 0;
	char path[64 + 2 * BUILD_ID_MAX];
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
static void finish_symbols(struct elf_file *file)
{
	if (!file->symbol_count)
		return;
	qsort(file->symbols, file->symbol_count, sizeof(*file->symbols), cmp_symbol);
	size_t kept = 0;
	for (size_t i = 0; i < file->symbol_count; i++) {
		if (kept && file->symbols[kept - 1].addr == file->symbols[i].addr) {
			struct symbol *best = &file->symbols[kept - 1];
			if (!best->size)
				best->size = file->symbols[i].size;
			free(file->symbols[i].name);
			continue;
		}
		file->symbols[kept++] = file->symbols[i];
	}
	file->symbol_count = kept;
}

static struct elf_file *find_cached(struct cs_symbolizer *sym, const unsigned char *build_id, size_t len,
				    const struct stat *st)
{
	for (struct elf_file *f = sym->files; f; f = f->next) {
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

/*
 * Reads (or finds in the cache) the symbols of an ELF image; path names
 * it, st identifies it when it has no build-id. Ends elf.
 */
static struct elf_file *load_elf_image(struct cs_symbolizer *sym, Elf *elf, const char *path, const struct stat *st)
{
	if (elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		return NULL;
	}
	unsigned char build_id[BUILD_ID_MAX];
	size_t build_id_len = read_build_id(elf, build_id);
	struct elf_file *file = find_cached(sym, build_id, build_id_len, st);
	if (file) {
		sym->stats.elf_cache_hits++;
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
			file->segments[file->segment_count++] = (struct segment){
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
	file->next = sym->files;
	sym->files = file;
	sym->stats.elf_files++;
	return file;
}

/* The ELF file open on fd; path names it. */
static struct elf_file *load_elf(struct cs_symbolizer *sym, int fd, const char *path)
{
	struct stat st;
	if (fstat(fd, &st))
		return NULL;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	return elf ? load_elf_image(sym, elf, path, &st) : NULL;
}

/* The vDSO: an ELF image the kernel maps into every process, read from its memory. */
static struct elf_file *load_vdso(struct cs_symbolizer *sym, pid_t pid, uint64_t start, uint64_t end)
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
	struct elf_file *file = NULL;
	if (image && pread(fd, image, len, (off_t)start) == (ssize_t)len) {
		Elf *elf = elf_memory(image, len);
		/* No build-id would leave this identity: one vDSO per kernel. */
		struct stat st = { .st_dev = 0, .st_ino = 1 };
		if (elf)
			file = load_elf_image(sym, elf, "[vdso]", &st);
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
	p->mem_fd = -1;
	if (cs_u64map_init(&p->call_sites, sizeof(uint8_t), 1u << 20)) {
		free(p);
		return -ENOMEM;
	}
	int err = read_maps(sym, p);
	if (err) {
		free_process(p);
		return err;
	}
	read_perf_map(p);
	char mem[64];
	snprintf(mem, sizeof(mem), "/proc/%d/mem", (int)pid);
	p->mem_fd = open(mem, O_RDONLY | O_CLOEXEC);
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

/* The symbol containing vaddr, or NULL. */
static const struct symbol *find_symbol(const struct elf_file *file, uint64_t vaddr)
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
	const struct symbol *s = &file->symbols[lo - 1];
	if (s->size && vaddr >= s->addr + s->size)
		return NULL;
	/* Without a size, only up to the next symbol (and not past the file's last). */
	if (!s->size && lo == file->symbol_count)
		return NULL;
	return s;
}

/* File offset to ELF virtual address, through the PT_LOAD that maps it. */
static uint64_t file_offset_to_vaddr(const struct elf_file *file, uint64_t offset)
{
	for (size_t i = 0; i < file->segment_count; i++) {
		const struct segment *seg = &file->segments[i];
		if (offset >= seg->offset && offset < seg->offset + seg->filesz)
			return offset - seg->offset + seg->vaddr;
	}
	return offset;
}

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
		uint64_t vaddr = file_offset_to_vaddr(m->elf, lookup - m->start + m->offset);
		const struct symbol *s = find_symbol(m->elf, vaddr);
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

/* ---- call sites ------------------------------------------------------------------ */

/*
 * x86-64: the bytes before addr end a call instruction: call rel32 (E8),
 * or an indirect call (FF /2) through a register, memory, a displacement
 * or rip, with or without SIB byte and REX prefix.
 */
static bool ends_call(const unsigned char *code, size_t len)
{
	const unsigned char *end = code + len;
	if (len >= 5 && end[-5] == 0xe8)
		return true;
	for (size_t n = 2; n <= 7 && n <= len; n++) {
		if (end[-(long)n] != 0xff)
			continue;
		unsigned char modrm = end[-(long)n + 1];
		if ((modrm & 0x38) != 0x10)
			continue;
		unsigned int mod = modrm >> 6, rm = modrm & 7;
		size_t want = 2;
		if (mod == 3)
			want = 2;
		else if (mod == 0 && rm == 5)
			want = 6;                      /* [rip + disp32] */
		else
			want = 2 + (rm == 4) + (mod == 1 ? 1 : mod == 2 ? 4 : 0);
		if (mod == 0 && rm == 4 && (end[-(long)n + 2] & 7) == 5)
			want += 4;                     /* SIB without base: disp32 */
		if (want == n)
			return true;
	}
	return false;
}

bool cs_symbolizer_is_return_address(struct cs_symbolizer *sym, pid_t pid, uint64_t addr)
{
#if defined(__x86_64__)
	struct process *p = NULL;
	for (struct process *q = sym->processes; q; q = q->next)
		if (q->pid == pid) {
			p = q;
			break;
		}
	if (!p || p->mem_fd < 0 || addr < 8)
		return false;
	const struct mapping *m = find_mapping(p, addr - 1);
	if (!m || addr - 8 < m->start)
		return false;
	uint8_t *known = cs_u64map_get(&p->call_sites, addr);
	if (known)
		return *known == 1;
	unsigned char code[8];
	bool yes = pread(p->mem_fd, code, sizeof(code), (off_t)(addr - sizeof(code))) == (ssize_t)sizeof(code) &&
		   ends_call(code, sizeof(code));
	known = cs_u64map_put(&p->call_sites, addr, NULL);
	if (known)
		*known = yes ? 1 : 2;
	return yes;
#else
	(void)sym;
	(void)pid;
	(void)addr;
	return false;
#endif
}


bool cs_symbolizer_leaf_has_frame(struct cs_symbolizer *sym, pid_t pid, uint64_t addr)
{
#if defined(__x86_64__)
	const struct process *p = find_process(sym, pid);
	const struct mapping *m = p ? find_mapping(p, addr) : NULL;
	if (!m || !m->elf || p->mem_fd < 0)
		return false;
	uint64_t vaddr = file_offset_to_vaddr(m->elf, addr - m->start + m->offset);
	const struct symbol *s = find_symbol(m->elf, vaddr);
	if (!s)
		return false;
	uint64_t start = addr - (vaddr - s->addr);
	unsigned char code[8];
	if (pread(p->mem_fd, code, sizeof(code), (off_t)start) != (ssize_t)sizeof(code))
		return false;
	/* endbr64, then push %rbp; mov %rsp,%rbp */
	size_t at = memcmp(code, "\xf3\x0f\x1e\xfa", 4) == 0 ? 4 : 0;
	if (memcmp(code + at, "\x55\x48\x89\xe5", 4) != 0)
		return false;
	return addr >= start + at + 4;
#else
	(void)sym;
	(void)pid;
	(void)addr;
	return true;
#endif
}
