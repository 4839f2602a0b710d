// SPDX-License-Identifier: BSD-2-Clause
/* connscoped's config file format (daemon/service/config.c): keys, errors with file:line, layering, trust. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"

static char errmsg[512];

static int parse(const char *text, struct cs_daemon_config *config)
{
	cs_config_init(config);
	errmsg[0] = '\0';
	return cs_config_parse(text, strlen(text), "test.conf", config, errmsg, sizeof(errmsg));
}

/* text fails to parse with a message that contains want. */
static void expect_error(const char *text, const char *want)
{
	struct cs_daemon_config config;
	cr_expect_eq(parse(text, &config), -1, "'%s' parsed", text);
	cr_expect(strstr(errmsg, want) != NULL, "'%s': got '%s', want '%s'", text, errmsg, want);
}

Test(config, every_key)
{
	struct cs_daemon_config config;
	const char *text =
		"# connscoped\n"
		"\n"
		"port = 8080\n"
		"port=8443\n"
		"  pid\t=  1234  \n"
		"name = nginx\n"
		"cgroup = /sys/fs/cgroup/system.slice/api.service/\n"
		"metrics = 127.0.0.1:9464\n"
		"sample-hz = 25\n"
		"ring-mb = 16\n"
		"verbose = yes\n"
		"   # an indented comment\n";
	cr_assert_eq(parse(text, &config), 0, "%s", errmsg);
	cr_expect_eq(config.port_count, 2);
	cr_expect_eq(config.ports[0], 8080);
	cr_expect_eq(config.ports[1], 8443);
	cr_expect_eq(config.pid_count, 1);
	cr_expect_eq(config.pids[0], 1234);
	cr_expect_eq(config.match.name_count, 1);
	cr_expect_str_eq(config.match.names[0], "nginx");
	cr_expect_eq(config.match.cgroup_count, 1);
	cr_expect_str_eq(config.match.cgroups[0], "/system.slice/api.service");
	cr_expect_str_eq(config.metrics, "127.0.0.1:9464");
	cr_expect(config.has_metrics && config.has_sample_hz && config.has_ring_mb && config.has_verbose);
	cr_expect_eq(config.sample_hz, 25);
	cr_expect_eq(config.ring_mb, 16);
	cr_expect(config.verbose);
	cr_expect(cs_config_has_targets(&config));
}

Test(config, defaults_and_empty_files)
{
	struct cs_daemon_config config;
	cr_assert_eq(parse("", &config), 0);
	cr_expect_eq(config.sample_hz, 10);
	cr_expect_eq(config.ring_mb, 8);
	cr_expect_str_eq(config.metrics, "");
	cr_expect(!config.verbose && !config.has_metrics && !config.has_sample_hz);
	cr_expect(!cs_config_has_targets(&config));
	cr_assert_eq(parse("\n\n# only comments\n\t\n", &config), 0);
	/* CRLF line ends and a last line without one. */
	cr_assert_eq(parse("port = 80\r\nname = a\r\nport = 81", &config), 0, "%s", errmsg);
	cr_expect_eq(config.port_count, 2);
	cr_expect_str_eq(config.match.names[0], "a");
}

Test(config, bpf_stats_are_sampled_unless_set_to_always_or_no)
{
	struct cs_daemon_config config, over;
	cr_assert_eq(parse("port = 80\n", &config), 0, "%s", errmsg);
	cr_expect(config.bpf_stats && !config.has_bpf_stats);
	cr_assert_eq(parse("port = 80\nbpf-stats = no\n", &config), 0, "%s", errmsg);
	cr_expect(!config.bpf_stats && config.has_bpf_stats);
	cr_assert_eq(parse("port = 80\n", &config), 0, "%s", errmsg);
	cr_expect(!config.bpf_stats_always, "sampled spans by default");
	cr_assert_eq(parse("port = 80\nbpf-stats = always\n", &config), 0, "%s", errmsg);
	cr_expect(config.bpf_stats && config.bpf_stats_always && config.has_bpf_stats);
	cr_assert_eq(parse("port = 80\nbpf-stats = yes\n", &config), 0, "%s", errmsg);
	cr_expect(config.bpf_stats && !config.bpf_stats_always);
	expect_error("bpf-stats = off\n", "test.conf:1: bpf-stats expects yes, always or no, not 'off'");
	expect_error("bpf-stats = no\nbpf-stats = no\n", "test.conf:2: bpf-stats is set twice");
	/* The command line's --bpf-stats yes overrides the file's no; a layer without it keeps the base's. */
	cs_config_init(&over);
	cr_assert_eq(cs_config_set(&over, "bpf-stats", "yes", errmsg, sizeof(errmsg)), 0);
	cs_config_merge(&config, &over);
	cr_expect(config.bpf_stats);
	/* ... and always overrides a file's yes, both ways. */
	cr_assert_eq(parse("port = 80\nbpf-stats = yes\n", &config), 0, "%s", errmsg);
	cs_config_init(&over);
	cr_assert_eq(cs_config_set(&over, "bpf-stats", "always", errmsg, sizeof(errmsg)), 0);
	cs_config_merge(&config, &over);
	cr_expect(config.bpf_stats && config.bpf_stats_always);
	cr_assert_eq(parse("port = 80\nbpf-stats = no\n", &config), 0, "%s", errmsg);
	cs_config_init(&over);
	cs_config_merge(&config, &over);
	cr_expect(!config.bpf_stats);
}

Test(config, jvm_pauses_are_followed_unless_set_to_no)
{
	struct cs_daemon_config config, over;
	cr_assert_eq(parse("port = 80\n", &config), 0, "%s", errmsg);
	cr_expect(config.pauses && !config.has_pauses);
	cr_assert_eq(parse("port = 80\npauses = no\n", &config), 0, "%s", errmsg);
	cr_expect(!config.pauses && config.has_pauses);
	expect_error("pauses = off\n", "test.conf:1: pauses expects yes or no, not 'off'");
	/* The command line's --no-pauses (pauses = no) overrides the file's yes; a layer without it keeps the base's. */
	cr_assert_eq(parse("port = 80\npauses = yes\n", &config), 0, "%s", errmsg);
	cs_config_init(&over);
	cs_config_merge(&config, &over);
	cr_expect(config.pauses);
	cr_assert_eq(cs_config_set(&over, "pauses", "no", errmsg, sizeof(errmsg)), 0);
	cs_config_merge(&config, &over);
	cr_expect(!config.pauses);
}

Test(config, local_clients_are_followed_unless_set_to_no)
{
	struct cs_daemon_config config, over;
	cr_assert_eq(parse("port = 80\n", &config), 0, "%s", errmsg);
	cr_expect(config.clients && !config.has_clients);
	expect_error("clients = off\n", "test.conf:1: clients expects yes or no, not 'off'");
	/* The command line's --no-clients (clients = no) overrides the file's yes. */
	cr_assert_eq(parse("port = 80\nclients = yes\n", &config), 0, "%s", errmsg);
	cs_config_init(&over);
	cs_config_merge(&config, &over);
	cr_expect(config.clients);
	cr_assert_eq(cs_config_set(&over, "clients", "no", errmsg, sizeof(errmsg)), 0);
	cs_config_merge(&config, &over);
	cr_expect(!config.clients);
}

Test(config, between_windows_counts_events_unless_set_to_counters)
{
	struct cs_daemon_config config, over;
	cr_assert_eq(parse("port = 80\n", &config), 0, "%s", errmsg);
	cr_expect(!config.between_counters && !config.has_between);
	cr_assert_eq(parse("port = 80\nbetween-windows = counters\n", &config), 0, "%s", errmsg);
	cr_expect(config.between_counters && config.has_between);
	expect_error("between-windows = kernel\n", "test.conf:1: between-windows expects events or counters, not 'kernel'");
	expect_error("between-windows = events\nbetween-windows = counters\n", "test.conf:2: between-windows");
	/* The command line's --between-windows events overrides the file's counters. */
	cs_config_init(&over);
	cs_config_merge(&config, &over);
	cr_expect(config.between_counters);
	cr_assert_eq(cs_config_set(&over, "between-windows", "events", errmsg, sizeof(errmsg)), 0);
	cs_config_merge(&config, &over);
	cr_expect(!config.between_counters);
}

Test(config, errors_name_the_file_the_line_and_what_was_expected)
{
	expect_error("port = 80\nprot = 81\n", "test.conf:2: unknown key 'prot' (expected one of: port, pid, name");
	expect_error("\n\nport 8080\n", "test.conf:3: expected 'key = value' or a '#' comment, not 'port 8080'");
	expect_error("port = 0\n", "test.conf:1: port expects a TCP port (1-65535), not '0'");
	expect_error("port = 80 # web\n", "test.conf:1: port expects a TCP port (1-65535), not '80 # web'");
	expect_error("port =\n", "test.conf:1: port expects a TCP port (1-65535), not ''");
	expect_error("pid = -3\n", "test.conf:1: pid expects a process id (1-4194304), not '-3'");
	expect_error("name = /usr/sbin/nginx\n", "test.conf:1: name expects a process name");
	expect_error("cgroup = /a/../b\n", "test.conf:1: cgroup expects a cgroup v2 path");
	expect_error("metrics = localhost:x\n", "test.conf:1: metrics expects ADDR:PORT, [ADDR6]:PORT or PORT, not 'localhost:x'");
	expect_error("sample-hz = 1001\n", "test.conf:1: sample-hz expects 1-1000, not '1001'");
	expect_error("ring-mb = 3\n", "test.conf:1: ring-mb expects a power of two from 1 to 1024, not '3'");
	expect_error("verbose = maybe\n", "test.conf:1: verbose expects yes or no, not 'maybe'");
	expect_error("sample-hz = 5\nsample-hz = 6\n", "test.conf:2: sample-hz is set twice");
	expect_error("= 5\n", "test.conf:1: unknown key ''");
	expect_error("config = /etc/x\n", "test.conf:1: unknown key 'config'");
}

Test(config, long_lines_and_nul_bytes_are_errors)
{
	char text[CS_CONFIG_LINE_MAX + 64];
	memset(text, 'x', sizeof(text));
	memcpy(text, "port = 80\nname = ", 17);
	text[sizeof(text) - 1] = '\0';
	expect_error(text, "test.conf:2: line longer than 1024 bytes");
	struct cs_daemon_config config;
	cs_config_init(&config);
	static const char with_nul[] = "port = 80\nname = a\0b\n";
	cr_expect_eq(cs_config_parse(with_nul, sizeof(with_nul) - 1, "f", &config, errmsg, sizeof(errmsg)), -1);
	cr_expect(strstr(errmsg, "f:2: a NUL byte"), "%s", errmsg);
	/* A line of exactly the limit is fine. */
	char exact[CS_CONFIG_LINE_MAX + 2];
	memset(exact, ' ', CS_CONFIG_LINE_MAX);
	memcpy(exact, "port = 80", 9);
	exact[CS_CONFIG_LINE_MAX] = '\n';
	exact[CS_CONFIG_LINE_MAX + 1] = '\0';
	cr_expect_eq(parse(exact, &config), 0, "%s", errmsg);
}

Test(config, repeated_targets_are_kept_once_and_bounded)
{
	struct cs_daemon_config config;
	cr_assert_eq(parse("port = 80\nport = 80\nname = a\nname = a\n", &config), 0);
	cr_expect_eq(config.port_count, 1);
	cr_expect_eq(config.match.name_count, 1);
	char text[65 * 16] = "";
	size_t used = 0;
	for (int i = 1; i <= 65; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used, "port = %d\n", i);
	expect_error(text, "test.conf:65: port takes at most 64 ports");
}

Test(config, the_command_line_overrides_the_file)
{
	struct cs_daemon_config file, cli;
	cr_assert_eq(parse("port = 80\nname = web\nsample-hz = 5\nmetrics = 9464\nring-mb = 4\n", &file), 0);
	cs_config_init(&cli);
	char why[256];
	cr_assert_eq(cs_config_set(&cli, "sample-hz", "50", why, sizeof(why)), 0);
	cs_config_merge(&file, &cli);
	/* Only what the command line set changes; targets stay the file's. */
	cr_expect_eq(file.sample_hz, 50);
	cr_expect_str_eq(file.metrics, "9464");
	cr_expect_eq(file.ring_mb, 4);
	cr_expect_eq(file.port_count, 1);
	cr_expect_eq(file.match.name_count, 1);
	/* Targets on the command line replace the file's, all of them. */
	cr_assert_eq(cs_config_set(&cli, "pid", "42", why, sizeof(why)), 0);
	cs_config_merge(&file, &cli);
	cr_expect_eq(file.port_count, 0);
	cr_expect_eq(file.match.name_count, 0);
	cr_expect_eq(file.pid_count, 1);
	cr_expect_eq(file.pids[0], 42);
}

Test(config, netns_goes_with_the_ports)
{
	struct cs_daemon_config file, cli;
	char why[256];
	cr_assert_eq(parse("port = 8080\nnetns = blue\n", &file), 0);
	cr_expect_str_eq(file.netns, "blue");
	cr_expect_eq(cs_config_set(&file, "netns", "", why, sizeof(why)), -EINVAL);
	/* Alone on the command line: the file's ports, in another namespace. */
	cs_config_init(&cli);
	cr_assert_eq(cs_config_set(&cli, "netns", "/proc/42/ns/net", why, sizeof(why)), 0);
	cs_config_merge(&file, &cli);
	cr_expect_eq(file.port_count, 1);
	cr_expect_str_eq(file.netns, "/proc/42/ns/net");
	/* Targets on the command line replace the file's namespace too. */
	cs_config_init(&cli);
	cr_assert_eq(cs_config_set(&cli, "port", "9090", why, sizeof(why)), 0);
	cs_config_merge(&file, &cli);
	cr_expect_eq(file.ports[0], 9090);
	cr_expect_str_eq(file.netns, "");
}

Test(config, command_lines_may_repeat_a_setting)
{
	struct cs_daemon_config config;
	cs_config_init(&config);
	config.last_wins = true;
	char why[256];
	cr_assert_eq(cs_config_set(&config, "sample-hz", "5", why, sizeof(why)), 0);
	cr_assert_eq(cs_config_set(&config, "sample-hz", "6", why, sizeof(why)), 0);
	cr_expect_eq(config.sample_hz, 6);
	cr_assert_eq(cs_config_set(&config, "verbose", "yes", why, sizeof(why)), 0);
	cr_assert_eq(cs_config_set(&config, "verbose", "yes", why, sizeof(why)), 0);
}

Test(config, set_reports_unknown_keys_apart)
{
	struct cs_daemon_config config;
	cs_config_init(&config);
	char why[256] = "untouched";
	cr_expect_eq(cs_config_set(&config, "bogus", "1", why, sizeof(why)), -ENOENT);
	cr_expect_str_eq(why, "untouched");
	cr_expect_eq(cs_config_set(&config, "port", "x", why, sizeof(why)), -EINVAL);
	cr_expect_str_eq(why, "expects a TCP port (1-65535), not 'x'");
}

Test(config, only_files_root_alone_may_write_are_trusted)
{
	cr_expect_null(cs_config_untrusted(0, S_IFREG | 0644, false, 0));
	cr_expect_null(cs_config_untrusted(0, S_IFREG | 0600, false, 0));
	cr_expect_str_eq(cs_config_untrusted(0, S_IFREG | 0666, false, 0), "others may write it");
	cr_expect_str_eq(cs_config_untrusted(0, S_IFREG | 0664, false, 0), "its group may write it");
	cr_expect_str_eq(cs_config_untrusted(1000, S_IFREG | 0644, false, 0), "it is owned by another user than root");
	/* A daemon running as its own user may own its file. */
	cr_expect_null(cs_config_untrusted(999, S_IFREG | 0640, false, 999));
	/* Directories: /tmp-like sticky ones are fine, a plain world-writable one is not. */
	cr_expect_null(cs_config_untrusted(0, S_IFDIR | 01777, true, 0));
	cr_expect_str_eq(cs_config_untrusted(0, S_IFDIR | 0777, true, 0), "others may write it");
	cr_expect_str_eq(cs_config_untrusted(0, S_IFREG | 01666, false, 0), "others may write it");
	cr_expect_str_eq(cs_config_untrusted(1000, S_IFDIR | 0755, true, 0), "it is owned by another user than root");
}

/* trace: windows by default, a schedule or always; a bad one names what it expects. */
Test(config, trace_schedule)
{
	struct cs_daemon_config config;
	cr_assert_eq(parse("port = 80\n", &config), 0, "%s", errmsg);
	cr_expect_eq(config.trace.window_ns, 1000000000ull, "default window 1 s");
	cr_expect_eq(config.trace.period_ns, 10000000000ull, "default period 10 s");
	cr_expect_not(cs_trace_schedule_is_always(&config.trace));
	cr_assert_eq(parse("port = 80\ntrace = 0.5/30\n", &config), 0, "%s", errmsg);
	cr_expect_eq(config.trace.window_ns, 500000000ull);
	cr_expect_eq(config.trace.period_ns, 30000000000ull);
	cr_expect(config.has_trace);
	cr_assert_eq(parse("port = 80\ntrace = always\n", &config), 0, "%s", errmsg);
	cr_expect(cs_trace_schedule_is_always(&config.trace));
	expect_error("trace = sometimes\n", "test.conf:1: trace expects 'always' or WINDOW/PERIOD");
	expect_error("trace = 11/10\n", "no longer than its period");
	expect_error("trace = 1/10\ntrace = 2/10\n", "test.conf:2: trace is set twice");

	/* The command line's schedule replaces the file's. */
	struct cs_daemon_config over;
	cs_config_init(&over);
	cr_assert_eq(cs_config_set(&over, "trace", "always", errmsg, sizeof(errmsg)), 0, "%s", errmsg);
	cr_assert_eq(parse("port = 80\ntrace = 2/20\n", &config), 0, "%s", errmsg);
	cs_config_merge(&config, &over);
	cr_expect(cs_trace_schedule_is_always(&config.trace));
}
