// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * connscope probes: the accept path, listeners and requests.
 *
 * Only tracepoints, tp_btf, iterators: no kprobes, no fentry (many locked
 * down kernels have neither). Every probe filters on the target first
 * (process for syscalls, port for softirq-side socket events) and returns
 * at once for everything else.
 *
 *   SYN_RECV -> ESTABLISHED on a child socket  : connection enters the
 *                                                accept queue (timestamp kept
 *                                                in-kernel, keyed by socket)
 *   sys_enter/exit_accept{,4}                  : accept() took it out; one
 *                                                record per call
 *   tp_btf/kfree_skb (TCP_LISTEN_OVERFLOW)     : a handshake's last ACK dropped,
 *                                                accept queue full
 *   iter/tcp over LISTEN sockets               : names a target listener (its
 *                                                address, SYN queue) when user
 *                                                space meets a new one; its
 *                                                backlog, limit and drops come
 *                                                from sock_diag in user space
 *   client SYN_SENT + tcp_retransmit_skb       : SYN retransmits of local
 *                                                clients (1 s, 3 s tails)
 *   sched_process_fork / exit                  : follow forked workers
 *
 * Requests (one record per request, emitted when it is over):
 *   sk_data_ready                              : bytes arrived: a request starts
 *   sock_recv_length / sock_send_length        : first read, first and last send
 *   tcp_sendmsg_locked (when the kernel has it): the exact start of the answer
 *   net_dev_start_xmit                         : an answer's last byte out;
 *                                                attached only while one has
 *                                                bytes held back
 *   the kernel's sched_info.run_delay          : run-queue waits of the serving
 *                                                thread, read where it runs;
 *                                                per-thread totals by iter/task
 *   inet_sock_set_state (leaving ESTABLISHED)  : who closed, after what idle gap
 *   tcp_send_reset / tcp_receive_reset         : resets, the keep-alive race
 *
 * Upstreams (one record per exchange, at its answer's first read):
 *   CLOSE -> SYN_SENT in a target's thread     : it connects: followed
 *   SYN_SENT -> ESTABLISHED, SYN retransmits   : the connect's time
 *   sys_enter/exit_connect to a Unix socket    : the same for a Unix stream
 *                                                socket (its peer's path)
 *   the send, data_ready and read hooks above  : each exchange: sent, first
 *                                                byte in, read
 * Local clients (one record per answer read, clients.bpf.h):
 *   the data_ready and read hooks above       : on a socket whose peer is a
 *                                                target endpoint: its answer's
 *                                                arrival, the client's read
 * Per-connection state lives in socket-local storage; only target sockets
 * get any, so finding it is the target filter.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * The probes, by what they follow. Each part is a header that includes
 * what it uses (maps.bpf.h: the maps and globals; conn_state.bpf.h: a
 * connection's state; core_compat.bpf.h: reads that differ between
 * kernels) and compiles alone (make lint). Their order here is free.
 */
#include "requests.bpf.h"
#include "adopt.bpf.h"
#include "read_peek.bpf.h"
#include "socket_probes.bpf.h"
#include "lifecycle.bpf.h"
#include "upstreams.bpf.h"
#include "clients.bpf.h"
#include "unix_connect.bpf.h"
#include "accept.bpf.h"
#include "epoll.bpf.h"
#include "walks.bpf.h"
