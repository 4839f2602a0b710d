// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: connscoped's config file parser (daemon/service/config.c), given the
 * input as a file's whole text, in a buffer of exactly its length (ASan
 * reports any read past it; the parser must not need a NUL).
 *
 * Checked beyond "no crash, no sanitizer report":
 *   - the answer is 0 or -1; an error is one line that starts with
 *     "fuzz.conf:LINE: " where LINE is a line the input has;
 *   - what a successful parse stored is valid by the parser's own rules:
 *     counts within bounds, ports and pids non-zero, names accepted again,
 *     cgroup paths already normal (normalizing them changes nothing);
 *   - merging the result over a fresh config keeps it whole.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_config: %s\n", what);
		abort();
	}
}

static void check_error(const char *errmsg, const uint8_t *data, size_t size)
{
	check(!strncmp(errmsg, "fuzz.conf:", 10), "error without the file name");
	char *end;
	unsigned long line = strtoul(errmsg + 10, &end, 10);
	check(end != errmsg + 10 && !strncmp(end, ": ", 2), "error without a line number");
	size_t lines = 1;
	for (size_t i = 0; i + 1 < size; i++)
		lines += data[i] == '\n';
	check(line >= 1 && line <= lines, "error names a line the input does not have");
	check(!strchr(errmsg, '\n'), "error spans lines");
}

static void check_config(const struct cs_daemon_config *config)
{
	check(config->port_count <= CS_CONFIG_MAX_TARGETS && config->pid_count <= CS_CONFIG_MAX_TARGETS,
	      "too many ports or pids");
	for (size_t i = 0; i < config->port_count; i++)
		check(config->ports[i] != 0, "port 0 stored");
	for (size_t i = 0; i < config->pid_count; i++)
		check(config->pids[i] > 0, "pid <= 0 stored");
	check(config->match.name_count <= CS_MAX_MATCH_TARGETS && config->match.cgroup_count <= CS_MAX_MATCH_TARGETS,
	      "too many names or cgroups");
	struct cs_target_match again = {};
	char why[512];
	for (size_t i = 0; i < config->match.name_count; i++) {
		check(memchr(config->match.names[i], '\0', CS_TARGET_NAME_LEN) != NULL, "name not terminated");
		check(cs_target_add_name(&again, config->match.names[i], why, sizeof(why)) == 0, "stored name invalid");
	}
	for (size_t i = 0; i < config->match.cgroup_count; i++) {
		char normal[CS_CGROUP_PATH_LEN];
		check(cs_cgroup_normalize(config->match.cgroups[i], normal, sizeof(normal)) == 0 &&
			      !strcmp(normal, config->match.cgroups[i]),
		      "stored cgroup not normal");
	}
	check(config->sample_hz >= 1 && config->sample_hz <= 1000, "sample-hz out of range");
	check(config->ring_mb >= 1 && config->ring_mb <= 1024 && !(config->ring_mb & (config->ring_mb - 1)),
	      "ring-mb not a power of two");
	check(memchr(config->metrics, '\0', sizeof(config->metrics)) != NULL, "metrics not terminated");
	check(config->has_metrics == (config->metrics[0] != '\0'), "metrics set but empty");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size ? size : 1);
	check(text != NULL, "malloc");
	memcpy(text, data, size);
	static struct cs_daemon_config config, merged;
	char errmsg[512] = "";
	cs_config_init(&config);
	int ret = cs_config_parse(text, size, "fuzz.conf", &config, errmsg, sizeof(errmsg));
	check(ret == 0 || ret == -1, "result out of range");
	if (ret) {
		check_error(errmsg, data, size);
	} else {
		check_config(&config);
		cs_config_init(&merged);
		cs_config_merge(&merged, &config);
		check_config(&merged);
		check(merged.port_count == config.port_count && merged.sample_hz == config.sample_hz &&
			      cs_target_match_equal(&merged.match, &config.match),
		      "merge lost something");
	}
	free(text);
	return 0;
}
