/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Split virtqueues, device side: see virtqueue.h.  Every value read from
 * guest memory is checked before it indexes anything.
 */
#include <errno.h>
#include <string.h>
#include "hv/lib/bytes.h"
#include "hv/vdev/virtqueue.h"

#define VQ_SNAP_VERSION	1
#define DESC_SIZE	16
#define AVAIL_RING	4		/* offset of avail->ring[] */
#define USED_RING	4		/* offset of used->ring[] */
#define USED_ELEM	8

static const char *const err_names[VQ_NR_ERR] = {
	[VQ_OK] = "ok",
	[VQ_ERR_SIZE] = "queue size",
	[VQ_ERR_ALIGN] = "ring alignment",
	[VQ_ERR_RING] = "ring outside RAM",
	[VQ_ERR_IDX] = "avail index jump",
	[VQ_ERR_HEAD] = "head index",
	[VQ_ERR_NEXT] = "next index",
	[VQ_ERR_LOOP] = "chain loop or too long",
	[VQ_ERR_ORDER] = "descriptor order",
	[VQ_ERR_INDIRECT] = "indirect descriptor",
	[VQ_ERR_BUF] = "buffer outside RAM",
	[VQ_ERR_DIR] = "buffer direction",
};

const char *vq_err_name(enum vq_err e)
{
	return (unsigned int)e < VQ_NR_ERR ? err_names[e] : "?";
}

void vq_reset(struct vq *q)
{
	memset(q, 0, sizeof(*q));
	q->size = VQ_MAX_SIZE;
}

int vq_fail(struct vq *q, enum vq_err reason)
{
	if (q->err == VQ_OK)
		q->err = (uint8_t)reason;
	return -EIO;
}

/* Size and alignment (Virtio 1.1, 2.6: desc 16, avail 2, used 4). */
static enum vq_err layout_err(const struct vq *q)
{
	if (!q->size || q->size > VQ_MAX_SIZE || (q->size & (q->size - 1)))
		return VQ_ERR_SIZE;
	if ((q->desc & 15) || (q->avail & 1) || (q->used & 3))
		return VQ_ERR_ALIGN;
	return VQ_OK;
}

/* Whether [gpa, gpa + len) is guest RAM: read its first and last byte
 * (RAM has no holes smaller than a page, and no ring exceeds 4 KiB). */
static bool ram(const struct vq_mem *m, uint64_t gpa, uint64_t len)
{
	uint8_t b;

	if (gpa + len < gpa)
		return false;
	return !m->read(m->ctx, gpa, &b, 1) && !m->read(m->ctx, gpa + len - 1, &b, 1);
}

/* Do the three rings lie in RAM? */
static bool rings_in_ram(const struct vq *q, const struct vq_mem *m)
{
	return ram(m, q->desc, (uint64_t)DESC_SIZE * q->size) &&
	       ram(m, q->avail, AVAIL_RING + 2ull * q->size) &&
	       ram(m, q->used, USED_RING + (uint64_t)USED_ELEM * q->size);
}

int vq_enable(struct vq *q, const struct vq_mem *m)
{
	enum vq_err e = layout_err(q);

	if (e)
		return vq_fail(q, e);
	if (!rings_in_ram(q, m))
		return vq_fail(q, VQ_ERR_RING);
	q->ready = true;
	return 0;
}

static int read16(const struct vq_mem *m, uint64_t gpa, uint16_t *v)
{
	uint8_t b[2];

	if (m->read(m->ctx, gpa, b, 2))
		return -EFAULT;
	*v = get_le16(b);
	return 0;
}

/* One descriptor as the driver wrote it. */
struct desc {
	struct vq_seg seg;
	uint16_t flags, next;
};

/* Read the descriptor at gpa; fault is the reason if it is not in RAM. */
static int read_desc(struct vq *q, const struct vq_mem *m, uint64_t gpa, enum vq_err fault,
		     struct desc *d)
{
	uint8_t b[DESC_SIZE];

	if (m->read(m->ctx, gpa, b, sizeof(b)))
		return vq_fail(q, fault);
	d->seg.gpa = get_le64(b);
	d->seg.len = get_le32(b + 8);
	d->flags = get_le16(b + 12);
	d->next = get_le16(b + 14);
	if (d->seg.gpa + d->seg.len < d->seg.gpa)
		return vq_fail(q, VQ_ERR_BUF);
	return 0;
}

/* Append d's buffer to c: device-readable ones first.  A chain holds at
 * most VQ_MAX_SIZE buffers, direct and indirect together. */
static int add_seg(struct vq *q, struct vq_chain *c, const struct desc *d)
{
	unsigned int n = (unsigned int)c->nr_out + c->nr_in;

	if (n >= VQ_MAX_SIZE)
		return vq_fail(q, VQ_ERR_LOOP);
	c->seg[n] = d->seg;
	if (d->flags & VQ_DESC_F_WRITE) {
		c->nr_in++;
		c->in_len += d->seg.len;
	} else if (c->nr_in) {
		return vq_fail(q, VQ_ERR_ORDER);
	} else {
		c->nr_out++;
		c->out_len += d->seg.len;
	}
	return 0;
}

/*
 * An indirect table (Virtio 1.1 2.6.5.3): ind points at len / 16
 * descriptors, a chain of their own from entry 0, which ends the chain
 * ind was in.  The driver may not set NEXT beside INDIRECT, nor INDIRECT
 * inside a table; ind's WRITE flag means nothing (the device ignores it).
 * The whole table must be guest RAM.  A walk longer than the table loops.
 */
static int walk_table(struct vq *q, const struct vq_mem *m, const struct desc *ind,
		      struct vq_chain *c)
{
	uint32_t nr = ind->seg.len / DESC_SIZE, i = 0;

	if (!q->indirect || (ind->flags & VQ_DESC_F_NEXT) || !nr ||
	    ind->seg.len % DESC_SIZE || nr > VQ_MAX_SIZE)
		return vq_fail(q, VQ_ERR_INDIRECT);
	if (!ram(m, ind->seg.gpa, ind->seg.len))
		return vq_fail(q, VQ_ERR_BUF);
	for (uint32_t n = 0;; n++) {
		struct desc d;

		if (n >= nr)
			return vq_fail(q, VQ_ERR_LOOP);
		if (read_desc(q, m, ind->seg.gpa + (uint64_t)DESC_SIZE * i, VQ_ERR_BUF, &d))
			return -EIO;
		if (d.flags & VQ_DESC_F_INDIRECT)
			return vq_fail(q, VQ_ERR_INDIRECT);
		if (add_seg(q, c, &d))
			return -EIO;
		if (!(d.flags & VQ_DESC_F_NEXT))
			return 1;
		if (d.next >= nr)
			return vq_fail(q, VQ_ERR_NEXT);
		i = d.next;
	}
}

/* Follow the chain from head into c.  A chain may visit at most size
 * descriptors of the table: one more means it loops. */
static int walk_chain(struct vq *q, const struct vq_mem *m, uint16_t head, struct vq_chain *c)
{
	uint16_t i = head;

	memset(c, 0, offsetof(struct vq_chain, seg));
	c->head = head;
	for (unsigned int n = 0;; n++) {
		struct desc d;

		if (n >= q->size)
			return vq_fail(q, VQ_ERR_LOOP);
		if (read_desc(q, m, q->desc + (uint64_t)DESC_SIZE * i, VQ_ERR_RING, &d))
			return -EIO;
		if (d.flags & VQ_DESC_F_INDIRECT)
			return walk_table(q, m, &d, c);
		if (add_seg(q, c, &d))
			return -EIO;
		if (!(d.flags & VQ_DESC_F_NEXT))
			return 1;
		if (d.next >= q->size)
			return vq_fail(q, VQ_ERR_NEXT);
		i = d.next;
	}
}

int vq_check_mem(const struct vq *q, const struct vq_mem *m, uint16_t *avail, uint16_t *used)
{
	*avail = *used = 0;
	if (!q->ready || q->err)
		return 0;
	/* as vq_enable checked them: a restored queue was never enabled here */
	if (!rings_in_ram(q, m) || read16(m, q->avail + 2, avail) ||
	    read16(m, q->used + 2, used))
		return -EIO;
	if ((uint16_t)(*avail - q->last_avail) > q->size || *used != q->used_idx)
		return -ERANGE;
	return 0;
}

int vq_pop(struct vq *q, const struct vq_mem *m, struct vq_chain *c)
{
	uint16_t avail_idx, head;

	if (q->err || !q->ready)
		return -EIO;
	if (read16(m, q->avail + 2, &avail_idx))
		return vq_fail(q, VQ_ERR_RING);
	if ((uint16_t)(avail_idx - q->last_avail) > q->size) {
		q->err_avail = avail_idx;
		return vq_fail(q, VQ_ERR_IDX);
	}
	if (avail_idx == q->last_avail)
		return 0;
	if (read16(m, q->avail + AVAIL_RING + 2ull * (q->last_avail & (q->size - 1)), &head))
		return vq_fail(q, VQ_ERR_RING);
	if (head >= q->size)
		return vq_fail(q, VQ_ERR_HEAD);
	if (walk_chain(q, m, head, c) < 0)
		return -EIO;
	q->last_avail++;
	return 1;
}

void vq_unpop(struct vq *q)
{
	q->last_avail--;
}

void vq_unpop_n(struct vq *q, uint16_t n)
{
	q->last_avail = (uint16_t)(q->last_avail - n);
}

int vq_push_n(struct vq *q, const struct vq_mem *m, const struct vq_used *e, uint16_t n)
{
	uint8_t elem[USED_ELEM], idx[2];

	if (q->err || !q->ready)
		return -EIO;
	if (n > q->size)
		return vq_fail(q, VQ_ERR_RING);
	for (uint16_t i = 0; i < n; i++) {
		uint16_t slot = (uint16_t)(q->used_idx + i) & (q->size - 1);

		put_le32(elem, e[i].head);
		put_le32(elem + 4, e[i].len);
		if (m->write(m->ctx, q->used + USED_RING + (uint64_t)USED_ELEM * slot, elem,
			     sizeof(elem)))
			return vq_fail(q, VQ_ERR_RING);
	}
	/* The elements before the one index store that publishes them all
	 * (Virtio 1.1 2.6.8.2, and 5.1.6.4.2 for a merged frame's buffers;
	 * the host's stores are ordered on x86). */
	put_le16(idx, (uint16_t)(q->used_idx + n));
	if (m->write(m->ctx, q->used + 2, idx, 2))
		return vq_fail(q, VQ_ERR_RING);
	q->used_idx = (uint16_t)(q->used_idx + n);
	return 0;
}

int vq_push(struct vq *q, const struct vq_mem *m, uint16_t head, uint32_t len)
{
	return vq_push_n(q, m, &(struct vq_used){ head, len }, 1);
}

bool vq_want_irq(const struct vq *q, const struct vq_mem *m)
{
	uint16_t flags;

	/* The used index just stored, then the driver's flags loaded: a full
	 * barrier between, or a driver that clears NO_INTERRUPT and then
	 * looks at the index (on another CPU) and this load can miss each
	 * other's stores, and no interrupt comes (x86 lets a load pass an
	 * earlier store). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (read16(m, q->avail, &flags))
		return true;
	return !(flags & VQ_AVAIL_F_NO_INTERRUPT);
}

/* Copy between buf and the chain's segments [first, first + nr) from
 * byte off on.  -ENOSPC if they hold fewer than off + len bytes. */
static int copy_chain(struct vq *q, const struct vq_mem *m, const struct vq_seg *seg,
		      unsigned int nr, uint64_t off, uint8_t *buf, size_t len, bool to_guest)
{
	for (unsigned int i = 0; i < nr && len; i++) {
		uint64_t n;
		int rc;

		if (off >= seg[i].len) {
			off -= seg[i].len;
			continue;
		}
		n = seg[i].len - off < len ? seg[i].len - off : len;
		rc = to_guest ? m->write(m->ctx, seg[i].gpa + off, buf, n)
			      : m->read(m->ctx, seg[i].gpa + off, buf, n);
		if (rc)
			return vq_fail(q, VQ_ERR_BUF), -EFAULT;
		buf += n;
		len -= n;
		off = 0;
	}
	return len ? -ENOSPC : 0;
}

int vq_read_chain(struct vq *q, const struct vq_mem *m, const struct vq_chain *c,
		  uint64_t off, void *buf, size_t len)
{
	return copy_chain(q, m, c->seg, c->nr_out, off, buf, len, false);
}

int vq_write_chain(struct vq *q, const struct vq_mem *m, const struct vq_chain *c,
		   uint64_t off, const void *buf, size_t len)
{
	return copy_chain(q, m, c->seg + c->nr_out, c->nr_in, off, (uint8_t *)buf, len, true);
}

int vq_snapshot(struct vq *q, struct snap *s)
{
	struct vq t = *q;

	if (snap_version(s, VQ_SNAP_VERSION))
		return s->err;
	snap_u16(s, &t.size);
	snap_bool(s, &t.ready);
	snap_u64(s, &t.desc);
	snap_u64(s, &t.avail);
	snap_u64(s, &t.used);
	snap_u16(s, &t.last_avail);
	snap_u16(s, &t.used_idx);
	snap_u8(s, &t.err);
	if (!s->restore || s->err)
		return s->err;
	/* A working queue has nothing in flight: the devices return every
	 * chain before they return to the caller.  One not enabled yet has
	 * taken nothing (only vq_reset makes a queue not ready). */
	if (t.err >= VQ_NR_ERR || (!t.err && t.used_idx != t.last_avail) ||
	    (t.ready && !t.err && layout_err(&t)) ||
	    (!t.ready && !t.err && (t.last_avail || t.used_idx)))
		return snap_invalid(s);
	*q = t;
	return 0;
}
