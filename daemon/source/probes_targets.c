// SPDX-License-Identifier: BSD-2-Clause
/*
 * The probes' target maps: processes (by tgid), ports, and endpoints (a
 * port in a network namespace), in the probes' maps and in our copy of
 * them (the listener samples look there). The port bitmap is the probes'
 * first, cheap test; the endpoint map their second.
 */
#include "probes.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <stdbool.h>

#include "connscope.skel.h"

/* Into the set, then its bit: the probes test the bit first (the fork probe sets bits too). */
int cs_probes_add_tgid(struct cs_probes *probes, uint32_t tgid)
{
	uint8_t one = 1;
	int err = bpf_map__update_elem(probes->skel->maps.target_tgids, &tgid, sizeof(tgid), &one,
				       sizeof(one), BPF_ANY);
	if (!err)
		__atomic_fetch_or(&probes->skel->bss->target_tgid_bits[cs_tgid_word(tgid)], cs_tgid_bit(tgid),
				  __ATOMIC_RELAXED);
	return err;
}

/*
 * Set (on) or clear port's bit in the BPF bitmap and in our copy. Only we
 * write the bitmap, so read-modify-write cannot race. -ENOENT: clearing a
 * bit that was not set.
 */
static int set_port_bit(struct cs_probes *probes, uint16_t port, bool on)
{
	uint32_t word = cs_port_word(port);
	uint64_t bits = 0;
	int err = bpf_map__lookup_elem(probes->skel->maps.target_ports, &word, sizeof(word), &bits,
				       sizeof(bits), 0);
	if (err)
		return err;
	if (!on && !(bits & cs_port_bit(port)))
		return -ENOENT;
	bits = on ? bits | cs_port_bit(port) : bits & ~cs_port_bit(port);
	probes->port_bits[word] = bits;
	return bpf_map__update_elem(probes->skel->maps.target_ports, &word, sizeof(word), &bits,
				    sizeof(bits), BPF_ANY);
}

int cs_probes_add_port(struct cs_probes *probes, uint16_t port)
{
	return set_port_bit(probes, port, true);
}

int cs_probes_remove_tgid(struct cs_probes *probes, uint32_t tgid)
{
	return bpf_map__delete_elem(probes->skel->maps.target_tgids, &tgid, sizeof(tgid), 0);
}

int cs_probes_remove_port(struct cs_probes *probes, uint16_t port)
{
	return set_port_bit(probes, port, false);
}

int cs_probes_add_endpoint(struct cs_probes *probes, uint32_t netns_ino, uint16_t port)
{
	uint64_t key = cs_endpoint_key(netns_ino, port);
	struct cs_endpoint_state fresh = { .listeners = 0 }; /* no walk yet: handshakes followed */
	for (size_t i = 0; i < probes->endpoint_count; i++)
		if (probes->endpoints[i] == key)
			return 0;
	if (probes->endpoint_count >= CS_ENDPOINTS_MAX)
		return -ENOSPC;
	/* The endpoint before the port bit: the probes look at the bit first. */
	int err = bpf_map__update_elem(probes->skel->maps.target_endpoints, &key, sizeof(key), &fresh,
				       sizeof(fresh), BPF_ANY);
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
