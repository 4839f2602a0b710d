/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The kernel connscope needs, told by what it has rather than by its
 * version number: distribution kernels carry features back to older
 * versions (and a version says nothing of how a kernel was built), so each
 * trace event the probes cannot do without is looked up in tracefs, with
 * the field the probes read where that came later. The newest of them
 * sets the minimum the README states. Reads of kernel state that differ
 * between kernels are the BPF side's (bpf/core_compat.bpf.h).
 */
#ifndef CS_KERNEL_CHECK_H
#define CS_KERNEL_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* The oldest kernel with every feature cs_kernel_check() asks for. */
#define CS_KERNEL_MIN "6.10"

/* The mounted tracefs ("/sys/kernel/tracing" or its older place), or NULL. */
const char *cs_tracefs_root(void);

/* Does the kernel have the trace event GROUP/NAME (tracefs at root; NULL: none)? */
bool cs_kernel_has_event(const char *root, const char *group, const char *name);

/*
 * Every required feature there (tracefs at root)? 0, or -1 with a message
 * that names the first one missing, the kernel that brought it and the
 * minimum; release (uname's, or NULL) is said as this kernel's.
 */
int cs_kernel_check(const char *root, const char *release, char *errmsg, size_t errlen);

#endif /* CS_KERNEL_CHECK_H */
