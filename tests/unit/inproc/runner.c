// SPDX-License-Identifier: BSD-2-Clause
/*
 * Runs every unit test in this one process (see criterion/criterion.h
 * beside it): sorted by suite and name, each between its suite's .init and
 * .fini. Prints each failure and a summary; exits 1 if any test failed.
 *   usage: unit-tests-inproc [SUITE...]   (only those suites)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "criterion/criterion.h"

static struct cs_inproc_test *tests;
static struct cs_inproc_suite *suites;

/* Where a failed cr_assert* returns to, and whether the test has failed. */
static jmp_buf test_exit;
static bool test_failed;
static const struct cs_inproc_test *current;

void cs_inproc_register_test(struct cs_inproc_test *test)
{
	test->next = tests;
	tests = test;
}

void cs_inproc_register_suite(struct cs_inproc_suite *suite)
{
	suite->next = suites;
	suites = suite;
}

void cs_inproc_failed(bool fatal, const char *file, int line, const char *what, int has_message, ...)
{
	test_failed = true;
	fprintf(stderr, "%s::%s: %s:%d: %s failed: %s", current ? current->suite : "?",
		current ? current->name : "?", file, line, fatal ? "assertion" : "expectation", what);
	if (has_message) {
		va_list args;
		va_start(args, has_message);
		const char *format = va_arg(args, const char *);
		fputs(": ", stderr);
		vfprintf(stderr, format, args);
		va_end(args);
	}
	fputc('\n', stderr);
}

void cs_inproc_end_test(void)
{
	longjmp(test_exit, 1);
}

static const struct cs_inproc_suite *suite_named(const char *name)
{
	for (const struct cs_inproc_suite *s = suites; s; s = s->next)
		if (!strcmp(s->name, name))
			return s;
	return NULL;
}

static int by_suite_and_name(const void *a, const void *b)
{
	const struct cs_inproc_test *x = *(struct cs_inproc_test *const *)a;
	const struct cs_inproc_test *y = *(struct cs_inproc_test *const *)b;
	int order = strcmp(x->suite, y->suite);

	return order ? order : strcmp(x->name, y->name);
}

static bool wanted(const char *suite, int argc, char **argv)
{
	if (argc < 2)
		return true;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], suite))
			return true;
	return false;
}

/* One test: .init, the test, .fini; false if any of them failed. */
static bool run_one(const struct cs_inproc_test *test)
{
	/* volatile: read after a longjmp back into this frame. */
	const struct cs_inproc_suite *volatile suite = suite_named(test->suite);
	volatile bool initialised = false;

	current = test;
	test_failed = false;
	if (!setjmp(test_exit)) {
		if (suite && suite->init)
			suite->init();
		initialised = true;
		test->run();
	}
	if (initialised && suite && suite->fini && !setjmp(test_exit))
		suite->fini();
	current = NULL;
	return !test_failed;
}

int main(int argc, char **argv)
{
	size_t count = 0, failed = 0, ran = 0;

	for (const struct cs_inproc_test *t = tests; t; t = t->next)
		count++;
	struct cs_inproc_test **sorted = calloc(count ? count : 1, sizeof(*sorted));
	if (!sorted) {
		fprintf(stderr, "unit-tests-inproc: out of memory\n");
		return 1;
	}
	count = 0;
	for (struct cs_inproc_test *t = tests; t; t = t->next)
		sorted[count++] = t;
	qsort(sorted, count, sizeof(*sorted), by_suite_and_name);
	for (size_t i = 0; i < count; i++) {
		if (!wanted(sorted[i]->suite, argc, argv))
			continue;
		ran++;
		if (!run_one(sorted[i]))
			failed++;
	}
	free(sorted);
	printf("unit-tests-inproc: %zu tests, %zu passed, %zu failed\n", ran, ran - failed, failed);
	return failed || !ran ? 1 : 0;
}
