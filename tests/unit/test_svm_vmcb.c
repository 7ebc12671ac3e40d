/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for the SVM back end's VMCB logic (arch/x86/svm/vmcb.c,
 * state.c): the VMCB layout checked through raw byte offsets, the
 * intercepts and permission maps of a fresh VMCB, struct cpu_state <->
 * VMCB for every field (EFER.SVME forced and hidden, CPL, CR8, the
 * interrupt shadow, pending events), the event operations, and random
 * states and VMCB contents.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/cpu.h"
#include "arch/x86/svm/svm.h"
#include "hv/lib/log.h"
#include "hv/lib/time.h"

static int warnings;

void log_printf(enum log_level level, const char *fmt, ...)
{
	(void)level, (void)fmt;
	warnings++;
}

/* ---- fixture: one vCPU with its VMCB ---------------------------------------- */

struct fix {
	struct vmm_vcpu v;
	struct svm_vcpu sv;
	struct vmcb *vmcb;
};

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	f->vmcb = aligned_alloc(4096, 4096);
	svm_vmcb_init(f->vmcb, 0x111000, 0x222000, 0x333000);
	f->sv.vmcb = f->vmcb;
	f->sv.vmcb_pa = 0x444000;
	svm_asid_vcpu_init(&f->sv.asid);
	f->v.arch = &f->sv;
	f->v.id = 7;
	warnings = 0;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	free(f->vmcb);
	free(f);
	return 0;
}

static uint64_t raw64(const struct vmcb *vmcb, size_t off)
{
	uint64_t x;

	memcpy(&x, (const uint8_t *)vmcb + off, 8);
	return x;
}

static uint32_t raw32(const struct vmcb *vmcb, size_t off)
{
	uint32_t x;

	memcpy(&x, (const uint8_t *)vmcb + off, 4);
	return x;
}

/* ---- a fresh VMCB ------------------------------------------------------------------ */

static void test_init_intercepts(void **state)
{
	struct fix *f = *state;
	uint32_t i1 = raw32(f->vmcb, 0x00c), i2 = raw32(f->vmcb, 0x010);
	static const unsigned i1_bits[] = { 0, 1, 2, 3, 15, 18, 22, 24, 26, 27, 28, 29, 30, 31 };
	static const unsigned i2_bits[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 };

	for (size_t i = 0; i < sizeof(i1_bits) / sizeof(i1_bits[0]); i++)
		assert_true(i1 & (1u << i1_bits[i]));
	for (size_t i = 0; i < sizeof(i2_bits) / sizeof(i2_bits[0]); i++)
		assert_true(i2 & (1u << i2_bits[i]));
	assert_false(i1 & VMCB_I1_VINTR);	/* only while a window is wanted */
	assert_false(i1 & VMCB_I1_PAUSE);
	assert_false(i1 & VMCB_I1_RDTSC);	/* only while the TSC is scaled */
	/* CR4 writes, CR8 reads and writes (the core's: the local APIC's TPR) */
	assert_int_equal(raw32(f->vmcb, 0x000), 1u << (16 + 4) | 1u << 8 | 1u << (16 + 8));
	assert_int_equal(raw32(f->vmcb, 0x004), 0);	/* no DR intercepts */
	assert_int_equal(raw32(f->vmcb, 0x008), (1u << 1) | (1u << 6) | (1u << 17) | (1u << 18));
								/* #DB #UD #AC #MC */
}

static void test_init_controls(void **state)
{
	struct fix *f = *state;

	assert_int_equal(raw64(f->vmcb, 0x040), 0x111000);	/* IOPM */
	assert_int_equal(raw64(f->vmcb, 0x048), 0x222000);	/* MSRPM */
	assert_int_equal(raw64(f->vmcb, 0x0b0), 0x333000);	/* nCR3 */
	assert_int_equal(raw64(f->vmcb, 0x090) & 1, 1);		/* NP_ENABLE */
	assert_int_equal(raw64(f->vmcb, 0x060), 1ull << 24);	/* V_INTR_MASKING only */
	assert_int_equal(raw32(f->vmcb, 0x058), 0);		/* ASID: chosen at run */
	assert_int_equal(raw64(f->vmcb, 0x400 + 0x268), 0x0007040600070406ull);
	assert_int_equal(raw64(f->vmcb, 0x400 + 0x0d0), EFER_SVME);
	assert_int_equal(raw64(f->vmcb, 0x0a8), 0);		/* EVENTINJ */
	assert_int_equal(raw32(f->vmcb, 0x0c0), 0);		/* clean bits */
}

/* ---- permission maps ----------------------------------------------------------------- */

static void test_iopm_all_ports(void **state)
{
	uint8_t *iopm = malloc(SVM_IOPM_SIZE);

	(void)state;
	memset(iopm, 0, SVM_IOPM_SIZE);
	svm_iopm_fill(iopm);
	for (uint32_t p = 0; p <= 0xffff; p++)
		assert_true(svm_iopm_intercepted(iopm, (uint16_t)p));
	/* the bits past port FFFFh (multi-byte accesses there) too */
	for (size_t i = 0; i < SVM_IOPM_SIZE; i++)
		assert_int_equal(iopm[i], 0xff);
	free(iopm);
}

static const uint32_t passthrough[] = {
	0xc0000100, 0xc0000101, 0xc0000102, 0xc0000081, 0xc0000082, 0xc0000083,
	0xc0000084, 0x174,
};

static void test_msrpm_passthrough(void **state)
{
	uint8_t *m = malloc(SVM_MSRPM_SIZE);

	(void)state;
	svm_msrpm_fill(m);
	for (size_t i = 0; i < sizeof(passthrough) / sizeof(passthrough[0]); i++) {
		assert_false(svm_msrpm_intercepted(m, passthrough[i], false));
		assert_false(svm_msrpm_intercepted(m, passthrough[i], true));
	}
	/* raw positions (APM 15.11): two bits per MSR, vectors at 0, 800h, 1000h */
	assert_int_equal(m[0x840], 0xc0);	/* C000_0100h-102h open, 103h (TSC_AUX) not */
	assert_int_equal(m[0x820], 0x03);	/* C000_0080h (EFER) exits, 81h-83h open */
	assert_int_equal(m[0x821], 0xfc);	/* C000_0084h (SFMASK) open */
	assert_int_equal(m[0x5d], 0xfc);	/* 174h open; 175h-176h exit (AMD keeps
						 * 32 bits of SYSENTER_ESP/EIP), 177h too */
	assert_int_equal(m[0x1000], 0xff);	/* C001_0000h.. all exit */
	free(m);
}

static void test_msrpm_intercepts_rest(void **state)
{
	uint8_t *m = malloc(SVM_MSRPM_SIZE);
	static const uint32_t must_exit[] = {
		0xc0000080,		/* EFER: SVME must stay hidden */
		0xc0000103,		/* TSC_AUX */
		0x277, 0x10, 0x1b, 0x3a, 0x173, 0x175, 0x176, 0x177, 0x480,
		0xc0010114, 0xc0010117,	/* VM_CR, VM_HSAVE_PA */
		0xc0000085, 0xc00000ff,
		0x2000, 0xc0002000, 0xc0011fff, 0xc0012000, 0x40000000, 0xffffffff,
	};
	size_t open_bits = 0;

	(void)state;
	svm_msrpm_fill(m);
	for (size_t i = 0; i < sizeof(must_exit) / sizeof(must_exit[0]); i++) {
		assert_true(svm_msrpm_intercepted(m, must_exit[i], false));
		assert_true(svm_msrpm_intercepted(m, must_exit[i], true));
	}
	for (size_t i = 0; i < SVM_MSRPM_SIZE * 8; i++)
		open_bits += !(m[i / 8] & (1u << (i % 8)));
	assert_int_equal(open_bits, 2 * sizeof(passthrough) / sizeof(passthrough[0]));
	free(m);
}

/* ---- cpu_state <-> VMCB ---------------------------------------------------------------- */

static void seg(struct seg *s, uint16_t sel, uint16_t attr, uint32_t limit, uint64_t base)
{
	s->sel = sel;
	s->attr = attr;
	s->limit = limit;
	s->base = base;
}

/* A 64-bit guest at CPL 3 with every field distinct and already in the
 * form get_state reports (accessed code/data, busy TR, G per limit). */
static void full_state(struct cpu_state *s)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < GPR_COUNT; i++)
		s->gpr[i] = 0x1111111111111111ull * (uint64_t)(i + 1) + (uint64_t)i;
	s->rip = 0x00007f0012345678ull;
	s->rflags = 0x246;
	s->cr0 = 0x80050033;
	s->cr2 = 0xffff8000deadb000ull;
	s->cr3 = 0x12345000;
	s->cr4 = 0x3406f0;
	s->cr8 = 0;	/* CR8 is the local APIC's TPR: never the back end's */
	s->efer = EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE;
	s->xcr0 = 0x7;
	s->dr0 = 0x1000; s->dr1 = 0x2000; s->dr2 = 0x3000; s->dr3 = 0x4000;
	s->dr6 = 0xffff0ff1;
	s->dr7 = 0x00000403;
	seg(&s->cs, 0x33, 0xafb, 0xffffffff, 0);	/* L, G, DPL 3 code */
	seg(&s->ss, 0x2b, 0xcf3, 0xffffffff, 0);	/* DPL 3 data, D/B, G */
	seg(&s->ds, 0x2b, 0xcf3, 0xffffffff, 0);
	seg(&s->es, 0x2b, 0xcf3, 0xffffffff, 0);
	seg(&s->fs, 0x00, 0x0000, 0, 0x00007f00aaaa0000ull);	/* null, base from MSR */
	seg(&s->gs, 0x2b, 0xcf3, 0xffffffff, 0xffff888012340000ull);
	seg(&s->ldtr, 0x50, 0x082, 0x3ff, 0xffff888000100000ull);
	seg(&s->tr, 0x40, 0x08b, 0x67, 0xfffffe0000003000ull);
	s->gdtr.base = 0xfffffe0000001000ull;
	s->gdtr.limit = 0x7f;
	s->idtr.base = 0xfffffe0000000000ull;
	s->idtr.limit = 0xfff;
	s->star = 0x0023001000000000ull;
	s->lstar = 0xffffffff81000000ull;
	s->cstar = 0xffffffff81000100ull;
	s->sfmask = 0x47700;
	s->kernel_gs_base = 0xffff888077770000ull;
	s->sysenter_cs = 0x10;
	s->sysenter_esp = 0xfffffe0000005000ull;
	s->sysenter_eip = 0xffffffff81000200ull;
	s->pat = 0x0407050600070106ull;
	s->mtrr_def_type = 0xc06;
	s->misc_enable = 0x1;
	s->interruptibility = INTR_SHADOW_STI;
	s->pending = (struct event){ .valid = true, .type = EVENT_EXCEPTION, .vector = 14,
				     .has_error = true, .error = 0x6 };
}

static void test_roundtrip_every_field(void **state)
{
	struct fix *f = *state;
	struct cpu_state in, out;

	full_state(&in);
	svm_set_state(&f->v, &in);
	svm_get_state(&f->v, &out);
	assert_memory_equal(&in, &out, sizeof(in));
	assert_int_equal(warnings, 0);
}

/* A state set from outside (a reset, a reboot's entry state, an arrival)
 * is a new address space: the next run must not use the old ASID's
 * translations. */
static void test_set_state_drops_the_asid(void **state)
{
	struct fix *f = *state;
	struct svm_asid_cpu c;
	struct cpu_state s;
	uint32_t asid;

	svm_asid_cpu_init(&c, 16, true);
	svm_asid_prepare(&c, 0, &f->sv.asid, 1);
	asid = f->sv.asid.asid;
	assert_int_equal(svm_asid_prepare(&c, 0, &f->sv.asid, 1), VMCB_TLB_NONE);
	assert_int_equal(f->sv.asid.asid, asid);	/* nothing changed: kept */
	full_state(&s);
	svm_set_state(&f->v, &s);
	svm_asid_prepare(&c, 0, &f->sv.asid, 1);
	assert_int_not_equal(f->sv.asid.asid, asid);
	/* the guest's own state written back (an MSR's, an emulated
	 * instruction's flags) keeps the ASID */
	asid = f->sv.asid.asid;
	svm_get_state(&f->v, &s);
	s.rflags ^= 1u << 0;				/* CF */
	s.lstar = 0xffffffff81000000ull;
	svm_set_state(&f->v, &s);
	assert_int_equal(svm_asid_prepare(&c, 0, &f->sv.asid, 1), VMCB_TLB_NONE);
	assert_int_equal(f->sv.asid.asid, asid);
}

static void test_set_state_raw_vmcb(void **state)
{
	struct fix *f = *state;
	struct cpu_state s;

	full_state(&s);
	svm_set_state(&f->v, &s);
	assert_int_equal(raw64(f->vmcb, 0x400 + 0x178), s.rip);
	assert_int_equal(raw64(f->vmcb, 0x400 + 0x170), s.rflags);
	assert_int_equal(raw64(f->vmcb, 0x400 + 0x158), s.cr0);
	assert_int_equal(raw64(f->vmcb, 0x400 + 0x240), s.cr2);
	assert_int_equal(raw64(f->vmcb, 0x400 + 0x150), s.cr3);
	assert_int_equal(raw64(f->vmcb, 0x400 + 0x148), s.cr4);
	assert_int_equal(raw64(f->vmcb, 0x060) & 0xf, 0);		/* V_TPR unused */
	assert_true(raw64(f->vmcb, 0x060) & (1ull << 24));		/* masking kept */
	assert_int_equal(raw64(f->vmcb, 0x400 + 0x0d0), s.efer | EFER_SVME);
	assert_int_equal(raw64(f->vmcb, 0x400 + 0x160), s.dr7);
	assert_int_equal(raw64(f->vmcb, 0x400 + 0x168), s.dr6);
	assert_int_equal(f->vmcb->save.cpl, 3);
	assert_int_equal(raw64(f->vmcb, 0x400 + 0x208), s.lstar);
	assert_int_equal(raw64(f->vmcb, 0x400 + 0x220), s.kernel_gs_base);
	assert_int_equal(raw64(f->vmcb, 0x400 + 0x230), s.sysenter_esp);
	assert_int_equal(raw64(f->vmcb, 0x400 + 0x268), s.pat);
	assert_int_equal(raw64(f->vmcb, 0x068), 1);			/* shadow */
	assert_int_equal(raw64(f->vmcb, 0x0a8),
			 14 | (3u << 8) | (1u << 11) | (1u << 31) | (6ull << 32));
	/* CS at 410h: selector, attrib, limit, base */
	assert_int_equal(*(uint16_t *)((uint8_t *)f->vmcb + 0x410), 0x33);
	assert_int_equal(*(uint16_t *)((uint8_t *)f->vmcb + 0x412), 0xafb);
	assert_int_equal(raw32(f->vmcb, 0x414), 0xffffffff);
	assert_int_equal(raw64(f->vmcb, 0x400 + 0x68), s.gdtr.base);	/* GDTR base */
	assert_int_equal(raw32(f->vmcb, 0x400 + 0x64), 0x7f);		/* GDTR limit */
	assert_int_equal(raw64(f->vmcb, 0x400 + 0x98), s.tr.base);
	assert_memory_equal(f->v.gpr, s.gpr, sizeof(s.gpr));
	assert_int_equal(f->v.xcr0, 7);
	assert_int_equal(f->sv.dr[3], 0x4000);
}

static void test_efer_svme_hidden(void **state)
{
	struct fix *f = *state;
	struct cpu_state s;

	full_state(&s);
	s.efer = 0;
	svm_set_state(&f->v, &s);
	assert_int_equal(f->vmcb->save.efer, EFER_SVME);	/* forced for VMRUN */
	svm_get_state(&f->v, &s);
	assert_int_equal(s.efer, 0);				/* never seen */
	s.efer = EFER_SVME | EFER_NXE;				/* a state asking for it */
	svm_set_state(&f->v, &s);
	svm_get_state(&f->v, &s);
	assert_int_equal(s.efer, EFER_NXE);
	f->vmcb->save.efer = EFER_SVME | EFER_LME | EFER_LMA;	/* as the CPU leaves it */
	svm_get_state(&f->v, &s);
	assert_int_equal(s.efer, EFER_LME | EFER_LMA);
}

static void test_reserved_bits_dropped(void **state)
{
	struct fix *f = *state;
	struct cpu_state s;

	full_state(&s);
	s.rflags = ~0ull;
	s.dr6 = 0xdead0000ffff0ff0ull;
	s.dr7 = 0xbeef000000000400ull;
	svm_set_state(&f->v, &s);
	assert_int_equal(f->vmcb->save.rflags, 0x3f7fd7);
	assert_int_equal(f->vmcb->save.dr6, 0xffff0ff0);
	assert_int_equal(f->vmcb->save.dr7, 0x400);
	s.rflags = 0;
	svm_set_state(&f->v, &s);
	assert_int_equal(f->vmcb->save.rflags, 0x2);		/* bit 1 is always 1 */
}

static void test_cpl_derivation(void **state)
{
	struct fix *f = *state;
	struct cpu_state s;

	full_state(&s);
	s.cr0 = 0x10;				/* real mode: CPL 0 whatever SS says */
	svm_set_state(&f->v, &s);
	assert_int_equal(f->vmcb->save.cpl, 0);
	s.cr0 = CR0_PE;
	s.rflags = 0x20202;			/* virtual-8086 mode: CPL 3 */
	s.ss.attr = 0x93;
	svm_set_state(&f->v, &s);
	assert_int_equal(f->vmcb->save.cpl, 3);
	s.rflags = 0x2;
	s.ss.attr = 0xc93;			/* protected, SS.DPL 0 */
	svm_set_state(&f->v, &s);
	assert_int_equal(f->vmcb->save.cpl, 0);
	s.ss.attr = 0xcb3;			/* SS.DPL 1 */
	svm_set_state(&f->v, &s);
	assert_int_equal(f->vmcb->save.cpl, 1);
}

static void test_get_state_normalises(void **state)
{
	struct fix *f = *state;
	struct cpu_state s;

	svm_vmcb_init(f->vmcb, 0, 0, 0);
	f->vmcb->save.cpl = 3;
	f->vmcb->save.ss = (struct vmcb_seg){ 0x2b, 0x892, 0xfffff, 0 };	/* DPL 0, G, not accessed */
	f->vmcb->save.cs = (struct vmcb_seg){ 0x08, 0x09a, 0xffffffff, 0 };	/* G missing */
	f->vmcb->save.tr = (struct vmcb_seg){ 0x18, 0x089, 0x67, 0x5000 };	/* available TSS */
	f->vmcb->save.ds = (struct vmcb_seg){ 0x00, 0x010, 0, 0 };		/* unusable: kept */
	svm_get_state(&f->v, &s);
	assert_int_equal(s.ss.attr, 0x0f3);	/* DPL = CPL, accessed, G cleared (limit fits) */
	assert_int_equal(s.cs.attr, 0x89b);	/* G set (limit > 1 MiB), accessed */
	assert_int_equal(s.tr.attr, 0x08b);	/* busy */
	assert_int_equal(s.ds.attr, 0x010);
}

static void test_interruptibility(void **state)
{
	struct fix *f = *state;
	struct cpu_state s;

	full_state(&s);
	s.interruptibility = INTR_SHADOW_MOV_SS | INTR_NMI_BLOCKED;
	svm_set_state(&f->v, &s);
	assert_int_equal(f->vmcb->ctl.int_state, VMCB_INT_SHADOW);
	assert_true(f->vmcb->ctl.intercept1 & VMCB_I1_IRET);	/* NMI blocking: kept */
	svm_get_state(&f->v, &s);
	assert_int_equal(s.interruptibility, INTR_SHADOW_STI | INTR_NMI_BLOCKED);	/* IF = 1 */
	s.rflags = 0x2;
	s.interruptibility &= ~INTR_NMI_BLOCKED;
	svm_set_state(&f->v, &s);
	assert_false(f->vmcb->ctl.intercept1 & VMCB_I1_IRET);
	svm_get_state(&f->v, &s);
	assert_int_equal(s.interruptibility, INTR_SHADOW_MOV_SS);	/* IF = 0: not STI */
	s.interruptibility = INTR_NMI_BLOCKED;		/* no VMCB bit: kept in software */
	svm_set_state(&f->v, &s);
	assert_int_equal(f->vmcb->ctl.int_state, 0);
	svm_get_state(&f->v, &s);
	assert_int_equal(s.interruptibility, INTR_NMI_BLOCKED);
	/* a pending NMI blocks as its delivery will */
	s.interruptibility = 0;
	s.pending = (struct event){ true, EVENT_NMI, 2, false, 0 };
	svm_set_state(&f->v, &s);
	svm_get_state(&f->v, &s);
	assert_int_equal(s.interruptibility, INTR_NMI_BLOCKED);
}

static void test_pending_events(void **state)
{
	struct fix *f = *state;
	struct cpu_state in, out;
	static const struct event ok[] = {
		{ true, EVENT_EXTINT, 0x30, false, 0 },
		{ true, EVENT_NMI, 2, false, 0 },
		{ true, EVENT_EXCEPTION, 13, true, 0x18 },
		{ true, EVENT_EXCEPTION, 6, false, 0 },
		{ false, 0, 0, false, 0 },
	};
	static const struct event dropped[] = {
		{ true, EVENT_EXCEPTION, 32, false, 0 },
		{ true, 1, 5, false, 0 },			/* reserved type */
		{ true, 7, 5, false, 0 },
		{ true, EVENT_SOFTINT, 0x80, false, 0 },	/* re-executes instead */
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		full_state(&in);
		in.pending = ok[i];
		svm_set_state(&f->v, &in);
		svm_get_state(&f->v, &out);
		assert_memory_equal(&in.pending, &out.pending, sizeof(in.pending));
	}
	for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++) {
		full_state(&in);
		in.pending = dropped[i];
		svm_set_state(&f->v, &in);
		assert_int_equal(f->vmcb->ctl.event_inj, 0);
		svm_get_state(&f->v, &out);
		assert_false(out.pending.valid);
	}
}

/* Error codes go with the vector and the mode, as on VMX. */
static void test_event_normalised(void **state)
{
	struct event e, d;

	(void)state;
	e = (struct event){ true, EVENT_EXCEPTION, 14, false, 0 };	/* #PF needs one */
	assert_int_equal(svm_event_encode(&e, true), 14 | (3u << 8) | (1u << 11) | (1u << 31));
	e = (struct event){ true, EVENT_EXCEPTION, 13, true, 0x10 };	/* real mode: none */
	assert_int_equal(svm_event_encode(&e, false), 13 | (3u << 8) | (1u << 31));
	e = (struct event){ true, EVENT_EXCEPTION, 6, true, 0x10 };	/* #UD has none */
	assert_int_equal(svm_event_encode(&e, true), 6 | (3u << 8) | (1u << 31));
	e = (struct event){ true, EVENT_EXTINT, 0x30, true, 1 };	/* nor an IRQ */
	assert_int_equal(svm_event_encode(&e, true), 0x30 | (1u << 31));
	e = (struct event){ true, EVENT_NMI, 3, false, 0 };		/* NMI is vector 2 */
	assert_int_equal(svm_event_encode(&e, true), 2 | (2u << 8) | (1u << 31));
	e = (struct event){ true, EVENT_EXCEPTION, 2, false, 0 };	/* vector 2 is the NMI */
	assert_int_equal(svm_event_encode(&e, true), 2 | (2u << 8) | (1u << 31));
	e = (struct event){ true, EVENT_EXCEPTION, 8, true, 0 };
	svm_event_decode(svm_event_encode(&e, true), &d);
	assert_memory_equal(&e, &d, sizeof(e));
	svm_event_decode(0x12345678ull << 32 | 0x7fffffff, &d);	/* V clear */
	assert_false(d.valid);
}

/* ---- the event operations --------------------------------------------------------------- */

static void test_inject(void **state)
{
	struct fix *f = *state;
	struct event e = { true, EVENT_EXTINT, 0x20, false, 0 };
	struct event bad = { true, EVENT_EXCEPTION, 40, false, 0 };

	svm_inject(&f->v, &e);
	assert_int_equal(f->vmcb->ctl.event_inj, 0x20 | (1u << 31));
	svm_inject(&f->v, &bad);
	assert_int_equal(f->vmcb->ctl.event_inj, 0x20 | (1u << 31));	/* refused */
	assert_int_equal(warnings, 1);
	bad = (struct event){ true, EVENT_SOFTINT, 0x80, false, 0 };
	svm_inject(&f->v, &bad);
	assert_int_equal(f->vmcb->ctl.event_inj, 0x20 | (1u << 31));	/* INT n re-executes */
	f->vmcb->save.cr0 = CR0_PE;
	e = (struct event){ true, EVENT_EXCEPTION, 14, true, 0x7 };
	svm_inject(&f->v, &e);					/* the core overrides */
	assert_int_equal(f->vmcb->ctl.event_inj, 14 | (3u << 8) | (1u << 11) | (1u << 31) |
			 (7ull << 32));
}

static void test_intr_allowed(void **state)
{
	struct fix *f = *state;
	struct event e = { true, EVENT_EXTINT, 0x20, false, 0 };

	f->vmcb->save.rflags = 0x2;
	assert_false(svm_intr_allowed(&f->v));
	f->vmcb->save.rflags = 0x202;
	assert_true(svm_intr_allowed(&f->v));
	f->vmcb->ctl.int_state = VMCB_INT_SHADOW;
	assert_false(svm_intr_allowed(&f->v));
	f->vmcb->ctl.int_state = 0;
	svm_inject(&f->v, &e);
	assert_false(svm_intr_allowed(&f->v));
}

static void test_intr_window(void **state)
{
	struct fix *f = *state;
	uint64_t ctl;

	f->vmcb->ctl.int_ctl |= 0x5;			/* guest TPR 5 */
	svm_want_intr_window(&f->v, true);
	ctl = f->vmcb->ctl.int_ctl;
	assert_true(ctl & VMCB_V_IRQ);
	assert_true(ctl & VMCB_V_IGN_TPR);
	assert_int_equal((ctl >> 16) & 0xf, 0xf);
	assert_int_equal((ctl >> 32) & 0xff, 0);
	assert_true(ctl & VMCB_V_INTR_MASKING);
	assert_int_equal(ctl & 0xf, 5);
	assert_true(f->vmcb->ctl.intercept1 & VMCB_I1_VINTR);
	assert_true(f->sv.want_window);
	svm_want_intr_window(&f->v, true);		/* idempotent */
	assert_int_equal(f->vmcb->ctl.int_ctl, ctl);
	svm_want_intr_window(&f->v, false);
	assert_int_equal(f->vmcb->ctl.int_ctl, VMCB_V_INTR_MASKING | 5);
	assert_false(f->vmcb->ctl.intercept1 & VMCB_I1_VINTR);
	assert_true(f->vmcb->ctl.intercept1 & VMCB_I1_INTR);
	assert_false(f->sv.want_window);
}

static void test_skip_insn(void **state)
{
	struct fix *f = *state;

	f->vmcb->save.efer = EFER_SVME | EFER_LMA | EFER_LME;
	f->vmcb->save.cs.attrib = 0xa9b;		/* 64-bit code */
	f->vmcb->save.rip = 0xfffffffffffffff0ull;
	f->vmcb->ctl.int_state = VMCB_INT_SHADOW;
	svm_skip_insn(&f->v, 3);
	assert_int_equal(f->vmcb->save.rip, 0xfffffffffffffff3ull);
	assert_int_equal(f->vmcb->ctl.int_state, 0);
	f->vmcb->save.cs.attrib = 0xc9b;		/* compatibility mode */
	f->vmcb->save.rip = 0xfffffffe;
	svm_skip_insn(&f->v, 3);
	assert_int_equal(f->vmcb->save.rip, 1);		/* EIP wraps */
	f->vmcb->save.efer = EFER_SVME;			/* legacy protected mode */
	f->vmcb->save.rip = 0x1000;
	svm_skip_insn(&f->v, 2);
	assert_int_equal(f->vmcb->save.rip, 0x1002);
	assert_int_equal(f->vmcb->ctl.event_inj, 0);
}

/* Single-stepping over an instruction ferry emulated: the #DB the CPU
 * would have raised after it, with DR6.BS (B0-B3 cleared, BD kept). */
static void test_skip_insn_single_step(void **state)
{
	struct fix *f = *state;

	f->vmcb->save.cr0 = CR0_PE;
	f->vmcb->save.rip = 0x1000;
	f->vmcb->save.rflags = 0x102;			/* TF */
	f->vmcb->save.dr6 = 0xffff0ff0 | (1u << 13) | 0x3;
	svm_skip_insn(&f->v, 2);
	assert_int_equal(f->vmcb->save.rip, 0x1002);
	assert_int_equal(f->vmcb->ctl.event_inj, 1 | (3u << 8) | (1u << 31));
	assert_int_equal(f->vmcb->save.dr6, 0xffff0ff0 | (1u << 13) | (1u << 14));
}

/* Native: the offset alone.  Scaled: RDTSC intercepted (APM 15.9, vector
 * at 00Ch bit 14), and lifted again; RDTSCP is always intercepted. */
static void test_tsc_offset_and_scaling(void **state)
{
	struct fix *f = *state;
	uint32_t other = f->vmcb->ctl.intercept1 & ~(1u << 14);

	svm_set_tsc(&f->v, (uint64_t)-123456789, TSC_MULT_ONE);
	assert_int_equal(raw64(f->vmcb, 0x050), (uint64_t)-123456789);
	assert_false(f->vmcb->ctl.intercept1 & (1u << 14));
	assert_true(f->vmcb->ctl.intercept2 & (1u << 7));
	svm_set_tsc(&f->v, 42, TSC_MULT_ONE * 10);
	assert_int_equal(raw64(f->vmcb, 0x050), 42);
	assert_true(f->vmcb->ctl.intercept1 & (1u << 14));
	assert_int_equal(f->vmcb->ctl.intercept1 & ~(1u << 14), other);
	svm_set_tsc(&f->v, 43, TSC_MULT_ONE);
	assert_int_equal(f->vmcb->ctl.intercept1, other);
}

static void test_reset_state(void **state)
{
	struct fix *f = *state;
	struct cpu_state s, out;

	svm_reset_state(&s);
	assert_int_equal(s.cs.base + s.rip, 0xfffffff0);
	assert_int_equal(s.cr0, 0x60000010);
	svm_set_state(&f->v, &s);
	assert_int_equal(f->vmcb->save.cpl, 0);
	assert_int_equal(f->vmcb->save.efer, EFER_SVME);
	svm_get_state(&f->v, &out);
	assert_memory_equal(&s, &out, sizeof(s));	/* reset is in reported form */
}

/* ---- hostile input -------------------------------------------------------------------------- */

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void fill_random(void *p, size_t n)
{
	uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)rnd();
}

static void test_random_states(void **state)
{
	struct fix *f = *state;
	struct cpu_state s, out;

	for (int i = 0; i < 20000; i++) {
		fill_random(&s, sizeof(s));
		s.pending.valid = rnd() & 1;		/* bools hold 0 or 1 only */
		s.pending.has_error = rnd() & 1;
		s.pending.type = (uint8_t)(rnd() & 7);
		svm_set_state(&f->v, &s);
		assert_true(f->vmcb->save.efer & EFER_SVME);
		assert_true(f->vmcb->save.cpl <= 3);
		assert_int_equal(f->vmcb->save.cs.attrib & 0xf000, 0);
		assert_true(f->vmcb->ctl.int_ctl & VMCB_V_INTR_MASKING);
		if (f->vmcb->ctl.event_inj)
			assert_true(f->vmcb->ctl.event_inj & VMCB_EVT_V);
		svm_get_state(&f->v, &out);
		assert_false(out.efer & EFER_SVME);
		assert_int_equal(out.cr8, 0);	/* the local APIC's TPR carries it */
		assert_int_equal(out.rip, s.rip);
		assert_memory_equal(out.gpr, s.gpr, sizeof(s.gpr));
	}
}

static void test_random_vmcb(void **state)
{
	struct fix *f = *state;
	struct cpu_state s;

	for (int i = 0; i < 20000; i++) {
		fill_random(f->vmcb, sizeof(*f->vmcb));
		svm_get_state(&f->v, &s);
		assert_false(s.efer & EFER_SVME);
		assert_int_equal(s.cr8, 0);
		assert_true(s.interruptibility == 0 || s.interruptibility == INTR_SHADOW_STI ||
			    s.interruptibility == INTR_SHADOW_MOV_SS);
		assert_int_equal((s.ss.attr >> 5) & 3, f->vmcb->save.cpl & 3);
		(void)svm_intr_allowed(&f->v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_init_intercepts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_init_controls, setup, teardown),
		cmocka_unit_test(test_iopm_all_ports),
		cmocka_unit_test(test_msrpm_passthrough),
		cmocka_unit_test(test_msrpm_intercepts_rest),
		cmocka_unit_test_setup_teardown(test_roundtrip_every_field, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_state_raw_vmcb, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_state_drops_the_asid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_efer_svme_hidden, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reserved_bits_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cpl_derivation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_state_normalises, setup, teardown),
		cmocka_unit_test_setup_teardown(test_interruptibility, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pending_events, setup, teardown),
		cmocka_unit_test(test_event_normalised),
		cmocka_unit_test_setup_teardown(test_inject, setup, teardown),
		cmocka_unit_test_setup_teardown(test_intr_allowed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_intr_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_skip_insn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_skip_insn_single_step, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tsc_offset_and_scaling, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reset_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_states, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_vmcb, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
