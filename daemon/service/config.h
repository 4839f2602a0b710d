/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * connscoped's settings, from its configuration file and its command line
 * (the same keys: a command-line option is `--KEY VALUE`). Pure: text in,
 * struct out, every error one line naming the file, the line and what was
 * expected. Reading the file (and refusing one that others may write) is
 * config_file.c's job.
 *
 * The file, line by line:
 *   # a comment (a line whose first non-blank character is '#')
 *   port = 8080                        # not here: comments take whole lines
 *   name = nginx
 *   cgroup = /system.slice/nginx.service
 *   pid = 1234
 *   metrics = 127.0.0.1:9464
 *   sample-hz = 10
 *   ring-mb = 8
 *   trace = 1/10                       # or always
 *   verbose = yes
 *   bpf-stats = no                     # do not turn the kernel's BPF run-time counting on
 *   pauses = no                        # do not follow JVM targets' safepoint pauses
 *   clients = no                       # do not follow local clients' reads of their answers
 *   between-windows = counters         # no probe per connection between trace windows
 * port, pid, name and cgroup may repeat; the others are set at most once.
 */
#ifndef CS_CONFIG_H
#define CS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "targets.h"
#include "trace_windows.h"

#define CS_CONFIG_MAX_TARGETS 64          /* ports, pids: as CS_MAX_TARGETS */
#define CS_CONFIG_LINE_MAX 1024
#define CS_CONFIG_KEYS "port, pid, name, cgroup, netns, metrics, sample-hz, ring-mb, trace, verbose, bpf-stats, pauses, clients, between-windows"

struct cs_daemon_config {
	uint16_t ports[CS_CONFIG_MAX_TARGETS];
	size_t port_count;
	pid_t pids[CS_CONFIG_MAX_TARGETS];
	size_t pid_count;
	struct cs_target_match match;      /* name, cgroup */
	char netns[256];                   /* where the ports' listeners are; "" = ours */
	char metrics[256];                 /* ADDR:PORT; "" = off */
	unsigned int sample_hz;
	unsigned int ring_mb;
	struct cs_trace_schedule trace;    /* when the per-request probes are attached */
	bool verbose;
	bool bpf_stats;                    /* turn the kernel's BPF run-time counting on (default) */
	bool bpf_stats_always;             /* ... the whole run, not in sampled spans (the default) */
	bool pauses;                       /* attach the JVM pause probes to JVM targets (default) */
	bool clients;                      /* follow local clients' reads of their answers (default) */
	bool between_counters;             /* between windows, the kernel's counters, not events */
	/* Set here (not defaults): a layer overrides only what it sets. */
	bool has_metrics, has_sample_hz, has_ring_mb, has_trace, has_verbose, has_bpf_stats, has_pauses;
	bool has_clients, has_between;
	bool last_wins;                    /* a setting given again replaces (command lines) */
};

/*
 * Defaults: no target, metrics off, 10 Hz, 8 MiB, traced 1 s in every 10 s,
 * not verbose, BPF run-time counting on, JVM pauses followed.
 */
void cs_config_init(struct cs_daemon_config *config);

/*
 * Set one key. Returns 0; -ENOENT for an unknown key (errmsg untouched);
 * -EINVAL with "expects ..., not 'VALUE'" (or "set twice", "at most N
 * ...") in errmsg, for the caller to prefix with the key or option.
 */
int cs_config_set(struct cs_daemon_config *config, const char *key, const char *value,
		  char *errmsg, size_t errlen);

/*
 * Parse a whole file's text (len bytes; NUL bytes are errors) into config
 * (initialized by the caller). Returns 0, or -1 with
 * "FILE:LINE: what is wrong (what was expected)" in errmsg.
 */
int cs_config_parse(const char *text, size_t len, const char *filename, struct cs_daemon_config *config,
		    char *errmsg, size_t errlen);

/*
 * The command line over the file: over's targets, when it names any,
 * replace base's; each setting over sets replaces base's.
 */
void cs_config_merge(struct cs_daemon_config *base, const struct cs_daemon_config *over);

/* Does the config name any target? */
bool cs_config_has_targets(const struct cs_daemon_config *config);

/*
 * May a file (is_dir: a directory on its path) with this owner and mode be
 * trusted by a daemon running as euid? Owned by root or euid, and writable
 * by nobody else (a sticky directory, like /tmp, is fine: others cannot
 * replace what root owns in it). NULL if so, else why not.
 */
const char *cs_config_untrusted(uid_t owner, mode_t mode, bool is_dir, uid_t euid);

#endif /* CS_CONFIG_H */
