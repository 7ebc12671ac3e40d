/* SPDX-License-Identifier: BSD-2-Clause */
/* The guests' CPUID view and MSR allow-list (hv/cpuid.c, hv/msr.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "hv/cpuid.h"
#include "hv/msr.h"

static const struct cpuid_vcpu vcpu0 = { .vcpu_id = 0, .tsc_hz = 2500000000ull };
static const struct cpuid_vcpu vcpu3 = { .vcpu_id = 3, .tsc_hz = 2500000000ull };

static void test_cpuid_vendor_and_signature(void **state)
{
	struct cpuid_result r;
	char v[13] = { 0 };

	(void)state;
	cpuid_guest(0, 0, &vcpu0, &r);
	memcpy(v, &r.ebx, 4);
	memcpy(v + 4, &r.edx, 4);
	memcpy(v + 8, &r.ecx, 4);
	assert_string_equal(v, "GenuineIntel");
	assert_true(r.eax >= 1);
	cpuid_guest(0x40000000, 0, &vcpu0, &r);
	assert_int_equal(r.eax, 0x40000001);
	assert_memory_equal(&r.ebx, "ferr", 4);
	assert_memory_equal(&r.ecx, "y-hv", 4);
}

static void test_cpuid_hides_what_ferry_does_not_virtualise(void **state)
{
	struct cpuid_result r;

	(void)state;
	cpuid_guest(1, 0, &vcpu3, &r);
	assert_true(r.ecx & (1u << 31));		/* hypervisor */
	assert_false(r.ecx & (1u << 5));		/* VMX */
	assert_false(r.ecx & (1u << 3));		/* MONITOR */
	assert_false(r.ecx & (1u << 26));		/* XSAVE */
	assert_true(r.edx & (1u << 9));		/* local APIC (ferry's model) */
	assert_true(r.ecx & (1u << 21));		/* x2APIC */
	assert_true(r.ecx & (1u << 24));		/* TSC-deadline timer */
	assert_true(r.edx & (1u << 25));		/* SSE */
	assert_int_equal(r.ebx >> 24, 3);		/* APIC id = vCPU id */
	cpuid_guest(0x80000001, 0, &vcpu0, &r);
	assert_false(r.ecx & (1u << 2));		/* SVM */
	assert_true(r.edx & (1u << 29));		/* long mode */
	cpuid_guest(4, 0, &vcpu0, &r);
	assert_int_equal(r.eax & 0x1f, 0);		/* cache list ends at once */
	cpuid_guest(7, 0, &vcpu0, &r);
	assert_int_equal(r.eax | r.ebx | r.ecx, 0);	/* one subleaf, no features ... */
	assert_int_equal(r.edx, 1u << 29);		/* ... but IA32_ARCH_CAPABILITIES */
	cpuid_guest(7, 1, &vcpu0, &r);
	assert_int_equal(r.eax | r.ebx | r.ecx | r.edx, 0);
	cpuid_guest(0x8000001f, 0, &vcpu0, &r);		/* SEV: absent */
	assert_int_equal(r.eax | r.ebx | r.ecx | r.edx, 0);
}

/* Linux reads the TSC rate from leaf 0x15 (tsc = crystal * ebx / eax)
 * and finds kvmclock by scanning the hypervisor leaves in 0x100 steps. */
static void test_cpuid_tsc_rate_and_kvm_leaves(void **state)
{
	struct cpuid_result r;
	const struct cpuid_vcpu odd = { .vcpu_id = 1, .tsc_hz = 1234567890ull };

	(void)state;
	cpuid_guest(0, 0, &vcpu0, &r);
	assert_true(r.eax >= 0x15);
	cpuid_guest(0x15, 0, &vcpu0, &r);
	assert_int_equal((uint64_t)r.ecx * r.ebx / r.eax, 2500000000ull);
	cpuid_guest(0x15, 0, &odd, &r);
	assert_int_equal((uint64_t)r.ecx * r.ebx / r.eax, 1235000000ull);	/* MHz */
	cpuid_guest(6, 0, &vcpu0, &r);
	assert_true(r.eax & (1u << 2));			/* ARAT */
	cpuid_guest(0xb, 0, &odd, &r);
	assert_int_equal(r.edx, 1);			/* x2APIC id */
	cpuid_guest(0xb, 5, &odd, &r);			/* past the levels: invalid */
	assert_int_equal(r.ecx, 5);			/* type 0, the subleaf echoed */
	assert_int_equal(r.eax | r.ebx, 0);
	assert_int_equal(r.edx, 1);
	cpuid_guest(KVM_CPUID_BASE, 0, &vcpu0, &r);
	assert_int_equal(r.eax, KVM_CPUID_BASE + 1);
	assert_memory_equal(&r.ebx, "KVMK", 4);
	assert_memory_equal(&r.ecx, "VMKV", 4);
	assert_memory_equal(&r.edx, "M\0\0\0", 4);
	cpuid_guest(KVM_CPUID_BASE + 1, 0, &vcpu0, &r);
	assert_int_equal(r.eax, KVM_FEATURE_CLOCKSOURCE2 | KVM_FEATURE_CLOCKSOURCE_STABLE |
				KVM_FEATURE_PV_EOI);
	assert_int_equal(r.eax, (1u << 3) | (1u << 6) | (1u << 24));	/* as Linux numbers them */
	cpuid_guest(0x80000007, 0, &vcpu0, &r);
	assert_false(r.edx & (1u << 8));	/* no invariant TSC: kvmclock stays the clock */
}

static void test_cpuid_is_deterministic(void **state)
{
	struct cpuid_result a, b;

	(void)state;
	for (uint32_t leaf = 0; leaf < 0x20; leaf++) {
		cpuid_guest(leaf, 0, &vcpu0, &a);
		cpuid_guest(leaf, 0, &vcpu0, &b);
		assert_memory_equal(&a, &b, sizeof(a));
	}
}

/* IA32_ARCH_CAPABILITIES is there for every guest (leaf 7, the same on
 * every host, so the migration baseline does not change); what it says of
 * Meltdown is the guest's own, fixed at creation. */
static void test_arch_capabilities(void **state)
{
	const struct cpuid_vcpu safe = { .vcpu_id = 0, .tsc_hz = 2500000000ull, .rdcl_no = true };
	struct cpuid_result a, b;

	(void)state;
	assert_int_equal(cpuid_arch_caps(&vcpu0), 0);
	assert_int_equal(cpuid_arch_caps(&safe), ARCH_CAP_RDCL_NO);
	assert_int_equal(ARCH_CAP_RDCL_NO, 1);		/* bit 0 (SDM Vol. 4, Table 2-2) */
	for (uint32_t leaf = 0; leaf <= 0x15; leaf++) {
		cpuid_guest(leaf, 0, &vcpu0, &a);
		cpuid_guest(leaf, 0, &safe, &b);
		assert_memory_equal(&a, &b, sizeof(a));
	}
}

static void test_baseline_check(void **state)
{
	uint32_t all[4] = { ~0u, ~0u, ~0u, ~0u }, none[4] = { 0 }, miss[4];

	(void)state;
	cpuid_baseline_missing(all, miss);
	assert_int_equal(miss[0] | miss[1] | miss[2] | miss[3], 0);
	cpuid_baseline_missing(none, miss);
	assert_true(miss[1] & (1u << 25));	/* SSE needed */
	assert_true(miss[3] & (1u << 29));	/* LM needed */
}

static void test_msr_allow_list(void **state)
{
	struct cpu_state s = { 0 };
	uint64_t v, tsc;
	bool tw;

	(void)state;
	msr_reset(&s);
	assert_int_equal(msr_read(&s, MSR_IA32_PAT, 0, &v), MSR_DONE);
	assert_int_equal(v, 0x0007040600070406ull);
	assert_int_equal(msr_read(&s, 0xc0010117 /* VM_HSAVE_PA */, 0, &v), MSR_GP);
	assert_int_equal(msr_write(&s, 0xc0010117, 0, &tw, &tsc), MSR_GP);
	assert_int_equal(msr_write(&s, MSR_IA32_FEATURE_CONTROL, 5, &tw, &tsc), MSR_GP);
	assert_int_equal(msr_read(&s, MSR_IA32_FEATURE_CONTROL, 0, &v), MSR_DONE);
	assert_int_equal(v, 1);
	assert_int_equal(msr_read(&s, 0x1b /* APIC_BASE */, 0, &v), MSR_GP);
	assert_int_equal(msr_read(&s, MSR_IA32_TSC, 12345, &v), MSR_DONE);
	assert_int_equal(v, 12345);
	assert_int_equal(msr_write(&s, MSR_IA32_TSC, 777, &tw, &tsc), MSR_DONE);
	assert_true(tw);
	assert_int_equal(tsc, 777);
}

static void test_msr_efer_rules(void **state)
{
	struct cpu_state s = { 0 };
	bool tw;
	uint64_t tsc;

	(void)state;
	assert_int_equal(msr_write(&s, MSR_EFER_, 1u << 12 /* SVME */, &tw, &tsc), MSR_GP);
	assert_int_equal(msr_write(&s, MSR_EFER_, (1u << 8) | (1u << 11) | 1, &tw, &tsc), MSR_DONE);
	assert_int_equal(s.efer, (1u << 8) | (1u << 11) | 1);
	s.cr0 = 1ull << 31;	/* paging on: LME is frozen */
	assert_int_equal(msr_write(&s, MSR_EFER_, 1u << 11, &tw, &tsc), MSR_GP);
	s.efer |= 1u << 10;	/* LMA stays as the CPU set it */
	assert_int_equal(msr_write(&s, MSR_EFER_, (1u << 8) | 1, &tw, &tsc), MSR_DONE);
	assert_true(s.efer & (1u << 10));
	assert_false(s.efer & (1u << 11));
}

static void test_msr_value_checks(void **state)
{
	struct cpu_state s = { 0 };
	bool tw;
	uint64_t tsc;

	(void)state;
	assert_int_equal(msr_write(&s, MSR_IA32_PAT, 0x0202020202020202ull, &tw, &tsc), MSR_GP);
	assert_int_equal(msr_write(&s, MSR_LSTAR, 0x0000800000000000ull, &tw, &tsc), MSR_GP);
	assert_int_equal(msr_write(&s, MSR_LSTAR, 0xffff800000001000ull, &tw, &tsc), MSR_DONE);
	assert_int_equal(s.lstar, 0xffff800000001000ull);
	assert_int_equal(msr_write(&s, MSR_IA32_MTRR_DEF_TYPE, 0x1000, &tw, &tsc), MSR_GP);
	assert_int_equal(msr_write(&s, MSR_IA32_MTRR_DEF_TYPE, 0xc07, &tw, &tsc), MSR_GP);
	assert_int_equal(msr_write(&s, MSR_IA32_MTRR_DEF_TYPE, 0xc02, &tw, &tsc), MSR_GP);
	assert_int_equal(msr_write(&s, MSR_FSBASE, 0x1234, &tw, &tsc), MSR_DONE);
	assert_int_equal(s.fs.base, 0x1234);
	assert_int_equal(msr_write(&s, MSR_IA32_SYSENTER_CS, 1ull << 32, &tw, &tsc), MSR_GP);
}

/* The exit handler skips the state round trip for MSRs outside it: those
 * must then neither read nor change the state. */
static void test_msr_in_state(void **state)
{
	static const uint32_t stateless[] = { MSR_IA32_TSC, MSR_IA32_FEATURE_CONTROL,
					      MSR_IA32_UCODE_REV, MSR_IA32_MTRRCAP, 0x1234 };
	struct cpu_state s, before;
	uint64_t val, new_tsc;
	bool tsc_written;

	(void)state;
	assert_true(msr_in_state(MSR_EFER_));
	assert_true(msr_in_state(MSR_LSTAR));
	assert_true(msr_in_state(MSR_IA32_MISC_ENABLE));
	assert_true(msr_in_state(MSR_GSBASE));
	memset(&s, 0xa5, sizeof(s));
	before = s;
	for (size_t i = 0; i < sizeof(stateless) / sizeof(stateless[0]); i++) {
		assert_false(msr_in_state(stateless[i]));
		msr_read(&s, stateless[i], 77, &val);
		msr_write(&s, stateless[i], 5, &tsc_written, &new_tsc);
		assert_memory_equal(&s, &before, sizeof(s));
	}
	assert_int_equal(msr_read(&s, MSR_IA32_TSC, 77, &val), MSR_DONE);
	assert_int_equal(val, 77);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpuid_vendor_and_signature),
		cmocka_unit_test(test_cpuid_hides_what_ferry_does_not_virtualise),
		cmocka_unit_test(test_cpuid_is_deterministic),
		cmocka_unit_test(test_cpuid_tsc_rate_and_kvm_leaves),
		cmocka_unit_test(test_arch_capabilities),
		cmocka_unit_test(test_baseline_check),
		cmocka_unit_test(test_msr_allow_list),
		cmocka_unit_test(test_msr_efer_rules),
		cmocka_unit_test(test_msr_value_checks),
		cmocka_unit_test(test_msr_in_state),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
