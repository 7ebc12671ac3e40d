/* SPDX-License-Identifier: BSD-2-Clause */
/* kvmclock's arithmetic (hv/vdev/pvclock.c): the scale a guest applies to
 * TSC deltas gives nanoseconds within a part per million over the range
 * of TSC rates, the shift and multiplier stay in the ABI's ranges, and the
 * wall clock and MSR checks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "hv/vdev/pvclock.h"

static void check_rate(uint64_t hz)
{
	struct pvclock_time t;
	uint64_t base = 123456789ull * 1000;

	pvclock_fill(&t, hz, base, 5000000000ull, 4);
	assert_true(t.tsc_to_system_mul >= 1u << 30);	/* precise: near 2^31 or more */
	assert_true(t.tsc_shift >= -31 && t.tsc_shift <= 31);
	assert_int_equal(t.version, 4);
	assert_int_equal(t.flags, PVCLOCK_TSC_STABLE);
	assert_int_equal(pvclock_read(&t, base), 5000000000ull);
	/* ten seconds of TSC ticks read as ten seconds, within 1 ppm */
	uint64_t ns = pvclock_read(&t, base + hz * 10) - 5000000000ull;
	assert_true(ns > 10000000000ull - 10000 && ns < 10000000000ull + 10000);
	/* and one tick is at most a microsecond (1 MHz) */
	assert_true(pvclock_read(&t, base + 1) - 5000000000ull <= 1000);
}

static void test_scale_over_the_range(void **state)
{
	static const uint64_t rates[] = {
		1000000ull, 33333333ull, 999999999ull, 1000000000ull, 1000000001ull,
		2000000000ull, 2000000001ull, 2096814000ull, 3600000000ull, 4000000001ull,
		9999999999ull, 10000000000ull,
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		check_rate(rates[i]);
}

static void test_wall_clock(void **state)
{
	struct pvclock_wall w;

	(void)state;
	pvclock_wall_fill(&w, 1796367174ull * 1000000000ull + 500, 20000000000ull, 2);
	assert_int_equal(w.version, 2);
	assert_int_equal(w.sec, 1796367154u);
	assert_int_equal(w.nsec, 500);
	pvclock_wall_fill(&w, 5, 20, 2);		/* a clock before 1970: 0 */
	assert_int_equal(w.sec, 0);
}

static void test_msr_values(void **state)
{
	(void)state;
	assert_true(pvclock_msr_valid(0, 36));
	assert_true(pvclock_msr_valid(0x12345 << 1, 36));	/* disabled: anything */
	assert_true(pvclock_msr_valid(0x1000 | 1, 36));
	assert_true(pvclock_msr_valid(0x1fe0 | 1, 36));
	assert_false(pvclock_msr_valid(0x1fe4 | 1, 36));	/* crosses a page */
	assert_false(pvclock_msr_valid(0x1002 | 1, 36));	/* misaligned */
	assert_false(pvclock_msr_valid((1ull << 36) | 1, 36));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scale_over_the_range),
		cmocka_unit_test(test_wall_clock),
		cmocka_unit_test(test_msr_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
