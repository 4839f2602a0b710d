/* SPDX-License-Identifier: BSD-2-Clause */
/* csload command line and target parsing: pure code, errors to a FILE *. */
#ifndef CSLOAD_OPTS_H
#define CSLOAD_OPTS_H

#include <stdio.h>

#include "csload.h"

/* What csl_opts_parse() decided. */
enum csl_opts_result {
	CSL_OPTS_RUN,   /* cfg is complete and valid */
	CSL_OPTS_HELP,  /* --help was printed to out */
	CSL_OPTS_USAGE, /* an error was printed to err: exit 2 */
};

void csl_opts_defaults(struct csl_config *cfg);
enum csl_opts_result csl_opts_parse(int argc, char **argv, struct csl_config *cfg,
				    FILE *out, FILE *err);
void csl_opts_usage(FILE *out);

/*
 * Parses a numeric IPv4/IPv6 address (or the word "localhost", taken as
 * 127.0.0.1; no name is ever looked up, so no DNS query leaves the host)
 * and checks that it is loopback: 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104.
 * Returns 0, or -1 with a message in errbuf.
 */
int csl_target_parse(const char *host, uint16_t port, struct sockaddr_storage *addr,
		     socklen_t *addr_len, char *errbuf, size_t errlen);

/* Splits "PATH:FRACTION" at its last ':'. Returns 0 or -1 with errbuf set. */
int csl_mix_parse(const char *arg, struct csl_path *out, char *errbuf, size_t errlen);

/* A request path: starts with '/', printable ASCII without spaces. */
bool csl_path_valid(const char *path);

#endif /* CSLOAD_OPTS_H */
