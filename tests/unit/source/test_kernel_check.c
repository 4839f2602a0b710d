// SPDX-License-Identifier: BSD-2-Clause
/*
 * Tests of daemon/source/kernel_check.c: the start-up check of the kernel's
 * features, against a tracefs tree made here (events/GROUP/NAME/format),
 * as a kernel older than the minimum would show it.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel_check.h"

static char root[64];

/* events/GROUP/NAME/format, with one field line per field given. */
static void make_event(const char *group, const char *name, const char *const *fields)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/events", root);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/events/%s", root, group);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/events/%s/%s", root, group, name);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/events/%s/%s/format", root, group, name);
	FILE *format = fopen(path, "w");
	cr_assert_not_null(format);
	fprintf(format, "name: %s\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n", name);
	for (size_t i = 0; fields && fields[i]; i++)
		fprintf(format, "\tfield:%s;\toffset:%zu;\tsize:4;\tsigned:0;\n", fields[i], 8 + 4 * i);
	fclose(format);
}

static void make_root(void)
{
	snprintf(root, sizeof(root), "/tmp/cs-kernel-check.XXXXXX");
	cr_assert_not_null(mkdtemp(root));
}

static void remove_root(void)
{
	char command[128];
	snprintf(command, sizeof(command), "rm -rf '%s'", root);
	cr_assert_eq(system(command), 0);
}

TestSuite(kernel_check, .init = make_root, .fini = remove_root);

static const char *const with_reason[] = { "const void * skbaddr", "enum sk_rst_reason reason", NULL };
static const char *const without_reason[] = { "const void * skbaddr", "int state", NULL };

static void make_sock_events(void)
{
	make_event("sock", "sk_data_ready", NULL);
	make_event("sock", "sock_recv_length", NULL);
	make_event("sock", "sock_send_length", NULL);
}

Test(kernel_check, a_kernel_with_every_feature_passes)
{
	char why[512] = "";
	make_event("tcp", "tcp_send_reset", with_reason);
	make_sock_events();
	cr_assert_eq(cs_kernel_check(root, "6.18.0", why, sizeof(why)), 0, "%s", why);
	cr_assert(cs_kernel_has_event(root, "sock", "sk_data_ready"));
	cr_assert_not(cs_kernel_has_event(root, "tcp", "tcp_sendmsg_locked"));
	cr_assert_not(cs_kernel_has_event(NULL, "sock", "sk_data_ready"));
}

Test(kernel_check, an_event_without_the_field_read_names_the_minimum)
{
	char why[512] = "";
	make_event("tcp", "tcp_send_reset", without_reason);
	make_sock_events();
	cr_assert_eq(cs_kernel_check(root, "6.8.0-1-amd64", why, sizeof(why)), -1);
	cr_assert_str_eq(why, "this kernel (6.8.0-1-amd64) has no trace event tcp/tcp_send_reset with its field "
			      "reason (Linux 6.10): connscope needs Linux " CS_KERNEL_MIN " or later");
}

Test(kernel_check, a_missing_event_is_named)
{
	char why[512] = "";
	make_event("tcp", "tcp_send_reset", with_reason);
	make_event("sock", "sock_recv_length", NULL);
	cr_assert_eq(cs_kernel_check(root, NULL, why, sizeof(why)), -1);
	cr_assert_str_eq(why, "this kernel has no trace event sock/sk_data_ready (Linux 6.3): connscope needs Linux "
			 CS_KERNEL_MIN " or later");
}
