/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * VMX capability detection (Intel SDM Vol. 3C 23.6-23.7 and appendix A):
 * CPUID.1:ECX.VMX, IA32_FEATURE_CONTROL, and the capability MSRs.
 */
#include <stdio.h>
#include "arch/x86/virt.h"
#include "arch/x86/cpu.h"

#define MSR_VMX_BASIC		0x480
#define MSR_VMX_PROCBASED	0x482
#define MSR_VMX_PROCBASED2	0x48b
#define MSR_VMX_EPT_VPID_CAP	0x48c

#define FC_LOCK			(1u << 0)
#define FC_VMX_OUTSIDE_SMX	(1u << 2)

#define PROC_SECONDARY		(1ull << 31)
#define PROC2_EPT		(1u << 1)
#define PROC2_VPID		(1u << 5)
#define PROC2_UNRESTRICTED	(1u << 7)
#define PROC2_PML		(1u << 17)
#define EPT_CAP_WB		(1ull << 14)
#define EPT_CAP_WALK4		(1ull << 6)
#define EPT_CAP_AD		(1ull << 21)

void vmx_detect(struct virt_caps *c)
{
	if (!(cpuid(1, 0).ecx & (1u << 5)))
		return;
	c->kind = VIRT_VMX;
	uint64_t fc = rdmsr(MSR_FEATURE_CONTROL);
	if ((fc & FC_LOCK) && !(fc & FC_VMX_OUTSIDE_SMX)) {
		snprintf(c->why, sizeof(c->why), "disabled by firmware (IA32_FEATURE_CONTROL=%#lx)", fc);
		return;
	}
	uint64_t proc = rdmsr(MSR_VMX_PROCBASED);
	uint32_t proc2 = (proc >> 32) & PROC_SECONDARY ? rdmsr(MSR_VMX_PROCBASED2) >> 32 : 0;
	uint64_t ept = (proc2 & (PROC2_EPT | PROC2_VPID)) ? rdmsr(MSR_VMX_EPT_VPID_CAP) : 0;

	c->nested_paging = (proc2 & PROC2_EPT) && (ept & EPT_CAP_WB) && (ept & EPT_CAP_WALK4);
	c->unrestricted = proc2 & PROC2_UNRESTRICTED;
	c->tagged_tlb = proc2 & PROC2_VPID;
	c->ad_bits = ept & EPT_CAP_AD;
	c->dirty_log_hw = (proc2 & PROC2_PML) && c->ad_bits;
	c->next_rip = true;	/* VM-exit instruction length */
	c->usable = c->nested_paging && c->unrestricted;
	if (!c->usable)
		snprintf(c->why, sizeof(c->why), "needs EPT (4-level, WB) and unrestricted guest");
}
