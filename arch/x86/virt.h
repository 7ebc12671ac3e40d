/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What hardware virtualisation a CPU offers.  Each back end fills this from
 * CPUID and its capability MSRs; the core only reads the neutral fields.
 */
#ifndef FERRY_ARCH_X86_VIRT_H
#define FERRY_ARCH_X86_VIRT_H

#include <stdbool.h>
#include <stdint.h>

enum virt_kind { VIRT_NONE, VIRT_VMX, VIRT_SVM };

struct virt_caps {
	enum virt_kind kind;
	bool usable;		/* present and not disabled by firmware */
	bool nested_paging;	/* EPT or NPT */
	bool unrestricted;	/* VMX unrestricted guest (always true on SVM) */
	bool dirty_log_hw;	/* PML */
	bool tsc_scaling;	/* VMX TSC multiplier (hv/tsc.h) */
	bool pause_exiting;	/* VMX PAUSE-loop exiting, SVM pause filter */
	bool ad_bits;		/* EPT accessed/dirty flags */
	bool tagged_tlb;	/* VPID or ASIDs */
	bool next_rip;		/* instruction length provided on exits */
	uint32_t asids;		/* SVM: number of ASIDs */
	uint8_t maxphyaddr;	/* physical-address width, 32..52: what the
				 * hardware walks the guest's paging with */
	bool gbpages;		/* 1 GiB pages (guest-walk reserved bits) */
	bool rdcl_no;		/* not affected by Meltdown (rogue data cache
				 * load): an SVM (AMD, Hygon) CPU, or one whose
				 * IA32_ARCH_CAPABILITIES has RDCL_NO */
	char why[64];		/* when !usable: the reason, in words */
};

/* Back ends: fill caps from this CPU (arch/x86/vmx/caps.c, svm/caps.c). */
void vmx_detect(struct virt_caps *caps);
void svm_detect(struct virt_caps *caps);

/* Detect on the calling CPU and describe it in buf ("VMX EPT ..."). */
void virt_detect(struct virt_caps *caps);
int virt_describe(const struct virt_caps *caps, char *buf, int len);

#endif
