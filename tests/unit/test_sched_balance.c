/* SPDX-License-Identifier: BSD-2-Clause */
/* The load balancer's decision (hv/sched/balance.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "hv/sched/balance.h"

#define ANY UINT64_MAX
#define CPUS_1_TO_4 0x1eull		/* CPU 0 is the shell's */

static struct bal_vcpu hog(int cpu)
{
	return (struct bal_vcpu){ .cpu = cpu, .affinity = ANY, .demand = 1000 };
}

static void test_two_hogs_on_one_cpu_split(void **s)
{
	struct bal_vcpu v[] = { hog(1), hog(1) };
	struct bal_move m;

	(void)s;
	assert_true(bal_pick(v, 2, CPUS_1_TO_4, &m));
	assert_int_equal(m.to, 2);		/* the first of the empty ones */
	v[m.vcpu].cpu = (int)m.to;
	assert_false(bal_pick(v, 2, CPUS_1_TO_4, &m));	/* 1000 and 1000: done */
}

static void test_uneven_but_not_improvable_stays(void **s)
{
	struct bal_vcpu v[] = { hog(1), hog(1), hog(2) };
	struct bal_move m;

	(void)s;
	assert_false(bal_pick(v, 3, 0x6, &m));	/* 2000 / 1000 on two CPUs */
	assert_true(bal_pick(v, 3, CPUS_1_TO_4, &m));	/* a third CPU helps */
	assert_int_equal(m.to, 3);
	assert_int_equal(v[m.vcpu].cpu, 1);
}

static void test_pinned_and_settled_vcpus_stay(void **s)
{
	struct bal_vcpu v[] = { hog(1), hog(1) };
	struct bal_move m;

	(void)s;
	v[0].affinity = v[1].affinity = 1ull << 1;
	assert_false(bal_pick(v, 2, CPUS_1_TO_4, &m));
	v[1].affinity = ANY;			/* only the unpinned one moves */
	assert_true(bal_pick(v, 2, CPUS_1_TO_4, &m));
	assert_int_equal(m.vcpu, 1);
	v[1].settled = true;
	assert_false(bal_pick(v, 2, CPUS_1_TO_4, &m));
	v[1].settled = false;
	v[1].affinity = (1ull << 1) | (1ull << 4);	/* may only go to CPU 4 */
	assert_true(bal_pick(v, 2, CPUS_1_TO_4, &m));
	assert_int_equal(m.to, 4);
}

static void test_idle_vcpus_are_not_moved(void **s)
{
	struct bal_vcpu v[8];
	struct bal_move m;

	(void)s;
	for (int i = 0; i < 8; i++)
		v[i] = (struct bal_vcpu){ .cpu = 1, .affinity = ANY, .demand = 40 };
	assert_false(bal_pick(v, 8, CPUS_1_TO_4, &m));	/* 320: not overloaded */
	v[0].demand = v[1].demand = 600;		/* 1520, two worth moving */
	assert_true(bal_pick(v, 8, CPUS_1_TO_4, &m));
	assert_true(m.vcpu <= 1);
}

static void test_the_least_loaded_allowed_cpu_is_chosen(void **s)
{
	struct bal_vcpu v[] = { hog(1), hog(1), hog(2), hog(3) };
	struct bal_move m;

	(void)s;
	v[3].demand = 300;			/* CPU 3 is lighter than CPU 2 */
	assert_true(bal_pick(v, 4, CPUS_1_TO_4, &m));
	assert_int_equal(m.to, 4);		/* empty */
	assert_true(bal_pick(v, 4, 0xe, &m));	/* CPU 4 cannot take one */
	assert_int_equal(m.to, 3);
	assert_false(bal_pick(v, 4, 0x6, &m));	/* only CPU 2 (1000): no gain */
	assert_false(bal_pick(v, 4, 0, &m));
}

static void test_unplaced_vcpus_are_ignored(void **s)
{
	struct bal_vcpu v[] = { hog(-1), hog(-1), hog(1) };
	struct bal_move m;

	(void)s;
	assert_false(bal_pick(v, 3, CPUS_1_TO_4, &m));
	assert_false(bal_pick(v, 0, CPUS_1_TO_4, &m));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_hogs_on_one_cpu_split),
		cmocka_unit_test(test_uneven_but_not_improvable_stays),
		cmocka_unit_test(test_pinned_and_settled_vcpus_stay),
		cmocka_unit_test(test_idle_vcpus_are_not_moved),
		cmocka_unit_test(test_the_least_loaded_allowed_cpu_is_chosen),
		cmocka_unit_test(test_unplaced_vcpus_are_ignored),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
