/* SPDX-License-Identifier: BSD-2-Clause */
/* One-line error messages for the caller's buffer. */
#ifndef CS_ERRMSG_H
#define CS_ERRMSG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Format the message into errmsg and return code. */
static inline int cs_vfail(int code, char *errmsg, size_t errlen, const char *fmt, va_list ap)
{
	vsnprintf(errmsg, errlen, fmt, ap);
	return code;
}

/* Format the message into errmsg and return -1, for `return cs_fail(...)`. */
__attribute__((format(printf, 3, 4)))
static inline int cs_fail(char *errmsg, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int code = cs_vfail(-1, errmsg, errlen, fmt, ap);
	va_end(ap);
	return code;
}

/* The same, returning code (a negative errno) where callers tell failures apart. */
__attribute__((format(printf, 4, 5)))
static inline int cs_fail_code(int code, char *errmsg, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	code = cs_vfail(code, errmsg, errlen, fmt, ap);
	va_end(ap);
	return code;
}

#endif /* CS_ERRMSG_H */
