// SPDX-License-Identifier: BSD-2-Clause
#include "config.h"
#include "errmsg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "metrics.h"
#include "number.h"
#include "probes.h"

void cs_config_init(struct cs_daemon_config *config)
{
	memset(config, 0, sizeof(*config));
	config->sample_hz = CS_SAMPLE_HZ_DEFAULT;
	config->ring_mb = CS_RING_MB_DEFAULT;
	config->bpf_stats = true;
	config->pauses = true;
	config->clients = true;
	config->trace = cs_trace_schedule_default();
}

/* The numbers a config file takes (number.h's rule); the caller puts the key before "expects". */
static const struct cs_number number_port = { NULL, 1, 65535, CS_NUMBER_INTEGER, "a TCP port (1-65535)" };
static const struct cs_number number_pid = { NULL, 1, CS_PID_MAX_LIMIT, CS_NUMBER_INTEGER,
					     "a process id (1-" CS_STR(CS_PID_MAX_LIMIT) ")" };
static const struct cs_number number_sample_hz = { NULL, 1, 1000, CS_NUMBER_INTEGER, "1-1000" };
static const struct cs_number number_ring_mb = { NULL, 1, 1024, CS_NUMBER_POW2,
						 "a power of two from 1 to 1024" };

static int set_once(const struct cs_daemon_config *config, bool *has, const char *key, char *errmsg,
		    size_t errlen)
{
	if (*has && !config->last_wins)
		return cs_fail_code(-EINVAL, errmsg, errlen, "is set twice (%s takes one value)", key);
	*has = true;
	return 0;
}

/* A yes/no setting, set at most once. */
static int yes_or_no(struct cs_daemon_config *config, const char *key, const char *value, bool *setting,
		     bool *has, char *errmsg, size_t errlen)
{
	bool yes = !strcmp(value, "yes"), no = !strcmp(value, "no");
	if (!yes && !no)
		return cs_fail_code(-EINVAL, errmsg, errlen, "expects yes or no, not '%s'", value);
	if (set_once(config, has, key, errmsg, errlen))
		return -EINVAL;
	*setting = yes;
	return 0;
}

/* bpf-stats = yes (in sampled spans) | always | no */
static int set_bpf_stats(struct cs_daemon_config *config, const char *value, char *errmsg, size_t errlen)
{
	bool always = !strcmp(value, "always");
	if (!always && strcmp(value, "yes") != 0 && strcmp(value, "no") != 0)
		return cs_fail_code(-EINVAL, errmsg, errlen, "expects yes, always or no, not '%s'", value);
	if (set_once(config, &config->has_bpf_stats, "bpf-stats", errmsg, errlen))
		return -EINVAL;
	config->bpf_stats = always || !strcmp(value, "yes");
	config->bpf_stats_always = always;
	return 0;
}

/* between-windows = events | counters */
static int set_between(struct cs_daemon_config *config, const char *value, char *errmsg, size_t errlen)
{
	bool counters = !strcmp(value, "counters");
	if (!counters && strcmp(value, "events") != 0)
		return cs_fail_code(-EINVAL, errmsg, errlen, "expects events or counters, not '%s'", value);
	if (set_once(config, &config->has_between, "between-windows", errmsg, errlen))
		return -EINVAL;
	config->between_counters = counters;
	return 0;
}

/* trace = always | WINDOW/PERIOD (seconds) */
static int set_trace(struct cs_daemon_config *config, const char *value, char *errmsg, size_t errlen)
{
	struct cs_trace_schedule schedule;
	if (cs_trace_schedule_parse(value, &schedule, errmsg, errlen))
		return -EINVAL;
	if (set_once(config, &config->has_trace, "trace", errmsg, errlen))
		return -EINVAL;
	config->trace = schedule;
	return 0;
}

int cs_config_set(struct cs_daemon_config *config, const char *key, const char *value,
		  char *errmsg, size_t errlen)
{
	long long number;
	if (!strcmp(key, "port")) {
		if (cs_number_read_integer(&number_port, value, &number, errmsg, errlen))
			return -EINVAL;
		for (size_t i = 0; i < config->port_count; i++)
			if (config->ports[i] == number)
				return 0;
		if (config->port_count >= CS_CONFIG_MAX_TARGETS)
			return cs_fail_code(-EINVAL, errmsg, errlen, "takes at most %d ports", CS_CONFIG_MAX_TARGETS);
		config->ports[config->port_count++] = (uint16_t)number;
		return 0;
	}
	if (!strcmp(key, "pid")) {
		if (cs_number_read_integer(&number_pid, value, &number, errmsg, errlen))
			return -EINVAL;
		for (size_t i = 0; i < config->pid_count; i++)
			if (config->pids[i] == number)
				return 0;
		if (config->pid_count >= CS_CONFIG_MAX_TARGETS)
			return cs_fail_code(-EINVAL, errmsg, errlen, "takes at most %d pids", CS_CONFIG_MAX_TARGETS);
		config->pids[config->pid_count++] = (pid_t)number;
		return 0;
	}
	if (!strcmp(key, "netns")) {
		if (!*value || strlen(value) >= sizeof(config->netns))
			return cs_fail_code(-EINVAL, errmsg, errlen, "expects a pid, a /proc/PID/ns/net or an 'ip netns' name, "
				       "not '%s'", value);
		strcpy(config->netns, value);
		return 0;
	}
	if (!strcmp(key, "name"))
		return cs_target_add_name(&config->match, value, errmsg, errlen) ? -EINVAL : 0;
	if (!strcmp(key, "cgroup"))
		return cs_target_add_cgroup(&config->match, value, errmsg, errlen) ? -EINVAL : 0;
	if (!strcmp(key, "metrics")) {
		struct sockaddr_storage addr;
		unsigned int addr_len;
		if (strlen(value) >= sizeof(config->metrics) || cs_parse_listen_address(value, &addr, &addr_len))
			return cs_fail_code(-EINVAL, errmsg, errlen, "expects ADDR:PORT, [ADDR6]:PORT or PORT, not '%s'",
				       value);
		if (set_once(config, &config->has_metrics, key, errmsg, errlen))
			return -EINVAL;
		strcpy(config->metrics, value);
		return 0;
	}
	if (!strcmp(key, "sample-hz")) {
		if (cs_number_read_integer(&number_sample_hz, value, &number, errmsg, errlen))
			return -EINVAL;
		if (set_once(config, &config->has_sample_hz, key, errmsg, errlen))
			return -EINVAL;
		config->sample_hz = (unsigned int)number;
		return 0;
	}
	if (!strcmp(key, "ring-mb")) {
		if (cs_number_read_integer(&number_ring_mb, value, &number, errmsg, errlen))
			return -EINVAL;
		if (set_once(config, &config->has_ring_mb, key, errmsg, errlen))
			return -EINVAL;
		config->ring_mb = (unsigned int)number;
		return 0;
	}
	if (!strcmp(key, "trace"))
		return set_trace(config, value, errmsg, errlen);
	if (!strcmp(key, "verbose"))
		return yes_or_no(config, key, value, &config->verbose, &config->has_verbose, errmsg, errlen);
	if (!strcmp(key, "bpf-stats"))
		return set_bpf_stats(config, value, errmsg, errlen);
	if (!strcmp(key, "pauses"))
		return yes_or_no(config, key, value, &config->pauses, &config->has_pauses, errmsg, errlen);
	if (!strcmp(key, "clients"))
		return yes_or_no(config, key, value, &config->clients, &config->has_clients, errmsg, errlen);
	if (!strcmp(key, "between-windows"))
		return set_between(config, value, errmsg, errlen);
	return -ENOENT;
}

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* Trim blanks at both ends, in place. */
static char *trim(char *start, char *end)
{
	while (start < end && blank(*start))
		start++;
	while (end > start && blank(end[-1]))
		end--;
	*end = '\0';
	return start;
}

int cs_config_parse(const char *text, size_t len, const char *filename, struct cs_daemon_config *config,
		    char *errmsg, size_t errlen)
{
	char line[CS_CONFIG_LINE_MAX + 1];
	unsigned int number = 0;
	for (size_t pos = 0; pos < len;) {
		number++;
		const char *newline = memchr(text + pos, '\n', len - pos);
		size_t line_len = (newline ? (size_t)(newline - text) : len) - pos;
		if (memchr(text + pos, '\0', line_len))
			return cs_fail(errmsg, errlen, "%s:%u: a NUL byte (expected text: 'key = value' lines)",
				       filename, number);
		if (line_len > CS_CONFIG_LINE_MAX)
			return cs_fail(errmsg, errlen, "%s:%u: line longer than %d bytes", filename, number,
				       CS_CONFIG_LINE_MAX);
		memcpy(line, text + pos, line_len);
		pos += line_len + 1;
		char *content = trim(line, line + line_len);
		if (!*content || *content == '#')
			continue;
		char *equals = strchr(content, '=');
		if (!equals)
			return cs_fail(errmsg, errlen, "%s:%u: expected 'key = value' or a '#' comment, not '%s'",
				       filename, number, content);
		char *key = trim(content, equals);
		char *value = trim(equals + 1, equals + 1 + strlen(equals + 1));
		char why[512];
		int err = cs_config_set(config, key, value, why, sizeof(why));
		if (err == -ENOENT)
			return cs_fail(errmsg, errlen, "%s:%u: unknown key '%s' (expected one of: " CS_CONFIG_KEYS ")",
				       filename, number, key);
		if (err)
			return cs_fail(errmsg, errlen, "%s:%u: %s %s", filename, number, key, why);
	}
	return 0;
}

bool cs_config_has_targets(const struct cs_daemon_config *config)
{
	return config->port_count || config->pid_count || cs_target_match_any(&config->match);
}

void cs_config_merge(struct cs_daemon_config *base, const struct cs_daemon_config *over)
{
	if (cs_config_has_targets(over)) {
		memcpy(base->ports, over->ports, sizeof(base->ports));
		base->port_count = over->port_count;
		memcpy(base->pids, over->pids, sizeof(base->pids));
		base->pid_count = over->pid_count;
		base->match = over->match;
		memcpy(base->netns, over->netns, sizeof(base->netns));
	} else if (over->netns[0]) {
		/* A namespace alone: the base's ports, looked for there. */
		memcpy(base->netns, over->netns, sizeof(base->netns));
	}
	if (over->has_metrics) {
		memcpy(base->metrics, over->metrics, sizeof(base->metrics));
		base->has_metrics = true;
	}
	if (over->has_sample_hz) {
		base->sample_hz = over->sample_hz;
		base->has_sample_hz = true;
	}
	if (over->has_ring_mb) {
		base->ring_mb = over->ring_mb;
		base->has_ring_mb = true;
	}
	if (over->has_trace) {
		base->trace = over->trace;
		base->has_trace = true;
	}
	if (over->has_verbose) {
		base->verbose = over->verbose;
		base->has_verbose = true;
	}
	if (over->has_bpf_stats) {
		base->bpf_stats = over->bpf_stats;
		base->bpf_stats_always = over->bpf_stats_always;
		base->has_bpf_stats = true;
	}
	if (over->has_clients) {
		base->clients = over->clients;
		base->has_clients = true;
	}
	if (over->has_between) {
		base->between_counters = over->between_counters;
		base->has_between = true;
	}
	if (over->has_pauses) {
		base->pauses = over->pauses;
		base->has_pauses = true;
	}
}

const char *cs_config_untrusted(uid_t owner, mode_t mode, bool is_dir, uid_t euid)
{
	if (owner != 0 && owner != euid)
		return "it is owned by another user than root";
	if (is_dir && (mode & S_ISVTX))
		return NULL;
	if (mode & S_IWOTH)
		return "others may write it";
	if (mode & S_IWGRP)
		return "its group may write it";
	return NULL;
}
