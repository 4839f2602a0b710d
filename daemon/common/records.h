/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The wire records' sizes (bpf/connscope.h): what every reader of a record
 * stream checks a record against, the trace file and the engine alike, so
 * it sits below both.
 */
#ifndef CS_RECORDS_H
#define CS_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "connscope.h"

/* Expected size of a record type, 0 if unknown. */
size_t cs_record_size(uint16_t type);

#endif /* CS_RECORDS_H */
