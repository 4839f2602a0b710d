// SPDX-License-Identifier: BSD-2-Clause
/* Listeners read from /proc/PID/net/tcp (daemon/source/netns.c): what connscoped sees of a namespace it can no longer enter. */
#include <criterion/criterion.h>
#include <errno.h>

#include "netns.h"

static const char tcp_text[] =
	"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	"   0: 0100007F:1F90 00000000:0000 0A 00000200:00000003 00:00000000 00000000     0        0 91234 1 0000000000000000 100 0 0 10 0\n"
	"   1: 0100007F:1F90 0100007F:D2F4 01 00000000:00000000 00:00000000 00000000     0        0 91240 1 0000000000000000 20 4 30 10 -1\n"
	"   2: 00000000:0016 00000000:0000 0A 00000080:00000000 00:00000000 00000000     0        0 1777 1 0000000000000000 100 0 0 10 0\n";

Test(netns, proc_net_tcp_listeners_only)
{
	struct cs_listen_socket out[4];
	size_t count = 0;
	cr_assert_eq(cs_parse_proc_net_tcp(tcp_text, out, 4, &count), 0);
	cr_assert_eq(count, 2);
	cr_assert_eq(out[0].port, 8080);
	cr_assert_eq(out[0].inode, 91234);
	cr_assert_eq(out[0].backlog, 3);
	cr_assert_eq(out[1].port, 22);
	cr_assert_eq(out[1].inode, 1777);
}

Test(netns, proc_net_tcp6_and_full_table)
{
	static const char tcp6_text[] =
		"  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
		"   0: 00000000000000000000000001000000:1F91 00000000000000000000000000000000:0000 0A 00000004:00000000 00:00000000 00000000     0        0 5551 1 0000000000000000 100 0 0 10 0\n";
	struct cs_listen_socket out[1];
	size_t count = 0;
	cr_assert_eq(cs_parse_proc_net_tcp(tcp6_text, out, 1, &count), 0);
	cr_assert_eq(count, 1);
	cr_assert_eq(out[0].port, 8081);
	cr_assert_eq(out[0].backlog, 0);
	count = 0;
	cr_assert_eq(cs_parse_proc_net_tcp(tcp_text, out, 1, &count), -ENOSPC);
	cr_assert_eq(count, 1);
	count = 0;
	cr_assert_eq(cs_parse_proc_net_tcp("", out, 1, &count), 0);
	cr_assert_eq(count, 0);
}
