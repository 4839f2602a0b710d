// SPDX-License-Identifier: BSD-2-Clause
/*
 * floor: attach the empty programs of bench/bpf/floor.bpf.c (one per
 * connscope hook) and hold them until SIGINT/SIGTERM or --duration. The
 * overhead benchmark runs the same load with this attached to measure the
 * cost of being attached at all.
 *
 *   floor [--object FILE] [--duration SEC] [--only PREFIX[,PREFIX...]]
 *
 * The object is floor.bpf.o beside this executable unless --object names
 * it (opened at run time: no skeleton, so any hook list loads).
 *
 * --only attaches just the hooks whose section starts with one of the
 * prefixes (e.g. "tracepoint/syscalls/", "tp_btf/sched_"): the cost of
 * each group of hooks, measured apart.
 *
 * Prints "floor: attached N programs" on stdout once everything is in
 * place. Exit 0 on a signal or the end of the duration, 1 on failure.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


#define MAX_PROGRAMS 64

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static int quiet_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_DEBUG ? 0 : vfprintf(stderr, fmt, ap);
}

/* Does section start with one of the comma-separated prefixes? */
static bool matches(const char *section, const char *prefixes)
{
	for (const char *p = prefixes; *p;) {
		size_t len = strcspn(p, ",");
		if (len && !strncmp(section, p, len))
			return true;
		p += len + (p[len] == ',');
	}
	return false;
}

struct floor_args {
	double duration_s;
	const char *only;
	const char *object;
	char default_object[PATH_MAX];
};

/* 0, or 2 after the usage line. */
static int parse_args(int argc, char **argv, struct floor_args *args)
{
	for (int i = 1; i < argc; i += 2) {
		if (i + 1 < argc && !strcmp(argv[i], "--duration")) {
			args->duration_s = strtod(argv[i + 1], NULL);
		} else if (i + 1 < argc && !strcmp(argv[i], "--only")) {
			args->only = argv[i + 1];
		} else if (i + 1 < argc && !strcmp(argv[i], "--object")) {
			args->object = argv[i + 1];
		} else {
			fprintf(stderr, "usage: floor [--object FILE] [--duration SEC] "
					"[--only PREFIX[,PREFIX...]]\n");
			return 2;
		}
	}
	return 0;
}

/* Without --object: floor.bpf.o beside /proc/self/exe. 0 or -1. */
static int find_default_object(struct floor_args *args)
{
	char *path = args->default_object;
	ssize_t len = readlink("/proc/self/exe", path, sizeof(args->default_object) - 1);

	if (len <= 0) {
		fprintf(stderr, "floor: cannot find my own path: name the object with --object\n");
		return -1;
	}
	path[len] = '\0';
	char *slash = strrchr(path, '/');
	size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
	if (dir + sizeof("floor.bpf.o") > sizeof(args->default_object))
		return -1;
	memcpy(path + dir, "floor.bpf.o", sizeof("floor.bpf.o"));
	args->object = path;
	return 0;
}

/* Only the hooks --only names; none this kernel lacks (tp_btf), as
 * connscope does. */
static void choose_programs(struct bpf_object *obj, const char *only)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj) {
		const char *section = bpf_program__section_name(prog);
		if (only && !matches(section, only)) {
			bpf_program__set_autoload(prog, false);
			continue;
		}
		if (!strncmp(section, "tp_btf/", 7) &&
		    libbpf_find_vmlinux_btf_id(section + 7, BPF_TRACE_RAW_TP) < 0) {
			fprintf(stderr, "floor: this kernel has no %s: left out\n", section);
			bpf_program__set_autoload(prog, false);
		}
	}
}

/* Attaches every loaded program, naming the hook on failure. Returns how
 * many are attached (their links in links[]), or -1 with those attached
 * still in links[] and *attached. */
static int attach_all(struct bpf_object *obj, struct bpf_link **links, int *attached)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj) {
		if (!bpf_program__autoload(prog))
			continue;
		if (*attached == MAX_PROGRAMS) {
			fprintf(stderr, "floor: more than %d programs\n", MAX_PROGRAMS);
			return -1;
		}
		struct bpf_link *link = bpf_program__attach(prog);
		if (!link) {
			fprintf(stderr, "floor: cannot attach %s: %s\n", bpf_program__section_name(prog),
				strerror(errno));
			return -1;
		}
		links[(*attached)++] = link;
	}
	return *attached;
}

/* Until a signal, or for duration_s if not 0. */
static void hold(double duration_s)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!stop_requested) {
		usleep(50 * 1000);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (duration_s > 0 &&
		    (double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9 >= duration_s)
			break;
	}
}

int main(int argc, char **argv)
{
	struct floor_args args = { 0 };
	struct bpf_object *obj = NULL;
	struct bpf_link *links[MAX_PROGRAMS];
	int attached = 0, rc = 1;

	if (parse_args(argc, argv, &args) != 0)
		return 2;
	if (!args.object && find_default_object(&args) != 0)
		return 1;
	libbpf_set_print(quiet_log);
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	/* 1. open, 2. load, 3. attach each */
	obj = bpf_object__open_file(args.object, NULL);
	if (!obj) {
		fprintf(stderr, "floor: cannot open %s: %s\n", args.object, strerror(errno));
		return 1;
	}
	choose_programs(obj, args.only);
	if (bpf_object__load(obj)) {
		fprintf(stderr, "floor: the kernel refused the programs: %s\n", strerror(errno));
		goto out;
	}
	if (attach_all(obj, links, &attached) < 0)
		goto out;
	printf("floor: attached %d programs\n", attached);
	fflush(stdout);

	/* 4. hold until told to stop */
	hold(args.duration_s);
	rc = 0;
out:
	while (attached > 0)
		bpf_link__destroy(links[--attached]);
	bpf_object__close(obj);
	return rc;
}
