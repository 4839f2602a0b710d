/* SPDX-License-Identifier: BSD-2-Clause */
/* Reading connscoped's configuration file (the format: config.h). */
#ifndef CS_CONFIG_FILE_H
#define CS_CONFIG_FILE_H

#include <stddef.h>

#include "config.h"

#define CS_CONFIG_DEFAULT_PATH "/etc/connscope/connscoped.conf"
#define CS_CONFIG_MAX_BYTES 65536

/*
 * Read and parse path into config (initialized by the caller). Refuses,
 * like sshd, a file that anyone but root (or the daemon's own user) owns
 * or may write, or that sits in a directory others may write. Returns 0,
 * or -1 with one line in errmsg: the file, the line when it is a parse
 * error, and what to do.
 */
int cs_config_load(const char *path, struct cs_daemon_config *config, char *errmsg, size_t errlen);

#endif /* CS_CONFIG_FILE_H */
