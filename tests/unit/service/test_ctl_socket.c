// SPDX-License-Identifier: BSD-2-Clause
/* connscoped's control socket file (daemon/service/ctl_socket.c): its directory. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl_socket.h"

#define RACERS 4
#define ROUNDS 10

/* Opens DIR/sock-N once the gate opens (the parent closes the pipe). */
static void racer(const char *dir, int n, int gate)
{
	char byte, path[108], errmsg[256];
	struct cs_ctl_socket sock = { .fd = -1 };
	if (snprintf(path, sizeof(path), "%s/sock-%d", dir, n) >= (int)sizeof(path) || read(gate, &byte, 1) != 0)
		_exit(2);
	int rc = cs_ctl_socket_open(&sock, path, errmsg, sizeof(errmsg));
	if (rc)
		fprintf(stderr, "racer %d: %s\n", n, errmsg);
	else
		cs_ctl_socket_close(&sock);
	_exit(rc ? 1 : 0);
}

/*
 * Two daemons started at once (a test, a unit file per target) may both
 * find the directory missing: the second mkdir finds it made, and that is
 * no failure. Several processes released together, round after round.
 */
Test(ctl_socket, daemons_starting_at_once_share_a_missing_directory)
{
	char base[] = "/tmp/cs-ctl-socket-XXXXXX";
	cr_assert_not_null(mkdtemp(base));
	for (int round = 0; round < ROUNDS; round++) {
		char dir[64];
		cr_assert_lt(snprintf(dir, sizeof(dir), "%s/run-%d", base, round), (int)sizeof(dir));
		int gate[2];
		cr_assert_eq(pipe(gate), 0);
		pid_t pids[RACERS];
		for (int i = 0; i < RACERS; i++) {
			pids[i] = fork();
			cr_assert_neq(pids[i], -1);
			if (pids[i] == 0) {
				close(gate[1]);
				racer(dir, i, gate[0]);
			}
		}
		close(gate[0]);
		close(gate[1]);
		int failed = 0;
		for (int i = 0; i < RACERS; i++) {
			int status = 0;
			cr_assert_eq(waitpid(pids[i], &status, 0), pids[i]);
			failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
		}
		struct stat st;
		cr_assert_eq(lstat(dir, &st), 0);
		cr_expect(S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700, "round %d: %s mode %o", round, dir,
			  st.st_mode & 0777);
		cr_assert_eq(failed, 0, "round %d: %d of %d daemons could not open their socket", round, failed,
			     RACERS);
		rmdir(dir);
	}
	rmdir(base);
}
