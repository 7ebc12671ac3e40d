/* SPDX-License-Identifier: BSD-2-Clause */
/* Cooperative tasks (arch/x86/task.c) on the host: the same stack switch
 * as ferry's, since the host is x86-64 with the same ABI. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "arch/x86/task.h"

void panic(const char *fmt, ...);
void panic(const char *fmt, ...)
{
	static char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	mock_assert(0, buf, __FILE__, __LINE__);
	abort();
}

static char trace[64];
static size_t tlen;

struct worker { char tag; int steps; enum task_want want; long sum; };

/* Writes its tag at each step; keeps a running sum in locals and
 * callee-saved registers across the yields. */
static void work(void *arg)
{
	struct worker *w = arg;
	volatile long local = 1000 * w->tag;
	long sum = 0;

	for (int i = 0; i < w->steps; i++) {
		trace[tlen++] = w->tag;
		sum += i * (long)w->tag;
		local += i;
		task_yield(w->want);
	}
	w->sum = sum + local;
}

static void drain(void)
{
	while (task_run_all() != TASK_NONE)
		;
}

static void test_tasks_interleave_in_order_and_keep_their_state(void **s)
{
	struct worker a = { 'a', 3, TASK_BUSY, 0 }, b = { 'b', 2, TASK_WAIT, 0 };

	(void)s;
	tlen = 0;
	memset(trace, 0, sizeof(trace));
	assert_non_null(task_spawn(work, &a, 0));
	assert_non_null(task_spawn(work, &b, 32 * 1024));
	assert_int_equal(task_count(), 2);
	assert_false(task_running());
	assert_int_equal(task_run_all(), TASK_SOME_BUSY);	/* a busy, b waits */
	assert_true(task_busy());
	assert_string_equal(trace, "ab");
	assert_int_equal(task_run_all(), TASK_SOME_BUSY);
	assert_string_equal(trace, "abab");
	/* b ends now (freed), a yields busy once more */
	assert_int_equal(task_run_all(), TASK_SOME_BUSY);
	assert_int_equal(task_count(), 1);
	assert_int_equal(b.sum, 1000 * 'b' + 1 + 'b');
	assert_int_equal(task_run_all(), TASK_NONE);	/* a ends */
	assert_int_equal(task_count(), 0);
	assert_false(task_busy());
	assert_string_equal(trace, "ababa");
	assert_int_equal(a.sum, 1000 * 'a' + 3 + 3 * 'a');
}

static void test_only_waiting_tasks_let_the_cpu_sleep(void **s)
{
	struct worker w = { 'w', 2, TASK_WAIT, 0 };

	(void)s;
	tlen = 0;
	assert_non_null(task_spawn(work, &w, 0));
	assert_int_equal(task_run_all(), TASK_ALL_WAIT);
	assert_false(task_busy());
	drain();
	assert_int_equal(task_count(), 0);
}

static enum task_poll inner;

static void nested(void *arg)
{
	(void)arg;
	inner = task_run_all();		/* from inside a task: nothing runs */
	assert_true(task_running());
}

static void test_no_nesting_and_yield_from_main_is_a_no_op(void **s)
{
	(void)s;
	task_yield(TASK_BUSY);		/* main context: returns at once */
	inner = TASK_SOME_BUSY;
	assert_non_null(task_spawn(nested, NULL, 0));
	assert_int_equal(task_run_all(), TASK_NONE);
	assert_int_equal(inner, TASK_NONE);
	assert_false(task_running());
}

static void idle(void *arg)
{
	int *n = arg;

	while (*n > 0) {
		(*n)--;
		task_yield(TASK_WAIT);
	}
}

static void test_at_most_task_max(void **s)
{
	int n[TASK_MAX + 1];

	(void)s;
	for (int i = 0; i < TASK_MAX; i++) {
		n[i] = 1;
		assert_non_null(task_spawn(idle, &n[i], 0));
	}
	n[TASK_MAX] = 1;
	assert_null(task_spawn(idle, &n[TASK_MAX], 0));
	drain();
	assert_int_equal(task_count(), 0);
	for (int i = 0; i < TASK_MAX; i++)
		assert_int_equal(n[i], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tasks_interleave_in_order_and_keep_their_state),
		cmocka_unit_test(test_only_waiting_tasks_let_the_cpu_sleep),
		cmocka_unit_test(test_no_nesting_and_yield_from_main_is_a_no_op),
		cmocka_unit_test(test_at_most_task_max),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
