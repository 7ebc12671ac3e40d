/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for arch/x86/vmx/state.c: segment attributes <-> VMX access
 * rights (every bit, the unusable rule), struct cpu_state -> VMCS ->
 * struct cpu_state round trips through a fake VMCS, the values made
 * loadable (hostile input), events, interruptibility, intr_allowed and
 * skip_insn.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include "arch/x86/cpu.h"
#include "tests/unit/test_vmx_fake.h"

static struct fake_vmcs vmcs;
static struct vmcs_io io;
static struct vmx_config cfg;
static struct vmx_soft soft;

static int setup(void **state)
{
	struct vmx_caps c;
	char why[128];

	(void)state;
	fake_io(&vmcs, &io);
	fake_caps(&c);
	memset(&soft, 0, sizeof(soft));
	return vmx_config_derive(&c, &cfg, why, sizeof(why));
}

/* ---- segment attributes --------------------------------------------------- */

static void test_attr_bits_move(void **state)
{
	(void)state;
	assert_int_equal(vmx_attr_to_ar(0xa9b), 0xa09b);	/* 64-bit code, G, L */
	assert_int_equal(vmx_attr_to_ar(0xc93), 0xc093);	/* 32-bit data, G, D/B */
	assert_int_equal(vmx_attr_to_ar(0x08b), 0x008b);	/* busy TSS */
	assert_int_equal(vmx_attr_to_ar(0x000), VMX_AR_UNUSABLE);	/* null */
	assert_int_equal(vmx_attr_to_ar(0x0082), 0x0082);	/* LDT */
	assert_int_equal(vmx_attr_to_ar(0x0100), 0x1000 | VMX_AR_UNUSABLE);	/* AVL */
	assert_int_equal(vmx_ar_to_attr(0xa09b), 0xa9b);
	assert_int_equal(vmx_ar_to_attr(0x1c000), 0xc00);	/* unusable: P stays clear */
	assert_int_equal(vmx_ar_to_attr(0x1c093), 0xc13);	/* unusable wins over P */
	assert_int_equal(vmx_ar_to_attr(0x0f93), 0x093);	/* reserved 11:8 ignored */
}

/* Every one of the 4096 neutral values, bit by bit, and back. */
static void test_attr_exhaustive(void **state)
{
	(void)state;
	for (uint32_t a = 0; a < 0x1000; a++) {
		uint32_t ar = vmx_attr_to_ar(a);

		assert_int_equal(ar & 0xff, a & 0xff);			/* type S DPL P */
		assert_int_equal((ar >> 12) & 0xf, (a >> 8) & 0xf);	/* AVL L D/B G */
		assert_int_equal(ar & 0xf00, 0);			/* reserved */
		assert_int_equal(!!(ar & VMX_AR_UNUSABLE), !(a & SEG_ATTR_P));
		assert_int_equal(ar >> 17, 0);
		assert_int_equal(vmx_ar_to_attr(ar), a);
	}
}

/* ---- round trips -------------------------------------------------------- */

static struct seg mkseg(uint16_t sel, uint16_t attr, uint32_t limit, uint64_t base)
{
	return (struct seg){ .sel = sel, .attr = attr, .limit = limit, .base = base };
}

/* A 64-bit guest with a value in every field, all already "loadable". */
static void long_mode_state(struct cpu_state *s)
{
	memset(s, 0, sizeof(*s));
	s->rip = 0xffffffff81000123;
	s->rflags = 0x246;
	s->cr0 = CR0_PG | CR0_PE | CR0_ET | CR0_WP | CR0_MP;	/* NE clear: guest's choice */
	s->cr2 = 0x7fffdeadb000;
	s->cr3 = 0x1234000;
	s->cr4 = CR4_PAE | CR4_PGE | CR4_OSFXSR;		/* VMXE clear */
	s->cr8 = 0;	/* CR8 is the local APIC's TPR: never the back end's */
	s->efer = EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE;
	s->dr0 = 0x1000; s->dr1 = 0xffff800000002000; s->dr2 = 3; s->dr3 = 4;
	s->dr6 = 0xffff4ff0; s->dr7 = 0x401;
	s->cs = mkseg(0x10, 0xa9b, 0xffffffff, 0);
	s->ss = mkseg(0x18, 0xc93, 0xffffffff, 0);
	s->ds = mkseg(0, 0, 0, 0);				/* null, unusable */
	s->es = mkseg(0x18, 0xc93, 0xffffffff, 0);
	s->fs = mkseg(0, 0, 0, 0x7f0000001000);		/* null but with a base */
	s->gs = mkseg(0x2b, 0xcf3, 0xffffffff, 0xffff888000000000);
	s->ldtr = mkseg(0, 0x82, 0xffff, 0);
	s->tr = mkseg(0x40, 0x8b, 0x67, 0xfffffe0000003000);
	s->gdtr = (struct dtable){ .base = 0xfffffe0000001000, .limit = 0x7f };
	s->idtr = (struct dtable){ .base = 0xfffffe0000000000, .limit = 0xfff };
	s->star = 0x0023001000000000; s->lstar = 0xffffffff81a00000;
	s->cstar = 0xffffffff81a00100; s->sfmask = 0x47700;
	s->kernel_gs_base = 0xffff888011110000;
	s->sysenter_cs = 0x10; s->sysenter_esp = 0xfffffe0000005000;
	s->sysenter_eip = 0xffffffff81a00200;
	s->pat = 0x0007040600070406;
	s->mtrr_def_type = 0xc06;
	s->misc_enable = 0x1;
	s->interruptibility = INTR_SHADOW_STI | INTR_NMI_BLOCKED;
	s->pending = (struct event){ .valid = true, .type = EVENT_EXCEPTION, .vector = 14,
				     .has_error = true, .error = 0x6 };
}

static void assert_seg_equal(const struct seg *a, const struct seg *b)
{
	assert_int_equal(a->sel, b->sel);
	assert_int_equal(a->attr, b->attr);
	assert_int_equal(a->limit, b->limit);
	assert_int_equal(a->base, b->base);
}

static void assert_state_equal(const struct cpu_state *a, const struct cpu_state *b)
{
	assert_int_equal(a->rip, b->rip);
	assert_int_equal(a->rflags, b->rflags);
	assert_int_equal(a->cr0, b->cr0);
	assert_int_equal(a->cr2, b->cr2);
	assert_int_equal(a->cr3, b->cr3);
	assert_int_equal(a->cr4, b->cr4);
	assert_int_equal(a->cr8, b->cr8);
	assert_int_equal(a->efer, b->efer);
	assert_int_equal(a->dr0, b->dr0);
	assert_int_equal(a->dr1, b->dr1);
	assert_int_equal(a->dr2, b->dr2);
	assert_int_equal(a->dr3, b->dr3);
	assert_int_equal(a->dr6, b->dr6);
	assert_int_equal(a->dr7, b->dr7);
	assert_seg_equal(&a->es, &b->es);
	assert_seg_equal(&a->cs, &b->cs);
	assert_seg_equal(&a->ss, &b->ss);
	assert_seg_equal(&a->ds, &b->ds);
	assert_seg_equal(&a->fs, &b->fs);
	assert_seg_equal(&a->gs, &b->gs);
	assert_seg_equal(&a->ldtr, &b->ldtr);
	assert_seg_equal(&a->tr, &b->tr);
	assert_int_equal(a->gdtr.base, b->gdtr.base);
	assert_int_equal(a->gdtr.limit, b->gdtr.limit);
	assert_int_equal(a->idtr.base, b->idtr.base);
	assert_int_equal(a->idtr.limit, b->idtr.limit);
	assert_int_equal(a->star, b->star);
	assert_int_equal(a->lstar, b->lstar);
	assert_int_equal(a->cstar, b->cstar);
	assert_int_equal(a->sfmask, b->sfmask);
	assert_int_equal(a->kernel_gs_base, b->kernel_gs_base);
	assert_int_equal(a->sysenter_cs, b->sysenter_cs);
	assert_int_equal(a->sysenter_esp, b->sysenter_esp);
	assert_int_equal(a->sysenter_eip, b->sysenter_eip);
	assert_int_equal(a->pat, b->pat);
	assert_int_equal(a->mtrr_def_type, b->mtrr_def_type);
	assert_int_equal(a->misc_enable, b->misc_enable);
	assert_int_equal(a->interruptibility, b->interruptibility);
	assert_int_equal(a->pending.valid, b->pending.valid);
	assert_int_equal(a->pending.type, b->pending.type);
	assert_int_equal(a->pending.vector, b->pending.vector);
	assert_int_equal(a->pending.has_error, b->pending.has_error);
	assert_int_equal(a->pending.error, b->pending.error);
}

static void round_trip(const struct cpu_state *in)
{
	struct cpu_state out;

	soft.flush_vpid = false;
	vmx_state_write(&io, &cfg, &soft, in);
	assert_int_equal(vmcs.bad, 0);		/* no read-only or bogus field written */
	assert_true(soft.flush_vpid);		/* new CRs: the guest TLB is stale */
	memset(&out, 0x5a, sizeof(out));
	vmx_state_read(&io, &cfg, &soft, &out);
	assert_int_equal(vmcs.bad, 0);
	assert_state_equal(in, &out);
}

static void test_round_trip_long_mode(void **state)
{
	struct cpu_state s;

	(void)state;
	long_mode_state(&s);
	round_trip(&s);
	/* what the CPU gets: fixed bits on, guest values in the shadows */
	assert_int_equal(vmcs.val[VMCS_GUEST_CR0], s.cr0 | CR0_NE);
	assert_int_equal(vmcs.val[VMCS_CR0_SHADOW], s.cr0);
	assert_int_equal(vmcs.val[VMCS_GUEST_CR4], s.cr4 | CR4_VMXE);
	assert_int_equal(vmcs.val[VMCS_CR4_SHADOW], s.cr4);
	assert_true(vmcs.val[VMCS_ENTRY_CTLS] & ENTRYCTL_IA32E_GUEST);
	assert_int_equal(vmcs.val[VMCS_GUEST_CS_AR], 0xa09b);
	assert_int_equal(vmcs.val[VMCS_GUEST_ES_AR + 2 * 3], VMX_AR_UNUSABLE);
	assert_int_equal(vmcs.val[VMCS_GUEST_ES_BASE + 2 * 4], 0x7f0000001000);	/* FS */
	assert_int_equal(vmcs.val[VMCS_GUEST_ES_AR + 2 * 7], 0x008b);		/* TR */
}

static void test_round_trip_protected_32(void **state)
{
	struct cpu_state s;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.rip = 0x100000; s.rflags = 0x2; s.cr0 = CR0_PE | CR0_ET;
	s.cs = mkseg(0x8, 0xc9b, 0xffffffff, 0);
	s.ds = s.es = s.fs = s.gs = s.ss = mkseg(0x10, 0xc93, 0xffffffff, 0);
	s.tr = mkseg(0, 0x8b, 0x67, 0);
	s.ldtr = mkseg(0, 0x82, 0xffff, 0);
	s.gdtr.limit = 0xffff; s.idtr.limit = 0xffff;
	s.dr6 = 0xffff0ff0; s.dr7 = 0x400; s.pat = 0x0007040600070406;
	s.pending = (struct event){ .valid = true, .type = EVENT_EXTINT, .vector = 0x30 };
	round_trip(&s);
	assert_false(vmcs.val[VMCS_ENTRY_CTLS] & ENTRYCTL_IA32E_GUEST);
	assert_int_equal(vmcs.val[VMCS_ENTRY_INTR_INFO], INTR_INFO_VALID | 0x30);
}

static void test_round_trip_real_mode(void **state)
{
	struct cpu_state s;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.rip = 0xfff0; s.rflags = 0x2; s.cr0 = CR0_ET | CR0_CD | CR0_NW;
	s.cs = mkseg(0xf000, 0x9b, 0xffff, 0xffff0000);
	s.ds = s.es = s.fs = s.gs = s.ss = mkseg(0, 0x93, 0xffff, 0);
	s.tr = mkseg(0, 0x8b, 0xffff, 0);
	s.ldtr = mkseg(0, 0x82, 0xffff, 0);
	s.gdtr.limit = 0xffff; s.idtr.limit = 0x3ff;
	s.pending = (struct event){ .valid = true, .type = EVENT_NMI, .vector = 2 };
	round_trip(&s);
	assert_int_equal(vmcs.val[VMCS_GUEST_CR0], CR0_ET | CR0_CD | CR0_NW | CR0_NE);
	assert_int_equal(vmcs.val[VMCS_ENTRY_INTR_INFO], INTR_INFO_VALID | 2 << 8 | 2);
}

/* An NMI cut short, with the blocking its delivery had set (what an exit
 * during its delivery records): written without the blocking, or the
 * entry that injects it fails; other blocking bits stay. */
static void test_pending_nmi_unblocked(void **state)
{
	struct cpu_state s;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.rip = 0xfff0; s.rflags = 0x202; s.cr0 = CR0_ET;
	s.cs = mkseg(0xf000, 0x9b, 0xffff, 0xffff0000);
	s.ds = s.es = s.fs = s.gs = s.ss = mkseg(0, 0x93, 0xffff, 0);
	s.tr = mkseg(0, 0x8b, 0xffff, 0);
	s.ldtr = mkseg(0, 0x82, 0xffff, 0);
	s.gdtr.limit = 0xffff; s.idtr.limit = 0x3ff;
	s.interruptibility = INTR_NMI_BLOCKED | INTR_SHADOW_STI;
	s.pending = (struct event){ .valid = true, .type = EVENT_NMI, .vector = 2 };
	vmx_state_write(&io, &cfg, &soft, &s);
	assert_int_equal(vmcs.val[VMCS_GUEST_INTERRUPTIBILITY], GUEST_INTR_STI);
	assert_int_equal(vmcs.val[VMCS_ENTRY_INTR_INFO], INTR_INFO_VALID | 2 << 8 | 2);
	/* blocking with another event, or none, is kept */
	s.pending = (struct event){ .valid = true, .type = EVENT_EXTINT, .vector = 0x30 };
	vmx_state_write(&io, &cfg, &soft, &s);
	assert_int_equal(vmcs.val[VMCS_GUEST_INTERRUPTIBILITY], GUEST_INTR_STI | GUEST_INTR_NMI);
}

/* The event queue seen from get_state. */
static void test_pending_read(void **state)
{
	struct cpu_state s, out;

	(void)state;
	long_mode_state(&s);
	vmx_state_write(&io, &cfg, &soft, &s);
	/* an INT n cut short by an exit: RIP is at the INT, it will run again */
	vmcs.val[VMCS_ENTRY_INTR_INFO] = INTR_INFO_VALID | INTR_TYPE_SOFT_INT << 8 | 0x80;
	vmx_state_read(&io, &cfg, &soft, &out);
	assert_false(out.pending.valid);
	vmcs.val[VMCS_ENTRY_INTR_INFO] = INTR_TYPE_HW_EXCEPTION << 8 | 13;	/* not valid */
	vmx_state_read(&io, &cfg, &soft, &out);
	assert_false(out.pending.valid);
	s.pending.valid = false;
	vmx_state_write(&io, &cfg, &soft, &s);
	assert_int_equal(vmcs.val[VMCS_ENTRY_INTR_INFO], 0);
}

/* ---- hostile or foreign input is made loadable ----------------------------- */

static void test_sanitize(void **state)
{
	struct cpu_state s, out;

	(void)state;
	long_mode_state(&s);
	s.rflags = 0xffffffffffffffff;
	s.efer |= 1u << 12 /* SVME */ | 1u << 14;
	s.lstar = 0x0000800000000000;		/* not canonical */
	s.cstar = 0x1234567890abcdef;
	s.kernel_gs_base = 0xffff7fffffffffff;
	s.sfmask = 0xffffffff00047700;
	s.dr0 = 0x0000900000000000;
	s.dr6 = 0xdeadbeefffff0ff0;
	s.dr7 = 0x1234567800000400;
	s.fs.base = 0x0001000000000000;
	s.gdtr.base = 0x8000000000000000;
	s.ss.base = 0x100000000;		/* bits 63:32 must be 0 */
	s.sysenter_cs = 0x123456789;
	s.sysenter_eip = 0x0000ffffffffffff;
	s.cr8 = 0xff;
	s.tr.attr = 0x89;			/* available TSS */
	s.es.attr = 0xc92;			/* data, not accessed */
	s.gs.limit = 0x1234;			/* G set in 0xcf3 but the limit says bytes */
	s.ss.limit = 0xffffffff; s.ss.attr = 0x493;	/* 4 GiB limit without G */
	vmx_state_write(&io, &cfg, &soft, &s);
	vmx_state_read(&io, &cfg, &soft, &out);
	assert_int_equal(out.rflags, 0x3d7fd7);	/* no virtual-8086 in long mode */
	assert_int_equal(out.efer, EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE);
	assert_int_equal(out.lstar, 0xffff800000000000);
	assert_int_equal(out.cstar, 0x0000567890abcdef);
	assert_int_equal(out.kernel_gs_base, 0x00007fffffffffff);
	assert_int_equal(out.sfmask, 0x47700);
	assert_int_equal(out.dr0, 0xffff900000000000);
	assert_int_equal(out.dr6, 0xffff0ff0);
	assert_int_equal(out.dr7, 0x400);
	assert_int_equal(out.fs.base, 0);
	assert_int_equal(out.gdtr.base, 0);
	assert_int_equal(out.ss.base, 0);
	assert_int_equal(out.sysenter_cs, 0x23456789);
	assert_int_equal(out.sysenter_eip, 0xffffffffffffffff);
	assert_int_equal(out.cr8, 0);		/* the local APIC's TPR carries it */
	assert_int_equal(out.tr.attr, 0x8b);
	assert_int_equal(out.es.attr, 0xc93);
	assert_int_equal(out.gs.attr, 0x4f3);
	assert_int_equal(out.ss.attr, 0xc93);
	/* IF set with STI shadow kept; TF set: single-step needs BS pending */
	assert_int_equal(out.interruptibility, INTR_SHADOW_STI | INTR_NMI_BLOCKED);
	assert_true(vmcs.val[VMCS_GUEST_PENDING_DBG] & PENDING_DBG_BS);
	assert_int_equal(vmcs.bad, 0);
}

/* Virtual-8086 mode from another vendor's state: the six segments get
 * the access rights a VMX entry demands (0xF3), the rest is kept. */
static void test_v86_segments(void **state)
{
	struct cpu_state s, out;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.cr0 = 0x80000011;
	s.cr4 = 0x10;
	s.rflags = 0x20202;
	s.cs = mkseg(0x1234, 0x9b, 0xffff, 0x12340);	/* as a VMCB may leave it */
	s.ss = mkseg(0x2000, 0x93, 0xffff, 0x20000);
	s.ds = s.es = s.fs = s.gs = mkseg(0, 0x93, 0xffff, 0);
	s.tr = mkseg(0x20, 0x8b, 0x2067, 0x1000);
	s.ldtr = mkseg(0, 0x82, 0xffff, 0);
	s.pat = 0x0007040600070406ull;
	vmx_state_write(&io, &cfg, &soft, &s);
	vmx_state_read(&io, &cfg, &soft, &out);
	assert_int_equal(out.rflags, 0x20202);
	for (unsigned int i = 0; i < 6; i++)
		assert_int_equal(vmcs.val[VMCS_GUEST_ES_AR + 2 * i], 0xf3);
	assert_int_equal(out.cs.base, 0x12340);
	assert_int_equal(out.tr.attr, 0x8b);
	/* and in real mode RFLAGS.VM does not reach the VMCS */
	s.cr0 = 0x10;
	vmx_state_write(&io, &cfg, &soft, &s);
	assert_int_equal(vmcs.val[VMCS_GUEST_RFLAGS], 0x202);
	assert_int_equal(vmcs.val[VMCS_GUEST_CS_AR], 0x9b);
}

static void test_interruptibility_rules(void **state)
{
	struct cpu_state s, out;

	(void)state;
	long_mode_state(&s);
	s.rflags = 0x2;				/* IF clear: no STI blocking possible */
	s.interruptibility = INTR_SHADOW_STI;
	vmx_state_write(&io, &cfg, &soft, &s);
	vmx_state_read(&io, &cfg, &soft, &out);
	assert_int_equal(out.interruptibility, 0);
	assert_false(vmcs.val[VMCS_GUEST_PENDING_DBG] & PENDING_DBG_BS);

	s.rflags = 0x202;
	s.interruptibility = INTR_SHADOW_STI | INTR_SHADOW_MOV_SS;	/* both: MOV SS */
	vmx_state_write(&io, &cfg, &soft, &s);
	vmx_state_read(&io, &cfg, &soft, &out);
	assert_int_equal(out.interruptibility, INTR_SHADOW_MOV_SS);

	/* long mode off: IA-32e mode guest follows EFER.LMA */
	s.efer = 0;
	s.cr0 &= ~CR0_PG;
	vmx_state_write(&io, &cfg, &soft, &s);
	assert_false(vmcs.val[VMCS_ENTRY_CTLS] & ENTRYCTL_IA32E_GUEST);
}

/* ---- events ---------------------------------------------------------------- */

static void test_event_encode(void **state)
{
	struct event e = { .valid = true, .type = EVENT_EXCEPTION, .vector = 13,
			   .has_error = true, .error = 0x1234 };
	uint32_t info, err, len;

	(void)state;
	assert_int_equal(vmx_event_encode(&e, true, &info, &err, &len), 0);
	assert_int_equal(info, INTR_INFO_VALID | INTR_INFO_ERROR_VALID | 3 << 8 | 13);
	assert_int_equal(err, 0x1234);
	assert_int_equal(len, 0);
	/* real mode: no error code may be delivered */
	assert_int_equal(vmx_event_encode(&e, false, &info, &err, &len), 0);
	assert_int_equal(info, INTR_INFO_VALID | 3 << 8 | 13);
	/* #PF without an error code given: one is still delivered (0) */
	e = (struct event){ .valid = true, .type = EVENT_EXCEPTION, .vector = 14 };
	assert_int_equal(vmx_event_encode(&e, true, &info, &err, &len), 0);
	assert_true(info & INTR_INFO_ERROR_VALID);
	assert_int_equal(err, 0);
	/* #BP with an error code asked for: none (it has none) */
	e = (struct event){ .valid = true, .type = EVENT_EXCEPTION, .vector = 3, .has_error = true };
	assert_int_equal(vmx_event_encode(&e, true, &info, &err, &len), 0);
	assert_int_equal(info, INTR_INFO_VALID | 3 << 8 | 3);
	/* exception 2 is an NMI; NMI's vector is always 2 */
	e = (struct event){ .valid = true, .type = EVENT_EXCEPTION, .vector = 2 };
	assert_int_equal(vmx_event_encode(&e, true, &info, &err, &len), 0);
	assert_int_equal(info, INTR_INFO_VALID | 2 << 8 | 2);
	e = (struct event){ .valid = true, .type = EVENT_NMI, .vector = 77 };
	assert_int_equal(vmx_event_encode(&e, true, &info, &err, &len), 0);
	assert_int_equal(info, INTR_INFO_VALID | 2 << 8 | 2);
	/* INT n: software interrupt with the 2-byte length */
	e = (struct event){ .valid = true, .type = EVENT_SOFTINT, .vector = 0x80 };
	assert_int_equal(vmx_event_encode(&e, true, &info, &err, &len), 0);
	assert_int_equal(info, INTR_INFO_VALID | 4 << 8 | 0x80);
	assert_int_equal(len, 2);
	/* refused */
	e = (struct event){ .valid = true, .type = EVENT_EXCEPTION, .vector = 32 };
	assert_int_equal(vmx_event_encode(&e, true, &info, &err, &len), -EINVAL);
	for (unsigned t = 5; t < 256; t++) {
		e = (struct event){ .valid = true, .type = t, .vector = 1 };
		assert_int_equal(vmx_event_encode(&e, true, &info, &err, &len), -EINVAL);
	}
	e = (struct event){ .valid = true, .type = 1, .vector = 1 };
	assert_int_equal(vmx_event_encode(&e, true, &info, &err, &len), -EINVAL);
}

static void test_event_write(void **state)
{
	struct event e = { .valid = true, .type = EVENT_EXCEPTION, .vector = 13, .error = 8,
			   .has_error = true };

	(void)state;
	vmcs.val[VMCS_GUEST_CR0] = CR0_PE | CR0_NE;
	assert_int_equal(vmx_event_write(&io, &e), 0);
	assert_int_equal(vmcs.val[VMCS_ENTRY_INTR_INFO], 0x80000b0d);
	assert_int_equal(vmcs.val[VMCS_ENTRY_EXCEPTION_ERROR], 8);
	e.vector = 200;				/* not an exception */
	assert_int_equal(vmx_event_write(&io, &e), -EINVAL);
	assert_int_equal(vmcs.val[VMCS_ENTRY_INTR_INFO], 0);	/* queue emptied */
}

static void test_intr_allowed(void **state)
{
	(void)state;
	vmcs.val[VMCS_GUEST_RFLAGS] = 0x202;
	assert_true(vmx_intr_allowed(&io));
	vmcs.val[VMCS_GUEST_RFLAGS] = 0x2;
	assert_false(vmx_intr_allowed(&io));
	vmcs.val[VMCS_GUEST_RFLAGS] = 0x202;
	vmcs.val[VMCS_GUEST_INTERRUPTIBILITY] = GUEST_INTR_STI;
	assert_false(vmx_intr_allowed(&io));
	vmcs.val[VMCS_GUEST_INTERRUPTIBILITY] = GUEST_INTR_MOV_SS;
	assert_false(vmx_intr_allowed(&io));
	vmcs.val[VMCS_GUEST_INTERRUPTIBILITY] = GUEST_INTR_NMI;	/* NMI blocking: irrelevant */
	assert_true(vmx_intr_allowed(&io));
	vmcs.val[VMCS_ENTRY_INTR_INFO] = INTR_INFO_VALID | 0x20;	/* something queued */
	assert_false(vmx_intr_allowed(&io));
}

static void test_skip_insn(void **state)
{
	(void)state;
	/* 32-bit code wraps at 4 GiB, and the STI shadow ends */
	vmcs.val[VMCS_GUEST_RIP] = 0xfffffffe;
	vmcs.val[VMCS_GUEST_INTERRUPTIBILITY] = GUEST_INTR_STI | GUEST_INTR_NMI;
	vmcs.val[VMCS_GUEST_RFLAGS] = 0x202;
	assert_false(vmx_skip_insn(&io, 3));
	assert_int_equal(vmcs.val[VMCS_GUEST_RIP], 1);
	assert_int_equal(vmcs.val[VMCS_GUEST_INTERRUPTIBILITY], GUEST_INTR_NMI);
	/* 64-bit code does not wrap */
	vmcs.val[VMCS_ENTRY_CTLS] = ENTRYCTL_IA32E_GUEST;
	vmcs.val[VMCS_GUEST_CS_AR] = 0xa09b;
	vmcs.val[VMCS_GUEST_RIP] = 0xfffffffe;
	vmcs.val[VMCS_GUEST_INTERRUPTIBILITY] = GUEST_INTR_MOV_SS;
	vmx_skip_insn(&io, 2);
	assert_int_equal(vmcs.val[VMCS_GUEST_RIP], 0x100000000);
	assert_int_equal(vmcs.val[VMCS_GUEST_INTERRUPTIBILITY], 0);
	/* compatibility mode (IA-32e, CS.L clear) wraps */
	vmcs.val[VMCS_GUEST_CS_AR] = 0xc09b;
	vmcs.val[VMCS_GUEST_RIP] = 0xffffffff;
	vmx_skip_insn(&io, 1);
	assert_int_equal(vmcs.val[VMCS_GUEST_RIP], 0);
	/* under TF the instruction ends in a single-step trap */
	vmcs.val[VMCS_GUEST_RFLAGS] = 0x302;
	assert_true(vmx_skip_insn(&io, 1));
	assert_int_equal(vmcs.val[VMCS_GUEST_RIP], 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attr_bits_move),
		cmocka_unit_test(test_attr_exhaustive),
		cmocka_unit_test_setup(test_round_trip_long_mode, setup),
		cmocka_unit_test_setup(test_pending_nmi_unblocked, setup),
		cmocka_unit_test_setup(test_round_trip_protected_32, setup),
		cmocka_unit_test_setup(test_round_trip_real_mode, setup),
		cmocka_unit_test_setup(test_pending_read, setup),
		cmocka_unit_test_setup(test_sanitize, setup),
		cmocka_unit_test_setup(test_v86_segments, setup),
		cmocka_unit_test_setup(test_interruptibility_rules, setup),
		cmocka_unit_test(test_event_encode),
		cmocka_unit_test_setup(test_event_write, setup),
		cmocka_unit_test_setup(test_intr_allowed, setup),
		cmocka_unit_test_setup(test_skip_insn, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
