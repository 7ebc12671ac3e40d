/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for the driver's side of split virtqueues (drivers/virtq.c)
 * against a simulated device: chains as the device sees them, index
 * wrap-around, and a hostile device returning ids out of range or not in
 * flight, lengths beyond the buffers, a used index running ahead, and
 * descriptor links rewritten behind the driver's back.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drivers/virtq.h"

static uint8_t mem[3 * 4096] __attribute__((aligned(4096)));
static struct virtq q;
static uint16_t dev_avail;	/* the simulated device's next avail entry */

static void setup(uint16_t size)
{
	assert_int_equal(virtq_init(&q, size, mem), 0);
	dev_avail = 0;
}

/* The device takes the next available chain; its head, or -1. */
static int dev_take(unsigned int *nseg, uint32_t *wlen)
{
	uint16_t head, id;

	if (dev_avail == q.avail->idx)
		return -1;
	head = q.avail->ring[dev_avail++ & (q.size - 1)];
	id = head;
	*nseg = 1;
	*wlen = 0;
	for (;;) {
		*wlen += (q.desc[id].flags & VIRTQ_DESC_F_WRITE) ? q.desc[id].len : 0;
		if (!(q.desc[id].flags & VIRTQ_DESC_F_NEXT))
			break;
		id = q.desc[id].next;
		(*nseg)++;
		assert_true(*nseg <= q.size);
	}
	return head;
}

/* The device puts (id, len) in the used ring. */
static void dev_put(uint32_t id, uint32_t len)
{
	q.used->ring[q.used->idx & (q.size - 1)].id = id;
	q.used->ring[q.used->idx & (q.size - 1)].len = len;
	q.used->idx++;
}

static int publish(unsigned int n, uint32_t wlen)
{
	uint16_t ids[8];
	struct virtq_seg s[8];

	if (virtq_alloc(&q, n, ids))
		return -1;
	for (unsigned int k = 0; k < n; k++)
		s[k] = (struct virtq_seg){ 0x100000 + 4096u * ids[k], k + 1 == n ? wlen : 100,
					   k + 1 == n && wlen };
	virtq_publish(&q, ids, s, n);
	return ids[0];
}

static void test_init_and_layout(void **state)
{
	(void)state;
	assert_int_equal(virtq_init(&q, 0, mem), -EINVAL);
	assert_int_equal(virtq_init(&q, 3, mem), -EINVAL);
	assert_int_equal(virtq_init(&q, 512, mem), -EINVAL);
	assert_int_equal(virtq_avail_off(256), 4096);
	assert_int_equal(virtq_used_off(256), 8192);
	assert_int_equal(virtq_mem_size(256), 8192 + 6 + 8 * 256);
	assert_true(virtq_mem_size(256) <= sizeof(mem));
	setup(256);
	assert_int_equal(q.nr_free, 256);
	assert_int_equal(virtq_peek(&q), 0);
}

static void test_chain_round_trip(void **state)
{
	unsigned int nseg;
	uint32_t wlen, len;
	uint16_t head;
	int h;

	(void)state;
	setup(8);
	h = publish(3, 1500);
	assert_int_equal(h, 0);
	assert_int_equal(q.avail->idx, 1);
	assert_int_equal(q.nr_free, 5);
	assert_int_equal(dev_take(&nseg, &wlen), 0);
	assert_int_equal(nseg, 3);
	assert_int_equal(wlen, 1500);
	assert_int_equal(q.desc[0].flags, VIRTQ_DESC_F_NEXT);
	assert_int_equal(q.desc[2].flags, VIRTQ_DESC_F_WRITE);
	assert_int_equal(virtq_get(&q, &head, &len), 0);	/* nothing used yet */
	dev_put(0, 1500);
	assert_int_equal(virtq_get(&q, &head, &len), 1);
	assert_int_equal(head, 0);
	assert_int_equal(len, 1500);
	assert_int_equal(q.nr_free, 8);
	assert_int_equal(q.in_flight, 0);
}

static void test_exhaustion(void **state)
{
	unsigned int nseg;
	uint32_t wlen, len;
	uint16_t head, ids[1];

	(void)state;
	setup(8);
	for (int i = 0; i < 4; i++)
		assert_true(publish(2, 0) >= 0);
	assert_int_equal(virtq_alloc(&q, 1, ids), -ENOSPC);
	assert_int_equal(virtq_peek(&q), -ENOSPC);
	assert_int_equal(virtq_alloc(&q, 0, ids), -ENOSPC);
	int h = dev_take(&nseg, &wlen);
	dev_put((uint32_t)h, 0);
	assert_int_equal(virtq_get(&q, &head, &len), 1);
	assert_int_equal(virtq_peek(&q), h);		/* the freed chain comes next */
	assert_int_equal(q.nr_free, 2);
}

/* 70000 chains: both 16-bit indices wrap; every chain comes back. */
static void test_index_wrap(void **state)
{
	unsigned int nseg;
	uint32_t wlen, len;
	uint16_t head;

	(void)state;
	setup(16);
	for (int i = 0; i < 70000; i++) {
		int h = publish(1 + i % 3, 64);

		assert_true(h >= 0);
		assert_int_equal(dev_take(&nseg, &wlen), h);
		assert_int_equal(nseg, 1 + i % 3);
		dev_put((uint32_t)h, (uint32_t)(i % 65));
		assert_int_equal(virtq_get(&q, &head, &len), 1);
		assert_int_equal(head, h);
		assert_int_equal(len, i % 65);
	}
	assert_int_equal(q.nr_free, 16);
	assert_int_equal(q.avail->idx, (uint16_t)70000);
}

static void test_hostile_ids(void **state)
{
	unsigned int nseg;
	uint32_t wlen, len;
	uint16_t head;

	(void)state;
	setup(8);
	int a = publish(1, 64), b = publish(1, 64);
	dev_take(&nseg, &wlen);
	dev_take(&nseg, &wlen);
	dev_put(8 + 5, 10);		/* out of range */
	dev_put(0xffffffffu, 10);	/* far out of range */
	assert_int_equal(virtq_get(&q, &head, &len), -EBADMSG);
	assert_int_equal(virtq_get(&q, &head, &len), -EBADMSG);
	assert_int_equal(q.bad_ids, 2);
	assert_int_equal(q.nr_free, 6);		/* nothing freed */
	dev_put((uint32_t)a, 10);
	assert_int_equal(virtq_get(&q, &head, &len), 1);
	assert_int_equal(head, a);
	dev_put((uint32_t)a, 10);		/* returned twice */
	assert_int_equal(virtq_get(&q, &head, &len), -EBADMSG);
	assert_int_equal(q.bad_ids, 3);
	dev_put(7, 10);				/* never given */
	assert_int_equal(virtq_get(&q, &head, &len), -EBADMSG);
	dev_put((uint32_t)b, 10);
	assert_int_equal(virtq_get(&q, &head, &len), 1);
	assert_int_equal(q.nr_free, 8);
}

static void test_hostile_length(void **state)
{
	unsigned int nseg;
	uint32_t wlen, len;
	uint16_t head;

	(void)state;
	setup(8);
	int a = publish(2, 2048), b = publish(1, 0);
	dev_take(&nseg, &wlen);
	dev_take(&nseg, &wlen);
	dev_put((uint32_t)a, 2049);		/* one byte beyond the buffer */
	assert_int_equal(virtq_get(&q, &head, &len), -EMSGSIZE);
	assert_int_equal(head, a);		/* the chain is back all the same */
	dev_put((uint32_t)b, 1);		/* wrote into a read-only chain */
	assert_int_equal(virtq_get(&q, &head, &len), -EMSGSIZE);
	assert_int_equal(q.bad_lens, 2);
	assert_int_equal(q.nr_free, 8);
}

static void test_used_index_runs_ahead(void **state)
{
	uint16_t head;
	uint32_t len;

	(void)state;
	setup(8);
	publish(1, 64);
	publish(1, 64);
	q.used->idx = 3;			/* three used of two in flight */
	assert_int_equal(virtq_get(&q, &head, &len), -EIO);
	assert_true(q.broken);
	q.used->idx = 0;
	assert_int_equal(virtq_get(&q, &head, &len), -EIO);	/* stays broken */
	setup(8);
	q.used->idx = 0x8000;			/* nothing in flight at all */
	assert_int_equal(virtq_get(&q, &head, &len), -EIO);
}

/* The device rewrites the table's links: the driver frees by its own. */
static void test_links_are_the_drivers(void **state)
{
	unsigned int nseg;
	uint32_t wlen, len;
	uint16_t head, ids[8];

	(void)state;
	setup(8);
	int a = publish(4, 64);
	dev_take(&nseg, &wlen);
	for (int i = 0; i < 8; i++)
		q.desc[i].next = (uint16_t)a;		/* a loop, and garbage */
	dev_put((uint32_t)a, 64);
	assert_int_equal(virtq_get(&q, &head, &len), 1);
	assert_int_equal(q.nr_free, 8);
	assert_int_equal(virtq_alloc(&q, 8, ids), 0);
	for (int i = 0; i < 8; i++)
		for (int j = i + 1; j < 8; j++)
			assert_int_not_equal(ids[i], ids[j]);
}

static void test_notify_suppression(void **state)
{
	(void)state;
	setup(8);
	publish(1, 64);
	assert_true(virtq_notify_needed(&q));
	q.used->flags = VIRTQ_USED_F_NO_NOTIFY;
	assert_false(virtq_notify_needed(&q));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_and_layout),
		cmocka_unit_test(test_chain_round_trip),
		cmocka_unit_test(test_exhaustion),
		cmocka_unit_test(test_index_wrap),
		cmocka_unit_test(test_hostile_ids),
		cmocka_unit_test(test_hostile_length),
		cmocka_unit_test(test_used_index_runs_ahead),
		cmocka_unit_test(test_links_are_the_drivers),
		cmocka_unit_test(test_notify_suppression),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
