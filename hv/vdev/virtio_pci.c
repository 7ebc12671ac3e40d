/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The virtio 1.x PCI transport: see virtio_pci.h.  BAR 0 accesses land in
 * bar_rw(), which splits them by region.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "hv/lib/bytes.h"
#include "hv/vdev/virtio_pci.h"

#define VIRTIO_PCI_SNAP_VERSION	2	/* 2: MSI-X */
#define CAP_VNDR		0x09
#define CAP_COMMON		1
#define CAP_NOTIFY		2
#define CAP_ISR			3
#define CAP_DEVICE		4
#define CAP_MSIX		0x11
#define MSIX_CTRL_HI		3	/* message control's high byte in the capability */
#define MSIX_ENABLE		0x80	/* ... bit 15 */
#define MSIX_FN_MASK		0x40	/* ... bit 14 */
#define MSIX_ENTRY		16
#define MSIX_VEC_MASKED		1u
#define STATUS_DRIVER_BITS	(VIRTIO_S_ACKNOWLEDGE | VIRTIO_S_DRIVER | VIRTIO_S_DRIVER_OK | \
				 VIRTIO_S_FEATURES_OK | VIRTIO_S_FAILED)

/* Common configuration offsets (Virtio 1.1, 4.1.4.3). */
enum {
	CC_DFSELECT = 0x00, CC_DF = 0x04, CC_GFSELECT = 0x08, CC_GF = 0x0C,
	CC_MSIX = 0x10, CC_NUMQ = 0x12, CC_STATUS = 0x14, CC_CFGGEN = 0x15,
	CC_Q_SELECT = 0x16, CC_Q_SIZE = 0x18, CC_Q_MSIX = 0x1A, CC_Q_ENABLE = 0x1C,
	CC_Q_NOFF = 0x1E, CC_Q_DESC = 0x20, CC_Q_AVAIL = 0x28, CC_Q_USED = 0x30,
	CC_Q_NDATA = 0x38, CC_Q_RESET = 0x3A,
};

static uint64_t all_features(const struct virtio_pci *vp)
{
	return vp->c.features | VIRTIO_F_RING_INDIRECT_DESC | VIRTIO_F_VERSION_1;
}

bool virtio_pci_has(const struct virtio_pci *vp, uint64_t mask)
{
	return (vp->status & VIRTIO_S_FEATURES_OK) && (vp->driver_features & mask) == mask;
}

/* A queue that broke stops by itself (its err, checked by its users):
 * NEEDS_RESET does not silence the others.  Without bus mastering the
 * function may not touch memory, rings and buffers included: a kexec'ing
 * Linux turns it off and leaves the device running, and the old rings are
 * the new kernel's memory by then. */
bool virtio_pci_driver_ok(const struct virtio_pci *vp)
{
	return (vp->status & VIRTIO_S_DRIVER_OK) && !(vp->status & VIRTIO_S_FAILED) &&
	       vpci_fn_master(&vp->fn);
}

/* ---- interrupts: INTx and the ISR, or MSI-X ------------------------------ */

static unsigned int nr_vectors(const struct virtio_pci *vp)
{
	return vp->c.num_queues + 1u;
}

static uint8_t msix_ctrl(const struct virtio_pci *vp)
{
	return vp->fn.cfg[vp->msix_cap + MSIX_CTRL_HI];
}

static bool msix_on(const struct virtio_pci *vp)
{
	return msix_ctrl(vp) & MSIX_ENABLE;
}

/* Send vector's message now, or hold it pending; false if held. */
static bool msix_send(struct virtio_pci *vp, unsigned int vec)
{
	const struct virtio_msix *e = &vp->msix[vec];

	if ((msix_ctrl(vp) & MSIX_FN_MASK) || (e->ctrl & MSIX_VEC_MASKED) ||
	    !vpci_fn_msi(&vp->fn, (uint64_t)e->addr_hi << 32 | e->addr_lo, e->data)) {
		if (!(vp->msix_pending & 1u << vec))
			vp->stats.msi_pending++;
		vp->msix_pending |= 1u << vec;
		return false;
	}
	vp->msix_pending &= ~(1u << vec);
	vp->stats.msis++;
	return true;
}

static void msix_vector(struct virtio_pci *vp, uint16_t vec)
{
	if (vec < nr_vectors(vp))
		msix_send(vp, vec);	/* NO_VECTOR: the driver wants none */
}

/* Pending messages whose masks are now clear go (PCI 3.0 6.8.2.9). */
static void msix_flush(struct virtio_pci *vp)
{
	for (unsigned int v = 0; v < nr_vectors(vp) && msix_on(vp); v++)
		if (vp->msix_pending & 1u << v)
			msix_send(vp, v);
}

static void raise_isr(struct virtio_pci *vp, uint8_t bits)
{
	if (!vp->isr)
		vp->stats.irqs++;
	vp->isr |= bits;
	vpci_fn_set_intx(&vp->fn, 1);
}

void virtio_pci_used(struct virtio_pci *vp, unsigned int queue)
{
	if (queue >= vp->c.num_queues || !vq_want_irq(&vp->vq[queue], &vp->c.mem))
		return;
	if (msix_on(vp))
		msix_vector(vp, vp->queue_vector[queue]);
	else
		raise_isr(vp, VIRTIO_ISR_QUEUE);
}

void virtio_pci_config_changed(struct virtio_pci *vp)
{
	vp->cfg_gen++;
	if (!(vp->status & VIRTIO_S_DRIVER_OK))
		return;
	if (msix_on(vp)) {
		vp->isr |= VIRTIO_ISR_CONFIG;	/* set, though INTx stays low (4.1.4.5.2) */
		msix_vector(vp, vp->msix_config);
	} else {
		raise_isr(vp, VIRTIO_ISR_CONFIG);
	}
}

/* The guest wrote configuration space: MSI-X may have been enabled (INTx
 * then stays low), disabled, or unmasked (pending messages go). */
static void cfg_written(void *dev)
{
	struct virtio_pci *vp = dev;

	vpci_fn_set_intx(&vp->fn, !msix_on(vp) && vp->isr);
	msix_flush(vp);
}

void virtio_pci_queue_failed(struct virtio_pci *vp, unsigned int queue)
{
	if (queue >= vp->c.num_queues || vp->vq[queue].err >= VQ_NR_ERR)
		return;
	vp->stats.queue_errors[vp->vq[queue].err]++;
	vp->stats.last_error.queue = (uint16_t)queue;
	vp->stats.last_error.err = vp->vq[queue].err;
	vp->stats.last_error.avail = vp->vq[queue].err_avail;
	vp->stats.last_error.last_avail = vp->vq[queue].last_avail;
	vp->stats.last_error.used_idx = vp->vq[queue].used_idx;
	if (vp->status & VIRTIO_S_NEEDS_RESET)
		return;
	vp->status |= VIRTIO_S_NEEDS_RESET;
	virtio_pci_config_changed(vp);
}

static void device_reset(struct virtio_pci *vp)
{
	vp->dev_feat_sel = vp->drv_feat_sel = 0;
	vp->driver_features = 0;
	vp->status = 0;
	vp->isr = 0;
	vp->queue_sel = 0;
	vp->msix_config = VIRTIO_NO_VECTOR;	/* the table is PCI's: it stays */
	vp->msix_pending = 0;			/* the causes went with the queues */
	for (unsigned int i = 0; i < VIRTIO_MAX_QUEUES; i++) {
		vq_reset(&vp->vq[i]);
		vp->queue_vector[i] = VIRTIO_NO_VECTOR;
	}
	vpci_fn_set_intx(&vp->fn, 0);
	if (vp->c.ops->reset)
		vp->c.ops->reset(vp->c.dev);
}

/* ---- common configuration --------------------------------------------- */

static struct vq *selected(struct virtio_pci *vp)
{
	return vp->queue_sel < vp->c.num_queues ? &vp->vq[vp->queue_sel] : NULL;
}

static uint64_t queue_read(struct virtio_pci *vp, uint32_t off)
{
	struct vq *q = selected(vp);

	if (!q)
		return off == CC_Q_MSIX ? VIRTIO_NO_VECTOR : 0;
	switch (off) {
	case CC_Q_SIZE:   return q->size;
	case CC_Q_MSIX:   return vp->queue_vector[vp->queue_sel];
	case CC_Q_ENABLE: return q->ready;
	case CC_Q_NOFF:   return vp->queue_sel;
	case CC_Q_NDATA:  return vp->queue_sel;
	case CC_Q_DESC:   return q->desc;
	case CC_Q_AVAIL:  return q->avail;
	case CC_Q_USED:   return q->used;
	}
	return 0;
}

/* The 64-bit field that off falls in, with off's shift into it. */
static uint64_t *queue_addr(struct vq *q, uint32_t off, unsigned int *shift)
{
	*shift = (off & 4) * 8;
	switch (off & ~7u) {
	case CC_Q_DESC:  return &q->desc;
	case CC_Q_AVAIL: return &q->avail;
	case CC_Q_USED:  return &q->used;
	}
	return NULL;
}

static uint64_t common_read(struct virtio_pci *vp, uint32_t off)
{
	uint64_t f = all_features(vp);

	switch (off) {
	case CC_DFSELECT: return vp->dev_feat_sel;
	case CC_DF:       return vp->dev_feat_sel < 2 ? (uint32_t)(f >> (32 * vp->dev_feat_sel)) : 0;
	case CC_GFSELECT: return vp->drv_feat_sel;
	case CC_GF:       return vp->drv_feat_sel < 2 ?
			  (uint32_t)(vp->driver_features >> (32 * vp->drv_feat_sel)) : 0;
	case CC_MSIX:     return vp->msix_config;
	case CC_NUMQ:     return vp->c.num_queues;
	case CC_STATUS:   return vp->status;
	case CC_CFGGEN:   return vp->cfg_gen;
	case CC_Q_SELECT: return vp->queue_sel;
	}
	if (off >= CC_Q_DESC && off < CC_Q_NDATA) {
		struct vq *q = selected(vp);
		unsigned int shift = 0;
		uint64_t *a = q ? queue_addr(q, off, &shift) : NULL;

		return a ? *a >> shift : 0;
	}
	return queue_read(vp, off);
}

/* FEATURES_OK only for a subset of the offer that includes VERSION_1. */
static void set_status(struct virtio_pci *vp, uint8_t val)
{
	uint8_t add = val & STATUS_DRIVER_BITS & ~vp->status;

	if (!val) {
		vp->stats.resets++;
		device_reset(vp);
		return;
	}
	if ((add & VIRTIO_S_FEATURES_OK) &&
	    ((vp->driver_features & ~all_features(vp)) ||
	     !(vp->driver_features & VIRTIO_F_VERSION_1))) {
		vp->stats.features_refused++;
		add &= (uint8_t)~VIRTIO_S_FEATURES_OK;
	}
	vp->status |= add;
}

static void set_driver_features(struct virtio_pci *vp, uint32_t val)
{
	unsigned int shift = 32 * vp->drv_feat_sel;

	if (vp->drv_feat_sel >= 2 || (vp->status & VIRTIO_S_FEATURES_OK))
		return;
	vp->driver_features = (vp->driver_features & ~(0xFFFFFFFFull << shift)) |
			      (uint64_t)val << shift;
}

static void queue_enable(struct virtio_pci *vp, struct vq *q)
{
	if (q->ready || q->err)
		return;
	q->indirect = virtio_pci_has(vp, VIRTIO_F_RING_INDIRECT_DESC);
	if (vq_enable(q, &vp->c.mem))
		virtio_pci_queue_failed(vp, vp->queue_sel);
}

/* A vector the table has, else NO_VECTOR: what the driver reads back. */
static uint16_t vector_or_none(const struct virtio_pci *vp, uint64_t val)
{
	return val < nr_vectors(vp) ? (uint16_t)val : VIRTIO_NO_VECTOR;
}

static void queue_write(struct virtio_pci *vp, uint32_t off, uint8_t size, uint64_t val)
{
	struct vq *q = selected(vp);
	unsigned int shift;
	uint64_t *a, mask;

	if (q && off == CC_Q_MSIX) {
		vp->queue_vector[vp->queue_sel] = vector_or_none(vp, val);
		return;
	}
	if (!q || q->ready)
		return;			/* fields of an enabled queue are fixed */
	if (off == CC_Q_SIZE) {
		q->size = (uint16_t)val;
	} else if (off == CC_Q_ENABLE) {
		if (val & 1)
			queue_enable(vp, q);
	} else if (off >= CC_Q_DESC && off < CC_Q_NDATA) {
		a = queue_addr(q, off, &shift);
		mask = size == 8 ? ~0ull : 0xFFFFFFFFull;
		*a = (*a & ~(mask << shift)) | (val & mask) << shift;
	}
}

static void common_write(struct virtio_pci *vp, uint32_t off, uint8_t size, uint64_t val)
{
	switch (off) {
	case CC_DFSELECT: vp->dev_feat_sel = (uint32_t)val; break;
	case CC_GFSELECT: vp->drv_feat_sel = (uint32_t)val; break;
	case CC_GF:       set_driver_features(vp, (uint32_t)val); break;
	case CC_STATUS:   set_status(vp, (uint8_t)val); break;
	case CC_Q_SELECT: vp->queue_sel = (uint16_t)val; break;
	case CC_MSIX:     vp->msix_config = vector_or_none(vp, val); break;
	default:          queue_write(vp, off, size, val); break;
	}
}

/* ---- BAR 0 ------------------------------------------------------------- */

static void notify(struct virtio_pci *vp, uint64_t off)
{
	unsigned int q = (unsigned int)(off / VIRTIO_PCI_NOTIFY_MULT);

	vp->stats.notifies++;
	if (q >= vp->c.num_queues || !vp->vq[q].ready || vp->vq[q].err ||
	    !virtio_pci_driver_ok(vp)) {
		vp->stats.notifies_ignored++;
		return;
	}
	vp->c.ops->notify(vp->c.dev, q);
}

/* The MSI-X table (dword fields; a qword covers two) and the PBA. */
static void msix_rw(struct virtio_pci *vp, uint64_t off, uint8_t size, bool write, uint64_t *val)
{
	if (off >= VIRTIO_PCI_MSIX_PBA) {
		if (!write && off == VIRTIO_PCI_MSIX_PBA)
			*val = vp->msix_pending;	/* read-only */
		return;
	}
	off -= VIRTIO_PCI_MSIX_TABLE;
	if (off / MSIX_ENTRY >= nr_vectors(vp) || (size != 4 && size != 8) || (off & 3))
		return;
	for (unsigned int i = 0; i < size / 4u && (off & 15) + 4 * i < MSIX_ENTRY; i++) {
		uint32_t *f = (uint32_t *)&vp->msix[off / MSIX_ENTRY] + ((off & 15) / 4 + i);
		uint32_t v = (uint32_t)(*val >> (32 * i));

		if (!write) {
			*val |= (uint64_t)*f << (32 * i);
			continue;
		}
		if (f == &vp->msix[off / MSIX_ENTRY].addr_lo)
			v &= ~3u;			/* dword aligned */
		else if (f == &vp->msix[off / MSIX_ENTRY].ctrl)
			v &= MSIX_VEC_MASKED;
		*f = v;
	}
	if (write)
		msix_flush(vp);			/* an entry may have been unmasked */
}

static void bar_rw(void *dev, unsigned int bar, uint64_t off, uint8_t size, bool write,
		   uint64_t *val)
{
	struct virtio_pci *vp = dev;
	uint64_t mask = size == 8 ? ~0ull : (1ull << (8 * size)) - 1;

	(void)bar;
	if (off < VIRTIO_PCI_COMMON + VIRTIO_PCI_COMMON_LEN) {
		if (write)
			common_write(vp, (uint32_t)off, size, *val & mask);
		else
			*val = common_read(vp, (uint32_t)off) & mask;
	} else if (off >= VIRTIO_PCI_ISR && off < VIRTIO_PCI_ISR + 4) {
		if (!write && off == VIRTIO_PCI_ISR) {
			*val = vp->isr;		/* read to clear (4.1.4.5.1) */
			vp->isr = 0;
			vpci_fn_set_intx(&vp->fn, 0);
		}
	} else if (off >= VIRTIO_PCI_DEVCFG && off + size <= VIRTIO_PCI_DEVCFG + vp->c.cfg_len) {
		vp->c.ops->cfg_rw(vp->c.dev, (uint32_t)(off - VIRTIO_PCI_DEVCFG), size, write, val);
	} else if (off >= VIRTIO_PCI_MSIX_TABLE) {
		msix_rw(vp, off, size, write, val);
	} else if (off >= VIRTIO_PCI_NOTIFY && write) {
		notify(vp, off - VIRTIO_PCI_NOTIFY);
	}
}

/* ---- creation ------------------------------------------------------------ */

static int add_cap(struct virtio_pci *vp, uint8_t type, uint32_t offset, uint32_t len)
{
	uint8_t cap[20] = { CAP_VNDR, 0, 16, type, 0 };
	uint8_t n = 16;

	put_le32(cap + 8, offset);
	put_le32(cap + 12, len);
	if (type == CAP_NOTIFY) {
		n = 20;
		cap[2] = n;
		put_le32(cap + 16, VIRTIO_PCI_NOTIFY_MULT);
	}
	return vpci_fn_add_cap(&vp->fn, cap, n, 0, 0) < 0 ? -EINVAL : 0;
}

static int add_msix_cap(struct virtio_pci *vp)
{
	uint8_t cap[12] = { CAP_MSIX, 0, (uint8_t)(nr_vectors(vp) - 1), 0 };
	int off;

	put_le32(cap + 4, VIRTIO_PCI_MSIX_TABLE);	/* BIR 0 */
	put_le32(cap + 8, VIRTIO_PCI_MSIX_PBA);
	off = vpci_fn_add_cap(&vp->fn, cap, sizeof(cap), 0, 0);
	if (off < 0)
		return -EINVAL;
	vp->msix_cap = (uint8_t)off;
	vp->fn.wmask[off + MSIX_CTRL_HI] = MSIX_ENABLE | MSIX_FN_MASK;
	vp->fn.cfg_written = cfg_written;
	for (unsigned int v = 0; v < VIRTIO_MSIX_VECTORS; v++)
		vp->msix[v].ctrl = MSIX_VEC_MASKED;	/* masked at reset (6.8.2.9) */
	return 0;
}

int virtio_pci_init(struct virtio_pci *vp, const struct virtio_pci_config *c)
{
	struct vpci_id id = {
		.vendor = VIRTIO_PCI_VENDOR, .device = (uint16_t)(VIRTIO_PCI_DEVICE_BASE + c->type),
		.subsys_vendor = VIRTIO_PCI_VENDOR, .subsys_id = 0x0040, .revision = 1,
		.class_code = c->class_code,
	};

	if (!c->num_queues || c->num_queues > VIRTIO_MAX_QUEUES || !c->ops || !c->ops->notify ||
	    !c->ops->cfg_rw || c->cfg_len > VIRTIO_PCI_NOTIFY - VIRTIO_PCI_DEVCFG ||
	    !c->mem.read || !c->mem.write || c->type > 0x3F)
		return -EINVAL;
	memset(vp, 0, sizeof(*vp));
	vp->c = *c;
	vpci_fn_init(&vp->fn, &id, c->irq, bar_rw, vp);
	if (vpci_fn_add_bar(&vp->fn, 0, VIRTIO_PCI_BAR_SIZE) ||
	    add_cap(vp, CAP_COMMON, VIRTIO_PCI_COMMON, VIRTIO_PCI_COMMON_LEN) ||
	    add_cap(vp, CAP_NOTIFY, VIRTIO_PCI_NOTIFY,
		    VIRTIO_PCI_NOTIFY_MULT * c->num_queues) ||
	    add_cap(vp, CAP_ISR, VIRTIO_PCI_ISR, 1) ||
	    add_cap(vp, CAP_DEVICE, VIRTIO_PCI_DEVCFG, c->cfg_len ? c->cfg_len : 1) ||
	    add_msix_cap(vp))
		return -EINVAL;
	vp->msix_config = VIRTIO_NO_VECTOR;
	for (unsigned int i = 0; i < VIRTIO_MAX_QUEUES; i++) {
		vq_reset(&vp->vq[i]);
		vp->queue_vector[i] = VIRTIO_NO_VECTOR;
	}
	return 0;
}

/* ---- snapshot ------------------------------------------------------------ */

static bool transport_valid(const struct virtio_pci *vp)
{
	const uint8_t known = STATUS_DRIVER_BITS | VIRTIO_S_NEEDS_RESET;

	if ((vp->status & ~known) || (vp->isr & ~(VIRTIO_ISR_QUEUE | VIRTIO_ISR_CONFIG)))
		return false;
	if ((vp->status & VIRTIO_S_FEATURES_OK) &&
	    ((vp->driver_features & ~all_features(vp)) ||
	     !(vp->driver_features & VIRTIO_F_VERSION_1)))
		return false;
	if ((vp->msix_config >= nr_vectors(vp) && vp->msix_config != VIRTIO_NO_VECTOR) ||
	    (vp->msix_pending >> nr_vectors(vp)))
		return false;
	for (unsigned int v = 0; v < nr_vectors(vp); v++)
		if ((vp->msix[v].ctrl & ~MSIX_VEC_MASKED) || (vp->msix[v].addr_lo & 3))
			return false;
	for (unsigned int i = 0; i < VIRTIO_MAX_QUEUES; i++) {
		if (i < vp->c.num_queues && vp->queue_vector[i] >= nr_vectors(vp) &&
		    vp->queue_vector[i] != VIRTIO_NO_VECTOR)
			return false;
		if (i >= vp->c.num_queues && vp->vq[i].ready)
			return false;
		if (vp->vq[i].err && !(vp->status & VIRTIO_S_NEEDS_RESET))
			return false;	/* a broken queue always asks for a reset */
	}
	return true;
}

int virtio_pci_snapshot(struct virtio_pci *vp, struct snap *s)
{
	struct virtio_pci t = *vp;
	uint8_t nq = (uint8_t)vp->c.num_queues;

	if (snap_version(s, VIRTIO_PCI_SNAP_VERSION))
		return s->err;
	snap_u8(s, &nq);
	if (s->restore && !s->err && nq != vp->c.num_queues)
		return snap_invalid(s);
	vpci_fn_snapshot(&t.fn, s);
	snap_u32(s, &t.dev_feat_sel);
	snap_u32(s, &t.drv_feat_sel);
	snap_u64(s, &t.driver_features);
	snap_u8(s, &t.status);
	snap_u8(s, &t.isr);
	snap_u8(s, &t.cfg_gen);
	snap_u16(s, &t.queue_sel);
	for (unsigned int i = 0; i < vp->c.num_queues; i++)
		vq_snapshot(&t.vq[i], s);
	snap_u16(s, &t.msix_config);
	for (unsigned int i = 0; i < vp->c.num_queues; i++)
		snap_u16(s, &t.queue_vector[i]);
	for (unsigned int v = 0; v < nr_vectors(vp); v++) {
		snap_u32(s, &t.msix[v].addr_lo);
		snap_u32(s, &t.msix[v].addr_hi);
		snap_u32(s, &t.msix[v].data);
		snap_u32(s, &t.msix[v].ctrl);
	}
	snap_u32(s, &t.msix_pending);
	if (!s->restore || s->err)
		return s->err;
	if (!transport_valid(&t))
		return snap_invalid(s);
	t.stats = vp->stats;
	for (unsigned int i = 0; i < vp->c.num_queues; i++)
		t.vq[i].indirect = virtio_pci_has(&t, VIRTIO_F_RING_INDIRECT_DESC);
	*vp = t;
	vpci_fn_set_intx(&vp->fn, vp->isr != 0 && !msix_on(vp));
	return 0;
}

int virtio_pci_check_mem(const struct virtio_pci *vp, char *why, size_t len)
{
	for (unsigned int i = 0; i < vp->c.num_queues; i++) {
		const struct vq *q = &vp->vq[i];
		uint16_t avail, used;
		int rc = vq_check_mem(q, &vp->c.mem, &avail, &used);

		if (rc == -EIO) {
			snprintf(why, len, "queue %u: its rings cannot be read", i);
			return -EINVAL;
		}
		if (rc) {
			snprintf(why, len, "queue %u: memory has avail index %u, used index %u; "
				 "the device took %u and used %u", i, avail, used, q->last_avail,
				 q->used_idx);
			return -EINVAL;
		}
	}
	return 0;
}
