/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * kvmclock for guests (hv/vdev/pvclock.h has the format and arithmetic):
 * ferry writes each vCPU's pvclock structure into guest memory when the
 * guest names it, when the guest's TSC is written, and when the guest
 * arrives on a host (whose TSC may run at another rate).  Every structure
 * holds the VM's one reference pair (struct vm_tsc, hv/tsc.h), so the
 * vCPUs' clocks agree to the tick.
 */
#ifndef FERRY_HV_KVMCLOCK_H
#define FERRY_HV_KVMCLOCK_H

#include <stdint.h>

struct vcpu;
struct vm;

/* A kvmclock MSR of v's was just written (vdev accepted it): v's exit. */
void kvmclock_msr_written(struct vcpu *v, uint32_t msr);
/* Before v enters its guest, in place of vcpu_tsc_sync: if the VM's TSC
 * setting changed, v's back end gets it and v's structure the reference
 * that goes with it (as KVM's KVM_REQ_CLOCK_UPDATE at entry), and the
 * structure says PVCLOCK_GUEST_STOPPED if v was asked to.  So a running
 * vCPU's structure always matches the TSC it runs on, and only its own
 * CPU writes it. */
void kvmclock_sync(struct vcpu *v);
/* The guest stood still while its clock ran on (paused, or on its way to
 * this host), and is about to run again: each vCPU's structure says so
 * from its next entry (VCPU_REQ_CLOCK_STOPPED) until the guest clears the
 * flag.  Linux's soft-lockup, RCU-stall and hung-task watchdogs then
 * forgive the gap (pvclock_touch_watchdogs) instead of reporting the
 * whole pause as a lock-up.  KVM_KVMCLOCK_CTRL, which QEMU issues for
 * every vCPU whenever a VM starts running again.  Before the vCPUs can
 * enter. */
void kvmclock_guest_stopped(struct vm *vm);
/* Rewrite every vCPU's structure from the VM's setting (an arrival: the
 * rate may differ here, and a halted vCPU's structure is read by the
 * others' vDSO too).  No vCPU may be running. */
void kvmclock_update_all(struct vm *vm);

#endif
