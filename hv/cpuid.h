/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CPUID guests see: one fixed, migratable view, the same on Intel and
 * AMD hosts, so a guest notices nothing when it moves between them.
 */
#ifndef FERRY_HV_CPUID_H
#define FERRY_HV_CPUID_H

#include <stdint.h>

struct cpuid_result { uint32_t eax, ebx, ecx, edx; };

/* The guest's answer for (leaf, subleaf) on vCPU vcpu_id. */
void cpuid_guest(uint32_t leaf, uint32_t subleaf, uint32_t vcpu_id, struct cpuid_result *r);

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

#endif
