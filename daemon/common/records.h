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

/*
 * Its size in a stream of an older wire version (a recorded trace). A
 * record that grew only grew at its end: read at this size, the rest is 0.
 */
size_t cs_record_size_in(uint16_t type, uint32_t wire_version);

#endif /* CS_RECORDS_H */
