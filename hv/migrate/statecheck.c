/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The guest state a VCPU_STATE record carries, checked before it is used
 * (statecheck.h, docs/migration.md "Trust", step 3): control registers,
 * EFER, RFLAGS, XCR0, canonical addresses, segments (as a VMX entry
 * checks them, whichever vendor the destination is), PAT and MTRR types,
 * interruptibility, the pending event, and the XSAVE area.
 */
#include <errno.h>
#include <stddef.h>
#include "hv/cpuid.h"
#include "hv/lib/bytes.h"
#include "hv/migrate/statecheck.h"
#include "hv/vmm.h"

#define RFLAGS_RESERVED	(~0x3f7fd7ull)	/* SDM Vol. 1 3.4.3: 3, 5, 15, 22-63 */
#define RFLAGS_FIXED1	(1ull << 1)
#define CR0_PE		(1ull << 0)
#define CR0_NW		(1ull << 29)
#define CR0_CD		(1ull << 30)
#define CR0_PG		(1ull << 31)
#define CR4_PAE		(1ull << 5)
#define CR4_ALLOWED	VMM_GUEST_CR4_BITS	/* what a guest's own MOV CR4 may set */
#define RFLAGS_IF	(1ull << 9)
#define RFLAGS_VM	(1ull << 17)
#define SEG_TYPE	0xfu
#define SEG_TYPE_CODE	(1u << 3)
#define SEG_TYPE_CONFORMING (1u << 2)	/* code; expand-down for data */
#define SEG_TYPE_RW	(1u << 1)	/* readable code, writable data */
#define SEG_TYPE_LDT	2u
#define SEG_ATTR_S	(1u << 4)
#define SEG_SEL_TI	(1u << 2)
#define SEG_TYPE_TSS_AVAIL16 1u
#define SEG_TYPE_TSS_BUSY16 3u
#define SEG_TYPE_TSS_AVAIL 9u
#define SEG_TYPE_TSS_BUSY 11u
#define EFER_LME	(1ull << 8)
#define EFER_LMA	(1ull << 10)
#define EFER_GUEST	0xd01ull	/* SCE LME LMA NXE: hv/msr.c */
#define INTR_ALL	(INTR_SHADOW_STI | INTR_SHADOW_MOV_SS | INTR_NMI_BLOCKED)

/* Control registers: SDM Vol. 3A 2.5 (#GP cases), 26.3.1.1. */
static const char *cr_problem(const struct cpu_state *c)
{
	if (c->cr0 >> 32)
		return "CR0 bits 63:32 set";
	if ((c->cr0 & CR0_PG) && !(c->cr0 & CR0_PE))
		return "CR0.PG without CR0.PE";
	if ((c->cr0 & CR0_NW) && !(c->cr0 & CR0_CD))
		return "CR0.NW without CR0.CD";
	if (c->cr4 & ~CR4_ALLOWED)
		return "CR4 bits a guest cannot own (reserved, host-only or hidden features)";
	if (c->cr3 >> CPUID_GUEST_PHYS_BITS)
		return "CR3 beyond the guest's physical address width";
	if (c->cr8 > 15)
		return "CR8 above 15";
	if (c->efer & ~EFER_GUEST)
		return "EFER bits a guest cannot own";
	if (!!(c->efer & EFER_LMA) != ((c->efer & EFER_LME) && (c->cr0 & CR0_PG)))
		return "EFER.LMA disagrees with EFER.LME and CR0.PG";
	if ((c->efer & EFER_LMA) && !(c->cr4 & CR4_PAE))
		return "long mode without CR4.PAE";
	if ((c->rflags & RFLAGS_RESERVED) || !(c->rflags & RFLAGS_FIXED1))
		return "RFLAGS reserved bits wrong";
	if ((c->dr6 | c->dr7) >> 32)
		return "DR6/DR7 bits 63:32 set";
	return NULL;
}

/* XCR0: SDM Vol. 1 13.3 (x87 always; AVX needs SSE; AVX-512 all or none). */
static const char *xcr0_problem(uint64_t x, uint64_t mask)
{
	if (!(x & 1))
		return "XCR0 without x87";
	if ((x & 4) && !(x & 2))
		return "XCR0 AVX without SSE";
	if ((x & 0xe0) && ((x & 0xe0) != 0xe0 || !(x & 4)))
		return "XCR0 AVX-512 bits inconsistent";
	if (x & ~VMM_GUEST_XCR0_BITS)
		return "XCR0 has components a guest cannot enable";
	if (x & ~mask)
		return "XCR0 has components the destination cannot load";
	return NULL;
}

static bool canonical(uint64_t a)
{
	return (uint64_t)((int64_t)(a << 16) >> 16) == a;	/* 48-bit linear */
}

static const char *addr_problem(const struct cpu_state *c)
{
	bool wide = (c->efer & EFER_LMA) && (c->cs.attr & SEG_ATTR_L);

	const uint64_t a[] = { c->rip, c->es.base, c->cs.base, c->ss.base, c->ds.base,
			       c->fs.base, c->gs.base, c->ldtr.base, c->tr.base,
			       c->gdtr.base, c->idtr.base, c->kernel_gs_base, c->lstar,
			       c->cstar, c->sysenter_esp, c->sysenter_eip };

	for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++)
		if (!canonical(a[i]))
			return "non-canonical address (RIP, a base, or a syscall MSR)";
	if (!wide && c->rip >> 32)
		return "RIP beyond 32 bits outside 64-bit code";
	return NULL;
}

/* A memory type an MTRR may hold (SDM Vol. 3A 12.11.2: UC WC WT WP WB). */
static bool mtrr_type_ok(uint8_t t)
{
	return t == 0 || t == 1 || t == 4 || t == 5 || t == 6;
}

static unsigned int dpl(const struct seg *s)
{
	return (s->attr >> 5) & 3;
}

/*
 * The segment rules of a VMX entry (SDM Vol. 3C 26.3.1.2, with unrestricted
 * guest) that the back ends do not fix up by themselves (accessed and busy
 * bits, G against the limit, bases: vmx/state.c seg_sanitize): a state that
 * broke them would pass here and then fail its first entry on an Intel
 * host, after the source let the guest go.  Every state a CPU of either
 * vendor holds keeps them; SVM's get_state already reports SS.DPL as the
 * CPL, and "usable" is P set (cpu_state.h).
 */
static const char *seg_problem(const struct cpu_state *c)
{
	const struct seg *data[] = { &c->ds, &c->es, &c->fs, &c->gs };
	unsigned int cs_type = c->cs.attr & SEG_TYPE;
	bool pe = c->cr0 & CR0_PE;

	if (c->rflags & RFLAGS_VM) {
		const struct seg *v86[] = { &c->es, &c->cs, &c->ss, &c->ds, &c->fs, &c->gs };

		if (!pe || (c->efer & EFER_LMA))
			return "RFLAGS.VM outside protected mode, or in long mode";
		for (size_t i = 0; i < sizeof(v86) / sizeof(v86[0]); i++)
			if (v86[i]->base != (uint64_t)v86[i]->sel << 4 || v86[i]->limit != 0xffff)
				return "virtual-8086 segment base or limit not its selector's";
		return NULL;	/* their access rights are fixed by the mode */
	}
	if (!(c->cs.attr & SEG_ATTR_P) || !(c->cs.attr & SEG_ATTR_S))
		return "CS not a present code or data segment";
	if (!(cs_type & SEG_TYPE_CODE) &&
	    (pe || (cs_type & (SEG_TYPE_CONFORMING | SEG_TYPE_RW)) != SEG_TYPE_RW))
		return "CS not a code segment";
	if (pe && !(cs_type & SEG_TYPE_CONFORMING) && (cs_type & SEG_TYPE_CODE) &&
	    dpl(&c->cs) != dpl(&c->ss))
		return "CS.DPL differs from SS.DPL (the CPL) for non-conforming code";
	if (pe && (cs_type & SEG_TYPE_CONFORMING) && (cs_type & SEG_TYPE_CODE) &&
	    dpl(&c->cs) > dpl(&c->ss))
		return "conforming CS.DPL above SS.DPL (the CPL)";
	if (!pe && (dpl(&c->ss) || (!(cs_type & SEG_TYPE_CODE) && dpl(&c->cs))))
		return "real mode with a DPL other than 0 in SS (or a data CS)";
	if ((c->ss.attr & SEG_ATTR_P) &&
	    (!(c->ss.attr & SEG_ATTR_S) || (c->ss.attr & (SEG_TYPE_CODE | SEG_TYPE_RW)) != SEG_TYPE_RW))
		return "SS not a writable data segment";
	for (size_t i = 0; i < sizeof(data) / sizeof(data[0]); i++)
		if ((data[i]->attr & SEG_ATTR_P) &&
		    (!(data[i]->attr & SEG_ATTR_S) ||
		     (data[i]->attr & (SEG_TYPE_CODE | SEG_TYPE_RW)) == SEG_TYPE_CODE))
			return "DS, ES, FS or GS not data or readable code";
	if ((c->tr.attr & SEG_ATTR_S) || (c->tr.sel & SEG_SEL_TI))
		return "TR not a system segment in the GDT";
	if ((c->ldtr.attr & SEG_ATTR_P) &&
	    ((c->ldtr.attr & (SEG_ATTR_S | SEG_TYPE)) != SEG_TYPE_LDT || (c->ldtr.sel & SEG_SEL_TI)))
		return "LDTR not an LDT in the GDT";
	return NULL;
}

static bool pat_ok(uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		uint8_t t = (uint8_t)(v >> (8 * i));

		if (t > 7 || t == 2 || t == 3)
			return false;
	}
	return true;
}

/* Segments (attr in 12 bits, cpu_state.h), MSRs (hv/msr.c rules), and the
 * event in flight (SDM 24.8.3, APM 15.20). */
static const char *misc_problem(const struct cpu_state *c)
{
	const struct seg *segs[] = { &c->es, &c->cs, &c->ss, &c->ds, &c->fs, &c->gs,
				     &c->ldtr, &c->tr };
	const struct event *ev = &c->pending;

	for (size_t i = 0; i < sizeof(segs) / sizeof(segs[0]); i++)
		if (segs[i]->attr & 0xf000)
			return "segment attributes beyond 12 bits";
	if ((c->sysenter_cs | c->sfmask) >> 32)
		return "SYSENTER_CS/SFMASK bits 63:32 set";
	if (!pat_ok(c->pat) || (c->mtrr_def_type & ~0xcffull) ||
	    !mtrr_type_ok((uint8_t)c->mtrr_def_type))
		return "PAT or MTRR default type invalid";
	if ((c->interruptibility & ~INTR_ALL) ||
	    ((c->interruptibility & INTR_SHADOW_STI) && (c->interruptibility & INTR_SHADOW_MOV_SS)))
		return "interruptibility bits invalid";
	if ((c->efer & EFER_LMA) && (c->cs.attr & SEG_ATTR_L) && (c->cs.attr & SEG_ATTR_DB))
		return "CS with both L and D in long mode";
	if (!(c->tr.attr & SEG_ATTR_P) ||
	    ((c->efer & EFER_LMA) ? (c->tr.attr & 0xf) != SEG_TYPE_TSS_AVAIL &&
				    (c->tr.attr & 0xf) != SEG_TYPE_TSS_BUSY
				  : (c->tr.attr & 0xf) != SEG_TYPE_TSS_AVAIL16 &&
				    (c->tr.attr & 0xf) != SEG_TYPE_TSS_BUSY16 &&
				    (c->tr.attr & 0xf) != SEG_TYPE_TSS_AVAIL &&
				    (c->tr.attr & 0xf) != SEG_TYPE_TSS_BUSY))
		return "TR not a present TSS";
	if (!ev->valid)
		return NULL;
	/* SDM 26.3.1.5: an external interrupt goes in only with IF set and
	 * outside a shadow; an NMI not in a MOV SS shadow */
	if (ev->type == EVENT_EXTINT &&
	    (!(c->rflags & RFLAGS_IF) || (c->interruptibility & (INTR_SHADOW_STI | INTR_SHADOW_MOV_SS))))
		return "external interrupt pending while interrupts are blocked";
	if (ev->type == EVENT_NMI && (c->interruptibility & INTR_SHADOW_MOV_SS))
		return "NMI pending in a MOV SS shadow";
	if (ev->type != EVENT_EXTINT && ev->type != EVENT_NMI &&
	    ev->type != EVENT_EXCEPTION && ev->type != EVENT_SOFTINT)
		return "pending event type unknown";
	if ((ev->type == EVENT_NMI && ev->vector != 2) ||
	    (ev->type == EVENT_EXCEPTION && (ev->vector >= 32 || ev->vector == 2)))
		return "pending event vector invalid for its type";
	if (ev->has_error && ev->type != EVENT_EXCEPTION)
		return "error code on an event that is not an exception";
	if (ev->has_error && ev->error >> 16)
		return "exception error code beyond 16 bits";
	return NULL;
}

int mig_cpu_state_check(const struct cpu_state *c, uint64_t xcr0_mask, struct mig_error *e)
{
	const char *why = cr_problem(c);

	if (!why)
		why = xcr0_problem(c->xcr0, xcr0_mask);
	if (!why)
		why = addr_problem(c);
	if (!why)
		why = misc_problem(c);
	if (!why)
		why = seg_problem(c);
	if (!why)
		return 0;
	mig_error_set(e, MIG_E_STATE, "VCPU_STATE: %s", why);
	return -EINVAL;
}

/* Standard-format XSAVE area (SDM Vol. 1 13.4, 13.8.1): what XRSTOR or
 * FXRSTOR on the destination would fault on. */
int mig_xsave_check(const uint8_t *area, uint32_t len, uint64_t xcr0_mask, struct mig_error *e)
{
	const char *why = NULL;
	uint64_t bv = 0;

	if (len < MIG_XSAVE_MIN || len > MIG_XSAVE_MAX)
		why = "length out of range";
	else if (get_le32(area + 24) >> 16)
		why = "MXCSR reserved bits set";
	else {
		bv = get_le32(area + 512) | (uint64_t)get_le32(area + 516) << 32;
		if (bv & ~xcr0_mask)
			why = "XSTATE_BV has components the destination cannot load";
		for (int i = 520; i < 576 && !why; i++)
			if (area[i])
				why = "XSAVE header reserved bytes (XCOMP_BV...) not zero";
	}
	if (!why)
		return 0;
	mig_error_set(e, MIG_E_STATE, "VCPU_STATE XSAVE area: %s", why);
	return -EINVAL;
}
