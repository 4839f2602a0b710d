// SPDX-License-Identifier: BSD-2-Clause
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static atomic_bool log_quiet;

void cs_log_set_quiet(bool quiet)
{
	atomic_store(&log_quiet, quiet);
}

static void log_line(const char *level, const char *fmt, va_list ap)
{
	char line[1024];
	int saved_errno = errno;
	int len = snprintf(line, sizeof(line), "csserver: %s", level);

	if (len < 0)
		return;
	int n = vsnprintf(line + len, sizeof(line) - (size_t)len, fmt, ap);
	if (n < 0)
		return;
	len += n;
	if ((size_t)len >= sizeof(line) - 1)
		len = (int)sizeof(line) - 2; /* truncated: keep the newline */
	line[len++] = '\n';
	/* Best effort: there is nowhere to report a failed write to stderr. */
	if (write(STDERR_FILENO, line, (size_t)len) < 0) {
	}
	errno = saved_errno;
}

void cs_log_info(const char *fmt, ...)
{
	va_list ap;

	if (atomic_load(&log_quiet))
		return;
	va_start(ap, fmt);
	log_line("", fmt, ap);
	va_end(ap);
}

void cs_log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line("warning: ", fmt, ap);
	va_end(ap);
}

void cs_log_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line("error: ", fmt, ap);
	va_end(ap);
}

bool cs_log_ratelimit(_Atomic uint64_t *last_ns, uint64_t now_ns, uint64_t interval_ns)
{
	uint64_t last = atomic_load(last_ns);

	if (last != 0 && now_ns - last < interval_ns)
		return false;
	/* Only the thread that moves the stamp forward prints. */
	return atomic_compare_exchange_strong(last_ns, &last, now_ns);
}
