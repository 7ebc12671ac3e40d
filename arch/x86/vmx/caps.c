/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * VMX capability detection (Intel SDM Vol. 3C 23.6-23.7 and appendix A):
 * CPUID.1:ECX.VMX, IA32_FEATURE_CONTROL, and the capability MSRs: the
 * neutral summary for the core (vmx_detect) and the raw MSRs for the back
 * end's control derivation (vmx_caps_read, ctl.c).
 */
#include <stdio.h>
#include <string.h>
#include "arch/x86/virt.h"
#include "arch/x86/cpu.h"
#include "arch/x86/vmx/vmcs.h"
#include "arch/x86/vmx/vmx.h"

#define CPUID7_EDX_ARCH_CAPS	(1u << 29)	/* IA32_ARCH_CAPABILITIES exists */
#define MSR_ARCH_CAPABILITIES	0x10a
#define ARCH_CAPS_RDCL_NO	(1ull << 0)

void vmx_detect(struct virt_caps *c)
{
	if (!(cpuid(1, 0).ecx & (1u << 5)))
		return;
	c->kind = VIRT_VMX;
	/* Meltdown, as Linux judges an Intel CPU: affected unless its
	 * IA32_ARCH_CAPABILITIES says RDCL_NO (SDM Vol. 4, Table 2-2) */
	if (cpuid(0, 0).eax >= 7 && (cpuid(7, 0).edx & CPUID7_EDX_ARCH_CAPS))
		c->rdcl_no = rdmsr(MSR_ARCH_CAPABILITIES) & ARCH_CAPS_RDCL_NO;
	uint64_t fc = rdmsr(MSR_FEATURE_CONTROL);
	if ((fc & FEATURE_CONTROL_LOCK) && !(fc & FEATURE_CONTROL_VMX_OUTSIDE_SMX)) {
		snprintf(c->why, sizeof(c->why), "disabled by firmware (IA32_FEATURE_CONTROL=%#lx)", fc);
		return;
	}
	uint64_t proc = rdmsr(MSR_VMX_PROCBASED_CTLS);
	uint32_t proc2 = (proc >> 32) & PROC_SECONDARY_CTLS ? rdmsr(MSR_VMX_PROCBASED_CTLS2) >> 32 : 0;
	uint64_t ept = (proc2 & (PROC2_EPT | PROC2_VPID)) ? rdmsr(MSR_VMX_EPT_VPID_CAP) : 0;

	c->nested_paging = (proc2 & PROC2_EPT) && (ept & EPT_CAP_WB) && (ept & EPT_CAP_WALK4);
	c->unrestricted = proc2 & PROC2_UNRESTRICTED_GUEST;
	c->tagged_tlb = proc2 & PROC2_VPID;
	c->ad_bits = ept & EPT_CAP_AD;
	c->dirty_log_hw = (proc2 & PROC2_PML) && c->ad_bits;
	c->tsc_scaling = proc2 & PROC2_TSC_SCALING;
	c->pause_exiting = proc2 & PROC2_PAUSE_LOOP_EXITING;
	c->next_rip = true;	/* VM-exit instruction length */
	c->usable = c->nested_paging && c->unrestricted;
	if (!c->usable)
		snprintf(c->why, sizeof(c->why), "needs EPT (4-level, WB) and unrestricted guest");
}

/* Every capability MSR the control derivation needs (vmx.h), on this CPU.
 * The TRUE_* MSRs exist only with IA32_VMX_BASIC bit 55, the secondary
 * controls only when the primary ones allow bit 31 (appendix A.3). */
void vmx_caps_read(struct vmx_caps *c)
{
	memset(c, 0, sizeof(*c));
	c->basic = rdmsr(MSR_VMX_BASIC);
	c->misc = rdmsr(MSR_VMX_MISC);
	c->pin = rdmsr(MSR_VMX_PINBASED_CTLS);
	c->proc = rdmsr(MSR_VMX_PROCBASED_CTLS);
	c->exit = rdmsr(MSR_VMX_EXIT_CTLS);
	c->entry = rdmsr(MSR_VMX_ENTRY_CTLS);
	c->cr0_fixed0 = rdmsr(MSR_VMX_CR0_FIXED0);
	c->cr0_fixed1 = rdmsr(MSR_VMX_CR0_FIXED1);
	c->cr4_fixed0 = rdmsr(MSR_VMX_CR4_FIXED0);
	c->cr4_fixed1 = rdmsr(MSR_VMX_CR4_FIXED1);
	if (c->basic & VMX_BASIC_TRUE_CTLS) {
		c->true_pin = rdmsr(MSR_VMX_TRUE_PINBASED_CTLS);
		c->true_proc = rdmsr(MSR_VMX_TRUE_PROCBASED_CTLS);
		c->true_exit = rdmsr(MSR_VMX_TRUE_EXIT_CTLS);
		c->true_entry = rdmsr(MSR_VMX_TRUE_ENTRY_CTLS);
	}
	if ((c->proc >> 32) & PROC_SECONDARY_CTLS)
		c->proc2 = rdmsr(MSR_VMX_PROCBASED_CTLS2);
	if ((c->proc2 >> 32) & (PROC2_EPT | PROC2_VPID))
		c->ept_vpid = rdmsr(MSR_VMX_EPT_VPID_CAP);
}
