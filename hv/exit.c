/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * VM-exit handlers, once for both back ends, dispatched by a bounds-checked
 * table (ACRN style).  A handler resumes the guest, parks the vCPU until an
 * interrupt (HLT), or stops the guest with a reason; never the machine.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/emulate/fetch.h"
#include "arch/x86/emulate/mmio.h"
#include "arch/x86/fpu.h"
#include "hv/cpuid.h"
#include "hv/kvmclock.h"
#include "hv/lib/log.h"
#include "hv/msr.h"
#include "hv/tsc.h"
#include "hv/vcpu.h"
#include "hv/vm_devices.h"
#include "hv/vdev/devices.h"

#define KVM_ENOSYS 1000		/* hypercall answer Linux guests understand */
#define STALE_RETRIES 1000	/* a stale walk's fault retried in a row, at most */

typedef enum exit_action (*exit_fn)(struct vcpu *v, struct vm_exit *e);

static const char *const names[EXIT_COUNT] = {
	[EXIT_NONE] = "none", [EXIT_EXTERNAL] = "external-interrupt",
	[EXIT_INTR_WINDOW] = "interrupt-window", [EXIT_CPUID] = "cpuid",
	[EXIT_IO] = "io", [EXIT_MSR_READ] = "rdmsr", [EXIT_MSR_WRITE] = "wrmsr",
	[EXIT_HLT] = "hlt", [EXIT_GPA_FAULT] = "npf/ept-violation",
	[EXIT_HYPERCALL] = "hypercall", [EXIT_XSETBV] = "xsetbv",
	[EXIT_VIRT_INSN] = "virt-insn", [EXIT_SHUTDOWN] = "shutdown",
	[EXIT_INVALID] = "invalid-state", [EXIT_UNHANDLED] = "unhandled",
	[EXIT_RDTSC] = "rdtsc", [EXIT_PAUSE] = "pause",
	[EXIT_CR8] = "cr8", [EXIT_RDPMC] = "rdpmc",
};

const char *exit_name(enum exit_code c)
{
	return c < EXIT_COUNT && names[c] ? names[c] : "?";
}

static void inject_exception(struct vcpu *v, uint8_t vector, bool has_error, uint32_t error)
{
	struct event ev = { .valid = true, .type = EVENT_EXCEPTION, .vector = vector,
			    .has_error = has_error, .error = error };
	vmm->inject(&v->hw, &ev);
}

static enum exit_action do_nothing(struct vcpu *v, struct vm_exit *e)
{
	(void)v; (void)e;
	return EXIT_RESUME;
}

static enum exit_action do_intr_window(struct vcpu *v, struct vm_exit *e)
{
	(void)e;
	vmm->want_intr_window(&v->hw, false);
	return EXIT_RESUME;
}

/* What of the CPU's identity is this vCPU's and its guest's own. */
static struct cpuid_vcpu cpuid_view(const struct vcpu *v)
{
	return (struct cpuid_vcpu){ .vcpu_id = v->hw.id, .tsc_hz = vm_guest_tsc_hz(v->vm),
				    .rdcl_no = v->vm->rdcl_no };
}

static enum exit_action do_cpuid(struct vcpu *v, struct vm_exit *e)
{
	struct cpuid_result r;
	struct cpuid_vcpu c = cpuid_view(v);

	cpuid_guest((uint32_t)v->hw.gpr[GPR_RAX], (uint32_t)v->hw.gpr[GPR_RCX], &c, &r);
	v->hw.gpr[GPR_RAX] = r.eax;
	v->hw.gpr[GPR_RBX] = r.ebx;
	v->hw.gpr[GPR_RCX] = r.ecx;
	v->hw.gpr[GPR_RDX] = r.edx;
	vmm->skip_insn(&v->hw, e->inst_len);
	return EXIT_RESUME;
}

static enum exit_action do_io(struct vcpu *v, struct vm_exit *e)
{
	uint32_t mask = e->u.io.size == 4 ? 0xffffffffu : (1u << (e->u.io.size * 8)) - 1;
	uint32_t val = (uint32_t)v->hw.gpr[GPR_RAX] & mask;

	if (e->u.io.string) {
		vm_stop(v->vm, "string I/O (INS/OUTS) to port %#x at rip %#lx is not supported",
			e->u.io.port, e->rip);
		return EXIT_STOP;
	}
	vm_io(v->vm, e->u.io.port, e->u.io.size, e->u.io.in, &val);
	if (e->u.io.in)	/* AL and AX merge; EAX, a 32-bit register, clears 63:32 */
		v->hw.gpr[GPR_RAX] = e->u.io.size == 4 ? val :
				     (v->hw.gpr[GPR_RAX] & ~(uint64_t)mask) | (val & mask);
	vmm->skip_insn(&v->hw, e->inst_len);
	return v->vm->state == VM_RUNNING ? EXIT_RESUME : EXIT_STOP;
}

static void msr_result(struct vcpu *v, uint64_t val)
{
	v->hw.gpr[GPR_RAX] = (uint32_t)val;
	v->hw.gpr[GPR_RDX] = val >> 32;
}

/* RDTSC exits only while the guest's TSC is scaled without the CPU's
 * help (hv/tsc.h). */
static enum exit_action do_rdtsc(struct vcpu *v, struct vm_exit *e)
{
	msr_result(v, vcpu_tsc_now(v));
	vmm->skip_insn(&v->hw, e->inst_len);
	return EXIT_RESUME;
}

/*
 * A PAUSE loop: the guest spins, most likely on a lock a sibling vCPU holds
 * while it waits for a CPU (overcommit).  Step over the PAUSE and give the
 * CPU up; a one-vCPU guest has no sibling to wait for and just goes on.
 */
static enum exit_action do_pause(struct vcpu *v, struct vm_exit *e)
{
	vmm->skip_insn(&v->hw, e->inst_len);
	return v->vm->nr_vcpus > 1 ? EXIT_YIELD : EXIT_RESUME;
}

/* The MSRs of the local APIC and kvmclock (devices): false if e's is not
 * one of them. */
static bool device_msr(struct vcpu *v, struct vm_exit *e, bool write, uint64_t val)
{
	int rc = vm_apic_msr(v, e->u.msr.index, write, &val, vcpu_tsc_now(v));

	if (rc == -ENOENT)
		return false;
	if (rc == LAPIC_GP) {
		inject_exception(v, 13, true, 0);
		return true;
	}
	if (rc == VDEV_MSR_PVCLOCK)
		kvmclock_msr_written(v, e->u.msr.index);
	if (!write)
		msr_result(v, val);
	vmm->skip_insn(&v->hw, e->inst_len);
	return true;
}

/*
 * RDMSR/WRMSR.  Most MSRs that exit (TSC, MTRRCAP, microcode revision...)
 * need only EDX:EAX and ECX, already in v->hw.gpr: the whole CPU state goes
 * through the back end only for the ones kept in it (msr_in_state).
 */
static enum exit_action do_msr(struct vcpu *v, struct vm_exit *e)
{
	struct cpu_state s;
	uint32_t index = e->u.msr.index;
	bool write = e->code == EXIT_MSR_WRITE, tsc_written = false;
	bool in_state = msr_in_state(index);
	uint64_t val = (v->hw.gpr[GPR_RDX] << 32) | (uint32_t)v->hw.gpr[GPR_RAX], new_tsc = 0;
	enum msr_status st;

	if (device_msr(v, e, write, val))
		return EXIT_RESUME;
	if (in_state)
		vmm->get_state(&v->hw, &s);
	if (index == MSR_IA32_ARCH_CAPABILITIES) {	/* part of the CPU's identity */
		const struct cpuid_vcpu c = cpuid_view(v);

		st = write ? MSR_GP : MSR_DONE;
		val = cpuid_arch_caps(&c);
	} else if (write)
		st = msr_write(&s, index, val, &tsc_written, &new_tsc);
	else
		st = msr_read(&s, index, vcpu_tsc_now(v), &val);
	if (st == MSR_GP) {
		inject_exception(v, 13, true, 0);
		return EXIT_RESUME;
	}
	if (write && in_state)
		vmm->set_state(&v->hw, &s);
	if (tsc_written) {
		/* Every vCPU takes the new setting, and writes its kvmclock for
		 * it, at its next entry (kvmclock_sync), this one included: the
		 * others run on the old TSC until then, and their structures
		 * must say so.  Kicked, they leave the guest for it now. */
		vm_tsc_set(v->vm, new_tsc);
		for (unsigned int i = 0; i < v->vm->nr_vcpus; i++)
			if (v->vm->vcpus[i] != v)
				vcpu_kick(v->vm->vcpus[i]);
	}
	if (!write)
		msr_result(v, val);
	vmm->skip_insn(&v->hw, e->inst_len);
	return EXIT_RESUME;
}

/*
 * HLT sleeps until an interrupt.  With interrupts off nothing but an NMI,
 * INIT or SIPI could wake it: when that holds for every vCPU of the guest
 * it is what an operating system without ACPI does to power off (Linux's
 * `poweroff` with acpi=off ends so), and the guest stops.
 */
static bool all_halted_for_good(struct vcpu *v)
{
	/* an AP that pulled the reset line and halted: the BSP reboots */
	if (__atomic_load_n(&v->vm->reset_pending, __ATOMIC_SEQ_CST))
		return false;
	for (unsigned int i = 0; i < v->vm->nr_vcpus; i++) {
		struct vcpu *o = v->vm->vcpus[i];
		bool asleep;

		/* the event first: o clears its flag before it takes one */
		if (o->halted_if || vm_event_pending(o))
			return false;
		/* o's own HLT exit may still be under way on another CPU (it
		 * is not VCPU_HALTED yet): its flag, set before it looks at
		 * this one's, makes one of the two see the other */
		asleep = __atomic_load_n(&o->halt_cli, __ATOMIC_SEQ_CST) ||
			 vcpu_state(o) == VCPU_HALTED;
		if (o != v && !asleep)
			return false;
	}
	return true;
}

static enum exit_action do_hlt(struct vcpu *v, struct vm_exit *e)
{
	struct cpu_state s;

	vmm->skip_insn(&v->hw, e->inst_len);
	v->halted_if = vmm->intr_allowed(&v->hw);	/* past HLT: no shadow */
	vmm->get_state(&v->hw, &s);
	v->halted_nmi_blocked = s.interruptibility & INTR_NMI_BLOCKED;
	if (!v->halted_if) {
		/* interrupts off, or an event goes in first: the single-step
		 * #DB of a HLT run with TF, which wakes it at once */
		if (s.pending.valid)
			return EXIT_RESUME;
		__atomic_store_n(&v->halt_cli, true, __ATOMIC_SEQ_CST);
		if (all_halted_for_good(v)) {
			vm_stop(v->vm, "powered off (halted with interrupts off)");
			return EXIT_STOP;
		}
	}
	return EXIT_YIELD_HALT;
}

/* One access of x86_emulate_mmio: up to 4 bytes at a time to the devices. */
static int mmio_access(void *ctx, uint64_t gpa, bool write, uint64_t *val, int size)
{
	struct vcpu *v = ctx;
	uint32_t lo = (uint32_t)*val, hi = (uint32_t)(*val >> 32);

	if ((gpa & 0xfff) + (uint64_t)size > 0x1000)
		return -ERANGE;		/* into the next page, which may be RAM */
	if (size > 4) {
		vm_mmio(v, gpa, 4, write, &lo);
		vm_mmio(v, gpa + 4, (uint8_t)(size - 4), write, &hi);
	} else {
		vm_mmio(v, gpa, (uint8_t)size, write, &lo);
		hi = 0;
	}
	if (!write)
		*val = (uint64_t)hi << 32 | lo;
	return 0;
}

static int read_guest(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	return vm_read_gpa(ctx, gpa, buf, len);
}

/*
 * An access outside RAM: decode the instruction at CS:RIP through the
 * guest's paging, perform its access on the devices (vm_mmio: the APICs,
 * all ones and dropped writes elsewhere, as on a PC) and retire it.
 */
static enum exit_action do_mmio(struct vcpu *v, struct vm_exit *e)
{
	uint64_t regs[X86_NR_REGS];
	struct gwalk_result res = { 0 };
	struct x86_insn insn;
	struct cpu_state s;
	int len, adv;

	vmm->get_state(&v->hw, &s);
	struct gwalk_env g = {
		.cr0 = s.cr0, .cr3 = s.cr3, .cr4 = s.cr4, .efer = s.efer, .rflags = s.rflags,
		.maxphyaddr = CPUID_GUEST_PHYS_BITS, .read_gpa = read_guest, .ctx = v->vm,
	};
	struct x86_guest_rip r = {
		.rip = s.rip, .cs_base = s.cs.base, .cs_l = s.cs.attr & SEG_ATTR_L,
		.cs_db = s.cs.attr & SEG_ATTR_DB, .user = ((s.ss.attr >> 5) & 3) == 3,
	};
	len = x86_fetch_at_rip(&g, &r, 0, &insn, &res);
	if (len == -EFAULT) {
		/* the guest's own tables no longer map its code (another vCPU
		 * changed them since the CPU fetched it): a #PF, as the fetch
		 * would take now; nothing was done, and the guest may retry */
		s.cr2 = res.fault_addr;
		vmm->set_state(&v->hw, &s);
		inject_exception(v, 14, true, res.error_code);
		return EXIT_RESUME;
	}
	if (len < 0) {
		vm_stop(v->vm, "cannot read the instruction at rip %#lx that accessed "
			"guest-physical %#lx (error %d, page fault code %#x at %#lx)", e->rip,
			e->u.gpa_fault.gpa, len, res.error_code, res.fault_addr);
		return EXIT_STOP;
	}
	memcpy(regs, v->hw.gpr, sizeof(v->hw.gpr));
	regs[X86_RFLAGS] = s.rflags;
	regs[X86_RIP] = s.rip;
	adv = x86_emulate_mmio(&insn, regs, e->u.gpa_fault.gpa, mmio_access, v);
	if (adv == -EILSEQ) {
		/* a form the CPU refuses before any access (LOCK MOV...): not
		 * what faulted, so the code changed since (another vCPU); the
		 * CPU would raise #UD for it now, and so does ferry */
		inject_exception(v, 6, false, 0);
		return EXIT_RESUME;
	}
	if (adv < 0) {
		if (adv == -ERANGE)
			vm_stop(v->vm, "instruction at rip %#lx accessing guest-physical %#lx is "
				"not emulated (it crosses into the next page)", e->rip,
				e->u.gpa_fault.gpa);
		else
			vm_stop(v->vm, "instruction at rip %#lx accessing guest-physical %#lx is "
				"not emulated (error %d)", e->rip, e->u.gpa_fault.gpa, adv);
		return EXIT_STOP;
	}
	memcpy(v->hw.gpr, regs, sizeof(v->hw.gpr));
	if (s.rflags != regs[X86_RFLAGS]) {
		/* set_state writes the general registers too: the new ones (a
		 * logic op into a register changes both) */
		memcpy(s.gpr, regs, sizeof(s.gpr));
		s.rflags = regs[X86_RFLAGS];
		vmm->set_state(&v->hw, &s);
	}
	if (adv)
		vmm->skip_insn(&v->hw, (uint8_t)adv);
	return v->vm->state == VM_RUNNING ? EXIT_RESUME : EXIT_STOP;
}

static enum exit_action do_gpa_fault(struct vcpu *v, struct vm_exit *e)
{
	if (e->u.gpa_fault.write && e->u.gpa_fault.present) {
		int r = dirty_log_fault(&v->vm->dirty, &v->vm->hw.gpt, e->u.gpa_fault.gpa);
		if (r > 0)
			return EXIT_RESUME;	/* logged: the write is retried */
		if (r < 0) {
			vm_stop(v->vm, "dirty log failed on %#lx (error %d)", e->u.gpa_fault.gpa, r);
			return EXIT_STOP;
		}
	}
	/* Not present, yet RAM that is mapped now: a stale walk through a
	 * table a merge unlinked, before its flush.  The guest retries; the
	 * flush lands within a few exits, so the same fault over and over is
	 * something else, and stops the guest below as before. */
	if (!e->u.gpa_fault.present && vm_gpa_to_hva(v->vm, e->u.gpa_fault.gpa) &&
	    dirty_log_stale(&v->vm->dirty, &v->vm->hw.gpt, e->u.gpa_fault.gpa,
			    e->u.gpa_fault.write) > 0) {
		uint64_t gen = __atomic_load_n(&v->vm->hw.gpa_gen, __ATOMIC_ACQUIRE);

		v->stale_repeats = v->stale_gpa == e->u.gpa_fault.gpa && v->stale_gen == gen ?
				   v->stale_repeats + 1 : 1;
		v->stale_gpa = e->u.gpa_fault.gpa;
		v->stale_gen = gen;
		if (v->stale_repeats <= STALE_RETRIES)
			return EXIT_RESUME;
	}
	/* The guest's page tables point outside its RAM: the walk read a
	 * "table" there, the instruction did not touch it; emulating the
	 * instruction would make up a device access.  A CPU would read what
	 * the bus gives; no working system keeps its tables in MMIO. */
	if (e->u.gpa_fault.walk && !vm_gpa_to_hva(v->vm, e->u.gpa_fault.gpa)) {
		vm_stop(v->vm, "its page tables point at guest-physical %#lx outside its memory "
			"(at rip %#lx)", e->u.gpa_fault.gpa, e->rip);
		return EXIT_STOP;
	}
	/* Delivering an event touched memory outside RAM (an IDT, stack or
	 * TSS there): the instruction at RIP did not, and emulating it would
	 * run it with a device access it never made (KVM stops such a guest
	 * too).  Nothing a working system does. */
	if (e->u.gpa_fault.vectoring && !vm_gpa_to_hva(v->vm, e->u.gpa_fault.gpa)) {
		vm_stop(v->vm, "delivering an interrupt or exception touched guest-physical %#lx "
			"outside its memory (its IDT, stack or TSS) at rip %#lx",
			e->u.gpa_fault.gpa, e->rip);
		return EXIT_STOP;
	}
	if (!e->u.gpa_fault.exec && !vm_gpa_to_hva(v->vm, e->u.gpa_fault.gpa) &&
	    (e->u.gpa_fault.read || e->u.gpa_fault.write))
		return do_mmio(v, e);
	/* No kind at all: the back end could not tell (EPT misconfiguration). */
	vm_stop(v->vm, "%s of guest-physical %#lx outside its memory at rip %#lx",
		e->u.gpa_fault.exec ? "execution" : e->u.gpa_fault.write ? "write" :
		e->u.gpa_fault.read ? "read" : "access",
		e->u.gpa_fault.gpa, e->rip);
	return EXIT_STOP;
}

static enum exit_action do_hypercall(struct vcpu *v, struct vm_exit *e)
{
	v->hw.gpr[GPR_RAX] = (uint64_t)-KVM_ENOSYS;
	vmm->skip_insn(&v->hw, e->inst_len);
	return EXIT_RESUME;
}

/* XSETBV as the CPU does it (SDM Vol. 2D): #UD without CR4.OSXSAVE and
 * #GP(0) outside ring 0 (which the CPU checks before it exits, but an
 * intercept that outranked them would let the guest's user mode set
 * XCR0), #GP(0) for another XCR or a value the CPU refuses. */
static enum exit_action do_xsetbv(struct vcpu *v, struct vm_exit *e)
{
	uint64_t val = (v->hw.gpr[GPR_RDX] << 32) | (uint32_t)v->hw.gpr[GPR_RAX];
	uint64_t host = fpu_host_xcr0();
	struct cpu_state s;

	vmm->get_state(&v->hw, &s);
	if (!(s.cr4 & CR4_OSXSAVE)) {
		inject_exception(v, 6, false, 0);
		return EXIT_RESUME;
	}
	if (((s.ss.attr >> 5) & 3) != 0 || (uint32_t)v->hw.gpr[GPR_RCX] != 0 || !(val & 1) ||
	    (val & ~(VMM_GUEST_XCR0_BITS & host)) || ((val & 4) && !(val & 2))) {
		inject_exception(v, 13, true, 0);
		return EXIT_RESUME;
	}
	v->hw.xcr0 = val;
	fpu_set_xcr0(val);
	vmm->skip_insn(&v->hw, e->inst_len);
	return EXIT_RESUME;
}

/* MOV to/from CR8, which both back ends make exit: the local APIC's TPR,
 * so that CR8, the TPR register and the interrupts let in agree.  #GP for
 * a value above 15 (SDM Vol. 3A 10.8.6.1). */
static enum exit_action do_cr8(struct vcpu *v, struct vm_exit *e)
{
	uint64_t *r = &v->hw.gpr[e->u.cr8.gpr & (GPR_COUNT - 1)];

	if (vm_cr8(v, e->u.cr8.write, r)) {
		inject_exception(v, 13, true, 0);
		return EXIT_RESUME;
	}
	vmm->skip_insn(&v->hw, e->inst_len);
	return EXIT_RESUME;
}

static enum exit_action do_virt_insn(struct vcpu *v, struct vm_exit *e)
{
	(void)e;
	inject_exception(v, 6, false, 0);	/* #UD: no nested virtualization */
	return EXIT_RESUME;
}

/* RDPMC: the guest's CPUID has no PMU (leaf 0xA is zero), so every counter
 * number is out of range: #GP(0), as KVM without a vPMU answers.  Run, it
 * would read the physical CPU's counters: what the host or another guest
 * left counting. */
static enum exit_action do_rdpmc(struct vcpu *v, struct vm_exit *e)
{
	(void)e;
	inject_exception(v, 13, true, 0);
	return EXIT_RESUME;
}

static enum exit_action do_shutdown(struct vcpu *v, struct vm_exit *e)
{
	vm_stop(v->vm, "triple fault (shutdown) at rip %#lx", e->rip);
	return EXIT_STOP;
}

static enum exit_action do_invalid(struct vcpu *v, struct vm_exit *e)
{
	vm_stop(v->vm, "%s refused the guest state: %s", vmm->name,
		e->u.vendor.what ? e->u.vendor.what : "no details");
	return EXIT_STOP;
}

static enum exit_action do_unhandled(struct vcpu *v, struct vm_exit *e)
{
	vm_stop(v->vm, "unhandled %s exit %#x (%s) at rip %#lx", vmm->name, e->u.vendor.reason,
		e->u.vendor.what ? e->u.vendor.what : "?", e->rip);
	return EXIT_STOP;
}

static const exit_fn table[EXIT_COUNT] = {
	[EXIT_NONE] = do_nothing,
	[EXIT_EXTERNAL] = do_nothing,
	[EXIT_INTR_WINDOW] = do_intr_window,
	[EXIT_CPUID] = do_cpuid,
	[EXIT_IO] = do_io,
	[EXIT_MSR_READ] = do_msr,
	[EXIT_MSR_WRITE] = do_msr,
	[EXIT_HLT] = do_hlt,
	[EXIT_GPA_FAULT] = do_gpa_fault,
	[EXIT_HYPERCALL] = do_hypercall,
	[EXIT_XSETBV] = do_xsetbv,
	[EXIT_VIRT_INSN] = do_virt_insn,
	[EXIT_SHUTDOWN] = do_shutdown,
	[EXIT_INVALID] = do_invalid,
	[EXIT_UNHANDLED] = do_unhandled,
	[EXIT_RDTSC] = do_rdtsc,
	[EXIT_PAUSE] = do_pause,
	[EXIT_CR8] = do_cr8,
	[EXIT_RDPMC] = do_rdpmc,
};

enum exit_action exit_handle(struct vcpu *v, struct vm_exit *e)
{
	if ((unsigned int)e->code >= EXIT_COUNT || !table[e->code]) {
		vm_stop(v->vm, "unknown exit code %d at rip %#lx", e->code, e->rip);
		return EXIT_STOP;
	}
	v->stats.exits[e->code]++;
	return table[e->code](v, e);
}
