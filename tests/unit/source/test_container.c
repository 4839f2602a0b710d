// SPDX-License-Identifier: BSD-2-Clause
/* Container labels from cgroup paths (daemon/source/container.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "container.h"

#define ID "3f2a9c1b7d4e5f60718293a4b5c6d7e8f9012345678901234567890abcdef012"

static const char *label(const char *cgroup)
{
	static char out[CS_CONTAINER_LEN];
	cs_container_of_cgroup(cgroup, out, sizeof(out));
	return out;
}

Test(container, runtimes_by_their_scope_names)
{
	cr_assert_str_eq(label("/system.slice/docker-" ID ".scope"), "docker:3f2a9c1b7d4e");
	cr_assert_str_eq(label("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/"
			       "cri-containerd-" ID ".scope"), "containerd:3f2a9c1b7d4e");
	cr_assert_str_eq(label("/kubepods.slice/kubepods-pod1.slice/crio-" ID ".scope"), "cri-o:3f2a9c1b7d4e");
	cr_assert_str_eq(label("/machine.slice/libpod-" ID ".scope/container"), "podman:3f2a9c1b7d4e");
}

Test(container, cgroupfs_driver_paths)
{
	cr_assert_str_eq(label("/docker/" ID), "docker:3f2a9c1b7d4e");
	cr_assert_str_eq(label("/kubepods/burstable/pod0a1b/" ID), "containerd:3f2a9c1b7d4e");
	/* A bare id outside docker or kubepods says nothing about a runtime. */
	cr_assert_eq(cs_container_of_cgroup("/custom/" ID, (char[8]){ 0 }, 8), -1);
}

Test(container, systemd_units_and_nothing)
{
	cr_assert_str_eq(label("/system.slice/nginx.service"), "systemd:nginx.service");
	cr_assert_str_eq(label("/system.slice/app.service/worker"), "systemd:app.service");
	char out[CS_CONTAINER_LEN] = "x";
	cr_assert_eq(cs_container_of_cgroup("/user.slice/user-0.slice/session-3.scope", out, sizeof(out)), -1);
	cr_assert_str_eq(out, "");
	cr_assert_eq(cs_container_of_cgroup("/", out, sizeof(out)), -1);
	/* Not quite ids: too short, upper case. */
	cr_assert_eq(cs_container_of_cgroup("/system.slice/docker-3f2a.scope", out, sizeof(out)), -1);
	cr_assert_eq(cs_container_of_cgroup("/docker/3F2A9C1B7D4E5F60718293A4B5C6D7E8F9012345678901234567890ABCDEF012",
					    out, sizeof(out)), -1);
}

Test(container, proc_cgroup_v2_line)
{
	char out[256];
	cr_assert_eq(cs_parse_proc_cgroup("0::/system.slice/nginx.service\n", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/system.slice/nginx.service");
	cr_assert_eq(cs_parse_proc_cgroup("12:memory:/x\n1:name=systemd:/y\n0::/z\n", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/z");
	cr_assert_eq(cs_parse_proc_cgroup("12:memory:/x\n", out, sizeof(out)), -1);
	cr_assert_str_eq(out, "");
}
