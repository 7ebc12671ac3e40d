/* SPDX-License-Identifier: BSD-2-Clause */
/* virtio-net over the modern virtio-pci transport (hv/vdev/virtio_net.c,
 * virtio_pci.c, virtqueue.c), driven by a small guest driver written here
 * against the virtio 1.1 spec: capability walk, feature negotiation,
 * queue set-up, frames each way, ISR/INTx, hostile descriptors, and
 * snapshots (round trip and hostile bytes). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include "hv/lib/bytes.h"
#include "hv/vdev/virtio_net.h"

#define RAM_SIZE	0x100000u
#define QSIZE		16
#define BUF_LEN		(VNET_HDR_LEN + VNET_MAX_FRAME)
#define RX_BUFS		0x40000u	/* receive buffers: 2 KiB apart */
#define TX_BUFS		0x80000u

static const uint8_t MAC[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

/* The guest driver's view of one queue. */
struct gq {
	uint64_t desc, avail, used;
	uint16_t avail_idx, used_seen;
};

struct rig {
	uint8_t ram[RAM_SIZE];
	struct vpci_bus bus;
	struct vnet net;
	uint64_t common, isr, devcfg, notify;	/* guest-physical */
	uint32_t notify_mult;
	struct gq q[2];
	int irq_level, irq_raises;
	int rx_idx_stores;		/* writes of the receive queue's used index */
	uint8_t tx_frame[VNET_MAX_GSO_FRAME];
	size_t tx_len;
	unsigned int tx_calls;
	struct vnet_offload tx_off;	/* what the last frame asked for */
	unsigned int msix_cap;		/* config offset of the MSI-X capability */
	uint64_t msix_table, msix_pba;	/* guest-physical */
	unsigned int msis;		/* MSI messages the bus carried */
	uint64_t msi_addr;
	uint32_t msi_data;
	int tx_rc;			/* what tx() answers */
	unsigned long reads;		/* guest memory reads by the device */
	unsigned int racer;		/* a driver on another CPU: posts a 1-byte
					 * buffer whenever the device reads the
					 * receive ring's index, this many times */
};

static void set_desc(struct rig *r, unsigned int qi, uint16_t i, uint64_t addr, uint32_t len,
		     uint16_t flags, uint16_t next);

/* ---- the host side ------------------------------------------------------ */

static int ram_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	struct rig *r = ctx;

	if (gpa > RAM_SIZE || len > RAM_SIZE - gpa)
		return -EFAULT;
	r->reads++;
	if (r->racer && r->q[0].avail && gpa <= r->q[0].avail + 2 && gpa + len > r->q[0].avail + 2) {
		struct gq *q = &r->q[0];
		uint16_t d = q->avail_idx % QSIZE;

		r->racer--;
		set_desc(r, 0, d, RX_BUFS + d, 1, VQ_DESC_F_WRITE, 0);
		put_le16(r->ram + q->avail + 4 + 2 * d, d);
		put_le16(r->ram + q->avail + 2, ++q->avail_idx);
	}
	memcpy(buf, r->ram + gpa, len);
	return 0;
}

static int ram_write(void *ctx, uint64_t gpa, const void *buf, size_t len)
{
	struct rig *r = ctx;

	if (gpa > RAM_SIZE || len > RAM_SIZE - gpa)
		return -EFAULT;
	memcpy(r->ram + gpa, buf, len);
	r->rx_idx_stores += r->q[0].used && gpa == r->q[0].used + 2;
	return 0;
}

static void irq_cb(void *ctx, unsigned int line, int level)
{
	struct rig *r = ctx;

	assert_int_equal(line, 10);
	if (level && !r->irq_level)
		r->irq_raises++;
	r->irq_level = level;
}

static int tx_cb(void *ctx, const uint8_t *frame, size_t len, const struct vnet_offload *off)
{
	struct rig *r = ctx;

	assert_true(len <= sizeof(r->tx_frame));
	memcpy(r->tx_frame, frame, len);
	r->tx_len = len;
	r->tx_off = *off;
	r->tx_calls++;
	return r->tx_rc;
}

/* ---- the guest's accessors ----------------------------------------------- */

static uint32_t cfg_rd(struct rig *r, unsigned int reg, uint8_t size)
{
	uint32_t v = 0x80000000u | 1u << 11 | (reg & 0xFC);

	assert_int_equal(vpci_io(&r->bus, 0xCF8, 4, false, &v), 0);
	assert_int_equal(vpci_io(&r->bus, (uint16_t)(0xCFC + (reg & 3)), size, true, &v), 0);
	return v;
}

static void cfg_wr(struct rig *r, unsigned int reg, uint8_t size, uint32_t v)
{
	uint32_t a = 0x80000000u | 1u << 11 | (reg & 0xFC);

	vpci_io(&r->bus, 0xCF8, 4, false, &a);
	vpci_io(&r->bus, (uint16_t)(0xCFC + (reg & 3)), size, false, &v);
}

static uint64_t mrd(struct rig *r, uint64_t gpa, uint8_t size)
{
	uint64_t v = 0;

	assert_int_equal(vpci_mmio(&r->bus, gpa, size, false, &v), 0);
	return v;
}

static void mwr(struct rig *r, uint64_t gpa, uint8_t size, uint64_t v)
{
	assert_int_equal(vpci_mmio(&r->bus, gpa, size, true, &v), 0);
}

static uint8_t status(struct rig *r)
{
	return (uint8_t)mrd(r, r->common + 0x14, 1);
}

/* Walk the capability list for the virtio structures (4.1.4). */
static void find_caps(struct rig *r)
{
	uint64_t bar = cfg_rd(r, 0x10, 4) & ~0xFull;
	unsigned int seen = 0;

	for (unsigned int p = cfg_rd(r, 0x34, 1); p; p = cfg_rd(r, p + 1, 1)) {
		unsigned int type = cfg_rd(r, p + 3, 1);
		uint64_t at = bar + cfg_rd(r, p + 8, 4);

		if (cfg_rd(r, p, 1) == 0x11) {		/* MSI-X, BAR 0 */
			assert_int_equal(cfg_rd(r, p + 4, 4) & 7, 0);
			assert_int_equal(cfg_rd(r, p + 8, 4) & 7, 0);
			r->msix_cap = p;
			r->msix_table = bar + cfg_rd(r, p + 4, 4);
			r->msix_pba = bar + (cfg_rd(r, p + 8, 4) & ~7u);
			continue;
		}
		assert_int_equal(cfg_rd(r, p, 1), 0x09);
		assert_int_equal(cfg_rd(r, p + 4, 1), 0);		/* BAR 0 */
		if (type == 1)
			r->common = at;
		else if (type == 2)
			r->notify = at, r->notify_mult = cfg_rd(r, p + 16, 4);
		else if (type == 3)
			r->isr = at;
		else if (type == 4)
			r->devcfg = at;
		seen |= 1u << type;
	}
	assert_int_equal(seen, 0x1E);
	assert_true(r->msix_cap);
}

static void msi_cb(void *ctx, uint64_t addr, uint32_t data)
{
	struct rig *r = ctx;

	r->msis++;
	r->msi_addr = addr;
	r->msi_data = data;
}

static struct rig *rig_new(void)
{
	struct rig *r = calloc(1, sizeof(*r));
	struct vnet_config c = {
		.irq = 10, .mem = { r, ram_read, ram_write }, .tx = tx_cb, .ctx = r,
	};

	memcpy(c.mac, MAC, 6);
	vpci_bus_init(&r->bus, irq_cb, r);
	vpci_bus_set_msi(&r->bus, msi_cb);
	assert_int_equal(vnet_init(&r->net, &c), 0);
	assert_int_equal(vpci_attach(&r->bus, &r->net.vp.fn, 1), 0);
	vpci_place_bars(&r->bus);
	/* Linux's virtio_pci_probe: pci_set_master before the driver starts */
	vpci_cfg_write(&r->net.vp.fn, PCI_COMMAND, 2,
		       vpci_cfg_read(&r->net.vp.fn, PCI_COMMAND, 2) | PCI_CMD_MASTER);
	find_caps(r);
	return r;
}

static void negotiate(struct rig *r, uint64_t features)
{
	mwr(r, r->common + 0x14, 1, 0);
	mwr(r, r->common + 0x14, 1, VIRTIO_S_ACKNOWLEDGE);
	mwr(r, r->common + 0x14, 1, VIRTIO_S_ACKNOWLEDGE | VIRTIO_S_DRIVER);
	for (unsigned int w = 0; w < 2; w++) {
		mwr(r, r->common + 0x08, 4, w);
		mwr(r, r->common + 0x0C, 4, (uint32_t)(features >> (32 * w)));
	}
	mwr(r, r->common + 0x14, 1, VIRTIO_S_ACKNOWLEDGE | VIRTIO_S_DRIVER |
				     VIRTIO_S_FEATURES_OK);
}

static void setup_queue(struct rig *r, unsigned int i, uint16_t size)
{
	struct gq *q = &r->q[i];

	q->desc = 0x10000 + 0x4000 * i;
	q->avail = q->desc + 0x1000;
	q->used = q->desc + 0x2000;
	q->avail_idx = q->used_seen = 0;
	mwr(r, r->common + 0x16, 2, i);
	assert_int_equal(mrd(r, r->common + 0x18, 2), VQ_MAX_SIZE);
	mwr(r, r->common + 0x18, 2, size);
	mwr(r, r->common + 0x20, 8, q->desc);
	mwr(r, r->common + 0x28, 4, (uint32_t)q->avail);	/* halves, as Linux */
	mwr(r, r->common + 0x2C, 4, 0);
	mwr(r, r->common + 0x30, 8, q->used);
	mwr(r, r->common + 0x1C, 2, 1);
}

/* Reset, negotiate these, two queues of QSIZE, DRIVER_OK. */
static void bring_up_with(struct rig *r, uint64_t features)
{
	negotiate(r, VIRTIO_F_VERSION_1 | features);
	assert_true(status(r) & VIRTIO_S_FEATURES_OK);
	setup_queue(r, 0, QSIZE);
	setup_queue(r, 1, QSIZE);
	mwr(r, r->common + 0x14, 1, status(r) | VIRTIO_S_DRIVER_OK);
	assert_int_equal(status(r), 0x0F);
}

static void bring_up(struct rig *r)
{
	bring_up_with(r, VIRTIO_NET_F_MAC | VIRTIO_NET_F_STATUS);
}

static void put_desc(uint8_t *d, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	put_le64(d, addr);
	put_le32(d + 8, len);
	put_le16(d + 12, flags);
	put_le16(d + 14, next);
}

static void set_desc(struct rig *r, unsigned int qi, uint16_t i, uint64_t addr, uint32_t len,
		     uint16_t flags, uint16_t next)
{
	put_desc(r->ram + r->q[qi].desc + 16 * i, addr, len, flags, next);
}

/* Offer chain head on queue qi and ring its doorbell. */
static void offer(struct rig *r, unsigned int qi, uint16_t head)
{
	struct gq *q = &r->q[qi];

	put_le16(r->ram + q->avail + 4 + 2 * (q->avail_idx % QSIZE), head);
	q->avail_idx++;
	put_le16(r->ram + q->avail + 2, q->avail_idx);
	mwr(r, r->notify + qi * r->notify_mult, 2, qi);
}

static uint16_t used_idx(struct rig *r, unsigned int qi)
{
	return get_le16(r->ram + r->q[qi].used + 2);
}

static uint32_t used_len(struct rig *r, unsigned int qi, uint16_t n)
{
	return get_le32(r->ram + r->q[qi].used + 4 + 8 * (n % QSIZE) + 4);
}

static uint32_t used_id(struct rig *r, unsigned int qi, uint16_t n)
{
	return get_le32(r->ram + r->q[qi].used + 4 + 8 * (n % QSIZE));
}

/* A frame from the guest: header and frame in two descriptors. */
static void send(struct rig *r, uint16_t slot, const uint8_t *frame, uint32_t len)
{
	uint64_t buf = TX_BUFS + 0x1000 * slot;

	memset(r->ram + buf, 0, VNET_HDR_LEN);
	memcpy(r->ram + buf + 0x100, frame, len);
	set_desc(r, 1, slot, buf, VNET_HDR_LEN, VQ_DESC_F_NEXT, (uint16_t)(slot + 1));
	set_desc(r, 1, (uint16_t)(slot + 1), buf + 0x100, len, 0, 0);
	offer(r, 1, slot);
}

/* A frame with this header (flags, gso_type, gso_size, csum_start,
 * csum_offset), from a buffer big enough for GSO (at GSO_BUF). */
#define GSO_BUF	0xC0000u

static void send_hdr(struct rig *r, uint16_t slot, const uint8_t *frame, uint32_t len,
		     uint8_t flags, uint8_t gso, uint16_t mss, uint16_t start, uint16_t off)
{
	uint8_t *h = r->ram + GSO_BUF;

	memset(h, 0, VNET_HDR_LEN);
	h[0] = flags;
	h[1] = gso;
	put_le16(h + 2, 54);
	put_le16(h + 4, mss);
	put_le16(h + 6, start);
	put_le16(h + 8, off);
	memcpy(r->ram + GSO_BUF + 0x100, frame, len);
	set_desc(r, 1, slot, GSO_BUF, VNET_HDR_LEN, VQ_DESC_F_NEXT, (uint16_t)(slot + 1));
	set_desc(r, 1, (uint16_t)(slot + 1), GSO_BUF + 0x100, len, 0, 0);
	offer(r, 1, slot);
}

/* One receive buffer of len bytes at addr, in slot, offered. */
static void post_rx_at(struct rig *r, uint16_t slot, uint64_t addr, uint32_t len)
{
	set_desc(r, 0, slot, addr, len, VQ_DESC_F_WRITE, 0);
	offer(r, 0, slot);
}

static void post_rx(struct rig *r, uint16_t slot, uint32_t len)
{
	post_rx_at(r, slot, RX_BUFS + 0x800 * slot, len);
}

/* n buffers of len bytes in slots from.., slot i at RX_BUFS + stride * i. */
static void post_rx_run(struct rig *r, uint16_t from, uint16_t n, uint32_t stride, uint32_t len)
{
	for (uint16_t i = from; i < from + n; i++)
		post_rx_at(r, i, RX_BUFS + (uint64_t)stride * i, len);
}

static void make_frame(uint8_t *f, size_t len, const uint8_t *src, uint8_t fill)
{
	memset(f, 0xFF, 6);
	memcpy(f + 6, src, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	memset(f + 14, fill, len - 14);
}

/* ---- tests ----------------------------------------------------------------- */

static void test_identity(void **state)
{
	struct rig *r = rig_new();

	(void)state;
	assert_int_equal(cfg_rd(r, 0, 4), 0x10411AF4u);
	assert_int_equal(cfg_rd(r, 8, 1), 1);				/* revision */
	assert_int_equal(cfg_rd(r, 0x0A, 2), 0x0200);			/* Ethernet */
	assert_int_equal(cfg_rd(r, 0x3D, 1), 1);			/* INTA */
	assert_int_equal(r->common - (cfg_rd(r, 0x10, 4) & ~0xFu), VIRTIO_PCI_COMMON);
	assert_int_equal(r->notify_mult, 4);
	for (unsigned int i = 0; i < 6; i++)
		assert_int_equal(mrd(r, r->devcfg + i, 1), MAC[i]);
	assert_int_equal(mrd(r, r->devcfg + 6, 2), VIRTIO_NET_S_LINK_UP);
	assert_int_equal(mrd(r, r->common + 0x12, 2), 2);		/* num_queues */
	assert_int_equal(mrd(r, r->common + 0x10, 2), 0xFFFF);		/* no MSI-X */
	free(r);
}

static void test_features(void **state)
{
	struct rig *r = rig_new();

	(void)state;
	mwr(r, r->common + 0x00, 4, 0);
	/* CSUM, GUEST_CSUM, MAC, GUEST_TSO4, HOST_TSO4, MRG_RXBUF, STATUS,
	 * and the transport's RING_INDIRECT_DESC */
	assert_int_equal(mrd(r, r->common + 0x04, 4), 1u | (1u << 1) | (1u << 5) | (1u << 7) |
							      (1u << 11) | (1u << 15) | (1u << 16) |
							      (1u << 28));
	mwr(r, r->common + 0x00, 4, 1);
	assert_int_equal(mrd(r, r->common + 0x04, 4), 1);		/* VERSION_1 */
	mwr(r, r->common + 0x00, 4, 2);
	assert_int_equal(mrd(r, r->common + 0x04, 4), 0);
	/* legacy driver (no VERSION_1): refused */
	negotiate(r, VIRTIO_NET_F_MAC);
	assert_false(status(r) & VIRTIO_S_FEATURES_OK);
	/* a feature not offered (CTRL_VQ, bit 17): refused */
	negotiate(r, VIRTIO_F_VERSION_1 | (1ull << 17));
	assert_false(status(r) & VIRTIO_S_FEATURES_OK);
	assert_int_equal(r->net.vp.stats.features_refused, 2);
	negotiate(r, VIRTIO_F_VERSION_1 | VIRTIO_NET_F_MAC);
	assert_int_equal(status(r), 0x0B);
	/* features are fixed once FEATURES_OK is set */
	mwr(r, r->common + 0x08, 4, 0);
	mwr(r, r->common + 0x0C, 4, 1u << 16);
	assert_int_equal(mrd(r, r->common + 0x0C, 4), 1u << 5);
	assert_true(virtio_pci_has(&r->net.vp, VIRTIO_NET_F_MAC));
	assert_false(virtio_pci_has(&r->net.vp, VIRTIO_NET_F_STATUS));
	/* reset clears it all */
	mwr(r, r->common + 0x14, 1, 0);
	assert_int_equal(status(r), 0);
	assert_int_equal(r->net.vp.driver_features, 0);
	free(r);
}

static void test_tx_rx(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[100], g[1518];

	(void)state;
	bring_up(r);
	make_frame(f, sizeof(f), MAC, 0xA5);
	send(r, 0, f, sizeof(f));
	assert_int_equal(r->tx_calls, 1);
	assert_int_equal(r->tx_len, sizeof(f));
	assert_memory_equal(r->tx_frame, f, sizeof(f));
	assert_int_equal(used_idx(r, 1), 1);
	assert_int_equal(used_id(r, 1, 0), 0);
	assert_int_equal(r->irq_level, 1);
	assert_int_equal(mrd(r, r->isr, 1), VIRTIO_ISR_QUEUE);
	assert_int_equal(r->irq_level, 0);
	assert_int_equal(mrd(r, r->isr, 1), 0);

	post_rx(r, 0, BUF_LEN);
	post_rx(r, 1, BUF_LEN);
	make_frame(g, sizeof(g), (const uint8_t[6]){ 2, 0, 0, 0, 0, 1 }, 0x3C);
	assert_int_equal(vnet_rx(&r->net, g, sizeof(g)), 0);
	assert_int_equal(used_idx(r, 0), 1);
	assert_int_equal(used_len(r, 0, 0), VNET_HDR_LEN + sizeof(g));
	assert_int_equal(get_le16(r->ram + RX_BUFS + 10), 1);		/* num_buffers */
	assert_int_equal(r->ram[RX_BUFS], 0);
	assert_memory_equal(r->ram + RX_BUFS + VNET_HDR_LEN, g, sizeof(g));
	assert_int_equal(r->irq_level, 1);
	assert_int_equal(vnet_rx(&r->net, f, sizeof(f)), 0);
	assert_int_equal(used_id(r, 0, 1), 1);
	assert_memory_equal(r->ram + RX_BUFS + 0x800 + VNET_HDR_LEN, f, sizeof(f));
	/* no buffer left: the frame waits, nothing is taken or dropped; the
	 * driver's next posting is noticed once */
	assert_true(vnet_rx_take_kick(&r->net));		/* the postings above */
	assert_false(vnet_rx_take_kick(&r->net));
	assert_int_equal(vnet_rx(&r->net, f, sizeof(f)), -ENOBUFS);
	assert_int_equal(r->net.stats.rx_waits, 1);
	assert_int_equal(used_idx(r, 0), 2);
	for (int i = 0; i < VNET_NR_DROP; i++)
		assert_int_equal(r->net.stats.drops[i], 0);
	assert_false(vnet_rx_take_kick(&r->net));
	post_rx(r, 2, BUF_LEN);
	assert_true(vnet_rx_take_kick(&r->net));
	assert_int_equal(vnet_rx(&r->net, g, sizeof(g)), 0);
	assert_int_equal(used_idx(r, 0), 3);
	assert_int_equal(r->net.stats.rx_frames, 3);
	assert_int_equal(r->net.stats.rx_bytes, sizeof(f) + 2 * sizeof(g));
	assert_int_equal(r->net.stats.tx_frames, 1);
	assert_int_equal(r->net.stats.tx_bytes, sizeof(f));
	assert_int_equal(status(r), 0x0F);
	free(r);
}

/* The operator pulls the cable: the guest sees its link go, and nothing
 * passes either way (each frame dropped and counted; a sent chain is still
 * returned to the driver) until it is plugged back; the state travels. */
static void test_link_down(void **state)
{
	struct rig *r = rig_new(), *r2 = rig_new();
	static uint8_t buf[4096];
	struct snap s;
	uint8_t f[64];

	(void)state;
	bring_up(r);
	make_frame(f, sizeof(f), MAC, 0x11);
	vnet_set_link(&r->net, false);
	assert_false(vnet_link_up(&r->net));
	assert_int_equal(mrd(r, r->devcfg + 6, 2), 0);
	send(r, 0, f, sizeof(f));
	assert_int_equal(r->tx_calls, 0);
	assert_int_equal(used_idx(r, 1), 1);
	assert_int_equal(r->net.stats.drops[VNET_DROP_TX_LINK_DOWN], 1);
	post_rx(r, 0, BUF_LEN);
	assert_int_equal(vnet_rx(&r->net, f, sizeof(f)), -EAGAIN);
	assert_int_equal(r->net.stats.drops[VNET_DROP_RX_LINK_DOWN], 1);
	assert_int_equal(used_idx(r, 0), 0);
	/* it moves with the guest */
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(vnet_snapshot(&r->net, &s), 0);
	snap_restore_init(&s, buf, s.pos);
	assert_int_equal(vnet_snapshot(&r2->net, &s), 0);
	assert_false(vnet_link_up(&r2->net));
	/* plugged back: both ways again */
	vnet_set_link(&r->net, true);
	assert_int_equal(mrd(r, r->devcfg + 6, 2), VIRTIO_NET_S_LINK_UP);
	send(r, 2, f, sizeof(f));
	assert_int_equal(r->tx_calls, 1);
	assert_int_equal(vnet_rx(&r->net, f, sizeof(f)), 0);
	assert_int_equal(used_idx(r, 0), 1);
	assert_int_equal(r->net.stats.drops[VNET_DROP_TX_LINK_DOWN], 1);
	assert_int_equal(r->net.stats.drops[VNET_DROP_RX_LINK_DOWN], 1);
	free(r);
	free(r2);
}

/* Many frames around the ring: indices wrap past the queue size. */
static void test_ring_wraps(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[64];

	(void)state;
	bring_up(r);
	for (unsigned int i = 0; i < 5 * QSIZE; i++) {
		make_frame(f, sizeof(f), MAC, (uint8_t)i);
		send(r, (uint16_t)(2 * (i % (QSIZE / 2))), f, sizeof(f));
		assert_int_equal(r->tx_frame[20], (uint8_t)i);
		post_rx(r, (uint16_t)(i % QSIZE), BUF_LEN);
		assert_int_equal(vnet_rx(&r->net, f, sizeof(f)), 0);
	}
	assert_int_equal(used_idx(r, 1), 5 * QSIZE);
	assert_int_equal(used_idx(r, 0), 5 * QSIZE);
	assert_int_equal(r->net.stats.tx_frames, 5 * QSIZE);
	free(r);
}

static void test_not_ready(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[64];

	(void)state;
	make_frame(f, sizeof(f), MAC, 1);
	assert_int_equal(vnet_rx(&r->net, f, sizeof(f)), -EAGAIN);
	assert_int_equal(r->net.stats.drops[VNET_DROP_RX_NOT_READY], 1);
	assert_int_equal(vnet_rx(&r->net, f, 13), -EAGAIN);
	assert_int_equal(vnet_rx(&r->net, f, 1519), -EAGAIN);
	assert_int_equal(r->net.stats.drops[VNET_DROP_RX_BAD_FRAME], 2);
	/* a doorbell before DRIVER_OK is ignored */
	negotiate(r, VIRTIO_F_VERSION_1);
	setup_queue(r, 1, QSIZE);
	send(r, 0, f, sizeof(f));
	assert_int_equal(r->tx_calls, 0);
	assert_int_equal(r->net.vp.stats.notifies_ignored, 1);
	free(r);
}

/* Bus mastering off (a kexec'ing Linux clears it and leaves the device
 * running): no frame goes into the old rings, no doorbell is served, and
 * nothing of guest memory changes, until the new driver turns it on. */
static void test_no_dma_without_bus_master(void **state)
{
	struct rig *r = rig_new();
	static uint8_t before[sizeof(r->ram)];
	uint8_t f[64];

	(void)state;
	bring_up(r);
	post_rx(r, 0, BUF_LEN);
	make_frame(f, sizeof(f), MAC, 7);
	set_desc(r, 1, 0, TX_BUFS, VNET_HDR_LEN, VQ_DESC_F_NEXT, 1);
	set_desc(r, 1, 1, TX_BUFS + 0x100, sizeof(f), 0, 0);
	cfg_wr(r, 4, 2, cfg_rd(r, 4, 2) & ~PCI_CMD_MASTER);
	memcpy(before, r->ram, sizeof(before));
	offer(r, 1, 0);				/* the doorbell: ignored */
	memcpy(before + r->q[1].avail, r->ram + r->q[1].avail, 8);	/* the offer itself */
	assert_int_equal(vnet_rx(&r->net, f, sizeof(f)), -EAGAIN);
	assert_int_equal(r->net.stats.drops[VNET_DROP_RX_NOT_READY], 1);
	vnet_tx_resume(&r->net);
	assert_int_equal(r->tx_calls, 0);
	assert_int_equal(r->net.vp.stats.notifies_ignored, 1);
	assert_memory_equal(r->ram, before, sizeof(before));
	/* on again: the next doorbell sends, the next frame goes in */
	cfg_wr(r, 4, 2, cfg_rd(r, 4, 2) | PCI_CMD_MASTER);
	mwr(r, r->notify + VIRTIO_PCI_NOTIFY_MULT * 1, 2, 1);
	assert_int_equal(r->tx_calls, 1);
	assert_int_equal(vnet_rx(&r->net, f, sizeof(f)), 0);
	assert_int_equal(used_idx(r, 0), 1);
	free(r);
}

/* A transmit queue broken by a hostile chain stops alone: frames still
 * come in through the receive queue (virtio_pci.h: the other queues go
 * on), until the driver resets the device. */
static void test_broken_queue_stops_alone(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[64];

	(void)state;
	bring_up(r);
	post_rx(r, 0, BUF_LEN);
	set_desc(r, 1, 0, TX_BUFS, VNET_HDR_LEN, VQ_DESC_F_NEXT, 1);
	set_desc(r, 1, 1, TX_BUFS + 0x100, 60, VQ_DESC_F_NEXT, 0);	/* a loop */
	offer(r, 1, 0);
	assert_true(status(r) & VIRTIO_S_NEEDS_RESET);
	make_frame(f, sizeof(f), (const uint8_t[6]){ 2, 0, 0, 0, 0, 1 }, 4);
	assert_int_equal(vnet_rx(&r->net, f, sizeof(f)), 0);
	assert_int_equal(used_idx(r, 0), 1);
	assert_memory_equal(r->ram + RX_BUFS + VNET_HDR_LEN, f, sizeof(f));
	/* the broken queue itself: its doorbell and a resume do nothing */
	mwr(r, r->notify + VIRTIO_PCI_NOTIFY_MULT * 1, 2, 1);
	vnet_tx_resume(&r->net);
	assert_int_equal(r->tx_calls, 0);
	assert_int_equal(r->net.vp.stats.queue_errors[VQ_ERR_LOOP], 1);
	free(r);
}

/* The avail ring's NO_INTERRUPT flag, INTx disable, config change. */
static void test_isr_intx(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[64];
	uint32_t cmd;

	(void)state;
	bring_up(r);
	make_frame(f, sizeof(f), MAC, 1);
	put_le16(r->ram + r->q[1].avail, VQ_AVAIL_F_NO_INTERRUPT);
	send(r, 0, f, sizeof(f));
	assert_int_equal(r->tx_calls, 1);
	assert_int_equal(r->irq_level, 0);
	assert_int_equal(mrd(r, r->isr, 1), 0);
	put_le16(r->ram + r->q[1].avail, 0);
	/* interrupt disable in the PCI command register holds the line low */
	cmd = cfg_rd(r, 4, 2);
	{
		uint32_t a = 0x80000000u | 1u << 11 | 4, v = cmd | PCI_CMD_INTX_DISABLE;

		vpci_io(&r->bus, 0xCF8, 4, false, &a);
		vpci_io(&r->bus, 0xCFC, 2, false, &v);
		send(r, 2, f, sizeof(f));
		assert_int_equal(r->irq_level, 0);
		assert_true(cfg_rd(r, 6, 2) & PCI_STATUS_INTX);
		v = cmd;
		vpci_io(&r->bus, 0xCF8, 4, false, &a);
		vpci_io(&r->bus, 0xCFC, 2, false, &v);
		assert_int_equal(r->irq_level, 1);
	}
	assert_int_equal(mrd(r, r->isr, 1), VIRTIO_ISR_QUEUE);
	/* link down: configuration change, generation moves */
	{
		uint8_t gen = (uint8_t)mrd(r, r->common + 0x15, 1);

		vnet_set_link(&r->net, false);
		assert_int_equal(mrd(r, r->devcfg + 6, 2), 0);
		assert_int_equal((uint8_t)mrd(r, r->common + 0x15, 1), (uint8_t)(gen + 1));
		assert_int_equal(r->irq_level, 1);
		assert_int_equal(mrd(r, r->isr, 1), VIRTIO_ISR_CONFIG);
		assert_int_equal(r->irq_level, 0);
	}
	free(r);
}

static void test_tx_drops(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[1600];

	(void)state;
	bring_up(r);
	make_frame(f, sizeof(f), MAC, 7);
	send(r, 0, f, 13);
	assert_int_equal(r->net.stats.drops[VNET_DROP_TX_RUNT], 1);
	send(r, 2, f, 1519);
	assert_int_equal(r->net.stats.drops[VNET_DROP_TX_OVERSIZE], 1);
	r->ram[TX_BUFS + 0x4000] = 1;				/* NEEDS_CSUM */
	set_desc(r, 1, 4, TX_BUFS + 0x4000, VNET_HDR_LEN, VQ_DESC_F_NEXT, 5);
	memcpy(r->ram + TX_BUFS + 0x4100, f, 60);
	set_desc(r, 1, 5, TX_BUFS + 0x4100, 60, 0, 0);
	offer(r, 1, 4);
	assert_int_equal(r->net.stats.drops[VNET_DROP_TX_BAD_HDR], 1);
	assert_int_equal(r->tx_calls, 0);
	assert_int_equal(used_idx(r, 1), 3);		/* every chain returned */
	send(r, 6, f, 1518);				/* the largest is fine */
	assert_int_equal(r->tx_calls, 1);
	assert_int_equal(r->tx_len, 1518);
	assert_int_equal(status(r), 0x0F);
	free(r);
}

static size_t save(struct rig *r, uint8_t *buf, size_t cap);
static int restore(struct rig *r, const uint8_t *buf, size_t len);

/* With CSUM and HOST_TSO4 negotiated, the header's requests reach tx()
 * as they are; requests outside them, or outside the spec, are dropped. */
static void test_tx_offloads(void **state)
{
	struct rig *r = rig_new();
	static uint8_t f[VNET_MAX_GSO_FRAME + 1];
	unsigned int drops = 0;

	(void)state;
	bring_up_with(r, VIRTIO_NET_F_CSUM | VIRTIO_NET_F_HOST_TSO4);
	make_frame(f, sizeof(f), MAC, 9);
	send_hdr(r, 0, f, 100, VNET_HDR_F_NEEDS_CSUM, 0, 1448, 34, 16);
	assert_int_equal(r->tx_calls, 1);
	assert_true(r->tx_off.csum);
	assert_int_equal(r->tx_off.csum_start, 34);
	assert_int_equal(r->tx_off.csum_offset, 16);
	assert_int_equal(r->tx_off.gso_size, 0);	/* no GSO: its size means nothing */
	send_hdr(r, 2, f, 60000, VNET_HDR_F_NEEDS_CSUM, VNET_HDR_GSO_TCPV4, 1448, 34, 16);
	assert_int_equal(r->tx_calls, 2);
	assert_int_equal(r->tx_len, 60000);
	assert_int_equal(r->tx_off.gso_size, 1448);
	assert_memory_equal(r->tx_frame, f, 60000);
	send_hdr(r, 4, f, VNET_MAX_GSO_FRAME, 1, 1, 1448, 34, 16);	/* the largest */
	assert_int_equal(r->tx_calls, 3);
	assert_int_equal(r->net.stats.tx_csum, 3);
	assert_int_equal(r->net.stats.tx_gso, 2);
	/* refused by the header */
	send_hdr(r, 6, f, 1000, VNET_HDR_F_NEEDS_CSUM, 0x81, 1448, 34, 16);	/* ECN */
	send_hdr(r, 8, f, 1000, VNET_HDR_F_NEEDS_CSUM, 3, 1448, 34, 16);	/* UDP */
	send_hdr(r, 10, f, 1000, VNET_HDR_F_NEEDS_CSUM, 4, 1448, 34, 16);	/* TCPv6 */
	send_hdr(r, 12, f, 1000, 0, VNET_HDR_GSO_TCPV4, 1448, 34, 16);	/* no NEEDS_CSUM */
	send_hdr(r, 14, f, 1000, VNET_HDR_F_NEEDS_CSUM, VNET_HDR_GSO_TCPV4, 0, 34, 16);
	send_hdr(r, 0, f, 1000, 2, 0, 0, 0, 0);		/* DATA_VALID is the device's */
	drops += 6;
	assert_int_equal(r->net.stats.drops[VNET_DROP_TX_BAD_HDR], drops);
	/* too long for what it asks */
	send_hdr(r, 2, f, 1519, VNET_HDR_F_NEEDS_CSUM, 0, 0, 34, 16);
	send_hdr(r, 4, f, VNET_MAX_GSO_FRAME + 1, 1, 1, 1448, 34, 16);
	assert_int_equal(r->net.stats.drops[VNET_DROP_TX_OVERSIZE], 2);
	/* the owner cannot finish it */
	r->tx_rc = -EINVAL;
	send_hdr(r, 6, f, 1000, VNET_HDR_F_NEEDS_CSUM, VNET_HDR_GSO_TCPV4, 1448, 34, 16);
	assert_int_equal(r->net.stats.drops[VNET_DROP_TX_OFFLOAD], 1);
	assert_int_equal(r->tx_calls, 4);
	assert_int_equal(r->net.stats.tx_frames, 3);
	assert_int_equal(used_idx(r, 1), 12);		/* every chain returned */
	assert_int_equal(status(r), 0x0F);
	free(r);
}

/* Receive: DATA_VALID for a frame whose checksums are known good, only
 * when the driver took GUEST_CSUM. */
static void test_rx_data_valid(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[100];

	(void)state;
	make_frame(f, sizeof(f), (const uint8_t[6]){ 2, 0, 0, 0, 0, 1 }, 0x3C);
	bring_up_with(r, VIRTIO_NET_F_GUEST_CSUM);
	post_rx(r, 0, BUF_LEN);
	post_rx(r, 1, BUF_LEN);
	assert_int_equal(vnet_rx_valid(&r->net, f, sizeof(f), true), 0);
	assert_int_equal(r->ram[RX_BUFS], VNET_HDR_F_DATA_VALID);
	assert_int_equal(vnet_rx_valid(&r->net, f, sizeof(f), false), 0);
	assert_int_equal(r->ram[RX_BUFS + 0x800], 0);
	assert_int_equal(r->net.stats.rx_valid, 1);
	bring_up(r);					/* without GUEST_CSUM */
	post_rx(r, 0, BUF_LEN);
	assert_int_equal(vnet_rx_valid(&r->net, f, sizeof(f), true), 0);
	assert_int_equal(r->ram[RX_BUFS], 0);
	assert_int_equal(r->net.stats.rx_valid, 1);
	free(r);
}

/* A super-frame (GUEST_TSO4) in pieces: one buffer of many descriptors
 * gets the header that says what it is and the pieces back to back; a
 * buffer too small takes nothing and stays for the next frame; a driver
 * without GUEST_TSO4 never gets one. */
static void test_rx_super_frame(void **state)
{
	struct rig *r = rig_new();
	static uint8_t data[3 * 1448 + 54];
	struct vnet_piece pc[4] = {
		{ data, 54 }, { data + 54, 1448 }, { data + 54 + 1448, 1448 },
		{ data + 54 + 2 * 1448, 1448 },
	};
	struct vnet_rx_frame sf = { .piece = pc, .nr = 4, .gso_size = 1448, .hdr_len = 54,
				    .segs = 3 };
	uint8_t *h = r->ram + RX_BUFS;

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 31 + (i >> 8));
	bring_up_with(r, VIRTIO_NET_F_GUEST_CSUM | VIRTIO_NET_F_GUEST_TSO4);
	assert_true(vnet_rx_gso(&r->net));
	/* Linux's big buffers: the header alone, then page-sized pieces */
	set_desc(r, 0, 0, RX_BUFS, VNET_HDR_LEN, VQ_DESC_F_WRITE | VQ_DESC_F_NEXT, 1);
	set_desc(r, 0, 1, RX_BUFS + 0x1000, 0x1000, VQ_DESC_F_WRITE | VQ_DESC_F_NEXT, 2);
	set_desc(r, 0, 2, RX_BUFS + 0x3000, 0x1000, VQ_DESC_F_WRITE, 0);
	offer(r, 0, 0);
	assert_int_equal(vnet_rx_frame(&r->net, &sf), 0);
	assert_int_equal(used_len(r, 0, 0), VNET_HDR_LEN + sizeof(data));
	assert_int_equal(h[0], VNET_HDR_F_NEEDS_CSUM);
	assert_int_equal(h[1], VNET_HDR_GSO_TCPV4);
	assert_int_equal(get_le16(h + 2), 54);			/* hdr_len */
	assert_int_equal(get_le16(h + 4), 1448);		/* gso_size */
	assert_int_equal(get_le16(h + 6), 34);			/* csum_start */
	assert_int_equal(get_le16(h + 8), 16);			/* csum_offset */
	assert_int_equal(get_le16(h + 10), 1);			/* num_buffers */
	assert_memory_equal(r->ram + RX_BUFS + 0x1000, data, 0x1000);
	assert_memory_equal(r->ram + RX_BUFS + 0x3000, data + 0x1000, sizeof(data) - 0x1000);
	assert_int_equal(r->net.stats.rx_gso, 1);
	assert_int_equal(r->net.stats.rx_gso_segs, 3);
	assert_int_equal(r->net.stats.rx_frames, 3);
	/* too small a buffer: given back untouched, and taken by a frame */
	post_rx(r, 3, BUF_LEN);
	assert_int_equal(vnet_rx_frame(&r->net, &sf), -EMSGSIZE);
	assert_int_equal(used_idx(r, 0), 1);
	assert_int_equal(r->net.stats.rx_gso_small, 1);
	assert_int_equal(vnet_rx_valid(&r->net, data, 1000, true), 0);
	assert_int_equal(used_idx(r, 0), 2);
	assert_int_equal(used_id(r, 0, 1), 3);
	assert_int_equal(r->ram[RX_BUFS + 0x800 * 3], VNET_HDR_F_DATA_VALID);
	/* lengths that lie: headers past the frame, over an IP packet */
	post_rx(r, 4, BUF_LEN);
	sf.hdr_len = (uint16_t)sizeof(data);
	assert_int_equal(vnet_rx_frame(&r->net, &sf), -EAGAIN);
	sf.hdr_len = 54;
	pc[1].len = 65536;
	assert_int_equal(vnet_rx_frame(&r->net, &sf), -EAGAIN);
	pc[1].len = 1448;
	assert_int_equal(r->net.stats.drops[VNET_DROP_RX_BAD_FRAME], 2);
	/* a driver without GUEST_TSO4 */
	bring_up_with(r, VIRTIO_NET_F_GUEST_CSUM);
	assert_false(vnet_rx_gso(&r->net));
	post_rx(r, 0, 0x8000);
	put_le16(r->ram + r->q[0].used + 2, 0);		/* the driver's fresh ring */
	assert_int_equal(vnet_rx_frame(&r->net, &sf), -EAGAIN);
	assert_int_equal(r->net.stats.drops[VNET_DROP_RX_BAD_FRAME], 3);
	assert_int_equal(used_idx(r, 0), 0);
	assert_int_equal(vnet_rx_valid(&r->net, data, 1000, true), 0);	/* the buffer is there */
	assert_int_equal(used_idx(r, 0), 1);
	free(r);
}

/* MRG_RXBUF: a frame spread over as many one-page buffers as it needs,
 * num_buffers in the first one's header, each returned with what it got;
 * too few posted: none taken (a super-frame is given back whole, a frame
 * waits) and the next frame finds them all; a first buffer
 * smaller than the header is dropped. */
static void test_rx_merged_buffers(void **state)
{
	struct rig *r = rig_new();
	static uint8_t data[10 * 1448 + 54];
	struct vnet_piece pc[2] = { { data, 54 }, { data + 54, sizeof(data) - 54 } };
	struct vnet_rx_frame sf = { .piece = pc, .nr = 2, .gso_size = 1448, .hdr_len = 54,
				    .segs = 10 };
	size_t at = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + (i >> 10));
	bring_up_with(r, VIRTIO_NET_F_GUEST_CSUM | VIRTIO_NET_F_GUEST_TSO4 |
			 VIRTIO_NET_F_MRG_RXBUF);
	/* 3 one-page buffers: not enough for 14534 + 12 bytes */
	post_rx_run(r, 0, 3, 0x1000, 0x1000);
	assert_int_equal(vnet_rx_frame(&r->net, &sf), -EMSGSIZE);
	assert_int_equal(used_idx(r, 0), 0);
	assert_int_equal(r->net.stats.rx_gso_small, 1);
	/* one more page: four buffers, the last one part full */
	post_rx_run(r, 3, 1, 0x1000, 0x1000);
	r->rx_idx_stores = 0;
	assert_int_equal(vnet_rx_frame(&r->net, &sf), 0);
	assert_int_equal(used_idx(r, 0), 4);
	/* the four published together: a driver polling on another CPU
	 * never sees the first without the rest (5.1.6.4.2) */
	assert_int_equal(r->rx_idx_stores, 1);
	assert_int_equal(get_le16(r->ram + RX_BUFS + 10), 4);		/* num_buffers */
	assert_int_equal(r->ram[RX_BUFS + 1], VNET_HDR_GSO_TCPV4);
	for (uint16_t i = 0; i < 4; i++) {
		assert_int_equal(used_id(r, 0, i), i);
		assert_int_equal(used_len(r, 0, i), i < 3 ? 0x1000 : VNET_HDR_LEN + sizeof(data) - 3 * 0x1000);
	}
	/* the frame follows the header across the pages, byte for byte */
	assert_memory_equal(r->ram + RX_BUFS + VNET_HDR_LEN, data, 0x1000 - VNET_HDR_LEN);
	at = 0x1000 - VNET_HDR_LEN;
	assert_memory_equal(r->ram + RX_BUFS + 0x1000, data + at, 0x1000);
	assert_memory_equal(r->ram + RX_BUFS + 0x3000, data + at + 0x2000, sizeof(data) - at - 0x2000);
	/* a plain frame in one buffer says 1; none left: it waits */
	post_rx_at(r, 4, RX_BUFS + 0x5000, 0x1000);
	assert_int_equal(vnet_rx_valid(&r->net, data, 1000, true), 0);
	assert_int_equal(get_le16(r->ram + RX_BUFS + 0x5000 + 10), 1);
	assert_int_equal(r->ram[RX_BUFS + 0x5000], VNET_HDR_F_DATA_VALID);
	assert_int_equal(vnet_rx_valid(&r->net, data, 1000, true), -ENOBUFS);
	assert_int_equal(r->net.stats.rx_waits, 1);
	/* a first buffer shorter than the header */
	post_rx_at(r, 5, RX_BUFS + 0x6000, 8);
	assert_int_equal(vnet_rx_valid(&r->net, data, 1000, true), -EAGAIN);
	assert_int_equal(r->net.stats.drops[VNET_DROP_RX_SMALL_BUF], 1);
	assert_int_equal(used_len(r, 0, 5), 0);
	assert_int_equal(r->net.stats.rx_gso, 1);
	assert_int_equal(r->net.stats.rx_frames, 11);
	free(r);
}

/* MRG_RXBUF with small buffers: a frame waits while the driver has posted
 * too few, goes in over all of them once it posts enough, and is dropped
 * when even the whole ring could not hold it (it would wait forever). */
static void test_rx_merged_waits(void **state)
{
	struct rig *r = rig_new();
	uint8_t data[1000];

	(void)state;
	memset(data, 0x5A, sizeof(data));
	bring_up_with(r, VIRTIO_NET_F_MRG_RXBUF);
	post_rx_run(r, 0, QSIZE - 1, 0x40, 0x40);
	(void)vnet_rx_take_kick(&r->net);
	assert_int_equal(vnet_rx_valid(&r->net, data, sizeof(data), false), -ENOBUFS);
	assert_int_equal(used_idx(r, 0), 0);
	assert_int_equal(r->net.stats.rx_waits, 1);
	post_rx_run(r, QSIZE - 1, 1, 0x40, 0x40);
	assert_true(vnet_rx_take_kick(&r->net));
	assert_int_equal(vnet_rx_valid(&r->net, data, sizeof(data), false), 0);
	assert_int_equal(used_idx(r, 0), QSIZE);
	assert_int_equal(get_le16(r->ram + RX_BUFS + 10), QSIZE);	/* num_buffers */
	assert_memory_equal(r->ram + RX_BUFS + 0x40 * (QSIZE - 1),
			    data + QSIZE * 0x40 - VNET_HDR_LEN - 0x40,
			    sizeof(data) + VNET_HDR_LEN - (QSIZE - 1) * 0x40);
	/* a whole ring of 32-byte buffers never holds it: dropped, all kept */
	post_rx_run(r, 0, QSIZE, 0x40, 0x20);
	assert_int_equal(vnet_rx_valid(&r->net, data, sizeof(data), false), -EAGAIN);
	assert_int_equal(r->net.stats.drops[VNET_DROP_RX_SMALL_BUF], 1);
	assert_int_equal(used_idx(r, 0), QSIZE);
	/* until the next doorbell the ring is not walked again: dropped too */
	assert_int_equal(vnet_rx_valid(&r->net, data, 40, false), -EAGAIN);
	assert_int_equal(r->net.stats.drops[VNET_DROP_RX_SMALL_BUF], 2);
	mwr(r, r->notify, 2, 0);
	assert_int_equal(vnet_rx_valid(&r->net, data, 40, false), 0);	/* 52 bytes: 2 of them */
	assert_int_equal(used_idx(r, 0), QSIZE + 2);
	assert_int_equal(r->net.stats.rx_waits, 1);
	free(r);
}

/* A driver that keeps posting 1-byte buffers from another CPU while a
 * frame goes in: the device takes at most a ring's worth (its list of
 * buffers for one frame has room for no more) and drops the frame. */
static void test_rx_merged_racing_driver(void **state)
{
	struct rig *r = rig_new();
	uint8_t data[1000];

	(void)state;
	memset(data, 0x5A, sizeof(data));
	bring_up_with(r, VIRTIO_NET_F_MRG_RXBUF);
	post_rx_run(r, 0, 4, 0x1000, 12);
	r->racer = 2000;
	assert_int_equal(vnet_rx_valid(&r->net, data, sizeof(data), false), -EAGAIN);
	assert_int_equal(r->net.stats.drops[VNET_DROP_RX_SMALL_BUF], 1);
	assert_int_equal(used_idx(r, 0), 0);
	assert_true(r->racer > 2000 - 2 * QSIZE);
	assert_int_equal(r->net.vp.vq[VNET_RXQ].err, VQ_OK);
	free(r);
}

/* Offloads not negotiated are refused: GSO with CSUM alone, and both
 * with neither. */
static void test_tx_offloads_not_negotiated(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[1000];

	(void)state;
	bring_up_with(r, VIRTIO_NET_F_CSUM);
	make_frame(f, sizeof(f), MAC, 9);
	send_hdr(r, 0, f, sizeof(f), VNET_HDR_F_NEEDS_CSUM, VNET_HDR_GSO_TCPV4, 536, 34, 16);
	assert_int_equal(r->net.stats.drops[VNET_DROP_TX_BAD_HDR], 1);
	send_hdr(r, 2, f, sizeof(f), VNET_HDR_F_NEEDS_CSUM, 0, 0, 34, 16);
	assert_int_equal(r->tx_calls, 1);
	bring_up(r);
	send_hdr(r, 0, f, sizeof(f), VNET_HDR_F_NEEDS_CSUM, 0, 0, 34, 16);
	assert_int_equal(r->net.stats.drops[VNET_DROP_TX_BAD_HDR], 2);
	assert_int_equal(r->tx_calls, 1);
	free(r);
}

/* tx() without room: the chain stays the driver's, in the queue, and the
 * device stops there; later doorbells add behind it; vnet_tx_resume takes
 * them all, in order.  The waiting chain survives a snapshot. */
static void test_tx_stall(void **state)
{
	struct rig *r = rig_new(), *b = rig_new();
	uint8_t f[80], buf[4096];
	size_t n;

	(void)state;
	bring_up(r);
	make_frame(f, sizeof(f), MAC, 1);
	r->tx_rc = -EAGAIN;
	send(r, 0, f, sizeof(f));
	assert_true(vnet_tx_stalled(&r->net));
	assert_int_equal(used_idx(r, 1), 0);
	assert_int_equal(r->net.stats.tx_stalls, 1);
	assert_int_equal(r->net.stats.tx_frames, 0);
	f[20] = 2;
	send(r, 2, f, sizeof(f));
	assert_int_equal(r->tx_frame[20], 1);		/* the first, again */
	assert_int_equal(used_idx(r, 1), 0);
	/* saved while it waits: the destination takes both */
	n = save(r, buf, sizeof(buf));
	memcpy(b->ram, r->ram, RAM_SIZE);
	memcpy(b->q, r->q, sizeof(r->q));
	assert_int_equal(restore(b, buf, n), 0);
	vnet_tx_resume(&b->net);
	assert_int_equal(b->tx_calls, 2);
	assert_int_equal(b->tx_frame[20], 2);
	assert_int_equal(used_idx(b, 1), 2);
	assert_int_equal(used_id(b, 1, 0), 0);
	assert_int_equal(used_id(b, 1, 1), 2);
	/* and the source, once it has room */
	r->tx_rc = 0;
	vnet_tx_resume(&r->net);
	assert_false(vnet_tx_stalled(&r->net));
	assert_int_equal(used_idx(r, 1), 2);
	assert_int_equal(r->net.stats.tx_frames, 2);
	assert_int_equal(r->tx_frame[20], 2);
	vnet_tx_resume(&r->net);			/* nothing waits: nothing */
	assert_int_equal(used_idx(r, 1), 2);
	/* a reset forgets the stall */
	r->tx_rc = -EAGAIN;
	send(r, 4, f, sizeof(f));
	assert_true(vnet_tx_stalled(&r->net));
	mwr(r, r->common + 0x14, 1, 0);
	assert_false(vnet_tx_stalled(&r->net));
	free(r);
	free(b);
}

/* ---- MSI-X ----------------------------------------------------------------- */

/* Message control: enable (bit 15) and function mask (bit 14). */
static void msix_ctl(struct rig *r, bool enable, bool fn_mask)
{
	cfg_wr(r, r->msix_cap + 2, 2, (enable ? 0x8000u : 0) | (fn_mask ? 0x4000u : 0));
}

static void msix_entry(struct rig *r, unsigned int v, uint32_t addr, uint32_t data, bool masked)
{
	mwr(r, r->msix_table + 16 * v, 4, addr);
	mwr(r, r->msix_table + 16 * v + 4, 4, 0);
	mwr(r, r->msix_table + 16 * v + 8, 4, data);
	mwr(r, r->msix_table + 16 * v + 12, 4, masked);
}

/* The driver gives vectors as Linux's virtio_pci does: config 0, rx 1,
 * tx 2; each queue's used buffers then send its message, INTx and the
 * ISR's queue bit stay clear; masks hold messages pending. */
static void test_msix(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[64];

	(void)state;
	/* three vectors (two queues and the configuration), all masked at reset */
	assert_int_equal(cfg_rd(r, r->msix_cap + 2, 2), 2);
	for (unsigned int v = 0; v < 3; v++)
		assert_int_equal(mrd(r, r->msix_table + 16 * v + 12, 4), 1);
	bring_up(r);
	msix_ctl(r, true, true);
	mwr(r, r->common + 0x10, 2, 0);			/* msix_config */
	assert_int_equal(mrd(r, r->common + 0x10, 2), 0);
	for (unsigned int q = 0; q < 2; q++) {
		mwr(r, r->common + 0x16, 2, q);
		mwr(r, r->common + 0x1A, 2, q + 1);
		assert_int_equal(mrd(r, r->common + 0x1A, 2), q + 1);
	}
	mwr(r, r->common + 0x1A, 2, 3);			/* past the table: none */
	assert_int_equal(mrd(r, r->common + 0x1A, 2), VIRTIO_NO_VECTOR);
	mwr(r, r->common + 0x1A, 2, 2);
	for (unsigned int v = 0; v < 3; v++)
		msix_entry(r, v, 0xFEE00000u, 0x40 + v, false);
	cfg_wr(r, 4, 2, cfg_rd(r, 4, 2) | PCI_CMD_MASTER);
	msix_ctl(r, true, false);
	assert_int_equal(r->msis, 0);
	make_frame(f, sizeof(f), MAC, 1);
	send(r, 0, f, sizeof(f));
	assert_int_equal(r->msis, 1);
	assert_int_equal(r->msi_addr, 0xFEE00000u);
	assert_int_equal(r->msi_data, 0x42);		/* tx: vector 2 */
	assert_int_equal(r->irq_level, 0);		/* no INTx */
	assert_int_equal(mrd(r, r->isr, 1), 0);
	post_rx(r, 0, BUF_LEN);
	assert_int_equal(vnet_rx(&r->net, f, sizeof(f)), 0);
	assert_int_equal(r->msi_data, 0x41);
	vnet_set_link(&r->net, false);			/* configuration change */
	assert_int_equal(r->msis, 3);
	assert_int_equal(r->msi_data, 0x40);
	/* a masked entry holds its message pending until unmasked */
	mwr(r, r->msix_table + 16 * 2 + 12, 4, 1);
	send(r, 2, f, sizeof(f));
	assert_int_equal(r->msis, 3);
	assert_int_equal(mrd(r, r->msix_pba, 4), 1u << 2);
	mwr(r, r->msix_table + 16 * 2 + 12, 4, 0);
	assert_int_equal(r->msis, 4);
	assert_int_equal(r->msi_data, 0x42);
	assert_int_equal(mrd(r, r->msix_pba, 4), 0);
	/* so does the function mask, and a function that is not bus master */
	msix_ctl(r, true, true);
	send(r, 4, f, sizeof(f));
	cfg_wr(r, 4, 2, cfg_rd(r, 4, 2) & ~PCI_CMD_MASTER);
	msix_ctl(r, true, false);
	assert_int_equal(r->msis, 4);
	assert_int_equal(mrd(r, r->msix_pba, 4), 1u << 2);
	cfg_wr(r, 4, 2, cfg_rd(r, 4, 2) | PCI_CMD_MASTER);
	assert_int_equal(r->msis, 5);
	/* the PBA is read-only; the table takes qwords; NO_VECTOR sends none */
	mwr(r, r->msix_pba, 4, 0xFF);
	assert_int_equal(mrd(r, r->msix_pba, 4), 0);
	mwr(r, r->msix_table + 16, 8, 0x00000001FEE01003ull);
	assert_int_equal(mrd(r, r->msix_table + 16, 8), 0x00000001FEE01000ull);
	mwr(r, r->common + 0x16, 2, 1);
	mwr(r, r->common + 0x1A, 2, VIRTIO_NO_VECTOR);
	send(r, 6, f, sizeof(f));
	assert_int_equal(r->msis, 5);
	/* MSI-X off: INTx again */
	msix_ctl(r, false, false);
	send(r, 8, f, sizeof(f));
	assert_int_equal(r->irq_level, 1);
	assert_int_equal(mrd(r, r->isr, 1), VIRTIO_ISR_QUEUE | VIRTIO_ISR_CONFIG);
	/* a message held by a mask when the driver resets the device: the
	 * reset takes its cause away, so no stale message once unmasked */
	msix_ctl(r, true, false);
	mwr(r, r->common + 0x1A, 2, 2);			/* tx: vector 2 again */
	mwr(r, r->msix_table + 16 * 2 + 12, 4, 1);
	send(r, 10, f, sizeof(f));
	assert_int_equal(mrd(r, r->msix_pba, 4), 1u << 2);
	/* a reset forgets the vectors and what was pending, not the table */
	mwr(r, r->common + 0x14, 1, 0);
	assert_int_equal(mrd(r, r->common + 0x10, 2), VIRTIO_NO_VECTOR);
	assert_int_equal(mrd(r, r->msix_table + 8, 4), 0x40);
	assert_int_equal(mrd(r, r->msix_pba, 4), 0);
	mwr(r, r->msix_table + 16 * 2 + 12, 4, 0);
	assert_int_equal(r->msis, 5);
	free(r);
}

/* MSI-X state travels: vectors, table and pending bits; a restore sends
 * nothing, and lies about vectors or entries are refused. */
static void test_msix_snapshot(void **state)
{
	struct rig *a = rig_new(), *b = rig_new();
	uint8_t buf[4096], f[64];
	size_t n;

	(void)state;
	bring_up(a);
	msix_ctl(a, true, false);
	cfg_wr(a, 4, 2, cfg_rd(a, 4, 2) | PCI_CMD_MASTER);
	mwr(a, a->common + 0x16, 2, 1);
	mwr(a, a->common + 0x1A, 2, 2);
	msix_entry(a, 2, 0xFEE00000u, 0x55, true);
	make_frame(f, sizeof(f), MAC, 1);
	send(a, 0, f, sizeof(f));
	assert_int_equal(mrd(a, a->msix_pba, 4), 1u << 2);
	n = save(a, buf, sizeof(buf));
	memcpy(b->ram, a->ram, RAM_SIZE);
	memcpy(b->q, a->q, sizeof(a->q));
	assert_int_equal(restore(b, buf, n), 0);
	assert_int_equal(b->msis, 0);
	assert_int_equal(b->irq_level, 0);
	assert_int_equal(mrd(b, b->msix_pba, 4), 1u << 2);
	mwr(b, b->msix_table + 16 * 2 + 12, 4, 0);	/* unmask: the held message goes */
	assert_int_equal(b->msis, 1);
	assert_int_equal(b->msi_data, 0x55);
	free(a);
	free(b);
}

static void test_rx_small_buffer(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[200];

	(void)state;
	bring_up(r);
	make_frame(f, sizeof(f), MAC, 9);
	post_rx(r, 0, 100);
	assert_int_equal(vnet_rx(&r->net, f, sizeof(f)), -EAGAIN);
	assert_int_equal(r->net.stats.drops[VNET_DROP_RX_SMALL_BUF], 1);
	assert_int_equal(used_idx(r, 0), 1);
	assert_int_equal(used_len(r, 0, 0), 0);
	/* scattered over three writable pieces */
	set_desc(r, 0, 1, RX_BUFS + 0x1000, 12, VQ_DESC_F_WRITE | VQ_DESC_F_NEXT, 2);
	set_desc(r, 0, 2, RX_BUFS + 0x2000, 50, VQ_DESC_F_WRITE | VQ_DESC_F_NEXT, 3);
	set_desc(r, 0, 3, RX_BUFS + 0x3000, 500, VQ_DESC_F_WRITE, 0);
	offer(r, 0, 1);
	assert_int_equal(vnet_rx(&r->net, f, sizeof(f)), 0);
	assert_memory_equal(r->ram + RX_BUFS + 0x2000, f, 50);
	assert_memory_equal(r->ram + RX_BUFS + 0x3000, f + 50, sizeof(f) - 50);
	assert_int_equal(used_len(r, 0, 1), VNET_HDR_LEN + sizeof(f));
	free(r);
}

/* ---- hostile descriptors -------------------------------------------------- */

/* After a hostile chain: NEEDS_RESET, the reason counted, config
 * interrupt, nothing sent, the queue dead until a reset; a reset and a
 * new bring-up work again. */
static void expect_broken(struct rig *r, unsigned int qi, enum vq_err why)
{
	uint8_t f[64];

	assert_int_equal(r->net.vp.vq[qi].err, why);
	assert_int_equal(r->net.vp.stats.queue_errors[why], 1);
	assert_true(status(r) & VIRTIO_S_NEEDS_RESET);
	assert_true(mrd(r, r->isr, 1) & VIRTIO_ISR_CONFIG);
	assert_int_equal(r->tx_calls, 0);
	bring_up(r);
	make_frame(f, sizeof(f), MAC, 3);
	send(r, 0, f, sizeof(f));
	assert_int_equal(r->tx_calls, 1);
}

static void test_hostile_loop(void **state)
{
	struct rig *r = rig_new();

	(void)state;
	bring_up(r);
	set_desc(r, 1, 0, TX_BUFS, VNET_HDR_LEN, VQ_DESC_F_NEXT, 1);
	set_desc(r, 1, 1, TX_BUFS + 0x100, 60, VQ_DESC_F_NEXT, 0);	/* back to 0 */
	offer(r, 1, 0);
	expect_broken(r, 1, VQ_ERR_LOOP);
	free(r);
}

/* A chain that uses every descriptor once is fine; it is the longest. */
static void test_longest_chain(void **state)
{
	struct rig *r = rig_new();

	(void)state;
	bring_up(r);
	memset(r->ram + TX_BUFS, 0, 0x1000);
	for (uint16_t i = 0; i < QSIZE; i++)
		set_desc(r, 1, i, TX_BUFS + (i ? 8 + 4u * i : 0), i ? 4 : 12,
			 i < QSIZE - 1 ? VQ_DESC_F_NEXT : 0, (uint16_t)(i + 1));
	offer(r, 1, 0);
	assert_int_equal(r->tx_calls, 1);
	assert_int_equal(r->tx_len, 4 * (QSIZE - 1));
	assert_int_equal(r->net.vp.vq[1].err, VQ_OK);
	free(r);
}

static void test_hostile_past_ram(void **state)
{
	struct rig *r = rig_new();

	(void)state;
	bring_up(r);
	set_desc(r, 1, 0, TX_BUFS, VNET_HDR_LEN, VQ_DESC_F_NEXT, 1);
	set_desc(r, 1, 1, RAM_SIZE - 20, 60, 0, 0);	/* runs past the end */
	offer(r, 1, 0);
	expect_broken(r, 1, VQ_ERR_BUF);
	free(r);
}

static void test_hostile_wrapping_addr(void **state)
{
	struct rig *r = rig_new();

	(void)state;
	bring_up(r);
	set_desc(r, 1, 0, 0xFFFFFFFFFFFFFFF0ull, 0x100, 0, 0);	/* wraps to 0 */
	offer(r, 1, 0);
	expect_broken(r, 1, VQ_ERR_BUF);
	free(r);
}

static void test_hostile_rx_past_ram(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[64];

	(void)state;
	bring_up(r);
	make_frame(f, sizeof(f), MAC, 1);
	post_rx_at(r, 0, RAM_SIZE - 8, 200);
	assert_int_equal(vnet_rx(&r->net, f, sizeof(f)), -EAGAIN);
	assert_int_equal(r->net.stats.drops[VNET_DROP_RX_QUEUE], 1);
	expect_broken(r, 0, VQ_ERR_BUF);
	free(r);
}

static void test_hostile_index_jump(void **state)
{
	struct rig *r = rig_new();

	(void)state;
	bring_up(r);
	put_le16(r->ram + r->q[1].avail + 2, QSIZE + 1);
	mwr(r, r->notify + 4, 2, 1);
	/* what the operator's `info` shows: which queue, the two indices */
	assert_int_equal(r->net.vp.stats.last_error.err, VQ_ERR_IDX);
	assert_int_equal(r->net.vp.stats.last_error.queue, 1);
	assert_int_equal(r->net.vp.stats.last_error.avail, QSIZE + 1);
	assert_int_equal(r->net.vp.stats.last_error.last_avail, 0);
	expect_broken(r, 1, VQ_ERR_IDX);
	free(r);
}

/* What a migration's destination checks once memory and device state
 * are in: the rings' indices in memory against the device's.  A driver
 * one ring ahead is fine (it posted, the device has not looked yet); a
 * ring page older than the device state is not, nor is a used index
 * other than the one the device published. */
static void test_rings_checked_against_memory(void **state)
{
	struct rig *r = rig_new();
	char why[160] = "";

	(void)state;
	assert_int_equal(virtio_pci_check_mem(&r->net.vp, why, sizeof(why)), 0);	/* no queue yet */
	bring_up(r);
	assert_int_equal(virtio_pci_check_mem(&r->net.vp, why, sizeof(why)), 0);
	put_le16(r->ram + r->q[0].avail + 2, QSIZE);		/* a full ring posted */
	assert_int_equal(virtio_pci_check_mem(&r->net.vp, why, sizeof(why)), 0);
	r->net.vp.vq[0].last_avail = r->net.vp.vq[0].used_idx = 3;	/* stale page: 0 */
	put_le16(r->ram + r->q[0].used + 2, 3);
	put_le16(r->ram + r->q[0].avail + 2, 0);
	assert_int_equal(virtio_pci_check_mem(&r->net.vp, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "queue 0: memory has avail index 0, used index 3; "
			    "the device took 3 and used 3");
	put_le16(r->ram + r->q[0].avail + 2, 3);
	assert_int_equal(virtio_pci_check_mem(&r->net.vp, why, sizeof(why)), 0);
	put_le16(r->ram + r->q[1].used + 2, 1);			/* not what it published */
	assert_int_equal(virtio_pci_check_mem(&r->net.vp, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "queue 1: "));
	put_le16(r->ram + r->q[1].used + 2, 0);
	assert_int_equal(virtio_pci_check_mem(&r->net.vp, why, sizeof(why)), 0);
	/* rings a peer put outside RAM (a queue restored, never enabled
	 * here): the descriptor table, or an avail ring whose index can be
	 * read but whose entries cannot */
	{
		struct vq keep = r->net.vp.vq[1];

		r->net.vp.vq[1].desc = RAM_SIZE - 16;
		assert_int_equal(virtio_pci_check_mem(&r->net.vp, why, sizeof(why)), -EINVAL);
		assert_string_equal(why, "queue 1: its rings cannot be read");
		r->net.vp.vq[1] = keep;
		r->net.vp.vq[1].avail = RAM_SIZE - 4;
		assert_int_equal(virtio_pci_check_mem(&r->net.vp, why, sizeof(why)), -EINVAL);
		r->net.vp.vq[1] = keep;
	}
	/* a broken queue is the guest's own doing: nothing to check */
	r->net.vp.vq[1].err = VQ_ERR_IDX;
	assert_int_equal(virtio_pci_check_mem(&r->net.vp, why, sizeof(why)), 0);
	free(r);
}

static void test_hostile_head(void **state)
{
	struct rig *r = rig_new();

	(void)state;
	bring_up(r);
	offer(r, 1, QSIZE);			/* head past the table */
	expect_broken(r, 1, VQ_ERR_HEAD);
	free(r);
}

static void test_hostile_next(void **state)
{
	struct rig *r = rig_new();

	(void)state;
	bring_up(r);
	set_desc(r, 1, 0, TX_BUFS, VNET_HDR_LEN, VQ_DESC_F_NEXT, 0xFFFF);
	offer(r, 1, 0);
	expect_broken(r, 1, VQ_ERR_NEXT);
	free(r);
}

static void test_hostile_flags(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[64];

	(void)state;
	bring_up(r);
	set_desc(r, 1, 0, TX_BUFS, 0x100, VQ_DESC_F_INDIRECT, 0);
	offer(r, 1, 0);
	expect_broken(r, 1, VQ_ERR_INDIRECT);
	/* a writable buffer on the transmit queue */
	set_desc(r, 1, 2, TX_BUFS, 0x100, VQ_DESC_F_WRITE, 0);
	offer(r, 1, 2);
	assert_int_equal(r->net.vp.vq[1].err, VQ_ERR_DIR);
	/* readable after writable on the receive queue */
	bring_up(r);
	set_desc(r, 0, 0, RX_BUFS, 12, VQ_DESC_F_WRITE | VQ_DESC_F_NEXT, 1);
	set_desc(r, 0, 1, RX_BUFS + 0x100, 100, 0, 0);
	offer(r, 0, 0);
	make_frame(f, sizeof(f), MAC, 1);
	assert_int_equal(vnet_rx(&r->net, f, sizeof(f)), -EAGAIN);
	assert_int_equal(r->net.vp.vq[0].err, VQ_ERR_ORDER);
	free(r);
}

/* Queue set-up the device refuses at enable time. */
/* ---- indirect descriptors ------------------------------------------------ */

#define IND_TABLE	0xE8000u	/* an indirect table: up to 257 entries */

static void bring_up_indirect(struct rig *r)
{
	bring_up_with(r, VIRTIO_F_RING_INDIRECT_DESC | VIRTIO_NET_F_MAC | VIRTIO_NET_F_STATUS);
}

/* Entry i of the indirect table at IND_TABLE. */
static void set_ind(struct rig *r, uint16_t i, uint64_t addr, uint32_t len, uint16_t flags,
		    uint16_t next)
{
	put_desc(r->ram + IND_TABLE + 16 * i, addr, len, flags, next);
}

/* Slot slot of queue qi points at the table's first n entries; offered. */
static void offer_table(struct rig *r, unsigned int qi, uint16_t slot, uint32_t n,
			uint16_t flags)
{
	set_desc(r, qi, slot, IND_TABLE, 16 * n, VQ_DESC_F_INDIRECT | flags, 0);
	offer(r, qi, slot);
}

/* Frames go out of and into indirect tables as Linux builds them: the
 * header and the frame in one table, a direct header before a table, a
 * receive table whose own descriptor says nothing of direction. */
static void test_indirect(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[90], g[70];

	(void)state;
	bring_up_indirect(r);
	assert_true(r->net.vp.vq[VNET_TXQ].indirect && r->net.vp.vq[VNET_RXQ].indirect);
	make_frame(f, sizeof(f), MAC, 1);
	memset(r->ram + TX_BUFS, 0, VNET_HDR_LEN);
	memcpy(r->ram + TX_BUFS + 0x100, f, 30);
	memcpy(r->ram + TX_BUFS + 0x200, f + 30, sizeof(f) - 30);
	set_ind(r, 0, TX_BUFS, VNET_HDR_LEN, VQ_DESC_F_NEXT, 2);	/* out of order */
	set_ind(r, 2, TX_BUFS + 0x100, 30, VQ_DESC_F_NEXT, 1);
	set_ind(r, 1, TX_BUFS + 0x200, sizeof(f) - 30, 0, 0);
	offer_table(r, VNET_TXQ, 3, 3, 0);
	assert_int_equal(r->tx_calls, 1);
	assert_int_equal(r->tx_len, sizeof(f));
	assert_memory_equal(r->tx_frame, f, sizeof(f));
	assert_int_equal(used_id(r, VNET_TXQ, 0), 3);
	/* a direct header, then a table with the frame */
	set_desc(r, VNET_TXQ, 5, TX_BUFS, VNET_HDR_LEN, VQ_DESC_F_NEXT, 6);
	set_desc(r, VNET_TXQ, 6, IND_TABLE, 16, VQ_DESC_F_INDIRECT, 0);
	set_ind(r, 0, TX_BUFS + 0x100, sizeof(f), 0, 0);
	memcpy(r->ram + TX_BUFS + 0x100, f, sizeof(f));
	offer(r, VNET_TXQ, 5);
	assert_int_equal(r->tx_calls, 2);
	assert_memory_equal(r->tx_frame, f, sizeof(f));
	assert_int_equal(used_id(r, VNET_TXQ, 1), 5);
	/* receive: header and frame buffers in a table; the WRITE flag of the
	 * descriptor that points at it means nothing */
	set_ind(r, 0, RX_BUFS, VNET_HDR_LEN, VQ_DESC_F_WRITE | VQ_DESC_F_NEXT, 1);
	set_ind(r, 1, RX_BUFS + 0x100, 0x600, VQ_DESC_F_WRITE, 0);
	offer_table(r, VNET_RXQ, 0, 2, VQ_DESC_F_WRITE);
	make_frame(g, sizeof(g), MAC, 2);
	assert_int_equal(vnet_rx(&r->net, g, sizeof(g)), 0);
	assert_int_equal(used_len(r, VNET_RXQ, 0), VNET_HDR_LEN + sizeof(g));
	assert_memory_equal(r->ram + RX_BUFS + 0x100, g, sizeof(g));
	assert_int_equal(r->net.vp.vq[VNET_TXQ].err, VQ_OK);
	assert_int_equal(r->net.vp.vq[VNET_RXQ].err, VQ_OK);
	free(r);
}

/* A table may hold VQ_MAX_SIZE buffers, more than the queue has slots;
 * one buffer more in the chain is refused. */
static void test_indirect_longest(void **state)
{
	struct rig *r = rig_new();

	(void)state;
	bring_up_indirect(r);
	memset(r->ram + TX_BUFS, 0, 0x1000);
	for (uint16_t i = 0; i < VQ_MAX_SIZE; i++)
		set_ind(r, i, TX_BUFS + (i ? 8 + 4u * i : 0), i ? 4 : 12,
			i < VQ_MAX_SIZE - 1 ? VQ_DESC_F_NEXT : 0, (uint16_t)(i + 1));
	offer_table(r, VNET_TXQ, 0, VQ_MAX_SIZE, 0);
	assert_int_equal(r->tx_calls, 1);
	assert_int_equal(r->tx_len, 4 * (VQ_MAX_SIZE - 1));
	assert_int_equal(r->net.vp.vq[VNET_TXQ].err, VQ_OK);
	/* the same table after a direct header: VQ_MAX_SIZE + 1 buffers */
	set_desc(r, VNET_TXQ, 1, TX_BUFS, VNET_HDR_LEN, VQ_DESC_F_NEXT, 2);
	set_desc(r, VNET_TXQ, 2, IND_TABLE, 16 * VQ_MAX_SIZE, VQ_DESC_F_INDIRECT, 0);
	offer(r, VNET_TXQ, 1);
	assert_int_equal(r->net.vp.vq[VNET_TXQ].err, VQ_ERR_LOOP);
	free(r);
}

/* A receive ring of indirect tables full of empty buffers: a frame reads
 * a ring's worth of descriptors at most before it is dropped, not every
 * table (delivery holds a lock all guests' frames share), and the queue
 * keeps working. */
static void test_rx_merged_empty_tables(void **state)
{
	struct rig *r = rig_new();
	uint8_t data[1000];

	(void)state;
	memset(data, 0x5A, sizeof(data));
	bring_up_with(r, VIRTIO_F_RING_INDIRECT_DESC | VIRTIO_NET_F_MRG_RXBUF);
	for (uint16_t i = 0; i < VQ_MAX_SIZE; i++)
		set_ind(r, i, RX_BUFS, 0, VQ_DESC_F_WRITE | (i + 1 < VQ_MAX_SIZE ? VQ_DESC_F_NEXT : 0),
			(uint16_t)(i + 1));
	post_rx(r, 0, VNET_HDR_LEN);			/* room for the header only */
	for (uint16_t s = 1; s < QSIZE; s++)
		offer_table(r, VNET_RXQ, s, VQ_MAX_SIZE, VQ_DESC_F_WRITE);
	r->reads = 0;
	assert_int_equal(vnet_rx_valid(&r->net, data, sizeof(data), false), -EAGAIN);
	assert_int_equal(r->net.stats.drops[VNET_DROP_RX_SMALL_BUF], 1);
	assert_true(r->reads < 2 * VQ_MAX_SIZE);
	assert_int_equal(used_idx(r, VNET_RXQ), 0);
	assert_int_equal(r->net.vp.vq[VNET_RXQ].err, VQ_OK);
	free(r);
}

/* Each malformed table stops the queue with its reason, and nothing is
 * sent; a fresh bring-up (expect_broken) works again. */
static void test_hostile_indirect(void **state)
{
	static const struct {
		uint32_t table_len;
		uint16_t flags;		/* of the descriptor pointing at it */
		uint64_t table;
		enum vq_err why;
	} bad[] = {
		{ 32, VQ_DESC_F_NEXT, IND_TABLE, VQ_ERR_INDIRECT },	/* with NEXT */
		{ 0, 0, IND_TABLE, VQ_ERR_INDIRECT },			/* empty */
		{ 40, 0, IND_TABLE, VQ_ERR_INDIRECT },			/* not n * 16 */
		{ 16 * (VQ_MAX_SIZE + 1), 0, IND_TABLE, VQ_ERR_INDIRECT },	/* too big */
		{ 32, 0, RAM_SIZE - 16, VQ_ERR_BUF },			/* past RAM */
	};
	struct rig *r = rig_new();

	(void)state;
	for (unsigned int k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		bring_up_indirect(r);
		r->tx_calls = 0;
		memset(r->net.vp.stats.queue_errors, 0, sizeof(r->net.vp.stats.queue_errors));
		set_ind(r, 0, TX_BUFS, VNET_HDR_LEN, VQ_DESC_F_NEXT, 1);
		set_ind(r, 1, TX_BUFS + 0x100, 60, 0, 0);
		set_desc(r, VNET_TXQ, 0, bad[k].table, bad[k].table_len,
			 VQ_DESC_F_INDIRECT | bad[k].flags, 1);
		offer(r, VNET_TXQ, 0);
		expect_broken(r, VNET_TXQ, bad[k].why);
	}
	/* not negotiated: the device never follows a table */
	r->tx_calls = 0;
	memset(r->net.vp.stats.queue_errors, 0, sizeof(r->net.vp.stats.queue_errors));
	bring_up(r);
	assert_false(r->net.vp.vq[VNET_TXQ].indirect);
	offer_table(r, VNET_TXQ, 0, 2, 0);
	expect_broken(r, VNET_TXQ, VQ_ERR_INDIRECT);
	/* inside the table: a nested table, a loop, a next past the table,
	 * a buffer past RAM */
	static const struct {
		uint16_t flags1, next1;
		uint64_t addr1;
		enum vq_err why;
	} inner[] = {
		{ VQ_DESC_F_INDIRECT, 0, IND_TABLE, VQ_ERR_INDIRECT },
		{ VQ_DESC_F_NEXT, 0, TX_BUFS + 0x100, VQ_ERR_LOOP },
		{ VQ_DESC_F_NEXT, 2, TX_BUFS + 0x100, VQ_ERR_NEXT },
		{ 0, 0, RAM_SIZE - 8, VQ_ERR_BUF },
	};
	for (unsigned int k = 0; k < sizeof(inner) / sizeof(inner[0]); k++) {
		bring_up_indirect(r);
		r->tx_calls = 0;
		memset(r->net.vp.stats.queue_errors, 0, sizeof(r->net.vp.stats.queue_errors));
		set_ind(r, 0, TX_BUFS, VNET_HDR_LEN, VQ_DESC_F_NEXT, 1);
		set_ind(r, 1, inner[k].addr1, 60, inner[k].flags1, inner[k].next1);
		offer_table(r, VNET_TXQ, 0, 2, 0);
		expect_broken(r, VNET_TXQ, inner[k].why);
	}
	free(r);
}

/* Readable after writable holds across a direct prefix and its table. */
static void test_hostile_indirect_order(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[64];

	(void)state;
	bring_up_indirect(r);
	set_desc(r, VNET_RXQ, 0, RX_BUFS, VNET_HDR_LEN, VQ_DESC_F_WRITE | VQ_DESC_F_NEXT, 1);
	set_desc(r, VNET_RXQ, 1, IND_TABLE, 16, VQ_DESC_F_INDIRECT, 0);
	set_ind(r, 0, RX_BUFS + 0x100, 0x600, 0, 0);			/* readable */
	offer(r, VNET_RXQ, 0);
	make_frame(f, sizeof(f), MAC, 1);
	assert_int_equal(vnet_rx(&r->net, f, sizeof(f)), -EAGAIN);
	assert_int_equal(r->net.vp.vq[VNET_RXQ].err, VQ_ERR_ORDER);
	free(r);
}

/* Whether the queues follow tables is the negotiated features', and a
 * restored device has them from the snapshot. */
static void test_indirect_snapshot(void **state);

static void test_hostile_queue_setup(void **state)
{
	struct rig *r = rig_new();

	(void)state;
	negotiate(r, VIRTIO_F_VERSION_1);
	setup_queue(r, 1, 12);			/* not a power of two */
	assert_int_equal(r->net.vp.vq[1].err, VQ_ERR_SIZE);
	assert_false(r->net.vp.vq[1].ready);
	assert_true(status(r) & VIRTIO_S_NEEDS_RESET);
	negotiate(r, VIRTIO_F_VERSION_1);
	assert_false(status(r) & VIRTIO_S_NEEDS_RESET);
	mwr(r, r->common + 0x16, 2, 0);
	mwr(r, r->common + 0x20, 8, RAM_SIZE - 16);	/* table past RAM */
	mwr(r, r->common + 0x28, 8, 0x1000);
	mwr(r, r->common + 0x30, 8, 0x2000);
	mwr(r, r->common + 0x1C, 2, 1);
	assert_int_equal(r->net.vp.vq[0].err, VQ_ERR_RING);
	negotiate(r, VIRTIO_F_VERSION_1);
	mwr(r, r->common + 0x16, 2, 0);
	mwr(r, r->common + 0x20, 8, 0x1008);		/* misaligned */
	mwr(r, r->common + 0x1C, 2, 1);
	assert_int_equal(r->net.vp.vq[0].err, VQ_ERR_ALIGN);
	/* a queue that does not exist reads size 0 and takes nothing */
	mwr(r, r->common + 0x16, 2, 2);
	assert_int_equal(mrd(r, r->common + 0x18, 2), 0);
	mwr(r, r->common + 0x1C, 2, 1);
	assert_int_equal(mrd(r, r->common + 0x1C, 2), 0);
	free(r);
}

/* Random descriptor tables: never a crash, never a touch outside RAM
 * (ASan watches the array), the queue either works or is broken. */
static uint32_t rnd(uint32_t *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

static void test_hostile_random(void **state)
{
	struct rig *r = rig_new();
	uint32_t seed = 12345;
	unsigned int broken = 0;

	(void)state;
	for (unsigned int round = 0; round < 400; round++) {
		struct gq *q = &r->q[1];

		bring_up(r);
		for (uint16_t i = 0; i < QSIZE; i++)
			set_desc(r, 1, i, rnd(&seed) % (RAM_SIZE + 0x2000) + (rnd(&seed) % 64 ? 0 :
				 (uint64_t)rnd(&seed) << 40), rnd(&seed) % 0x800,
				 (uint16_t)(rnd(&seed) % 8), (uint16_t)(rnd(&seed) % (QSIZE + 2)));
		for (uint16_t i = 0; i < QSIZE; i++)
			put_le16(r->ram + q->avail + 4 + 2 * i, (uint16_t)(rnd(&seed) % (QSIZE + 1)));
		put_le16(r->ram + q->avail, 0);
		put_le16(r->ram + q->avail + 2, (uint16_t)(rnd(&seed) % (QSIZE + 3)));
		mwr(r, r->notify + 4, 2, 1);
		assert_true(r->net.vp.vq[1].err < VQ_NR_ERR);
		assert_int_equal(status(r) & VIRTIO_S_NEEDS_RESET ? 1 : 0,
				 r->net.vp.vq[1].err != VQ_OK);
		broken += r->net.vp.vq[1].err != VQ_OK;
	}
	/* both outcomes happened: the fuzzing reached past the checks */
	assert_true(broken > 100);
	assert_true(broken < 400);
	free(r);
}

/* ---- snapshots --------------------------------------------------------------- */

static size_t save(struct rig *r, uint8_t *buf, size_t cap)
{
	struct snap s;

	snap_save_init(&s, buf, cap);
	assert_int_equal(vpci_bus_snapshot(&r->bus, &s), 0);
	assert_int_equal(vnet_snapshot(&r->net, &s), 0);
	return s.pos;
}

static int restore(struct rig *r, const uint8_t *buf, size_t len)
{
	struct snap s;

	snap_restore_init(&s, buf, len);
	if (vpci_bus_snapshot(&r->bus, &s))
		return s.err;
	if (vnet_snapshot(&r->net, &s))
		return s.err;
	return s.pos == len ? 0 : -EINVAL;
}

/* Traffic, save, restore into a new device with a copy of RAM (what
 * migration does), and traffic goes on with the same indices. */
static void test_snapshot_round_trip(void **state)
{
	struct rig *a = rig_new(), *b = rig_new();
	uint8_t buf[4096], buf2[4096], f[80];
	size_t n;

	(void)state;
	bring_up(a);
	make_frame(f, sizeof(f), MAC, 1);
	for (uint16_t i = 0; i < 3; i++) {
		send(a, (uint16_t)(2 * i), f, sizeof(f));
		post_rx(a, i, BUF_LEN);
	}
	assert_int_equal(vnet_rx(&a->net, f, sizeof(f)), 0);
	n = save(a, buf, sizeof(buf));
	memcpy(b->ram, a->ram, RAM_SIZE);
	memcpy(b->q, a->q, sizeof(a->q));
	assert_int_equal(restore(b, buf, n), 0);
	assert_int_equal(save(b, buf2, sizeof(buf2)), n);
	assert_memory_equal(buf, buf2, n);
	assert_int_equal(b->irq_level, 1);		/* ISR still pending */
	assert_int_equal(status(b), 0x0F);
	send(b, 6, f, sizeof(f));
	assert_int_equal(b->tx_calls, 1);
	assert_int_equal(used_idx(b, 1), 4);
	assert_int_equal(vnet_rx(&b->net, f, sizeof(f)), 0);
	assert_int_equal(used_idx(b, 0), 2);
	assert_int_equal(used_id(b, 0, 1), 1);
	free(a);
	free(b);
}

static void test_indirect_snapshot(void **state)
{
	struct rig *a = rig_new(), *b = rig_new(), *c = rig_new();
	uint8_t buf[4096], f[80];
	size_t n;

	(void)state;
	bring_up_indirect(a);
	n = save(a, buf, sizeof(buf));
	memcpy(b->ram, a->ram, RAM_SIZE);
	memcpy(b->q, a->q, sizeof(a->q));
	assert_int_equal(restore(b, buf, n), 0);
	assert_true(b->net.vp.vq[VNET_TXQ].indirect && b->net.vp.vq[VNET_RXQ].indirect);
	make_frame(f, sizeof(f), MAC, 1);
	memset(b->ram + TX_BUFS, 0, VNET_HDR_LEN);
	memcpy(b->ram + TX_BUFS + 0x100, f, sizeof(f));
	set_ind(b, 0, TX_BUFS, VNET_HDR_LEN, VQ_DESC_F_NEXT, 1);
	set_ind(b, 1, TX_BUFS + 0x100, sizeof(f), 0, 0);
	offer_table(b, VNET_TXQ, 0, 2, 0);
	assert_int_equal(b->tx_calls, 1);
	assert_memory_equal(b->tx_frame, f, sizeof(f));
	/* and one without them restored over a device that had them */
	bring_up(a);
	n = save(a, buf, sizeof(buf));
	bring_up_indirect(c);
	memcpy(c->ram, a->ram, RAM_SIZE);
	memcpy(c->q, a->q, sizeof(a->q));
	assert_int_equal(restore(c, buf, n), 0);
	assert_false(c->net.vp.vq[VNET_TXQ].indirect);
	free(a);
	free(b);
	free(c);
}

/* Truncations, each single-byte change and specific lies: refused, or
 * accepted into a state that still passes the checks; a refused restore
 * changes nothing. */
static void test_snapshot_hostile(void **state)
{
	struct rig *a = rig_new(), *b = rig_new();
	uint8_t buf[4096], bad[4096], before[4096], after[4096];
	size_t n, nb, accepted = 0;

	(void)state;
	bring_up(a);
	n = save(a, buf, sizeof(buf));
	nb = save(b, before, sizeof(before));
	for (size_t len = 0; len < n; len++) {
		assert_int_equal(restore(b, buf, len), -EINVAL);
		assert_int_equal(save(b, after, sizeof(after)), nb);
		assert_memory_equal(before, after, nb);
	}
	for (size_t i = 0; i < n; i++) {
		memcpy(bad, buf, n);
		bad[i] ^= 0xA5;
		if (restore(b, bad, n) == 0) {
			assert_true(b->net.vp.isr <= 3);
			assert_true(b->net.vp.vq[0].err < VQ_NR_ERR);
			accepted++;
			assert_int_equal(restore(b, before, nb), 0);
			continue;
		}
		assert_int_equal(save(b, after, sizeof(after)), nb);
		assert_memory_equal(before, after, nb);
	}
	/* writable config bits, addresses and selectors may take any value */
	assert_true(accepted > 20);
	assert_true(accepted < n / 2);
	free(a);
	free(b);
}

/* Specific fields, found from the layout: bus record, then vnet: version,
 * mac[6], status le16, then the transport. */
#define OFF_VNET	(1 + 4 + 1 + VPCI_CFG_SIZE)
#define OFF_MAC		(OFF_VNET + 1)
#define OFF_VP		(OFF_VNET + 9)
#define OFF_FEAT	(OFF_VP + 2 + 1 + VPCI_CFG_SIZE + 8)
#define OFF_STATUS	(OFF_FEAT + 8)
#define OFF_ISR		(OFF_STATUS + 1)
#define OFF_VQ0		(OFF_STATUS + 5)
#define OFF_VQ0_SIZE	(OFF_VQ0 + 1)
#define OFF_VQ0_READY	(OFF_VQ0 + 3)
#define OFF_VQ0_LAST	(OFF_VQ0 + 28)
#define OFF_VQ0_ERR	(OFF_VQ0 + 32)

static void test_snapshot_fields(void **state)
{
	struct rig *a = rig_new(), *b = rig_new();
	uint8_t buf[4096], bad[4096];
	size_t n;

	(void)state;
	bring_up(a);
	n = save(a, buf, sizeof(buf));
	assert_int_equal(buf[OFF_STATUS], 0x0F);		/* the layout is right */
	assert_int_equal(get_le16(buf + OFF_VQ0_SIZE), QSIZE);
	assert_memory_equal(buf + OFF_MAC, MAC, 6);
	assert_int_equal(restore(b, buf, n), 0);
	assert_int_equal(b->net.vp.status, 0x0F);
#define REFUSED(stmt) do { memcpy(bad, buf, n); stmt; \
	assert_int_equal(restore(b, bad, n), -EINVAL); } while (0)
	REFUSED(bad[OFF_MAC + 5] ^= 1);				/* another MAC */
	REFUSED(bad[OFF_FEAT + 4] = 0);				/* no VERSION_1 */
	REFUSED(bad[OFF_FEAT + 2] |= 0x02);			/* bit 17: not offered */
	REFUSED(bad[OFF_STATUS] |= 0x20);			/* unknown bit */
	REFUSED(bad[OFF_ISR] = 4);
	REFUSED(put_le16(bad + OFF_VQ0_SIZE, 12));		/* ready, not 2^n */
	REFUSED(put_le16(bad + OFF_VQ0_LAST, 5));		/* chains in flight */
	REFUSED(bad[OFF_VQ0_ERR] = VQ_NR_ERR);
	REFUSED(bad[OFF_VNET] = 2);				/* version */
	REFUSED(bad[OFF_VQ0_ERR] = VQ_ERR_LOOP);		/* no NEEDS_RESET */
	/* a queue not enabled yet has taken nothing */
	REFUSED(bad[OFF_VQ0_READY] = 0; put_le16(bad + OFF_VQ0_LAST, 5);
		put_le16(bad + OFF_VQ0_LAST + 2, 5));
	memcpy(bad, buf, n);
	bad[OFF_VQ0_READY] = 0;
	assert_int_equal(restore(b, bad, n), 0);
	assert_false(b->net.vp.vq[0].ready);
	memcpy(bad, buf, n);
	bad[OFF_VQ0_ERR] = VQ_ERR_LOOP;				/* broken is a state */
	bad[OFF_STATUS] |= VIRTIO_S_NEEDS_RESET;
	put_le16(bad + OFF_VQ0_LAST, 5);
	assert_int_equal(restore(b, bad, n), 0);
	assert_int_equal(b->net.vp.vq[0].err, VQ_ERR_LOOP);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_features),
		cmocka_unit_test(test_tx_offloads),
		cmocka_unit_test(test_tx_offloads_not_negotiated),
		cmocka_unit_test(test_rx_data_valid),
		cmocka_unit_test(test_rx_super_frame),
		cmocka_unit_test(test_rx_merged_buffers),
		cmocka_unit_test(test_rx_merged_empty_tables),
		cmocka_unit_test(test_rx_merged_waits),
		cmocka_unit_test(test_link_down),
		cmocka_unit_test(test_rx_merged_racing_driver),
		cmocka_unit_test(test_tx_stall),
		cmocka_unit_test(test_msix),
		cmocka_unit_test(test_msix_snapshot),
		cmocka_unit_test(test_tx_rx),
		cmocka_unit_test(test_ring_wraps),
		cmocka_unit_test(test_not_ready),
		cmocka_unit_test(test_no_dma_without_bus_master),
		cmocka_unit_test(test_broken_queue_stops_alone),
		cmocka_unit_test(test_isr_intx),
		cmocka_unit_test(test_tx_drops),
		cmocka_unit_test(test_rx_small_buffer),
		cmocka_unit_test(test_hostile_loop),
		cmocka_unit_test(test_longest_chain),
		cmocka_unit_test(test_hostile_past_ram),
		cmocka_unit_test(test_hostile_wrapping_addr),
		cmocka_unit_test(test_hostile_rx_past_ram),
		cmocka_unit_test(test_hostile_index_jump),
		cmocka_unit_test(test_rings_checked_against_memory),
		cmocka_unit_test(test_hostile_head),
		cmocka_unit_test(test_hostile_next),
		cmocka_unit_test(test_hostile_flags),
		cmocka_unit_test(test_hostile_queue_setup),
		cmocka_unit_test(test_indirect),
		cmocka_unit_test(test_indirect_longest),
		cmocka_unit_test(test_hostile_indirect),
		cmocka_unit_test(test_hostile_indirect_order),
		cmocka_unit_test(test_indirect_snapshot),
		cmocka_unit_test(test_hostile_random),
		cmocka_unit_test(test_snapshot_round_trip),
		cmocka_unit_test(test_snapshot_hostile),
		cmocka_unit_test(test_snapshot_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
