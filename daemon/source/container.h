/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which container a target runs in, as its cgroup path shows it: the
 * labels of reports, top and the metrics. Pure: text in, text out.
 */
#ifndef CS_CONTAINER_H
#define CS_CONTAINER_H

#include <stddef.h>

#define CS_CONTAINER_LEN 80

/*
 * The container a cgroup v2 path names, as "RUNTIME:ID" with the first 12
 * hex digits of the id (what 'docker ps' and 'crictl ps' show):
 *   .../docker-ID.scope, /docker/ID            docker:ID
 *   .../cri-containerd-ID.scope, kubepods/.../ID  containerd:ID
 *   .../crio-ID.scope                           cri-o:ID
 *   .../libpod-ID.scope                         podman:ID
 * else the innermost systemd unit: "systemd:nginx.service". Returns 0, or
 * -1 with out "" when the path shows neither.
 */
int cs_container_of_cgroup(const char *cgroup, char *out, size_t len);

/*
 * The cgroup v2 path from the text of /proc/PID/cgroup (its "0::" line).
 * Returns 0, or -1 with out "" when there is none.
 */
int cs_parse_proc_cgroup(const char *text, char *out, size_t len);

#endif /* CS_CONTAINER_H */
