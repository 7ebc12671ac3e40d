/* SPDX-License-Identifier: BSD-2-Clause */
/* The guest PCI bus (hv/vdev/vpci.c): mechanism #1 probed as Linux's
 * arch/x86/pci/direct.c does it, a bus scan, BAR sizing and placement,
 * the capability list, MMIO dispatch, INTx and snapshots. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include "hv/vdev/vpci.h"

struct rig {
	struct vpci_bus bus;
	struct vpci_fn fn;
	int irq_line, irq_level, irq_calls;
	uint64_t last_off, last_val;
	unsigned int last_bar;
	uint8_t last_size;
	bool last_write;
};

static void irq_cb(void *ctx, unsigned int line, int level)
{
	struct rig *r = ctx;

	r->irq_line = (int)line;
	r->irq_level = level;
	r->irq_calls++;
}

static void bar_cb(void *dev, unsigned int bar, uint64_t off, uint8_t size, bool write,
		   uint64_t *val)
{
	struct rig *r = dev;

	r->last_bar = bar;
	r->last_off = off;
	r->last_size = size;
	r->last_write = write;
	if (write)
		r->last_val = *val;
	else
		*val = 0x1122334455667788ull & (size == 8 ? ~0ull : (1ull << (8 * size)) - 1);
}

static struct rig *rig_new(void)
{
	static const struct vpci_id id = {
		.vendor = 0x1AF4, .device = 0x1041, .subsys_vendor = 0x1AF4, .subsys_id = 0x40,
		.revision = 1, .class_code = 0x020000,
	};
	static const uint8_t cap_a[16] = { 0x09, 0xEE, 16, 1, 0, 0, 0, 0, 1, 2, 3, 4 };
	static const uint8_t cap_b[8] = { 0x09, 0xEE, 8, 7, 0xAA, 0xBB, 0xCC, 0xDD };
	struct rig *r = calloc(1, sizeof(*r));

	vpci_bus_init(&r->bus, irq_cb, r);
	vpci_fn_init(&r->fn, &id, 11, bar_cb, r);
	assert_int_equal(vpci_fn_add_bar(&r->fn, 0, 0x4000), 0);
	assert_int_equal(vpci_fn_add_bar(&r->fn, 2, 0x100), 0);
	assert_int_equal(vpci_fn_add_cap(&r->fn, cap_a, sizeof(cap_a), 0, 0), 0x40);
	assert_int_equal(vpci_fn_add_cap(&r->fn, cap_b, sizeof(cap_b), 4, 2), 0x50);
	assert_int_equal(vpci_attach(&r->bus, &r->fn, 3), 0);
	return r;
}

static void outl(struct vpci_bus *b, uint16_t port, uint32_t v)
{
	assert_int_equal(vpci_io(b, port, 4, false, &v), 0);
}

static uint32_t in(struct vpci_bus *b, uint16_t port, uint8_t size)
{
	uint32_t v = 0xdeadbeef;

	assert_int_equal(vpci_io(b, port, size, true, &v), 0);
	return v;
}

static void out(struct vpci_bus *b, uint16_t port, uint8_t size, uint32_t v)
{
	assert_int_equal(vpci_io(b, port, size, false, &v), 0);
}

static uint32_t addr(unsigned int bus, unsigned int dev, unsigned int fn, unsigned int reg)
{
	return 0x80000000u | bus << 16 | dev << 11 | fn << 8 | (reg & 0xFC);
}

/* Config read the way Linux's pci_conf1_read does: address, then data
 * port + (reg & 3) with the access width. */
static uint32_t cfg_rd(struct vpci_bus *b, unsigned int dev, unsigned int reg, uint8_t size)
{
	outl(b, 0xCF8, addr(0, dev, 0, reg));
	return in(b, (uint16_t)(0xCFC + (reg & 3)), size);
}

static void cfg_wr(struct vpci_bus *b, unsigned int dev, unsigned int reg, uint8_t size,
		   uint32_t v)
{
	outl(b, 0xCF8, addr(0, dev, 0, reg));
	out(b, (uint16_t)(0xCFC + (reg & 3)), size, v);
}

/* pci_check_type1: byte write to 0xCFB, then CONFIG_ADDRESS must hold
 * 0x80000000; pci_sanity_check: a host bridge (or VGA) on bus 0. */
static void test_linux_probe(void **state)
{
	struct rig *r = rig_new();
	bool bridge = false;

	(void)state;
	out(&r->bus, 0xCFB, 1, 0x01);
	outl(&r->bus, 0xCF8, 0x80000000u);
	assert_int_equal(in(&r->bus, 0xCF8, 4), 0x80000000u);
	assert_int_equal(in(&r->bus, 0xCF8, 1), 0xFF);	/* narrow: not the register */
	for (unsigned int dev = 0; dev < 32; dev++)
		if (cfg_rd(&r->bus, dev, 0x0A, 2) == 0x0600)
			bridge = true;
	assert_true(bridge);
	assert_int_equal(cfg_rd(&r->bus, 0, 0x0A, 2), 0x0600);
	free(r);
}

/* A bus scan as pci_scan_slot does it: vendor/device dwords, header type,
 * class; absent slots, other functions and other buses read all ones. */
static void test_scan(void **state)
{
	struct rig *r = rig_new();
	unsigned int found = 0;

	(void)state;
	for (unsigned int dev = 0; dev < 32; dev++)
		if (cfg_rd(&r->bus, dev, 0, 4) != 0xFFFFFFFFu)
			found++;
	assert_int_equal(found, 2);
	assert_int_equal(cfg_rd(&r->bus, 3, 0, 4), 0x10411AF4u);
	assert_int_equal(cfg_rd(&r->bus, 3, 0x08, 4), 0x02000001u);
	assert_int_equal(cfg_rd(&r->bus, 3, 0x0E, 1), 0);
	assert_int_equal(cfg_rd(&r->bus, 3, 0x2C, 4), 0x00401AF4u);
	assert_int_equal(cfg_rd(&r->bus, 3, 0x3C, 2), 0x010B);	/* INTA, line 11 */
	outl(&r->bus, 0xCF8, addr(0, 3, 1, 0));
	assert_int_equal(in(&r->bus, 0xCFC, 4), 0xFFFFFFFFu);
	outl(&r->bus, 0xCF8, addr(1, 3, 0, 0));
	assert_int_equal(in(&r->bus, 0xCFC, 2), 0xFFFF);
	outl(&r->bus, 0xCF8, 0x00000000u | 3 << 11);		/* enable bit clear */
	assert_int_equal(in(&r->bus, 0xCFC, 1), 0xFF);
	/* a word at 0xCFE reads the high half of the addressed dword */
	assert_int_equal(cfg_rd(&r->bus, 3, 2, 2), 0x1041);
	assert_int_equal(vpci_io(&r->bus, 0xCF7, 1, true, &(uint32_t){ 0 }), -ENOENT);
	assert_int_equal(vpci_io(&r->bus, 0xD00, 1, true, &(uint32_t){ 0 }), -ENOENT);
	free(r);
}

/* Read-only fields stay; the writable bits are exactly the command bits,
 * cache line, latency and interrupt line. */
static void test_readonly(void **state)
{
	struct rig *r = rig_new();

	(void)state;
	cfg_wr(&r->bus, 3, 0, 4, 0x12345678);
	assert_int_equal(cfg_rd(&r->bus, 3, 0, 4), 0x10411AF4u);
	cfg_wr(&r->bus, 3, 0x04, 2, 0xFFFF);
	assert_int_equal(cfg_rd(&r->bus, 3, 0x04, 2), 0x0407);
	cfg_wr(&r->bus, 3, 0x3C, 2, 0x0405);
	assert_int_equal(cfg_rd(&r->bus, 3, 0x3C, 2), 0x0105);	/* pin is RO */
	cfg_wr(&r->bus, 3, 0x30, 4, 0xFFFFFFFF);		/* no ROM BAR */
	assert_int_equal(cfg_rd(&r->bus, 3, 0x30, 4), 0);
	cfg_wr(&r->bus, 0, 0x10, 4, 0xFFFFFFFF);		/* bridge: no BAR */
	assert_int_equal(cfg_rd(&r->bus, 0, 0x10, 4), 0);
	free(r);
}

/* Capability list: status bit 4, pointer at 0x34, chain ends with 0. */
static void test_caps(void **state)
{
	struct rig *r = rig_new();
	unsigned int p, n = 0;

	(void)state;
	assert_true(cfg_rd(&r->bus, 3, 0x06, 2) & 0x10);
	assert_false(cfg_rd(&r->bus, 0, 0x06, 2) & 0x10);
	for (p = cfg_rd(&r->bus, 3, 0x34, 1); p; p = cfg_rd(&r->bus, 3, p + 1, 1)) {
		assert_int_equal(cfg_rd(&r->bus, 3, p, 1), 0x09);
		assert_true(++n <= 2);
	}
	assert_int_equal(n, 2);
	assert_int_equal(cfg_rd(&r->bus, 3, 0x43, 1), 1);		/* cfg_type */
	assert_int_equal(cfg_rd(&r->bus, 3, 0x48, 4), 0x04030201u);
	cfg_wr(&r->bus, 3, 0x54, 4, 0x11223344);	/* writable bytes 4-5 only */
	assert_int_equal(cfg_rd(&r->bus, 3, 0x54, 4), 0xDDCC3344u);
	free(r);
}

/* PCI 3.0 6.2.5.1: write ones, read the size mask; restore the address. */
static void test_bar_sizing(void **state)
{
	struct rig *r = rig_new();
	uint32_t old;

	(void)state;
	old = cfg_rd(&r->bus, 3, 0x10, 4);
	cfg_wr(&r->bus, 3, 0x10, 4, 0xFFFFFFFF);
	assert_int_equal(cfg_rd(&r->bus, 3, 0x10, 4), 0xFFFFC000u);
	assert_int_equal(~(cfg_rd(&r->bus, 3, 0x10, 4) & ~0xFu) + 1, 0x4000);
	cfg_wr(&r->bus, 3, 0x10, 4, old);
	cfg_wr(&r->bus, 3, 0x18, 4, 0xFFFFFFFF);
	assert_int_equal(cfg_rd(&r->bus, 3, 0x18, 4), 0xFFFFFF00u);
	cfg_wr(&r->bus, 3, 0x14, 4, 0xFFFFFFFF);		/* no BAR 1 */
	assert_int_equal(cfg_rd(&r->bus, 3, 0x14, 4), 0);
	assert_int_equal(vpci_fn_add_bar(&r->fn, 1, 0x3000), -EINVAL);
	assert_int_equal(vpci_fn_add_bar(&r->fn, 0, 0x1000), -EINVAL);
	assert_int_equal(vpci_fn_add_bar(&r->fn, 6, 0x1000), -EINVAL);
	assert_int_equal(vpci_fn_add_bar(&r->fn, 1, 8), -EINVAL);
	free(r);
}

static void test_place_and_mmio(void **state)
{
	struct rig *r = rig_new();
	uint64_t v = 0;

	(void)state;
	assert_int_equal(vpci_mmio(&r->bus, VPCI_HOLE_BASE, 4, false, &v), -ENOENT);
	vpci_place_bars(&r->bus);
	assert_int_equal(vpci_bar_base(&r->fn, 0), VPCI_HOLE_BASE);
	assert_int_equal(vpci_bar_base(&r->fn, 2), VPCI_HOLE_BASE + 0x4000);
	assert_int_equal(cfg_rd(&r->bus, 3, 0x04, 2) & 2, 2);
	assert_int_equal(vpci_mmio(&r->bus, VPCI_HOLE_BASE + 0x10, 4, false, &v), 0);
	assert_int_equal(r->last_bar, 0);
	assert_int_equal(r->last_off, 0x10);
	assert_int_equal(v, 0x55667788u);
	v = 0xAB;
	assert_int_equal(vpci_mmio(&r->bus, VPCI_HOLE_BASE + 0x4000 + 0xFF, 1, true, &v), 0);
	assert_int_equal(r->last_bar, 2);
	assert_int_equal(r->last_off, 0xFF);
	assert_true(r->last_write);
	assert_int_equal(r->last_val, 0xAB);
	/* crossing the end of a BAR, a bad size, past it */
	assert_int_equal(vpci_mmio(&r->bus, VPCI_HOLE_BASE + 0x3FFE, 4, false, &v), -EINVAL);
	assert_int_equal(vpci_mmio(&r->bus, VPCI_HOLE_BASE, 3, false, &v), -EINVAL);
	assert_int_equal(vpci_mmio(&r->bus, VPCI_HOLE_BASE + 0x4100, 4, false, &v), -ENOENT);
	/* memory decoding off: nothing claims */
	cfg_wr(&r->bus, 3, 0x04, 2, 0);
	assert_int_equal(vpci_mmio(&r->bus, VPCI_HOLE_BASE, 4, false, &v), -ENOENT);
	cfg_wr(&r->bus, 3, 0x04, 2, 2);
	/* the guest moves BAR 0; outside the hole it is not decoded */
	cfg_wr(&r->bus, 3, 0x10, 4, 0xD0000000u);
	assert_int_equal(vpci_bar_base(&r->fn, 0), 0xD0000000u);
	assert_int_equal(vpci_mmio(&r->bus, 0xD0000004u, 2, false, &v), 0);
	assert_int_equal(r->last_off, 4);
	cfg_wr(&r->bus, 3, 0x10, 4, 0x00100000u);		/* over RAM */
	assert_int_equal(vpci_bar_base(&r->fn, 0), 0);
	assert_int_equal(vpci_mmio(&r->bus, 0x00100000u, 4, false, &v), -ENOENT);
	cfg_wr(&r->bus, 3, 0x10, 4, 0xFEBFC000u);		/* last slot below I/O APIC */
	assert_int_equal(vpci_bar_base(&r->fn, 0), 0xFEBFC000u);
	cfg_wr(&r->bus, 3, 0x10, 4, 0xFEC00000u);		/* on the I/O APIC */
	assert_int_equal(vpci_bar_base(&r->fn, 0), 0);
	free(r);
}

static void test_intx(void **state)
{
	struct rig *r = rig_new();

	(void)state;
	vpci_fn_set_intx(&r->fn, 1);
	assert_int_equal(r->irq_calls, 1);
	assert_int_equal(r->irq_line, 11);
	assert_int_equal(r->irq_level, 1);
	assert_true(cfg_rd(&r->bus, 3, 0x06, 2) & 0x08);
	vpci_fn_set_intx(&r->fn, 1);				/* no change, no call */
	assert_int_equal(r->irq_calls, 1);
	cfg_wr(&r->bus, 3, 0x04, 2, 0x0400);			/* interrupt disable */
	assert_int_equal(r->irq_calls, 2);
	assert_int_equal(r->irq_level, 0);
	assert_true(cfg_rd(&r->bus, 3, 0x06, 2) & 0x08);	/* status still shows it */
	cfg_wr(&r->bus, 3, 0x04, 2, 0);
	assert_int_equal(r->irq_level, 1);
	vpci_fn_set_intx(&r->fn, 0);
	assert_int_equal(r->irq_level, 0);
	assert_false(cfg_rd(&r->bus, 3, 0x06, 2) & 0x08);
	assert_int_equal(r->irq_calls, 4);
	free(r);
}

static void test_attach_errors(void **state)
{
	struct rig *r = rig_new();
	struct vpci_fn other;

	(void)state;
	memset(&other, 0, sizeof(other));
	assert_int_equal(vpci_attach(&r->bus, &other, 0), -EINVAL);
	assert_int_equal(vpci_attach(&r->bus, &other, 32), -EINVAL);
	assert_int_equal(vpci_attach(&r->bus, &other, 3), -EBUSY);
	free(r);
}

static size_t save(struct rig *r, uint8_t *buf, size_t cap)
{
	struct snap s;

	snap_save_init(&s, buf, cap);
	assert_int_equal(vpci_bus_snapshot(&r->bus, &s), 0);
	assert_int_equal(vpci_fn_snapshot(&r->fn, &s), 0);
	return s.pos;
}

static int restore(struct rig *r, const uint8_t *buf, size_t len)
{
	struct snap s;

	snap_restore_init(&s, buf, len);
	if (vpci_bus_snapshot(&r->bus, &s))
		return s.err;
	return vpci_fn_snapshot(&r->fn, &s);
}

static void test_snapshot(void **state)
{
	struct rig *a = rig_new(), *b = rig_new();
	uint8_t buf[1024];
	size_t n;

	(void)state;
	vpci_place_bars(&a->bus);
	cfg_wr(&a->bus, 3, 0x3C, 1, 9);
	cfg_wr(&a->bus, 3, 0x10, 4, 0xE0000000u);
	outl(&a->bus, 0xCF8, addr(0, 3, 0, 0x10));
	n = save(a, buf, sizeof(buf));
	assert_int_equal(restore(b, buf, n), 0);
	assert_memory_equal(a->fn.cfg, b->fn.cfg, VPCI_CFG_SIZE);
	assert_int_equal(vpci_bar_base(&b->fn, 0), 0xE0000000u);
	assert_int_equal(in(&b->bus, 0xCFC, 4), 0xE0000000u);	/* same address */
	/* truncated */
	assert_int_equal(restore(b, buf, n - 1), -EINVAL);
	free(a);
	free(b);
}

/* Hostile bytes: any change to a read-only bit, a bad address register,
 * a bad version: refused, the function unchanged. */
static void test_snapshot_hostile(void **state)
{
	struct rig *a = rig_new(), *b = rig_new();
	uint8_t buf[1024], bad[1024], before[VPCI_CFG_SIZE];
	size_t n, fn_off;

	(void)state;
	vpci_place_bars(&a->bus);
	n = save(a, buf, sizeof(buf));
	fn_off = n - 1 - VPCI_CFG_SIZE;		/* the function's record */
	memcpy(before, b->fn.cfg, sizeof(before));
	for (unsigned int i = 0; i < VPCI_CFG_SIZE; i++) {
		memcpy(bad, buf, n);
		bad[fn_off + 1 + i] ^= 0x80;
		if (b->fn.wmask[i] & 0x80)
			continue;
		assert_int_equal(restore(b, bad, n), -EINVAL);
		assert_memory_equal(b->fn.cfg, before, sizeof(before));
	}
	memcpy(bad, buf, n);
	bad[1] = 0x01;			/* CONFIG_ADDRESS low bits */
	assert_int_equal(restore(b, bad, n), -EINVAL);
	memcpy(bad, buf, n);
	bad[0] = 99;			/* version */
	assert_int_equal(restore(b, bad, n), -EINVAL);
	assert_memory_equal(b->fn.cfg, before, sizeof(before));
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linux_probe),
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_readonly),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_bar_sizing),
		cmocka_unit_test(test_place_and_mmio),
		cmocka_unit_test(test_intx),
		cmocka_unit_test(test_attach_errors),
		cmocka_unit_test(test_snapshot),
		cmocka_unit_test(test_snapshot_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
