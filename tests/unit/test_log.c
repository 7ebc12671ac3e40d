/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The log (hv/lib/log.c): lines reach the ring and, by level, the console sink;
 * while the console is held for a guest, console lines wait and come out
 * whole, in order, at the flush, with overflow counted rather than split.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "hv/lib/log.h"
#include "hv/lib/time.h"
#include "hv/lib/panic.h"

static uint64_t now_us = 1500000;
uint64_t time_now_us(void) { return now_us; }

static char out[16384];
static size_t out_len;

static void sink(const char *buf, size_t len)
{
	assert_true(out_len + len < sizeof(out));
	memcpy(out + out_len, buf, len);
	out_len += len;
	out[out_len] = 0;
}

static char dumped[70000];
static size_t dumped_len;

static void dump_fn(const char *buf, size_t len, void *arg)
{
	(void)arg;
	assert_true(dumped_len + len < sizeof(dumped));
	memcpy(dumped + dumped_len, buf, len);
	dumped_len += len;
	dumped[dumped_len] = 0;
}

static int setup(void **state)
{
	(void)state;
	out_len = 0;
	out[0] = 0;
	dumped_len = 0;
	log_set_sink(sink);
	log_set_level(LOG_INFO);
	log_console_hold(false);
	out_len = 0;
	out[0] = 0;
	return 0;
}

static void test_stamp_level_and_newline(void **state)
{
	(void)state;
	pr_info("vm %s: started", "a");
	pr_warn("low on %s\n", "frames");
	pr_debug("not on the console");
	assert_string_equal(out, "[    1.500000] vm a: started\n"
				 "[    1.500000] warning: low on frames\n");
	log_dump(dump_fn, NULL);
	assert_non_null(strstr(dumped, "debug: not on the console\n"));
}

static void test_hold_keeps_lines_until_flush(void **state)
{
	(void)state;
	log_console_hold(true);
	pr_info("one");
	pr_err("two");
	assert_int_equal(out_len, 0);
	assert_true(log_console_flush());
	assert_string_equal(out, "[    1.500000] one\n[    1.500000] error: two\n");
	assert_false(log_console_flush());
	pr_info("three");
	assert_non_null(strstr(out, "two\n"));
	assert_null(strstr(out, "three"));
	log_console_hold(false);	/* releasing flushes */
	assert_non_null(strstr(out, "] three\n"));
	out_len = 0;
	pr_info("four");		/* and lines go straight out again */
	assert_string_equal(out, "[    1.500000] four\n");
}

static void test_hold_overflow_is_counted_not_split(void **state)
{
	char big[300];

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	log_console_hold(true);
	for (int i = 0; i < 40; i++)
		pr_info("%02d %s", i, big);
	log_console_hold(false);
	/* every line that came out is whole; the rest are counted */
	size_t lines = 0;
	for (char *p = out; (p = strchr(p, '\n')); p++)
		lines++;
	assert_true(lines > 5 && lines < 40);
	char note[80];
	snprintf(note, sizeof(note), "(%zu more log lines; `log` has them)\n", 40 - (lines - 1));
	assert_non_null(strstr(out, note));
	for (char *p = out; *p == '[';) {
		char *nl = strchr(p, '\n');
		assert_int_equal(nl - p, 15 + 3 + 299);
		p = nl + 1;
	}
	/* the ring has all of them */
	log_dump(dump_fn, NULL);
	assert_non_null(strstr(dumped, "] 39 xxx"));
}

static void test_ring_wrap_starts_on_a_line(void **state)
{
	(void)state;
	for (int i = 0; i < 2000; i++)
		pr_debug("filler line %04d with some text to wrap the ring", i);
	log_dump(dump_fn, NULL);
	assert_true(dumped_len <= 64 * 1024);
	assert_int_equal(dumped[0], '[');
	assert_non_null(strstr(dumped, "filler line 1999"));
	assert_null(strstr(dumped, "filler line 0000"));
}

/* The crash report's backtrace follows a frame only up its own stack:
 * garbage in RBP (code without frame pointers) ends it, never faults. */
static void test_panic_frames(void **state)
{
	const uint64_t sp = 0xffff800000120000ull;

	(void)state;
	assert_true(panic_frame_ok(sp + 0x40, sp, sp));
	assert_true(panic_frame_ok(sp + PANIC_STACK_SPAN - 24, sp + 0x50, sp));
	assert_false(panic_frame_ok(sp + PANIC_STACK_SPAN, sp, sp));	/* off the stack */
	assert_false(panic_frame_ok(sp - 8, sp - 8, sp));		/* below it */
	assert_false(panic_frame_ok(sp + 0x40, sp + 0x50, sp));		/* not upward */
	assert_false(panic_frame_ok(sp + 0x44, sp, sp));		/* misaligned */
	assert_false(panic_frame_ok(0x1000, 0, 0));			/* lower half */
	assert_false(panic_frame_ok(0xffffffffffffff00ull, sp, sp));	/* a data value */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_stamp_level_and_newline, setup),
		cmocka_unit_test_setup(test_hold_keeps_lines_until_flush, setup),
		cmocka_unit_test_setup(test_hold_overflow_is_counted_not_split, setup),
		cmocka_unit_test_setup(test_ring_wrap_starts_on_a_line, setup),
		cmocka_unit_test(test_panic_frames),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
