/* SPDX-License-Identifier: BSD-2-Clause */
/* connscope's version: `connscope version` prints it, connscope_build_info exports it. */
#ifndef CS_VERSION_H
#define CS_VERSION_H

#define CS_VERSION "0.1"

#endif /* CS_VERSION_H */
