/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The AMD SVM back end (svm_ops, hv/vmm.h): turning SVM on per CPU, the
 * memory behind VMs and vCPUs (NPT, permission maps, VMCBs) and run().
 * This file and entry.S touch the CPU; the logic they call lives in
 * the pure files listed in svm.h.  AMD64 APM Vol. 2 chapter 15.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/mm.h"
#include "arch/x86/percpu.h"
#include "arch/x86/svm/npt.h"
#include "arch/x86/svm/svm.h"
#include "hv/lib/log.h"
#include "hv/mm/frame.h"
#include "hv/mm/memory.h"

#define CPUID_SVM_FEAT		0x8000000a
#define SVM_FEAT_FLUSH_BY_ASID	(1u << 6)	/* CPUID 8000_000Ah EDX */
#define IOPM_FRAMES		(SVM_IOPM_SIZE / FRAME_SIZE)
#define MSRPM_FRAMES		(SVM_MSRPM_SIZE / FRAME_SIZE)

/* ---- debug registers: DR0-3 are not in the VMCB ------------------------------- */

#define DEFINE_DR(n)							\
static inline uint64_t get_dr##n(void)					\
{									\
	uint64_t v;							\
	__asm__ volatile("mov %%dr" #n ", %0" : "=r"(v));		\
	return v;							\
}									\
static inline void set_dr##n(uint64_t v)				\
{									\
	__asm__ volatile("mov %0, %%dr" #n : : "r"(v));			\
}
DEFINE_DR(0)
DEFINE_DR(1)
DEFINE_DR(2)
DEFINE_DR(3)
#undef DEFINE_DR

static void set_dr(int n, uint64_t v)
{
	switch (n) {
	case 0: set_dr0(v); break;
	case 1: set_dr1(v); break;
	case 2: set_dr2(v); break;
	case 3: set_dr3(v); break;
	}
}

/* Load the guest's DR0-3, skipping those this CPU holds already. */
static void load_guest_dr(struct svm_cpu *c, const struct svm_vcpu *sv)
{
	for (int i = 0; i < 4; i++)
		if (c->hw_dr[i] != sv->dr[i]) {
			set_dr(i, sv->dr[i]);
			c->hw_dr[i] = sv->dr[i];
		}
}

/* The guest writes DR0-3 without exits: read them back after each run. */
static void save_guest_dr(struct svm_cpu *c, struct svm_vcpu *sv)
{
	sv->dr[0] = c->hw_dr[0] = get_dr0();
	sv->dr[1] = c->hw_dr[1] = get_dr1();
	sv->dr[2] = c->hw_dr[2] = get_dr2();
	sv->dr[3] = c->hw_dr[3] = get_dr3();
}

/* ---- per CPU ------------------------------------------------------------------- */

static void svm_probe(struct svm_cpu *c, const struct virt_caps *caps)
{
	c->nrips = caps->next_rip;
	c->gbpages = caps->gbpages;
	c->maxphyaddr = caps->maxphyaddr;
	svm_asid_cpu_init(&c->asid, caps->asids,
			  cpuid(CPUID_SVM_FEAT, 0).edx & SVM_FEAT_FLUSH_BY_ASID);
	c->hw_dr[0] = get_dr0();
	c->hw_dr[1] = get_dr1();
	c->hw_dr[2] = get_dr2();
	c->hw_dr[3] = get_dr3();
}

/* APM 15.4 "Enabling SVM" and 15.30.4 "VM_HSAVE_PA MSR". */
static int svm_cpu_enable(void)
{
	struct percpu *p = this_cpu();
	struct svm_cpu *c;

	if (p->caps.kind != VIRT_SVM || !p->caps.usable)
		return -ENODEV;
	if (p->virt)
		return 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->hsave_pa = mem_alloc_frame();
	c->host_vmcb_pa = mem_alloc_frame();
	if (!c->hsave_pa || !c->host_vmcb_pa) {
		if (c->hsave_pa)
			mem_free_frame(c->hsave_pa);
		if (c->host_vmcb_pa)
			mem_free_frame(c->host_vmcb_pa);
		free(c);
		return -ENOMEM;
	}
	svm_probe(c, &p->caps);
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SVME);
	wrmsr(MSR_VM_HSAVE_PA, c->hsave_pa);
	/* FS, GS, TR, LDTR and the syscall MSRs were set at bring-up
	 * (arch/x86/smp.c, desc.c) and stay: one VMSAVE serves every exit's
	 * VMLOAD host (APM 15.5.2). */
	__asm__ volatile("vmsave %%rax" : : "a" (c->host_vmcb_pa) : "memory");
	p->virt = c;
	pr_debug("svm: cpu %u: on, %u ASIDs%s%s", p->index, c->asid.max + 1,
		 c->asid.flush_by_asid ? ", flush-by-ASID" : "",
		 c->nrips ? ", NRIP-save" : ", no NRIP-save");
	return 0;
}

/* ---- per VM -------------------------------------------------------------------- */


static void free_maps(struct svm_vm *sm)
{
	if (sm->iopm_pa)
		frame_free_contig(sm->iopm_pa, IOPM_FRAMES);
	if (sm->msrpm_pa)
		frame_free_contig(sm->msrpm_pa, MSRPM_FRAMES);
	free(sm);
}

/* The NPT starts empty: the core maps guest RAM, nothing else. */
static int svm_vm_init(struct vmm_vm *vm)
{
	struct svm_vm *sm = calloc(1, sizeof(*sm));
	int err;

	if (!sm)
		return -ENOMEM;
	sm->iopm_pa = frame_alloc_contig(IOPM_FRAMES, 1);
	sm->msrpm_pa = frame_alloc_contig(MSRPM_FRAMES, 1);
	if (!sm->iopm_pa || !sm->msrpm_pa) {
		free_maps(sm);
		return -ENOMEM;
	}
	svm_iopm_fill(phys_to_virt(sm->iopm_pa));
	svm_msrpm_fill(phys_to_virt(sm->msrpm_pa));
	err = pt_init(&vm->gpt, &npt_format, &mem_pt_ops, PT_SIZE_2M);
	if (err) {
		free_maps(sm);
		return err;
	}
	vm->arch = sm;
	return 0;
}

/* @pre no vCPU of vm exists any more. */
static void svm_vm_destroy(struct vmm_vm *vm)
{
	pt_destroy(&vm->gpt);
	if (vm->arch)
		free_maps(vm->arch);
	vm->arch = NULL;
}

/* ---- per vCPU ----------------------------------------------------------------- */

/* Reset state into the fresh VMCB, leaving the core's v->gpr and v->xcr0. */
static void vmcb_reset(struct vmm_vcpu *v)
{
	uint64_t gpr[GPR_COUNT], xcr0 = v->xcr0;
	struct cpu_state s;

	memcpy(gpr, v->gpr, sizeof(gpr));
	svm_reset_state(&s);
	svm_set_state(v, &s);
	memcpy(v->gpr, gpr, sizeof(gpr));
	v->xcr0 = xcr0;
}

static int svm_vcpu_init(struct vmm_vcpu *v)
{
	struct svm_vm *sm = v->vm->arch;
	struct svm_vcpu *sv;

	if (!sm)
		return -EINVAL;		/* vm_init first */
	sv = calloc(1, sizeof(*sv));
	if (!sv)
		return -ENOMEM;
	sv->vmcb_pa = mem_alloc_frame();
	if (!sv->vmcb_pa) {
		free(sv);
		return -ENOMEM;
	}
	sv->vmcb = phys_to_virt(sv->vmcb_pa);
	svm_vmcb_init(sv->vmcb, sm->iopm_pa, sm->msrpm_pa, npt_ncr3(&v->vm->gpt));
	if (cpus[0].caps.pause_exiting) {	/* a spinning guest exits (APM 15.14.4) */
		sv->vmcb->ctl.pause_filter_count = SVM_PAUSE_FILTER_COUNT;
		sv->vmcb->ctl.intercept1 |= VMCB_I1_PAUSE;
	}
	svm_asid_vcpu_init(&sv->asid);
	v->arch = sv;
	vmcb_reset(v);
	return 0;
}

static void svm_vcpu_destroy(struct vmm_vcpu *v)
{
	struct svm_vcpu *sv = v->arch;

	if (!sv)
		return;
	mem_free_frame(sv->vmcb_pa);
	free(sv);
	v->arch = NULL;
}

/* ---- run -------------------------------------------------------------------------- */

static int read_guest(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	struct vmm_vm *vm = ctx;

	return vm->read_gpa(vm, gpa, buf, len);
}

static void exit_env(const struct svm_cpu *c, struct vmm_vm *vm, struct svm_exit_env *env)
{
	env->nrips = c->nrips;
	env->maxphyaddr = c->maxphyaddr;
	env->gbpages = c->gbpages;
	env->read_gpa = read_guest;
	env->ctx = vm;
}

static void not_enabled(struct vm_exit *exit)
{
	memset(exit, 0, sizeof(*exit));
	exit->code = EXIT_INVALID;
	exit->u.vendor.what = "SVM is not enabled on this CPU";
}

/*
 * VMCB clean bits (APM 15.15.3) are always 0: the CPU reloads everything
 * at each VMRUN, which is always right.  Caching would save a little on
 * real hardware (QEMU ignores the bits) at the price of tracking every
 * VMCB write; it can come later.
 */
static void svm_run(struct vmm_vcpu *v, struct vm_exit *exit)
{
	struct percpu *p = this_cpu();
	struct svm_cpu *c = p->virt;
	struct svm_vcpu *sv = v->arch;
	struct vmcb *vmcb = sv->vmcb;
	uint64_t gpa_gen = __atomic_load_n(&v->vm->gpa_gen, __ATOMIC_ACQUIRE);
	struct svm_exit_env env;

	if (!c) {
		not_enabled(exit);
		return;
	}
	vmcb->ctl.tlb_control = svm_asid_prepare(&c->asid, (int)p->index, &sv->asid, gpa_gen);
	vmcb->ctl.asid = sv->asid.asid;
	vmcb->ctl.clean = 0;
	vmcb->save.rax = v->gpr[GPR_RAX];
	vmcb->save.rsp = v->gpr[GPR_RSP];
	load_guest_dr(c, sv);
	/* `debug bad-entry`: CR0.NW without CR0.CD is one of the states VMRUN
	 * refuses with VMEXIT_INVALID (APM 15.5.1; QEMU checks it too). */
	if (__atomic_exchange_n(&v->bad_entry, false, __ATOMIC_ACQ_REL))
		vmcb->save.cr0 = (vmcb->save.cr0 | CR0_NW) & ~CR0_CD;

	svm_vmrun(sv->vmcb_pa, c->host_vmcb_pa, v->gpr);

	vmcb->ctl.tlb_control = VMCB_TLB_NONE;
	v->gpr[GPR_RAX] = vmcb->save.rax;
	v->gpr[GPR_RSP] = vmcb->save.rsp;
	save_guest_dr(c, sv);
	exit_env(c, v->vm, &env);
	svm_handle_exit(v, &env, exit);
}

const struct vmm_ops svm_ops = {
	.name = "SVM",
	.cpu_enable = svm_cpu_enable,
	.vm_init = svm_vm_init,
	.vm_destroy = svm_vm_destroy,
	.vcpu_init = svm_vcpu_init,
	.vcpu_destroy = svm_vcpu_destroy,
	.run = svm_run,
	.get_state = svm_get_state,
	.set_state = svm_set_state,
	.inject = svm_inject,
	.intr_allowed = svm_intr_allowed,
	.want_intr_window = svm_want_intr_window,
	.skip_insn = svm_skip_insn,
	.set_tsc = svm_set_tsc,
};
