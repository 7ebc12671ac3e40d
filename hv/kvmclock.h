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

/* A kvmclock MSR of v's was just written (vdev accepted it). */
void kvmclock_msr_written(struct vcpu *v, uint32_t msr);
/* Rewrite every vCPU's structure: the TSC-to-time relation changed.  The
 * vCPUs must not be running, or be the caller. */
void kvmclock_update_all(struct vm *vm);

#endif
