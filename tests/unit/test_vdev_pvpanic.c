/* SPDX-License-Identifier: BSD-2-Clause */
/* pvpanic on PCI (hv/vdev/pvpanic.c): found at 00:02.0 of a bus without a
 * NIC, its register and events, what a hostile guest may do to it (sizes,
 * offsets, the BAR moved anywhere), its snapshot round trip and hostile
 * bytes, and the device set that has the bus for it alone. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include "hv/vdev/devices.h"

static int events[256];			/* events seen, by value */
static int nr_events;

static void on_event(void *ctx, uint8_t event)
{
	(void)ctx;
	events[event]++;
	nr_events++;
}

static void no_irq(void *ctx, unsigned int line, int level)
{
	(void)ctx, (void)line, (void)level;
}

static int no_mem(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	(void)ctx, (void)gpa, (void)buf, (void)len;
	return -EFAULT;
}

static int no_mem_wr(void *ctx, uint64_t gpa, const void *buf, size_t len)
{
	(void)ctx, (void)gpa, (void)buf, (void)len;
	return -EFAULT;
}

static int no_tx(void *ctx, const uint8_t *frame, size_t len, const struct vnet_offload *off)
{
	(void)ctx, (void)frame, (void)len, (void)off;
	return 0;
}

static struct vnic *make(bool net)
{
	struct vnic_config c = {
		.net = net, .pvpanic = true, .mac = { 0x52, 0x54, 0, 0, 0, 1 },
		.irq = VNIC_IRQ, .irq_fn = no_irq, .panic = on_event,
		.mem = { NULL, no_mem, no_mem_wr }, .tx = no_tx,
	};
	struct vnic *n;

	memset(events, 0, sizeof(events));
	nr_events = 0;
	assert_int_equal(vnic_create(&c, &n), 0);
	return n;
}

static uint32_t cfg_rd(struct vnic *n, unsigned int slot, unsigned int reg)
{
	uint32_t v = 0x80000000u | slot << 11 | reg;

	assert_int_equal(vnic_io(n, 0xCF8, 4, false, &v), 0);
	assert_int_equal(vnic_io(n, 0xCFC, 4, true, &v), 0);
	return v;
}

static void cfg_wr(struct vnic *n, unsigned int slot, unsigned int reg, uint32_t val)
{
	uint32_t v = 0x80000000u | slot << 11 | reg;

	assert_int_equal(vnic_io(n, 0xCF8, 4, false, &v), 0);
	assert_int_equal(vnic_io(n, 0xCFC, 4, false, &val), 0);
}

static void test_found_without_nic(void **state)
{
	struct vnic *n = make(false);

	(void)state;
	assert_int_equal(cfg_rd(n, 0, 0), 0x00081B36u);		/* host bridge */
	assert_int_equal(cfg_rd(n, VNIC_SLOT, 0), 0xFFFFFFFFu);	/* no NIC */
	assert_int_equal(cfg_rd(n, VNIC_PVPANIC_SLOT, 0), 0x00111B36u);
	assert_int_equal(cfg_rd(n, VNIC_PVPANIC_SLOT, 0x08), 0x08800001u);
	assert_int_equal(cfg_rd(n, VNIC_PVPANIC_SLOT, 0x3C), 0);	/* no INTx pin */
	assert_int_equal(cfg_rd(n, VNIC_PVPANIC_SLOT, 0x10), VPCI_HOLE_BASE);
	assert_int_equal(cfg_rd(n, VNIC_PVPANIC_SLOT, 0x04) & PCI_CMD_MEM, PCI_CMD_MEM);
	cfg_wr(n, VNIC_PVPANIC_SLOT, 0x10, 0xFFFFFFFFu);		/* sizing: 16 bytes */
	assert_int_equal(cfg_rd(n, VNIC_PVPANIC_SLOT, 0x10), 0xFFFFFFF0u);
	assert_int_equal(vnic_rx_frame(n, &(struct vnet_rx_frame){
		.piece = &(struct vnet_piece){ (const uint8_t *)"x", 1 }, .nr = 1 }), -ENODEV);
	vnic_destroy(n);
	/* with the NIC, the NIC keeps 00:01.0 and pvpanic its own slot */
	n = make(true);
	assert_int_equal(cfg_rd(n, VNIC_SLOT, 0), 0x10411AF4u);
	assert_int_equal(cfg_rd(n, VNIC_PVPANIC_SLOT, 0), 0x00111B36u);
	assert_int_equal(vpci_bar_base(&n->pvpanic.fn, 0), VPCI_HOLE_BASE + VIRTIO_PCI_BAR_SIZE);
	vnic_destroy(n);
}

static void test_register_and_events(void **state)
{
	struct vnic *n = make(false);
	uint64_t bar = VPCI_HOLE_BASE;
	uint32_t v = 0;

	(void)state;
	for (uint8_t size = 1; size <= 4; size *= 2) {
		v = 0xDEADBEEF;
		assert_int_equal(vnic_mmio(n, bar, size, false, &v), 0);
		assert_int_equal(v, PVPANIC_EVENTS);
	}
	assert_int_equal(vnic_mmio(n, bar + 1, 1, false, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(n->pvpanic.stats.ignored, 1);
	v = PVPANIC_CRASH_LOADED;				/* kdump: noted */
	assert_int_equal(vnic_mmio(n, bar, 1, true, &v), 0);
	assert_int_equal(events[PVPANIC_CRASH_LOADED], 1);
	assert_false(n->pvpanic.panicked);
	v = 0xFFFFFF00u | PVPANIC_PANICKED;			/* only the low byte counts */
	assert_int_equal(vnic_mmio(n, bar, 4, true, &v), 0);
	assert_int_equal(events[PVPANIC_PANICKED], 1);
	assert_true(n->pvpanic.panicked);
	for (int i = 0; i < 100; i++) {				/* stops once */
		v = PVPANIC_PANICKED;
		assert_int_equal(vnic_mmio(n, bar, 1, true, &v), 0);
	}
	assert_int_equal(events[PVPANIC_PANICKED], 1);
	assert_int_equal(n->pvpanic.stats.panics, 101);
	v = 0xFC;						/* unknown bits */
	assert_int_equal(vnic_mmio(n, bar, 1, true, &v), 0);
	v = PVPANIC_PANICKED;					/* not the register */
	assert_int_equal(vnic_mmio(n, bar + 8, 4, true, &v), 0);
	assert_int_equal(nr_events, 2);
	assert_int_equal(n->pvpanic.stats.ignored, 3);
	assert_int_equal(n->pvpanic.stats.crash_loaded, 1);
	vnic_destroy(n);
}

static void test_hostile_guest(void **state)
{
	struct vnic *n = make(false);
	uint64_t bar = VPCI_HOLE_BASE;
	static const uint32_t silly[] = {
		0, 0x1000, 0xBFFFFFF0u, 0xFEC00000u, 0xFEE00000u, 0xFFFFFFF0u,
	};
	uint32_t v = PVPANIC_PANICKED;

	(void)state;
	/* sizes the bus refuses, and accesses across the BAR's end */
	assert_int_equal(vnic_mmio(n, bar, 3, true, &v), -EINVAL);
	assert_int_equal(vnic_mmio(n, bar, 0, true, &v), -EINVAL);
	assert_int_equal(vnic_mmio(n, bar + 14, 4, true, &v), -EINVAL);
	assert_int_equal(vnic_mmio(n, bar + 16, 1, true, &v), -ENOENT);
	/* memory decoding off: nothing answers */
	cfg_wr(n, VNIC_PVPANIC_SLOT, 0x04, 0);
	assert_int_equal(vnic_mmio(n, bar, 1, true, &v), -ENOENT);
	cfg_wr(n, VNIC_PVPANIC_SLOT, 0x04, PCI_CMD_MEM);
	/* the BAR over RAM, the APICs or off the end of 4 GiB: not decoded */
	for (size_t i = 0; i < sizeof(silly) / sizeof(silly[0]); i++) {
		cfg_wr(n, VNIC_PVPANIC_SLOT, 0x10, silly[i]);
		assert_int_equal(vpci_bar_base(&n->pvpanic.fn, 0), 0);
		assert_int_equal(vnic_mmio(n, silly[i], 1, true, &v), -ENOENT);
		assert_int_equal(vnic_mmio(n, bar, 1, true, &v), -ENOENT);
	}
	/* moved to the top of the hole: it answers there */
	cfg_wr(n, VNIC_PVPANIC_SLOT, 0x10, 0xFEBFFFF0u);
	assert_int_equal(vnic_mmio(n, 0xFEBFFFF0u, 1, false, &v), 0);
	assert_int_equal(v, PVPANIC_EVENTS);
	assert_int_equal(nr_events, 0);
	/* the read-only header stays what it is */
	cfg_wr(n, VNIC_PVPANIC_SLOT, 0x00, 0);
	cfg_wr(n, VNIC_PVPANIC_SLOT, 0x08, 0);
	cfg_wr(n, VNIC_PVPANIC_SLOT, 0x3C, 0xFFFFFFFFu);
	assert_int_equal(cfg_rd(n, VNIC_PVPANIC_SLOT, 0), 0x00111B36u);
	assert_int_equal(cfg_rd(n, VNIC_PVPANIC_SLOT, 0x08), 0x08800001u);
	assert_int_equal(cfg_rd(n, VNIC_PVPANIC_SLOT, 0x3C), 0);
	vnic_destroy(n);
}

static size_t save(struct pvpanic *p, uint8_t *buf, size_t cap)
{
	struct snap s;

	snap_save_init(&s, buf, cap);
	assert_int_equal(pvpanic_snapshot(p, &s), 0);
	return s.pos;
}

static void test_snapshot(void **state)
{
	struct vnic *a = make(false), *b = make(false);
	uint8_t buf[512], bad[512], ref[512], now[512];
	uint32_t v = PVPANIC_PANICKED;
	struct snap s;
	size_t len;

	(void)state;
	cfg_wr(a, VNIC_PVPANIC_SLOT, 0x10, 0xD0000000u);
	assert_int_equal(vnic_mmio(a, 0xD0000000u, 1, true, &v), 0);
	len = save(&a->pvpanic, buf, sizeof(buf));
	assert_int_equal(len, 1 + 1 + 1 + VPCI_CFG_SIZE);	/* versions, panicked, config */
	save(&b->pvpanic, ref, sizeof(ref));
	snap_restore_init(&s, buf, len);
	assert_int_equal(pvpanic_snapshot(&b->pvpanic, &s), 0);
	assert_true(b->pvpanic.panicked);
	assert_int_equal(vpci_bar_base(&b->pvpanic.fn, 0), 0xD0000000u);
	assert_int_equal(save(&b->pvpanic, now, sizeof(now)), len);
	assert_memory_equal(buf, now, len);
	/* a panicked device reports no second panic after a restore either */
	assert_int_equal(vnic_mmio(b, 0xD0000000u, 1, true, &v), 0);
	assert_int_equal(b->pvpanic.stats.panics, 1);
	assert_int_equal(nr_events, 1);		/* a's panic alone */
	/* truncated, and every byte flipped: refused and unchanged, or a
	 * state whose read-only bits are the device's */
	save(&b->pvpanic, ref, sizeof(ref));
	for (size_t l = 0; l < len; l++) {
		snap_restore_init(&s, buf, l);
		assert_int_equal(pvpanic_snapshot(&b->pvpanic, &s), -EINVAL);
	}
	for (size_t i = 0; i < len; i++) {
		memcpy(bad, buf, len);
		bad[i] ^= 0xFF;
		snap_restore_init(&s, bad, len);
		if (pvpanic_snapshot(&b->pvpanic, &s) == 0) {
			assert_true(i >= 3);	/* not a version nor the bool */
			assert_int_equal(vpci_cfg_read(&b->pvpanic.fn, 0, 4), 0x00111B36u);
			snap_restore_init(&s, buf, len);
			assert_int_equal(pvpanic_snapshot(&b->pvpanic, &s), 0);
		}
		assert_int_equal(save(&b->pvpanic, now, sizeof(now)), len);
		assert_memory_equal(now, ref, len);
	}
	vnic_destroy(a);
	vnic_destroy(b);
}

static void test_bus_snapshot_needs_the_same_functions(void **state)
{
	struct vnic *both = make(true), *alone = make(false);
	uint8_t buf[4096], ref[4096], now[4096];
	struct snap s;
	size_t len, rlen;

	(void)state;
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(vnic_snapshot(both, &s), 0);
	len = s.pos;
	snap_save_init(&s, ref, sizeof(ref));
	assert_int_equal(vnic_snapshot(alone, &s), 0);
	rlen = s.pos;
	assert_int_equal(ref[0], 0x02);				/* pvpanic only */
	assert_int_equal(buf[0], 0x03);
	snap_restore_init(&s, buf, len);
	assert_int_equal(vnic_snapshot(alone, &s), -EINVAL);
	snap_restore_init(&s, ref, rlen);
	assert_int_equal(vnic_snapshot(both, &s), -EINVAL);
	snap_save_init(&s, now, sizeof(now));
	assert_int_equal(vnic_snapshot(alone, &s), 0);
	assert_int_equal(s.pos, rlen);
	assert_memory_equal(now, ref, rlen);
	snap_restore_init(&s, ref, rlen);
	assert_int_equal(vnic_snapshot(alone, &s), 0);
	vnic_destroy(both);
	vnic_destroy(alone);
}

/* ---- the device set ---------------------------------------------------- */

static struct vm_devices *devices(bool pvpanic, bool nic)
{
	struct vdev_config cfg = {
		.ram_below_4g = 128ull << 20, .epoch_s = 1709214356, .nr_cpus = 1,
		.tsc_hz = 2000000000ull, .pvpanic_on = pvpanic, .panic = on_event,
		.nic_on = nic, .nic_mac = { 0x52, 0x54, 0, 0, 0, 2 },
		.nic_mem = { NULL, no_mem, no_mem_wr }, .nic_tx = no_tx,
	};
	struct vm_devices *d;

	memset(events, 0, sizeof(events));
	nr_events = 0;
	assert_int_equal(vdev_create(&cfg, &d), 0);
	return d;
}

static uint32_t dev_cfg(struct vm_devices *d, unsigned int slot)
{
	uint32_t v = 0x80000000u | slot << 11;

	assert_int_equal(vdev_io(d, 0xCF8, 4, false, &v, 0), 0);
	assert_int_equal(vdev_io(d, 0xCFC, 4, true, &v, 0), 0);
	return v;
}

static void test_device_set(void **state)
{
	struct vm_devices *d = devices(true, false), *none = devices(false, false);
	uint32_t v = PVPANIC_PANICKED;
	uint8_t buf[8192];
	struct snap s;
	size_t len;

	(void)state;
	assert_non_null(d->pci);
	assert_false(d->pci->cfg.net);
	assert_int_equal(dev_cfg(d, VNIC_PVPANIC_SLOT), 0x00111B36u);
	assert_int_equal(dev_cfg(d, VNIC_SLOT), 0xFFFFFFFFu);
	assert_int_equal(vdev_mmio(d, 0, VPCI_HOLE_BASE, 1, true, &v, 0), 0);
	assert_int_equal(vdev_mmio(d, 0, VPCI_HOLE_BASE, 1, true, &v, 0), 0);
	assert_int_equal(events[PVPANIC_PANICKED], 1);
	vdev_reset(d);					/* a new device: reports again */
	assert_false(d->pci->pvpanic.panicked);
	assert_int_equal(vdev_mmio(d, 0, VPCI_HOLE_BASE, 1, true, &v, 0), 0);
	assert_int_equal(events[PVPANIC_PANICKED], 2);
	/* without pvpanic nor NIC: no bus at all */
	assert_null(none->pci);
	assert_int_equal(vdev_io(none, 0xCFC, 4, true, &v, 0), -ENOENT);
	/* a stream of the bus refused by a guest without, and the other way */
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(vdev_snapshot(d, &s, 0), 0);
	len = s.pos;
	snap_restore_init(&s, buf, len);
	assert_int_equal(vdev_snapshot(none, &s, 0), -EINVAL);
	assert_null(none->pci);
	snap_restore_init(&s, buf, len);
	assert_int_equal(vdev_snapshot(d, &s, 0), 0);
	assert_true(d->pci->pvpanic.panicked);
	/* the stream's version: this one's; an older one is refused */
	assert_int_equal(VDEV_SNAP_VERSION, 6);
	assert_int_equal(buf[4], VDEV_SNAP_VERSION);
	buf[4] = 5;
	snap_restore_init(&s, buf, len);
	assert_int_equal(vdev_snapshot(d, &s, 0), -EINVAL);
	vdev_destroy(d);
	vdev_destroy(none);
}

/* The operator pulled the NIC's cable (`net link NAME down`); the guest
 * reboots: the new NIC is as the old was, cable out, until plugged. */
static void test_reboot_keeps_the_cable(void **state)
{
	struct vm_devices *d = devices(true, true);

	(void)state;
	assert_true(d->pci->cfg.net);
	assert_true(vnet_link_up(&d->pci->net));
	vdev_reset(d);
	assert_true(vnet_link_up(&d->pci->net));
	assert_int_equal(vnic_set_link(d->pci, false), 0);
	vdev_reset(d);
	assert_non_null(d->pci);
	assert_false(vnet_link_up(&d->pci->net));
	assert_int_equal(vnic_set_link(d->pci, true), 0);
	vdev_reset(d);
	assert_true(vnet_link_up(&d->pci->net));
	vdev_destroy(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_found_without_nic),
		cmocka_unit_test(test_register_and_events),
		cmocka_unit_test(test_hostile_guest),
		cmocka_unit_test(test_snapshot),
		cmocka_unit_test(test_bus_snapshot_needs_the_same_functions),
		cmocka_unit_test(test_device_set),
		cmocka_unit_test(test_reboot_keeps_the_cable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
