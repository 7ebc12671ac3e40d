/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The portable CPU state (hv/cpu_state.h) to and from a VMCS, through a
 * struct vmcs_io so that unit tests can use an array instead of VMREAD/
 * VMWRITE.  Field formats: Intel SDM Vol. 3C "Guest-State Area" (24.4/
 * 25.4) and "VM-Entry Controls for Event Injection" (24.8.3/25.8.3); the
 * values written are made to pass "Checks on the Guest State Area" (26.3/
 * 27.3) where the portable state leaves room (canonical bases, accessed
 * bits, busy TSS, RFLAGS reserved bits, interruptibility rules), so that a
 * state from an AMD host or a hostile stream cannot fault ferry when it is
 * loaded into the CPU.  Pure logic.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/vmx/vmcs.h"
#include "arch/x86/vmx/vmx.h"

#define RFLAGS_TF	(1ull << 8)
#define RFLAGS_VM	(1ull << 17)
#define V86_SEG_ATTR	0xf3u	/* present, DPL 3, data read/write accessed */
#define RFLAGS_FIXED1	(1ull << 1)
#define RFLAGS_VALID	0x3f7fd5ull	/* CF PF AF ZF SF TF IF DF OF IOPL NT RF VM AC VIF VIP ID */
#define EFER_GUEST_BITS	(EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE)
#define SEG_TYPE_MASK	0xfu
#define SEG_ATTR_S	(1u << 4)
#define SEG_TYPE_ACCESSED 1u
#define SEG_TYPE_TSS_BUSY 2u		/* 1 -> 3, 9 -> 11 */
#define AR_L		(1u << 13)

/* Segment registers in VMCS encoding order (ES CS SS DS FS GS LDTR TR). */
static const size_t seg_offsets[8] = {
	offsetof(struct cpu_state, es), offsetof(struct cpu_state, cs),
	offsetof(struct cpu_state, ss), offsetof(struct cpu_state, ds),
	offsetof(struct cpu_state, fs), offsetof(struct cpu_state, gs),
	offsetof(struct cpu_state, ldtr), offsetof(struct cpu_state, tr),
};
enum { SEG_ES, SEG_CS, SEG_SS, SEG_DS, SEG_FS, SEG_GS, SEG_LDTR, SEG_TR };

static uint64_t canonical(uint64_t a)
{
	return (uint64_t)((int64_t)(a << 16) >> 16);
}

/*
 * Neutral attributes are the AMD VMCB encoding: access byte in 7:0, AVL L
 * D/B G in 11:8.  VMX access rights keep the access byte in 7:0, move the
 * flags to 15:12 and mark a segment "unusable" in bit 16: that is the
 * neutral P bit clear.
 */
uint32_t vmx_attr_to_ar(uint16_t attr)
{
	uint32_t ar = (attr & 0xffu) | ((uint32_t)(attr & 0xf00u) << 4);

	if (!(attr & SEG_ATTR_P))
		ar |= VMX_AR_UNUSABLE;
	return ar;
}

uint16_t vmx_ar_to_attr(uint32_t ar)
{
	uint16_t attr = (ar & 0xffu) | ((ar >> 4) & 0xf00u);

	if (ar & VMX_AR_UNUSABLE)
		attr &= ~SEG_ATTR_P;
	return attr;
}

/* What the guest sees: host-owned (masked) bits come from the shadow. */
uint64_t vmx_cr_view(uint64_t real, uint64_t shadow, uint64_t mask)
{
	return (real & ~mask) | (shadow & mask);
}

/* ---- VMCS -> struct cpu_state ------------------------------------------- */

static void seg_read(const struct vmcs_io *io, unsigned i, struct seg *sg)
{
	sg->sel = vmcs_rd(io, VMCS_GUEST_ES_SEL + 2 * i);
	sg->limit = vmcs_rd(io, VMCS_GUEST_ES_LIMIT + 2 * i);
	sg->attr = vmx_ar_to_attr(vmcs_rd(io, VMCS_GUEST_ES_AR + 2 * i));
	sg->base = vmcs_rd(io, VMCS_GUEST_ES_BASE + 2 * i);
}

/* The event queued for the next entry (the core's injection, or one whose
 * delivery an exit interrupted).  Software interrupts and exceptions are
 * left out: RIP still points at their INT n/INT3/INTO, which runs again. */
static void pending_read(const struct vmcs_io *io, struct event *ev)
{
	uint32_t info = vmcs_rd(io, VMCS_ENTRY_INTR_INFO);
	uint32_t type = (info & INTR_INFO_TYPE_MASK) >> INTR_INFO_TYPE_SHIFT;

	memset(ev, 0, sizeof(*ev));
	if (!(info & INTR_INFO_VALID))
		return;
	if (type != INTR_TYPE_EXT_INT && type != INTR_TYPE_NMI && type != INTR_TYPE_HW_EXCEPTION)
		return;
	ev->valid = true;
	ev->type = type;	/* 0, 2, 3 are EVENT_EXTINT, EVENT_NMI, EVENT_EXCEPTION */
	ev->vector = info & INTR_INFO_VECTOR_MASK;
	ev->has_error = info & INTR_INFO_ERROR_VALID;
	if (ev->has_error)
		ev->error = vmcs_rd(io, VMCS_ENTRY_EXCEPTION_ERROR);
}

static uint32_t intr_to_neutral(uint32_t v)
{
	return ((v & GUEST_INTR_STI) ? INTR_SHADOW_STI : 0) |
	       ((v & GUEST_INTR_MOV_SS) ? INTR_SHADOW_MOV_SS : 0) |
	       ((v & GUEST_INTR_NMI) ? INTR_NMI_BLOCKED : 0);
}

static void regs_read(const struct vmx_guest_regs *r, struct cpu_state *s)
{
	s->cr2 = r->cr2;
	s->dr0 = r->dr0;
	s->dr1 = r->dr1;
	s->dr2 = r->dr2;
	s->dr3 = r->dr3;
	s->dr6 = r->dr6;
	s->star = r->star;
	s->lstar = r->lstar;
	s->cstar = r->cstar;
	s->sfmask = r->sfmask;
	s->kernel_gs_base = r->kernel_gs_base;
}

/* Everything but the general registers and XCR0 (the vCPU keeps those). */
void vmx_state_read(const struct vmcs_io *io, const struct vmx_config *cfg,
		    const struct vmx_soft *soft, struct cpu_state *s)
{
	s->rip = vmcs_rd(io, VMCS_GUEST_RIP);
	s->rflags = vmcs_rd(io, VMCS_GUEST_RFLAGS);
	s->cr0 = vmx_cr_view(vmcs_rd(io, VMCS_GUEST_CR0), vmcs_rd(io, VMCS_CR0_SHADOW),
			     cfg->cr0_mask);
	s->cr4 = vmx_cr_view(vmcs_rd(io, VMCS_GUEST_CR4), vmcs_rd(io, VMCS_CR4_SHADOW),
			     cfg->cr4_mask);
	s->cr3 = vmcs_rd(io, VMCS_GUEST_CR3);
	s->cr8 = 0;			/* the local APIC's TPR, in its snapshot */
	s->efer = vmcs_rd(io, VMCS_GUEST_EFER);
	s->dr7 = vmcs_rd(io, VMCS_GUEST_DR7);
	regs_read(&soft->hw, s);
	for (unsigned i = 0; i < 8; i++)
		seg_read(io, i, (struct seg *)((char *)s + seg_offsets[i]));
	s->gdtr.base = vmcs_rd(io, VMCS_GUEST_GDTR_BASE);
	s->gdtr.limit = vmcs_rd(io, VMCS_GUEST_GDTR_LIMIT);
	s->idtr.base = vmcs_rd(io, VMCS_GUEST_IDTR_BASE);
	s->idtr.limit = vmcs_rd(io, VMCS_GUEST_IDTR_LIMIT);
	s->sysenter_cs = vmcs_rd(io, VMCS_GUEST_SYSENTER_CS);
	s->sysenter_esp = vmcs_rd(io, VMCS_GUEST_SYSENTER_ESP);
	s->sysenter_eip = vmcs_rd(io, VMCS_GUEST_SYSENTER_EIP);
	s->pat = vmcs_rd(io, VMCS_GUEST_PAT);
	s->mtrr_def_type = soft->mtrr_def_type;
	s->misc_enable = soft->misc_enable;
	s->interruptibility = intr_to_neutral(vmcs_rd(io, VMCS_GUEST_INTERRUPTIBILITY));
	pending_read(io, &s->pending);
}

/* ---- struct cpu_state -> VMCS ------------------------------------------- */

/* Make a usable segment pass the entry checks without changing what it
 * does: accessed bit on code/data, busy TSS in TR, G matching the limit,
 * bases in range.  In virtual-8086 mode the six segment registers are the
 * fixed ring-3 data segments the entry checks want (SDM 26.3.1.2: access
 * rights 0xF3), whatever another vendor's state said of them. */
static struct seg seg_sanitize(struct seg sg, unsigned i, bool v86)
{
	bool usable;

	if (v86 && i <= SEG_GS)
		sg.attr = V86_SEG_ATTR;
	usable = sg.attr & SEG_ATTR_P;

	if (usable && (sg.attr & SEG_ATTR_S))
		sg.attr |= SEG_TYPE_ACCESSED;
	if (usable && i == SEG_TR && ((sg.attr & SEG_TYPE_MASK) == 1 || (sg.attr & SEG_TYPE_MASK) == 9))
		sg.attr |= SEG_TYPE_TSS_BUSY;
	if (usable && (sg.limit & 0xfff) != 0xfff)
		sg.attr &= ~SEG_ATTR_G;
	else if (usable && sg.limit > 0xfffff)
		sg.attr |= SEG_ATTR_G;
	if (i == SEG_FS || i == SEG_GS || i == SEG_LDTR || i == SEG_TR)
		sg.base = canonical(sg.base);
	else
		sg.base &= 0xffffffffull;
	return sg;
}

static void seg_write(const struct vmcs_io *io, unsigned i, const struct seg *in, bool v86)
{
	struct seg sg = seg_sanitize(*in, i, v86);

	vmcs_wr(io, VMCS_GUEST_ES_SEL + 2 * i, sg.sel);
	vmcs_wr(io, VMCS_GUEST_ES_LIMIT + 2 * i, sg.limit);
	vmcs_wr(io, VMCS_GUEST_ES_AR + 2 * i, vmx_attr_to_ar(sg.attr));
	vmcs_wr(io, VMCS_GUEST_ES_BASE + 2 * i, sg.base);
}

/* CR0/CR4: the CPU gets the guest's value with VMX's fixed bits applied;
 * the read shadow keeps the guest's own value of the masked bits. */
static void cr_write(const struct vmcs_io *io, uint32_t real_field, uint32_t shadow_field,
		     uint64_t view, uint64_t must1, uint64_t must0)
{
	vmcs_wr(io, real_field, (view | must1) & ~must0);
	vmcs_wr(io, shadow_field, view);
}

/* IA-32e mode guest follows EFER.LMA (an entry check). */
static void efer_write(const struct vmcs_io *io, uint64_t efer)
{
	uint64_t entry = vmcs_rd(io, VMCS_ENTRY_CTLS);

	efer &= EFER_GUEST_BITS;	/* AMD-only bits (SVME, ...) are not the guest's */
	vmcs_wr(io, VMCS_GUEST_EFER, efer);
	if (efer & EFER_LMA)
		entry |= ENTRYCTL_IA32E_GUEST;
	else
		entry &= ~(uint64_t)ENTRYCTL_IA32E_GUEST;
	vmcs_wr(io, VMCS_ENTRY_CTLS, entry);
}

/* Interruptibility: STI blocking needs IF=1 and excludes MOV SS blocking;
 * single-stepping across a shadow needs the pending BS bit. */
static void intr_write(const struct vmcs_io *io, uint32_t in, uint64_t rflags)
{
	uint32_t v = 0;
	uint64_t dbg = vmcs_rd(io, VMCS_GUEST_PENDING_DBG);

	if (in & INTR_SHADOW_MOV_SS)
		v |= GUEST_INTR_MOV_SS;
	else if ((in & INTR_SHADOW_STI) && (rflags & RFLAGS_IF))
		v |= GUEST_INTR_STI;
	if (in & INTR_NMI_BLOCKED)
		v |= GUEST_INTR_NMI;
	vmcs_wr(io, VMCS_GUEST_INTERRUPTIBILITY, v);
	if ((rflags & RFLAGS_TF) && (v & (GUEST_INTR_STI | GUEST_INTR_MOV_SS)))
		dbg |= PENDING_DBG_BS;
	else if (!(rflags & RFLAGS_TF))
		dbg &= ~PENDING_DBG_BS;
	vmcs_wr(io, VMCS_GUEST_PENDING_DBG, dbg);
}

/* Values the CPU would #GP on when loaded with MOV DR / WRMSR are made
 * canonical or cut to their architectural width. */
static void regs_write(struct vmx_guest_regs *r, const struct cpu_state *s)
{
	r->cr2 = s->cr2;
	r->dr0 = canonical(s->dr0);
	r->dr1 = canonical(s->dr1);
	r->dr2 = canonical(s->dr2);
	r->dr3 = canonical(s->dr3);
	r->dr6 = s->dr6 & 0xffffffffull;
	r->star = s->star;
	r->lstar = canonical(s->lstar);
	r->cstar = canonical(s->cstar);
	r->sfmask = s->sfmask & 0xffffffffull;
	r->kernel_gs_base = canonical(s->kernel_gs_base);
}

static void tables_write(const struct vmcs_io *io, const struct cpu_state *s)
{
	vmcs_wr(io, VMCS_GUEST_GDTR_BASE, canonical(s->gdtr.base));
	vmcs_wr(io, VMCS_GUEST_GDTR_LIMIT, s->gdtr.limit);
	vmcs_wr(io, VMCS_GUEST_IDTR_BASE, canonical(s->idtr.base));
	vmcs_wr(io, VMCS_GUEST_IDTR_LIMIT, s->idtr.limit);
}

static void msrs_write(const struct vmcs_io *io, struct vmx_soft *soft, const struct cpu_state *s)
{
	vmcs_wr(io, VMCS_GUEST_SYSENTER_CS, s->sysenter_cs & 0xffffffffull);
	vmcs_wr(io, VMCS_GUEST_SYSENTER_ESP, canonical(s->sysenter_esp));
	vmcs_wr(io, VMCS_GUEST_SYSENTER_EIP, canonical(s->sysenter_eip));
	vmcs_wr(io, VMCS_GUEST_PAT, s->pat);
	soft->mtrr_def_type = s->mtrr_def_type;
	soft->misc_enable = s->misc_enable;
}

/* Everything but the general registers and XCR0; the pending event is
 * queued for the next entry (or the queue emptied).  The guest's cached
 * translations (VPID-tagged) may not match the new CR0/CR3/CR4/EFER: they
 * are flushed before the next entry. */
void vmx_state_write(const struct vmcs_io *io, const struct vmx_config *cfg,
		     struct vmx_soft *soft, const struct cpu_state *s)
{
	uint64_t rflags = (s->rflags & RFLAGS_VALID) | RFLAGS_FIXED1;

	/* virtual-8086 mode exists only in legacy protected mode (SDM
	 * 26.3.1.4); what a VMX guest cannot hold does not reach the VMCS */
	if (!(s->cr0 & CR0_PE) || (s->efer & EFER_LMA))
		rflags &= ~RFLAGS_VM;

	vmcs_wr(io, VMCS_GUEST_RIP, s->rip);
	vmcs_wr(io, VMCS_GUEST_RFLAGS, rflags);
	cr_write(io, VMCS_GUEST_CR0, VMCS_CR0_SHADOW, s->cr0, cfg->cr0_must1, cfg->cr0_must0);
	cr_write(io, VMCS_GUEST_CR4, VMCS_CR4_SHADOW, s->cr4, cfg->cr4_must1, cfg->cr4_must0);
	vmcs_wr(io, VMCS_GUEST_CR3, s->cr3);
	efer_write(io, s->efer);
	vmcs_wr(io, VMCS_GUEST_DR7, s->dr7 & 0xffffffffull);
	regs_write(&soft->hw, s);
	for (unsigned i = 0; i < 8; i++)
		seg_write(io, i, (const struct seg *)((const char *)s + seg_offsets[i]),
			  rflags & RFLAGS_VM);
	tables_write(io, s);
	msrs_write(io, soft, s);
	/* an NMI whose delivery was cut short comes with its blocking, which
	 * the entry that injects it must not have (its delivery sets it) */
	intr_write(io, s->pending.valid && s->pending.type == EVENT_NMI ?
		       s->interruptibility & ~INTR_NMI_BLOCKED : s->interruptibility, rflags);
	vmx_event_write(io, &s->pending);
	soft->flush_vpid = true;
}

/* ---- events ------------------------------------------------------------- */

/* Exceptions that push an error code (#DF #TS #NP #SS #GP #PF #AC). */
static bool exception_has_error(uint8_t vector)
{
	return vector == 8 || (vector >= 10 && vector <= 14) || vector == 17;
}

/*
 * The VM-entry interruption-information, error code and instruction length
 * for e.  An error code is delivered exactly when the entry checks demand
 * it (hardware exception that has one, CR0.PE set): the event's has_error
 * cannot contradict that.  A software interrupt is injected as the 2-byte
 * INT n at RIP.  -EINVAL for what cannot be injected.
 */
int vmx_event_encode(const struct event *e, bool protected_mode, uint32_t *info,
		     uint32_t *error, uint32_t *insn_len)
{
	uint32_t type, vector = e->vector;

	*error = 0;
	*insn_len = 0;
	switch (e->type) {
	case EVENT_EXTINT:
		type = INTR_TYPE_EXT_INT;
		break;
	case EVENT_NMI:
		type = INTR_TYPE_NMI;
		vector = 2;
		break;
	case EVENT_EXCEPTION:
		if (vector >= 32)
			return -EINVAL;
		type = vector == 2 ? INTR_TYPE_NMI : INTR_TYPE_HW_EXCEPTION;
		break;
	case EVENT_SOFTINT:
		type = INTR_TYPE_SOFT_INT;
		*insn_len = 2;
		break;
	default:
		return -EINVAL;
	}
	*info = INTR_INFO_VALID | type << INTR_INFO_TYPE_SHIFT | vector;
	if (type == INTR_TYPE_HW_EXCEPTION && protected_mode && exception_has_error(vector)) {
		*info |= INTR_INFO_ERROR_VALID;
		*error = e->has_error ? e->error : 0;
	}
	return 0;
}

/* Queue e for the next entry, or empty the queue if !e->valid.  -EINVAL
 * (queue emptied) if e cannot be injected. */
int vmx_event_write(const struct vmcs_io *io, const struct event *e)
{
	uint32_t info = 0, error = 0, len = 0;
	int rc = 0;

	if (e->valid) {
		bool pe = vmcs_rd(io, VMCS_GUEST_CR0) & CR0_PE;
		rc = vmx_event_encode(e, pe, &info, &error, &len);
		if (rc)
			info = 0;
	}
	vmcs_wr(io, VMCS_ENTRY_INTR_INFO, info);
	if (info & INTR_INFO_ERROR_VALID)
		vmcs_wr(io, VMCS_ENTRY_EXCEPTION_ERROR, error);
	if (len)
		vmcs_wr(io, VMCS_ENTRY_INSN_LEN, len);
	return rc;
}

/* IF set, no STI/MOV SS shadow, and nothing queued for injection. */
bool vmx_intr_allowed(const struct vmcs_io *io)
{
	if (!(vmcs_rd(io, VMCS_GUEST_RFLAGS) & RFLAGS_IF))
		return false;
	if (vmcs_rd(io, VMCS_GUEST_INTERRUPTIBILITY) & (GUEST_INTR_STI | GUEST_INTR_MOV_SS))
		return false;
	return !(vmcs_rd(io, VMCS_ENTRY_INTR_INFO) & INTR_INFO_VALID);
}

/* RIP past an instruction of len bytes (wrapping at 4 GiB outside 64-bit
 * code), ending any STI/MOV SS shadow as executing it would.  True if
 * RFLAGS.TF is set: the instruction then ends in a single-step #DB, which
 * the caller delivers (DR6 is not in the VMCS). */
bool vmx_skip_insn(const struct vmcs_io *io, uint8_t len)
{
	uint64_t rip = vmcs_rd(io, VMCS_GUEST_RIP) + len;
	bool code64 = (vmcs_rd(io, VMCS_ENTRY_CTLS) & ENTRYCTL_IA32E_GUEST) &&
		      (vmcs_rd(io, VMCS_GUEST_CS_AR) & AR_L);
	uint64_t intr = vmcs_rd(io, VMCS_GUEST_INTERRUPTIBILITY);

	vmcs_wr(io, VMCS_GUEST_RIP, code64 ? rip : rip & 0xffffffffull);
	if (intr & (GUEST_INTR_STI | GUEST_INTR_MOV_SS))
		vmcs_wr(io, VMCS_GUEST_INTERRUPTIBILITY,
			intr & ~(uint64_t)(GUEST_INTR_STI | GUEST_INTR_MOV_SS));
	return vmcs_rd(io, VMCS_GUEST_RFLAGS) & RFLAGS_TF;
}
