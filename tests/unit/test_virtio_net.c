/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for the virtio-net driver (drivers/virtio_net.c) against a
 * simulated device: its BAR is host memory laid out as QEMU's (common
 * configuration, ISR, device configuration, doorbells), and the test plays
 * the device on the rings the driver allocates, honest and then hostile
 * (ids out of range, lengths beyond the buffer, runts, a used index that
 * runs ahead, completions of what was never sent).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/mm.h"
#include "drivers/nic.h"
#include "drivers/virtio_net.h"
#include "drivers/virtio_pci.h"
#include "drivers/virtq.h"
#include "hv/lib/bytes.h"
#include "tests/unit/drv_host.h"

#define BAR_PA	0xfe000000ull
enum { COMMON = 0x0000, ISR = 0x1000, DEVCFG = 0x2000, NOTIFY = 0x3000, BAR_SIZE = 0x4000 };

static uint8_t cfg[256];
static uint8_t bar[BAR_SIZE] __attribute__((aligned(8)));
static bool intx_on;

void pci_intx(const struct pci_dev *d, bool on) { (void)d; intx_on = on; }
uint32_t pci_read32(const struct pci_dev *d, uint8_t off) { (void)d; return get_le32(cfg + off); }

uint64_t pci_bar_mem(const struct pci_dev *d, int n, uint64_t *size)
{
	(void)d;
	*size = n == 4 ? BAR_SIZE : 0;
	return n == 4 ? BAR_PA : 0;
}

void *ioremap(uint64_t pa, uint64_t len)
{
	if (pa < BAR_PA || pa + len > BAR_PA + BAR_SIZE)
		return NULL;
	return bar + (pa - BAR_PA);
}

static void cap(unsigned int at, unsigned int next, uint8_t type, uint32_t off, uint8_t clen)
{
	cfg[at] = VIRTIO_PCI_CAP_VNDR;
	cfg[at + 1] = (uint8_t)next;
	cfg[at + 2] = clen;
	cfg[at + 3] = type;
	cfg[at + 4] = 4;
	put_le32(cfg + at + 8, off);
	put_le32(cfg + at + 12, 0x1000);
}

/* The device as the driver first finds it: features CSUM, MAC, HOST_TSO4,
 * STATUS in both halves (the select register is plain memory here, and
 * bit 0 of the high half is VERSION_1), two queues of 256. */
static void device(void)
{
	memset(cfg, 0, sizeof(cfg));
	memset(bar, 0, sizeof(bar));
	put_le16(cfg + 0, VIRTIO_PCI_VENDOR);
	put_le16(cfg + 2, 0x1041);
	put_le16(cfg + 6, 1u << 4);
	cfg[0x34] = 0x40;
	cap(0x40, 0x50, VIRTIO_PCI_CAP_COMMON, COMMON, 16);
	cap(0x50, 0x60, VIRTIO_PCI_CAP_ISR, ISR, 16);
	cap(0x60, 0x70, VIRTIO_PCI_CAP_DEVICE, DEVCFG, 16);
	cap(0x70, 0x00, VIRTIO_PCI_CAP_NOTIFY, NOTIFY, 20);
	put_le32(cfg + 0x70 + 16, 4);
	put_le32(bar + COMMON + VCC_DEVICE_FEATURE, 1u << 0 | 1u << 5 | 1u << 11 | 1u << 16);
	put_le16(bar + COMMON + VCC_NUM_QUEUES, 2);
	put_le16(bar + COMMON + VCC_QUEUE_SIZE, 256);
	put_le16(bar + COMMON + VCC_QUEUE_NOTIFY_OFF, 1);	/* doorbells at +4 */
	memcpy(bar + DEVCFG, (uint8_t[6]){ 0x52, 0x54, 0, 0x12, 0x34, 0x56 }, 6);
	put_le16(bar + DEVCFG + 6, 1);		/* link up */
}

/* ---- the device's side of a queue ---- */
struct dq {
	struct virtq_desc *desc;
	struct virtq_avail *avail;
	struct virtq_used *used;
	uint16_t next_avail;
};

static struct dq rxq, txq;
static struct nic *nic;
static const struct pci_dev pci = { .dev = 3, .vendor = VIRTIO_PCI_VENDOR, .device = 0x1041 };

static void dq_at(struct dq *q, void *ring)
{
	q->desc = ring;
	q->avail = (void *)((uint8_t *)ring + virtq_avail_off(256));
	q->used = (void *)((uint8_t *)ring + virtq_used_off(256));
	q->next_avail = 0;
}

/* The next chain the driver made available: its head, -1 if none. */
static int dq_take(struct dq *q)
{
	if (q->next_avail == q->avail->idx)
		return -1;
	return q->avail->ring[q->next_avail++ % 256];
}

static void dq_put(struct dq *q, uint32_t id, uint32_t len)
{
	q->used->ring[q->used->idx % 256] = (struct virtq_used_elem){ id, len };
	q->used->idx++;
}

/* Receive: a frame of n bytes (after the 12-byte header) into the next
 * buffer, reported as used with length len (0: the true one). */
static int deliver(size_t n, uint8_t fill, uint32_t len)
{
	int id = dq_take(&rxq);
	uint8_t *b;

	assert_true(id >= 0);
	assert_int_equal(rxq.desc[id].flags, VIRTQ_DESC_F_WRITE);
	assert_int_equal(rxq.desc[id].len, NIC_BUF);
	b = phys_to_virt(rxq.desc[id].addr);
	memset(b, 0, VNET_HDR_LEN);
	memset(b + VNET_HDR_LEN, fill, n);
	dq_put(&rxq, (uint32_t)id, len ? len : (uint32_t)(n + VNET_HDR_LEN));
	return id;
}

static int setup(void **state)
{
	(void)state;
	device();
	intx_on = true;
	assert_int_equal(virtio_net_driver.probe(&pci, virtio_net_driver.arg, &nic), 0);
	assert_int_equal(drv_host_blocks(), 4);
	dq_at(&rxq, drv_host_block(0));
	dq_at(&txq, drv_host_block(2));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(nic);
	drv_host_free();
	return 0;
}

/* ---- start ---- */
static void test_start(void **state)
{
	static const uint8_t mac[6] = { 0x52, 0x54, 0, 0x12, 0x34, 0x56 };

	(void)state;
	assert_memory_equal(nic->mac, mac, 6);
	assert_string_equal(nic->driver, "virtio-net");
	assert_true(nic->tx_csum);
	assert_true(nic->tso);
	assert_int_equal(bar[COMMON + VCC_DEVICE_STATUS], VIRTIO_STATUS_ACKNOWLEDGE |
			 VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_DRIVER_OK);
	assert_int_equal(rxq.avail->idx, 256);		/* every buffer given */
	assert_false(intx_on);				/* masked until asked */
	assert_true(nic->ops->link_up(nic));
	put_le16(bar + DEVCFG + 6, 0);
	assert_false(nic->ops->link_up(nic));
	bar[ISR] = 1;
	assert_int_equal(nic->ops->irq_ack(nic), 1);
	nic->ops->irq_unmask(nic);
	assert_true(intx_on);
}

static int teardown(void **state);

static void test_refusals(void **state)
{
	struct nic *n = NULL;
	uint8_t mac[6];

	nic = NULL;
	device();
	put_le32(bar + COMMON + VCC_DEVICE_FEATURE, 1u << 5);	/* no VERSION_1 */
	assert_int_equal(virtio_net_driver.probe(&pci, NULL, &n), -ENOTSUP);
	assert_true(bar[COMMON + VCC_DEVICE_STATUS] & VIRTIO_STATUS_FAILED);
	device();
	put_le16(bar + COMMON + VCC_NUM_QUEUES, 1);
	assert_int_equal(virtio_net_driver.probe(&pci, NULL, &n), -ENODEV);
	device();
	put_le16(bar + COMMON + VCC_QUEUE_NOTIFY_OFF, 1024);	/* doorbell past the region */
	assert_int_equal(virtio_net_driver.probe(&pci, NULL, &n), -EINVAL);
	device();
	put_le16(bar + COMMON + VCC_QUEUE_SIZE, 0);
	assert_int_equal(virtio_net_driver.probe(&pci, NULL, &n), -ENODEV);
	device();
	put_le32(cfg + 0x50 + 12, 0x4000);			/* ISR beyond the BAR */
	assert_int_equal(virtio_net_driver.probe(&pci, NULL, &n), -EINVAL);
	assert_int_equal(virtio_net_driver.read_mac(&pci, NULL, mac), -EINVAL);
	assert_null(n);
	device();
	assert_int_equal(virtio_net_driver.read_mac(&pci, NULL, mac), 0);
	assert_int_equal(mac[5], 0x56);
	teardown(state);
}

/* ---- receive ---- */
static size_t got_len[8];
static uint8_t got_first[8];
static unsigned int got;

static void rx_cb(void *ctx, const void *frame, size_t len, unsigned flags)
{
	(void)ctx;
	assert_int_equal(flags, 0);
	got_first[got] = *(const uint8_t *)frame;
	got_len[got++] = len;
}

static void test_rx(void **state)
{
	(void)state;
	got = 0;
	deliver(60, 0xa1, 0);
	deliver(1514, 0xa2, 0);
	assert_int_equal(nic->ops->poll(nic, rx_cb, NULL, 64), 2);
	assert_int_equal(got, 2);
	assert_int_equal(got_len[0], 60);
	assert_int_equal(got_first[0], 0xa1);
	assert_int_equal(got_len[1], 1514);
	assert_int_equal(got_first[1], 0xa2);
	assert_int_equal(rxq.avail->idx, 258);		/* both buffers back */
	assert_int_equal(nic->stats.rx_frames, 2);
	for (int i = 0; i < 600; i++) {			/* round and round */
		got = 0;
		deliver(64, (uint8_t)i, 0);
		assert_int_equal(nic->ops->poll(nic, rx_cb, NULL, 64), 1);
		assert_int_equal(got_first[0], (uint8_t)i);
	}
	assert_int_equal(rxq.avail->idx, (uint16_t)(256 + 602));
	assert_int_equal(nic->stats.rx_frames, 602);
	assert_int_equal(nic->stats.dev_errors, 0);
}

static void test_rx_hostile(void **state)
{
	(void)state;
	got = 0;
	deliver(60, 1, 2049 + VNET_HDR_LEN);		/* beyond the buffer */
	deliver(60, 2, 5);				/* shorter than the header */
	dq_put(&rxq, 999, 60);				/* no such buffer */
	dq_put(&rxq, 0x10000, 60);			/* nor this */
	deliver(60, 3, 0);
	assert_int_equal(nic->ops->poll(nic, rx_cb, NULL, 64), 3);
	assert_int_equal(got, 1);
	assert_int_equal(got_first[0], 3);
	assert_int_equal(nic->stats.rx_errors, 2);
	assert_int_equal(nic->stats.dev_errors, 3);	/* too long, and two ids */
	assert_int_equal(rxq.avail->idx, 256 + 3);	/* the bad buffers are back too */
	rxq.used->idx = (uint16_t)(rxq.used->idx + 300);	/* more than it holds */
	assert_int_equal(nic->ops->poll(nic, rx_cb, NULL, 64), 0);
	assert_int_equal(nic->stats.dev_errors, 4);
	assert_int_equal(nic->ops->poll(nic, rx_cb, NULL, 64), 0);	/* stays stopped */
	assert_int_equal(got, 1);
}

/* ---- transmit ---- */
static void test_tx(void **state)
{
	uint8_t f[60];
	const uint8_t *b;
	int id;

	(void)state;
	drv_host_tcp4(f, sizeof(f));
	assert_int_equal(nic->ops->xmit(nic, f, sizeof(f)), 0);
	id = dq_take(&txq);
	assert_true(id >= 0);
	assert_int_equal(txq.desc[id].len, 60 + VNET_HDR_LEN);
	assert_int_equal(txq.desc[id].flags, 0);	/* one buffer, device reads */
	b = phys_to_virt(txq.desc[id].addr);
	assert_int_equal(b[0], VNET_HDR_F_NEEDS_CSUM);
	assert_int_equal(get_le16(b + 6), 34);
	assert_memory_equal(b + VNET_HDR_LEN, f, 60);
	assert_int_equal(get_le16(bar + NOTIFY + 4), 0);	/* not kicked yet */
	nic->ops->tx_kick(nic);
	assert_int_equal(get_le16(bar + NOTIFY + 4), 1);	/* queue 1, at 1 * 4 */
	f[14 + 9] = 17;
	uint8_t *slot = nic->ops->tx_frame(nic);	/* built in place */
	memcpy(slot, f, sizeof(f));
	assert_int_equal(nic->ops->xmit(nic, slot, sizeof(f)), 0);
	id = dq_take(&txq);
	b = phys_to_virt(txq.desc[id].addr);
	assert_ptr_equal(b + VNET_HDR_LEN, slot);
	assert_int_equal(b[0], 0);			/* UDP: no offload */
	assert_int_equal(nic->ops->xmit(nic, f, 13), -EINVAL);
	assert_int_equal(nic->ops->xmit(nic, f, NIC_BUF - VNET_HDR_LEN + 1), -EINVAL);
}

static void test_tx_full_and_hostile_completions(void **state)
{
	uint8_t f[64] = { 0 };
	int sent = 0, ids[5];

	(void)state;
	while (nic->ops->xmit(nic, f, sizeof(f)) == 0)
		sent++;
	assert_int_equal(sent, 256);
	assert_int_equal(nic->stats.tx_busy, 1);
	assert_null(nic->ops->tx_frame(nic));
	for (int i = 0; i < 5; i++)
		ids[i] = dq_take(&txq);
	dq_put(&txq, 4096, 0);				/* garbage */
	for (int i = 0; i < 5; i++)
		dq_put(&txq, (uint32_t)ids[i], 0);
	dq_put(&txq, (uint32_t)ids[0], 0);		/* the same one twice */
	for (int i = 0; i < 5; i++)
		assert_int_equal(nic->ops->xmit(nic, f, sizeof(f)), 0);
	assert_int_equal(nic->ops->xmit(nic, f, sizeof(f)), -EAGAIN);
	assert_int_equal(nic->stats.dev_errors, 2);
}

static uint16_t sum16(const uint8_t *p, size_t n)
{
	uint32_t s = 0;

	for (size_t i = 0; i < n; i += 2)
		s += get_be16(p + i);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

static void test_tso(void **state)
{
	static uint8_t hdr[54], p0[3000], p1[2000], many[NIC_TSO_IOV_MAX + 1];
	const struct nic_iov iov[2] = { { p0, sizeof(p0) }, { p1, sizeof(p1) } };
	const struct nic_iov big[2] = { { p0, 32768 }, { p1, 1 } }, empty[2] = { { p0, 1 }, { p1, 0 } };
	struct nic_iov bytes[NIC_TSO_IOV_MAX + 1];
	const uint8_t *b;
	int id, k = 0;

	(void)state;
	drv_host_tcp4(hdr, sizeof(hdr));
	put_be16(hdr + 16, 40 + 5000);
	memset(p0, 0x11, sizeof(p0));
	memset(p1, 0x22, sizeof(p1));
	assert_int_equal(nic->ops->xmit_tso(nic, hdr, 54, iov, 2, 1448), 0);
	id = dq_take(&txq);
	b = phys_to_virt(txq.desc[id].addr);
	assert_int_equal(txq.desc[id].len, 54 + VNET_HDR_LEN);
	assert_int_equal(b[1], VNET_HDR_GSO_TCPV4);
	assert_int_equal(get_le16(b + 2), 54);
	assert_int_equal(get_le16(b + 4), 1448);
	assert_int_equal(sum16(b + VNET_HDR_LEN + 14, 20), 0xffff);	/* IPv4 checksum set */
	/* the payload fills whole buffers across the pieces, in order */
	size_t want[4] = { 54 + VNET_HDR_LEN, 2048, 2048, 904 };
	for (uint16_t d = (uint16_t)id;; d = txq.desc[d].next, k++) {
		assert_true(k < 4);
		assert_int_equal(txq.desc[d].len, want[k]);
		b = phys_to_virt(txq.desc[d].addr);
		if (k == 2) {
			assert_int_equal(b[951], 0x11);
			assert_int_equal(b[952], 0x22);
		}
		if (!(txq.desc[d].flags & VIRTQ_DESC_F_NEXT))
			break;
	}
	assert_int_equal(k, 3);
	assert_int_equal(nic->stats.tx_tso, 1);
	assert_int_equal(nic->stats.tx_frames, 4);
	assert_int_equal(nic->ops->xmit_tso(nic, hdr, 54, big, 2, 1448), -EINVAL);
	assert_int_equal(nic->ops->xmit_tso(nic, hdr, 54, empty, 2, 1448), -EINVAL);
	assert_int_equal(nic->ops->xmit_tso(nic, hdr, 54, iov, 0, 1448), -EINVAL);
	for (unsigned int i = 0; i < NIC_TSO_IOV_MAX + 1; i++)
		bytes[i] = (struct nic_iov){ many + i, 1 };
	assert_int_equal(nic->ops->xmit_tso(nic, hdr, 54, bytes, NIC_TSO_IOV_MAX + 1, 1448),
			 -EINVAL);
	assert_int_equal(nic->ops->xmit_tso(nic, hdr, 54, iov, 2, 0), -EINVAL);
	hdr[14 + 9] = 17;
	assert_int_equal(nic->ops->xmit_tso(nic, hdr, 54, iov, 2, 1448), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_start, setup, teardown),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test_setup_teardown(test_rx, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_hostile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tx, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tx_full_and_hostile_completions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tso, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
