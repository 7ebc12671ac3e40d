/* SPDX-License-Identifier: BSD-2-Clause */
/* The virtual local APIC (hv/vdev/lapic.c): timer modes on a simulated
 * clock, priorities, EOI, the x2APIC and APIC_BASE rules, ICR decoding and
 * destinations, events, and snapshots mid-count and hostile. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include "hv/vdev/lapic.h"

#define TSC_HZ 2000000000ull
#define MASKED 0x10000u

/* Vectors the EOI callback saw. */
static uint8_t eoi_seen[16];
static int eoi_count;

static void on_eoi(void *ctx, uint8_t vector)
{
	assert_ptr_equal(ctx, &eoi_count);
	assert_true(eoi_count < 16);
	eoi_seen[eoi_count++] = vector;
}

static void mk(struct lapic *a, uint32_t id, bool bsp)
{
	struct lapic_config cfg = { .apic_id = id, .bsp = bsp, .tsc_hz = TSC_HZ,
				    .phys_bits = 39, .ctx = &eoi_count, .eoi = on_eoi };

	lapic_init(a, &cfg);
	eoi_count = 0;
	assert_true(lapic_valid(a));
}

static void wr(struct lapic *a, uint32_t off, uint32_t v, uint64_t now)
{
	struct lapic_ipi ipi;

	assert_int_equal(lapic_mmio(a, off, 4, true, &v, now, &ipi), 0);
	assert_true(lapic_valid(a));
}

static uint32_t rd(struct lapic *a, uint32_t off, uint64_t now)
{
	uint32_t v = 0xdeadbeef;

	assert_int_equal(lapic_mmio(a, off, 4, false, &v, now, NULL), 0);
	return v;
}

static int wrmsr(struct lapic *a, uint32_t msr, uint64_t v, uint64_t now)
{
	struct lapic_ipi ipi;

	return lapic_wrmsr(a, msr, v, 0, now, &ipi);
}

static uint64_t rdmsr_ok(struct lapic *a, uint32_t msr)
{
	uint64_t v = 0xdeadbeef;

	assert_int_equal(lapic_rdmsr(a, msr, &v, 0), 0);
	return v;
}

static void to_x2apic(struct lapic *a)
{
	uint64_t base = rdmsr_ok(a, MSR_IA32_APIC_BASE);

	assert_int_equal(wrmsr(a, MSR_IA32_APIC_BASE, base | APIC_BASE_EXTD, 0), 0);
	assert_true(lapic_x2apic(a));
}

static void test_power_on(void **state)
{
	struct lapic a, ap;

	(void)state;
	mk(&a, 0, true);
	assert_int_equal(rdmsr_ok(&a, MSR_IA32_APIC_BASE), 0xFEE00900);
	assert_int_equal(lapic_mmio_base(&a), 0xFEE00000);
	assert_int_equal(rd(&a, 0x30, 0), 0x50014);
	assert_int_equal(rd(&a, 0xF0, 0), 0x1FF);
	assert_int_equal(rd(&a, 0x350, 0), 0x700);	/* LINT0 ExtINT */
	assert_int_equal(rd(&a, 0x360, 0), 0x400);	/* LINT1 NMI */
	assert_int_equal(rd(&a, 0x320, 0), MASKED);
	assert_int_equal(rd(&a, 0x370, 0), MASKED);
	assert_int_equal(rd(&a, 0xE0, 0), 0xFFFFFFFF);
	assert_true(lapic_accepts_pic(&a));
	mk(&ap, 3, false);
	assert_int_equal(rdmsr_ok(&ap, MSR_IA32_APIC_BASE), 0xFEE00800);
	assert_int_equal(rd(&ap, 0x20, 0), 3u << 24);
	assert_int_equal(rd(&ap, 0x350, 0), 0x10700);
	assert_false(lapic_accepts_pic(&ap));
	assert_int_equal(lapic_next_event_ns(&ap, 5), LAPIC_NO_EVENT);
	/* A reset from the APIC's own config: the same power-on state. */
	to_x2apic(&ap);
	assert_int_equal(lapic_set_irq(&ap, 0x40, false), 0);
	lapic_init(&ap, &ap.cfg);
	assert_int_equal(rdmsr_ok(&ap, MSR_IA32_APIC_BASE), 0xFEE00800);
	assert_int_equal(ap.cfg.apic_id, 3);
	assert_int_equal(ap.cfg.tsc_hz, TSC_HZ);
	assert_int_equal(lapic_pending_vector(&ap, 0), -1);
	assert_true(lapic_valid(&ap));
}

/* One-shot with divide-by-16: fires initial * 16 ns after the write. */
static void test_timer_oneshot(void **state)
{
	struct lapic a;

	(void)state;
	mk(&a, 0, true);
	wr(&a, 0x3E0, 3, 0);			/* divide by 16 */
	wr(&a, 0x320, 0x40, 0);			/* one-shot, vector 0x40 */
	wr(&a, 0x380, 1000, 1000);
	assert_int_equal(rd(&a, 0x380, 1000), 1000);
	assert_int_equal(rd(&a, 0x390, 1000), 1000);
	assert_int_equal(rd(&a, 0x390, 9000), 500);
	assert_int_equal(rd(&a, 0x390, 9001), 500);	/* rounds up */
	assert_int_equal(rd(&a, 0x390, 9016), 499);
	assert_int_equal(lapic_next_event_ns(&a, 9000), 17000);
	assert_int_equal(lapic_pending_vector(&a, 16999), -1);
	assert_int_equal(lapic_pending_vector(&a, 17000), 0x40);
	assert_int_equal(rd(&a, 0x390, 17000), 0);
	assert_int_equal(lapic_ack(&a, 0x40), 0);
	assert_int_equal(lapic_pending_vector(&a, 99999), -1);
	assert_int_equal(lapic_next_event_ns(&a, 99999), LAPIC_NO_EVENT);
	assert_int_equal(a.stats.timer_fires, 1);
	/* Writing 0 stops a running count. */
	wr(&a, 0x380, 10, 200000);
	wr(&a, 0x380, 0, 200001);
	assert_int_equal(lapic_next_event_ns(&a, 200002), LAPIC_NO_EVENT);
}

static void test_timer_divide_values(void **state)
{
	static const struct { uint32_t dcr, div; } t[] = {
		{ 0x0, 2 }, { 0x1, 4 }, { 0x2, 8 }, { 0x3, 16 },
		{ 0x8, 32 }, { 0x9, 64 }, { 0xA, 128 }, { 0xB, 1 },
	};
	struct lapic a;

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint64_t now = 1000000 * (i + 1);

		mk(&a, 0, true);
		wr(&a, 0x320, 0x30, 0);
		wr(&a, 0x3E0, t[i].dcr | 0xF4, now);	/* reserved bits dropped */
		assert_int_equal(rd(&a, 0x3E0, now), t[i].dcr);
		wr(&a, 0x380, 300, now);
		assert_int_equal(lapic_next_event_ns(&a, now), now + 300ull * t[i].div);
		assert_int_equal(rd(&a, 0x390, now + 100ull * t[i].div), 200);
	}
	/* A new divider mid-count: the count goes on at the new rate. */
	mk(&a, 0, true);
	wr(&a, 0x320, 0x30, 0);
	wr(&a, 0x3E0, 0x0, 0);
	wr(&a, 0x380, 300, 50000000);		/* div 2: 600 ns */
	assert_int_equal(rd(&a, 0x390, 50000200), 200);
	wr(&a, 0x3E0, 0xA, 50000200);		/* div 128 */
	assert_int_equal(rd(&a, 0x390, 50000200), 200);
	assert_int_equal(lapic_next_event_ns(&a, 50000200), 50000200 + 200 * 128);
}

static void test_timer_periodic(void **state)
{
	struct lapic a;

	(void)state;
	mk(&a, 0, true);
	wr(&a, 0x3E0, 0xB, 0);			/* divide by 1 */
	wr(&a, 0x320, 0x20041, 0);		/* periodic, vector 0x41 */
	wr(&a, 0x380, 500, 0);
	for (uint64_t k = 1; k <= 3; k++) {
		assert_int_equal(lapic_next_event_ns(&a, k * 500 - 1), k * 500);
		assert_int_equal(lapic_pending_vector(&a, k * 500), 0x41);
		assert_int_equal(lapic_ack(&a, 0x41), 0);
		wr(&a, 0xB0, 0, k * 500);
		assert_int_equal(rd(&a, 0x390, k * 500 + 100), 400);
	}
	/* Eight periods (2000..5500) unseen: one interrupt, seven merged,
	 * phase kept. */
	assert_int_equal(lapic_pending_vector(&a, 5750), 0x41);
	assert_int_equal(a.stats.coalesced, 7);
	assert_int_equal(a.stats.timer_fires, 4);
	assert_int_equal(lapic_ack(&a, 0x41), 0);
	assert_int_equal(lapic_next_event_ns(&a, 5750), 6000);
	assert_int_equal(rd(&a, 0x390, 5750), 250);
	/* Masked: it keeps counting but there is nothing to wake for. */
	wr(&a, 0x320, 0x20041 | MASKED, 5750);
	wr(&a, 0xB0, 0, 5750);
	assert_int_equal(lapic_next_event_ns(&a, 5800), LAPIC_NO_EVENT);
	assert_int_equal(lapic_pending_vector(&a, 7000), -1);
	assert_int_equal(rd(&a, 0x390, 7100), 400);
}

static void test_timer_deadline(void **state)
{
	struct lapic a;
	struct lapic_ipi ipi;
	uint64_t v;

	(void)state;
	mk(&a, 0, true);
	/* Not in deadline mode: the MSR reads 0 and writes do nothing. */
	assert_int_equal(lapic_wrmsr(&a, MSR_IA32_TSC_DEADLINE, 5000, 0, 0, &ipi), 0);
	assert_int_equal(rdmsr_ok(&a, MSR_IA32_TSC_DEADLINE), 0);
	wr(&a, 0x320, 0x40042, 0);		/* TSC-deadline, vector 0x42 */
	/* Guest TSC 1e6 at 5000 ns; 2 GHz: 2000 ticks = 1000 ns. */
	assert_int_equal(lapic_wrmsr(&a, MSR_IA32_TSC_DEADLINE, 1000000 + 2000, 1000000,
				     5000, &ipi), 0);
	assert_int_equal(rdmsr_ok(&a, MSR_IA32_TSC_DEADLINE), 1002000);
	assert_int_equal(lapic_next_event_ns(&a, 5000), 6000);
	wr(&a, 0x380, 77, 5100);		/* initial count: ignored */
	assert_int_equal(rd(&a, 0x390, 5100), 0);
	assert_int_equal(lapic_pending_vector(&a, 5999), -1);
	assert_int_equal(lapic_pending_vector(&a, 6000), 0x42);
	assert_int_equal(lapic_rdmsr(&a, MSR_IA32_TSC_DEADLINE, &v, 6000), 0);
	assert_int_equal(v, 0);			/* disarmed once it fired */
	assert_int_equal(lapic_ack(&a, 0x42), 0);
	wr(&a, 0xB0, 0, 6000);
	/* One tick rounds up to a whole nanosecond; a past one fires now. */
	assert_int_equal(lapic_wrmsr(&a, MSR_IA32_TSC_DEADLINE, 3001, 3000, 7000, &ipi), 0);
	assert_int_equal(lapic_next_event_ns(&a, 7000), 7001);
	assert_int_equal(lapic_wrmsr(&a, MSR_IA32_TSC_DEADLINE, 10, 3000, 8000, &ipi), 0);
	assert_int_equal(lapic_pending_vector(&a, 8000), 0x42);
	assert_int_equal(lapic_ack(&a, 0x42), 0);
	wr(&a, 0xB0, 0, 8000);
	/* Writing 0 disarms; a mode change disarms. */
	assert_int_equal(lapic_wrmsr(&a, MSR_IA32_TSC_DEADLINE, 99999, 3000, 9000, &ipi), 0);
	assert_int_equal(lapic_wrmsr(&a, MSR_IA32_TSC_DEADLINE, 0, 3000, 9000, &ipi), 0);
	assert_int_equal(lapic_next_event_ns(&a, 9000), LAPIC_NO_EVENT);
	assert_int_equal(lapic_wrmsr(&a, MSR_IA32_TSC_DEADLINE, 99999, 3000, 9000, &ipi), 0);
	wr(&a, 0x320, 0x42, 9000);
	assert_int_equal(lapic_next_event_ns(&a, 9000), LAPIC_NO_EVENT);
	assert_int_equal(rdmsr_ok(&a, MSR_IA32_TSC_DEADLINE), 0);
	/* One-shot armed, then switched to periodic: disarmed too. */
	wr(&a, 0x380, 100, 10000);
	wr(&a, 0x320, 0x20042, 10000);
	assert_int_equal(lapic_next_event_ns(&a, 10000), LAPIC_NO_EVENT);
}

static void test_priority_and_tpr(void **state)
{
	struct lapic a;

	(void)state;
	mk(&a, 0, true);
	assert_int_equal(lapic_set_irq(&a, 0x35, false), 0);
	assert_int_equal(lapic_set_irq(&a, 0x62, false), 0);
	assert_int_equal(lapic_set_irq(&a, 0x91, false), 0);
	assert_int_equal(rd(&a, 0x200 + 0x10 * (0x91 / 32), 0), 1u << (0x91 % 32));
	assert_int_equal(lapic_pending_vector(&a, 0), 0x91);
	assert_int_equal(lapic_ack(&a, 0x62), 0);	/* any requested one */
	assert_int_equal(lapic_ack(&a, 0x62), -EINVAL);
	assert_int_equal(rd(&a, 0xA0, 0), 0x60);	/* PPR = ISRV class */
	assert_int_equal(lapic_pending_vector(&a, 0), 0x91);
	assert_int_equal(lapic_ack(&a, 0x91), 0);
	assert_int_equal(lapic_pending_vector(&a, 0), -1);	/* 0x35 < 0x90 */
	wr(&a, 0xB0, 0, 0);
	wr(&a, 0xB0, 0, 0);
	assert_int_equal(lapic_pending_vector(&a, 0), 0x35);
	/* TPR: a vector is held while its class is <= the TPR's. */
	wr(&a, 0x80, 0x30, 0);
	assert_int_equal(rd(&a, 0xA0, 0), 0x30);
	assert_int_equal(lapic_pending_vector(&a, 0), -1);
	wr(&a, 0x80, 0x2F, 0);
	assert_int_equal(lapic_pending_vector(&a, 0), 0x35);
	/* CR8 is TPR[7:4]. */
	assert_int_equal(lapic_set_cr8(&a, 6), 0);
	assert_int_equal(rd(&a, 0x80, 0), 0x60);
	wr(&a, 0x80, 0xAB, 0);
	assert_int_equal(lapic_get_cr8(&a), 0xA);
	assert_int_equal(lapic_set_cr8(&a, 16), LAPIC_GP);
	assert_int_equal(lapic_get_cr8(&a), 0xA);
	/* Vectors 0-15 are refused and reported. */
	assert_int_equal(lapic_set_irq(&a, 7, false), -EINVAL);
	wr(&a, 0x280, 0, 0);
	assert_int_equal(rd(&a, 0x280, 0), 0x40);
	assert_int_equal(a.stats.dropped, 1);
}

static void test_eoi_nesting_and_level(void **state)
{
	struct lapic a;

	(void)state;
	mk(&a, 0, true);
	assert_int_equal(lapic_set_irq(&a, 0x40, false), 0);
	assert_int_equal(lapic_ack(&a, 0x40), 0);
	assert_int_equal(lapic_set_irq(&a, 0x80, true), 0);	/* level */
	assert_int_equal(lapic_pending_vector(&a, 0), 0x80);	/* nests */
	assert_int_equal(lapic_ack(&a, 0x80), 0);
	assert_int_equal(lapic_set_irq(&a, 0x45, false), 0);
	assert_int_equal(rd(&a, 0x180 + 0x10 * 4, 0), 1u);	/* TMR 0x80 */
	assert_int_equal(lapic_pending_vector(&a, 0), -1);
	wr(&a, 0xB0, 0, 0);			/* EOI 0x80: level, broadcast */
	assert_int_equal(eoi_count, 1);
	assert_int_equal(eoi_seen[0], 0x80);
	assert_int_equal(rd(&a, 0x100 + 0x10 * 2, 0), 1u);	/* ISR 0x40 */
	assert_int_equal(lapic_pending_vector(&a, 0), -1);	/* 0x45 vs 0x40 */
	wr(&a, 0xB0, 0, 0);			/* EOI 0x40: edge, silent */
	assert_int_equal(eoi_count, 1);
	assert_int_equal(lapic_pending_vector(&a, 0), 0x45);
	wr(&a, 0xB0, 0, 0);			/* nothing in service */
	assert_int_equal(eoi_count, 1);
	/* An edge delivery of the vector clears its TMR bit again. */
	assert_int_equal(lapic_set_irq(&a, 0x80, false), 0);
	assert_int_equal(rd(&a, 0x180 + 0x10 * 4, 0), 0);
}

static void test_software_disable(void **state)
{
	struct lapic a;
	uint8_t sipi;

	(void)state;
	mk(&a, 0, true);
	wr(&a, 0xF0, 0xFF, 0);
	for (uint32_t off = 0x320; off <= 0x370; off += 0x10)
		assert_true(rd(&a, off, 0) & MASKED);
	wr(&a, 0x350, 0x700, 0);
	assert_int_equal(rd(&a, 0x350, 0), 0x10700);
	assert_false(lapic_accepts_pic(&a));
	assert_int_equal(lapic_set_irq(&a, 0x50, false), -EINVAL);
	assert_int_equal(lapic_deliver(&a, LAPIC_DM_NMI, 0, false), 0);
	assert_int_equal(lapic_take_event(&a, &sipi), LAPIC_EV_NMI);
	wr(&a, 0xF0, 0x1FF, 0);
	assert_int_equal(lapic_set_irq(&a, 0x50, false), 0);
	assert_int_equal(rd(&a, 0x350, 0), 0x10700);	/* still masked */
}

static void test_esr_and_reserved_offsets(void **state)
{
	struct lapic a;
	struct lapic_ipi ipi;
	uint32_t v = 0x12345678;

	(void)state;
	mk(&a, 0, true);
	assert_int_equal(rd(&a, 0x2F0, 0), 0);		/* no CMCI: reserved */
	assert_int_equal(rd(&a, 0x280, 0), 0);		/* not latched yet */
	wr(&a, 0x280, 0, 0);
	assert_int_equal(rd(&a, 0x280, 0), 0x80);
	wr(&a, 0x280, 0, 0);
	assert_int_equal(rd(&a, 0x280, 0), 0);
	/* The error LVT raises its vector. */
	wr(&a, 0x370, 0x5E, 0);
	wr(&a, 0x3F0, 1, 0);				/* SELF IPI: x2APIC only */
	assert_int_equal(lapic_pending_vector(&a, 0), 0x5E);
	/* Narrow reads give part of a register; narrow writes are dropped. */
	assert_int_equal(lapic_mmio(&a, 0x31, 1, false, &v, 0, &ipi), 0);
	assert_int_equal(v, 0x00);
	assert_int_equal(lapic_mmio(&a, 0x32, 1, false, &v, 0, &ipi), 0);
	assert_int_equal(v, 0x05);
	v = 0x77;
	assert_int_equal(lapic_mmio(&a, 0x80, 1, true, &v, 0, &ipi), 0);
	assert_int_equal(rd(&a, 0x80, 0), 0);
	assert_int_equal(lapic_mmio(&a, 0x1000, 4, false, &v, 0, &ipi), -ENOENT);
	/* Read-only registers ignore writes in xAPIC mode. */
	wr(&a, 0x30, 0, 0);
	assert_int_equal(rd(&a, 0x30, 0), 0x50014);
	wr(&a, 0xD0, 0xAB123456, 0);
	assert_int_equal(rd(&a, 0xD0, 0), 0xAB000000);
	wr(&a, 0xE0, 0x0, 0);
	assert_int_equal(rd(&a, 0xE0, 0), 0x0FFFFFFF);
}

/* 10.12.1.2-3: the x2APIC MSR rules. */
static void test_x2apic_msrs(void **state)
{
	struct lapic a;
	struct lapic_ipi ipi;
	uint64_t v;
	uint32_t w = 0;

	(void)state;
	mk(&a, 0x23, false);
	assert_int_equal(lapic_rdmsr(&a, 0x802, &v, 0), LAPIC_GP);	/* xAPIC */
	assert_int_equal(wrmsr(&a, 0x808, 0, 0), LAPIC_GP);
	to_x2apic(&a);
	assert_int_equal(lapic_mmio_base(&a), LAPIC_NO_EVENT);
	assert_int_equal(lapic_mmio(&a, 0x20, 4, false, &w, 0, &ipi), -ENOENT);
	assert_int_equal(rdmsr_ok(&a, 0x802), 0x23);
	assert_int_equal(rdmsr_ok(&a, 0x803), 0x50014);
	assert_int_equal(rdmsr_ok(&a, 0x80D), 0x20008);	/* cluster 2, bit 3 */
	/* Write-only registers: #GP on read. */
	assert_int_equal(lapic_rdmsr(&a, 0x80B, &v, 0), LAPIC_GP);
	assert_int_equal(lapic_rdmsr(&a, 0x83F, &v, 0), LAPIC_GP);
	/* Registers that x2APIC does not have. */
	static const uint32_t gone[] = { 0x800, 0x809, 0x80C, 0x80E, 0x82F, 0x831, 0x83A, 0x840, 0x8FF };
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
		assert_int_equal(lapic_rdmsr(&a, gone[i], &v, 0), LAPIC_GP);
		assert_int_equal(wrmsr(&a, gone[i], 0, 0), LAPIC_GP);
	}
	/* Read-only registers: #GP on write. */
	static const uint32_t ro[] = { 0x802, 0x803, 0x80A, 0x80D, 0x810, 0x818, 0x827, 0x839 };
	for (size_t i = 0; i < sizeof(ro) / sizeof(ro[0]); i++)
		assert_int_equal(wrmsr(&a, ro[i], 0, 0), LAPIC_GP);
	/* Reserved bits: #GP, and nothing changes. */
	assert_int_equal(wrmsr(&a, 0x808, 0x100, 0), LAPIC_GP);
	assert_int_equal(wrmsr(&a, 0x808, 1ull << 32, 0), LAPIC_GP);
	assert_int_equal(wrmsr(&a, 0x808, 0x70, 0), 0);
	assert_int_equal(rdmsr_ok(&a, 0x808), 0x70);
	assert_int_equal(wrmsr(&a, 0x80B, 1, 0), LAPIC_GP);
	assert_int_equal(wrmsr(&a, 0x80B, 0, 0), 0);
	assert_int_equal(wrmsr(&a, 0x828, 1, 0), LAPIC_GP);
	assert_int_equal(wrmsr(&a, 0x80F, 0x1000 | 0x1FF, 0), LAPIC_GP);
	assert_int_equal(wrmsr(&a, 0x832, 0x80000, 0), LAPIC_GP);	/* bit 19 */
	assert_int_equal(wrmsr(&a, 0x832, 0x60040, 0), LAPIC_GP);	/* mode 3 */
	assert_int_equal(wrmsr(&a, 0x835, 0x5000 | 0x700, 0), 0);	/* RO bits ok */
	assert_int_equal(rdmsr_ok(&a, 0x835), 0x700);
	assert_int_equal(wrmsr(&a, 0x83E, 0x4, 0), LAPIC_GP);
	assert_int_equal(wrmsr(&a, 0x83E, 0xB, 0), 0);
	assert_int_equal(wrmsr(&a, 0x830, 0x2000 | 0x40, 0), LAPIC_GP);	/* bit 13 */
	assert_int_equal(wrmsr(&a, 0x830, 0x100000 | 0x40, 0), LAPIC_GP);	/* bit 20 */
	assert_int_equal(wrmsr(&a, 0x83F, 0x100, 0), LAPIC_GP);
	assert_int_equal(rdmsr_ok(&a, 0x835), 0x700);
	/* ICR: one 64-bit register with a 32-bit destination. */
	assert_int_equal(lapic_wrmsr(&a, 0x830, 0x12345678ull << 32 | 0x4031, 0, 0, &ipi),
			 LAPIC_IPI);
	assert_int_equal(ipi.dest, 0x12345678);
	assert_int_equal(ipi.vector, 0x31);
	assert_true(ipi.x2apic);
	assert_int_equal(rdmsr_ok(&a, 0x830), 0x12345678ull << 32 | 0x4031);
	/* The busy bit is ignored, not #GP, and reads 0. */
	assert_int_equal(lapic_wrmsr(&a, 0x830, 7ull << 32 | 0x1032, 0, 0, &ipi), LAPIC_IPI);
	assert_int_equal(rdmsr_ok(&a, 0x830), 7ull << 32 | 0x32);
	/* SELF IPI. */
	assert_int_equal(lapic_wrmsr(&a, 0x83F, 0x45, 0, 0, &ipi), LAPIC_IPI);
	assert_int_equal(ipi.shorthand, LAPIC_SH_SELF);
	assert_int_equal(ipi.mode, LAPIC_DM_FIXED);
	assert_int_equal(ipi.vector, 0x45);
	assert_true(lapic_ipi_targets(&ipi, &a, &a));
	/* Other MSRs are not the APIC's. */
	assert_int_equal(lapic_rdmsr(&a, 0x7FF, &v, 0), -ENOENT);
	assert_int_equal(wrmsr(&a, 0x900, 0, 0), -ENOENT);
	assert_true(lapic_valid(&a));
}

/* 10.12.5: the APIC_BASE state machine. */
static void test_apic_base_transitions(void **state)
{
	struct lapic a;
	const uint64_t B = LAPIC_DEFAULT_BASE;

	(void)state;
	mk(&a, 1, false);
	assert_int_equal(wrmsr(&a, MSR_IA32_APIC_BASE, B | APIC_BASE_EXTD, 0), LAPIC_GP);
	assert_int_equal(wrmsr(&a, MSR_IA32_APIC_BASE, B | APIC_BASE_EN | 1u << 9, 0), LAPIC_GP);
	assert_int_equal(wrmsr(&a, MSR_IA32_APIC_BASE, (1ull << 39) | APIC_BASE_EN, 0), LAPIC_GP);
	assert_int_equal(wrmsr(&a, MSR_IA32_APIC_BASE, B | APIC_BASE_EN | APIC_BASE_EXTD, 0), 0);
	assert_int_equal(wrmsr(&a, MSR_IA32_APIC_BASE, B | APIC_BASE_EN, 0), LAPIC_GP);
	assert_true(lapic_x2apic(&a));
	assert_int_equal(wrmsr(&a, MSR_IA32_APIC_BASE, B, 0), 0);		/* off */
	assert_false(lapic_hw_enabled(&a));
	assert_true(lapic_accepts_pic(&a));
	assert_int_equal(lapic_set_irq(&a, 0x40, false), -EINVAL);
	assert_int_equal(wrmsr(&a, MSR_IA32_APIC_BASE, B | APIC_BASE_EN | APIC_BASE_EXTD, 0),
			 LAPIC_GP);
	/* Re-enabled in the power-up state, relocated, BSP flag untouched. */
	assert_int_equal(wrmsr(&a, MSR_IA32_APIC_BASE, 0xFED00000 | APIC_BASE_EN | APIC_BASE_BSP, 0),
			 0);
	assert_int_equal(rdmsr_ok(&a, MSR_IA32_APIC_BASE), 0xFED00800);
	assert_int_equal(lapic_mmio_base(&a), 0xFED00000);
	assert_int_equal(rd(&a, 0xF0, 0), 0xFF);
	assert_int_equal(rd(&a, 0x350, 0), MASKED);
	assert_int_equal(rd(&a, 0x20, 0), 1u << 24);
	assert_true(lapic_valid(&a));
}

static struct lapic_ipi icr(struct lapic *a, uint32_t hi, uint32_t lo, int want)
{
	struct lapic_ipi ipi;
	uint32_t v = hi;

	memset(&ipi, 0xA5, sizeof(ipi));
	assert_int_equal(lapic_mmio(a, 0x310, 4, true, &v, 0, &ipi), 0);
	v = lo;
	assert_int_equal(lapic_mmio(a, 0x300, 4, true, &v, 0, &ipi), want);
	return ipi;
}

static void test_icr_decode(void **state)
{
	struct lapic a;
	struct lapic_ipi ipi;

	(void)state;
	mk(&a, 0, true);
	ipi = icr(&a, 5u << 24, 0x4030, LAPIC_IPI);
	assert_int_equal(ipi.dest, 5);
	assert_int_equal(ipi.vector, 0x30);
	assert_int_equal(ipi.mode, LAPIC_DM_FIXED);
	assert_int_equal(ipi.shorthand, LAPIC_SH_NONE);
	assert_false(ipi.logical);
	assert_false(ipi.x2apic);
	assert_int_equal(rd(&a, 0x300, 0), 0x4030);	/* delivery status idle */
	ipi = icr(&a, 0x0Cu << 24, 0x0931, LAPIC_IPI);	/* logical, lowest */
	assert_true(ipi.logical);
	assert_int_equal(ipi.mode, LAPIC_DM_LOWEST);
	assert_int_equal(ipi.dest, 0x0C);
	ipi = icr(&a, 0, 0x44032, LAPIC_IPI);
	assert_int_equal(ipi.shorthand, LAPIC_SH_SELF);
	ipi = icr(&a, 0, 0x84400, LAPIC_IPI);
	assert_int_equal(ipi.shorthand, LAPIC_SH_ALL);
	assert_int_equal(ipi.mode, LAPIC_DM_NMI);
	ipi = icr(&a, 0, 0xC4500, LAPIC_IPI);		/* INIT assert, others */
	assert_int_equal(ipi.shorthand, LAPIC_SH_OTHERS);
	assert_int_equal(ipi.mode, LAPIC_DM_INIT);
	icr(&a, 0, 0xC8500, 0);				/* INIT de-assert */
	ipi = icr(&a, 2u << 24, 0x469A, LAPIC_IPI);
	assert_int_equal(ipi.mode, LAPIC_DM_SIPI);
	assert_int_equal(ipi.vector, 0x9A);
	assert_int_equal(ipi.dest, 2);
	ipi = icr(&a, 1u << 24, 0xC030, LAPIC_IPI);	/* a level fixed IPI */
	assert_true(ipi.level_trig);
	icr(&a, 0, 0x4330, 0);				/* reserved mode 3 */
	icr(&a, 0, 0x4730, 0);				/* reserved mode 7 */
	icr(&a, 0, 0x44400, 0);				/* self, NMI: invalid */
	icr(&a, 0, 0x4005, 0);				/* vector 5 */
	wr(&a, 0x280, 0, 0);
	assert_int_equal(rd(&a, 0x280, 0), 0x20);	/* send illegal vector */
}

/* Four APICs with flat or cluster logical ids; who each IPI reaches. */
static void test_destinations(void **state)
{
	struct lapic c[4];
	struct lapic_ipi ipi = { 0 };
	int hits;

	(void)state;
	for (int i = 0; i < 4; i++) {
		mk(&c[i], (uint32_t)i, i == 0);
		wr(&c[i], 0xD0, (1u << i) << 24, 0);	/* flat: one bit each */
	}
	ipi.dest = 2;
	for (int i = 0; i < 4; i++)
		assert_int_equal(lapic_ipi_targets(&ipi, &c[0], &c[i]), i == 2);
	ipi.dest = 0xFF;
	for (int i = 0; i < 4; i++)
		assert_true(lapic_ipi_targets(&ipi, &c[0], &c[i]));
	ipi.logical = true;
	ipi.dest = 0x0A;
	for (int i = 0; i < 4; i++)
		assert_int_equal(lapic_ipi_targets(&ipi, &c[0], &c[i]), i == 1 || i == 3);
	ipi.shorthand = LAPIC_SH_SELF;
	for (int i = 0; i < 4; i++)
		assert_int_equal(lapic_ipi_targets(&ipi, &c[1], &c[i]), i == 1);
	ipi.shorthand = LAPIC_SH_OTHERS;
	for (int i = 0; i < 4; i++)
		assert_int_equal(lapic_ipi_targets(&ipi, &c[1], &c[i]), i != 1);
	ipi.shorthand = LAPIC_SH_ALL;
	for (int i = 0; i < 4; i++)
		assert_true(lapic_ipi_targets(&ipi, &c[1], &c[i]));
	/* Cluster model: cluster in bits 7:4, members in 3:0. */
	ipi.shorthand = LAPIC_SH_NONE;
	for (int i = 0; i < 4; i++) {
		wr(&c[i], 0xE0, 0x0FFFFFFF, 0);
		wr(&c[i], 0xD0, (uint32_t)((i / 2 + 1) << 4 | 1 << (i % 2)) << 24, 0);
	}
	ipi.dest = 0x23;				/* cluster 2, both */
	for (int i = 0; i < 4; i++)
		assert_int_equal(lapic_ipi_targets(&ipi, &c[0], &c[i]), i >= 2);
	ipi.dest = 0x11;
	for (int i = 0; i < 4; i++)
		assert_int_equal(lapic_ipi_targets(&ipi, &c[0], &c[i]), i == 0);
	/* x2APIC: physical 32-bit ids and cluster LDRs. */
	for (int i = 0; i < 4; i++)
		to_x2apic(&c[i]);
	ipi = (struct lapic_ipi){ .dest = 3, .x2apic = true };
	hits = 0;
	for (int i = 0; i < 4; i++)
		hits += lapic_ipi_targets(&ipi, &c[0], &c[i]) ? 1 << i : 0;
	assert_int_equal(hits, 8);
	ipi.logical = true;
	ipi.dest = 0x00000005;				/* cluster 0, ids 0, 2 */
	hits = 0;
	for (int i = 0; i < 4; i++)
		hits += lapic_ipi_targets(&ipi, &c[0], &c[i]) ? 1 << i : 0;
	assert_int_equal(hits, 5);
	ipi.dest = 0x00010005;				/* cluster 1: nobody */
	for (int i = 0; i < 4; i++)
		assert_false(lapic_ipi_targets(&ipi, &c[0], &c[i]));
	assert_true(lapic_match_dest(&c[3], 0xFFFFFFFF, false, false));
	assert_false(lapic_match_dest(&c[3], 0xFF, false, false));
	assert_true(lapic_match_dest(&c[3], 0xFF, false, true));
}

static void test_events(void **state)
{
	struct lapic a;
	uint8_t sipi = 0;

	(void)state;
	mk(&a, 1, false);
	assert_int_equal(lapic_take_event(&a, &sipi), LAPIC_EV_NONE);
	assert_int_equal(lapic_set_irq(&a, 0x50, false), 0);
	assert_int_equal(lapic_deliver(&a, LAPIC_DM_SIPI, 0x11, false), 0);	/* stale */
	assert_int_equal(lapic_deliver(&a, LAPIC_DM_NMI, 0, false), 0);
	assert_int_equal(lapic_deliver(&a, LAPIC_DM_INIT, 0, false), 0);
	assert_int_equal(lapic_deliver(&a, LAPIC_DM_SIPI, 0x9A, false), 0);
	assert_int_equal(lapic_deliver(&a, LAPIC_DM_EXTINT, 0, false), 0);
	assert_int_equal(lapic_deliver(&a, LAPIC_DM_SMI, 0, false), -EINVAL);
	assert_int_equal(lapic_next_event_ns(&a, 42), 42);
	assert_int_equal(lapic_take_event(&a, &sipi), LAPIC_EV_INIT);
	/* INIT state: software-disabled, masked, nothing requested. */
	assert_int_equal(rd(&a, 0xF0, 0), 0xFF);
	assert_int_equal(rd(&a, 0x360, 0), MASKED);
	assert_int_equal(rd(&a, 0x20, 0), 1u << 24);
	assert_int_equal(lapic_pending_vector(&a, 0), -1);
	assert_int_equal(lapic_take_event(&a, &sipi), LAPIC_EV_SIPI);
	assert_int_equal(sipi, 0x9A);
	assert_int_equal(lapic_take_event(&a, &sipi), LAPIC_EV_NMI);
	assert_int_equal(lapic_take_event(&a, &sipi), LAPIC_EV_EXTINT);
	assert_int_equal(lapic_take_event(&a, &sipi), LAPIC_EV_NONE);
	assert_true(lapic_valid(&a));
}

/* ---- snapshots ---------------------------------------------------------- */

static size_t save(struct lapic *a, uint8_t *buf, size_t cap, uint64_t now)
{
	struct snap s;

	snap_save_init(&s, buf, cap);
	assert_int_equal(lapic_snapshot(a, &s, now), 0);
	return s.pos;
}

static int restore(struct lapic *a, const uint8_t *buf, size_t len, uint64_t now)
{
	struct snap s;

	snap_restore_init(&s, buf, len);
	return lapic_snapshot(a, &s, now);
}

/* A busy APIC: one-shot mid-count, requests, one in service, an event. */
static void busy(struct lapic *a)
{
	mk(a, 2, false);
	wr(a, 0x3E0, 3, 0);
	wr(a, 0x320, 0x40, 0);
	wr(a, 0x380, 1000, 0);
	wr(a, 0x80, 0x20, 0);
	assert_int_equal(lapic_set_irq(a, 0x70, true), 0);
	assert_int_equal(lapic_ack(a, 0x70), 0);
	assert_int_equal(lapic_set_irq(a, 0x31, false), 0);
	assert_int_equal(lapic_deliver(a, LAPIC_DM_NMI, 0, false), 0);
}

static void test_snapshot_mid_count(void **state)
{
	struct lapic a, b;
	uint8_t buf[512], again[512];
	size_t n;
	uint8_t sipi;
	const uint64_t there = 1000000000000ull;

	(void)state;
	busy(&a);
	n = save(&a, buf, sizeof(buf), 4000);
	assert_int_equal(rd(&a, 0x390, 4000), 750);
	mk(&b, 2, false);
	assert_int_equal(restore(&b, buf, n, there), 0);
	assert_int_equal(lapic_next_event_ns(&b, there), there);	/* the NMI */
	assert_int_equal(lapic_take_event(&b, &sipi), LAPIC_EV_NMI);
	assert_int_equal(rd(&b, 0x390, there), 750);
	assert_int_equal(lapic_next_event_ns(&b, there), there + 12000);
	assert_int_equal(lapic_deliver(&b, LAPIC_DM_NMI, 0, false), 0);
	assert_int_equal(save(&b, again, sizeof(again), there), n);
	assert_memory_equal(buf, again, n);
	assert_int_equal(rd(&b, 0x80, there), 0x20);
	assert_int_equal(lapic_ppr(&b), 0x70);
	assert_int_equal(lapic_pending_vector(&b, there + 11999), -1);
	wr(&b, 0xB0, 0, there);			/* level EOI crosses too */
	assert_int_equal(eoi_count, 1);
	assert_int_equal(eoi_seen[0], 0x70);
	assert_int_equal(lapic_pending_vector(&b, there + 11999), 0x31);
	assert_int_equal(lapic_ack(&b, 0x31), 0);
	assert_int_equal(lapic_pending_vector(&b, there + 12000), 0x40);
	/* Periodic and TSC-deadline timers keep their phase as well. */
	mk(&a, 0, true);
	wr(&a, 0x3E0, 0xB, 0);
	wr(&a, 0x320, 0x20041, 0);
	wr(&a, 0x380, 500, 100);
	n = save(&a, buf, sizeof(buf), 1900);		/* 200 ns left */
	mk(&b, 0, true);
	assert_int_equal(restore(&b, buf, n, 7), 0);
	/* The expiries at 600, 1100, 1600 nobody took travel as one request. */
	assert_int_equal(lapic_pending_vector(&b, 7), 0x41);
	assert_int_equal(lapic_ack(&b, 0x41), 0);
	assert_int_equal(lapic_next_event_ns(&b, 7), 207);
	assert_int_equal(rd(&b, 0x390, 7), 200);
	wr(&a, 0x320, 0x40042, 0);
	assert_int_equal(lapic_wrmsr(&a, MSR_IA32_TSC_DEADLINE, 5000000, 1000000, 0, NULL), 0);
	n = save(&a, buf, sizeof(buf), 1000000);	/* 2 ms - 1 ms left */
	assert_int_equal(restore(&b, buf, n, 50), 0);
	assert_int_equal(lapic_next_event_ns(&b, 50), 1000050);
	assert_int_equal(rdmsr_ok(&b, MSR_IA32_TSC_DEADLINE), 5000000);
}

/* Offsets in the version 1 format (see lapic_snapshot). */
enum {
	O_TSC_HZ = 1, O_BASE = 9, O_SVR = 27, O_ESR = 31, O_ICR_LO = 39, O_ICR_HI = 43,
	O_LVT = 47, O_TICR = 71, O_TDCR = 75, O_ARMED = 79, O_LEFT = 80, O_DEADLINE = 88,
	O_IRR0 = 96, O_ISR0 = 100, O_EVENTS = 192, O_END = 194,
};

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static void refused(const uint8_t *good, size_t n, size_t off, int width, uint64_t v)
{
	uint8_t bad[512];
	struct lapic b, before;

	memcpy(bad, good, n);
	if (width == 1)
		bad[off] = (uint8_t)v;
	else if (width == 4)
		put32(bad + off, (uint32_t)v);
	else
		put64(bad + off, v);
	busy(&b);
	before = b;
	assert_int_equal(restore(&b, bad, n, 0), -EINVAL);
	assert_memory_equal(&b, &before, sizeof(b));
}

static void test_snapshot_hostile(void **state)
{
	struct lapic a, b, before;
	uint8_t buf[512];
	size_t n;

	(void)state;
	busy(&a);
	n = save(&a, buf, sizeof(buf), 100);
	assert_int_equal(n, O_END);
	for (size_t len = 0; len < n; len++) {	/* every truncation */
		busy(&b);
		before = b;
		assert_int_equal(restore(&b, buf, len, 0), -EINVAL);
		assert_memory_equal(&b, &before, sizeof(b));
	}
	refused(buf, n, 0, 1, 2);				/* version */
	refused(buf, n, O_TSC_HZ, 8, 0);			/* no TSC rate */
	refused(buf, n, O_TSC_HZ, 8, 1ull << 40);
	refused(buf, n, O_BASE, 8, LAPIC_DEFAULT_BASE | APIC_BASE_EXTD);	/* EXTD, !EN */
	refused(buf, n, O_BASE, 8, LAPIC_DEFAULT_BASE | APIC_BASE_EN | 1u << 9);
	refused(buf, n, O_BASE, 8, LAPIC_DEFAULT_BASE | APIC_BASE_EN | APIC_BASE_BSP);
	refused(buf, n, O_BASE, 8, LAPIC_DEFAULT_BASE);		/* off, yet busy */
	refused(buf, n, O_SVR, 4, 0x10FF);
	refused(buf, n, O_SVR, 4, 0xFF);			/* off, LVT0.. unmasked */
	refused(buf, n, O_ESR, 4, 0x1);
	refused(buf, n, O_ICR_LO, 4, 0x1000);
	refused(buf, n, O_ICR_HI, 4, 0x1);
	refused(buf, n, O_LVT, 4, 0x80040);			/* timer bit 19 */
	refused(buf, n, O_LVT, 4, 0x60040);			/* timer mode 3 */
	refused(buf, n, O_LVT + 4 * 5, 4, 0x1000);		/* error LVT status */
	refused(buf, n, O_TICR, 4, 0);				/* armed, no count */
	refused(buf, n, O_TDCR, 4, 0x4);
	refused(buf, n, O_ARMED, 1, 2);				/* not a bool */
	refused(buf, n, O_LEFT, 8, 16001);			/* over one count */
	refused(buf, n, O_DEADLINE, 8, 5);			/* not deadline mode */
	refused(buf, n, O_IRR0, 4, 1u << 5);			/* vector 5 */
	refused(buf, n, O_ISR0, 4, 1u << 15);
	refused(buf, n, O_EVENTS, 1, 0x10);
	/* Disarmed with time left, on an idle copy. */
	mk(&a, 2, false);
	n = save(&a, buf, sizeof(buf), 0);
	refused(buf, n, O_LEFT, 8, 1);
	/* Random bytes: refused or valid, never anything else. */
	srand(12);
	for (int k = 0; k < 20000; k++) {
		busy(&a);
		n = save(&a, buf, sizeof(buf), 0);
		for (int j = 0; j < 1 + k % 4; j++)
			buf[rand() % n] = (uint8_t)rand();
		if (restore(&a, buf, n, 0) == 0)
			assert_true(lapic_valid(&a));
	}
}

/* Hostile ICR values in both forms: only the SDM's IPIs come out (no
 * reserved mode, nothing but fixed by shorthand self, no vector < 16 of
 * fixed or lowest priority), the destination is the form's width, and
 * the APIC stays valid; a target check of every result is bounded. */
static void test_icr_hostile(void **state)
{
	struct lapic a, b;
	struct lapic_ipi ipi;
	uint64_t val;
	uint32_t lo;
	int rc, sent = 0;

	(void)state;
	mk(&a, 0, true);
	mk(&b, 1, false);
	wr(&a, 0xF0, 0x1FF, 0);
	srand(13);
	for (int i = 0; i < 400000; i++) {
		val = (uint64_t)rand() << 33 ^ (uint64_t)rand() << 11 ^ (uint64_t)rand();
		if (i == 200000)
			to_x2apic(&a);
		if (lapic_x2apic(&a)) {
			rc = lapic_wrmsr(&a, 0x830, i & 1 ? val & ~0xFFF33000ull : val, 0, 0, &ipi);
			assert_true(rc == 0 || rc == LAPIC_IPI || rc == LAPIC_GP);
		} else {
			lo = (uint32_t)(val >> 32);
			assert_int_equal(lapic_mmio(&a, 0x310, 4, true, &lo, 0, &ipi), 0);
			lo = (uint32_t)val;
			rc = lapic_mmio(&a, 0x300, 4, true, &lo, 0, &ipi);
			assert_true(rc == 0 || rc == LAPIC_IPI);
		}
		assert_true(lapic_valid(&a));
		if (rc != LAPIC_IPI)
			continue;
		sent++;
		assert_true(ipi.mode != 3 && ipi.mode != 7);
		assert_true(ipi.shorthand != LAPIC_SH_SELF || ipi.mode == LAPIC_DM_FIXED);
		assert_true(ipi.vector >= 16 || (ipi.mode != LAPIC_DM_FIXED &&
						  ipi.mode != LAPIC_DM_LOWEST));
		assert_true(ipi.x2apic == lapic_x2apic(&a));
		assert_true(ipi.x2apic || ipi.dest <= 0xFF);
		(void)lapic_ipi_targets(&ipi, &a, &b);
	}
	assert_true(sent > 100000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_power_on),
		cmocka_unit_test(test_timer_oneshot),
		cmocka_unit_test(test_timer_divide_values),
		cmocka_unit_test(test_timer_periodic),
		cmocka_unit_test(test_timer_deadline),
		cmocka_unit_test(test_priority_and_tpr),
		cmocka_unit_test(test_eoi_nesting_and_level),
		cmocka_unit_test(test_software_disable),
		cmocka_unit_test(test_esr_and_reserved_offsets),
		cmocka_unit_test(test_x2apic_msrs),
		cmocka_unit_test(test_apic_base_transitions),
		cmocka_unit_test(test_icr_decode),
		cmocka_unit_test(test_destinations),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_snapshot_mid_count),
		cmocka_unit_test(test_snapshot_hostile),
		cmocka_unit_test(test_icr_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
