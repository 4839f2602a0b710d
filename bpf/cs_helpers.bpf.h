/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Helpers shared by connscope's BPF objects (connscope.bpf.c, stacks.bpf.c):
 * the constants of uapi headers that vmlinux.h does not carry, ring buffer
 * records, per-CPU counters, the target tests, a packet's TCP header.
 *
 * Each helper takes the maps it works on as arguments: an object defines
 * only the maps it uses (every map defined is created at load and shows in
 * its skeleton), and after inlining the map is a constant again, so a
 * helper costs what the open-coded version did.
 */
#ifndef CS_HELPERS_BPF_H
#define CS_HELPERS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "connscope.h"

/*
 * vmlinux.h has the kernel's types but none of its macros: these are the
 * uapi values (stable ABI), under their usual names.
 */
#ifndef EAGAIN
#define EAGAIN 11 /* a non-blocking send found the socket's buffer full */
#endif
#ifndef E2BIG
#define E2BIG 7 /* a map update into a full table */
#endif
#define AF_UNIX 1
#define AF_INET 2
#define AF_INET6 10
#define MSG_PEEK 2 /* recv() flag: the bytes stay queued */
#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define TASK_RUNNING 0 /* a task's __state while runnable */

/* A TCP header's data offset (doff) counts 32-bit words. */
#define TCP_DOFF_UNIT 4

#define NSEC_PER_USEC 1000ull
#define NSEC_PER_MSEC 1000000ull
#define NSEC_PER_SEC 1000000000ull

/* bpf_get_current_pid_tgid(): the process (tgid) above, the thread below. */
static __always_inline __u32 cs_tgid_of(__u64 pid_tgid)
{
	return pid_tgid >> 32;
}

static __always_inline __u32 cs_tid_of(__u64 pid_tgid)
{
	return (__u32)pid_tgid;
}

/* ---- counters -------------------------------------------------------------- */

/* Add to one slot of a per-CPU array of counters. */
static __always_inline void cs_counter_add(void *counters, __u32 which, __u64 amount)
{
	__u64 *value = bpf_map_lookup_elem(counters, &which);

	if (value)
		*value += amount;
}

/* ---- ring buffer records ------------------------------------------------- */

static __always_inline void cs_event_header(struct cs_event_header *hdr, __u64 now_ns, __u16 type,
					    __u16 size)
{
	hdr->ts_ns = now_ns;
	hdr->type = type;
	hdr->size = size;
	hdr->cpu = bpf_get_smp_processor_id();
}

/*
 * Reserve a record of size bytes in ringbuf, its header stamped now_ns.
 * NULL when the buffer is full: the caller counts the loss in its own
 * counter.
 */
static __always_inline void *cs_event_reserve(void *ringbuf, __u32 size, __u16 type, __u64 now_ns)
{
	struct cs_event_header *hdr = bpf_ringbuf_reserve(ringbuf, size, 0);

	if (hdr)
		cs_event_header(hdr, now_ns, type, size);
	return hdr;
}

/*
 * Submit without waking the consumer unless wakeup_bytes or more have
 * queued up in ringbuf: a wake-up per record costs about 2.4 us, and the
 * readers poll on a short timer anyway.
 */
static __always_inline void cs_event_submit(void *ringbuf, void *record, __u64 wakeup_bytes)
{
	__u64 queued = bpf_ringbuf_query(ringbuf, BPF_RB_AVAIL_DATA);

	bpf_ringbuf_submit(record, queued >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

/*
 * A kernel address read from memory, as a typed pointer the verifier lets
 * us load from directly (each load is fault-safe, like a probe read, at
 * the cost of a plain load: a probe read is a helper call, some 50 ns on a
 * guest). The kfunc is a no-op the verifier inlines. Linux 6.2 ("bpf: Add
 * a kfunc for generic type cast"), below the minimum.
 */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
#define kernel_ptr(type, addr) ((type *)bpf_rdonly_cast((const void *)(addr), bpf_core_type_id_kernel(type)))

/* ---- targets ------------------------------------------------------------- */

/* Is tgid in tgids (a hash of target processes)? */
static __always_inline bool cs_is_target_tgid(void *tgids, __u32 tgid)
{
	return bpf_map_lookup_elem(tgids, &tgid) != NULL;
}

/*
 * Is port's bit set in ports (an array of CS_PORT_WORDS words)? An array
 * lookup is inlined by the verifier: a few instructions, not a hash.
 */
static __always_inline bool cs_is_target_port(void *ports, __u16 port)
{
	__u32 word = cs_port_word(port);
	__u64 *bits = bpf_map_lookup_elem(ports, &word);

	return bits && (*bits & cs_port_bit(port));
}

/* Port in the network namespace numbered netns_ino: its entry in endpoints, or NULL. */
static __always_inline void *cs_target_endpoint(void *endpoints, __u32 netns_ino, __u16 port)
{
	__u64 key = cs_endpoint_key(netns_ino, port);

	return bpf_map_lookup_elem(endpoints, &key);
}

/* The inode number of a socket's network namespace. */
static __always_inline __u32 cs_sk_netns(const struct sock *sk)
{
	return kernel_ptr(struct sock, sk)->__sk_common.skc_net.net->ns.inum;
}

/* The same for a packet: the namespace of the device it came in on. */
static __always_inline __u32 cs_skb_netns(const struct sk_buff *skb)
{
	return kernel_ptr(struct sk_buff, skb)->dev->nd_net.net->ns.inum;
}

/* ---- packets ------------------------------------------------------------- */

/*
 * Read a packet's TCP header (where its transport header points) into th.
 * Returns the header's kernel address, NULL if it could not be read.
 */
static __always_inline const unsigned char *cs_skb_tcphdr(const struct sk_buff *skb,
							  struct tcphdr *th)
{
	const struct sk_buff *packet = kernel_ptr(struct sk_buff, skb);
	const unsigned char *at = packet->head + packet->transport_header;

	return bpf_probe_read_kernel(th, sizeof(*th), at) ? NULL : at;
}

/*
 * The current thread's time runnable but not running so far (kernel-kept,
 * ns). The kernel adds a wait as the thread gets its CPU back, so a running
 * thread's value holds every wait up to now: two reads on one thread
 * bracket its waits.
 */
static __always_inline __u64 current_run_delay(void)
{
	return bpf_get_current_task_btf()->sched_info.run_delay;
}

#endif /* CS_HELPERS_BPF_H */
