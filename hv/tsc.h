/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The guest's TSC.  One per VM: guest TSC = tsc_scaled(host TSC, mult) +
 * offset (hv/vdev/pvclock.h), the same for every vCPU so that they stay
 * in step.  It starts near 0, moves when the guest writes IA32_TSC, and a
 * migration carries its value and the rate it ran at.
 *
 * The rate the guest learnt at boot is the rate of its TSC for good (CPUID
 * and kvmclock told it; Linux keeps it for its 'tsc' clocksource and its
 * TSC-deadline timer).  On a host whose TSC runs at another rate (beyond
 * TSC_NATIVE_PPM) the guest's TSC is scaled: by the CPU where it can (VMX
 * TSC scaling), otherwise on RDTSC exits (hv/exit.c), as Xen does after
 * such a migration.  kvmclock is written for the rate the TSC then runs at.
 *
 * The VM's setting has a generation; each vCPU hands a new one to its back
 * end before its next entry (vcpu_tsc_sync, called by kvmclock_sync, which
 * rewrites its kvmclock to match), so nothing reaches into a running vCPU.  The setting carries kvmclock's reference (struct vm_tsc):
 * the guest clock at one guest TSC value, taken whenever the setting
 * changes (creation, guest WRMSR, a new rate, arrival) and only then, so
 * that every vCPU's kvmclock says the same.
 */
#ifndef FERRY_HV_TSC_H
#define FERRY_HV_TSC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vcpu;
struct vm;

/* The guest's TSC at host TSC host_tsc, by the VM's setting (under vm->lock
 * or from a vCPU of a VM whose setting does not change under it). */
uint64_t vm_tsc_at(const struct vm *vm, uint64_t host_tsc);
/* The guest's TSC now. */
uint64_t vm_tsc_now(struct vm *vm);
/* The guest's TSC now, as vCPU v's back end has it. */
uint64_t vcpu_tsc_now(const struct vcpu *v);
/* The rate the guest's TSC counts at, in this host's measure (Hz). */
uint64_t vm_tsc_hz(struct vm *vm);

/* The guest's TSC reads guest_tsc now (creation, guest WRMSR, restore);
 * kvmclock's reference pairs it with the guest clock now. */
void vm_tsc_set(struct vm *vm, uint64_t guest_tsc);
/* Native or scaled, from the guest's boot rate and this host's; the
 * guest's TSC goes on from its value now.  Says so when it scales. */
void vm_tsc_retune(struct vm *vm);
/* In words: "2098398 kHz, this host's rate (2098411 kHz) unscaled" or
 * "1000000 kHz, scaled on RDTSC exits (this host: 2098398 kHz)". */
void vm_tsc_describe(struct vm *vm, char *buf, size_t len);
/* Before v enters its guest: give its back end the VM's setting if it
 * changed (true then).  v's own CPU, outside the guest. */
bool vcpu_tsc_sync(struct vcpu *v);

#endif
