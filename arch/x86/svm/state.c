/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The portable CPU state (hv/cpu_state.h) to and from the VMCB state-save
 * area (APM Vol. 2 Appendix B, Table B-2).  Pure.
 *
 * Where things live: GPRs in vcpu->gpr (run() moves RAX/RSP through the
 * VMCB); DR0-3 in struct svm_vcpu (run() loads them into the CPU); XCR0 in
 * vcpu->xcr0 (the core switches it); everything else in the VMCB.
 *
 * get_state reports what a VMX host would accept too, smoothing over what
 * the VMCB leaves loose: the G bit follows the expanded limit, SS.DPL is
 * the CPL, a present TR is "busy" and present code/data segments are
 * "accessed".  None of these changes how the guest runs.
 */
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/svm/svm.h"

#define RFLAGS_VM		(1ull << 17)
#define RFLAGS_FIXED1		(1ull << 1)
#define RFLAGS_VALID		0x3f7fd5ull	/* CF PF AF ZF SF TF IF DF OF IOPL NT RF VM AC VIF VIP ID */
#define SEG_TYPE_ACCESSED	(1u << 0)
#define SEG_TYPE_TSS_BUSY	(1u << 1)
#define SEG_ATTR_S		(1u << 4)
#define SEG_ATTR_DPL_SHIFT	5
#define SEG_ATTR_DPL_MASK	(3u << 5)

static void seg_to_vmcb(const struct seg *s, struct vmcb_seg *v)
{
	v->sel = s->sel;
	v->attrib = s->attr & 0x0fff;
	v->limit = s->limit;
	v->base = s->base;
}

static void seg_from_vmcb(const struct vmcb_seg *v, struct seg *s)
{
	s->sel = v->sel;
	s->attr = v->attrib & 0x0fff;
	s->limit = v->limit;
	s->base = v->base;
	if (!(s->attr & SEG_ATTR_P))
		return;
	s->attr &= ~SEG_ATTR_G;
	if (s->limit > 0xfffff)
		s->attr |= SEG_ATTR_G;
	if (s->attr & SEG_ATTR_S)
		s->attr |= SEG_TYPE_ACCESSED;
}

static void dt_to_vmcb(const struct dtable *d, struct vmcb_seg *v)
{
	memset(v, 0, sizeof(*v));
	v->base = d->base;
	v->limit = d->limit;
}

static void dt_from_vmcb(const struct vmcb_seg *v, struct dtable *d)
{
	d->base = v->base;
	d->limit = (uint16_t)v->limit;
}

/* The CPL: 0 in real mode, 3 in virtual-8086 mode, else SS.DPL (APM 15.5.1). */
static uint8_t cpl_of(const struct cpu_state *s)
{
	if (!(s->cr0 & CR0_PE))
		return 0;
	if (s->rflags & RFLAGS_VM)
		return 3;
	return (s->ss.attr & SEG_ATTR_DPL_MASK) >> SEG_ATTR_DPL_SHIFT;
}

static void segs_to_vmcb(const struct cpu_state *s, struct vmcb_save *v)
{
	seg_to_vmcb(&s->es, &v->es);
	seg_to_vmcb(&s->cs, &v->cs);
	seg_to_vmcb(&s->ss, &v->ss);
	seg_to_vmcb(&s->ds, &v->ds);
	seg_to_vmcb(&s->fs, &v->fs);
	seg_to_vmcb(&s->gs, &v->gs);
	seg_to_vmcb(&s->ldtr, &v->ldtr);
	seg_to_vmcb(&s->tr, &v->tr);
	dt_to_vmcb(&s->gdtr, &v->gdtr);
	dt_to_vmcb(&s->idtr, &v->idtr);
	v->cpl = cpl_of(s);
}

static void segs_from_vmcb(const struct vmcb_save *v, struct cpu_state *s)
{
	seg_from_vmcb(&v->es, &s->es);
	seg_from_vmcb(&v->cs, &s->cs);
	seg_from_vmcb(&v->ss, &s->ss);
	seg_from_vmcb(&v->ds, &s->ds);
	seg_from_vmcb(&v->fs, &s->fs);
	seg_from_vmcb(&v->gs, &s->gs);
	seg_from_vmcb(&v->ldtr, &s->ldtr);
	seg_from_vmcb(&v->tr, &s->tr);
	dt_from_vmcb(&v->gdtr, &s->gdtr);
	dt_from_vmcb(&v->idtr, &s->idtr);
	s->ss.attr = (s->ss.attr & ~SEG_ATTR_DPL_MASK) |
		     (uint16_t)((v->cpl & 3) << SEG_ATTR_DPL_SHIFT);
	if (s->tr.attr & SEG_ATTR_P)
		s->tr.attr |= SEG_TYPE_TSS_BUSY;
}

/* SYSENTER_ESP/EIP from sv: VMSAVE stores what the CPU kept, 32 bits. */
static void msrs_to_vmcb(const struct cpu_state *s, struct vmcb_save *v, struct svm_vcpu *sv)
{
	v->star = s->star;
	v->lstar = s->lstar;
	v->cstar = s->cstar;
	v->sfmask = s->sfmask;
	v->kernel_gs_base = s->kernel_gs_base;
	v->sysenter_cs = s->sysenter_cs;
	v->sysenter_esp = s->sysenter_esp;
	v->sysenter_eip = s->sysenter_eip;
	sv->sysenter_esp = s->sysenter_esp;
	sv->sysenter_eip = s->sysenter_eip;
	v->g_pat = s->pat;
}

static void msrs_from_vmcb(const struct vmcb_save *v, const struct svm_vcpu *sv,
			   struct cpu_state *s)
{
	s->star = v->star;
	s->lstar = v->lstar;
	s->cstar = v->cstar;
	s->sfmask = v->sfmask;
	s->kernel_gs_base = v->kernel_gs_base;
	s->sysenter_cs = v->sysenter_cs;
	s->sysenter_esp = sv->sysenter_esp;
	s->sysenter_eip = sv->sysenter_eip;
	s->pat = v->g_pat;
}

/* The VMCB has one shadow bit; which kind it was is not kept.  A shadow
 * with IF clear cannot come from STI, so call it MOV SS then. */
static uint32_t intr_from_vmcb(const struct vmcb *vmcb)
{
	if (!(vmcb->ctl.int_state & VMCB_INT_SHADOW))
		return 0;
	return (vmcb->save.rflags & RFLAGS_IF) ? INTR_SHADOW_STI : INTR_SHADOW_MOV_SS;
}

void svm_get_state(struct vmm_vcpu *v, struct cpu_state *s)
{
	struct svm_vcpu *sv = svm_vcpu_of(v);
	const struct vmcb *vmcb = sv->vmcb;
	const struct vmcb_save *vs = &vmcb->save;

	memset(s, 0, sizeof(*s));
	memcpy(s->gpr, v->gpr, sizeof(s->gpr));
	s->rip = vs->rip;
	s->rflags = vs->rflags;
	s->cr0 = vs->cr0;
	s->cr2 = vs->cr2;
	s->cr3 = vs->cr3;
	s->cr4 = vs->cr4;
	s->cr8 = 0;			/* the local APIC's TPR, in its snapshot */
	s->efer = vs->efer & ~(uint64_t)EFER_SVME;	/* ferry's, not the guest's */
	s->xcr0 = v->xcr0;
	s->dr0 = sv->dr[0];
	s->dr1 = sv->dr[1];
	s->dr2 = sv->dr[2];
	s->dr3 = sv->dr[3];
	s->dr6 = vs->dr6;
	s->dr7 = vs->dr7;
	segs_from_vmcb(vs, s);
	msrs_from_vmcb(vs, sv, s);
	s->mtrr_def_type = sv->mtrr_def_type;
	s->misc_enable = sv->misc_enable;
	s->interruptibility = intr_from_vmcb(vmcb) | (sv->nmi_blocked ? INTR_NMI_BLOCKED : 0);
	svm_event_decode(vmcb->ctl.event_inj, &s->pending);
}

/*
 * INTR_NMI_BLOCKED is kept by svm_nmi_block (no VMCB bit without vNMI),
 * and set for a pending NMI, whose delivery blocks.  s->pending is read
 * as svm_event_encode() says (an event that cannot be injected is
 * dropped: it would make VMRUN fail).  RFLAGS, DR6 and DR7 lose reserved
 * bits that VMRUN refuses.
 */
void svm_set_state(struct vmm_vcpu *v, const struct cpu_state *s)
{
	struct svm_vcpu *sv = svm_vcpu_of(v);
	struct vmcb *vmcb = sv->vmcb;
	struct vmcb_save *vs = &vmcb->save;
	bool paging_changed = vs->cr0 != s->cr0 || vs->cr3 != s->cr3 || vs->cr4 != s->cr4 ||
			      vs->efer != (s->efer | EFER_SVME);

	memcpy(v->gpr, s->gpr, sizeof(v->gpr));
	vs->rip = s->rip;
	vs->rflags = (s->rflags & RFLAGS_VALID) | RFLAGS_FIXED1;
	vs->cr0 = s->cr0;
	vs->cr2 = s->cr2;
	vs->cr3 = s->cr3;
	vs->cr4 = s->cr4;
	vs->efer = s->efer | EFER_SVME;		/* VMRUN requires SVME */
	v->xcr0 = s->xcr0;
	sv->dr[0] = s->dr0;
	sv->dr[1] = s->dr1;
	sv->dr[2] = s->dr2;
	sv->dr[3] = s->dr3;
	vs->dr6 = s->dr6 & 0xffffffffull;	/* bits 63:32 make VMRUN fail */
	vs->dr7 = s->dr7 & 0xffffffffull;
	segs_to_vmcb(s, vs);
	msrs_to_vmcb(s, vs, sv);
	sv->mtrr_def_type = s->mtrr_def_type;
	sv->misc_enable = s->misc_enable;
	vmcb->ctl.int_state = (s->interruptibility & (INTR_SHADOW_STI | INTR_SHADOW_MOV_SS))
			      ? VMCB_INT_SHADOW : 0;
	vmcb->ctl.event_inj = svm_event_encode(&s->pending, s->cr0 & CR0_PE);
	svm_nmi_block(sv, (s->interruptibility & INTR_NMI_BLOCKED) ||
			  (s->pending.valid && s->pending.type == EVENT_NMI));
	/* a new CR0, CR3, CR4 or EFER from outside the guest (a reset, a
	 * reboot's entry state): the old ASID's translations, global ones
	 * included, must not serve it (VMX flushes the VPID likewise); an
	 * MSR write or an emulated instruction's flags keep them */
	if (paging_changed)
		svm_asid_flush(&sv->asid);
}

static void reset_seg(struct seg *s, uint16_t attr)
{
	s->sel = 0;
	s->base = 0;
	s->limit = 0xffff;
	s->attr = attr;
}

/* APM Vol. 2 14.1.3, Table 14-1 "Initial Processor State". */
void svm_reset_state(struct cpu_state *s)
{
	memset(s, 0, sizeof(*s));
	s->rip = 0xfff0;
	s->rflags = 0x2;
	s->cr0 = CR0_ET | CR0_CD | CR0_NW;
	s->dr6 = 0xffff0ff0;
	s->dr7 = 0x400;
	s->xcr0 = 1;
	s->pat = 0x0007040600070406ull;
	reset_seg(&s->cs, 0x9b);	/* present, code, readable, accessed */
	s->cs.sel = 0xf000;
	s->cs.base = 0xffff0000;
	reset_seg(&s->ds, 0x93);	/* present, data, writable, accessed */
	reset_seg(&s->es, 0x93);
	reset_seg(&s->fs, 0x93);
	reset_seg(&s->gs, 0x93);
	reset_seg(&s->ss, 0x93);
	reset_seg(&s->ldtr, 0x82);	/* present LDT */
	reset_seg(&s->tr, 0x8b);	/* present busy 32-bit TSS */
	s->gdtr.limit = 0xffff;
	s->idtr.limit = 0xffff;
}
