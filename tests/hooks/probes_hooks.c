// SPDX-License-Identifier: BSD-2-Clause
/*
 * The tests' way into the probes, linked only into build/connscope-test
 * (never installed; connscope and connscoped have an empty
 * cs_probes_test_hooks, daemon/source/probes.c).
 *
 * CONNSCOPE_SKIP_RUNS=client-established drops every run of the state
 * probe at a local client's ESTABLISHED, as the kernel does to a softirq's
 * run while the probe runs in a task on that CPU: what the probes recover
 * from it is then tested every time, not by luck.
 */
#include <stdlib.h>
#include <string.h>

#include "connscope.skel.h"
#include "probes_internal.h"

void cs_probes_test_hooks(struct cs_probes *probes)
{
	const char *choice = getenv("CONNSCOPE_SKIP_RUNS");

	if (choice && strstr(choice, "client-established"))
		probes->skel->rodata->skip_client_established = true;
}
