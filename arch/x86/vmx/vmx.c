/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Intel VMX back end, struct vmm_ops vmx_ops (hv/vmm.h): VMs with EPT,
 * vCPUs with one VMCS each, entering the guest and turning exits into the
 * neutral struct vm_exit.  The logic lives in the pure files (vmx.h); this
 * file drives the hardware: VMCS set-up, host state, TLB flushes, the run.
 * Intel SDM Vol. 3C: "Virtual Machine Control Structures", "VM Entries",
 * "VM Exits", "VMX Support for Address Translation".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/desc.h"
#include "arch/x86/mm.h"
#include "arch/x86/percpu.h"
#include "arch/x86/emulate/debug.h"
#include "arch/x86/vmx/ept.h"
#include "arch/x86/vmx/hw.h"
#include "arch/x86/vmx/insn.h"
#include "arch/x86/vmx/pml.h"
#include "arch/x86/vmx/vmcs.h"
#include "hv/lib/log.h"
#include "hv/lib/time.h"
#include "hv/mm/memory.h"
#include "hv/lib/spinlock.h"

static const struct vmcs_io *const io = &vmx_hw_io;

#define VEC_DB	1
#define VEC_UD	6
#define VEC_GP	13
#define VEC_AC	17
#define VEC_MC	18
/*
 * #DB and #AC exit (and go back to the guest, exit.c) so that a guest
 * cannot hang the CPU in an endless chain of them, each raised by the
 * delivery of the one before, with no instruction boundary where an
 * interrupt could end the run (CVE-2015-8104, CVE-2015-5307; SVM does the
 * same).  #UD exits so that VMMCALL, AMD's hypercall, is ferry's
 * hypercall here as VMCALL is.  #MC exits so that a machine check while
 * the guest runs is ferry's to report (act_mce), not the guest's.
 */
#define EXCEPTION_BITMAP ((1u << VEC_DB) | (1u << VEC_UD) | (1u << VEC_AC) | (1u << VEC_MC))
/*
 * `debug bad-entry`: activity states are 0-3; any other value fails the
 * guest-state checks of VM entry ("Checks on Guest Non-Register State") on
 * every CPU and in Bochs whatever the controls, so the entry ends in exit
 * reason 33 with bit 31 set.
 */
#define ACTIVITY_ILLEGAL 0xffu

/* ---- VPIDs: one per vCPU, 1..65535 (0 is the host's) ---------------------- */

static uint64_t vpid_map[65536 / 64];
static spinlock_t vpid_lock = SPINLOCK_INIT;

static uint16_t vpid_alloc(void)
{
	uint16_t vpid = 0;

	spin_lock(&vpid_lock);
	for (uint32_t i = 1; i < 65536 && !vpid; i++) {
		if (!(vpid_map[i / 64] & (1ull << (i % 64)))) {
			vpid_map[i / 64] |= 1ull << (i % 64);
			vpid = i;
		}
	}
	spin_unlock(&vpid_lock);
	return vpid;
}

static void vpid_free(uint16_t vpid)
{
	spin_lock(&vpid_lock);
	vpid_map[vpid / 64] &= ~(1ull << (vpid % 64));
	spin_unlock(&vpid_lock);
}

/* ---- VMs: EPT ---------------------------------------------------------- */


static int vmx_vm_init(struct vmm_vm *vm)
{
	struct vmx_vm *xv = calloc(1, sizeof(*xv));
	int rc;

	if (!xv)
		return -ENOMEM;
	rc = pt_init(&vm->gpt, &ept_format, &mem_pt_ops, vmx_cfg.ept_max_page);
	if (rc) {
		free(xv);
		return rc;
	}
	xv->eptp = ept_eptp(&vm->gpt, false);	/* A/D flags: not yet */
	vm->arch = xv;
	return 0;
}

/* No vCPU of vm may run any more.  A later VM reusing the root page is
 * safe: each vCPU flushes its EPTP on every CPU it arrives on. */
static void vmx_vm_destroy(struct vmm_vm *vm)
{
	pt_destroy(&vm->gpt);
	free(vm->arch);
	vm->arch = NULL;
}

/* ---- the VMCS of one vCPU -------------------------------------------------- */

/* Make vx's VMCS current for one vmm_ops call on whatever CPU it comes. */
struct vmcs_use {
	uint64_t flags;
	bool borrowed;		/* not active here before: VMCLEAR after */
};

static bool vmcs_begin(struct vmx_vcpu *vx, struct vmcs_use *u)
{
	int rc;

	u->flags = irq_save();
	rc = vmx_vmcs_load(vx);
	if (rc < 0) {
		irq_restore(u->flags);
		pr_err("vmx: cannot load the VMCS of vCPU %u (%d)", vx->v->id, rc);
		return false;
	}
	u->borrowed = rc == 1;
	return true;
}

static void vmcs_end(struct vmx_vcpu *vx, struct vmcs_use *u)
{
	if (u->borrowed)
		vmx_vmcs_release_local(vx);
	irq_restore(u->flags);
}

/* Host state for this CPU ("Host-State Area"): ferry's per-CPU GDT, TSS,
 * FS/GS bases; written whenever the VMCS becomes active on a CPU. */
static void host_state_write(void)
{
	struct percpu *c = this_cpu();
	struct { uint16_t limit; uint64_t base; } __attribute__((packed)) idtr;

	__asm__ volatile("sidt %0" : "=m"(idtr));
	vmcs_wr(io, VMCS_HOST_CR0, read_cr0());
	vmcs_wr(io, VMCS_HOST_CR3, read_cr3());
	vmcs_wr(io, VMCS_HOST_CR4, read_cr4());
	vmcs_wr(io, VMCS_HOST_CS_SEL, SEL_KCODE);
	vmcs_wr(io, VMCS_HOST_SS_SEL, SEL_KDATA);
	vmcs_wr(io, VMCS_HOST_DS_SEL, SEL_KDATA);
	vmcs_wr(io, VMCS_HOST_ES_SEL, SEL_KDATA);
	vmcs_wr(io, VMCS_HOST_FS_SEL, 0);
	vmcs_wr(io, VMCS_HOST_GS_SEL, 0);
	vmcs_wr(io, VMCS_HOST_TR_SEL, SEL_TSS);
	vmcs_wr(io, VMCS_HOST_FS_BASE, rdmsr(MSR_FS_BASE));
	vmcs_wr(io, VMCS_HOST_GS_BASE, (uint64_t)c);
	vmcs_wr(io, VMCS_HOST_TR_BASE, (uint64_t)&c->tss);
	vmcs_wr(io, VMCS_HOST_GDTR_BASE, (uint64_t)c->gdt.entry);
	vmcs_wr(io, VMCS_HOST_IDTR_BASE, idtr.base);
	vmcs_wr(io, VMCS_HOST_SYSENTER_CS, 0);
	vmcs_wr(io, VMCS_HOST_SYSENTER_ESP, 0);
	vmcs_wr(io, VMCS_HOST_SYSENTER_EIP, 0);
	vmcs_wr(io, VMCS_HOST_EFER, rdmsr(MSR_EFER));
	vmcs_wr(io, VMCS_HOST_PAT, rdmsr(MSR_PAT));
	vmcs_wr(io, VMCS_HOST_RIP, (uint64_t)vmx_exit_point);
}

/* The preemption timer's start value: 1/VMX_BACKSTOP_HZ s. */
static uint32_t backstop_ticks(void)
{
	static uint32_t ticks;

	if (!ticks) {
		uint64_t t = (tsc_hz() / VMX_BACKSTOP_HZ) >> vmx_cfg.preempt_shift;

		ticks = t > UINT32_MAX ? UINT32_MAX : t ? (uint32_t)t : 1;
	}
	return ticks;
}

/* Controls and the guest fields cpu_state does not cover. */
static void vmcs_setup(struct vmx_vcpu *vx, const struct vmx_vm *xv)
{
	if (vmx_cfg.vpid)
		vmcs_wr(io, VMCS_VPID, vx->vpid);
	vmcs_wr(io, VMCS_PIN_CTLS, vmx_cfg.pin);
	vmcs_wr(io, VMCS_PROC_CTLS, vmx_cfg.proc);
	vmcs_wr(io, VMCS_PROC_CTLS2, vmx_cfg.proc2);
	if (vmx_cfg.proc2 & PROC2_PAUSE_LOOP_EXITING) {
		/* a PAUSE loop longer than the window (TSC ticks, PAUSEs at most
		 * the gap apart) exits: SDM Vol. 3 25.1.3 */
		vmcs_wr(io, VMCS_PLE_GAP, VMX_PLE_GAP);
		vmcs_wr(io, VMCS_PLE_WINDOW, VMX_PLE_WINDOW);
	}
	vmcs_wr(io, VMCS_EXIT_CTLS, vmx_cfg.exit);
	vmcs_wr(io, VMCS_ENTRY_CTLS, vmx_cfg.entry);
	vmcs_wr(io, VMCS_EXCEPTION_BITMAP, EXCEPTION_BITMAP);
	vmcs_wr(io, VMCS_PF_ERROR_MASK, 0);
	vmcs_wr(io, VMCS_PF_ERROR_MATCH, 0);
	vmcs_wr(io, VMCS_CR3_TARGET_COUNT, 0);
	vmcs_wr(io, VMCS_EXIT_MSR_STORE_COUNT, 0);
	vmcs_wr(io, VMCS_EXIT_MSR_LOAD_COUNT, 0);
	vmcs_wr(io, VMCS_ENTRY_MSR_LOAD_COUNT, 0);
	vmcs_wr(io, VMCS_MSR_BITMAP, vmx_msr_bitmap_pa);
	vmcs_wr(io, VMCS_EPTP, xv->eptp);
	vmcs_wr(io, VMCS_TSC_OFFSET, 0);
	vmcs_wr(io, VMCS_CR0_MASK, vmx_cfg.cr0_mask);
	vmcs_wr(io, VMCS_CR4_MASK, vmx_cfg.cr4_mask);
	vmcs_wr(io, VMCS_LINK_POINTER, ~0ull);
	vmcs_wr(io, VMCS_GUEST_DEBUGCTL, 0);
	vmcs_wr(io, VMCS_GUEST_ACTIVITY, 0);
	vmcs_wr(io, VMCS_GUEST_INTERRUPTIBILITY, 0);
	vmcs_wr(io, VMCS_GUEST_PENDING_DBG, 0);
	vmcs_wr(io, VMCS_ENTRY_INTR_INFO, 0);
	/* each entry counts down from this value again: an exit leaves the
	 * field as it is without the "save preemption timer" exit control */
	if (vmx_cfg.preempt_timer)
		vmcs_wr(io, VMCS_GUEST_PREEMPTION_TIMER, backstop_ticks());
	vx->soft.proc = vmx_cfg.proc;
}

/* Fill a fresh VMCS on this CPU (then leave it clear in memory). */
static int vmcs_create(struct vmx_vcpu *vx, const struct vmx_vm *xv)
{
	struct vmx_cpu *pc = vmx_this_cpu();
	uint64_t flags = irq_save(), errors = pc->vmcs_errors;
	int rc = vmclear(vx->vmcs_pa);

	if (!rc)
		rc = vmx_vmcs_load(vx);
	if (rc >= 0) {
		vmcs_setup(vx, xv);
		vmx_vmcs_release_local(vx);
		rc = pc->vmcs_errors != errors ? -EIO : 0;
	}
	irq_restore(flags);
	return rc;
}

/* PML needs EPT A/D flags too (pml.h). */
static bool pml_usable(void)
{
	return vmx_cfg.pml && vmx_cfg.ept_ad;
}

static void vcpu_free_arch(struct vmx_vcpu *vx)
{
	if (vx->vpid)
		vpid_free(vx->vpid);
	if (vx->vmcs_pa)
		mem_free_frame(vx->vmcs_pa);
	if (vx->pml_pa)
		mem_free_frame(vx->pml_pa);
	free(vx);
}

static int vmx_vcpu_init(struct vmm_vcpu *v)
{
	struct vmx_vcpu *vx = calloc(1, sizeof(*vx));
	int rc;

	if (!vmx_this_cpu()) {
		free(vx);
		return -ENODEV;		/* VMX is not on here */
	}
	if (!vx)
		return -ENOMEM;
	vx->v = v;
	vx->active_cpu = vx->regs_cpu = vx->last_cpu = -1;
	vx->vmcs_pa = vmx_region_alloc();
	vx->vpid = vmx_cfg.vpid ? vpid_alloc() : 0;
	vx->pml_pa = pml_usable() ? mem_alloc_frame() : 0;
	if (!vx->vmcs_pa || (vmx_cfg.vpid && !vx->vpid) || (pml_usable() && !vx->pml_pa)) {
		vcpu_free_arch(vx);
		return -ENOMEM;
	}
	rc = vmcs_create(vx, v->vm->arch);
	if (rc) {
		pr_err("vmx: setting up the VMCS failed (%d)", rc);
		vcpu_free_arch(vx);
		return rc;
	}
	v->arch = vx;
	return 0;
}

/* The VMCS is cleared wherever it is active first; if its CPU does not
 * answer, the memory is left allocated rather than reused under it. */
static void vmx_vcpu_destroy(struct vmm_vcpu *v)
{
	struct vmx_vcpu *vx = v->arch;
	uint64_t flags;
	int rc;

	if (!vx)
		return;
	flags = irq_save();
	rc = vmx_vmcs_release(vx);
	irq_restore(flags);
	v->arch = NULL;
	if (rc) {
		pr_err("vmx: vCPU %u: VMCS still active on CPU %d: leaking it", v->id, vx->active_cpu);
		return;
	}
	vcpu_free_arch(vx);
}

/* ---- state, events ----------------------------------------------------------- */

static void vmx_get_state(struct vmm_vcpu *v, struct cpu_state *s)
{
	struct vmx_vcpu *vx = v->arch;
	struct vmcs_use u;

	memset(s, 0, sizeof(*s));
	if (vmcs_begin(vx, &u)) {
		vmx_regs_sync(vx);
		vmx_state_read(io, &vmx_cfg, &vx->soft, s);
		vmcs_end(vx, &u);
	}
	memcpy(s->gpr, v->gpr, sizeof(s->gpr));
	s->xcr0 = v->xcr0;
}

static int read_gpa(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	struct vmm_vm *vm = ctx;

	return vm->read_gpa(vm, gpa, buf, len);
}

static void vmx_set_state(struct vmm_vcpu *v, const struct cpu_state *s)
{
	struct vmx_vcpu *vx = v->arch;
	struct vmcs_use u;
	struct vmx_cr_env env = {
		.io = io, .cfg = &vmx_cfg, .soft = &vx->soft, .gpr = v->gpr,
		.read_gpa = read_gpa, .gpa_ctx = v->vm,
	};

	if (vmcs_begin(vx, &u)) {
		uint64_t paging[4] = {
			vmcs_rd(io, VMCS_GUEST_CR0), vmcs_rd(io, VMCS_GUEST_CR3),
			vmcs_rd(io, VMCS_GUEST_CR4), vmcs_rd(io, VMCS_GUEST_EFER),
		};

		vmx_regs_drop(vx);
		vmx_state_write(io, &vmx_cfg, &vx->soft, s);
		/* a new paging state (an arrival, a reset): its PDPTEs, as MOV
		 * CR3 would load them; the same one (a WRMSR or an MMIO
		 * instruction written back) keeps what the CPU holds, since
		 * the guest may have changed its PDPT without reloading CR3 */
		if (paging[0] != vmcs_rd(io, VMCS_GUEST_CR0) ||
		    paging[1] != vmcs_rd(io, VMCS_GUEST_CR3) ||
		    paging[2] != vmcs_rd(io, VMCS_GUEST_CR4) ||
		    paging[3] != vmcs_rd(io, VMCS_GUEST_EFER))
			vmx_cr_load_pdptes(&env);
		vmcs_end(vx, &u);
	}
	memcpy(v->gpr, s->gpr, sizeof(v->gpr));
	v->xcr0 = s->xcr0;
}

static void vmx_inject(struct vmm_vcpu *v, const struct event *e)
{
	struct vmx_vcpu *vx = v->arch;
	struct vmcs_use u;
	int rc = -EIO;

	if (vmcs_begin(vx, &u)) {
		rc = vmx_event_write(io, e);
		vmcs_end(vx, &u);
	}
	if (rc)
		pr_err("vmx: vCPU %u: cannot inject event type %u vector %u", v->id, e->type,
		       e->vector);
}

static bool vmx_intr_allowed_op(struct vmm_vcpu *v)
{
	struct vmx_vcpu *vx = v->arch;
	struct vmcs_use u;
	bool ok = false;

	if (vmcs_begin(vx, &u)) {
		ok = vmx_intr_allowed(io);
		vmcs_end(vx, &u);
	}
	return ok;
}

static void vmx_want_intr_window(struct vmm_vcpu *v, bool on)
{
	struct vmx_vcpu *vx = v->arch;
	uint32_t proc = on ? vx->soft.proc | PROC_INTR_WINDOW_EXITING :
			     vx->soft.proc & ~PROC_INTR_WINDOW_EXITING;
	struct vmcs_use u;

	if (proc == vx->soft.proc || !vmcs_begin(vx, &u))
		return;
	vmcs_wr(io, VMCS_PROC_CTLS, proc);
	vx->soft.proc = proc;
	vmcs_end(vx, &u);
}

static void inject_exception(uint8_t vector, bool has_error, uint32_t error)
{
	struct event ev = { .valid = true, .type = EVENT_EXCEPTION, .vector = vector,
			    .has_error = has_error, .error = error };

	vmx_event_write(io, &ev);
}

/* Inject a #DB for `causes` (X86_DB_*), with DR6 as the CPU would have
 * set it; DR6 lives outside the VMCS (hw.h). */
static void deliver_db(struct vmx_vcpu *vx, uint64_t causes)
{
	vmx_regs_sync(vx);
	vx->soft.hw.dr6 = x86_dr6_after_db(vx->soft.hw.dr6, causes);
	vmx_regs_drop(vx);
	inject_exception(VEC_DB, false, 0);
}

/* Step over the exiting instruction; under RFLAGS.TF it ends in the
 * single-step #DB the CPU would have raised after it. */
static void skip_insn(struct vmx_vcpu *vx, uint8_t len)
{
	if (vmx_skip_insn(io, len))
		deliver_db(vx, X86_DB_BS);
}

static void vmx_skip_insn_op(struct vmm_vcpu *v, uint8_t len)
{
	struct vmx_vcpu *vx = v->arch;
	struct vmcs_use u;

	if (vmcs_begin(vx, &u)) {
		skip_insn(vx, len);
		vmcs_end(vx, &u);
	}
}

/* Native: TSC offsetting alone.  Scaled: the TSC multiplier where the CPU
 * has one (SDM Vol. 3 25.3), else RDTSC exiting (RDTSCP is #UD: "enable
 * RDTSCP" stays off, as the guest's CPUID has no RDTSCP). */
static void vmx_set_tsc(struct vmm_vcpu *v, uint64_t offset, uint64_t mult)
{
	struct vmx_vcpu *vx = v->arch;
	bool scaled = mult != TSC_MULT_ONE, hw = scaled && vmx_cfg.tsc_scaling;
	uint32_t proc = scaled && !hw ? vx->soft.proc | PROC_RDTSC_EXITING :
					vx->soft.proc & ~PROC_RDTSC_EXITING;
	struct vmcs_use u;

	if (!vmcs_begin(vx, &u))
		return;
	vmcs_wr(io, VMCS_TSC_OFFSET, offset);
	if (vmx_cfg.tsc_scaling) {
		vx->soft.proc2_tsc = hw ? PROC2_TSC_SCALING : 0;
		vmcs_wr(io, VMCS_TSC_MULTIPLIER, hw ? mult : TSC_MULT_ONE);
		vmcs_wr(io, VMCS_PROC_CTLS2, vmx_cfg.proc2 | vx->soft.proc2_tsc |
			(vx->pml_on ? PROC2_PML : 0));
	}
	vmcs_wr(io, VMCS_PROC_CTLS, proc);
	vx->soft.proc = proc;
	vmcs_end(vx, &u);
}

/* ---- running ---------------------------------------------------------------- */

/* The vCPU's cached translations on this CPU may be stale: it arrived
 * from another CPU (or never ran here), the core changed the EPT, or an
 * emulated CR write needs the guest TLB flushed (hv/vmm.h TLB rule). */
static void tlb_prepare(struct vmx_vcpu *vx, int cpu)
{
	struct vmm_vm *vm = vx->v->vm;
	uint64_t gen = __atomic_load_n(&vm->gpa_gen, __ATOMIC_ACQUIRE);
	bool moved = vx->last_cpu != cpu;

	if (moved || gen != vx->gen_seen) {
		vmx_flush_ept(((struct vmx_vm *)vm->arch)->eptp);
		vx->gen_seen = gen;
	}
	if (vmx_cfg.vpid && (moved || vx->soft.flush_vpid))
		vmx_flush_vpid(vx->vpid);
	vx->soft.flush_vpid = false;	/* without VPIDs every entry flushes */
	vx->last_cpu = cpu;
}

/* ---- dirty logging with PML (pml.h, hv/mm/dirty.h) ------------------------ */

/* Before an entry: PML and EPT A/D on exactly while the VM's dirty log
 * wants hardware logging.  The switch flushes the EPT context, so that no
 * translation cached with the other A/D setting survives it. */
static void pml_sync(struct vmx_vcpu *vx)
{
	struct vmm_vm *vm = vx->v->vm;
	bool want = vx->pml_pa && dirty_log_hw_on(vm->dirty);

	if (want == vx->pml_on)
		return;
	if (want) {
		vx->pml_top = vmx_pml_top();
		vmcs_wr(io, VMCS_PML_ADDR, vx->pml_pa);
		vmcs_wr(io, VMCS_GUEST_PML_INDEX, vx->pml_top);
	}
	vmcs_wr(io, VMCS_PROC_CTLS2, vmx_cfg.proc2 | vx->soft.proc2_tsc | (want ? PROC2_PML : 0));
	vmcs_wr(io, VMCS_EPTP, ept_eptp(&vm->gpt, want));
	vmx_flush_ept(((struct vmx_vm *)vm->arch)->eptp);
	vx->pml_on = want;
}

/* After every exit while PML is on: the log into the dirty log, then the
 * index back to the top (an exit of a failed entry logged nothing). */
static void pml_drain(struct vmx_vcpu *vx, uint32_t reason)
{
	uint64_t index;

	if (!vx->pml_on || (reason & EXIT_REASON_ENTRY_FAILURE))
		return;
	index = vmcs_rd(io, VMCS_GUEST_PML_INDEX);
	if (index == vx->pml_top)
		return;
	vmx_pml_drain(vx->v->vm->dirty, phys_to_virt(vx->pml_pa), index, vx->pml_top,
		      (reason & EXIT_REASON_BASIC_MASK) == VMX_EXIT_PML_FULL);
	vx->pml_top = vmx_pml_top();
	vmcs_wr(io, VMCS_GUEST_PML_INDEX, vx->pml_top);
}

static void exit_in_words(struct vm_exit *e, enum exit_code code, uint32_t reason,
			  const char *what)
{
	e->code = code;
	e->u.vendor.reason = reason;
	e->u.vendor.what = what;
}

/* VMLAUNCH/VMRESUME itself failed: the controls or host state are wrong. */
static void entry_error(struct vmx_vcpu *vx, int rc, struct vm_exit *e)
{
	uint32_t err = rc == 2 ? (uint32_t)vmcs_rd(io, VMCS_INSN_ERROR) : 0;
	const char *insn = vx->launched ? "VMRESUME" : "VMLAUNCH";

	if (rc == 2)
		snprintf(vx->what, sizeof(vx->what), "VM-instruction error %u: %s (%s)", err,
			 vmx_insn_error_name(err), insn);
	else
		snprintf(vx->what, sizeof(vx->what), "%s: VMfailInvalid (no current VMCS)", insn);
	e->rip = vmcs_rd(io, VMCS_GUEST_RIP);
	exit_in_words(e, EXIT_INVALID, err, vx->what);
	vx->failed = true;
	pr_err("vmx: vCPU %u of %s: %s", vx->v->id, vx->v->vm->name, vx->what);
}

static void cr_exit(struct vmx_vcpu *vx, const struct vmx_exit_info *x, struct vm_exit *e)
{
	struct vmx_cr_env env = {
		.io = io, .cfg = &vmx_cfg, .soft = &vx->soft, .gpr = vx->v->gpr,
		.read_gpa = read_gpa, .gpa_ctx = vx->v->vm,
	};

	switch (vmx_cr_access(&env, x->qual)) {
	case VMX_CR_DONE:
		skip_insn(vx, e->inst_len);
		break;
	case VMX_CR_GP:
		inject_exception(VEC_GP, true, 0);
		break;
	default:
		snprintf(vx->what, sizeof(vx->what), "control-register access %#llx not emulated",
			 (unsigned long long)x->qual);
		exit_in_words(e, EXIT_UNHANDLED, VMX_EXIT_CR_ACCESS, vx->what);
	}
}

/* #UD: VMMCALL, AMD's hypercall, is ferry's hypercall here too (the core
 * steps over it as over VMCALL); any other #UD, or one whose instruction
 * cannot be read back, goes to the guest unchanged. */
static void ud_exit(struct vmx_vcpu *vx, struct vm_exit *e)
{
	const struct virt_caps *caps = &this_cpu()->caps;
	struct gwalk_env g = {
		.maxphyaddr = caps->maxphyaddr, .gbpages = caps->gbpages,
		.read_gpa = read_gpa, .ctx = vx->v->vm,
	};
	int len = vmx_ud_hypercall(io, &vmx_cfg, &g);

	if (len > 0) {
		e->code = EXIT_HYPERCALL;
		e->inst_len = (uint8_t)len;
		return;
	}
	inject_exception(VEC_UD, false, 0);
}

/* ---- what the back end settles itself, by enum vmx_action ------------------ */

typedef void act_fn(struct vmx_vcpu *vx, const struct vmx_exit_info *x, struct vm_exit *e);

static void act_core(struct vmx_vcpu *vx, const struct vmx_exit_info *x, struct vm_exit *e)
{
	(void)e;
	if ((x->reason & EXIT_REASON_BASIC_MASK) == VMX_EXIT_EPT_MISCONFIG)
		pr_err("vmx: %s: EPT misconfiguration at guest-physical %#lx (a ferry bug)",
		       vx->v->vm->name, x->gpa);
}

/* A machine check while the guest ran, or during VM entry: the exit took
 * it from the CPU, which calls no handler of ours after it; ferry
 * reports it and stops. */
static void act_mce(struct vmx_vcpu *vx, const struct vmx_exit_info *x, struct vm_exit *e)
{
	(void)vx, (void)x, (void)e;
	trap_guest_machine_check();
}

/* The host's NMI: its handler, as if it had come outside a guest. */
static void act_nmi(struct vmx_vcpu *vx, const struct vmx_exit_info *x, struct vm_exit *e)
{
	(void)vx, (void)x, (void)e;
	__asm__ volatile("int $2" ::: "memory");
}

static void act_skip(struct vmx_vcpu *vx, const struct vmx_exit_info *x, struct vm_exit *e)
{
	(void)x;
	skip_insn(vx, e->inst_len);
}

static void act_ud(struct vmx_vcpu *vx, const struct vmx_exit_info *x, struct vm_exit *e)
{
	(void)vx, (void)x, (void)e;
	inject_exception(VEC_UD, false, 0);
}

/* #DB: replaces an event whose delivery raised it. */
static void act_db(struct vmx_vcpu *vx, const struct vmx_exit_info *x, struct vm_exit *e)
{
	(void)e;
	deliver_db(vx, vmx_db_exit(io, x));
}

/* ICEBP: a trap, so after the instruction, with DR6 untouched. */
static void act_icebp(struct vmx_vcpu *vx, const struct vmx_exit_info *x, struct vm_exit *e)
{
	(void)vx, (void)x;
	vmx_skip_insn(io, e->inst_len);
	inject_exception(VEC_DB, false, 0);
}

static void act_reflect(struct vmx_vcpu *vx, const struct vmx_exit_info *x, struct vm_exit *e)
{
	(void)vx, (void)e;
	inject_exception(x->intr_info & INTR_INFO_VECTOR_MASK,
			 x->intr_info & INTR_INFO_ERROR_VALID, x->intr_error);
}

static void act_ud_check(struct vmx_vcpu *vx, const struct vmx_exit_info *x, struct vm_exit *e)
{
	(void)x;
	ud_exit(vx, e);
}

static void act_failed(struct vmx_vcpu *vx, const struct vmx_exit_info *x, struct vm_exit *e)
{
	(void)x, (void)e;
	vx->failed = true;
	pr_err("vmx: vCPU %u of %s: %s", vx->v->id, vx->v->vm->name, vx->what);
}

static act_fn *const actions[VMX_ACT_COUNT] = {
	[VMX_ACT_CORE] = act_core,
	[VMX_ACT_NMI] = act_nmi,
	[VMX_ACT_SKIP] = act_skip,
	[VMX_ACT_UD] = act_ud,
	[VMX_ACT_CR] = cr_exit,
	[VMX_ACT_DB] = act_db,
	[VMX_ACT_ICEBP] = act_icebp,
	[VMX_ACT_REFLECT] = act_reflect,
	[VMX_ACT_UD_CHECK] = act_ud_check,
	[VMX_ACT_FAILED] = act_failed,
	[VMX_ACT_MCE] = act_mce,
};

/* After an exit: decode it (exit.c), then do what the back end does itself. */
static void exit_process(struct vmx_vcpu *vx, struct vm_exit *e)
{
	struct vmx_exit_info x;
	enum vmx_action a;

	vmx_exit_info_read(io, &x);
	pml_drain(vx, x.reason);
	vmx_exit_fixup(io, &x);
	a = vmx_exit_decode(&x, vx->v->gpr, e, vx->what, sizeof(vx->what));
	if ((unsigned int)a < VMX_ACT_COUNT && actions[a])
		actions[a](vx, &x, e);
}

/* vmm_ops.run: interrupts are off (hv/vmm.h). */
static void vmx_run(struct vmm_vcpu *v, struct vm_exit *e)
{
	struct vmx_vcpu *vx = v->arch;
	int rc;

	memset(e, 0, sizeof(*e));
	if (vx->failed) {	/* the core stops the guest; never enter again */
		exit_in_words(e, EXIT_INVALID, 0, vx->what);
		return;
	}
	rc = vmx_vmcs_load(vx);
	if (rc < 0) {
		snprintf(vx->what, sizeof(vx->what), "the VMCS could not be loaded (%d)", rc);
		exit_in_words(e, EXIT_UNHANDLED, 0, vx->what);
		return;
	}
	if (rc == 1)
		host_state_write();
	tlb_prepare(vx, this_cpu()->index);
	pml_sync(vx);
	vmx_regs_load(vx);
	vmcs_wr(io, VMCS_GUEST_RSP, v->gpr[GPR_RSP]);
	if (__atomic_exchange_n(&v->bad_entry, false, __ATOMIC_ACQ_REL))
		vmcs_wr(io, VMCS_GUEST_ACTIVITY, ACTIVITY_ILLEGAL);
	rc = vmx_enter(v->gpr, vx->launched);
	if (rc) {
		entry_error(vx, rc, e);
		return;
	}
	vx->launched = true;
	v->gpr[GPR_RSP] = vmcs_rd(io, VMCS_GUEST_RSP);
	exit_process(vx, e);
}

const struct vmm_ops vmx_ops = {
	.name = "VMX",
	.cpu_enable = vmx_cpu_enable,
	.vm_init = vmx_vm_init,
	.vm_destroy = vmx_vm_destroy,
	.vcpu_init = vmx_vcpu_init,
	.vcpu_destroy = vmx_vcpu_destroy,
	.run = vmx_run,
	.get_state = vmx_get_state,
	.set_state = vmx_set_state,
	.inject = vmx_inject,
	.intr_allowed = vmx_intr_allowed_op,
	.want_intr_window = vmx_want_intr_window,
	.skip_insn = vmx_skip_insn_op,
	.set_tsc = vmx_set_tsc,
};
