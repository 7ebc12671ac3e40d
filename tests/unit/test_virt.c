/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for the virtualization report (arch/x86/virt.c) that the boot
 * log and `cpus` show: each back end's words, and the reason when a CPU's
 * extension cannot be used.  The back ends' detection is faked.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/virt.h"

static struct virt_caps fake_vmx, fake_svm;

void vmx_detect(struct virt_caps *caps)
{
	*caps = fake_vmx;
}

void svm_detect(struct virt_caps *caps)
{
	*caps = fake_svm;
}

static const char *describe(void)
{
	static char buf[160];
	struct virt_caps c;

	virt_detect(&c);
	assert_true(virt_describe(&c, buf, sizeof(buf)) < (int)sizeof(buf));
	return buf;
}

static int setup(void **state)
{
	(void)state;
	memset(&fake_vmx, 0, sizeof(fake_vmx));
	memset(&fake_svm, 0, sizeof(fake_svm));
	return 0;
}

static void test_neither(void **state)
{
	(void)state;
	assert_string_equal(describe(), "none (CPU has neither VMX nor SVM)");
}

static void test_vmx(void **state)
{
	(void)state;
	fake_vmx = (struct virt_caps){ .kind = VIRT_VMX, .usable = true, .nested_paging = true,
				       .unrestricted = true, .tagged_tlb = true,
				       .ad_bits = true, .dirty_log_hw = true };
	assert_string_equal(describe(), "VMX EPT unrestricted-guest VPID EPT-A/D PML");
	fake_vmx.tsc_scaling = true;
	assert_string_equal(describe(), "VMX EPT unrestricted-guest VPID EPT-A/D PML TSC-scaling");
	fake_vmx = (struct virt_caps){ .kind = VIRT_VMX, .why = "disabled by firmware" };
	assert_string_equal(describe(), "VMX (unusable: disabled by firmware)");
}

static void test_svm(void **state)
{
	(void)state;
	fake_svm = (struct virt_caps){ .kind = VIRT_SVM, .usable = true, .nested_paging = true,
				       .next_rip = true, .asids = 16 };
	assert_string_equal(describe(), "SVM NPT NRIP-save asids=16");
	fake_svm.rdcl_no = true;	/* what svm_detect says of every SVM CPU */
	assert_string_equal(describe(), "SVM NPT NRIP-save asids=16 RDCL_NO");
	fake_svm = (struct virt_caps){ .kind = VIRT_SVM, .asids = 8,
				       .why = "needs nested paging (NPT) and ASIDs" };
	assert_string_equal(describe(),
			    "SVM asids=8 (unusable: needs nested paging (NPT) and ASIDs)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_neither, setup),
		cmocka_unit_test_setup(test_vmx, setup),
		cmocka_unit_test_setup(test_svm, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
