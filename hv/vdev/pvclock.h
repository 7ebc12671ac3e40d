/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * kvmclock (pvclock), the paravirtual clock Linux guests read when the
 * hypervisor leaf says KVM_FEATURE_CLOCKSOURCE2 (hv/cpuid.h).  Layout and
 * MSRs: Linux's Documentation/virt/kvm/x86/msr.rst.
 *
 * Each vCPU writes a guest-physical address (| 1 = enable) into
 * MSR_KVM_SYSTEM_TIME_NEW; ferry keeps a struct pvclock_time there, which
 * says: at guest TSC tsc_timestamp the guest's clock read system_time ns,
 * and a TSC delta d is ((d << shift, or >> -shift) * mul) >> 32 ns.
 * MSR_KVM_WALL_CLOCK_NEW takes an address where ferry writes the wall
 * clock time at which system_time was 0.  Both are rewritten when the
 * relation between TSC and time changes: an MSR write, a guest write to
 * its TSC, and arrival on another host.  The scale is the rate the guest's
 * TSC runs at there: the host's, or the guest's own rate from boot when the
 * host's differs and ferry scales the guest's TSC (hv/lib/time.h,
 * hv/tsc.h).  system_time is ferry's guest clock (vm_clock_ns), so kvmclock
 * and the devices agree; tsc_timestamp and system_time are one pair per
 * VM, taken when its TSC setting changes, the same in every vCPU's
 * structure (PVCLOCK_TSC_STABLE promises that they agree).
 *
 * Pure logic: the core writes the bytes into guest memory.
 */
#ifndef FERRY_HV_VDEV_PVCLOCK_H
#define FERRY_HV_VDEV_PVCLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include "hv/vdev/snap.h"

#define MSR_KVM_WALL_CLOCK_NEW	0x4b564d00u
#define MSR_KVM_SYSTEM_TIME_NEW	0x4b564d01u
#define PVCLOCK_TSC_STABLE	(1u << 0)	/* one TSC-to-time relation for all vCPUs */
#define PVCLOCK_GUEST_STOPPED	(1u << 1)	/* the vCPU stood still while time ran on:
						 * the guest clears it (and excuses the gap
						 * to its watchdogs) */
#define PVCLOCK_ENABLE		1ull

struct pvclock_time {
	uint32_t version;	/* odd while ferry writes it */
	uint32_t pad0;
	uint64_t tsc_timestamp;
	uint64_t system_time;
	uint32_t tsc_to_system_mul;
	int8_t tsc_shift;
	uint8_t flags;
	uint8_t pad[2];
};

struct pvclock_wall {
	uint32_t version;
	uint32_t sec;
	uint32_t nsec;
};

_Static_assert(sizeof(struct pvclock_time) == 32, "pvclock_vcpu_time_info is 32 bytes");
_Static_assert(sizeof(struct pvclock_wall) == 12, "pvclock_wall_clock is 12 bytes");

/* mul and shift for a TSC of tsc_hz (1 MHz .. 10 GHz): mul in about [2^31, 2^32). */
void pvclock_scale(uint64_t tsc_hz, uint32_t *mul, int8_t *shift);

/* The struct for: TSC tsc at time ns, TSC running at tsc_hz; version
 * is the even version to publish (the caller writes version - 1 first). */
void pvclock_fill(struct pvclock_time *t, uint64_t tsc_hz, uint64_t tsc, uint64_t ns,
		  uint32_t version);

/* What a guest computes from t at TSC tsc (tsc >= t->tsc_timestamp). */
uint64_t pvclock_read(const struct pvclock_time *t, uint64_t tsc);

/* The wall clock at system_time 0, from the time of day now (ns since
 * 1970) and the guest clock now. */
void pvclock_wall_fill(struct pvclock_wall *w, uint64_t tod_ns, uint64_t now_ns,
		       uint32_t version);

/* Whether v is an acceptable MSR_KVM_SYSTEM_TIME_NEW value: disabled, or
 * an enabled 4-byte aligned address below 2^phys_bits.  That is all KVM's
 * ABI asks (msr.rst); the 32 bytes may cross a page (the core's writes
 * span pages), and an address outside RAM is counted where it is written. */
bool pvclock_msr_valid(uint64_t v, uint8_t phys_bits);

#endif
