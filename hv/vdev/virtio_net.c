/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * virtio-net: see virtio_net.h.  Frames sent go through dev->buf, frames
 * received are written into the chain in place; chains are
 * returned as soon as they are handled.
 */
#include <errno.h>
#include <string.h>
#include "hv/lib/bytes.h"
#include "hv/vdev/virtio_net.h"

#define VNET_SNAP_VERSION	1
#define CLASS_ETHERNET		0x020000u
#define TX_BATCH_QUEUES		2	/* chains per doorbell: 2 x queue size */

static const char *const drop_names[VNET_NR_DROP] = {
	[VNET_DROP_RX_NOT_READY] = "rx not ready",
	[VNET_DROP_RX_SMALL_BUF] = "rx buffer too small",
	[VNET_DROP_RX_BAD_FRAME] = "rx bad frame",
	[VNET_DROP_RX_QUEUE] = "rx queue error",
	[VNET_DROP_RX_LINK_DOWN] = "rx while the link is down",
	[VNET_DROP_TX_RUNT] = "tx runt",
	[VNET_DROP_TX_OVERSIZE] = "tx oversize",
	[VNET_DROP_TX_BAD_HDR] = "tx bad header",
	[VNET_DROP_TX_OFFLOAD] = "tx offload refused",
	[VNET_DROP_TX_QUEUE] = "tx queue error",
	[VNET_DROP_TX_LINK_DOWN] = "tx while the link is down",
};

const char *vnet_drop_name(enum vnet_drop d)
{
	return (unsigned int)d < VNET_NR_DROP ? drop_names[d] : "?";
}

static void net_reset(void *opaque)
{
	struct vnet *dev = opaque;

	dev->tx_stalled = false;	/* the MAC and link state survive a reset */
	dev->rx_kicked = false;
	dev->rx_short = RX_SHORT_NO;
}

static void cfg_rw(void *opaque, uint32_t off, uint8_t size, bool write, uint64_t *val)
{
	struct vnet *dev = opaque;
	uint8_t cfg[VNET_CFG_LEN] = { 0 };
	uint64_t v = 0;

	if (write)
		return;
	memcpy(cfg, dev->cfg.mac, 6);
	cfg[6] = (uint8_t)dev->net_status;
	cfg[7] = (uint8_t)(dev->net_status >> 8);
	for (unsigned int i = 0; i < size && off + i < VNET_CFG_LEN; i++)
		v |= (uint64_t)cfg[off + i] << (8 * i);
	*val = v;
}

static void drop(struct vnet *dev, enum vnet_drop why)
{
	dev->stats.drops[why]++;
}

/* The header's request, if it is one the driver may make: false if not. */
static bool parse_hdr(const struct vnet *dev, const uint8_t *h, struct vnet_offload *o)
{
	uint8_t flags = h[0], gso = h[1];

	*o = (struct vnet_offload){
		.csum = flags & VNET_HDR_F_NEEDS_CSUM, .gso_size = get_le16(h + 4),
		.csum_start = get_le16(h + 6), .csum_offset = get_le16(h + 8),
	};
	if ((flags & ~VNET_HDR_F_NEEDS_CSUM) ||
	    (o->csum && !virtio_pci_has(&dev->vp, VIRTIO_NET_F_CSUM)))
		return false;
	if (gso == VNET_HDR_GSO_NONE) {
		o->gso_size = 0;	/* meaningless without GSO (5.1.6.2) */
		return true;
	}
	/* TCPv4 only (no ECN bit: not offered), with NEEDS_CSUM and an MSS */
	return gso == VNET_HDR_GSO_TCPV4 && virtio_pci_has(&dev->vp, VIRTIO_NET_F_HOST_TSO4) &&
	       o->csum && o->gso_size;
}

enum tx_result { TX_DONE, TX_WAIT, TX_BROKEN };

/* Handle one transmit chain. */
static enum tx_result tx_one(struct vnet *dev, struct vq *q, const struct vq_mem *m)
{
	const struct vq_chain *c = &dev->chain;
	uint64_t len = c->out_len;
	struct vnet_offload o;
	int rc;

	if (c->nr_in)
		return vq_fail(q, VQ_ERR_DIR), TX_BROKEN;
	if (!vnet_link_up(dev))
		drop(dev, VNET_DROP_TX_LINK_DOWN);	/* the cable is out */
	else if (len < VNET_HDR_LEN + VNET_MIN_FRAME)
		drop(dev, VNET_DROP_TX_RUNT);
	else if (len > VNET_HDR_LEN + VNET_MAX_GSO_FRAME)
		drop(dev, VNET_DROP_TX_OVERSIZE);
	else if (vq_read_chain(q, m, c, 0, dev->buf, len))
		return TX_BROKEN;
	else if (!parse_hdr(dev, dev->buf, &o))
		drop(dev, VNET_DROP_TX_BAD_HDR);
	else if (len > VNET_HDR_LEN + (o.gso_size ? VNET_MAX_GSO_FRAME : VNET_MAX_FRAME))
		drop(dev, VNET_DROP_TX_OVERSIZE);
	else if ((rc = dev->cfg.tx(dev->cfg.ctx, dev->buf + VNET_HDR_LEN, len - VNET_HDR_LEN,
				   &o)) == -EAGAIN) {
		vq_unpop(q);
		dev->tx_stalled = true;
		dev->stats.tx_stalls++;
		return TX_WAIT;
	} else if (rc) {
		drop(dev, VNET_DROP_TX_OFFLOAD);
	} else {
		dev->stats.tx_frames++;
		dev->stats.tx_bytes += len - VNET_HDR_LEN;
		dev->stats.tx_csum += o.csum;
		dev->stats.tx_gso += o.gso_size != 0;
	}
	return vq_push(q, m, c->head, 0) ? TX_BROKEN : TX_DONE;
}

static void tx_queue(struct vnet *dev)
{
	struct vq *q = &dev->vp.vq[VNET_TXQ];
	const struct vq_mem *m = &dev->vp.c.mem;
	unsigned int done = 0, max = TX_BATCH_QUEUES * q->size;
	enum tx_result r = TX_DONE;
	int rc = 0;

	dev->tx_stalled = false;
	while (done < max && (rc = vq_pop(q, m, &dev->chain)) == 1) {
		r = tx_one(dev, q, m);
		if (r != TX_DONE)
			break;
		done++;
	}
	if (rc < 0 || r == TX_BROKEN) {
		drop(dev, VNET_DROP_TX_QUEUE);
		virtio_pci_queue_failed(&dev->vp, VNET_TXQ);
	}
	if (done)
		virtio_pci_used(&dev->vp, VNET_TXQ);
}

void vnet_tx_resume(struct vnet *dev)
{
	const struct vq *q = &dev->vp.vq[VNET_TXQ];

	if (virtio_pci_driver_ok(&dev->vp) && q->ready && !q->err)
		tx_queue(dev);
	else
		dev->tx_stalled = false;	/* reset, broken: nothing waits any more */
}

static void notify(void *opaque, unsigned int queue)
{
	struct vnet *dev = opaque;

	if (queue == VNET_TXQ)
		tx_queue(dev);
	else if (queue == VNET_RXQ) {	/* new receive buffers: what waits may go in */
		dev->rx_kicked = true;
		dev->rx_short = RX_SHORT_NO;
	}
}

bool vnet_rx_take_kick(struct vnet *dev)
{
	bool k = dev->rx_kicked;

	dev->rx_kicked = false;
	return k;
}

static const struct virtio_dev_ops net_ops = {
	.reset = net_reset,
	.cfg_rw = cfg_rw,
	.notify = notify,
};

int vnet_init(struct vnet *dev, const struct vnet_config *cfg)
{
	struct virtio_pci_config c = {
		.type = VIRTIO_ID_NET, .class_code = CLASS_ETHERNET, .num_queues = 2,
		.features = VIRTIO_NET_F_CSUM | VIRTIO_NET_F_GUEST_CSUM | VIRTIO_NET_F_MAC |
			    VIRTIO_NET_F_HOST_TSO4 | VIRTIO_NET_F_GUEST_TSO4 | VIRTIO_NET_F_MRG_RXBUF |
			    VIRTIO_NET_F_STATUS,
		.cfg_len = VNET_CFG_LEN,
		.irq = cfg->irq, .ops = &net_ops, .dev = dev, .mem = cfg->mem,
	};

	if (!cfg->tx || (cfg->mac[0] & 1))
		return -EINVAL;
	memset(dev, 0, sizeof(*dev));
	dev->cfg = *cfg;
	dev->net_status = VIRTIO_NET_S_LINK_UP;
	return virtio_pci_init(&dev->vp, &c);
}

static void rx_broken(struct vnet *dev)
{
	drop(dev, VNET_DROP_RX_QUEUE);
	virtio_pci_queue_failed(&dev->vp, VNET_RXQ);
}

/*
 * The driver has posted too few buffers for the frame (RX_SHORT_WAIT: it
 * waits, -ENOBUFS), or buffers that even all together are too small for
 * it (RX_SHORT_DROP).  Until its next receive doorbell, every frame is
 * answered so at once, without walking the ring again: a guest that posts
 * long chains of tiny buffers costs one walk per doorbell, not one per
 * frame (frames for it may come from other guests' exits).
 */
static int rx_short(struct vnet *dev, enum rx_short why)
{
	dev->rx_short = why;
	if (why == RX_SHORT_DROP)
		return drop(dev, VNET_DROP_RX_SMALL_BUF), -EAGAIN;
	dev->stats.rx_waits++;
	return -ENOBUFS;
}

/* Header h and frame f (len bytes) into the next receive chain. */
static int rx_put(struct vnet *dev, const uint8_t *h, const struct vnet_rx_frame *f, size_t len)
{
	struct vq *q = &dev->vp.vq[VNET_RXQ];
	const struct vq_mem *m = &dev->vp.c.mem;
	const struct vq_chain *c = &dev->chain;
	int rc = vq_pop(q, m, &dev->chain);
	uint64_t off = VNET_HDR_LEN;

	if (rc == 0)
		return rx_short(dev, RX_SHORT_WAIT);	/* until the driver posts more */
	if (rc == 1 && c->nr_out)
		rc = vq_fail(q, VQ_ERR_DIR);
	if (rc == 1 && c->in_len < VNET_HDR_LEN + len && f->gso_size) {
		vq_unpop(q);		/* the segments go one by one instead */
		dev->stats.rx_gso_small++;
		return -EMSGSIZE;
	}
	if (rc == 1 && c->in_len < VNET_HDR_LEN + len) {
		drop(dev, VNET_DROP_RX_SMALL_BUF);
		rc = vq_push(q, m, c->head, 0) ? -EIO : -EAGAIN;
	} else if (rc == 1) {
		rc = vq_write_chain(q, m, c, 0, h, VNET_HDR_LEN);
		for (unsigned int i = 0; i < f->nr && !rc; off += f->piece[i++].len)
			rc = vq_write_chain(q, m, c, off, f->piece[i].p, f->piece[i].len);
		rc = rc == 0 && vq_push(q, m, c->head, (uint32_t)(VNET_HDR_LEN + len)) == 0 ? 0
											  : -EIO;
	}
	if (rc == -EIO)
		return rx_broken(dev), -EAGAIN;
	virtio_pci_used(&dev->vp, VNET_RXQ);
	return rc;
}

/* Bytes [at, at + k) of header h and then f's pieces, into chain c from
 * its start. */
static int write_span(struct vnet *dev, const struct vq_chain *c, const uint8_t *h,
		      const struct vnet_rx_frame *f, size_t at, size_t k)
{
	struct vq *q = &dev->vp.vq[VNET_RXQ];
	size_t pos = 0, done = 0;

	for (int i = -1; i < (int)f->nr && done < k; i++) {
		const uint8_t *p = i < 0 ? h : f->piece[i].p;
		size_t n = i < 0 ? VNET_HDR_LEN : f->piece[i].len;

		if (at + done < pos + n) {
			size_t from = at + done - pos, take = n - from < k - done ? n - from : k - done;

			if (vq_write_chain(q, &dev->vp.c.mem, c, done, p + from, take))
				return -EIO;
			done += take;
		}
		pos += n;
	}
	return 0;
}

/* With MRG_RXBUF (Virtio 1.1 5.1.6.4): as many buffers as the frame
 * needs, num_buffers in the header says how many.  Not enough of them
 * posted: none taken (a super-frame then goes as its segments).  At most
 * a ring's worth is taken, however fast the driver posts meanwhile from
 * another CPU (dev->used has room for that many), and at most a ring's
 * worth of descriptors is read, however the driver nests them in
 * indirect tables (this runs under the switch's delivery lock, which
 * every guest's frames share): a frame that does not fit in them is
 * dropped. */
static int rx_put_merged(struct vnet *dev, uint8_t *h, const struct vnet_rx_frame *f, size_t len)
{
	struct vq *q = &dev->vp.vq[VNET_RXQ];
	const struct vq_mem *m = &dev->vp.c.mem;
	size_t total = VNET_HDR_LEN + len, off = 0;
	uint32_t walked = 0;		/* descriptors read */
	uint16_t n = 0;
	int rc = 1;

	while (off < total && rc == 1 && n < q->size && walked < q->size) {
		struct vq_chain *c = n ? &dev->chain : &dev->first;
		size_t k;

		rc = vq_pop(q, m, c);
		if (rc == 1 && c->nr_out)
			rc = vq_fail(q, VQ_ERR_DIR);
		if (rc != 1)
			break;
		if (!n && c->in_len < VNET_HDR_LEN) {	/* 5.1.6.3.1: not even the header */
			drop(dev, VNET_DROP_RX_SMALL_BUF);
			if (vq_push(q, m, c->head, 0))
				return rx_broken(dev), -EAGAIN;
			virtio_pci_used(&dev->vp, VNET_RXQ);
			return -EAGAIN;
		}
		walked += c->nr_in;
		k = c->in_len < total - off ? (size_t)c->in_len : total - off;
		if (n && write_span(dev, c, h, f, off, k))	/* the first goes last */
			rc = -EIO;
		dev->used[n].head = c->head;
		dev->used[n++].len = (uint32_t)k;
		off += k;
	}
	if (rc == 1 && off < total) {	/* a whole ring is too small: it never fits */
		vq_unpop_n(q, n);
		if (f->gso_size)
			return dev->stats.rx_gso_small++, -EMSGSIZE;
		return rx_short(dev, RX_SHORT_DROP);
	}
	if (rc == 0) {			/* the ring ran dry: give them all back */
		vq_unpop_n(q, n);
		if (f->gso_size)
			return dev->stats.rx_gso_small++, -EMSGSIZE;
		return rx_short(dev, RX_SHORT_WAIT);
	}
	put_le16(h + 10, n);		/* num_buffers */
	if (rc < 0 || write_span(dev, &dev->first, h, f, 0, dev->used[0].len))
		return rx_broken(dev), -EAGAIN;
	if (vq_push_n(q, m, dev->used, n))	/* all at once (5.1.6.4.2) */
		return rx_broken(dev), -EAGAIN;
	virtio_pci_used(&dev->vp, VNET_RXQ);
	return 0;
}

bool vnet_rx_gso(const struct vnet *dev)
{
	return virtio_pci_has(&dev->vp, VIRTIO_NET_F_GUEST_TSO4) &&
	       virtio_pci_has(&dev->vp, VIRTIO_NET_F_GUEST_CSUM);
}

int vnet_rx_frame(struct vnet *dev, const struct vnet_rx_frame *f)
{
	struct vq *q = &dev->vp.vq[VNET_RXQ];
	uint8_t h[VNET_HDR_LEN] = { 0 };
	bool valid = f->valid && virtio_pci_has(&dev->vp, VIRTIO_NET_F_GUEST_CSUM);
	size_t len = 0;
	int rc;

	for (unsigned int i = 0; i < f->nr; i++)
		len += f->piece[i].len;
	if (len < VNET_MIN_FRAME || len > (f->gso_size ? VNET_MAX_GSO_FRAME : VNET_MAX_FRAME) ||
	    (f->gso_size && (!vnet_rx_gso(dev) || f->hdr_len < 14 + 20 + 20 || f->hdr_len >= len)))
		return drop(dev, VNET_DROP_RX_BAD_FRAME), -EAGAIN;
	if (!virtio_pci_driver_ok(&dev->vp) || !q->ready)
		return drop(dev, VNET_DROP_RX_NOT_READY), -EAGAIN;
	if (!vnet_link_up(dev))
		return drop(dev, VNET_DROP_RX_LINK_DOWN), -EAGAIN;
	if (q->err)
		return drop(dev, VNET_DROP_RX_QUEUE), -EAGAIN;
	if (dev->rx_short)
		return rx_short(dev, dev->rx_short);
	if (f->gso_size) {
		h[0] = VNET_HDR_F_NEEDS_CSUM;
		h[1] = VNET_HDR_GSO_TCPV4;
		put_le16(h + 2, f->hdr_len);
		put_le16(h + 4, f->gso_size);
		put_le16(h + 6, 14 + 20);		/* csum_start: the TCP header */
		put_le16(h + 8, 16);			/* csum_offset: its checksum */
	} else if (valid) {
		h[0] = VNET_HDR_F_DATA_VALID;
	}
	h[10] = 1;				/* num_buffers = 1 (le16) */
	rc = virtio_pci_has(&dev->vp, VIRTIO_NET_F_MRG_RXBUF) ? rx_put_merged(dev, h, f, len)
							      : rx_put(dev, h, f, len);
	if (rc)
		return rc;
	dev->stats.rx_frames += f->gso_size ? f->segs : 1;
	dev->stats.rx_bytes += len;
	dev->stats.rx_valid += valid && !f->gso_size;
	dev->stats.rx_gso += f->gso_size != 0;
	dev->stats.rx_gso_segs += f->gso_size ? f->segs : 0;
	return 0;
}

int vnet_rx_valid(struct vnet *dev, const uint8_t *frame, size_t len, bool valid)
{
	struct vnet_piece p = { frame, len };

	return vnet_rx_frame(dev, &(struct vnet_rx_frame){ .piece = &p, .nr = 1, .valid = valid });
}

void vnet_set_link(struct vnet *dev, bool up)
{
	uint16_t st = up ? VIRTIO_NET_S_LINK_UP : 0;

	if (st == dev->net_status)
		return;
	dev->net_status = st;
	virtio_pci_config_changed(&dev->vp);
}

int vnet_snapshot(struct vnet *dev, struct snap *s)
{
	uint8_t mac[6];
	uint16_t st = dev->net_status;

	memcpy(mac, dev->cfg.mac, sizeof(mac));
	if (snap_version(s, VNET_SNAP_VERSION))
		return s->err;
	snap_bytes(s, mac, sizeof(mac));
	snap_u16(s, &st);
	if (s->restore && !s->err &&
	    (memcmp(mac, dev->cfg.mac, sizeof(mac)) || (st & ~VIRTIO_NET_S_LINK_UP)))
		return snap_invalid(s);
	if (s->err || virtio_pci_snapshot(&dev->vp, s))
		return s->err;
	dev->net_status = st;
	return 0;
}
