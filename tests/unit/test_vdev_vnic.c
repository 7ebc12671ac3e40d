/* SPDX-License-Identifier: BSD-2-Clause */
/* A guest's PCI bus with its NIC (hv/vdev/vnic.c): found on the bus, its
 * BAR in the hole through 32-bit MMIO, INTx on the configured line, and a
 * restore that is all or nothing across bus and NIC. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include "hv/vdev/vnic.h"

static uint8_t ram[0x10000];
static int line_seen = -1, level_seen = -1;

static int rd(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	(void)ctx;
	if (gpa > sizeof(ram) || len > sizeof(ram) - gpa)
		return -EFAULT;
	memcpy(buf, ram + gpa, len);
	return 0;
}

static int wr(void *ctx, uint64_t gpa, const void *buf, size_t len)
{
	(void)ctx;
	if (gpa > sizeof(ram) || len > sizeof(ram) - gpa)
		return -EFAULT;
	memcpy(ram + gpa, buf, len);
	return 0;
}

static int tx(void *ctx, const uint8_t *frame, size_t len, const struct vnet_offload *off)
{
	(void)ctx, (void)frame, (void)len, (void)off;
	return 0;
}

static void irq(void *ctx, unsigned int line, int level)
{
	(void)ctx;
	line_seen = (int)line;
	level_seen = level;
}

static struct vnic *make(uint8_t last)
{
	struct vnic_config c = {
		.net = true, .mac = { 0x52, 0x54, 0, 0, 0, last }, .irq = VNIC_IRQ,
		.mem = { NULL, rd, wr }, .tx = tx, .irq_fn = irq,
	};
	struct vnic *n;

	assert_int_equal(vnic_create(&c, &n), 0);
	return n;
}

static uint32_t cfg(struct vnic *n, unsigned int reg)
{
	uint32_t v = 0x80000000u | VNIC_SLOT << 11 | reg;

	assert_int_equal(vnic_io(n, 0xCF8, 4, false, &v), 0);
	assert_int_equal(vnic_io(n, 0xCFC, 4, true, &v), 0);
	return v;
}

static void test_found(void **state)
{
	struct vnic *n = make(1);
	struct vnic_config bad = { .irq = 24, .irq_fn = irq };
	struct vnic *none = (struct vnic *)&bad;
	uint32_t v = 0;

	(void)state;
	assert_int_equal(cfg(n, 0), 0x10411AF4u);
	assert_int_equal(cfg(n, 0x3C) & 0xFFFF, 0x0100 | VNIC_IRQ);
	assert_int_equal(cfg(n, 0x10), VPCI_HOLE_BASE);
	assert_int_equal(cfg(n, 0x04) & PCI_CMD_MEM, PCI_CMD_MEM);
	assert_int_equal(vnic_mmio(n, VPCI_HOLE_BASE + VIRTIO_PCI_DEVCFG, 4, false, &v), 0);
	assert_int_equal(v, 0x00005452u);
	assert_int_equal(vnic_mmio(n, VPCI_HOLE_BASE + VIRTIO_PCI_BAR_SIZE, 4, false, &v), -ENOENT);
	assert_int_equal(vnic_io(n, 0x3F8, 1, true, &v), -ENOENT);
	/* link change while DRIVER_OK: INTx on line 11 */
	n->net.vp.status = VIRTIO_S_DRIVER_OK;
	vnet_set_link(&n->net, false);
	assert_int_equal(line_seen, VNIC_IRQ);
	assert_int_equal(level_seen, 1);
	assert_int_equal(vnic_mmio(n, VPCI_HOLE_BASE + VIRTIO_PCI_ISR, 1, false, &v), 0);
	assert_int_equal(v, VIRTIO_ISR_CONFIG);
	assert_int_equal(level_seen, 0);
	assert_int_equal(vnic_create(&bad, &none), -EINVAL);
	assert_null(none);
	vnic_destroy(n);
}

static void test_snapshot(void **state)
{
	struct vnic *a = make(1), *b = make(1), *c = make(2);
	uint8_t buf[2048], bad[2048], before[2048], after[2048];
	struct snap s;
	size_t len, nb;
	uint32_t v = 0x80000000u | 0x18;

	(void)state;
	assert_int_equal(vnic_io(a, 0xCF8, 4, false, &v), 0);	/* bus state to carry */
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(vnic_snapshot(a, &s), 0);
	len = s.pos;
	snap_save_init(&s, before, sizeof(before));
	assert_int_equal(vnic_snapshot(b, &s), 0);
	nb = s.pos;
	/* another MAC (the NIC part) must not leave the bus part restored */
	snap_restore_init(&s, buf, len);
	assert_int_equal(vnic_snapshot(c, &s), -EINVAL);
	assert_int_equal(c->bus.addr, 0);
	memcpy(bad, buf, len);
	bad[len - 1] ^= 0x40;				/* last queue's err: bad */
	snap_restore_init(&s, bad, len);
	assert_int_equal(vnic_snapshot(b, &s), -EINVAL);
	snap_save_init(&s, after, sizeof(after));
	assert_int_equal(vnic_snapshot(b, &s), 0);
	assert_int_equal(s.pos, nb);
	assert_memory_equal(before, after, nb);
	snap_restore_init(&s, buf, len);
	assert_int_equal(vnic_snapshot(b, &s), 0);
	assert_int_equal(b->bus.addr, 0x80000018u);
	vnic_destroy(a);
	vnic_destroy(b);
	vnic_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_found),
		cmocka_unit_test(test_snapshot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
