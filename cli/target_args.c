// SPDX-License-Identifier: BSD-2-Clause
#include "target_args.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "args.h"

void cs_session_defaults(struct cs_session_options *opts, const volatile sig_atomic_t *stop)
{
	memset(opts, 0, sizeof(*opts));
	opts->sample_hz = 10;
	opts->probe.ring_bytes = 8u << 20;
	opts->probe.wakeup_bytes = 256u << 10;
	opts->probe.trace_handshakes = true;
	opts->stop = stop;
}

enum cs_target_arg cs_target_arg(int c, const char *arg, struct cs_session_options *opts, char *why,
				 size_t why_len)
{
	long value;

	switch (c) {
	case 'p':
		if (!parse_long(arg, 1, PID_MAX_LIMIT, &value)) {
			snprintf(why, why_len, "--pid expects a process id (1-%d), not '%s'", PID_MAX_LIMIT, arg);
			return CS_TARGET_ARG_BAD;
		}
		if (opts->pid_count >= CS_MAX_TARGETS) {
			snprintf(why, why_len, "at most %d --pid options", CS_MAX_TARGETS);
			return CS_TARGET_ARG_BAD;
		}
		opts->pids[opts->pid_count++] = (pid_t)value;
		return CS_TARGET_ARG_TAKEN;
	case 'P':
		if (!parse_long(arg, 1, 65535, &value)) {
			snprintf(why, why_len, "--port expects a TCP port (1-65535), not '%s'", arg);
			return CS_TARGET_ARG_BAD;
		}
		if (opts->port_count >= CS_MAX_TARGETS) {
			snprintf(why, why_len, "at most %d --port options", CS_MAX_TARGETS);
			return CS_TARGET_ARG_BAD;
		}
		opts->ports[opts->port_count++] = (uint16_t)value;
		return CS_TARGET_ARG_TAKEN;
	case 'n':
	case 'c': {
		char reason[256];
		int err = c == 'n' ? cs_target_add_name(&opts->match, arg, reason, sizeof(reason))
				   : cs_target_add_cgroup(&opts->match, arg, reason, sizeof(reason));
		if (!err)
			return CS_TARGET_ARG_TAKEN;
		snprintf(why, why_len, "--%s %s", c == 'n' ? "name" : "cgroup", reason);
		return CS_TARGET_ARG_BAD;
	}
	case 'N':
		if (!*arg || strlen(arg) >= sizeof(opts->netns)) {
			snprintf(why, why_len, "--netns expects a pid, a /proc/PID/ns/net or an 'ip netns' name, "
				 "not '%s'", arg);
			return CS_TARGET_ARG_BAD;
		}
		strcpy(opts->netns, arg);
		return CS_TARGET_ARG_TAKEN;
	case 'd':
		if (!parse_double(arg, 0.1, 31536000.0, &opts->duration_s)) {
			snprintf(why, why_len, "--duration expects seconds (0.1-31536000), not '%s'", arg);
			return CS_TARGET_ARG_BAD;
		}
		return CS_TARGET_ARG_TAKEN;
	default:
		return CS_TARGET_ARG_NOT_MINE;
	}
}
