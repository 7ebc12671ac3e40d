/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CPUID guests see: one fixed, migratable view, the same on Intel and
 * AMD hosts, so a guest notices nothing when it moves between them.
 */
#ifndef FERRY_HV_CPUID_H
#define FERRY_HV_CPUID_H

#include <stdbool.h>
#include <stdint.h>
#include "hv/vmm.h"

struct cpuid_result { uint32_t eax, ebx, ecx, edx; };

#define CPUID_GUEST_PHYS_BITS	VMM_GUEST_PHYS_BITS	/* leaf 0x80000008 */

/* What differs between vCPUs and guests. */
struct cpuid_vcpu {
	uint32_t vcpu_id;	/* also its APIC id */
	uint64_t tsc_hz;	/* the guest's TSC rate */
	bool rdcl_no;		/* not affected by Meltdown (struct vm rdcl_no) */
};

/* The guest's answer for (leaf, subleaf) on vCPU c. */
void cpuid_guest(uint32_t leaf, uint32_t subleaf, const struct cpuid_vcpu *c,
		 struct cpuid_result *r);

/*
 * IA32_ARCH_CAPABILITIES (MSR 0x10a, read-only; CPUID 7.0 EDX bit 29 says
 * it is there, on every ferry host alike): RDCL_NO when the guest is told
 * its CPU is not affected by Meltdown, else nothing.  Linux then runs
 * without page-table isolation, which saves two CR3 switches per system
 * call; KVM tells its guests the same on hosts that are not affected.  No
 * other bit is claimed.
 */
#define MSR_IA32_ARCH_CAPABILITIES	0x10a
#define ARCH_CAP_RDCL_NO		(1ull << 0)
uint64_t cpuid_arch_caps(const struct cpuid_vcpu *c);

/*
 * Boot check: which baseline features this host lacks (host = the CPU's own
 * CPUID leaf 1 ECX/EDX and 0x80000001 ECX/EDX).  Returns a bit mask per
 * register in missing[4] (1.ECX, 1.EDX, 8..1.ECX, 8..1.EDX); all zero = ok.
 */
void cpuid_baseline_missing(const uint32_t host[4], uint32_t missing[4]);

/*
 * CR4 bits reserved to guests by this view: a MOV to CR4 that sets one
 * must #GP, as on a CPU without the feature, whatever the host has.
 */
uint64_t cpuid_cr4_reserved(void);

#define FERRY_CPUID_SIGNATURE "ferry-hv\0\0\0"	/* leaf 0x40000000 EBX:ECX:EDX */

/*
 * The KVM paravirtual interface, for kvmclock and PV EOI (Linux's
 * Documentation/virt/kvm/x86/cpuid.rst and msr.rst): a second hypervisor
 * leaf range, which guests find by scanning 0x40000000-0x4000FF00 in steps
 * of 0x100.  Feature bits: kvmclock at MSRs 0x4b564d00/01, the guarantee
 * that it is stable across vCPUs, and EOI by a flag in guest memory
 * (MSR 0x4b564d04, hv/vdev/devices.h).
 */
#define KVM_CPUID_BASE			0x40000100u
#define KVM_CPUID_SIGNATURE		"KVMKVMKVM\0\0\0"
#define KVM_FEATURE_CLOCKSOURCE2	(1u << 3)
#define KVM_FEATURE_PV_EOI		(1u << 6)
#define KVM_FEATURE_CLOCKSOURCE_STABLE	(1u << 24)

#endif
