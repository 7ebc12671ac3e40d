/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Split virtqueues, device side (Virtio 1.1, 2.6 "Split Virtqueues"):
 * the descriptor table (16 bytes each: le64 addr, le32 len, le16 flags,
 * le16 next; flags NEXT 1, WRITE 2, INDIRECT 4), the available ring
 * (le16 flags, le16 idx, le16 ring[size]) and the used ring (le16 flags,
 * le16 idx, {le32 id, le32 len}[size]), all in guest memory.
 *
 * The guest is not trusted.  Guest memory is reached only through the
 * read/write callbacks of struct vq_mem, which copy nothing and return
 * -EFAULT unless the whole range is guest RAM (gpmap_read/gpmap_write).
 * Anything a driver may not do stops the queue: it is marked broken with
 * the first reason (enum vq_err) and every later call fails with -EIO
 * until the device is reset.  The device sets DEVICE_NEEDS_RESET.
 * Checked: a queue size that is not a power of two (or above
 * VQ_MAX_SIZE), misaligned rings, an available index that moved by more
 * than the queue size, a head or next index out of the table, a chain
 * longer than the queue (which is how a loop shows), a device-readable
 * descriptor after a device-writable one, ring or buffer memory outside
 * guest RAM.
 *
 * Indirect descriptors (VIRTIO_F_RING_INDIRECT_DESC, 2.6.5.3) when the
 * transport negotiated them (q->indirect): a descriptor with INDIRECT
 * ends its chain and points at a table of len / 16 descriptors, walked
 * from entry 0.  Refused: INDIRECT not negotiated, beside NEXT, inside a
 * table, or a table of no entries, a length not a multiple of 16 or more
 * than VQ_MAX_SIZE entries; a walk longer than the table (a loop), a next
 * index past it, a table outside guest RAM.  A chain holds at most
 * VQ_MAX_SIZE buffers, direct and indirect together.
 *
 * No event index (VIRTIO_F_EVENT_IDX is not offered): the device looks
 * at the available ring's NO_INTERRUPT flag only.
 */
#ifndef FERRY_HV_VDEV_VIRTQUEUE_H
#define FERRY_HV_VDEV_VIRTQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hv/vdev/snap.h"

#define VQ_MAX_SIZE	256
#define VQ_DESC_F_NEXT	1
#define VQ_DESC_F_WRITE	2
#define VQ_DESC_F_INDIRECT 4
#define VQ_AVAIL_F_NO_INTERRUPT 1

/* Guest memory: all or nothing, -EFAULT outside guest RAM. */
struct vq_mem {
	void *ctx;
	int (*read)(void *ctx, uint64_t gpa, void *buf, size_t len);
	int (*write)(void *ctx, uint64_t gpa, const void *buf, size_t len);
};

/* Why a queue stopped (the first reason is kept). */
enum vq_err {
	VQ_OK,
	VQ_ERR_SIZE,		/* size not a power of two, 0 or too big */
	VQ_ERR_ALIGN,		/* ring address misaligned */
	VQ_ERR_RING,		/* ring memory outside guest RAM */
	VQ_ERR_IDX,		/* available index jumped past the queue size */
	VQ_ERR_HEAD,		/* head index outside the table */
	VQ_ERR_NEXT,		/* next index outside the table */
	VQ_ERR_LOOP,		/* chain loops, or is longer than VQ_MAX_SIZE */
	VQ_ERR_ORDER,		/* readable descriptor after a writable one */
	VQ_ERR_INDIRECT,	/* indirect: not negotiated or malformed */
	VQ_ERR_BUF,		/* buffer outside guest RAM */
	VQ_ERR_DIR,		/* buffer of the wrong direction for the queue */
	VQ_NR_ERR
};

/* One buffer piece. */
struct vq_seg {
	uint64_t gpa;
	uint32_t len;
};

/* A chain as vq_pop took it: the device-readable segments first
 * (seg[0..nr_out)), then the device-writable ones. */
struct vq_chain {
	uint16_t head;
	uint16_t nr_out, nr_in;
	uint64_t out_len, in_len;		/* bytes each way */
	struct vq_seg seg[VQ_MAX_SIZE];
};

/*
 * One queue.  size, desc, avail, used and ready are written by the
 * driver through the transport; last_avail (the next available entry the
 * device takes) and used_idx (the next used index it publishes) are the
 * device's.  All are guest-visible state and saved.
 */
struct vq {
	uint16_t size;
	bool ready;
	uint64_t desc, avail, used;
	uint16_t last_avail, used_idx;
	uint8_t err;			/* enum vq_err; VQ_OK while working */
	uint16_t err_avail;		/* VQ_ERR_IDX: the driver's index then (not saved) */
	bool indirect;			/* INDIRECT_DESC negotiated: the transport
					 * sets it, from its features, not saved */
};

/* Reset to the transport's power-on state: size VQ_MAX_SIZE, not ready. */
void vq_reset(struct vq *q);

/* Check size and alignment when the driver enables the queue, and that
 * the rings lie in guest RAM.  0, or -EIO with q->err set. */
int vq_enable(struct vq *q, const struct vq_mem *m);

/* Take the next available chain: 1 with *c filled, 0 if none, -EIO if
 * the queue is (now) broken. */
int vq_pop(struct vq *q, const struct vq_mem *m, struct vq_chain *c);

/* Give back the chain vq_pop just took, unused: the next vq_pop takes it
 * again (the device could not handle it yet, and will retry). */
void vq_unpop(struct vq *q);
/* The same for the last n chains vq_pop took, none of them pushed. */
void vq_unpop_n(struct vq *q, uint16_t n);

/* Return chain head to the driver with len bytes written.  0 or -EIO. */
int vq_push(struct vq *q, const struct vq_mem *m, uint16_t head, uint32_t len);
/* Return n chains at once: the driver sees all of them or none (one
 * index store).  0 or -EIO. */
struct vq_used {
	uint16_t head;
	uint32_t len;
};
int vq_push_n(struct vq *q, const struct vq_mem *m, const struct vq_used *e, uint16_t n);

/* Whether guest memory agrees with the queue's indices, as after a
 * migration's device state and last pages arrived: the used index there
 * is the one the device published, and the available index is at most a
 * ring ahead of what it took.  0 (also for a queue not working), -EIO if
 * the rings cannot be read, -ERANGE if they disagree; *avail and *used
 * are what memory holds. */
int vq_check_mem(const struct vq *q, const struct vq_mem *m, uint16_t *avail, uint16_t *used);

/* Whether the driver wants an interrupt for used buffers (no
 * NO_INTERRUPT flag); a broken ring reads as wanting one. */
bool vq_want_irq(const struct vq *q, const struct vq_mem *m);

/* Copy len bytes at offset off of the chain's readable part into buf, or
 * buf into its writable part.  0, -ENOSPC if the chain is too short, or
 * -EFAULT (then the queue is broken: VQ_ERR_BUF). */
int vq_read_chain(struct vq *q, const struct vq_mem *m, const struct vq_chain *c,
		  uint64_t off, void *buf, size_t len);
int vq_write_chain(struct vq *q, const struct vq_mem *m, const struct vq_chain *c,
		   uint64_t off, const void *buf, size_t len);

/* Mark q broken for reason (if it is not already).  Returns -EIO. */
int vq_fail(struct vq *q, enum vq_err reason);

const char *vq_err_name(enum vq_err e);

/* Save or restore one queue; restore checks what vq_enable checks, except
 * memory (the peer's RAM arrives separately).  Refused: q unchanged. */
int vq_snapshot(struct vq *q, struct snap *s);

#endif
