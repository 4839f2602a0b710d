/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reads of sockets and of the current task's file table: a connection's
 * stamp, its addresses, a descriptor's socket, a listener's drops.
 */
#ifndef CS_SOCK_READS_BPF_H
#define CS_SOCK_READS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "connscope.h"
#include "cs_helpers.bpf.h"
#include "core_compat.bpf.h"

/*
 * When sk became ESTABLISHED, as TCP stamped it, in ns of the clock
 * bpf_ktime_get_ns() reads: at the handshake's end tcp_init_buffer_space()
 * sets rcvq_space.time (us), and only the owner's reads move it after,
 * forward (to measure its receive rate). So it is the exact time until
 * the first of those, a later one after; never earlier. 0: not stamped.
 * Two loads, where an entry made for every connection at ESTABLISHED
 * cost a hash update and its lookups.
 */
static __always_inline __u64 tcp_stamp_ns(const struct sock *sk)
{
	const struct tcp_sock *tp = kernel_ptr(struct tcp_sock, sk);

	return tp->rcvq_space.time * NSEC_PER_USEC;
}

/*
 * The socket behind a file descriptor of the current task, or NULL. On
 * every accept() twice: direct loads, not a chain of probe reads.
 */
static __always_inline struct sock *sock_of_fd(int fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct fdtable *fdt = task->files->fdt;
	struct file *file_addr = NULL;

	if (fd < 0 || !fdt || (unsigned int)fd >= fdt->max_fds)
		return NULL;
	/* An array element at a variable index: that one takes a probe read. */
	if (bpf_probe_read_kernel(&file_addr, sizeof(file_addr), &fdt->fd[fd]) || !file_addr) // NOLINT(bugprone-sizeof-expression)
		return NULL;
	struct file *file = kernel_ptr(struct file, file_addr);
	/* Only a socket file's private_data is a struct socket. */
	if ((file->f_inode->i_mode & S_IFMT) != S_IFSOCK)
		return NULL;
	struct socket *socket = kernel_ptr(struct socket, file->private_data);
	return socket->sk;
}

/* The TCP socket behind a file descriptor of the current task, or NULL. */
static __always_inline struct sock *tcp_sock_of_fd(int fd)
{
	struct sock *sk = sock_of_fd(fd);
	if (!sk)
		return NULL;
	__u16 family = sk->__sk_common.skc_family;
	if ((family != AF_INET && family != AF_INET6) || sk->sk_protocol != IPPROTO_TCP)
		return NULL;
	return sk;
}

/* An IPv4 address as ::ffff:a.b.c.d: two 0xff bytes, then the address in the last four. */
#define V4_MAPPED_OFFSET 12

/* Copy a socket's addresses and ports, local first, IPv4 as v4-mapped. */
static __always_inline void read_tuple(const struct sock *sk, struct cs_tuple *tuple)
{
	const struct sock_common *common = &kernel_ptr(struct sock, sk)->__sk_common;
	__u16 family = common->skc_family;

	tuple->family = family;
	tuple->local_port = common->skc_num;
	tuple->remote_port = bpf_ntohs(common->skc_dport);
	if (family == AF_INET6) {
		/* Word by word: the loads the verifier allows from a kernel struct's array. */
		for (int i = 0; i < 4; i++) {
			__u32 local = common->skc_v6_rcv_saddr.in6_u.u6_addr32[i];
			__u32 remote = common->skc_v6_daddr.in6_u.u6_addr32[i];
			__builtin_memcpy(&tuple->local_addr[4 * i], &local, sizeof(local));
			__builtin_memcpy(&tuple->remote_addr[4 * i], &remote, sizeof(remote));
		}
		return;
	}
	__u32 local = common->skc_rcv_saddr;
	__u32 remote = common->skc_daddr;
	/* Stored on the tuple: through a __u8 * the compiler would lose its alignment and store byte by byte. */
	tuple->local_addr[V4_MAPPED_OFFSET - 2] = 0xff;
	tuple->local_addr[V4_MAPPED_OFFSET - 1] = 0xff;
	__builtin_memcpy(&tuple->local_addr[V4_MAPPED_OFFSET], &local, sizeof(local));
	tuple->remote_addr[V4_MAPPED_OFFSET - 2] = 0xff;
	tuple->remote_addr[V4_MAPPED_OFFSET - 1] = 0xff;
	__builtin_memcpy(&tuple->remote_addr[V4_MAPPED_OFFSET], &remote, sizeof(remote));
}

/* The last of an IPv6 address's four 32-bit words. */
#define IN6_LAST_WORD 3

/* The low 32 bits of an address as the key uses it (IPv4: the address). */
static __always_inline __u32 addr_low32(const struct sock *sk, bool remote)
{
	const struct sock_common *common = &kernel_ptr(struct sock, sk)->__sk_common;

	if (common->skc_family == AF_INET6)
		return remote ? common->skc_v6_daddr.in6_u.u6_addr32[IN6_LAST_WORD]
			      : common->skc_v6_rcv_saddr.in6_u.u6_addr32[IN6_LAST_WORD];
	return remote ? common->skc_daddr : common->skc_rcv_saddr;
}

/* A server-side socket's connection as cs_client_key() numbers it. */
static __always_inline __u64 server_client_key(const struct sock *sk)
{
	return cs_client_key(addr_low32(sk, true), bpf_ntohs(sk->__sk_common.skc_dport), sk->__sk_common.skc_num);
}

/* The same connection from the client's socket. */
static __always_inline __u64 client_side_key(const struct sock *sk)
{
	return cs_client_key(addr_low32(sk, false), sk->__sk_common.skc_num, bpf_ntohs(sk->__sk_common.skc_dport));
}

/* sk_drops of a listener; newer kernels may also keep per-NUMA counters. */
static __always_inline __u32 read_drops(const struct sock *sk)
{
	return kernel_ptr(struct sock, sk)->sk_drops.counter;
}

#endif /* CS_SOCK_READS_BPF_H */
