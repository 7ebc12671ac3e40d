/* SPDX-License-Identifier: BSD-2-Clause */
/* The virtual I/O APIC (hv/vdev/ioapic.c): registers, edge and level
 * delivery with remote IRR, the EOI from a local APIC (hv/vdev/lapic.c)
 * and the redelivery of a line still asserted, and snapshots. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include "hv/vdev/ioapic.h"
#include "hv/vdev/lapic.h"

/* What the deliver callback saw, and what it answers. */
struct sink {
	int calls;
	uint32_t dest;
	bool logical, level;
	uint8_t mode, vector;
	bool accept;
	struct lapic *apic;	/* deliver to this local APIC, if set */
};

static bool deliver(void *ctx, uint32_t dest, bool logical, uint8_t mode, uint8_t vector,
		    bool level_trig)
{
	struct sink *k = ctx;

	k->calls++;
	k->dest = dest;
	k->logical = logical;
	k->mode = mode;
	k->vector = vector;
	k->level = level_trig;
	if (k->apic)
		return lapic_match_dest(k->apic, dest, logical, true) &&
		       lapic_deliver(k->apic, mode, vector, level_trig) == 0;
	return k->accept;
}

static void wreg(struct ioapic *io, uint8_t reg, uint32_t v)
{
	uint32_t sel = reg;

	assert_int_equal(ioapic_mmio(io, IOAPIC_REGSEL, 4, true, &sel), 0);
	assert_int_equal(ioapic_mmio(io, IOAPIC_WINDOW, 4, true, &v), 0);
	assert_true(ioapic_valid(io));
}

static uint32_t rreg(struct ioapic *io, uint8_t reg)
{
	uint32_t sel = reg, v = 0xdeadbeef;

	assert_int_equal(ioapic_mmio(io, IOAPIC_REGSEL, 4, true, &sel), 0);
	assert_int_equal(ioapic_mmio(io, IOAPIC_WINDOW, 4, false, &v), 0);
	return v;
}

static void route(struct ioapic *io, unsigned int pin, uint64_t rte)
{
	wreg(io, (uint8_t)(0x11 + 2 * pin), (uint32_t)(rte >> 32));
	wreg(io, (uint8_t)(0x10 + 2 * pin), (uint32_t)rte);
}

static void test_registers(void **state)
{
	struct ioapic io;
	struct sink k = { .accept = true };
	uint32_t v;

	(void)state;
	ioapic_init(&io, deliver, &k);
	assert_true(ioapic_valid(&io));
	assert_int_equal(rreg(&io, 0x01), 0x00170011);
	assert_int_equal(rreg(&io, 0x00), 0);
	wreg(&io, 0x00, 0xFFFFFFFF);
	assert_int_equal(rreg(&io, 0x00), 0x0F000000);	/* id bits 27:24 */
	assert_int_equal(rreg(&io, 0x02), 0x0F000000);	/* arbitration id */
	wreg(&io, 0x01, 0);
	assert_int_equal(rreg(&io, 0x01), 0x00170011);	/* read-only */
	for (unsigned int pin = 0; pin < IOAPIC_PINS; pin++) {
		assert_int_equal(rreg(&io, (uint8_t)(0x10 + 2 * pin)), 0x10000);
		assert_int_equal(rreg(&io, (uint8_t)(0x11 + 2 * pin)), 0);
	}
	/* Writable bits only: no delivery status, no remote IRR. */
	wreg(&io, 0x10 + 2 * 23, 0xFFFFFFFF);
	wreg(&io, 0x11 + 2 * 23, 0xFFFFFFFF);
	assert_int_equal(rreg(&io, 0x10 + 2 * 23), 0x1AFFF);
	assert_int_equal(rreg(&io, 0x11 + 2 * 23), 0xFF000000);
	assert_int_equal(rreg(&io, 0x10 + 2 * 24), 0);	/* past the table */
	assert_int_equal(rreg(&io, 0xFF), 0);
	/* IOREGSEL reads back; other offsets read 0; outside the page. */
	v = 0x3F;
	assert_int_equal(ioapic_mmio(&io, 0, 1, true, &v), 0);
	assert_int_equal(ioapic_mmio(&io, 0, 4, false, &v), 0);
	assert_int_equal(v, 0x3F);
	assert_int_equal(ioapic_mmio(&io, 0x20, 4, false, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(ioapic_mmio(&io, 0x1000, 4, false, &v), -ENOENT);
	assert_int_equal(ioapic_set_irq(&io, 24, 1), -EINVAL);
	assert_int_equal(k.calls, 0);
}

static void test_edge(void **state)
{
	struct ioapic io;
	struct sink k = { .accept = true };

	(void)state;
	ioapic_init(&io, deliver, &k);
	assert_int_equal(ioapic_set_irq(&io, 4, 1), 0);	/* masked: lost */
	assert_int_equal(io.stats.masked_edges, 1);
	route(&io, 4, 3ull << 56 | IOAPIC_RTE_LOGICAL | 1u << 8 | 0x34);
	assert_int_equal(k.calls, 0);		/* unmasking an edge pin: no */
	assert_int_equal(ioapic_set_irq(&io, 4, 1), 0);	/* still high */
	assert_int_equal(k.calls, 0);
	assert_int_equal(ioapic_set_irq(&io, 4, 0), 0);
	assert_int_equal(ioapic_set_irq(&io, 4, 1), 0);
	assert_int_equal(k.calls, 1);
	assert_int_equal(k.dest, 3);
	assert_true(k.logical);
	assert_int_equal(k.mode, LAPIC_DM_LOWEST);
	assert_int_equal(k.vector, 0x34);
	assert_false(k.level);
	assert_int_equal(rreg(&io, 0x10 + 8) & IOAPIC_RTE_REMOTE_IRR, 0);
	ioapic_set_irq(&io, 4, 0);
	ioapic_set_irq(&io, 4, 1);
	assert_int_equal(k.calls, 2);
	assert_int_equal(io.stats.delivered, 2);
}

static void test_level_remote_irr(void **state)
{
	struct ioapic io;
	struct sink k = { .accept = true };
	const uint64_t rte = 1ull << 56 | IOAPIC_RTE_LEVEL | IOAPIC_RTE_POLARITY | 0x59;

	(void)state;
	ioapic_init(&io, deliver, &k);
	route(&io, 11, rte);
	assert_int_equal(rreg(&io, 0x10 + 22), (uint32_t)rte);	/* polarity kept */
	ioapic_set_irq(&io, 11, 1);
	assert_int_equal(k.calls, 1);
	assert_true(k.level);
	assert_int_equal(rreg(&io, 0x10 + 22), (uint32_t)rte | IOAPIC_RTE_REMOTE_IRR);
	ioapic_set_irq(&io, 11, 1);		/* waiting for the EOI */
	assert_int_equal(k.calls, 1);
	ioapic_eoi(&io, 0x58);			/* another vector */
	assert_int_equal(k.calls, 1);
	ioapic_eoi(&io, 0x59);			/* still asserted: again */
	assert_int_equal(k.calls, 2);
	assert_true(rreg(&io, 0x10 + 22) & IOAPIC_RTE_REMOTE_IRR);
	ioapic_set_irq(&io, 11, 0);
	ioapic_eoi(&io, 0x59);			/* dropped: done */
	assert_int_equal(k.calls, 2);
	assert_int_equal(rreg(&io, 0x10 + 22) & IOAPIC_RTE_REMOTE_IRR, 0);
	/* Masked while asserted, then unmasked: delivers then. */
	route(&io, 11, rte | IOAPIC_RTE_MASKED);
	ioapic_set_irq(&io, 11, 1);
	assert_int_equal(k.calls, 2);
	route(&io, 11, rte);
	assert_int_equal(k.calls, 3);
	/* Switched to edge: remote IRR cleared; back to level: delivers. */
	route(&io, 11, (rte & ~IOAPIC_RTE_LEVEL) | IOAPIC_RTE_MASKED);
	assert_int_equal(rreg(&io, 0x10 + 22) & IOAPIC_RTE_REMOTE_IRR, 0);
	route(&io, 11, rte);
	assert_int_equal(k.calls, 4);
	/* Nobody took it: no remote IRR, so the next EOI or edge retries. */
	k.accept = false;
	ioapic_set_irq(&io, 11, 0);
	ioapic_eoi(&io, 0x59);
	ioapic_set_irq(&io, 11, 1);
	assert_int_equal(k.calls, 5);
	assert_int_equal(rreg(&io, 0x10 + 22) & IOAPIC_RTE_REMOTE_IRR, 0);
	assert_int_equal(io.stats.refused, 1);
}

static void ioapic_eoi_cb(void *ctx, uint8_t vector)
{
	ioapic_eoi(ctx, vector);
}

/* The whole loop: pin -> I/O APIC -> local APIC -> EOI -> I/O APIC. */
static void test_with_lapic(void **state)
{
	struct ioapic io;
	struct lapic a;
	struct sink k = { .apic = &a };
	struct lapic_config cfg = { .apic_id = 0, .bsp = true, .tsc_hz = 1000000000,
				    .ctx = &io, .eoi = ioapic_eoi_cb };
	uint32_t zero = 0;

	(void)state;
	lapic_init(&a, &cfg);
	ioapic_init(&io, deliver, &k);
	route(&io, 9, 0ull << 56 | IOAPIC_RTE_LEVEL | 0x61);
	route(&io, 1, 0ull << 56 | 0x31);
	ioapic_set_irq(&io, 9, 1);
	ioapic_set_irq(&io, 1, 1);
	assert_int_equal(lapic_pending_vector(&a, 0), 0x61);
	assert_int_equal(lapic_ack(&a, 0x61), 0);
	assert_int_equal(lapic_pending_vector(&a, 0), -1);	/* 0x31 < 0x60 */
	assert_true(rreg(&io, 0x10 + 18) & IOAPIC_RTE_REMOTE_IRR);
	/* EOI with the line still high: remote IRR cleared, delivered again. */
	assert_int_equal(lapic_mmio(&a, 0xB0, 4, true, &zero, 0, NULL), 0);
	assert_int_equal(k.calls, 3);
	assert_true(rreg(&io, 0x10 + 18) & IOAPIC_RTE_REMOTE_IRR);
	assert_int_equal(lapic_pending_vector(&a, 0), 0x61);
	assert_int_equal(lapic_ack(&a, 0x61), 0);
	ioapic_set_irq(&io, 9, 0);
	assert_int_equal(lapic_mmio(&a, 0xB0, 4, true, &zero, 0, NULL), 0);
	assert_int_equal(k.calls, 3);
	assert_int_equal(rreg(&io, 0x10 + 18) & IOAPIC_RTE_REMOTE_IRR, 0);
	assert_int_equal(lapic_pending_vector(&a, 0), 0x31);
	assert_int_equal(lapic_ack(&a, 0x31), 0);
	assert_int_equal(lapic_mmio(&a, 0xB0, 4, true, &zero, 0, NULL), 0);	/* edge */
	assert_int_equal(k.calls, 3);
	/* A destination that is not this APIC: refused, no remote IRR. */
	route(&io, 10, 7ull << 56 | IOAPIC_RTE_LEVEL | 0x62);
	ioapic_set_irq(&io, 10, 1);
	assert_int_equal(rreg(&io, 0x10 + 20) & IOAPIC_RTE_REMOTE_IRR, 0);
	assert_int_equal(lapic_pending_vector(&a, 0), -1);
}

/* ---- snapshots ---------------------------------------------------------- */

enum { O_PINS = 1, O_ID = 2, O_LINES = 4, O_RTE = 8, O_END = 8 + 8 * IOAPIC_PINS };

static void busy(struct ioapic *io, struct sink *k)
{
	ioapic_init(io, deliver, k);
	wreg(io, 0, 5u << 24);
	route(io, 3, 2ull << 56 | IOAPIC_RTE_LEVEL | 0x43);
	route(io, 5, 0x45);
	ioapic_set_irq(io, 3, 1);
	ioapic_set_irq(io, 7, 1);
	wreg(io, 0x00, 5u << 24);		/* leaves IOREGSEL at 0 */
}

static size_t save(struct ioapic *io, uint8_t *buf, size_t cap)
{
	struct snap s;

	snap_save_init(&s, buf, cap);
	assert_int_equal(ioapic_snapshot(io, &s), 0);
	return s.pos;
}

static int restore(struct ioapic *io, const uint8_t *buf, size_t len)
{
	struct snap s;

	snap_restore_init(&s, buf, len);
	return ioapic_snapshot(io, &s);
}

static void refused(const uint8_t *good, size_t n, size_t off, uint8_t byte)
{
	struct sink k = { .accept = true };
	struct ioapic b, before;
	uint8_t bad[256];

	memcpy(bad, good, n);
	bad[off] = byte;
	busy(&b, &k);
	before = b;
	assert_int_equal(restore(&b, bad, n), -EINVAL);
	assert_memory_equal(&b, &before, sizeof(b));
}

static void test_snapshot(void **state)
{
	struct sink k = { .accept = true }, k2 = { .accept = true };
	struct ioapic a, b, before;
	uint8_t buf[256], again[256];
	size_t n;

	(void)state;
	busy(&a, &k);
	n = save(&a, buf, sizeof(buf));
	assert_int_equal(n, O_END);
	ioapic_init(&b, deliver, &k2);
	assert_int_equal(restore(&b, buf, n), 0);
	assert_int_equal(save(&b, again, sizeof(again)), n);
	assert_memory_equal(buf, again, n);
	assert_int_equal(rreg(&b, 0), 5u << 24);
	/* Remote IRR and the asserted line came along: EOI redelivers. */
	ioapic_eoi(&b, 0x43);
	assert_int_equal(k2.calls, 1);
	assert_int_equal(k2.dest, 2);
	for (size_t len = 0; len < n; len++) {
		busy(&b, &k2);
		before = b;
		assert_int_equal(restore(&b, buf, len), -EINVAL);
		assert_memory_equal(&b, &before, sizeof(b));
	}
	refused(buf, n, 0, 9);				/* version */
	refused(buf, n, O_PINS, 23);			/* pin count */
	refused(buf, n, O_PINS, 48);
	refused(buf, n, O_ID, 16);
	refused(buf, n, O_LINES + 3, 1);		/* pin 24 */
	refused(buf, n, O_RTE + 8 * 5 + 1, 0x40);	/* remote IRR on edge */
	refused(buf, n, O_RTE + 8 * 5 + 1, 0x10);	/* delivery status */
	refused(buf, n, O_RTE + 8 * 5 + 2, 0x02);	/* bit 17 */
	refused(buf, n, O_RTE + 8 * 5 + 4, 0x01);	/* bit 32 */
	srand(7);
	for (int i = 0; i < 20000; i++) {
		busy(&a, &k);
		n = save(&a, buf, sizeof(buf));
		for (int j = 0; j < 1 + i % 3; j++)
			buf[rand() % n] = (uint8_t)rand();
		if (restore(&a, buf, n) == 0)
			assert_true(ioapic_valid(&a));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registers),
		cmocka_unit_test(test_edge),
		cmocka_unit_test(test_level_remote_irr),
		cmocka_unit_test(test_with_lapic),
		cmocka_unit_test(test_snapshot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
