/* SPDX-License-Identifier: BSD-2-Clause */
/* hv/conwatch.c: Linux's panic banner on a guest's console. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "hv/conwatch.h"

static uint64_t now_ns = 1000000000ull;

/* Feed text at now_ns; the number of banners seen, the last reason in why. */
static int feed(struct conwatch *w, const char *text, char *why, size_t len)
{
	int hits = 0;

	for (const char *p = text; *p; p++)
		hits += conwatch_byte(w, (uint8_t)*p, now_ns, why, len);
	return hits;
}

/* A real early panic as Debian's 6.1 prints it (console=ttyS0). */
static void test_early_panic(void **st)
{
	struct conwatch w = { 0 };
	char why[128] = "";

	(void)st;
	assert_int_equal(feed(&w, "[    2.101] Kernel panic - not syncing: VFS: Unable to mount "
			      "root fs on unknown-block(0,0)\r\n[    2.102] CPU: 0 PID: 1 Comm: "
			      "swapper/0 Not tainted 6.1.0-28-amd64 #1  Debian 6.1.119-1\r\n",
			      why, sizeof(why)), 0);	/* the first line is not the end */
	assert_int_equal(feed(&w, "[    2.140] ---[ end Kernel panic - not syncing: VFS: Unable "
			      "to mount root fs on unknown-block(0,0) ]---\r\n", why, sizeof(why)), 1);
	assert_string_equal(why, "VFS: Unable to mount root fs on unknown-block(0,0)");
}

/* Only once the end line is complete (its end may never come), and only
 * after an opening line with the same reason. */
static void test_needs_the_whole_line(void **st)
{
	struct conwatch w = { 0 };
	char why[64];

	(void)st;
	assert_int_equal(feed(&w, "---[ end Kernel panic - not syncing: sysrq triggered crash ]---\n",
			      why, sizeof(why)), 0);	/* no opening line: someone's echo */
	assert_int_equal(feed(&w, "Kernel panic - not syncing: another\n", why, sizeof(why)), 0);
	assert_int_equal(feed(&w, "---[ end Kernel panic - not syncing: sysrq triggered crash ]---\n",
			      why, sizeof(why)), 0);	/* not the panic that opened */
	assert_int_equal(feed(&w, "Kernel panic - not syncing: sysrq triggered crash\r\n", why,
			      sizeof(why)), 0);
	assert_int_equal(feed(&w, "---[ end Kernel panic - not syncing: sysrq triggered crash ]---",
			      why, sizeof(why)), 0);
	assert_int_equal(feed(&w, "\n", why, sizeof(why)), 1);
	assert_string_equal(why, "sysrq triggered crash");
	/* no tail: some other text, not the banner */
	assert_int_equal(feed(&w, "---[ end Kernel panic - not syncing: cut\n", why, sizeof(why)), 0);
	/* ordinary output, a WARN's end marker */
	assert_int_equal(feed(&w, "---[ end trace 0000000000000000 ]---\n", why, sizeof(why)), 0);
}

/* The reason is cut to the buffer and made printable. */
static void test_reason_cut_and_printable(void **st)
{
	struct conwatch w = { 0 };
	char why[8];

	(void)st;
	assert_int_equal(feed(&w, "Kernel panic - not syncing: ab\033cdefghij\n", why, sizeof(why)), 0);
	assert_int_equal(feed(&w, "---[ end Kernel panic - not syncing: ab\033cdefghij ]---\n",
			      why, sizeof(why)), 1);
	assert_string_equal(why, "ab?cdef");
}

/* A line longer than the buffer is skipped whole, even if it ends like
 * the banner, and the next line is read again. */
static void test_long_line_skipped(void **st)
{
	struct conwatch w = { 0 };
	char why[64], line[CONWATCH_LINE * 2];

	(void)st;
	memset(line, 'x', sizeof(line));
	line[sizeof(line) - 1] = 0;
	assert_int_equal(feed(&w, "Kernel panic - not syncing: late\n", why, sizeof(why)), 0);
	assert_int_equal(feed(&w, line, why, sizeof(why)), 0);
	assert_int_equal(feed(&w, "---[ end Kernel panic - not syncing: late ]---\n", why,
			      sizeof(why)), 0);
	assert_int_equal(feed(&w, "Kernel panic - not syncing: next\n", why, sizeof(why)), 0);
	assert_int_equal(feed(&w, "---[ end Kernel panic - not syncing: next ]---\n", why,
			      sizeof(why)), 1);
	assert_string_equal(why, "next");
}

/* A banner that fills the line buffer exactly still counts. */
static void test_full_line(void **st)
{
	static const char b[] = "---[ end Kernel panic - not syncing: z ]---";
	struct conwatch w = { 0 };
	char why[8], line[CONWATCH_LINE + 2];
	size_t pad = CONWATCH_LINE - (sizeof(b) - 1);

	(void)st;
	memset(line, ' ', pad);
	memcpy(line + pad, b, sizeof(b) - 1);
	line[CONWATCH_LINE] = '\n';
	line[CONWATCH_LINE + 1] = 0;
	assert_int_equal(feed(&w, "Kernel panic - not syncing: z\n", why, sizeof(why)), 0);
	assert_int_equal(feed(&w, line, why, sizeof(why)), 1);
	assert_string_equal(why, "z");
}

/* A reason longer than what is kept: the end line must start the same. */
static void test_long_reason(void **st)
{
	struct conwatch w = { 0 };
	char why[200], open[200], end[200], r[120];

	(void)st;
	memset(r, 'r', sizeof(r) - 1);
	r[sizeof(r) - 1] = 0;
	snprintf(open, sizeof(open), "Kernel panic - not syncing: %s\n", r);
	snprintf(end, sizeof(end), "---[ end Kernel panic - not syncing: %s ]---\n", r);
	assert_int_equal(feed(&w, open, why, sizeof(why)), 0);
	assert_int_equal(feed(&w, end, why, sizeof(why)), 1);
	assert_int_equal(strlen(why), CONWATCH_WHY - 1);	/* as told: cut */
	assert_memory_equal(why, r, CONWATCH_WHY - 1);
}

/* The end line is a panic only if the console then stays silent: a kernel
 * that panicked says nothing more; an old report printed by `cat` (or
 * `journalctl -k -b -1`, or pasted) is followed by a prompt. */
static void test_silence_after_the_end_line(void **st)
{
	static const char report[] =
		"[    2.101] Kernel panic - not syncing: Attempted to kill init!\r\n"
		"[    2.140] ---[ end Kernel panic - not syncing: Attempted to kill init! ]---\r\n";
	struct conwatch w = { 0 };
	char why[128] = "";

	(void)st;
	now_ns = 5000000000ull;
	assert_int_equal(feed(&w, report, why, sizeof(why)), 1);
	assert_false(conwatch_due(&w, now_ns + CONWATCH_QUIET_NS - 1, why, sizeof(why)));
	assert_true(conwatch_due(&w, now_ns + CONWATCH_QUIET_NS, why, sizeof(why)));
	assert_string_equal(why, "Attempted to kill init!");
	/* cat of the same report, then the shell's prompt: nothing */
	memset(&w, 0, sizeof(w));
	assert_int_equal(feed(&w, report, why, sizeof(why)), 1);
	now_ns += 3000000;
	assert_int_equal(feed(&w, "~ # ", why, sizeof(why)), 0);
	assert_false(conwatch_due(&w, now_ns + 10 * CONWATCH_QUIET_NS, why, sizeof(why)));
	/* blank lines after it change nothing */
	memset(&w, 0, sizeof(w));
	assert_int_equal(feed(&w, report, why, sizeof(why)), 1);
	assert_int_equal(feed(&w, "\r\n \r\n", why, sizeof(why)), 0);
	assert_true(conwatch_due(&w, now_ns + CONWATCH_QUIET_NS, why, sizeof(why)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_early_panic),
		cmocka_unit_test(test_needs_the_whole_line),
		cmocka_unit_test(test_reason_cut_and_printable),
		cmocka_unit_test(test_long_line_skipped),
		cmocka_unit_test(test_full_line),
		cmocka_unit_test(test_long_reason),
		cmocka_unit_test(test_silence_after_the_end_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
