/* SPDX-License-Identifier: BSD-2-Clause */
/* The guest's TSC: see tsc.h. */
#include <stdio.h>
#include "arch/x86/cpu.h"
#include "arch/x86/percpu.h"
#include "hv/lib/log.h"
#include "hv/lib/time.h"
#include "hv/tsc.h"
#include "hv/vcpu.h"
#include "hv/vm_devices.h"

static uint64_t at(const struct vm_tsc *t, uint64_t host_tsc)
{
	return tsc_scaled(host_tsc, t->mult) + t->offset;
}

uint64_t vm_tsc_at(const struct vm *vm, uint64_t host_tsc)
{
	return at(&vm->tsc, host_tsc);
}

uint64_t vm_tsc_now(struct vm *vm)
{
	uint64_t t;

	spin_lock(&vm->lock);
	t = at(&vm->tsc, rdtsc());
	spin_unlock(&vm->lock);
	return t;
}

uint64_t vcpu_tsc_now(const struct vcpu *v)
{
	return at(&v->tsc, rdtsc());
}

uint64_t vm_tsc_hz(struct vm *vm)
{
	uint64_t mult;

	spin_lock(&vm->lock);
	mult = vm->tsc.mult;
	spin_unlock(&vm->lock);
	return tsc_scaled(tsc_hz(), mult);
}

/* Under vm->lock: from now on the guest's TSC reads guest_tsc + elapsed
 * ticks at mult.  kvmclock's reference is taken with it, from the same
 * host TSC reading: the guest's TSC and clock at one instant. */
static void set_locked(struct vm *vm, uint64_t guest_tsc, uint64_t mult)
{
	uint64_t host = rdtsc();

	vm->tsc.mult = mult;
	vm->tsc.offset = guest_tsc - tsc_scaled(host, mult);
	vm->tsc.clock_tsc = guest_tsc;
	vm->tsc.clock_ns = time_ns_at(host) + vm->clock_offset_ns;
	__atomic_add_fetch(&vm->tsc.gen, 1, __ATOMIC_RELEASE);
}

void vm_tsc_set(struct vm *vm, uint64_t guest_tsc)
{
	spin_lock(&vm->lock);
	set_locked(vm, guest_tsc, vm->tsc.mult ? vm->tsc.mult : TSC_MULT_ONE);
	spin_unlock(&vm->lock);
}

void vm_tsc_retune(struct vm *vm)
{
	uint64_t guest_hz = vm_guest_tsc_hz(vm), host_hz = tsc_hz();
	uint64_t mult = tsc_mult_for(guest_hz, host_hz);
	char how[96];
	bool changed;

	spin_lock(&vm->lock);
	changed = mult != vm->tsc.mult;
	if (changed)
		set_locked(vm, vm_tsc_at(vm, rdtsc()), mult);
	spin_unlock(&vm->lock);
	if (!changed)
		return;
	vm_tsc_describe(vm, how, sizeof(how));
	pr_info("vm %s: TSC %s", vm->name, how);
}

void vm_tsc_describe(struct vm *vm, char *buf, size_t len)
{
	uint64_t guest_khz = vm_guest_tsc_hz(vm) / 1000, host_khz = tsc_hz() / 1000;
	uint64_t mult;

	spin_lock(&vm->lock);
	mult = vm->tsc.mult;
	spin_unlock(&vm->lock);
	if (mult == TSC_MULT_ONE)
		snprintf(buf, len, "%llu kHz, this host's rate (%llu kHz) unscaled",
			 (unsigned long long)guest_khz, (unsigned long long)host_khz);
	else
		snprintf(buf, len, "%llu kHz, scaled %s (this host: %llu kHz)",
			 (unsigned long long)guest_khz,
			 cpus[0].caps.tsc_scaling ? "by the CPU" : "on RDTSC exits",
			 (unsigned long long)host_khz);
}

bool vcpu_tsc_sync(struct vcpu *v)
{
	struct vm *vm = v->vm;

	if (__atomic_load_n(&vm->tsc.gen, __ATOMIC_ACQUIRE) == v->tsc.gen)
		return false;
	spin_lock(&vm->lock);
	v->tsc = vm->tsc;
	spin_unlock(&vm->lock);
	vmm->set_tsc(&v->hw, v->tsc.offset, v->tsc.mult);
	return true;
}
