// SPDX-License-Identifier: BSD-2-Clause
#include "config_file.h"
#include "errmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Every directory above the file must be trusted too: else it can be swapped. */
static int check_directories(const char *path, const char *real, char *errmsg, size_t errlen)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", real);
	for (char *slash = strrchr(dir, '/'); slash; slash = strrchr(dir, '/')) {
		if (slash == dir)
			slash[1] = '\0'; /* "/" itself */
		else
			*slash = '\0';
		struct stat st;
		if (stat(dir, &st))
			return cs_fail(errmsg, errlen, "cannot check config %s: %s: %s", path, dir, strerror(errno));
		const char *why = cs_config_untrusted(st.st_uid, st.st_mode, true, geteuid());
		if (why)
			return cs_fail(errmsg, errlen, "refusing config %s: its directory %s is not safe: %s "
				       "(make it root's and writable only by root)", path, dir, why);
		if (slash == dir)
			break;
	}
	return 0;
}

int cs_config_load(const char *path, struct cs_daemon_config *config, char *errmsg, size_t errlen)
{
	char real[PATH_MAX];
	if (!realpath(path, real))
		return cs_fail(errmsg, errlen, "cannot read config %s: %s", path, strerror(errno));
	int fd = open(real, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return cs_fail(errmsg, errlen, "cannot read config %s: %s", path, strerror(errno));
	struct stat st;
	int ret = -1;
	char *text = NULL;
	if (fstat(fd, &st)) {
		cs_fail(errmsg, errlen, "cannot read config %s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		cs_fail(errmsg, errlen, "config %s is not a regular file", path);
		goto out;
	}
	const char *why = cs_config_untrusted(st.st_uid, st.st_mode, false, geteuid());
	if (why) {
		cs_fail(errmsg, errlen, "refusing config %s: %s (make it root's and writable only by root: "
			"chown root %s; chmod go-w %s)", path, why, path, path);
		goto out;
	}
	if (check_directories(path, real, errmsg, errlen))
		goto out;
	if (st.st_size > CS_CONFIG_MAX_BYTES) {
		cs_fail(errmsg, errlen, "config %s is larger than %d bytes: is it the right file?", path,
			CS_CONFIG_MAX_BYTES);
		goto out;
	}
	text = malloc(CS_CONFIG_MAX_BYTES + 1);
	if (!text) {
		cs_fail(errmsg, errlen, "out of memory");
		goto out;
	}
	size_t have = 0;
	for (;;) {
		ssize_t n = read(fd, text + have, CS_CONFIG_MAX_BYTES + 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			cs_fail(errmsg, errlen, "cannot read config %s: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		have += (size_t)n;
		if (have > CS_CONFIG_MAX_BYTES) {
			cs_fail(errmsg, errlen, "config %s is larger than %d bytes", path, CS_CONFIG_MAX_BYTES);
			goto out;
		}
	}
	ret = cs_config_parse(text, have, path, config, errmsg, errlen);
out:
	free(text);
	close(fd);
	return ret;
}
