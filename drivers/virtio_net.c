/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * virtio-net driver (drivers/virtio_net.h): device initialization (virtio
 * 1.1, 3.1.1), the PCI transport (4.1), the network device (5.1).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "arch/x86/mm.h"
#include "arch/x86/paging_host.h"
#include "drivers/nic.h"
#include "drivers/virtio_net.h"
#include "drivers/virtio_pci.h"
#include "drivers/virtq.h"
#include "hv/lib/bytes.h"
#include "hv/lib/log.h"
#include "hv/lib/time.h"
#include "hv/mm/frame.h"

#define RXQ	0
#define TXQ	1
#define TX_BATCH 32		/* descriptors queued before a doorbell */
#define TSO_SEGS (2 + NIC_TSO_MAX / NIC_BUF)	/* descriptors of a TSO frame, at most */
#define MAC_LEN_CFG 8		/* device config: mac[6], status */
#define VNET_S_LINK_UP 1

struct vnet {
	struct nic nic;			/* first: the stack's view */
	volatile uint8_t *common, *isr, *device;
	uint32_t device_len;		/* bytes of device configuration */
	volatile uint16_t *doorbell[2];
	uint64_t features;
	uint64_t notify_pa;		/* the notify region's BAR */
	struct virtq q[2];
	uint8_t *buf[2];		/* NIC_BUF per descriptor id */
	uint64_t buf_pa[2];
	unsigned int tx_unkicked, idle_polls;
	bool told_reset;
};

static struct vnet *V(struct nic *n) { return (struct vnet *)n; }

/* ---- the common configuration (4.1.4.3) ---- */
static uint8_t cc_rd8(struct vnet *v, unsigned int r) { return *(volatile uint8_t *)(v->common + r); }
static uint16_t cc_rd16(struct vnet *v, unsigned int r) { return *(volatile uint16_t *)(v->common + r); }
static uint32_t cc_rd32(struct vnet *v, unsigned int r) { return *(volatile uint32_t *)(v->common + r); }
static void cc_wr8(struct vnet *v, unsigned int r, uint8_t x) { *(volatile uint8_t *)(v->common + r) = x; }
static void cc_wr16(struct vnet *v, unsigned int r, uint16_t x) { *(volatile uint16_t *)(v->common + r) = x; }
static void cc_wr32(struct vnet *v, unsigned int r, uint32_t x) { *(volatile uint32_t *)(v->common + r) = x; }

/* 64-bit fields as two 32-bit writes, low first (4.1.3.1 allows it). */
static void cc_wr64(struct vnet *v, unsigned int r, uint64_t x)
{
	cc_wr32(v, r, (uint32_t)x);
	cc_wr32(v, r + 4, (uint32_t)(x >> 32));
}

static uint64_t device_features(struct vnet *v)
{
	cc_wr32(v, VCC_DEVICE_FEATURE_SELECT, 0);
	uint64_t lo = cc_rd32(v, VCC_DEVICE_FEATURE);
	cc_wr32(v, VCC_DEVICE_FEATURE_SELECT, 1);
	return lo | (uint64_t)cc_rd32(v, VCC_DEVICE_FEATURE) << 32;
}

static void driver_features(struct vnet *v, uint64_t f)
{
	cc_wr32(v, VCC_DRIVER_FEATURE_SELECT, 0);
	cc_wr32(v, VCC_DRIVER_FEATURE, (uint32_t)f);
	cc_wr32(v, VCC_DRIVER_FEATURE_SELECT, 1);
	cc_wr32(v, VCC_DRIVER_FEATURE, (uint32_t)(f >> 32));
}

/* Write 0 and wait until the device reads back 0 (4.1.4.3.2). */
static int device_reset(struct vnet *v)
{
	cc_wr8(v, VCC_DEVICE_STATUS, 0);
	for (int i = 0; i < 1000; i++) {
		if (!cc_rd8(v, VCC_DEVICE_STATUS))
			return 0;
		udelay(100);
	}
	return -ETIMEDOUT;
}

static void status_add(struct vnet *v, uint8_t bits)
{
	cc_wr8(v, VCC_DEVICE_STATUS, cc_rd8(v, VCC_DEVICE_STATUS) | bits);
}

/* ---- finding the device's regions ---- */
static bool is_virtio_net(const struct pci_dev *d, const void *arg)
{
	(void)arg;
	/* 0x1041: modern only; 0x1000: transitional, driven through its
	 * modern capabilities when it has them (4.1.2) */
	return d->vendor == VIRTIO_PCI_VENDOR && (d->device == 0x1041 || d->device == 0x1000);
}

static int find_layout(const struct pci_dev *d, struct virtio_pci_layout *l,
		       uint64_t bar_pa[6])
{
	uint8_t cfg[256];
	uint64_t size[6] = { 0 };
	const struct virtio_pci_region *r[4] = { &l->common, &l->notify, &l->isr, &l->device };
	int err;

	for (unsigned int off = 0; off < 256; off += 4)
		put_le32(cfg + off, pci_read32(d, (uint8_t)off));
	err = virtio_pci_parse_caps(cfg, l);
	if (err)
		return err;
	for (int i = 0; i < 4; i++)
		if (r[i]->found && !size[r[i]->bar])
			bar_pa[r[i]->bar] = pci_bar_mem(d, r[i]->bar, &size[r[i]->bar]);
	for (int b = 0; b < 6; b++)
		if (!bar_pa[b])
			size[b] = 0;
	return virtio_pci_check(l, size);
}

static volatile uint8_t *map_region(const struct virtio_pci_region *r, const uint64_t bar_pa[6])
{
	return ioremap(bar_pa[r->bar] + r->off, r->len);
}

static int map_layout(struct vnet *v, const struct pci_dev *d, struct virtio_pci_layout *l)
{
	uint64_t bar_pa[6] = { 0 };
	int err = find_layout(d, l, bar_pa);

	if (err)
		return err;
	pci_enable_mem(d);		/* bus mastering waits for the rings */
	v->notify_pa = bar_pa[l->notify.bar];
	v->common = map_region(&l->common, bar_pa);
	v->isr = map_region(&l->isr, bar_pa);
	v->device = l->device.found ? map_region(&l->device, bar_pa) : NULL;
	v->device_len = l->device.found ? l->device.len : 0;
	if (!v->common || !v->isr || (l->device.found && !v->device))
		return -ENOMEM;
	return 0;
}

/* The device configuration's MAC, read until config_generation holds
 * still (4.1.4.3.1); -ENOENT without one. */
static int read_cfg_mac(struct vnet *v, const struct virtio_pci_layout *l, uint8_t mac[6])
{
	uint8_t gen;

	if (!v->device || l->device.len < 6)
		return -ENOENT;
	for (int tries = 0; tries < 100; tries++) {
		gen = cc_rd8(v, VCC_CONFIG_GENERATION);
		for (int i = 0; i < 6; i++)
			mac[i] = v->device[i];
		if (gen == cc_rd8(v, VCC_CONFIG_GENERATION))
			return 0;
	}
	return -EIO;
}

/* ---- queues (4.1.5.1.3) ---- */
static uint16_t pow2_floor(uint16_t x)
{
	uint16_t p = 1;

	while ((uint32_t)p * 2 <= x)
		p = (uint16_t)(p * 2);
	return p;
}

static int alloc_queue_mem(struct vnet *v, int qi, uint16_t size, uint64_t *ring_pa)
{
	size_t ring_pages = (virtq_mem_size(size) + 4095) / 4096;
	size_t buf_pages = ((size_t)size * NIC_BUF + 4095) / 4096;

	*ring_pa = frame_alloc_contig(ring_pages, 1);
	v->buf_pa[qi] = frame_alloc_contig(buf_pages, 1);
	if (!*ring_pa || !v->buf_pa[qi])
		return -ENOMEM;
	v->buf[qi] = phys_to_virt(v->buf_pa[qi]);
	return virtq_init(&v->q[qi], size, phys_to_virt(*ring_pa));
}

static int setup_queue(struct vnet *v, const struct virtio_pci_layout *l, int qi)
{
	uint16_t max, size;
	uint64_t ring_pa, at;
	int err;

	cc_wr16(v, VCC_QUEUE_SELECT, (uint16_t)qi);
	max = cc_rd16(v, VCC_QUEUE_SIZE);
	if (!max)
		return -ENODEV;
	size = pow2_floor(max < VIRTQ_MAX ? max : VIRTQ_MAX);
	if (qi == TXQ && size < TSO_SEGS)
		v->nic.tso = false;	/* a short queue cannot hold a TSO frame */
	if (qi == TXQ)
		v->nic.tx_slots = size;
	err = alloc_queue_mem(v, qi, size, &ring_pa);
	if (err)
		return err;
	err = virtio_pci_notify_at(l, cc_rd16(v, VCC_QUEUE_NOTIFY_OFF), &at);
	if (err)
		return err;
	v->doorbell[qi] = ioremap(v->notify_pa + at, 2);
	if (!v->doorbell[qi])
		return -ENOMEM;
	cc_wr16(v, VCC_QUEUE_SIZE, size);
	cc_wr64(v, VCC_QUEUE_DESC, ring_pa);
	cc_wr64(v, VCC_QUEUE_DRIVER, ring_pa + virtq_avail_off(size));
	cc_wr64(v, VCC_QUEUE_DEVICE, ring_pa + virtq_used_off(size));
	cc_wr16(v, VCC_QUEUE_ENABLE, 1);
	return 0;
}

static void notify(struct vnet *v, int qi)
{
	if (virtq_notify_needed(&v->q[qi]))
		*v->doorbell[qi] = (uint16_t)qi;
}

/* Give receive buffer id (NIC_BUF bytes) to the device. */
static void rx_give(struct vnet *v, uint16_t id)
{
	struct virtq_seg s = { v->buf_pa[RXQ] + (uint64_t)id * NIC_BUF, NIC_BUF, true };

	virtq_publish(&v->q[RXQ], &id, &s, 1);
}

static void rx_fill(struct vnet *v)
{
	uint16_t id;

	while (virtq_alloc(&v->q[RXQ], 1, &id) == 0)
		rx_give(v, id);
	notify(v, RXQ);
}

/* ---- initialization (3.1.1) ---- */
static int negotiate(struct vnet *v)
{
	int err = device_reset(v);

	if (err)
		return err;
	status_add(v, VIRTIO_STATUS_ACKNOWLEDGE);
	status_add(v, VIRTIO_STATUS_DRIVER);
	v->features = virtio_net_features(device_features(v));
	if (!v->features)
		return -ENOTSUP;	/* no VERSION_1: a legacy-only device */
	driver_features(v, v->features);
	status_add(v, VIRTIO_STATUS_FEATURES_OK);
	if (!(cc_rd8(v, VCC_DEVICE_STATUS) & VIRTIO_STATUS_FEATURES_OK))
		return -ENOTSUP;	/* it refused the subset */
	return 0;
}

static bool has(const struct vnet *v, int bit)
{
	return v->features & 1ull << bit;
}

static int start(struct vnet *v, const struct pci_dev *d)
{
	struct virtio_pci_layout l;
	int err = map_layout(v, d, &l);

	if (!err)
		err = negotiate(v);
	if (err)
		return err;
	v->nic.tx_csum = has(v, VIRTIO_NET_F_CSUM);
	v->nic.tso = has(v, VIRTIO_NET_F_HOST_TSO4);
	if (cc_rd16(v, VCC_NUM_QUEUES) < 2)
		return -ENODEV;
	if (!has(v, VIRTIO_NET_F_MAC) || read_cfg_mac(v, &l, v->nic.mac))
		return -ENOENT;	/* no MAC of its own: ferry has no source of one */
	err = setup_queue(v, &l, RXQ);
	if (!err)
		err = setup_queue(v, &l, TXQ);
	if (err)
		return err;
	pci_enable_bus_master(d);
	pci_intx(d, false);		/* masked until netif_idle wants it */
	status_add(v, VIRTIO_STATUS_DRIVER_OK);
	rx_fill(v);
	return 0;
}

static const struct nic_ops vnet_ops;
static bool vnet_link_up(struct nic *nic);

static int vnet_probe(const struct pci_dev *d, const void *arg, struct nic **out)
{
	struct vnet *v = calloc(1, sizeof(*v));
	int err;

	(void)arg;
	*out = NULL;
	if (!v)
		return -ENOMEM;
	v->nic = (struct nic){ .ops = &vnet_ops, .driver = "virtio-net", .model = "virtio 1.x",
			       .pci = *d };
	err = start(v, d);
	if (err) {
		if (v->common)	/* rings, if any, stay with the device */
			status_add(v, VIRTIO_STATUS_FAILED);
		free(v);
		return err;
	}
	pr_info("virtio-net: %02x:%02x.%x MAC %02x:%02x:%02x:%02x:%02x:%02x, queues %u/%u,"
		" features %#lx, link %s", d->bus, d->dev, d->fn, v->nic.mac[0], v->nic.mac[1],
		v->nic.mac[2], v->nic.mac[3], v->nic.mac[4], v->nic.mac[5], v->q[RXQ].size,
		v->q[TXQ].size, v->features, vnet_link_up(&v->nic) ? "up" : "down");
	*out = &v->nic;
	return 0;
}

static int vnet_read_mac(const struct pci_dev *d, const void *arg, uint8_t mac[6])
{
	struct vnet v = { 0 };
	struct virtio_pci_layout l;
	int err = map_layout(&v, d, &l);

	(void)arg;
	return err ? err : read_cfg_mac(&v, &l, mac);
}

/* ---- link and interrupt ---- */
static bool vnet_link_up(struct nic *nic)
{
	struct vnet *v = V(nic);

	if (!has(v, VIRTIO_NET_F_STATUS) || !v->device || v->device_len < MAC_LEN_CFG)
		return true;	/* no status: the link counts as up (5.1.4) */
	return *(volatile uint16_t *)(v->device + 6) & VNET_S_LINK_UP;
}

static void vnet_irq_setup(struct nic *nic)
{
	(void)nic;	/* INTx: MSI-X stays off, so no vectors to set */
}

static void vnet_irq_mask(struct nic *nic)
{
	pci_intx(&nic->pci, false);
}

static void vnet_irq_unmask(struct nic *nic)
{
	pci_intx(&nic->pci, true);
}

static uint32_t vnet_irq_ack(struct nic *nic)
{
	return *V(nic)->isr;	/* reading clears it and drops the line (4.1.4.5) */
}

/* ---- transmit ---- */
static void tx_kick(struct vnet *v)
{
	if (!v->tx_unkicked)
		return;
	notify(v, TXQ);
	v->tx_unkicked = 0;
}

static void vnet_tx_kick(struct nic *nic)
{
	tx_kick(V(nic));
}

/* Take back what the device has sent; a bad entry is only counted. */
static void tx_reclaim(struct vnet *v)
{
	uint16_t id;
	uint32_t len;
	int rc;

	while ((rc = virtq_get(&v->q[TXQ], &id, &len)) != 0) {
		v->nic.stats.tx_done += rc > 0;
		if (rc < 0) {
			v->nic.stats.dev_errors++;
			if (rc == -EIO)
				break;
		}
	}
}

static uint8_t *tx_buf(struct vnet *v, uint16_t id)
{
	return v->buf[TXQ] + (size_t)id * NIC_BUF;
}

static void *vnet_tx_frame(struct nic *nic)
{
	struct vnet *v = V(nic);
	int id;

	tx_reclaim(v);
	id = virtq_peek(&v->q[TXQ]);
	return id < 0 ? NULL : tx_buf(v, (uint16_t)id) + VNET_HDR_LEN;
}

static unsigned int vnet_tx_room(struct nic *nic)
{
	struct vnet *v = V(nic);

	tx_reclaim(v);
	return v->q[TXQ].broken ? 0 : v->q[TXQ].nr_free;
}

static int tx_full(struct vnet *v)
{
	tx_kick(v);
	v->nic.stats.tx_busy++;
	return -EAGAIN;
}

/* Counted in descriptors: a TSO frame takes up to TSO_SEGS of them. */
static void tx_queued(struct vnet *v, unsigned int descs, uint64_t frames, uint64_t bytes)
{
	v->nic.stats.tx_frames += frames;
	v->nic.stats.tx_bytes += bytes;
	v->tx_unkicked += descs;
	if (v->tx_unkicked >= TX_BATCH)
		tx_kick(v);
}

static int vnet_xmit(struct nic *nic, const void *frame, size_t len)
{
	struct vnet *v = V(nic);
	struct virtq_seg seg;
	uint16_t id;
	uint8_t *b;

	if (len < 14 || len > NIC_BUF - VNET_HDR_LEN)
		return -EINVAL;
	tx_reclaim(v);
	if (v->q[TXQ].broken || virtq_alloc(&v->q[TXQ], 1, &id))
		return tx_full(v);
	b = tx_buf(v, id);
	if (frame != b + VNET_HDR_LEN)		/* not built in place */
		memmove(b + VNET_HDR_LEN, frame, len);
	virtio_net_hdr(b, v->features, b + VNET_HDR_LEN, (uint32_t)len, 0, 0);
	v->nic.stats.tx_csum += b[0] != 0;
	seg = (struct virtq_seg){ v->buf_pa[TXQ] + (uint64_t)id * NIC_BUF,
				  (uint32_t)len + VNET_HDR_LEN, false };
	virtq_publish(&v->q[TXQ], &id, &seg, 1);
	tx_queued(v, 1, 1, len);
	return 0;
}

static int vnet_xmit_tso(struct nic *nic, const uint8_t *hdr, size_t hlen,
			 const struct nic_iov *iov, unsigned int niov, unsigned int mss)
{
	struct vnet *v = V(nic);
	size_t total = nic_iov_len(iov, niov);
	unsigned int n = 1 + (unsigned int)((total + NIC_BUF - 1) / NIC_BUF);
	struct nic_iov_cur cur = { .iov = iov, .n = niov };
	uint16_t ids[TSO_SEGS];
	struct virtq_seg segs[TSO_SEGS];
	uint8_t *b;

	if (!nic->tso || hlen > 255 || !total || !mss || mss > 0xffff ||
	    !nic_frame_is_tcp4(hdr, hlen) || n > TSO_SEGS)
		return -EINVAL;
	tx_reclaim(v);
	if (v->q[TXQ].broken || virtq_alloc(&v->q[TXQ], n, ids))
		return tx_full(v);
	b = tx_buf(v, ids[0]);
	memmove(b + VNET_HDR_LEN, hdr, hlen);	/* hdr may be this very buffer */
	virtio_net_tso_fix(b + VNET_HDR_LEN, (uint32_t)hlen, (uint32_t)total);
	virtio_net_hdr(b, v->features, b + VNET_HDR_LEN, (uint32_t)hlen, (uint16_t)hlen,
		       (uint16_t)mss);
	segs[0] = (struct virtq_seg){ v->buf_pa[TXQ] + (uint64_t)ids[0] * NIC_BUF,
				      (uint32_t)hlen + VNET_HDR_LEN, false };
	/* the payload into the buffers of ids[1..n), one segment each */
	for (unsigned int k = 1; k < n; k++)
		segs[k] = (struct virtq_seg){ v->buf_pa[TXQ] + (uint64_t)ids[k] * NIC_BUF,
					      (uint32_t)nic_iov_copy(&cur, tx_buf(v, ids[k]),
								     NIC_BUF), false };
	virtq_publish(&v->q[TXQ], ids, segs, n);
	v->nic.stats.tx_tso++;
	tx_queued(v, n, (total + mss - 1) / mss, total + hlen * ((total + mss - 1) / mss));
	return 0;
}

/* ---- receive ---- */
static void check_status(struct vnet *v)
{
	if (v->told_reset || !(cc_rd8(v, VCC_DEVICE_STATUS) & VIRTIO_STATUS_NEEDS_RESET))
		return;
	v->told_reset = true;
	pr_err("virtio-net: the device needs a reset (DEVICE_NEEDS_RESET): it is stuck");
}

/* One used receive buffer: hand its frame up, then give a buffer back
 * (the same one: virtq_get just freed it). */
static void rx_one(struct vnet *v, int rc, uint16_t id, uint32_t len, nic_rx_fn rx, void *ctx)
{
	const uint8_t *b = v->buf[RXQ] + (size_t)id * NIC_BUF;

	if (rc < 0 || len < VNET_HDR_LEN + 14) {
		v->nic.stats.rx_errors++;	/* too long for the buffer, or a runt */
		v->nic.stats.dev_errors += rc < 0;
	} else {
		v->nic.stats.rx_frames++;
		v->nic.stats.rx_bytes += len - VNET_HDR_LEN;
		rx(ctx, b + VNET_HDR_LEN, len - VNET_HDR_LEN, 0);
	}
	if (virtq_alloc(&v->q[RXQ], 1, &id) == 0)
		rx_give(v, id);
}

static int vnet_poll(struct nic *nic, nic_rx_fn rx, void *ctx, int budget)
{
	struct vnet *v = V(nic);
	int done = 0, rc;
	uint16_t id;
	uint32_t len;

	tx_kick(v);
	while (done < budget && (rc = virtq_get(&v->q[RXQ], &id, &len)) != 0) {
		if (rc == -EIO || rc == -EBADMSG) {
			v->nic.stats.dev_errors++;
			if (rc == -EIO)
				break;
			continue;
		}
		rx_one(v, rc, id, len, rx, ctx);
		done++;
	}
	if (done)
		notify(v, RXQ);
	else if (++v->idle_polls % 1024 == 0)
		check_status(v);
	return done;
}

static const struct nic_ops vnet_ops = {
	.xmit = vnet_xmit,
	.tx_frame = vnet_tx_frame,
	.xmit_tso = vnet_xmit_tso,
	.tx_kick = vnet_tx_kick,
	.tx_room = vnet_tx_room,
	.poll = vnet_poll,
	.link_up = vnet_link_up,
	.irq_setup = vnet_irq_setup,
	.irq_mask = vnet_irq_mask,
	.irq_unmask = vnet_irq_unmask,
	.irq_ack = vnet_irq_ack,
};

const struct nic_driver virtio_net_driver = {
	.name = "virtio-net", .match = is_virtio_net, .read_mac = vnet_read_mac,
	.probe = vnet_probe,
};
