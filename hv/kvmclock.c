/* SPDX-License-Identifier: BSD-2-Clause */
/* kvmclock: see kvmclock.h. */
#include <stddef.h>
#include "hv/kvmclock.h"
#include "hv/lib/log.h"
#include "hv/lib/time.h"
#include "hv/tsc.h"
#include "hv/vcpu.h"
#include "hv/vdev/devices.h"

/* Write buf at gpa, the version word last so a guest never sees a
 * half-written structure as valid (its own retry loop handles the rest).
 * An address outside guest RAM is the guest's mistake, and it may repeat
 * it in a loop: said at the 1st, 2nd, 4th, 8th ... time only. */
static void publish(struct vm *vm, uint64_t gpa, void *buf, size_t len)
{
	uint32_t *version = buf, final = *version, odd = final - 1;
	uint64_t n;

	if (!vm_write_gpa(vm, gpa, &odd, sizeof(odd)) &&
	    !vm_write_gpa(vm, gpa + 4, (uint8_t *)buf + 4, len - 4) &&
	    !vm_write_gpa(vm, gpa, &final, sizeof(final)))
		return;
	n = __atomic_add_fetch(&vm->kvmclock_outside, 1, __ATOMIC_RELAXED);
	if (!(n & (n - 1)))
		pr_warn("%s: kvmclock at %#lx is outside guest RAM (%lu times)\n", vm->name,
			gpa, n);
}

static uint32_t next_version(struct vm *vm, uint64_t gpa)
{
	uint32_t old = 0;

	vm_read_gpa(vm, gpa, &old, sizeof(old));
	return (old | 1) + 1;	/* even, and newer than what the guest saw */
}

/*
 * Every vCPU's structure holds the VM's one reference (struct vm_tsc: the
 * guest TSC and clock at one instant, taken when the TSC setting last
 * changed), at the rate the guest's TSC runs at here: ref is the setting
 * the vCPU's back end has, or the VM's while no vCPU runs.  A pair read afresh
 * for each vCPU, whenever its MSR was written, made them disagree: the
 * truncated mul runs kvmclock up to 2^-31 slow, so a vCPU that registered
 * a day later (CPU offline/online) read some 17 us ahead of the others at
 * the same TSC, and with PVCLOCK_TSC_STABLE Linux trusts them to agree
 * (no last_value clamp): its time went backwards between CPUs.
 */
static void update_one(struct vm *vm, unsigned int id, const struct vm_tsc *ref, bool stopped)
{
	uint64_t msr, gpa;
	struct pvclock_time t;
	uint8_t flags = 0;

	spin_lock(&vm->dev_lock);
	msr = vm->dev->kvm_system_time[id];
	spin_unlock(&vm->dev_lock);
	if (!(msr & PVCLOCK_ENABLE))
		return;
	gpa = msr & ~PVCLOCK_ENABLE;
	pvclock_fill(&t, tsc_scaled(tsc_hz(), ref->mult), ref->clock_tsc, ref->clock_ns,
		     next_version(vm, gpa));
	/* GUEST_STOPPED stays until the guest clears it in its copy (Linux's
	 * kvm_check_and_clear_guest_paused and pvclock_clocksource_read
	 * write the flags byte), as KVM keeps it (kvm_setup_guest_pvclock);
	 * the guest is not in this vCPU now, so its clear cannot race this */
	vm_read_gpa(vm, gpa + offsetof(struct pvclock_time, flags), &flags, sizeof(flags));
	if (stopped || (flags & PVCLOCK_GUEST_STOPPED))
		t.flags |= PVCLOCK_GUEST_STOPPED;
	publish(vm, gpa, &t, sizeof(t));
}

static void update_wall(struct vm *vm)
{
	struct pvclock_wall w;
	uint64_t gpa, tod, now;

	spin_lock(&vm->dev_lock);
	gpa = vm->dev->kvm_wall_clock;
	now = vm_clock_ns(vm);
	tod = vdev_time_of_day_ns(vm->dev, now);
	spin_unlock(&vm->dev_lock);
	pvclock_wall_fill(&w, tod, now, next_version(vm, gpa));
	publish(vm, gpa, &w, sizeof(w));
}

void kvmclock_msr_written(struct vcpu *v, uint32_t msr)
{
	if (msr == MSR_KVM_WALL_CLOCK_NEW)
		update_wall(v->vm);
	else
		update_one(v->vm, v->hw.id, &v->tsc, false);
}

void kvmclock_sync(struct vcpu *v)
{
	bool moved = vcpu_tsc_sync(v);
	bool stopped = vcpu_has_request(v, VCPU_REQ_CLOCK_STOPPED) &&
		       vcpu_take_request(v, VCPU_REQ_CLOCK_STOPPED);

	if (moved || stopped)
		update_one(v->vm, v->hw.id, &v->tsc, stopped);
}

void kvmclock_guest_stopped(struct vm *vm)
{
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		vcpu_request(vm->vcpus[i], VCPU_REQ_CLOCK_STOPPED);
}

void kvmclock_update_all(struct vm *vm)
{
	struct vm_tsc ref;

	spin_lock(&vm->lock);
	ref = vm->tsc;
	spin_unlock(&vm->lock);
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		update_one(vm, i, &ref, false);
}
