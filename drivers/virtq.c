/* SPDX-License-Identifier: BSD-2-Clause */
/* Split virtqueues, the driver's side (drivers/virtq.h; virtio 1.1 2.6). */
#include <errno.h>
#include <string.h>
#include "drivers/virtq.h"

size_t virtq_avail_off(uint16_t size)
{
	return (16u * size + 4095) & ~(size_t)4095;
}

size_t virtq_used_off(uint16_t size)
{
	return (virtq_avail_off(size) + 6 + 2u * size + 4095) & ~(size_t)4095;
}

size_t virtq_mem_size(uint16_t size)
{
	return virtq_used_off(size) + 6 + 8u * size;
}

int virtq_init(struct virtq *q, uint16_t size, void *mem)
{
	if (!size || size > VIRTQ_MAX || (size & (size - 1)))
		return -EINVAL;
	memset(q, 0, sizeof(*q));
	memset(mem, 0, virtq_mem_size(size));
	q->size = size;
	q->desc = mem;
	q->avail = (void *)((uint8_t *)mem + virtq_avail_off(size));
	q->used = (void *)((uint8_t *)mem + virtq_used_off(size));
	for (uint16_t i = 0; i < size; i++)
		q->next[i] = (uint16_t)(i + 1);
	q->nr_free = size;
	return 0;
}

int virtq_alloc(struct virtq *q, unsigned int n, uint16_t *ids)
{
	if (n == 0 || n > q->nr_free)
		return -ENOSPC;
	for (unsigned int k = 0; k < n; k++) {
		ids[k] = q->free_head;
		q->free_head = q->next[q->free_head];
	}
	q->nr_free = (uint16_t)(q->nr_free - n);
	return 0;
}

int virtq_peek(const struct virtq *q)
{
	return q->nr_free ? q->free_head : -ENOSPC;
}

void virtq_publish(struct virtq *q, const uint16_t *ids, const struct virtq_seg *segs,
		   unsigned int n)
{
	uint32_t wlen = 0;

	for (unsigned int k = 0; k < n; k++) {
		volatile struct virtq_desc *d = &q->desc[ids[k]];
		bool more = k + 1 < n;

		d->addr = segs[k].addr;
		d->len = segs[k].len;
		d->flags = (uint16_t)((more ? VIRTQ_DESC_F_NEXT : 0) |
				      (segs[k].device_writes ? VIRTQ_DESC_F_WRITE : 0));
		d->next = more ? ids[k + 1] : 0;
		q->next[ids[k]] = more ? ids[k + 1] : 0;
		wlen += segs[k].device_writes ? segs[k].len : 0;
	}
	q->chain[ids[0]] = (uint16_t)n;
	q->wlen[ids[0]] = wlen;
	q->in_flight++;
	q->avail->ring[q->avail_idx & (q->size - 1)] = ids[0];
	__atomic_thread_fence(__ATOMIC_RELEASE);	/* ring entry before the index */
	q->avail_idx++;
	q->avail->idx = q->avail_idx;
}

bool virtq_notify_needed(struct virtq *q)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);	/* the index out before the flag in */
	return !(q->used->flags & VIRTQ_USED_F_NO_NOTIFY);
}

/* Give the chain at head back to the free list. */
static void free_chain(struct virtq *q, uint16_t head)
{
	uint16_t id = head, n = q->chain[head];

	for (uint16_t k = 1; k < n; k++)
		id = q->next[id];
	q->next[id] = q->free_head;
	q->free_head = head;
	q->nr_free = (uint16_t)(q->nr_free + n);
	q->chain[head] = 0;
	q->in_flight--;
}

int virtq_get(struct virtq *q, uint16_t *head, uint32_t *len)
{
	uint16_t ready;
	struct virtq_used_elem e;

	if (q->broken)
		return -EIO;
	ready = (uint16_t)(q->used->idx - q->last_used);
	if (!ready)
		return 0;
	if (ready > q->in_flight) {	/* more used than it was given */
		q->broken = true;
		return -EIO;
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);	/* the index before the entry */
	e.id = q->used->ring[q->last_used & (q->size - 1)].id;
	e.len = q->used->ring[q->last_used & (q->size - 1)].len;
	q->last_used++;
	if (e.id >= q->size || !q->chain[e.id]) {
		q->bad_ids++;
		return -EBADMSG;
	}
	*head = (uint16_t)e.id;
	*len = e.len;
	free_chain(q, *head);
	if (e.len > q->wlen[e.id]) {
		q->bad_lens++;
		return -EMSGSIZE;
	}
	return 1;
}
