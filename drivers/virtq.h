/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The driver's side of a split virtqueue (virtio 1.1, 2.6): a descriptor
 * table, the available ring the driver fills and the used ring the device
 * fills, in memory both see.  Nothing the device writes is trusted: chain
 * links and lengths are kept in driver-private arrays, and every used
 * entry is checked (its id must be the head of a chain in flight, its
 * length within what the chain lets the device write, the used index may
 * not run ahead of what is in flight).  A used index that runs ahead
 * marks the queue broken (the device then needs a reset).
 *
 * Plain logic over memory, no hardware access: host unit tests drive it
 * against a simulated device (tests/unit/test_virtq.c).  x86 orders stores
 * and loads as the protocol needs; the fences stop the compiler.
 */
#ifndef FERRY_DRIVERS_VIRTQ_H
#define FERRY_DRIVERS_VIRTQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VIRTQ_MAX	256		/* queue size ferry uses at most */

#define VIRTQ_DESC_F_NEXT	1	/* 2.6.5 */
#define VIRTQ_DESC_F_WRITE	2
#define VIRTQ_USED_F_NO_NOTIFY	1	/* 2.6.8: the device needs no kick */

struct virtq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags, next;
};

struct virtq_avail {
	uint16_t flags, idx;
	uint16_t ring[];
};

struct virtq_used_elem {
	uint32_t id, len;
};

struct virtq_used {
	uint16_t flags, idx;
	struct virtq_used_elem ring[];
};

/* One buffer of a chain: guest-physical address, length, who writes it. */
struct virtq_seg {
	uint64_t addr;
	uint32_t len;
	bool device_writes;
};

struct virtq {
	uint16_t size;			/* a power of two, <= VIRTQ_MAX */
	volatile struct virtq_desc *desc;
	volatile struct virtq_avail *avail;
	volatile struct virtq_used *used;
	uint16_t free_head, nr_free;	/* free descriptors, linked by next[] */
	uint16_t avail_idx;		/* what avail->idx says */
	uint16_t last_used;		/* next used entry to read */
	uint16_t in_flight;		/* chains the device holds */
	uint16_t next[VIRTQ_MAX];	/* links of free list and chains (ours) */
	uint16_t chain[VIRTQ_MAX];	/* at a head in flight: its length; else 0 */
	uint32_t wlen[VIRTQ_MAX];	/* at a head: bytes the device may write */
	uint64_t bad_ids;		/* used entries naming no chain in flight */
	uint64_t bad_lens;		/* used lengths beyond the chain's */
	bool broken;			/* used index ran ahead: stop */
};

/* Bytes of memory the rings of a queue of size entries take, and where
 * the available and used rings start in it (the table at 0); 4 KiB-aligned
 * memory satisfies every alignment rule (2.6). */
size_t virtq_mem_size(uint16_t size);
size_t virtq_avail_off(uint16_t size);
size_t virtq_used_off(uint16_t size);

/* Lay the rings out in mem (virtq_mem_size bytes, zeroed here). */
int virtq_init(struct virtq *q, uint16_t size, void *mem);
/* Take n free descriptors (ids[] gets them); -ENOSPC if fewer are free. */
int virtq_alloc(struct virtq *q, unsigned int n, uint16_t *ids);
/* The id virtq_alloc(q, 1, ...) takes next; -ENOSPC when none is free. */
int virtq_peek(const struct virtq *q);
/* Chain ids[0..n) over segs[0..n) and make it available to the device. */
void virtq_publish(struct virtq *q, const uint16_t *ids, const struct virtq_seg *segs,
		   unsigned int n);
/* After publishing: does the device want a notification? */
bool virtq_notify_needed(struct virtq *q);
/*
 * Take the next used chain and free its descriptors: 1 with *head and the
 * length the device wrote in *len; 0 when there is none.  Errors: -EBADMSG
 * (an entry naming no chain in flight: skipped), -EMSGSIZE (*head freed,
 * but the length is beyond the chain: do not use its data), -EIO (the
 * queue is broken).
 */
int virtq_get(struct virtq *q, uint16_t *head, uint32_t *len);

#endif
