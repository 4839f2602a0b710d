// SPDX-License-Identifier: BSD-2-Clause
/*
 * Target endpoints: a port in a network namespace, in the probes' map and
 * in our copy of it (the listener samples look there). The port bitmap is
 * the probes' first, cheap test; the endpoint map their second.
 */
#include "probes.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <stdbool.h>

#include "connscope.skel.h"

int cs_probes_add_endpoint(struct cs_probes *probes, uint32_t netns_ino, uint16_t port)
{
	uint64_t key = cs_endpoint_key(netns_ino, port);
	uint8_t one = 1;
	for (size_t i = 0; i < probes->endpoint_count; i++)
		if (probes->endpoints[i] == key)
			return 0;
	if (probes->endpoint_count >= CS_MAX_ENDPOINTS)
		return -ENOSPC;
	/* The endpoint before the port bit: the probes look at the bit first. */
	int err = bpf_map__update_elem(probes->skel->maps.target_endpoints, &key, sizeof(key), &one,
				       sizeof(one), BPF_ANY);
	if (err)
		return err;
	probes->endpoints[probes->endpoint_count++] = key;
	return cs_probes_add_port(probes, port);
}

int cs_probes_remove_endpoint(struct cs_probes *probes, uint32_t netns_ino, uint16_t port)
{
	uint64_t key = cs_endpoint_key(netns_ino, port);
	bool found = false, port_used = false;
	for (size_t i = 0; i < probes->endpoint_count;) {
		if (probes->endpoints[i] == key) {
			probes->endpoints[i] = probes->endpoints[--probes->endpoint_count];
			found = true;
			continue;
		}
		port_used |= (uint16_t)probes->endpoints[i] == port;
		i++;
	}
	if (!found)
		return -ENOENT;
	/* The port stays in the bitmap while another namespace's listener has it. */
	if (!port_used)
		cs_probes_remove_port(probes, port);
	return bpf_map__delete_elem(probes->skel->maps.target_endpoints, &key, sizeof(key), 0);
}
