/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What clang's static analyzer cannot see in libraries we call, told to
 * it for `make lint` only (clang-tidy -include this file; never compiled
 * into a program).
 *
 * bpftool's generated skeleton (build/connscope.skel.h) allocates its
 * bpf_object_skeleton and, on a failed allocation further on, hands it to
 * libbpf's bpf_object__destroy_skeleton(), which frees it. Without this
 * the analyzer reports the generated code as leaking it.
 */
#ifndef CS_LINT_ANALYZER_MODELS_H
#define CS_LINT_ANALYZER_MODELS_H

struct bpf_object_skeleton;
void bpf_object__destroy_skeleton(struct bpf_object_skeleton *s)
	__attribute__((ownership_takes(malloc, 1)));

#endif
