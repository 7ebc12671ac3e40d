/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * VMX on each CPU: IA32_FEATURE_CONTROL, the CR0/CR4 fixed bits, VMXON
 * (Intel SDM Vol. 3C "Enabling and Entering VMX Operation", "Restrictions
 * on VMX Operation"); where each VMCS is active and the IPI that releases
 * it; the guest registers left in the CPU; INVEPT/INVVPID.  See hw.h for
 * the rules.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/desc.h"
#include "arch/x86/mm.h"
#include "arch/x86/paging.h"
#include "arch/x86/percpu.h"
#include "arch/x86/vmx/hw.h"
#include "arch/x86/vmx/insn.h"
#include "arch/x86/vmx/pml.h"
#include "arch/x86/vmx/vmcs.h"
#include "hv/lib/log.h"
#include "hv/mm/memory.h"
#include "hv/lib/time.h"

#define MSR_STAR	0xc0000081
#define MSR_LSTAR	0xc0000082
#define MSR_CSTAR	0xc0000083
#define MSR_SFMASK	0xc0000084
#define RELEASE_TIMEOUT_US 2000000	/* the owner has interrupts off this long: give up */

struct vmx_config vmx_cfg;
uint64_t vmx_msr_bitmap_pa;
static bool cfg_set;
static spinlock_t cfg_lock = SPINLOCK_INIT;

struct vmx_cpu *vmx_this_cpu(void)
{
	return this_cpu()->virt;
}

/* ---- VMREAD/VMWRITE behind struct vmcs_io ------------------------------- */

static void vmcs_error(const char *op, uint32_t field, int rc)
{
	struct vmx_cpu *pc = vmx_this_cpu();
	uint64_t err = 0;

	if (pc && pc->vmcs_errors++ >= 8)
		return;		/* a bug repeats every exit: say it a few times */
	if (rc == -EIO)
		vmread(VMCS_INSN_ERROR, &err);
	pr_err("vmx: %s of field %#x failed: %s", op, field,
	       rc == -EIO ? vmx_insn_error_name(err) : "no current VMCS");
}

static uint64_t hw_read(void *ctx, uint32_t field)
{
	uint64_t v = 0;
	int rc = vmread(field, &v);

	(void)ctx;
	if (rc)
		vmcs_error("VMREAD", field, rc);
	return v;
}

static void hw_write(void *ctx, uint32_t field, uint64_t value)
{
	int rc = vmwrite(field, value);

	(void)ctx;
	if (rc)
		vmcs_error("VMWRITE", field, rc);
}

const struct vmcs_io vmx_hw_io = { .read = hw_read, .write = hw_write };

/* ---- guest registers kept in the CPU ------------------------------------ */

static void regs_save(struct vmx_guest_regs *r)
{
	r->cr2 = read_cr2();
	r->dr0 = read_dr0();
	r->dr1 = read_dr1();
	r->dr2 = read_dr2();
	r->dr3 = read_dr3();
	r->dr6 = read_dr6();
	r->star = rdmsr(MSR_STAR);
	r->lstar = rdmsr(MSR_LSTAR);
	r->cstar = rdmsr(MSR_CSTAR);
	r->sfmask = rdmsr(MSR_SFMASK);
	r->kernel_gs_base = rdmsr(MSR_KERNEL_GS_BASE);
}

/* The values were made loadable by vmx_state_write (canonical, widths). */
static void regs_restore(const struct vmx_guest_regs *r)
{
	write_cr2(r->cr2);
	write_dr0(r->dr0);
	write_dr1(r->dr1);
	write_dr2(r->dr2);
	write_dr3(r->dr3);
	write_dr6(r->dr6);
	wrmsr(MSR_STAR, r->star);
	wrmsr(MSR_LSTAR, r->lstar);
	wrmsr(MSR_CSTAR, r->cstar);
	wrmsr(MSR_SFMASK, r->sfmask);
	wrmsr(MSR_KERNEL_GS_BASE, r->kernel_gs_base);
}

static void regs_give_back(struct vmx_cpu *pc)
{
	struct vmx_vcpu *owner = pc->regs_owner;

	if (!owner)
		return;
	regs_save(&owner->soft.hw);
	owner->regs_cpu = -1;
	pc->regs_owner = NULL;
}

void vmx_regs_load(struct vmx_vcpu *vx)
{
	struct vmx_cpu *pc = vmx_this_cpu();

	if (pc->regs_owner == vx)
		return;
	regs_give_back(pc);
	regs_restore(&vx->soft.hw);
	pc->regs_owner = vx;
	vx->regs_cpu = pc->index;
}

void vmx_regs_sync(struct vmx_vcpu *vx)
{
	if (vx->regs_cpu == (int)vmx_this_cpu()->index)
		regs_save(&vx->soft.hw);
}

void vmx_regs_drop(struct vmx_vcpu *vx)
{
	struct vmx_cpu *pc = vmx_this_cpu();

	if (pc->regs_owner == vx) {
		pc->regs_owner = NULL;
		vx->regs_cpu = -1;
	}
}

/* ---- where a VMCS is active ----------------------------------------------- */

/* On the CPU holding it: VMCLEAR (the data reaches memory, launch state
 * clear) and hand back the guest registers. */
static int release_here(struct vmx_vcpu *vx)
{
	struct vmx_cpu *pc = vmx_this_cpu();
	int rc;

	if (vx->regs_cpu == (int)pc->index)
		regs_give_back(pc);
	if (vx->active_cpu != (int)pc->index)
		return 0;
	rc = vmclear(vx->vmcs_pa);
	if (rc)
		pc->vmcs_errors++;
	if (pc->current == vx)
		pc->current = NULL;
	vx->launched = false;
	__atomic_store_n(&vx->active_cpu, -1, __ATOMIC_RELEASE);
	return rc;
}

static void vmclear_failed(const struct vmx_vcpu *vx, int cpu, int rc)
{
	pr_err("vmx: VMCLEAR of %#lx on CPU %d failed (%d)", vx->vmcs_pa, cpu, rc);
}

void vmx_vmcs_release_local(struct vmx_vcpu *vx)
{
	int rc = release_here(vx);

	if (rc)
		vmclear_failed(vx, (int)vmx_this_cpu()->index, rc);
}

/* A request another CPU left in our mailbox (IPI, or polled while we wait
 * for one of ours, so two CPUs asking each other cannot deadlock). */
static void serve_release(struct vmx_cpu *pc)
{
	struct vmx_vcpu *vx = __atomic_load_n(&pc->req, __ATOMIC_ACQUIRE);

	if (!vx)
		return;
	/* maybe in the IPI's handler: no logging here (the log's lock may be
	 * held by what it interrupted); the asking CPU reports a failure */
	pc->req_rc = release_here(vx);
	/* only this request is answered: if its sender gave up meanwhile
	 * (release_remote's timeout) and another CPU asked for another VMCS,
	 * that one must stay asked */
	__atomic_compare_exchange_n(&pc->req, &vx, NULL, false, __ATOMIC_ACQ_REL,
				    __ATOMIC_ACQUIRE);
}

static void release_irq(struct trap_frame *tf)
{
	(void)tf;
	if (vmx_this_cpu())
		serve_release(vmx_this_cpu());
	apic_eoi();
}

/* Ask CPU cpu to release vx and wait; -ETIMEDOUT if it does not answer. */
static int release_remote(struct vmx_vcpu *vx, int cpu)
{
	struct vmx_cpu *me = vmx_this_cpu(), *t = cpus[cpu].virt;
	uint64_t deadline = time_now_us() + RELEASE_TIMEOUT_US;
	struct vmx_vcpu *expected = vx;
	bool cancelled;
	int rc;

	while (!spin_trylock(&t->req_lock)) {
		serve_release(me);
		cpu_relax();
	}
	__atomic_store_n(&t->req, vx, __ATOMIC_RELEASE);
	apic_send_ipi(cpus[cpu].apic_id, VMX_VEC_RELEASE);
	while (__atomic_load_n(&t->req, __ATOMIC_ACQUIRE) && time_now_us() < deadline) {
		serve_release(me);
		cpu_relax();
	}
	cancelled = __atomic_compare_exchange_n(&t->req, &expected, NULL, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	rc = cancelled ? 0 : t->req_rc;
	spin_unlock(&t->req_lock);
	if (rc)
		vmclear_failed(vx, cpu, rc);
	if (cancelled)
		pr_err("vmx: CPU %d did not release a VMCS within %u ms", cpu,
		       RELEASE_TIMEOUT_US / 1000);
	return cancelled ? -ETIMEDOUT : 0;
}

int vmx_vmcs_release(struct vmx_vcpu *vx)
{
	int cpu = __atomic_load_n(&vx->active_cpu, __ATOMIC_ACQUIRE);

	if (cpu < 0)
		return 0;
	if (cpu == (int)vmx_this_cpu()->index) {
		vmx_vmcs_release_local(vx);
		return 0;
	}
	return release_remote(vx, cpu);
}

/* Make vx's VMCS current here, taking it from another CPU if need be. */
int vmx_vmcs_load(struct vmx_vcpu *vx)
{
	struct vmx_cpu *pc = vmx_this_cpu();
	int cpu = __atomic_load_n(&vx->active_cpu, __ATOMIC_ACQUIRE), rc;

	if (cpu == (int)pc->index) {
		if (pc->current != vx && (rc = vmptrld(vx->vmcs_pa)))
			return rc;
		pc->current = vx;
		return 0;
	}
	if (cpu >= 0 && (rc = release_remote(vx, cpu)))
		return rc;
	rc = vmptrld(vx->vmcs_pa);
	if (rc)
		return rc;
	pc->current = vx;
	vx->launched = false;
	__atomic_store_n(&vx->active_cpu, (int)pc->index, __ATOMIC_RELEASE);
	return 1;
}

/* ---- TLB ------------------------------------------------------------------ */

void vmx_flush_ept(uint64_t eptp)
{
	int rc = vmx_cfg.invept_single ? invept(INVEPT_SINGLE, eptp) : invept(INVEPT_ALL, 0);

	if (rc)
		pr_err("vmx: INVEPT failed (%d)", rc);
}

void vmx_flush_vpid(uint16_t vpid)
{
	int rc = vmx_cfg.invvpid_single ? invvpid(INVVPID_SINGLE, vpid) : invvpid(INVVPID_ALL, 0);

	if (rc)
		pr_err("vmx: INVVPID failed (%d)", rc);
}

/* ---- turning VMX on --------------------------------------------------------- */

static void report_config(const struct vmx_config *c)
{
	pr_info("vmx: VMCS revision %#x, VPID %s, virtual NMIs %s, EPT %s pages, "
		"EPT A/D %s, PML %s (dirty log: %s), preemption timer %s", c->revision,
		c->vpid ? "on" : "off", c->vnmi ? "on" : "off",
		c->ept_max_page == PT_SIZE_2M ? "2 MiB" : "4 KiB",
		c->ept_ad ? "available" : "absent", c->pml ? "available" : "absent",
		c->pml && c->ept_ad ? "pml" : "write-protect", c->preempt_timer ? "on" : "off");
}

/* The boot CPU's configuration is everyone's; the shared MSR bitmap and
 * the release IPI are set up once.  Later CPUs must match. */
static int config_adopt(const struct vmx_config *cfg)
{
	int rc = 0;

	spin_lock(&cfg_lock);
	if (!cfg_set) {
		uint64_t pa = mem_alloc_frame();
		if (!pa) {
			rc = -ENOMEM;
		} else {
			vmx_msr_bitmap_init(phys_to_virt(pa));
			vmx_msr_bitmap_pa = pa;
			vmx_cfg = *cfg;
			cfg_set = true;
			if (cfg->pml && cfg->ept_ad)
				dirty_hw_register(&vmx_pml_tracker);
			irq_register(VMX_VEC_RELEASE, release_irq);
			report_config(cfg);
		}
	} else if (memcmp(&vmx_cfg, cfg, sizeof(*cfg))) {
		rc = -ENOTSUP;
	}
	spin_unlock(&cfg_lock);
	return rc;
}

/* Lock IA32_FEATURE_CONTROL with VMX outside SMX if the firmware left it
 * open; refuse if it locked VMX off. */
static int feature_control(void)
{
	uint64_t fc = rdmsr(MSR_FEATURE_CONTROL);

	if (fc & FEATURE_CONTROL_LOCK)
		return (fc & FEATURE_CONTROL_VMX_OUTSIDE_SMX) ? 0 : -EPERM;
	wrmsr(MSR_FEATURE_CONTROL, fc | FEATURE_CONTROL_VMX_OUTSIDE_SMX | FEATURE_CONTROL_LOCK);
	return 0;
}

/* CR0/CR4 as VMX operation requires (fixed bits, CR4.VMXE). */
static void cr_fixed(const struct vmx_caps *caps)
{
	uint64_t cr0 = read_cr0(), cr4 = read_cr4();
	uint64_t ncr0 = (cr0 | caps->cr0_fixed0) & caps->cr0_fixed1;
	uint64_t ncr4 = (cr4 | caps->cr4_fixed0 | CR4_VMXE) & caps->cr4_fixed1;

	if (ncr0 != cr0)
		write_cr0(ncr0);
	if (ncr4 != cr4)
		write_cr4(ncr4);
}

/* A zeroed frame with the revision id, below 4 GiB if VMX_BASIC says so. */
uint64_t vmx_region_alloc(void)
{
	uint64_t pa = mem_alloc_frame();

	if (!pa)
		return 0;
	if (vmx_cfg.pa32 && pa >> 32) {
		mem_free_frame(pa);
		return 0;
	}
	*(uint32_t *)phys_to_virt(pa) = vmx_cfg.revision;
	return pa;
}

static int vmx_on(struct percpu *c)
{
	struct vmx_cpu *pc = calloc(1, sizeof(*pc));
	int rc;

	if (!pc)
		return -ENOMEM;
	pc->index = c->index;
	pc->vmxon_pa = vmx_region_alloc();
	if (!pc->vmxon_pa) {
		free(pc);
		return -ENOMEM;
	}
	rc = vmxon(pc->vmxon_pa);
	if (rc) {
		mem_free_frame(pc->vmxon_pa);
		free(pc);
		return rc;
	}
	c->virt = pc;
	return 0;
}

/* vmm_ops.cpu_enable: every CPU, at bring-up, before it runs guests. */
int vmx_cpu_enable(void)
{
	struct percpu *c = this_cpu();
	struct vmx_caps caps;
	struct vmx_config cfg;
	char why[128];
	int rc;

	if (c->virt)
		return 0;
	vmx_caps_read(&caps);
	if ((rc = vmx_config_derive(&caps, &cfg, why, sizeof(why)))) {
		pr_err("vmx: CPU %u: %s", c->index, why);
		return rc;
	}
	if ((rc = config_adopt(&cfg))) {
		pr_err("vmx: CPU %u: %s", c->index, rc == -ENOMEM ? "no memory for the MSR bitmap" :
		       "VMX capabilities differ from the boot CPU's");
		return rc;
	}
	if ((rc = feature_control())) {
		pr_err("vmx: CPU %u: VMX is locked off in IA32_FEATURE_CONTROL", c->index);
		return rc;
	}
	cr_fixed(&caps);
	if ((rc = vmx_on(c)))
		pr_err("vmx: CPU %u: VMXON failed (%d)", c->index, rc);
	return rc;
}
