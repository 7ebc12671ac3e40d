/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for SVM ASID allocation and TLB flush decisions
 * (arch/x86/svm/asid.c): first use, reuse, roll-over, a vCPU moving
 * between CPUs, vm->gpa_gen changes with and without FlushByAsid, and a
 * model of each CPU's TLB driven by random schedules that checks no vCPU
 * ever runs with translations of another vCPU or of an older NPT.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/svm/svm.h"

static void test_first_run_flushes_all(void **state)
{
	struct svm_asid_cpu c;
	struct svm_asid_vcpu v;

	(void)state;
	svm_asid_cpu_init(&c, 16, true);
	svm_asid_vcpu_init(&v);
	assert_int_equal(c.max, 15);
	/* whatever the TLB holds from before ferry goes */
	assert_int_equal(svm_asid_prepare(&c, 0, &v, 0), VMCB_TLB_FLUSH_ALL);
	assert_int_equal(v.asid, 1);
	assert_int_equal(v.cpu, 0);
	assert_int_equal(v.generation, c.generation);
	/* again: same CPU, same generation, same NPT: nothing */
	assert_int_equal(svm_asid_prepare(&c, 0, &v, 0), VMCB_TLB_NONE);
	assert_int_equal(v.asid, 1);
	assert_int_equal(v.new_asids, 1);
}

static void test_distinct_asids(void **state)
{
	struct svm_asid_cpu c;
	struct svm_asid_vcpu v[5];

	(void)state;
	svm_asid_cpu_init(&c, 16, true);
	for (int i = 0; i < 5; i++) {
		svm_asid_vcpu_init(&v[i]);
		uint8_t tlb = svm_asid_prepare(&c, 0, &v[i], 0);
		assert_int_equal(tlb, i == 0 ? VMCB_TLB_FLUSH_ALL : VMCB_TLB_NONE);
		assert_int_equal(v[i].asid, (uint32_t)i + 1);
	}
}

static void test_gpa_gen_flush_by_asid(void **state)
{
	struct svm_asid_cpu c;
	struct svm_asid_vcpu v;

	(void)state;
	svm_asid_cpu_init(&c, 16, true);
	svm_asid_vcpu_init(&v);
	svm_asid_prepare(&c, 0, &v, 5);
	assert_int_equal(svm_asid_prepare(&c, 0, &v, 6), VMCB_TLB_FLUSH_ASID);
	assert_int_equal(v.asid, 1);			/* kept */
	assert_int_equal(v.gpa_gen, 6);
	assert_int_equal(svm_asid_prepare(&c, 0, &v, 6), VMCB_TLB_NONE);	/* once */
}

static void test_gpa_gen_without_flush_by_asid(void **state)
{
	struct svm_asid_cpu c;
	struct svm_asid_vcpu v, w;

	(void)state;
	svm_asid_cpu_init(&c, 4, false);
	svm_asid_vcpu_init(&v);
	svm_asid_vcpu_init(&w);
	svm_asid_prepare(&c, 0, &v, 1);			/* asid 1 */
	svm_asid_prepare(&c, 0, &w, 1);			/* asid 2 */
	/* a fresh ASID instead of flushing every guest's entries */
	assert_int_equal(svm_asid_prepare(&c, 0, &v, 2), VMCB_TLB_NONE);
	assert_int_equal(v.asid, 3);
	assert_int_equal(v.gpa_gen, 2);
	/* ASIDs exhausted: the next change rolls over and flushes all */
	assert_int_equal(svm_asid_prepare(&c, 0, &v, 3), VMCB_TLB_FLUSH_ALL);
	assert_int_equal(v.asid, 1);
	/* w's generation is old now: it must not keep ASID 2 */
	assert_int_equal(svm_asid_prepare(&c, 0, &w, 3), VMCB_TLB_NONE);
	assert_int_equal(w.asid, 2);
	assert_int_equal(w.generation, c.generation);
}

static void test_rollover(void **state)
{
	struct svm_asid_cpu c;
	struct svm_asid_vcpu v[4];
	uint64_t gen;

	(void)state;
	svm_asid_cpu_init(&c, 4, true);			/* ASIDs 1..3 */
	for (int i = 0; i < 3; i++) {
		svm_asid_vcpu_init(&v[i]);
		svm_asid_prepare(&c, 0, &v[i], 0);
	}
	gen = c.generation;
	svm_asid_vcpu_init(&v[3]);
	assert_int_equal(svm_asid_prepare(&c, 0, &v[3], 0), VMCB_TLB_FLUSH_ALL);
	assert_int_equal(v[3].asid, 1);
	assert_int_equal(c.generation, gen + 1);
	/* v[0] held ASID 1 in the old generation: it gets a new one */
	assert_int_equal(svm_asid_prepare(&c, 0, &v[0], 0), VMCB_TLB_NONE);
	assert_int_equal(v[0].asid, 2);
}

static void test_moved_vcpu(void **state)
{
	struct svm_asid_cpu c0, c1;
	struct svm_asid_vcpu v, other;

	(void)state;
	svm_asid_cpu_init(&c0, 16, true);
	svm_asid_cpu_init(&c1, 16, true);
	svm_asid_vcpu_init(&v);
	svm_asid_vcpu_init(&other);
	svm_asid_prepare(&c0, 0, &v, 0);		/* c0: asid 1 */
	svm_asid_prepare(&c1, 1, &other, 0);		/* c1: asid 1, flush all */
	assert_int_equal(svm_asid_prepare(&c1, 1, &v, 0), VMCB_TLB_NONE);
	assert_int_equal(v.asid, 2);			/* not c0's number */
	assert_int_equal(v.cpu, 1);
	/* back on CPU 0: its old ASID 1 there may hold stale entries (the NPT
	 * could have changed while it ran elsewhere): a new one */
	assert_int_equal(svm_asid_prepare(&c0, 0, &v, 0), VMCB_TLB_NONE);
	assert_int_equal(v.asid, 2);
	assert_int_equal(v.cpu, 0);
	assert_int_equal(v.new_asids, 3);
}

static void test_degenerate_asid_count(void **state)
{
	struct svm_asid_cpu c;
	struct svm_asid_vcpu a, b;

	(void)state;
	svm_asid_cpu_init(&c, 2, true);			/* only ASID 1 */
	svm_asid_vcpu_init(&a);
	svm_asid_vcpu_init(&b);
	assert_int_equal(svm_asid_prepare(&c, 0, &a, 0), VMCB_TLB_FLUSH_ALL);
	assert_int_equal(svm_asid_prepare(&c, 0, &b, 0), VMCB_TLB_FLUSH_ALL);
	assert_int_equal(svm_asid_prepare(&c, 0, &a, 0), VMCB_TLB_FLUSH_ALL);
	assert_int_equal(a.asid, 1);
	svm_asid_cpu_init(&c, 0, true);			/* nonsense count: still never 0 */
	assert_int_equal(svm_asid_prepare(&c, 0, &a, 0), VMCB_TLB_FLUSH_ALL);
	assert_int_equal(a.asid, 1);
}

/* ---- model check ----------------------------------------------------------------- */

#define NCPU	3
#define NVCPU	7
#define NVM	3
#define MAXASID	64

/* What a CPU's TLB may hold for one ASID: whose, and from which NPT. */
struct tlb_tag {
	bool used;
	int vcpu;
	uint64_t gpa_gen;
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void apply_flush(struct tlb_tag *tlb, uint8_t ctl, uint32_t asid)
{
	if (ctl == VMCB_TLB_FLUSH_ALL)
		memset(tlb, 0, sizeof(struct tlb_tag) * (MAXASID + 1));
	else if (ctl == VMCB_TLB_FLUSH_ASID)
		memset(&tlb[asid], 0, sizeof(tlb[asid]));
	else
		assert_int_equal(ctl, VMCB_TLB_NONE);
}

static void model_run(uint32_t nr_asids, bool flush_by_asid, int steps)
{
	static struct tlb_tag tlb[NCPU][MAXASID + 1];
	struct svm_asid_cpu c[NCPU];
	struct svm_asid_vcpu v[NVCPU];
	uint64_t gpa_gen[NVM] = { 0 };

	memset(tlb, 0, sizeof(tlb));
	for (int i = 0; i < NCPU; i++)
		svm_asid_cpu_init(&c[i], nr_asids, flush_by_asid);
	for (int i = 0; i < NVCPU; i++)
		svm_asid_vcpu_init(&v[i]);
	/* stale junk from before ferry in every TLB, under every ASID */
	for (int i = 0; i < NCPU; i++)
		for (int a = 0; a <= MAXASID; a++)
			tlb[i][a] = (struct tlb_tag){ true, -1, 0 };
	for (int s = 0; s < steps; s++) {
		if (rnd() % 5 == 0) {
			gpa_gen[rnd() % NVM]++;
			continue;
		}
		int cpu = (int)(rnd() % NCPU), vc = (int)(rnd() % NVCPU), vm = vc % NVM;
		uint8_t ctl = svm_asid_prepare(&c[cpu], cpu, &v[vc], gpa_gen[vm]);
		uint32_t asid = v[vc].asid;

		assert_true(asid >= 1 && asid <= c[cpu].max);
		apply_flush(tlb[cpu], ctl, asid);
		struct tlb_tag *t = &tlb[cpu][asid];
		if (t->used) {	/* what the guest may now hit must be its own and current */
			assert_int_equal(t->vcpu, vc);
			assert_int_equal(t->gpa_gen, gpa_gen[vm]);
		}
		*t = (struct tlb_tag){ true, vc, gpa_gen[vm] };
	}
}

static void test_model_many_asids(void **state)
{
	(void)state;
	model_run(64, true, 200000);
	model_run(64, false, 200000);
}

static void test_model_few_asids(void **state)
{
	(void)state;
	model_run(4, true, 200000);	/* roll-over all the time */
	model_run(4, false, 200000);
	model_run(2, true, 50000);
	model_run(16, false, 200000);	/* QEMU's count */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_run_flushes_all),
		cmocka_unit_test(test_distinct_asids),
		cmocka_unit_test(test_gpa_gen_flush_by_asid),
		cmocka_unit_test(test_gpa_gen_without_flush_by_asid),
		cmocka_unit_test(test_rollover),
		cmocka_unit_test(test_moved_vcpu),
		cmocka_unit_test(test_degenerate_asid_count),
		cmocka_unit_test(test_model_many_asids),
		cmocka_unit_test(test_model_few_asids),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
