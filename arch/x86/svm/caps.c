/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SVM capability detection (AMD APM Vol. 2 15.4 and CPUID Fn8000_000A):
 * CPUID.80000001h:ECX.SVM, VM_CR.SVMDIS, and the SVM feature leaf.
 */
#include <stdio.h>
#include "arch/x86/virt.h"
#include "arch/x86/cpu.h"

#define MSR_VM_CR		0xc0010114
#define VM_CR_SVMDIS		(1u << 4)
#define SVM_FEAT_NP		(1u << 0)
#define SVM_FEAT_NRIPS		(1u << 3)
#define SVM_FEAT_PAUSE_FILTER	(1u << 10)

void svm_detect(struct virt_caps *c)
{
	if (cpuid(0x80000000, 0).eax < 0x8000000a ||
	    !(cpuid(0x80000001, 0).ecx & (1u << 2)))
		return;
	c->kind = VIRT_SVM;
	c->rdcl_no = true;	/* SVM is AMD's and Hygon's: neither is affected */
	if (rdmsr(MSR_VM_CR) & VM_CR_SVMDIS) {
		snprintf(c->why, sizeof(c->why), "disabled by firmware (VM_CR.SVMDIS)");
		return;
	}
	struct cpuid_regs r = cpuid(0x8000000a, 0);
	c->nested_paging = r.edx & SVM_FEAT_NP;
	c->next_rip = r.edx & SVM_FEAT_NRIPS;
	c->pause_exiting = r.edx & SVM_FEAT_PAUSE_FILTER;
	c->asids = r.ebx;
	c->tagged_tlb = r.ebx > 1;
	c->unrestricted = true;
	c->usable = c->nested_paging && c->asids > 1;
	if (!c->usable)
		snprintf(c->why, sizeof(c->why), "needs nested paging (NPT) and ASIDs");
}
