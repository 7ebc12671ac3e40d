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
#include "hv/lib/time.h"
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
	assert_true(pvclock_msr_valid(0x1fe4 | 1, 36));	/* across a page: KVM's ABI allows */
	assert_true(pvclock_msr_valid(0x1ffc | 1, 36));
	assert_false(pvclock_msr_valid(0x1002 | 1, 36));	/* misaligned */
	assert_false(pvclock_msr_valid((1ull << 36) | 1, 36));
}

/* Guest TSC scaling (hv/lib/tscscale.c): unscaled within TSC_NATIVE_PPM,
 * else a multiplier that turns a second of host ticks into a second of
 * guest ticks within a part per million, both ways over the range. */
static void test_tsc_mult(void **state)
{
	static const uint64_t rates[] = { 1000000ull, 200001000ull, 2098331000ull, 10000000000ull };

	(void)state;
	assert_true(tsc_mult_for(2000000000ull, 2000000000ull) == TSC_MULT_ONE);
	assert_true(tsc_mult_for(2000500000ull, 2000000000ull) == TSC_MULT_ONE);	/* 250 ppm */
	assert_true(tsc_mult_for(2000500001ull, 2000000000ull) != TSC_MULT_ONE);
	assert_true(tsc_mult_for(1999499999ull, 2000000000ull) != TSC_MULT_ONE);
	assert_true(tsc_mult_for(0, 2000000000ull) == TSC_MULT_ONE);		/* no rate known */
	for (size_t g = 0; g < 4; g++)
		for (size_t h = 0; h < 4; h++) {
			uint64_t m = tsc_mult_for(rates[g], rates[h]);
			uint64_t got = tsc_scaled(rates[h], m), want = rates[g];

			assert_true(got <= want && want - got <= want / 1000000 + 1);
		}
	assert_true(tsc_scaled(123456789ull, TSC_MULT_ONE) == 123456789ull);
	assert_true(tsc_scaled(3000, TSC_MULT_ONE / 3) == 999);	/* rounded down */
	/* bits 111:48 of the product: a large TSC wraps as the counter does */
	assert_true(tsc_scaled(1ull << 63, TSC_MULT_ONE * 4) == 0);
	assert_true(tsc_scaled((1ull << 62) + 5, TSC_MULT_ONE * 4) == 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scale_over_the_range),
		cmocka_unit_test(test_wall_clock),
		cmocka_unit_test(test_msr_values),
		cmocka_unit_test(test_tsc_mult),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
