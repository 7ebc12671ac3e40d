/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The guests' CPUID: a fixed baseline (x86-64 with SSE3 and CMPXCHG16B, the
 * features of QEMU's qemu64 model), not the host's, so that it is the same
 * on every ferry host and a guest can move between Intel and AMD.  Features
 * ferry does not virtualise (MONITOR, VMX/SVM, XSAVE, ...) are absent; the
 * local APIC (xAPIC, x2APIC, TSC-deadline timer, always running: ARAT) is
 * ferry's own model.  The TSC and APIC timer rates are in leaf 0x15, so a
 * guest needs no calibration against the PIT; they are the guest's own
 * (fixed at creation, carried by migration), not the host's, and so is
 * what IA32_ARCH_CAPABILITIES says of Meltdown (cpuid_arch_caps).  Leaf
 * numbers and bits: Intel SDM Vol. 2A "CPUID".
 */
#include <string.h>
#include "hv/cpuid.h"
#include "hv/vmm.h"

#define L1_EDX (1u << 0 /* FPU */ | 1u << 2 /* DE */ |	\
		1u << 3 /* PSE */ | 1u << 4 /* TSC */ | 1u << 5 /* MSR */ |	\
		1u << 6 /* PAE */ | 1u << 8 /* CX8 */ | 1u << 9 /* APIC */ |	\
		1u << 11 /* SEP */ |	\
		1u << 12 /* MTRR */ | 1u << 13 /* PGE */ | 1u << 15 /* CMOV */ |	\
		1u << 16 /* PAT */ | 1u << 17 /* PSE36 */ | 1u << 19 /* CLFSH */ |	\
		1u << 23 /* MMX */ | 1u << 24 /* FXSR */ | 1u << 25 /* SSE */ |	\
		1u << 26 /* SSE2 */)
#define L1_ECX (1u << 0 /* SSE3 */ | 1u << 13 /* CX16 */ | 1u << 21 /* x2APIC */ |	\
		1u << 24 /* TSC-deadline */)
#define L6_EAX_ARAT (1u << 2)	/* the APIC timer runs in every C-state */
#define L7_EDX_ARCH_CAPS (1u << 29)	/* IA32_ARCH_CAPABILITIES exists */
#define MAX_BASIC_LEAF 0x15
/* Leaf 0x15: the "crystal" is the local APIC's timer clock (LAPIC_BUS_HZ,
 * 1 GHz) and the TSC is TSC_NUM / TSC_DEN of it: the rate in MHz. */
#define CRYSTAL_HZ 1000000000u
#define TSC_DEN 1000u
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

static void basic_leaf(uint32_t leaf, uint32_t subleaf, const struct cpuid_vcpu *c,
		       struct cpuid_result *r)
{
	switch (leaf) {
	case 0:
		r->eax = MAX_BASIC_LEAF;
		words(vendor, &r->ebx, &r->edx, &r->ecx, NULL);
		break;
	case 1:	/* family 6 model 0x2a stepping 7 */
		r->eax = 0x000206a7;
		r->ebx = 8u << 8 /* CLFLUSH 64 bytes */ | 1u << 16 | c->vcpu_id << 24;
		r->ecx = L1_ECX | L1_ECX_HYPERVISOR;
		r->edx = L1_EDX;
		break;
	case 6:
		r->eax = L6_EAX_ARAT;
		break;
	case 7:		/* subleaf 0 (EAX: the last subleaf, 0); the others all zero */
		if (subleaf == 0)
			r->edx = L7_EDX_ARCH_CAPS;
		break;
	case 0xb:	/* x2APIC topology: each vCPU a core of its own */
		if (subleaf <= 1) {
			r->eax = 0;
			r->ebx = 1;
			r->ecx = subleaf | (subleaf + 1) << 8;	/* SMT, then core */
			r->edx = c->vcpu_id;
		} else {	/* invalid level: type 0, ECX[7:0] the subleaf */
			r->ecx = subleaf & 0xff;
			r->edx = c->vcpu_id;
		}
		break;
	case 0x15:
		r->eax = TSC_DEN;
		r->ebx = (uint32_t)((c->tsc_hz + 500000) / 1000000);
		r->ecx = CRYSTAL_HZ;
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
		r->eax = CPUID_GUEST_PHYS_BITS | 48 << 8;
		break;
	}
}

void cpuid_guest(uint32_t leaf, uint32_t subleaf, const struct cpuid_vcpu *c,
		 struct cpuid_result *r)
{
	memset(r, 0, sizeof(*r));
	if (leaf < 0x40000000)
		basic_leaf(leaf, subleaf, c, r);
	else if (leaf == 0x40000000) {
		r->eax = 0x40000001;
		words(FERRY_CPUID_SIGNATURE, &r->ebx, &r->ecx, &r->edx, NULL);
	} else if (leaf == 0x40000001) {
		r->eax = 1;	/* ferry hypervisor interface version */
	} else if (leaf == KVM_CPUID_BASE) {
		r->eax = KVM_CPUID_BASE + 1;
		words(KVM_CPUID_SIGNATURE, &r->ebx, &r->ecx, &r->edx, NULL);
	} else if (leaf == KVM_CPUID_BASE + 1) {
		r->eax = KVM_FEATURE_CLOCKSOURCE2 | KVM_FEATURE_CLOCKSOURCE_STABLE |
			 KVM_FEATURE_PV_EOI;
	} else if (leaf >= 0x80000000 && leaf <= 0x80000008)
		ext_leaf(leaf, r);
}

uint64_t cpuid_arch_caps(const struct cpuid_vcpu *c)
{
	return c->rdcl_no ? ARCH_CAP_RDCL_NO : 0;
}

/*
 * CR4 (Intel SDM Vol. 3A "Control Registers"): VME to OSXMMEXCPT are
 * always the guest's (as KVM allows them); every later bit belongs to a
 * feature this view hides (UMIP, LA57, VMX, SMX, FSGSBASE, PCID, XSAVE,
 * SMEP, SMAP, PKE, CET, ...: no feature in leaf 7 but IA32_ARCH_CAPABILITIES,
 * no XSAVE, PCID or VMX in leaf 1).
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
