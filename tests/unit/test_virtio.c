/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for the virtio PCI capabilities (drivers/virtio_pci.c) and
 * virtio-net's features and transmit headers (drivers/vnet_hdr.c): a
 * configuration space laid out as QEMU lays out virtio-net-pci, then
 * hostile ones (loops, short or misplaced capabilities, regions outside
 * their BAR, doorbells outside the notify region).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drivers/virtio_net.h"
#include "drivers/virtio_pci.h"
#include "hv/lib/bytes.h"

enum { COMMON = 0x88, ISR = 0x78, DEVICE = 0x68, NOTIFY = 0x54 };	/* where the caps sit */

static uint8_t cfg[256];
static struct virtio_pci_layout l;
static const uint64_t bars[6] = { 0, 4096, 0, 0, 16384, 0 };

static void cap(unsigned int at, unsigned int next, uint8_t type, uint8_t bar, uint32_t off,
		uint32_t len, uint8_t clen)
{
	cfg[at] = VIRTIO_PCI_CAP_VNDR;
	cfg[at + 1] = (uint8_t)next;
	cfg[at + 2] = clen;
	cfg[at + 3] = type;
	cfg[at + 4] = bar;
	put_le32(cfg + at + 8, off);
	put_le32(cfg + at + 12, len);
}

/* As QEMU: an MSI-X capability first, then common, ISR, device, notify
 * in BAR 4 at 0, 0x1000, 0x2000, 0x3000 (multiplier 4). */
static void qemu_layout(void)
{
	memset(cfg, 0, sizeof(cfg));
	put_le16(cfg + 6, 1u << 4);
	cfg[0x34] = 0x98;
	cfg[0x98] = 0x11;			/* MSI-X */
	cfg[0x99] = COMMON;
	cap(COMMON, ISR, VIRTIO_PCI_CAP_COMMON, 4, 0x0000, 0x1000, 16);
	cap(ISR, DEVICE, VIRTIO_PCI_CAP_ISR, 4, 0x1000, 0x1000, 16);
	cap(DEVICE, NOTIFY, VIRTIO_PCI_CAP_DEVICE, 4, 0x2000, 0x1000, 16);
	cap(NOTIFY, 0x40, VIRTIO_PCI_CAP_NOTIFY, 4, 0x3000, 0x1000, 20);
	put_le32(cfg + NOTIFY + 16, 4);
	cap(0x40, 0x00, 5 /* PCI cfg access */, 0, 0, 0, 20);
}

static void test_qemu_layout(void **state)
{
	uint64_t at;

	(void)state;
	qemu_layout();
	assert_int_equal(virtio_pci_parse_caps(cfg, &l), 0);
	assert_int_equal(l.common.bar, 4);
	assert_int_equal(l.common.off, 0);
	assert_int_equal(l.isr.off, 0x1000);
	assert_true(l.device.found);
	assert_int_equal(l.device.off, 0x2000);
	assert_int_equal(l.notify.off, 0x3000);
	assert_int_equal(l.notify_mult, 4);
	assert_int_equal(virtio_pci_check(&l, bars), 0);
	assert_int_equal(virtio_pci_notify_at(&l, 1, &at), 0);
	assert_int_equal(at, 0x3004);
}

static void test_missing_caps(void **state)
{
	(void)state;
	qemu_layout();
	put_le16(cfg + 6, 0);			/* no capability list */
	assert_int_equal(virtio_pci_parse_caps(cfg, &l), -ENOENT);
	qemu_layout();
	cfg[COMMON + 1] = DEVICE;		/* skips the ISR */
	assert_int_equal(virtio_pci_parse_caps(cfg, &l), -ENOENT);
	qemu_layout();
	cfg[0x34] = 0x20;			/* points into the header */
	assert_int_equal(virtio_pci_parse_caps(cfg, &l), -ENOENT);
}

static void test_hostile_lists(void **state)
{
	(void)state;
	qemu_layout();
	cfg[ISR + 1] = COMMON;			/* ISR -> common: a loop */
	assert_int_equal(virtio_pci_parse_caps(cfg, &l), -ENOENT);	/* ends */
	qemu_layout();
	cfg[DEVICE + 1] = 0xfe;			/* last bytes: cut short */
	cfg[0xfc] = VIRTIO_PCI_CAP_VNDR;
	cfg[0xfc + 2] = 16;
	cfg[0xfc + 3] = VIRTIO_PCI_CAP_NOTIFY;
	assert_int_equal(virtio_pci_parse_caps(cfg, &l), -ENOENT);
	qemu_layout();
	cfg[NOTIFY + 2] = 16;			/* notify without its multiplier */
	assert_int_equal(virtio_pci_parse_caps(cfg, &l), -ENOENT);
	qemu_layout();
	cfg[COMMON + 4] = 7;			/* BAR 7 does not exist */
	assert_int_equal(virtio_pci_parse_caps(cfg, &l), -ENOENT);
}

static void test_first_of_a_kind_wins(void **state)
{
	(void)state;
	qemu_layout();
	cap(0x40, 0x00, VIRTIO_PCI_CAP_COMMON, 4, 0x800, 0x100, 16);	/* a second one */
	assert_int_equal(virtio_pci_parse_caps(cfg, &l), 0);
	assert_int_equal(l.common.off, 0);
}

static void test_regions_must_fit(void **state)
{
	uint64_t small[6] = { 0, 0, 0, 0, 0x3800, 0 }, none[6] = { 0 };

	(void)state;
	qemu_layout();
	assert_int_equal(virtio_pci_parse_caps(cfg, &l), 0);
	assert_int_equal(virtio_pci_check(&l, small), -EINVAL);	/* notify past the end */
	assert_int_equal(virtio_pci_check(&l, none), -EINVAL);	/* I/O or absent BAR */
	put_le32(cfg + COMMON + 12, 55);		/* common shorter than its fields */
	assert_int_equal(virtio_pci_parse_caps(cfg, &l), 0);
	assert_int_equal(virtio_pci_check(&l, bars), -EINVAL);
	qemu_layout();
	put_le32(cfg + DEVICE + 8, 0xfffffff0);	/* offset + length wraps 32 bits */
	assert_int_equal(virtio_pci_parse_caps(cfg, &l), 0);
	assert_int_equal(virtio_pci_check(&l, bars), -EINVAL);
}

static void test_doorbells(void **state)
{
	uint64_t at = 0;

	(void)state;
	qemu_layout();
	assert_int_equal(virtio_pci_parse_caps(cfg, &l), 0);
	assert_int_equal(virtio_pci_notify_at(&l, 1023, &at), 0);	/* last 2 bytes */
	assert_int_equal(at, 0x3000 + 4092);
	assert_int_equal(virtio_pci_notify_at(&l, 1024, &at), -EINVAL);
	assert_int_equal(virtio_pci_notify_at(&l, 0xffff, &at), -EINVAL);
	put_le32(cfg + NOTIFY + 16, 0xffffffff);	/* a huge multiplier */
	assert_int_equal(virtio_pci_parse_caps(cfg, &l), 0);
	assert_int_equal(virtio_pci_notify_at(&l, 0xffff, &at), -EINVAL);
	assert_int_equal(virtio_pci_notify_at(&l, 0, &at), 0);	/* mult 0 or any: queue 0 */
}

static void test_features(void **state)
{
	const uint64_t v1 = 1ull << VIRTIO_F_VERSION_1, mac = 1ull << VIRTIO_NET_F_MAC,
		       st = 1ull << VIRTIO_NET_F_STATUS, cs = 1ull << VIRTIO_NET_F_CSUM,
		       tso = 1ull << VIRTIO_NET_F_HOST_TSO4;

	(void)state;
	assert_int_equal(virtio_net_features(mac | st | cs | tso), 0);	/* legacy only */
	assert_int_equal(virtio_net_features(~0ull), v1 | mac | st | cs | tso);
	assert_int_equal(virtio_net_features(v1 | tso | mac), v1 | mac);	/* TSO needs CSUM */
	assert_int_equal(virtio_net_features(v1 | 1ull << 15 | 1ull << 1), v1);	/* MRG_RXBUF etc. */
}

/* Ethernet + IPv4 (20) + TCP (20): 10.0.0.1 -> 10.0.0.2. */
static void tcp_frame(uint8_t *f, uint16_t ip_len)
{
	memset(f, 0, 54);
	f[12] = 0x08;
	f[14] = 0x45;
	put_be16(f + 16, ip_len);
	f[14 + 8] = 64;
	f[14 + 9] = 6;
	put_be32(f + 26, 0x0a000001);
	put_be32(f + 30, 0x0a000002);
	f[34 + 12] = 5 << 4;
}

static void test_headers(void **state)
{
	static const uint16_t frags[] = { 0x2000, 0x0001, 0x3fff };	/* MF, offsets */
	const uint64_t feat = virtio_net_features(~0ull);
	uint8_t f[64], h[VNET_HDR_LEN];

	(void)state;
	tcp_frame(f, 40);
	virtio_net_hdr(h, feat, f, 54, 0, 0);
	assert_int_equal(h[0], VNET_HDR_F_NEEDS_CSUM);
	assert_int_equal(h[1], 0);
	assert_int_equal(get_le16(h + 6), 34);
	assert_int_equal(get_le16(h + 8), 16);
	virtio_net_hdr(h, feat, f, 54, 54, 1448);
	assert_int_equal(h[1], VNET_HDR_GSO_TCPV4);
	assert_int_equal(get_le16(h + 2), 54);
	assert_int_equal(get_le16(h + 4), 1448);
	virtio_net_hdr(h, 1ull << VIRTIO_F_VERSION_1, f, 54, 0, 0);	/* no CSUM */
	assert_int_equal(h[0], 0);
	f[14 + 9] = 17;					/* UDP: not offloaded */
	virtio_net_hdr(h, feat, f, 54, 0, 0);
	assert_int_equal(h[0], 0);
	assert_int_equal(get_le16(h + 6), 0);
	/* a TCP packet's fragment (MF, or an offset): no TCP header at 34 */
	for (size_t i = 0; i < sizeof(frags) / sizeof(frags[0]); i++) {
		tcp_frame(f, 40);
		put_be16(f + 14 + 6, frags[i]);
		virtio_net_hdr(h, feat, f, 54, 0, 0);
		assert_int_equal(h[0], 0);
		assert_int_equal(get_le16(h + 6), 0);
	}
	tcp_frame(f, 40);
	put_be16(f + 14 + 6, 0x4000);			/* DF is no fragment */
	virtio_net_hdr(h, feat, f, 54, 0, 0);
	assert_int_equal(h[0], VNET_HDR_F_NEEDS_CSUM);
}

static uint32_t sum16(const uint8_t *p, size_t n, uint32_t s)
{
	for (size_t i = 0; i < n; i += 2)
		s += get_be16(p + i);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s;
}

static void test_tso_fix(void **state)
{
	uint8_t f[64];
	uint32_t payload = 30000, pseudo;

	(void)state;
	tcp_frame(f, (uint16_t)(40 + payload));
	/* the stack's field: the pseudo-header without the length, folded */
	pseudo = sum16(f + 26, 8, 6);
	put_be16(f + 34 + 16, (uint16_t)pseudo);
	virtio_net_tso_fix(f, 54, payload);
	assert_int_equal(sum16(f + 14, 20, 0), 0xffff);		/* a valid IPv4 header */
	assert_int_equal(get_be16(f + 34 + 16), sum16(f + 26, 8, 6 + 20 + payload));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qemu_layout),
		cmocka_unit_test(test_missing_caps),
		cmocka_unit_test(test_hostile_lists),
		cmocka_unit_test(test_first_of_a_kind_wins),
		cmocka_unit_test(test_regions_must_fit),
		cmocka_unit_test(test_doorbells),
		cmocka_unit_test(test_features),
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_tso_fix),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
