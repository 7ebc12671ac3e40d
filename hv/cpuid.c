/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The guests' CPUID: a fixed baseline (x86-64 with SSE3 and CMPXCHG16B, the
 * features of QEMU's qemu64 model), not the host's, so that it is the same
 * on every ferry host and a guest can move between Intel and AMD.  Features
 * ferry does not virtualise (local APIC, MONITOR, VMX/SVM, XSAVE, ...) are
 * absent.  Leaf numbers and bits: Intel SDM Vol. 2A "CPUID".
 */
#include <string.h>
#include "hv/cpuid.h"
#include "hv/vmm.h"

#define L1_EDX (1u << 0 /* FPU */ | 1u << 2 /* DE */ |	\
		1u << 3 /* PSE */ | 1u << 4 /* TSC */ | 1u << 5 /* MSR */ |	\
		1u << 6 /* PAE */ | 1u << 8 /* CX8 */ | 1u << 11 /* SEP */ |	\
		1u << 12 /* MTRR */ | 1u << 13 /* PGE */ | 1u << 15 /* CMOV */ |	\
		1u << 16 /* PAT */ | 1u << 17 /* PSE36 */ | 1u << 19 /* CLFSH */ |	\
		1u << 23 /* MMX */ | 1u << 24 /* FXSR */ | 1u << 25 /* SSE */ |	\
		1u << 26 /* SSE2 */)
#define L1_ECX (1u << 0 /* SSE3 */ | 1u << 13 /* CX16 */)
#define L1_ECX_HYPERVISOR (1u << 31)
#define X1_EDX (1u << 11 /* SYSCALL */ | 1u << 20 /* NX */ | 1u << 29 /* LM */)
#define X1_ECX (1u << 0 /* LAHF/SAHF in 64-bit mode */)

static const char vendor[12] = "GenuineIntel";
static const char brand[48] = "ferry virtual CPU (x86-64 baseline)";

static void words(const char *s, uint32_t *a, uint32_t *b, uint32_t *c, uint32_t *d)
{
	memcpy(a, s, 4);
	memcpy(b, s + 4, 4);
	memcpy(c, s + 8, 4);
	if (d)
		memcpy(d, s + 12, 4);
}

static void basic_leaf(uint32_t leaf, uint32_t vcpu_id, struct cpuid_result *r)
{
	switch (leaf) {
	case 0:
		r->eax = 4;
		words(vendor, &r->ebx, &r->edx, &r->ecx, NULL);
		break;
	case 1:	/* family 6 model 0x2a stepping 7 */
		r->eax = 0x000206a7;
		r->ebx = 8u << 8 /* CLFLUSH 64 bytes */ | 1u << 16 | vcpu_id << 24;
		r->ecx = L1_ECX | L1_ECX_HYPERVISOR;
		r->edx = L1_EDX;
		break;
	case 4:	/* deterministic cache parameters: none (type 0 ends the list) */
	default:
		break;
	}
}

static void ext_leaf(uint32_t leaf, struct cpuid_result *r)
{
	switch (leaf) {
	case 0x80000000:
		r->eax = 0x80000008;
		break;
	case 0x80000001:
		r->ecx = X1_ECX;
		r->edx = X1_EDX;
		break;
	case 0x80000002: case 0x80000003: case 0x80000004:
		words(brand + (leaf - 0x80000002) * 16, &r->eax, &r->ebx, &r->ecx, &r->edx);
		break;
	case 0x80000008:	/* 36-bit physical, 48-bit linear addresses */
		r->eax = 36 | 48 << 8;
		break;
	}
}

void cpuid_guest(uint32_t leaf, uint32_t subleaf, uint32_t vcpu_id, struct cpuid_result *r)
{
	(void)subleaf;
	memset(r, 0, sizeof(*r));
	if (leaf < 0x40000000)
		basic_leaf(leaf, vcpu_id, r);
	else if (leaf == 0x40000000) {
		r->eax = 0x40000001;
		words(FERRY_CPUID_SIGNATURE, &r->ebx, &r->ecx, &r->edx, NULL);
	} else if (leaf == 0x40000001)
		r->eax = 1;	/* ferry hypervisor interface version */
	else if (leaf >= 0x80000000 && leaf <= 0x80000008)
		ext_leaf(leaf, r);
}

/*
 * CR4 (Intel SDM Vol. 3A "Control Registers"): VME to OSXMMEXCPT are
 * always the guest's (as KVM allows them); every later bit belongs to a
 * feature this view hides (UMIP, LA57, VMX, SMX, FSGSBASE, PCID, XSAVE,
 * SMEP, SMAP, PKE, CET, ...: no leaf 7, no XSAVE, PCID or VMX in leaf 1).
 * The mask itself is part of the back-end contract (VMM_GUEST_CR4_BITS).
 */
uint64_t cpuid_cr4_reserved(void)
{
	return ~VMM_GUEST_CR4_BITS;
}

void cpuid_baseline_missing(const uint32_t host[4], uint32_t missing[4])
{
	static const uint32_t need[4] = { L1_ECX, L1_EDX, X1_ECX, X1_EDX };

	for (int i = 0; i < 4; i++)
		missing[i] = need[i] & ~host[i];
}
