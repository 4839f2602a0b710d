/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The part of Criterion's API that the unit tests use, for one process:
 * tests/unit/inproc/runner.c runs every test one after the other in the
 * process that valgrind watches (make test-valgrind).
 *
 * Why: Criterion runs each test in a process of its own, re-executed from
 * the test binary; under valgrind each such start costs about 1.4 CPU
 * seconds (its tool start, the debug info of libc, and ld.so relocating
 * libcriterion's twenty libraries under memcheck): 7 CPU minutes for the
 * suite, against seconds for the tests themselves.
 *
 * The build of build/unit-tests-inproc puts this directory first on the
 * include path, so the test sources compile unchanged. Same meanings as
 * Criterion's: a failed cr_assert* ends the test, a failed cr_expect*
 * marks it failed and goes on; a suite's .init and .fini run around each
 * of its tests. Unlike Criterion's, tests share the process: none may
 * leave global state behind for the next (valgrind's leak check at the
 * end sees whatever they leak).
 */
#ifndef CS_INPROC_CRITERION_H
#define CS_INPROC_CRITERION_H

#include <stdbool.h>
#include <string.h>

struct cs_inproc_suite {
	const char *name;
	void (*init)(void);
	void (*fini)(void);
	struct cs_inproc_suite *next;
};

struct cs_inproc_test {
	const char *suite;
	const char *name;
	void (*run)(void);
	struct cs_inproc_test *next;
};

void cs_inproc_register_test(struct cs_inproc_test *test);
void cs_inproc_register_suite(struct cs_inproc_suite *suite);
/* Report a failed check; has_message: 1 when a format and its arguments follow. */
void cs_inproc_failed(bool fatal, const char *file, int line, const char *what, int has_message, ...);
/* A failed cr_assert*: back to the runner, the test ended. */
__attribute__((noreturn)) void cs_inproc_end_test(void);

#define Test(suite, name)                                                              \
	static void cs_inproc_test_##suite##_##name(void);                                 \
	__attribute__((constructor)) static void cs_inproc_add_##suite##_##name(void)      \
	{                                                                                  \
		static struct cs_inproc_test test = { #suite, #name,                         \
						      cs_inproc_test_##suite##_##name, NULL }; \
		cs_inproc_register_test(&test);                                              \
	}                                                                                  \
	static void cs_inproc_test_##suite##_##name(void)

#define TestSuite(suite, ...)                                                          \
	__attribute__((constructor)) static void cs_inproc_add_suite_##suite(void)         \
	{                                                                                  \
		static struct cs_inproc_suite s = { .name = #suite, __VA_ARGS__ };           \
		cs_inproc_register_suite(&s);                                                \
	}

/* An optional message: a format and its arguments, as in Criterion. */
#define CS_INPROC_CHECK(fatal, ok, what, ...)                                          \
	do {                                                                               \
		if (!(ok)) {                                                               \
			cs_inproc_failed((fatal), __FILE__, __LINE__, (what),              \
					 0 __VA_OPT__(+1) __VA_OPT__(,) __VA_ARGS__);      \
			if (fatal)                                                         \
				cs_inproc_end_test();                                      \
		}                                                                          \
	} while (0)

#define cr_assert(c, ...) CS_INPROC_CHECK(true, (c), #c __VA_OPT__(,) __VA_ARGS__)
#define cr_expect(c, ...) CS_INPROC_CHECK(false, (c), #c __VA_OPT__(,) __VA_ARGS__)
#define cr_assert_not(c, ...) CS_INPROC_CHECK(true, !(c), "!(" #c ")" __VA_OPT__(,) __VA_ARGS__)
#define cr_expect_not(c, ...) CS_INPROC_CHECK(false, !(c), "!(" #c ")" __VA_OPT__(,) __VA_ARGS__)
#define cr_assert_fail(...) CS_INPROC_CHECK(true, false, "cr_assert_fail" __VA_OPT__(,) __VA_ARGS__)

#define CS_INPROC_CMP(fatal, a, op, b, ...)                                            \
	CS_INPROC_CHECK(fatal, ((a) op (b)), #a " " #op " " #b __VA_OPT__(,) __VA_ARGS__)
#define cr_assert_eq(a, b, ...) CS_INPROC_CMP(true, a, ==, b __VA_OPT__(,) __VA_ARGS__)
#define cr_expect_eq(a, b, ...) CS_INPROC_CMP(false, a, ==, b __VA_OPT__(,) __VA_ARGS__)
#define cr_assert_neq(a, b, ...) CS_INPROC_CMP(true, a, !=, b __VA_OPT__(,) __VA_ARGS__)
#define cr_expect_neq(a, b, ...) CS_INPROC_CMP(false, a, !=, b __VA_OPT__(,) __VA_ARGS__)
#define cr_assert_lt(a, b, ...) CS_INPROC_CMP(true, a, <, b __VA_OPT__(,) __VA_ARGS__)
#define cr_expect_lt(a, b, ...) CS_INPROC_CMP(false, a, <, b __VA_OPT__(,) __VA_ARGS__)
#define cr_assert_leq(a, b, ...) CS_INPROC_CMP(true, a, <=, b __VA_OPT__(,) __VA_ARGS__)
#define cr_expect_leq(a, b, ...) CS_INPROC_CMP(false, a, <=, b __VA_OPT__(,) __VA_ARGS__)
#define cr_assert_gt(a, b, ...) CS_INPROC_CMP(true, a, >, b __VA_OPT__(,) __VA_ARGS__)
#define cr_expect_gt(a, b, ...) CS_INPROC_CMP(false, a, >, b __VA_OPT__(,) __VA_ARGS__)
#define cr_assert_geq(a, b, ...) CS_INPROC_CMP(true, a, >=, b __VA_OPT__(,) __VA_ARGS__)
#define cr_expect_geq(a, b, ...) CS_INPROC_CMP(false, a, >=, b __VA_OPT__(,) __VA_ARGS__)

#define cr_assert_null(p, ...) CS_INPROC_CHECK(true, (p) == NULL, #p " == NULL" __VA_OPT__(,) __VA_ARGS__)
#define cr_expect_null(p, ...) CS_INPROC_CHECK(false, (p) == NULL, #p " == NULL" __VA_OPT__(,) __VA_ARGS__)
#define cr_assert_not_null(p, ...) CS_INPROC_CHECK(true, (p) != NULL, #p " != NULL" __VA_OPT__(,) __VA_ARGS__)
#define cr_expect_not_null(p, ...) CS_INPROC_CHECK(false, (p) != NULL, #p " != NULL" __VA_OPT__(,) __VA_ARGS__)

/* Criterion's: both strings, equal. */
/* A function, not a macro: each argument is evaluated once, as Criterion's are. */
static inline bool cs_inproc_str_eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}
#define CS_INPROC_STR_EQ(a, b) cs_inproc_str_eq((a), (b))
#define cr_assert_str_eq(a, b, ...) CS_INPROC_CHECK(true, CS_INPROC_STR_EQ(a, b), #a " equals " #b __VA_OPT__(,) __VA_ARGS__)
#define cr_expect_str_eq(a, b, ...) CS_INPROC_CHECK(false, CS_INPROC_STR_EQ(a, b), #a " equals " #b __VA_OPT__(,) __VA_ARGS__)
#define cr_assert_str_neq(a, b, ...) CS_INPROC_CHECK(true, !CS_INPROC_STR_EQ(a, b), #a " differs from " #b __VA_OPT__(,) __VA_ARGS__)
#define cr_expect_str_neq(a, b, ...) CS_INPROC_CHECK(false, !CS_INPROC_STR_EQ(a, b), #a " differs from " #b __VA_OPT__(,) __VA_ARGS__)

/* Criterion's: |actual - expected| <= epsilon, both ways. */
#define CS_INPROC_NEAR(a, b, eps) ((b) - (a) <= (eps) && (a) - (b) <= (eps))
#define cr_assert_float_eq(a, b, eps, ...) CS_INPROC_CHECK(true, CS_INPROC_NEAR(a, b, eps), #a " ~= " #b __VA_OPT__(,) __VA_ARGS__)
#define cr_expect_float_eq(a, b, eps, ...) CS_INPROC_CHECK(false, CS_INPROC_NEAR(a, b, eps), #a " ~= " #b __VA_OPT__(,) __VA_ARGS__)

#endif
