/* SPDX-License-Identifier: BSD-2-Clause */
/* A guest's state as plain data: vCPUs, devices, time (see vmstate.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/fpu.h"
#include "hv/lib/ring.h"
#include "hv/lib/time.h"
#include "hv/tsc.h"
#include "hv/vcpu.h"
#include "hv/gnet.h"
#include "hv/vdev/devices.h"
#include "hv/vm_devices.h"
#include "hv/vmstate.h"

#define XSTATE_BV_OFF	512	/* XSAVE header: XSTATE_BV (SDM Vol. 1 13.4.2) */
#define XCR0_X87_SSE	3ull
#define CONSOLE_KEEP	4096u	/* console history that travels */

uint64_t vmstate_xcr0_mask(void)
{
	uint64_t x = fpu_host_xcr0();

	return x ? x : XCR0_X87_SSE;
}

/* Bytes of the standard-format area that hold the components of xcr0. */
static uint32_t xsave_len_for(uint64_t xcr0)
{
	uint32_t len = VMSTATE_XSAVE_LEGACY;

	for (unsigned int i = 2; i < 63; i++) {
		if (!(xcr0 & (1ull << i)))
			continue;
		struct cpuid_regs r = cpuid(0xd, i);
		if (r.ebx + r.eax > len && r.ebx + r.eax <= FPU_AREA_SIZE)
			len = r.ebx + r.eax;
	}
	return len;
}

void vmstate_save_vcpu(struct vm *vm, unsigned int id, struct cpu_state *cpu, uint8_t *xsave,
		       uint32_t *xsave_len, bool *halted)
{
	struct vcpu *v = vm->vcpus[id];
	uint64_t bv;

	vmm->get_state(&v->hw, cpu);
	/* CR8 is the local APIC's TPR[7:4]; a ferry from before that kept it
	 * apart, in the CPU state, and still finds it there */
	if (vm_cr8(v, false, &cpu->cr8))
		cpu->cr8 = 0;
	vcpu_fpu_sync(v);
	memcpy(xsave, v->fpu->bytes, FPU_AREA_SIZE);
	if (!fpu_host_xcr0()) {
		/* FXSAVE leaves the header alone: the legacy state is all there */
		memcpy(&bv, xsave + XSTATE_BV_OFF, sizeof(bv));
		bv |= XCR0_X87_SSE;
		memcpy(xsave + XSTATE_BV_OFF, &bv, sizeof(bv));
	}
	*xsave_len = xsave_len_for(cpu->xcr0);
	*halted = vcpu_state(v) == VCPU_HALTED;
}

/* IDLE or HALTED, for a vCPU not placed on any CPU (hv/vm.h's table). */
static void set_halted(struct vcpu *v, bool halted)
{
	enum vcpu_state now = vcpu_state(v), to = halted ? VCPU_HALTED : VCPU_IDLE;

	if (now != to)
		vcpu_set_state(v, now, to);
}

int vmstate_load_vcpu(struct vm *vm, unsigned int id, const struct cpu_state *cpu,
		      const uint8_t *xsave, uint32_t xsave_len, bool halted)
{
	struct vcpu *v;

	if (id >= vm->nr_vcpus || xsave_len < VMSTATE_XSAVE_LEGACY || xsave_len > FPU_AREA_SIZE)
		return -EINVAL;
	v = vm->vcpus[id];
	if (__atomic_load_n(&v->cpu, __ATOMIC_ACQUIRE) >= 0)
		return -EBUSY;		/* placed: only an incoming guest's vCPU loads */
	fpu_area_init(v->fpu);
	memcpy(v->fpu->bytes, xsave, xsave_len);
	vmm->set_state(&v->hw, cpu);
	/* past its HLT (RIP is after it): an interrupt wakes it if IF was set
	 * (HLT ends any interrupt shadow), else it sleeps on as it would here */
	set_halted(v, halted);
	v->halted_if = halted && (cpu->rflags & RFLAGS_IF);
	v->halted_nmi_blocked = halted && (cpu->interruptibility & INTR_NMI_BLOCKED);
	v->halt_cli = halted && !(cpu->rflags & RFLAGS_IF);
	return 0;
}

static int devices_walk(struct vm *vm, struct snap *s, char *con, uint32_t *con_len)
{
	vdev_snapshot(vm->dev, s, vm_clock_ns(vm));
	snap_u32(s, con_len);
	if (!s->err && *con_len > CONSOLE_KEEP)
		return snap_invalid(s);
	snap_bytes(s, con, *con_len);
	return s->err;
}

long vmstate_save_devices(struct vm *vm, uint8_t *buf, size_t cap)
{
	static char con[CONSOLE_KEEP];	/* one migration at a time per direction */
	uint64_t pos;
	uint32_t n;
	struct snap s;
	int rc;

	snap_save_init(&s, buf, cap);
	spin_lock(&vm->dev_lock);
	pos = ring_tail(vm->console, CONSOLE_KEEP);
	n = ring_read(vm->console, &pos, con, CONSOLE_KEEP);
	rc = devices_walk(vm, &s, con, &n);
	spin_unlock(&vm->dev_lock);
	/* then the frames that wait for it (the switch's lock comes before
	 * dev_lock) */
	if (!rc)
		rc = gnet_rx_snapshot(vm, &s, NULL);
	return rc ? rc : (long)s.pos;
}

unsigned int vmstate_drop_tx_waiting(struct vm *vm)
{
	return gnet_tx_discard(vm);
}

long vmstate_save_late_frames(struct vm *vm, uint8_t *buf, size_t cap)
{
	struct snap s;
	int rc;

	snap_save_init(&s, buf, cap);
	rc = gnet_rx_late_snapshot(vm, &s, GNET_QLEN, NULL);
	return rc ? rc : (long)s.pos;
}

int vmstate_load_late_frames(struct vm *vm, const uint8_t *buf, size_t len)
{
	struct gnet_carry *c = NULL;
	struct snap s;
	int rc;

	snap_restore_init(&s, buf, len);
	rc = gnet_rx_late_snapshot(NULL, &s, 0, &c);
	if (!rc && s.pos != len)
		rc = -EINVAL;		/* bytes left over */
	gnet_rx_carry_more(rc ? NULL : vm, c);
	return rc;
}

int vmstate_load_devices(struct vm *vm, const uint8_t *buf, size_t len, bool console)
{
	static char con[CONSOLE_KEEP];
	struct vm_devices *undo = malloc(sizeof(*undo));
	struct gnet_carry *carry = NULL;
	uint32_t n = 0;
	struct snap s;
	int rc;

	if (!undo)
		return -ENOMEM;
	snap_restore_init(&s, buf, len);
	spin_lock(&vm->dev_lock);
	*undo = *vm->dev;
	rc = devices_walk(vm, &s, con, &n);
	if (!rc)
		rc = gnet_rx_snapshot(vm, &s, &carry);	/* read only: no lock */
	if (!rc && s.pos != len)
		rc = -EINVAL;		/* bytes left over */
	if (rc)
		*vm->dev = *undo;	/* the devices may have come in, the rest not */
	else if (console)
		ring_put(vm->console, con, n);
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		vm->vcpus[i]->irq_quiet_until_ns = 0;	/* ask the devices again */
		vm->vcpus[i]->timer_hint_ns = 0;	/* and forget their old timers */
	}
	spin_unlock(&vm->dev_lock);
	free(undo);
	gnet_rx_carry(rc ? NULL : vm, carry);
	return rc;
}

int vmstate_check_devices(struct vm *vm, char *why, size_t len)
{
	int rc = 0;

	spin_lock(&vm->dev_lock);
	if (vm->dev && vm->dev->pci)
		rc = vnic_check_mem(vm->dev->pci, why, len);
	spin_unlock(&vm->dev_lock);
	return rc;
}

void vmstate_save_time(struct vm *vm, uint64_t *guest_tsc, uint64_t *clock_ns)
{
	*guest_tsc = vm_tsc_now(vm);
	*clock_ns = vm_clock_ns(vm);
}

/* The devices are in (the local APIC holds the rate the guest's TSC ran
 * at): that rate first, then the value, so that no tick passes at this
 * host's own rate, which would put the TSC behind kvmclock by as long as
 * the rest of the loading takes (Linux then marks 'tsc' unstable).  The
 * guest clock before both: setting the TSC takes kvmclock's reference,
 * the guest clock at that TSC value, which must be the arrived one. */
void vmstate_load_time(struct vm *vm, uint64_t guest_tsc, uint64_t clock_ns)
{
	spin_lock(&vm->lock);
	vm->clock_offset_ns = clock_ns - time_now_ns();
	spin_unlock(&vm->lock);
	vm_tsc_retune(vm);
	vm_tsc_set(vm, guest_tsc);	/* each vCPU's back end has it at its entry */
	vm_devices_changed(vm);
}
