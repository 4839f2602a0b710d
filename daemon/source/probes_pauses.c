// SPDX-License-Identifier: BSD-2-Clause
/*
 * A JVM target's pauses (bpf/pauses.bpf.c): HotSpot's USDT probes on the
 * libjvm.so the target has mapped, or uprobes on its safepoint functions
 * where a JDK was built without the probes. The object is loaded with the
 * first JVM and shares the main probes' ring buffer and counters.
 */
#include "probes_pauses.h"
#include "errmsg.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connscope.skel.h"
#include "pauses.skel.h"

/* Processes whose pauses are followed at once; more are said and left out. */
#define PAUSE_PIDS_MAX 64
/* usdt: safepoint begin/end, VM operation begin/end, GC begin/end. */
#define PAUSE_LINKS_PER_PID 6

struct cs_pause_probes {
	struct pauses_bpf *skel;
	struct {
		pid_t pid;
		struct bpf_link *links[PAUSE_LINKS_PER_PID];
	} watched[PAUSE_PIDS_MAX];
	size_t count;
};

/*
 * The libjvm.so pid has mapped, as a path that reaches it from here
 * (through the process's root: it may run in a container). false: none.
 */
static bool find_libjvm(pid_t pid, char *path, size_t len)
{
	char maps[64], line[4096];
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(maps, "re");
	if (!f)
		return false;
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		const char *file = strchr(line, '/');
		const char *base = file ? strrchr(file, '/') + 1 : NULL;
		if (base && !strcmp(base, "libjvm.so")) {
			snprintf(path, len, "/proc/%d/root%s", (int)pid, file);
			found = true;
		}
	}
	fclose(f);
	return found;
}

static int load(struct cs_pause_probes *pauses, struct cs_probes *probes, char *why, size_t why_len)
{
	pauses->skel = pauses_bpf__open();
	if (!pauses->skel)
		return cs_fail(why, why_len, "cannot open the pause probes: %s", strerror(errno));
	int err = bpf_map__reuse_fd(pauses->skel->maps.events, bpf_map__fd(probes->skel->maps.events));
	if (!err)
		err = bpf_map__reuse_fd(pauses->skel->maps.counters, bpf_map__fd(probes->skel->maps.counters));
	if (!err)
		err = pauses_bpf__load(pauses->skel);
	if (err) {
		pauses_bpf__destroy(pauses->skel);
		pauses->skel = NULL;
		return cs_fail(why, why_len, "cannot load the pause probes: %s", strerror(-err));
	}
	return 0;
}

/* HotSpot's USDT probes: all six, or none (the links made are destroyed). */
static bool attach_usdt(struct cs_pause_probes *pauses, pid_t pid, const char *lib, struct bpf_link **links)
{
	const struct {
		struct bpf_program *prog;
		const char *provider, *name;
	} probes[PAUSE_LINKS_PER_PID] = {
		{ pauses->skel->progs.safepoint_begin, "hs_private", "safepoint__begin" },
		{ pauses->skel->progs.safepoint_end, "hs_private", "safepoint__end" },
		{ pauses->skel->progs.vmop_begin, "hotspot", "vmops__begin" },
		{ pauses->skel->progs.vmop_end, "hotspot", "vmops__end" },
		{ pauses->skel->progs.gc_begin, "hotspot", "gc__begin" },
		{ pauses->skel->progs.gc_end, "hotspot", "gc__end" },
	};
	for (size_t i = 0; i < PAUSE_LINKS_PER_PID; i++) {
		links[i] = bpf_program__attach_usdt(probes[i].prog, pid, lib, probes[i].provider, probes[i].name, NULL);
		/* The safepoint pair is the pause; the rest only name it. */
		if (!links[i] && i < 2) {
			for (size_t j = 0; j < i; j++) {
				bpf_link__destroy(links[j]);
				links[j] = NULL;
			}
			return false;
		}
	}
	return true;
}

/* The fallback: SafepointSynchronize::begin() and ::end(), by symbol. */
static bool attach_uprobes(struct cs_pause_probes *pauses, pid_t pid, const char *lib, struct bpf_link **links)
{
	struct bpf_uprobe_opts begin = { .sz = sizeof(begin), .func_name = "_ZN20SafepointSynchronize5beginEv" };
	struct bpf_uprobe_opts end = { .sz = sizeof(end), .func_name = "_ZN20SafepointSynchronize3endEv" };
	links[0] = bpf_program__attach_uprobe_opts(pauses->skel->progs.safepoint_begin_uprobe, pid, lib, 0, &begin);
	links[1] = links[0] ? bpf_program__attach_uprobe_opts(pauses->skel->progs.safepoint_end_uprobe, pid, lib, 0, &end)
			    : NULL;
	if (links[1])
		return true;
	bpf_link__destroy(links[0]);
	links[0] = NULL;
	return false;
}

static bool watched(const struct cs_pause_probes *pauses, pid_t pid)
{
	for (size_t i = 0; i < pauses->count; i++)
		if (pauses->watched[i].pid == pid)
			return true;
	return false;
}

enum cs_pause_watch cs_probes_watch_pauses(struct cs_probes *probes, pid_t pid, char *why, size_t why_len)
{
	char lib[4096];
	why[0] = '\0';
	if (probes->no_pauses)
		return CS_PAUSES_OFF;
	if (!probes->skel || !find_libjvm(pid, lib, sizeof(lib)))
		return CS_PAUSES_NOT_JAVA;
	if (!probes->pauses && !(probes->pauses = calloc(1, sizeof(*probes->pauses)))) {
		cs_fail(why, why_len, "out of memory");
		return CS_PAUSES_NONE;
	}
	struct cs_pause_probes *pauses = probes->pauses;
	if (watched(pauses, pid))
		return CS_PAUSES_ALREADY;
	if (pauses->count == PAUSE_PIDS_MAX) {
		cs_fail(why, why_len, "already following the pauses of %d JVMs", PAUSE_PIDS_MAX);
		return CS_PAUSES_NONE;
	}
	if (!pauses->skel && load(pauses, probes, why, why_len))
		return CS_PAUSES_NONE;
	struct bpf_link **links = pauses->watched[pauses->count].links;
	enum cs_pause_watch found = CS_PAUSES_NONE;
	if (attach_usdt(pauses, pid, lib, links))
		found = CS_PAUSES_USDT;
	else if (attach_uprobes(pauses, pid, lib, links))
		found = CS_PAUSES_UPROBES;
	if (found == CS_PAUSES_NONE) {
		cs_fail(why, why_len, "%s has neither HotSpot's USDT probes nor the symbols SafepointSynchronize::begin/end",
			lib);
		return found;
	}
	pauses->watched[pauses->count++].pid = pid;
	return found;
}

struct bpf_object *cs_probes_pauses_object(const struct cs_probes *probes)
{
	return probes->pauses && probes->pauses->skel ? probes->pauses->skel->obj : NULL;
}

void cs_probes_pauses_detach(struct cs_probes *probes)
{
	struct cs_pause_probes *pauses = probes->pauses;
	if (!pauses)
		return;
	for (size_t i = 0; i < pauses->count; i++)
		for (size_t j = 0; j < PAUSE_LINKS_PER_PID; j++) {
			bpf_link__destroy(pauses->watched[i].links[j]);
			pauses->watched[i].links[j] = NULL;
		}
}

void cs_probes_pauses_free(struct cs_probes *probes)
{
	if (!probes->pauses)
		return;
	cs_probes_pauses_detach(probes);
	pauses_bpf__destroy(probes->pauses->skel);
	free(probes->pauses);
	probes->pauses = NULL;
}
