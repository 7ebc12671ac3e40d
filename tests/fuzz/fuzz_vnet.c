/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: the virtio-net device (hv/vdev/virtio_net.c,
 * virtio_pci.c, virtqueue.c, vpci.c) driven by a hostile guest.  The
 * guest's RAM (descriptor tables, available rings, buffers, headers) comes
 * from the input, then doorbells, register writes, received frames and
 * snapshots.
 *
 * Input: u64 features, u8 queue-size exponents (q0 low nibble, q1 high),
 * u16 n + n bytes copied to guest RAM at RING_BASE (both queues' rings lie
 * there; buffers may be anywhere in RAM), then operations (see ops()).
 *
 * Invariants: every transmitted frame fits VNET_MAX_GSO_FRAME; a working
 * queue's device-side indexes never publish more than the device took
 * (used_idx <= last_avail <= used_idx + size); the device stays attached to RAM
 * through the callbacks only; a saved device restores into a fresh one
 * whose save is identical.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv/lib/bytes.h"
#include "hv/vdev/virtio_net.h"
#include "tests/fuzz/fuzz.h"


#define RAM_SIZE	0x40000u
#define RING_BASE	0x10000u	/* q0: desc +0, avail +0x1000, used +0x2000; q1: +0x4000 */
#define SNAPBUF		(64 * 1024)

static const uint8_t MAC[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

struct rig {
	uint8_t ram[RAM_SIZE];
	struct vpci_bus bus;
	struct vnet net;
	uint64_t common, isr, devcfg, notify;
	uint32_t notify_mult;
	uint16_t qsize[2];
	uint64_t used[2];
	int irq_level;
	int tx_rc;
};

static int ram_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	struct rig *r = ctx;

	if (gpa > RAM_SIZE || len > RAM_SIZE - gpa)
		return -EFAULT;
	memcpy(buf, r->ram + gpa, len);
	return 0;
}

static int ram_write(void *ctx, uint64_t gpa, const void *buf, size_t len)
{
	struct rig *r = ctx;

	if (gpa > RAM_SIZE || len > RAM_SIZE - gpa)
		return -EFAULT;
	memcpy(r->ram + gpa, buf, len);
	return 0;
}

static void irq_cb(void *ctx, unsigned int line, int level)
{
	struct rig *r = ctx;

	CHECK(line == 10);
	r->irq_level = level;
}

static void msi_cb(void *ctx, uint64_t addr, uint32_t data)
{
	(void)ctx; (void)addr; (void)data;
}

static int tx_cb(void *ctx, const uint8_t *frame, size_t len, const struct vnet_offload *off)
{
	struct rig *r = ctx;
	volatile uint8_t sink = 0;

	CHECK(len <= VNET_MAX_GSO_FRAME);
	CHECK(off != NULL);
	for (size_t i = 0; i < len; i += 64)	/* ASan: the frame must be real */
		sink ^= frame[i];
	if (len)
		sink ^= frame[len - 1];
	(void)sink;
	/* csum_start/csum_offset are the guest's, passed on unchecked: the
	 * consumer (hv/net/gso.c, drivers/vnet_hdr.c) validates them */
	return r->tx_rc;
}

static uint32_t cfg_rd(struct rig *r, unsigned int reg, uint8_t size)
{
	uint32_t v = 0x80000000u | 1u << 11 | (reg & 0xFC);

	CHECK(vpci_io(&r->bus, 0xCF8, 4, false, &v) == 0);
	CHECK(vpci_io(&r->bus, (uint16_t)(0xCFC + (reg & 3)), size, true, &v) == 0);
	return v;
}

static int mwr(struct rig *r, uint64_t gpa, uint8_t size, uint64_t v)
{
	return vpci_mmio(&r->bus, gpa, size, true, &v);
}

static uint64_t mrd(struct rig *r, uint64_t gpa, uint8_t size)
{
	uint64_t v = 0;

	(void)vpci_mmio(&r->bus, gpa, size, false, &v);
	return v;
}

static void find_caps(struct rig *r)
{
	uint64_t bar = cfg_rd(r, 0x10, 4) & ~0xFull;

	for (unsigned int p = cfg_rd(r, 0x34, 1), n = 0; p && n < 32; p = cfg_rd(r, p + 1, 1), n++) {
		unsigned int type = cfg_rd(r, p + 3, 1);
		uint64_t at = bar + cfg_rd(r, p + 8, 4);

		if (cfg_rd(r, p, 1) != 0x09)
			continue;
		if (type == 1)
			r->common = at;
		else if (type == 2)
			r->notify = at, r->notify_mult = cfg_rd(r, p + 16, 4);
		else if (type == 3)
			r->isr = at;
		else if (type == 4)
			r->devcfg = at;
	}
	CHECK(r->common && r->notify && r->isr);
}

/* Two rigs, reused (a fresh calloc of this size per input is slow). */
static struct rig rigs[2];

static struct rig *rig_new(unsigned int which)
{
	struct rig *r = &rigs[which];

	memset(r, 0, sizeof(*r));
	struct vnet_config c = { .irq = 10, .mem = { r, ram_read, ram_write }, .tx = tx_cb, .ctx = r };
	memcpy(c.mac, MAC, 6);
	vpci_bus_init(&r->bus, irq_cb, r);
	vpci_bus_set_msi(&r->bus, msi_cb);
	CHECK(vnet_init(&r->net, &c) == 0);
	CHECK(vpci_attach(&r->bus, &r->net.vp.fn, 1) == 0);
	vpci_place_bars(&r->bus);
	/* bus mastering on, as Linux's probe does (the input may turn it off) */
	vpci_cfg_write(&r->net.vp.fn, PCI_COMMAND, 2,
		       vpci_cfg_read(&r->net.vp.fn, PCI_COMMAND, 2) | PCI_CMD_MASTER);
	find_caps(r);
	return r;
}

static void bring_up(struct rig *r, uint64_t features)
{
	mwr(r, r->common + 0x14, 1, 0);
	mwr(r, r->common + 0x14, 1, VIRTIO_S_ACKNOWLEDGE);
	mwr(r, r->common + 0x14, 1, VIRTIO_S_ACKNOWLEDGE | VIRTIO_S_DRIVER);
	for (unsigned int w = 0; w < 2; w++) {
		mwr(r, r->common + 0x08, 4, w);
		mwr(r, r->common + 0x0C, 4, (uint32_t)(features >> (32 * w)));
	}
	mwr(r, r->common + 0x14, 1, VIRTIO_S_ACKNOWLEDGE | VIRTIO_S_DRIVER | VIRTIO_S_FEATURES_OK);
	for (unsigned int i = 0; i < 2; i++) {
		uint64_t desc = RING_BASE + 0x4000 * i;
		mwr(r, r->common + 0x16, 2, i);
		mwr(r, r->common + 0x18, 2, r->qsize[i]);
		mwr(r, r->common + 0x20, 8, desc);
		mwr(r, r->common + 0x28, 8, desc + 0x1000);
		mwr(r, r->common + 0x30, 8, desc + 0x2000);
		mwr(r, r->common + 0x1C, 2, 1);
		r->used[i] = desc + 0x2000;
	}
	mwr(r, r->common + 0x14, 1, mrd(r, r->common + 0x14, 1) | VIRTIO_S_DRIVER_OK);
}

static uint8_t snapa[SNAPBUF], snapb[SNAPBUF];

static void check_snapshot(struct rig *r)
{
	struct snap s;
	struct rig *e;
	size_t n;

	snap_save_init(&s, snapa, sizeof(snapa));
	CHECK(vnet_snapshot(&r->net, &s) == 0);
	n = s.pos;
	e = rig_new(1);
	memcpy(e->ram, r->ram, RAM_SIZE);
	snap_restore_init(&s, snapa, n);
	int rc = vnet_snapshot(&e->net, &s);
	if (rc)
		fprintf(stderr, "restore of a saved virtio-net failed: %d at %zu/%zu\n", rc, s.pos, n);
	CHECK(rc == 0);
	snap_save_init(&s, snapb, sizeof(snapb));
	CHECK(vnet_snapshot(&e->net, &s) == 0);
	CHECK(s.pos == n);
	CHECK(memcmp(snapa, snapb, n) == 0);
	/* the restored device must carry on safely */
	vnet_tx_resume(&e->net);
}

/* The device's own ring state (the guest may scribble over the rings in
 * RAM, even through its own receive buffers, so RAM proves nothing):
 * it publishes no more than it took, at most a ring's worth per step. */
static void check_used(struct rig *r, uint16_t seen[2])
{
	for (unsigned int q = 0; q < 2; q++) {
		const struct vq *v = &r->net.vp.vq[q];
		uint16_t moved = (uint16_t)(v->used_idx - seen[q]);

		if (v->ready && v->err == VQ_OK) {
			CHECK(v->size && v->size <= VQ_MAX_SIZE && !(v->size & (v->size - 1)));
			CHECK((uint16_t)(v->last_avail - v->used_idx) <= v->size);
			CHECK(moved <= v->size);
		}
		CHECK(v->err < VQ_NR_ERR);
		seen[q] = v->used_idx;
	}
}

struct in { const uint8_t *p; size_t n; };
static uint8_t g8(struct in *i) { uint8_t v = 0; if (i->n) { v = *i->p++; i->n--; } return v; }
static uint16_t g16(struct in *i) { uint16_t v = g8(i); return (uint16_t)(v | g8(i) << 8); }
static uint32_t g32(struct in *i) { uint32_t v = g16(i); return v | (uint32_t)g16(i) << 16; }

static void put_desc(uint8_t *d, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	put_le64(d, addr);
	put_le32(d + 8, len);
	put_le16(d + 12, flags);
	put_le16(d + 14, next);
}

/* FERRY_FUZZ_MKSEEDS=dir: a guest that posts receive buffers and sends a
 * frame (plain, and with a GSO header), then exit. */
static void mkseeds(const char *dir)
{
	static uint8_t img[0x8000];
	char path[4096];

	for (int v = 0; v < 3; v++) {
		uint8_t *q0 = img, *q1 = img + 0x4000;
		uint64_t feat = VIRTIO_F_VERSION_1 | VIRTIO_NET_F_MAC | VIRTIO_NET_F_STATUS;
		memset(img, 0, sizeof(img));
		if (v >= 1)
			feat |= VIRTIO_NET_F_CSUM | VIRTIO_NET_F_HOST_TSO4 | VIRTIO_NET_F_GUEST_CSUM |
				VIRTIO_NET_F_GUEST_TSO4 | VIRTIO_NET_F_MRG_RXBUF;
		if (v == 2)
			feat |= VIRTIO_F_RING_INDIRECT_DESC;
		/* rx: 4 buffers of 2 KiB at 0x20000 */
		for (int i = 0; i < 4; i++) {
			put_desc(q0 + 16 * i, 0x20000 + 0x800 * i, 0x800, VQ_DESC_F_WRITE, 0);
			put_le16(q0 + 0x1000 + 4 + 2 * i, (uint16_t)i);
		}
		put_le16(q0 + 0x1000 + 2, 4);
		/* tx: header + frame at 0x30000 */
		put_desc(q1, 0x30000, VNET_HDR_LEN, VQ_DESC_F_NEXT, 1);
		put_desc(q1 + 16, 0x30100, 60, 0, 0);
		if (v == 2) {	/* and an indirect table at 0x31000 */
			put_desc(q1 + 32, 0x31000, 32, VQ_DESC_F_INDIRECT, 0);
			put_le16(q1 + 0x1000 + 4 + 2, 2);
		}
		put_le16(q1 + 0x1000 + 4, 0);
		put_le16(q1 + 0x1000 + 2, v == 2 ? 2 : 1);

		snprintf(path, sizeof(path), "%s/guest-%d", dir, v);
		FILE *f = fopen(path, "wb");
		CHECK(f);
		for (int b = 0; b < 8; b++)
			fputc((int)(feat >> 8 * b) & 0xff, f);
		fputc(0x44, f);			/* 16 entries each */
		fputc(sizeof(img) & 0xff, f);
		fputc(sizeof(img) >> 8, f);
		fwrite(img, 1, sizeof(img), f);
		/* ops: tx doorbell, rx frame of 60 bytes, rx doorbell, snapshot */
		static const uint8_t ops[] = { 0x80, 0x04, 60, 0, 0x00, 0x08, 0x06, 0x14, 0 };
		fwrite(ops, 1, sizeof(ops), f);
		fclose(f);
	}
	exit(0);
}

FUZZ_SEEDS_FROM(mkseeds)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t frame[VNET_MAX_GSO_FRAME + 16];
	struct in in = { data, size };
	uint16_t seen[2] = { 0, 0 };
	struct rig *r;
	uint64_t features;
	uint8_t qs;
	size_t n;

	if (size < 12)
		return 0;
	r = rig_new(0);
	features = (uint64_t)g32(&in) | (uint64_t)g32(&in) << 32;
	features |= VIRTIO_F_VERSION_1;
	qs = g8(&in);
	r->qsize[0] = (uint16_t)(1u << (qs & 7));
	r->qsize[1] = (uint16_t)(1u << ((qs >> 4) & 7));
	n = g16(&in);
	if (n > in.n)
		n = in.n;
	if (n > RAM_SIZE - RING_BASE)
		n = RAM_SIZE - RING_BASE;
	memcpy(r->ram + RING_BASE, in.p, n);
	in.p += n, in.n -= n;
	bring_up(r, features);
	/* the guest's own idea of the used indexes starts at what RAM says */
	seen[0] = r->net.vp.vq[0].used_idx;
	seen[1] = r->net.vp.vq[1].used_idx;

	for (int k = 0; k < 48 && in.n; k++) {
		uint8_t op = g8(&in);
		unsigned int q = op >> 7;

		switch (op & 15) {
		case 0: case 1:		/* doorbell */
			mwr(r, r->notify + q * r->notify_mult, 2, q);
			break;
		case 2: {		/* the driver publishes: avail idx += d */
			uint64_t a = RING_BASE + 0x4000 * q + 0x1000 + 2;
			put_le16(r->ram + a, (uint16_t)(get_le16(r->ram + a) + (g8(&in) & 0x1f)));
			mwr(r, r->notify + q * r->notify_mult, 2, q);
			break;
		}
		case 3: {		/* the guest pokes 16 bytes of RAM */
			uint32_t at = (uint32_t)g16(&in) * 4 % (RAM_SIZE - 16);
			for (int b = 0; b < 16; b++)
				r->ram[at + b] = g8(&in);
			break;
		}
		case 4: case 5: {	/* a frame arrives */
			size_t len = g16(&in) % (VNET_MAX_FRAME + 64);
			struct vnet_piece pc[2];
			size_t cut = len / 3;
			for (size_t b = 0; b < len; b++)
				frame[b] = (uint8_t)(b * 7 + op);
			size_t take = in.n < len ? in.n : len;
			memcpy(frame, in.p, take);
			in.p += take, in.n -= take;
			pc[0] = (struct vnet_piece){ frame, cut };
			pc[1] = (struct vnet_piece){ frame + cut, len - cut };
			struct vnet_rx_frame f = { .piece = pc, .nr = 2, .valid = op & 0x10 };
			if ((op & 0x20) && vnet_rx_gso(&r->net) && len > 54) {
				f.gso_size = 1448;
				f.hdr_len = 54;
				f.segs = 2;
			}
			(void)vnet_rx_frame(&r->net, &f);
			(void)vnet_rx_take_kick(&r->net);
			break;
		}
		case 6: {		/* common config / device config / ISR access */
			uint8_t off = g8(&in), sz = (uint8_t[]){ 1, 2, 4, 8 }[g8(&in) & 3];
			uint32_t v = g32(&in);
			uint64_t base = (uint64_t[]){ r->common, r->devcfg, r->isr, r->notify }[(op >> 4) & 3];
			if (op & 0x40)
				(void)mwr(r, base + (off & 0x3f), sz, v);
			else
				(void)mrd(r, base + (off & 0x3f), sz);
			break;
		}
		case 7: {		/* PCI config space */
			uint8_t reg = g8(&in);
			uint32_t v = 0x80000000u | 1u << 11 | (reg & 0xFC), w = g32(&in);
			vpci_io(&r->bus, 0xCF8, 4, false, &v);
			vpci_io(&r->bus, (uint16_t)(0xCFC + (reg & 3)), 1 << (op >> 5 & 1), !(op & 0x40), &w);
			break;
		}
		case 8:
			check_snapshot(r);
			break;
		case 9:
			r->tx_rc = (op & 0x10) ? -EAGAIN : 0;
			vnet_tx_resume(&r->net);
			break;
		case 10:
			vnet_set_link(&r->net, op & 0x10);
			break;
		case 11:
			bring_up(r, features ^ ((uint64_t)g8(&in) << 8));
			seen[0] = r->net.vp.vq[0].used_idx;
			seen[1] = r->net.vp.vq[1].used_idx;
			break;
		default:
			mwr(r, r->notify + q * r->notify_mult, 2, q);
			break;
		}
		check_used(r, seen);
	}
	if (size & 1)	/* half the time: the end state must migrate */
		check_snapshot(r);
	return 0;
}
