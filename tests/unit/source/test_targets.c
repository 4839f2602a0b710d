// SPDX-License-Identifier: BSD-2-Clause
/* Targets by name and cgroup (daemon/source/targets.c): validation and the /proc and cgroupfs parsers. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "targets.h"

Test(targets, names_are_validated_and_kept_once)
{
	struct cs_target_match match = {};
	char why[256];
	cr_assert_eq(cs_target_add_name(&match, "nginx", why, sizeof(why)), 0);
	cr_assert_eq(cs_target_add_name(&match, "nginx", why, sizeof(why)), 0);
	cr_assert_eq(cs_target_add_name(&match, "python3.11", why, sizeof(why)), 0);
	cr_assert_eq(match.name_count, 2);
	cr_assert_eq(cs_target_add_name(&match, "", why, sizeof(why)), -1);
	cr_assert(strstr(why, "expects a process name"), "%s", why);
	cr_assert_eq(cs_target_add_name(&match, "/usr/sbin/nginx", why, sizeof(why)), -1);
	cr_assert(strstr(why, "without '/'") && strstr(why, "/usr/sbin/nginx"), "%s", why);
	cr_assert_eq(cs_target_add_name(&match, "a\nb", why, sizeof(why)), -1);
	char long_name[300];
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	cr_assert_eq(cs_target_add_name(&match, long_name, why, sizeof(why)), -1);
	cr_assert_eq(match.name_count, 2);
}

Test(targets, at_most_sixteen_names)
{
	struct cs_target_match match = {};
	char why[256], name[16];
	for (int i = 0; i < CS_MAX_MATCH_TARGETS; i++) {
		snprintf(name, sizeof(name), "srv%d", i);
		cr_assert_eq(cs_target_add_name(&match, name, why, sizeof(why)), 0);
	}
	cr_assert_eq(cs_target_add_name(&match, "one-more", why, sizeof(why)), -1);
	cr_assert(strstr(why, "at most 16"), "%s", why);
}

Test(targets, cgroup_paths_are_normalized)
{
	char out[CS_CGROUP_PATH_LEN];
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "/system.slice/nginx.service", "/system.slice/nginx.service" },
		{ "system.slice/nginx.service", "/system.slice/nginx.service" },
		{ "/sys/fs/cgroup/system.slice/nginx.service/", "/system.slice/nginx.service" },
		{ "//a///b//", "/a/b" },
		{ "/", "/" },
		{ "/sys/fs/cgroup", "/" },
		{ "/sys/fs/cgroupx/a", "/sys/fs/cgroupx/a" }, /* not the mount point */
		{ "/a/.hidden/..b", "/a/.hidden/..b" },
		{ "/sys/fs///cgroup//a/", "/a" }, /* found by fuzz_config: normal forms are stable */
		{ "/sys/fs/cgroup/sys/fs/cgroup/x", "/x" },
		{ "/sys/fs/cgroup/unified/cs-test", "/cs-test" }, /* hybrid systems' v2 mount */
		{ "/sys/fs/cgroup/unifiedx", "/unifiedx" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(cs_cgroup_normalize(cases[i].in, out, sizeof(out)), 0, "%s", cases[i].in);
		cr_expect_str_eq(out, cases[i].out, "%s", cases[i].in);
	}
	static const char *const bad[] = { "", "/a/../b", "..", "/a/.", "./a", "/a/b\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(cs_cgroup_normalize(bad[i], out, sizeof(out)), -EINVAL, "'%s'", bad[i]);
	cr_expect_eq(cs_cgroup_normalize("/abcdef", out, 6), -ENAMETOOLONG);
	cr_expect_eq(cs_cgroup_normalize("/abcd", out, 6), 0);
	cr_expect_str_eq(out, "/abcd");
}

Test(targets, cgroups_are_validated_and_kept_once)
{
	struct cs_target_match match = {};
	char why[256];
	cr_assert_eq(cs_target_add_cgroup(&match, "/system.slice/a.service", why, sizeof(why)), 0);
	cr_assert_eq(cs_target_add_cgroup(&match, "/sys/fs/cgroup/system.slice/a.service", why, sizeof(why)), 0);
	cr_assert_eq(match.cgroup_count, 1);
	cr_assert_eq(cs_target_add_cgroup(&match, "/a/../../etc", why, sizeof(why)), -1);
	cr_assert(strstr(why, "no '.' or '..'") && strstr(why, "/a/../../etc"), "%s", why);
}

Test(targets, match_sets_compare_regardless_of_order)
{
	struct cs_target_match a = {}, b = {};
	char why[256];
	cs_target_add_name(&a, "x", why, sizeof(why));
	cs_target_add_name(&a, "y", why, sizeof(why));
	cs_target_add_name(&b, "y", why, sizeof(why));
	cr_assert(!cs_target_match_equal(&a, &b));
	cs_target_add_name(&b, "x", why, sizeof(why));
	cr_assert(cs_target_match_equal(&a, &b));
	cs_target_add_cgroup(&b, "/c", why, sizeof(why));
	cr_assert(!cs_target_match_equal(&a, &b));
	cr_assert(cs_target_match_any(&a));
	struct cs_target_match none = {};
	cr_assert(!cs_target_match_any(&none));
}

Test(targets, proc_stat_comm_and_flags)
{
	char comm[CS_COMM_LEN];
	unsigned long flags = 0;
	const char *nginx = "1234 (nginx) S 1 1234 1234 0 -1 4194624 331 0 0 0 0 0 0 0 20 0 1 0 99 1 2\n";
	cr_assert_eq(cs_parse_proc_stat(nginx, comm, sizeof(comm), &flags), 0);
	cr_expect_str_eq(comm, "nginx");
	cr_expect_eq(flags, 4194624);
	cr_expect_eq(flags & CS_PF_KTHREAD, 0);
	/* A command may hold spaces and parentheses: the last ')' ends it. */
	const char *odd = "77 (a) b (c)) R 1 77 77 0 -1 2097216 0 0\n";
	cr_assert_eq(cs_parse_proc_stat(odd, comm, sizeof(comm), &flags), 0);
	cr_expect_str_eq(comm, "a) b (c)");
	cr_expect_neq(flags & CS_PF_KTHREAD, 0); /* 2097216 = PF_KTHREAD | PF_NOFREEZE */
	/* Cut to the buffer. */
	char small[4];
	cr_assert_eq(cs_parse_proc_stat(nginx, small, sizeof(small), &flags), 0);
	cr_expect_str_eq(small, "ngi");
	static const char *const bad[] = { "", "12 nginx S 1", "12 (x", "12 (x) S 1 2 3 4 5", "12 (x) S 1 2 3 4 5 zz",
					   "12 (x)S 1 2 3 4 5 6" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(cs_parse_proc_stat(bad[i], comm, sizeof(comm), &flags), -EINVAL, "'%s'", bad[i]);
}

Test(targets, exe_basename)
{
	char out[CS_TARGET_NAME_LEN];
	cs_exe_basename("/usr/sbin/nginx", out, sizeof(out));
	cr_expect_str_eq(out, "nginx");
	cs_exe_basename("/opt/app/bin/server (deleted)", out, sizeof(out));
	cr_expect_str_eq(out, "server");
	cs_exe_basename("plain", out, sizeof(out));
	cr_expect_str_eq(out, "plain");
	cs_exe_basename("/x/ (deleted)", out, sizeof(out));
	cr_expect_str_eq(out, " (deleted)"); /* a file named so, not a deleted one */
	char small[4];
	cs_exe_basename("/bin/python3", small, sizeof(small));
	cr_expect_str_eq(small, "pyt");
}

Test(targets, names_match_comm_or_executable)
{
	cr_expect(cs_name_matches("nginx", "nginx", ""));
	cr_expect(cs_name_matches("python3.11", "python3", "python3.11"));
	cr_expect(cs_name_matches("connscope-server", "connscope-serve", "connscope-server"));
	cr_expect(!cs_name_matches("connscope-serve", "connscope-servx", "connscope-server"));
	cr_expect(!cs_name_matches("ngin", "nginx", "nginx"));
	cr_expect(!cs_name_matches("nginx", "nginx: worker", NULL));
	struct cs_target_match match = {};
	char why[256];
	cs_target_add_name(&match, "redis-server", why, sizeof(why));
	cs_target_add_name(&match, "nginx", why, sizeof(why));
	cr_expect_str_eq(cs_match_name(&match, "nginx", NULL), "nginx");
	cr_expect_str_eq(cs_match_name(&match, "redis-server", "redis-server"), "redis-server");
	cr_expect_null(cs_match_name(&match, "sshd", "sshd"));
}

Test(targets, pid_lists)
{
	pid_t pids[4];
	size_t count = 0;
	cr_assert_eq(cs_parse_pid_list("12\n345\n6\n", pids, 4, &count), 0);
	cr_assert_eq(count, 3);
	cr_expect_eq(pids[0], 12);
	cr_expect_eq(pids[1], 345);
	cr_expect_eq(pids[2], 6);
	cr_assert_eq(cs_parse_pid_list("", pids, 4, &count), 0);
	cr_expect_eq(count, 0);
	cr_assert_eq(cs_parse_pid_list("7", pids, 4, &count), 0); /* no final newline */
	cr_expect_eq(count, 1);
	cr_assert_eq(cs_parse_pid_list("1\n2\n3\n4\n5\n", pids, 4, &count), -ENOSPC);
	cr_expect_eq(count, 4);
	cr_expect_eq(pids[3], 4);
	static const char *const bad[] = { "x\n", "1\n\n2\n", "-1\n", "0\n", " 1\n", "1 \n", "99999999999\n",
					   "4194305\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(cs_parse_pid_list(bad[i], pids, 4, &count), -EINVAL, "'%s'", bad[i]);
}

Test(targets, cgroup2_mount_from_mountinfo)
{
	char out[CS_CGROUP_PATH_LEN];
	/* A hybrid system: v1 controllers, v2 at /sys/fs/cgroup/unified. */
	const char *hybrid =
		"22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n"
		"30 22 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
		"31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu\n"
		"40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
	cr_assert_eq(cs_parse_cgroup2_mount(hybrid, out, sizeof(out)), 0);
	cr_expect_str_eq(out, "/sys/fs/cgroup/unified");
	/* /sys/fs/cgroup wins over another mount; a sub-tree bind mount never counts. */
	const char *several =
		"50 1 0:40 /sub /mnt/sub rw - cgroup2 cgroup2 rw\n"
		"51 1 0:40 / /mnt/cg\040two rw shared:1 master:2 - cgroup2 none rw\n"
		"52 1 0:40 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
	cr_assert_eq(cs_parse_cgroup2_mount(several, out, sizeof(out)), 0);
	cr_expect_str_eq(out, "/sys/fs/cgroup");
	cr_assert_eq(cs_parse_cgroup2_mount(several + strlen("50 1 0:40 /sub /mnt/sub rw - cgroup2 cgroup2 rw\n"),
					    out, 12),
		     -ENAMETOOLONG);
	const char *escaped = "51 1 0:40 / /mnt/cg\\040two rw - cgroup2 none rw";
	cr_assert_eq(cs_parse_cgroup2_mount(escaped, out, sizeof(out)), 0);
	cr_expect_str_eq(out, "/mnt/cg two");
	cr_expect_eq(cs_parse_cgroup2_mount("22 1 0:21 / /sys rw - sysfs sysfs rw\n", out, sizeof(out)), -ENOENT);
	cr_expect_eq(cs_parse_cgroup2_mount("", out, sizeof(out)), -ENOENT);
	cr_expect_eq(cs_parse_cgroup2_mount("garbage - cgroup2 x\n", out, sizeof(out)), -ENOENT);
}
