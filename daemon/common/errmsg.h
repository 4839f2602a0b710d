/* SPDX-License-Identifier: BSD-2-Clause */
/* One-line error messages for the caller's buffer. */
#ifndef CS_ERRMSG_H
#define CS_ERRMSG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Format the message into errmsg and return -1, for `return cs_fail(...)`. */
__attribute__((format(printf, 3, 4)))
static inline int cs_fail(char *errmsg, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(errmsg, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

#endif /* CS_ERRMSG_H */
