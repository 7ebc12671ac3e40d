/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for the VMX control derivation (arch/x86/vmx/ctl.c): the
 * allowed-0/allowed-1 rule including refusals, the TRUE capability MSRs,
 * what the back end refuses to run on, the CR masks, the MSR bitmap, and
 * the VM-instruction error / exit reason names (names.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include "arch/x86/cpu.h"
#include "arch/x86/paging.h"
#include "tests/unit/test_vmx_fake.h"

static uint64_t cap(uint32_t allowed0, uint32_t allowed1)
{
	return (uint64_t)allowed1 << 32 | allowed0;
}

/* ---- vmx_adjust_ctl ---------------------------------------------------- */

static void test_adjust_forces_allowed0(void **state)
{
	uint32_t out = 0;

	(void)state;
	assert_int_equal(vmx_adjust_ctl(0, 0, cap(0x16, 0xff), &out), 0);
	assert_int_equal(out, 0x16);	/* not wanted, still on */
}

static void test_adjust_wanted_and_optional(void **state)
{
	uint32_t out = 0;

	(void)state;
	assert_int_equal(vmx_adjust_ctl(0x80, 0x100 | 0x20, cap(0x16, 0xff), &out), 0);
	assert_int_equal(out, 0x16 | 0x80 | 0x20);	/* 0x100 not allowed: dropped */
}

static void test_adjust_refuses_wanted(void **state)
{
	uint32_t out = 0xdead;

	(void)state;
	assert_int_equal(vmx_adjust_ctl(0x100, 0, cap(0x16, 0xff), &out), -ENOTSUP);
	assert_int_equal(out, 0xdead);			/* untouched */
	assert_int_equal(vmx_adjust_ctl(1u << 31, 0, cap(0, 0x7fffffff), &out), -ENOTSUP);
	assert_int_equal(vmx_adjust_ctl(1, 0, cap(0, 0), &out), -ENOTSUP);
}

static void test_adjust_inconsistent_msr(void **state)
{
	uint32_t out = 0;

	(void)state;
	/* bit 4 must be 1 (allowed-0) and may not be 1 (allowed-1) */
	assert_int_equal(vmx_adjust_ctl(0, 0, cap(0x10, 0x0f), &out), -EINVAL);
}

static void test_adjust_everything_allowed(void **state)
{
	uint32_t out = 0;

	(void)state;
	assert_int_equal(vmx_adjust_ctl(0xffffffff, 0, cap(0, 0xffffffff), &out), 0);
	assert_int_equal(out, 0xffffffff);
	assert_int_equal(vmx_adjust_ctl(0, 0xffffffff, cap(0x1, 0x3), &out), 0);
	assert_int_equal(out, 0x3);
}

/* Properties over many consistent random MSRs (fixed seed). */
static void test_adjust_properties(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned accepted = 0, refused = 0;

	(void)state;
	for (int i = 0; i < 20000; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		uint32_t may1 = x, must1 = (x >> 32) & may1;
		uint32_t want = (x >> 16) & (x >> 40) & ((i & 1) ? may1 : ~0u);
		uint32_t opt = (x >> 8) ^ (x >> 48), out = 0;
		int rc = vmx_adjust_ctl(want, opt, cap(must1, may1), &out);

		if (want & ~may1) {
			assert_int_equal(rc, -ENOTSUP);
			refused++;
			continue;
		}
		accepted++;
		assert_int_equal(rc, 0);
		assert_int_equal(out & must1, must1);
		assert_int_equal(out & want, want);
		assert_int_equal(out & ~may1, 0);
		assert_int_equal(out & ~(must1 | want | opt), 0);
		assert_int_equal(out & opt & may1, opt & may1);
	}
	assert_true(accepted > 5000 && refused > 5000);
}

/* ---- vmx_config_derive ------------------------------------------------- */

static void test_derive_skylake(void **state)
{
	struct vmx_caps c;
	struct vmx_config cfg;
	char why[128] = "";

	(void)state;
	fake_caps(&c);
	assert_int_equal(vmx_config_derive(&c, &cfg, why, sizeof(why)), 0);
	assert_int_equal(cfg.revision, 0x2b);
	assert_int_equal(cfg.pin & (PIN_EXT_INT_EXITING | PIN_NMI_EXITING | PIN_VIRTUAL_NMIS),
			 PIN_EXT_INT_EXITING | PIN_NMI_EXITING | PIN_VIRTUAL_NMIS);
	assert_true(cfg.vnmi);
	/* the backstop timer, at the TSC's rate >> 5 (IA32_VMX_MISC[4:0]) */
	assert_true(cfg.pin & PIN_PREEMPTION_TIMER && cfg.preempt_timer);
	assert_int_equal(cfg.preempt_shift, 5);
	uint32_t proc_need = PROC_HLT_EXITING | PROC_TSC_OFFSETTING | PROC_UNCOND_IO_EXITING |
		PROC_USE_MSR_BITMAPS | PROC_SECONDARY_CTLS | PROC_MWAIT_EXITING |
		PROC_MONITOR_EXITING | PROC_CR8_LOAD_EXITING | PROC_CR8_STORE_EXITING |
		PROC_RDPMC_EXITING;
	assert_int_equal(cfg.proc & proc_need, proc_need);
	assert_int_equal(cfg.proc & (PROC_INTR_WINDOW_EXITING | PROC_USE_IO_BITMAPS), 0);
	/* TRUE controls: CR3 exiting is not forced */
	assert_int_equal(cfg.proc & (PROC_CR3_LOAD_EXITING | PROC_CR3_STORE_EXITING), 0);
	assert_int_equal(cfg.proc2, PROC2_EPT | PROC2_UNRESTRICTED_GUEST | PROC2_VPID |
			 PROC2_WBINVD_EXITING | PROC2_PAUSE_LOOP_EXITING);
	assert_int_equal(cfg.exit & EXITCTL_ACK_INTR_ON_EXIT, 0);
	assert_true(cfg.exit & EXITCTL_HOST_ADDR_SPACE);
	assert_true(cfg.exit & EXITCTL_LOAD_EFER && cfg.exit & EXITCTL_SAVE_EFER);
	assert_true(cfg.exit & EXITCTL_LOAD_PAT && cfg.exit & EXITCTL_SAVE_PAT);
	assert_int_equal(cfg.entry & ENTRYCTL_IA32E_GUEST, 0);
	assert_true(cfg.entry & ENTRYCTL_LOAD_EFER && cfg.entry & ENTRYCTL_LOAD_PAT);
	/* the guest's DR7 survives exits */
	assert_true(cfg.entry & ENTRYCTL_LOAD_DEBUG && cfg.exit & EXITCTL_SAVE_DEBUG);
	assert_true(cfg.vpid && cfg.invept_single && cfg.invvpid_single);
	assert_true(cfg.ept_ad && cfg.pml);
	assert_int_equal(cfg.ept_max_page, PT_SIZE_2M);
}

/* A CPU without the preemption timer runs without the backstop. */
static void test_derive_without_preemption_timer(void **state)
{
	struct vmx_caps c;
	struct vmx_config cfg;
	char why[128];

	(void)state;
	fake_caps(&c);
	c.true_pin &= ~((uint64_t)PIN_PREEMPTION_TIMER << 32);
	assert_int_equal(vmx_config_derive(&c, &cfg, why, sizeof(why)), 0);
	assert_false(cfg.preempt_timer);
	assert_int_equal(cfg.pin & PIN_PREEMPTION_TIMER, 0);
}

/* Without bit 55 the ordinary MSRs rule, and they force CR3 exiting. */
static void test_derive_uses_true_msrs_only_with_bit55(void **state)
{
	struct vmx_caps c;
	struct vmx_config cfg;
	char why[128];

	(void)state;
	fake_caps(&c);
	c.basic &= ~VMX_BASIC_TRUE_CTLS;
	assert_int_equal(vmx_config_derive(&c, &cfg, why, sizeof(why)), 0);
	assert_int_equal(cfg.proc & (PROC_CR3_LOAD_EXITING | PROC_CR3_STORE_EXITING),
			 PROC_CR3_LOAD_EXITING | PROC_CR3_STORE_EXITING);
	/* and the other way round: TRUE MSRs with garbage are ignored */
	c.true_proc = 0;
	assert_int_equal(vmx_config_derive(&c, &cfg, why, sizeof(why)), 0);
	c.basic |= VMX_BASIC_TRUE_CTLS;
	assert_int_equal(vmx_config_derive(&c, &cfg, why, sizeof(why)), -ENOTSUP);
}

static void expect_refusal(struct vmx_caps *c, const char *words)
{
	struct vmx_config cfg;
	char why[128] = "";

	assert_int_not_equal(vmx_config_derive(c, &cfg, why, sizeof(why)), 0);
	assert_non_null(strstr(why, words));
}

static void test_derive_refusals(void **state)
{
	struct vmx_caps c;

	(void)state;
	fake_caps(&c);
	c.proc2 &= ~((uint64_t)PROC2_EPT << 32);
	expect_refusal(&c, "secondary");

	fake_caps(&c);
	c.proc2 = 0;			/* no secondary controls at all */
	expect_refusal(&c, "secondary");

	fake_caps(&c);
	c.true_exit |= EXITCTL_ACK_INTR_ON_EXIT;	/* forced on */
	expect_refusal(&c, "acknowledge interrupt");

	fake_caps(&c);
	c.true_entry |= ENTRYCTL_IA32E_GUEST;		/* cannot run 32-bit guests */
	expect_refusal(&c, "IA-32e");

	fake_caps(&c);
	c.true_proc &= ~((uint64_t)PROC_INTR_WINDOW_EXITING << 32);
	expect_refusal(&c, "interrupt-window");

	fake_caps(&c);
	c.true_pin &= ~((uint64_t)PIN_NMI_EXITING << 32);
	expect_refusal(&c, "pin-based");

	fake_caps(&c);
	c.misc &= ~VMX_MISC_EXIT_SAVES_LMA;
	expect_refusal(&c, "LMA");

	fake_caps(&c);
	c.ept_vpid &= ~EPT_CAP_INVEPT;
	expect_refusal(&c, "INVEPT");

	fake_caps(&c);
	c.ept_vpid &= ~EPT_CAP_WB;
	expect_refusal(&c, "EPT");

	fake_caps(&c);
	c.basic &= ~(VMX_BASIC_SIZE_MASK << VMX_BASIC_SIZE_SHIFT);
	c.basic |= 0x2000ull << VMX_BASIC_SIZE_SHIFT;	/* bigger than a page */
	expect_refusal(&c, "region size");

	fake_caps(&c);
	c.cr4_fixed1 &= ~CR4_VMXE;			/* VMXE must be 1 and 0 */
	expect_refusal(&c, "CR fixed");

	fake_caps(&c);
	c.true_pin = cap(0x10, 0x0f);			/* self-contradicting MSR */
	expect_refusal(&c, "inconsistent");
}

static void test_derive_vpid_needs_invvpid(void **state)
{
	struct vmx_caps c;
	struct vmx_config cfg;
	char why[128];

	(void)state;
	fake_caps(&c);
	c.ept_vpid &= ~VPID_CAP_INVVPID;
	assert_int_equal(vmx_config_derive(&c, &cfg, why, sizeof(why)), 0);
	assert_false(cfg.vpid);
	assert_int_equal(cfg.proc2 & PROC2_VPID, 0);

	fake_caps(&c);
	c.ept_vpid &= ~(VPID_CAP_INVVPID_SINGLE | EPT_CAP_INVEPT_SINGLE | EPT_CAP_2M);
	assert_int_equal(vmx_config_derive(&c, &cfg, why, sizeof(why)), 0);
	assert_true(cfg.vpid);
	assert_false(cfg.invvpid_single);	/* falls back to all-context */
	assert_false(cfg.invept_single);	/* falls back to global */
	assert_int_equal(cfg.ept_max_page, PT_SIZE_4K);

	fake_caps(&c);
	c.proc2 &= ~((uint64_t)(PROC2_VPID | PROC2_WBINVD_EXITING | PROC2_PAUSE_LOOP_EXITING)
		     << 32);	/* optional */
	assert_int_equal(vmx_config_derive(&c, &cfg, why, sizeof(why)), 0);
	assert_false(cfg.vpid);
	assert_int_equal(cfg.proc2, PROC2_EPT | PROC2_UNRESTRICTED_GUEST);
}

static void test_derive_cr_masks(void **state)
{
	struct vmx_caps c;
	struct vmx_config cfg;
	char why[128];

	(void)state;
	fake_caps(&c);
	assert_int_equal(vmx_config_derive(&c, &cfg, why, sizeof(why)), 0);
	/* PE and PG are free with unrestricted guest; NE is forced */
	assert_int_equal(cfg.cr0_must1, CR0_NE);
	assert_int_equal(cfg.cr0_must0, ~0xffffffffull);
	assert_int_equal(cfg.cr0_mask, CR0_NE | ~0xffffffffull);
	assert_int_equal(cfg.cr4_must1, CR4_VMXE);
	assert_int_equal(cfg.cr4_must0, ~0x3727ffull);
	assert_true(cfg.cr4_mask & CR4_VMXE);
	assert_false(cfg.cr4_mask & CR4_PAE);
	/* bits the guest's CPUID hides exit, even where this CPU has them */
	assert_true(cfg.cr4_mask & (1ull << 20));	/* SMEP */
	assert_true(cfg.cr4_mask & CR4_OSXSAVE);
	assert_false(cfg.cr4_mask & (CR4_OSFXSR | CR4_OSXMMEXCPT | CR4_PGE));
	assert_false(cfg.cr0_mask & (CR0_PE | CR0_PG | CR0_TS));
}

/* ---- MSR bitmap --------------------------------------------------------- */

static void test_msr_bitmap(void **state)
{
	static uint8_t bm[4096];
	static const uint32_t through[] = { 0xc0000100, 0xc0000101, 0xc0000102, 0xc0000081,
					    0xc0000082, 0xc0000083, 0xc0000084 };
	static const uint32_t exits[] = { 0x10, 0x1b, 0x3a, 0x174, 0x175, 0x176, 0x277, 0x2ff,
					  0xc0000080, 0xc0000103, 0x1fff, 0x0, 0x2000,
					  0xc0002000, 0x40000000, 0xffffffff, 0xc0001fff };
	unsigned open_bits = 0;

	(void)state;
	memset(bm, 0, sizeof(bm));
	vmx_msr_bitmap_init(bm);
	for (size_t i = 0; i < sizeof(through) / sizeof(through[0]); i++) {
		assert_false(vmx_msr_bitmap_exits(bm, through[i], false));
		assert_false(vmx_msr_bitmap_exits(bm, through[i], true));
	}
	for (size_t i = 0; i < sizeof(exits) / sizeof(exits[0]); i++) {
		assert_true(vmx_msr_bitmap_exits(bm, exits[i], false));
		assert_true(vmx_msr_bitmap_exits(bm, exits[i], true));
	}
	/* the layout itself: LSTAR's write bit is bit 2 of byte 3072 + 0x10 */
	assert_int_equal(bm[3072 + 0x82 / 8] & (1 << (0x82 % 8)), 0);
	assert_int_equal(bm[1024 + 0x100 / 8], (uint8_t)~0x07);	/* FS/GS/KGS read */
	for (size_t i = 0; i < sizeof(bm); i++)
		open_bits += 8 - __builtin_popcount(bm[i]);
	assert_int_equal(open_bits, 14);	/* 7 MSRs x read/write, nothing else */
}

/* ---- names -------------------------------------------------------------- */

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(vmx_insn_error_name(7), "VM entry with invalid control field(s)");
	assert_string_equal(vmx_insn_error_name(8), "VM entry with invalid host-state field(s)");
	assert_string_equal(vmx_insn_error_name(4), "VMLAUNCH with non-clear VMCS");
	assert_string_equal(vmx_insn_error_name(26), "VM entry with events blocked by MOV SS");
	assert_string_equal(vmx_insn_error_name(28), "invalid operand to INVEPT/INVVPID");
	assert_string_equal(vmx_insn_error_name(0), "unknown VM-instruction error");
	assert_string_equal(vmx_insn_error_name(14), "unknown VM-instruction error");
	assert_string_equal(vmx_insn_error_name(29), "unknown VM-instruction error");
	assert_string_equal(vmx_insn_error_name(0xffffffff), "unknown VM-instruction error");
	/* SDM numbers 1-28 all have names but for the three it leaves out. */
	for (uint32_t e = 1; e < VMX_ERR_COUNT; e++) {
		bool gap = e == 14 || e == 21 || e == 27;
		bool unknown = !strcmp(vmx_insn_error_name(e), "unknown VM-instruction error");

		assert_int_equal(unknown, gap);
	}

	assert_string_equal(vmx_exit_reason_name(48), "EPT violation");
	assert_string_equal(vmx_exit_reason_name(30), "I/O instruction");
	assert_string_equal(vmx_exit_reason_name(0x80000021), "VM-entry failure: invalid guest state");
	assert_string_equal(vmx_exit_reason_name(35), "unknown exit reason");
	assert_string_equal(vmx_exit_reason_name(76), "unknown exit reason");
	assert_string_equal(vmx_exit_reason_name(0xffff), "unknown exit reason");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_adjust_forces_allowed0),
		cmocka_unit_test(test_adjust_wanted_and_optional),
		cmocka_unit_test(test_adjust_refuses_wanted),
		cmocka_unit_test(test_adjust_inconsistent_msr),
		cmocka_unit_test(test_adjust_everything_allowed),
		cmocka_unit_test(test_adjust_properties),
		cmocka_unit_test(test_derive_skylake),
		cmocka_unit_test(test_derive_without_preemption_timer),
		cmocka_unit_test(test_derive_uses_true_msrs_only_with_bit55),
		cmocka_unit_test(test_derive_refusals),
		cmocka_unit_test(test_derive_vpid_needs_invvpid),
		cmocka_unit_test(test_derive_cr_masks),
		cmocka_unit_test(test_msr_bitmap),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
