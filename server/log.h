/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Diagnostics on stderr, one whole line per write(2) so that lines from
 * different threads never interleave. Data (the "listening" line) goes to
 * stdout and is not written through here.
 */
#ifndef CS_LOG_H
#define CS_LOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

void cs_log_set_quiet(bool quiet);

/* Informational: start-up details and the exit summary; --quiet drops them. */
void cs_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Something is wrong but the server goes on. Always printed. */
void cs_log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The server cannot go on (or start). Always printed. */
void cs_log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * For messages that could repeat thousands of times a second (EMFILE on
 * accept): true at most once per interval_ns, across threads, for each
 * last_ns variable.
 */
bool cs_log_ratelimit(_Atomic uint64_t *last_ns, uint64_t now_ns, uint64_t interval_ns);

#endif /* CS_LOG_H */
