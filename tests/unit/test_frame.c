/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for hv/mm/frame.c: memory maps with holes and reserved ranges,
 * exhaustion (every returned frame checked), counts, contiguous aligned
 * runs, bad frees, bitmap sizing and placement, and concurrent use.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hv/lib/log.h"
#include "hv/mm/frame.h"
#include "hv/mm/memory.h"

static int warn_count;

void log_printf(enum log_level level, const char *fmt, ...)
{
	(void)fmt;
	if (level == LOG_WARN)
		warn_count++;
}

#define MiB(x)	((uint64_t)(x) << 20)

/*
 * The reference map: A [0, 0x9fc00) is 159 frames, all under the low 1 MiB
 * reservation; B [1 MiB, 8 MiB) is 1792 frames; C [0x1000800, 0x1400100)
 * is frames 0x1001..0x13ff, 1023 frames (aligned inward).
 * Reserved: low 1 MiB, image [0x200000, 0x280123) = 129 frames, a one-byte
 * module at 0x1100000 = 1 frame, and the bitmap (1 frame, placed at 1 MiB).
 */
static const struct frame_region map_usable[] = {
	{ 0x1000800, 0x3ff900 },	/* unsorted on purpose */
	{ 0x0, 0x9fc00 },
	{ MiB(1), MiB(7) },
};
static const struct frame_region map_reserved[] = {
	{ 0x0, MiB(1) },
	{ 0x200000, 0x80123 },
	{ 0x1100000, 1 },
};
#define NU	(sizeof(map_usable) / sizeof(map_usable[0]))
#define NR	(sizeof(map_reserved) / sizeof(map_reserved[0]))

static uint64_t *bitmap;
static uint64_t bitmap_pa;
static size_t bitmap_len;

static void init_map(const struct frame_region *u, size_t nu,
		     const struct frame_region *r, size_t nr)
{
	bitmap_len = frame_bitmap_bytes(u, nu);
	assert_int_equal(frame_bitmap_place(u, nu, r, nr, bitmap_len, 0, &bitmap_pa), 0);
	free(bitmap);
	bitmap = malloc(bitmap_len ? bitmap_len : 8);	/* exact: ASan checks */
	assert_int_equal(frame_init(u, nu, r, nr, bitmap, bitmap_pa, bitmap_len), 0);
}

static void init_ref(void)
{
	init_map(map_usable, NU, map_reserved, NR);
}

/* Does frame pa lie wholly inside r? */
static bool inside(uint64_t pa, const struct frame_region *r)
{
	return pa >= r->base && pa + FRAME_SIZE <= r->base + r->len;
}

/* Does frame pa share any byte with r? */
static bool in_region(uint64_t pa, const struct frame_region *r)
{
	return pa < r->base + r->len && pa + FRAME_SIZE > r->base;
}

/* A frame the allocator may legitimately return for the reference map. */
static void check_frame(uint64_t pa)
{
	struct frame_region bm = { bitmap_pa, bitmap_len };
	bool usable = false;
	size_t i;

	assert_int_not_equal(pa, 0);
	assert_int_equal(pa % FRAME_SIZE, 0);
	for (i = 0; i < NU; i++)
		usable |= inside(pa, &map_usable[i]);
	assert_true(usable);
	for (i = 0; i < NR; i++)
		assert_false(in_region(pa, &map_reserved[i]));
	assert_false(in_region(pa, &bm));
}

static void expect_stats(uint64_t total, uint64_t reserved, uint64_t nfree)
{
	struct frame_stats st;

	frame_get_stats(&st);
	assert_int_equal(st.total, total);
	assert_int_equal(st.reserved, reserved);
	assert_int_equal(st.free, nfree);
}

static void test_init_counts(void **state)
{
	(void)state;
	assert_int_equal(frame_bitmap_bytes(map_usable, NU), 640);	/* 0x1400 frames */
	init_ref();
	assert_int_equal(bitmap_pa, MiB(1));
	expect_stats(2974, 290, 2684);
}

/* Exhaust the reference map: every frame valid, distinct, counted. */
static void test_exhaust_and_free_all(void **state)
{
	static uint64_t got[4096];
	static uint8_t seen[0x1400];
	size_t n = 0, i;
	uint64_t pa;

	(void)state;
	init_ref();
	memset(seen, 0, sizeof(seen));
	while ((pa = frame_alloc()) != 0) {
		assert_true(n < 4096);
		check_frame(pa);
		assert_int_equal(seen[pa >> FRAME_SHIFT], 0);
		seen[pa >> FRAME_SHIFT] = 1;
		got[n++] = pa;
	}
	assert_int_equal(n, 2684);
	expect_stats(2974, 290, 0);
	assert_int_equal(frame_alloc(), 0);
	assert_int_equal(frame_alloc_contig(1, 1), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(frame_free(got[i]), 0);
	expect_stats(2974, 290, 2684);
	/* Everything is free again: a second exhaustion yields the same count. */
	for (n = 0; frame_alloc() != 0; n++)
		;
	assert_int_equal(n, 2684);
}

static void test_alloc_free_counts_and_next_fit(void **state)
{
	uint64_t a, b, c, d;

	(void)state;
	init_ref();
	a = frame_alloc();
	b = frame_alloc();
	check_frame(a);
	check_frame(b);
	assert_int_not_equal(a, b);
	expect_stats(2974, 290, 2682);
	assert_int_equal(frame_free(a), 0);
	expect_stats(2974, 290, 2683);
	c = frame_alloc();		/* next fit: not the frame just freed */
	assert_true(c > b);
	assert_int_equal(frame_free(b), 0);
	assert_int_equal(frame_free(c), 0);
	d = frame_alloc();
	assert_true(d > c);
	expect_stats(2974, 290, 2683);
}

static void test_double_free(void **state)
{
	uint64_t a;

	(void)state;
	init_ref();
	a = frame_alloc();
	assert_int_equal(frame_free(a), 0);
	warn_count = 0;
	assert_int_equal(frame_free(a), -EALREADY);
	assert_int_equal(warn_count, 1);
	expect_stats(2974, 290, 2684);
	/* A never-allocated frame is also "already free". */
	assert_int_equal(frame_free(0x700000), -EALREADY);
	expect_stats(2974, 290, 2684);
}

static void test_bad_free(void **state)
{
	static const uint64_t bad[] = {
		0x0,			/* frame 0 */
		0x1000,			/* low 1 MiB, reserved */
		0x200000, 0x280000,	/* image, incl. its partial last frame */
		0x1100000,		/* one-byte module */
		MiB(1),			/* the bitmap */
		0x900000,		/* hole */
		0x1000000,		/* partial frame below region C */
		0x1400000,		/* just past the end */
		1ull << 60, ~0ull & ~(FRAME_SIZE - 1),
	};
	const int nbad = sizeof(bad) / sizeof(bad[0]);
	uint64_t a;
	int i;

	(void)state;
	init_ref();
	a = frame_alloc();
	warn_count = 0;
	assert_int_equal(frame_free(a + 8), -EINVAL);		/* misaligned */
	for (i = 0; i < nbad; i++)
		assert_int_equal(frame_free(bad[i]), -EINVAL);
	assert_int_equal(frame_free_contig(a, 0), -EINVAL);
	assert_int_equal(frame_free_contig(0x7ff000, 2), -EINVAL);	/* runs into a hole */
	assert_int_equal(frame_free_contig(0x1ff000, 2), -EINVAL);	/* into the image */
	assert_int_equal(frame_free_contig(0x101000, SIZE_MAX), -EINVAL);
	assert_int_equal(warn_count, 1 + nbad + 4);
	expect_stats(2974, 290, 2683);
	assert_int_equal(frame_free(a), 0);
}

static const struct frame_region big_usable[] = {
	{ MiB(1), MiB(15) },		/* [1, 16) MiB */
	{ MiB(32), MiB(3) },		/* [32, 35) MiB */
};
static const struct frame_region big_reserved[] = {
	{ 0, MiB(1) },
	{ MiB(4) + 0x1000, 0x1000 },	/* breaks [4, 6) MiB */
};

/*
 * [1, 16) MiB and [32, 35) MiB; the bitmap takes the frame at 1 MiB and
 * 4 MiB + 4 KiB is reserved: 2 MiB-aligned free runs are [2, 4) MiB,
 * [6, 16) MiB (5 runs) and [32, 34) MiB.  4608 frames, 2 reserved.
 */
static void test_contig_aligned(void **state)
{
	uint64_t a, b, c, d, n;
	int i;

	(void)state;
	init_map(big_usable, 2, big_reserved, 2);
	assert_int_equal(bitmap_pa, MiB(1));
	expect_stats(4608, 2, 4606);
	a = frame_alloc_contig(512, 512);
	assert_int_equal(a, MiB(2));
	b = frame_alloc_contig(512, 512);
	assert_int_equal(b, MiB(6));		/* [4, 6) is broken */
	c = frame_alloc_contig(3, 4);
	assert_int_equal(c, MiB(1) + 4 * FRAME_SIZE);
	expect_stats(4608, 2, 4606 - 1027);
	assert_int_equal(frame_free_contig(a, 512), 0);
	assert_int_equal(frame_free_contig(b, 512), 0);
	d = frame_alloc_contig(1024, 512);
	assert_int_equal(d, MiB(6));		/* [2, 6) cannot hold 4 MiB */
	assert_int_equal(frame_free_contig(d, 1024), 0);
	assert_int_equal(frame_free_contig(c, 3), 0);
	expect_stats(4608, 2, 4606);

	for (i = 0; i < 6; i++)
		assert_int_equal(frame_alloc_contig(512, 512), i ? MiB(4 + 2 * i) : MiB(2));
	assert_int_equal(frame_alloc_contig(512, 512), MiB(32));
	assert_int_equal(frame_alloc_contig(512, 512), 0);
	/* Left: [1 MiB + 4K, 2 MiB) 255, 4 MiB 1, [4 MiB + 8K, 6 MiB) 510, [34, 35) 256. */
	assert_int_equal(frame_alloc_contig(511, 1), 0);
	assert_int_equal(frame_alloc_contig(510, 1), MiB(4) + 2 * FRAME_SIZE);
	for (n = 0; frame_alloc() != 0; n++)
		;
	assert_int_equal(n, 255 + 1 + 256);
	expect_stats(4608, 2, 0);
}

static void test_contig_bad_args_and_partial_free(void **state)
{
	struct frame_stats before, after;
	uint64_t a;

	(void)state;
	init_map(big_usable, 2, big_reserved, 2);
	assert_int_equal(frame_alloc_contig(0, 1), 0);
	assert_int_equal(frame_alloc_contig(4, 0), 0);
	assert_int_equal(frame_alloc_contig(4, 3), 0);
	assert_int_equal(frame_alloc_contig(4, (size_t)1 << 50), 0);
	assert_int_equal(frame_alloc_contig(SIZE_MAX, 1), 0);
	assert_int_equal(frame_alloc_contig(4000, 1), 0);	/* longer than any run */
	expect_stats(4608, 2, 4606);
	a = frame_alloc_contig(8, 8);
	assert_int_equal(a, MiB(1) + 8 * FRAME_SIZE);
	assert_int_equal(frame_free(a + 3 * FRAME_SIZE), 0);
	frame_get_stats(&before);
	/* Frame 3 is already free: the whole call fails and changes nothing. */
	assert_int_equal(frame_free_contig(a, 8), -EALREADY);
	frame_get_stats(&after);
	assert_int_equal(before.free, after.free);
	assert_int_equal(frame_free_contig(a, 3), 0);
	assert_int_equal(frame_free_contig(a + 4 * FRAME_SIZE, 4), 0);
	expect_stats(4608, 2, 4606);
}

static void test_init_errors(void **state)
{
	static struct frame_region many[FRAME_MAX_RANGES + 1];
	static struct frame_region cuts[FRAME_MAX_RANGES];
	static uint64_t words[64];
	struct frame_region one = { MiB(1), MiB(1) };
	struct frame_region wide = { MiB(1), 520 * FRAME_SIZE };
	size_t i;

	(void)state;
	assert_int_equal(frame_init(&one, 1, NULL, 0, NULL, 0, 0), -EINVAL);
	assert_int_equal(frame_alloc(), 0);
	assert_int_equal(frame_init(&one, 1, NULL, 0, (uint64_t *)((char *)words + 4), 0, 64),
			 -EINVAL);
	assert_int_equal(frame_init(&one, 1, NULL, 0, words, 0, 8), -ENOSPC);
	assert_int_equal(frame_alloc(), 0);
	assert_int_equal(frame_free(MiB(1)), -EINVAL);
	expect_stats(0, 0, 0);

	for (i = 0; i <= FRAME_MAX_RANGES; i++)
		many[i] = (struct frame_region){ MiB(1) + i * 2 * FRAME_SIZE, FRAME_SIZE };
	assert_int_equal(frame_init(many, FRAME_MAX_RANGES + 1, NULL, 0, words, 0,
				    sizeof(words)), -E2BIG);
	/* One region cut into too many pieces. */
	for (i = 0; i < FRAME_MAX_RANGES; i++)
		cuts[i] = (struct frame_region){ MiB(1) + (2 * i + 1) * FRAME_SIZE, 1 };
	assert_int_equal(frame_init(&wide, 1, cuts, FRAME_MAX_RANGES, words, 0, sizeof(words)),
			 -E2BIG);
	assert_int_equal(frame_alloc(), 0);
	/* 255 cuts leave exactly 256 ranges: accepted. */
	assert_int_equal(frame_init(&wide, 1, cuts, FRAME_MAX_RANGES - 1, words, 0,
				    sizeof(words)), 0);
	expect_stats(520, 255, 265);
}

static void test_overlapping_and_odd_regions(void **state)
{
	static const struct frame_region u[] = {
		{ MiB(3), MiB(1) },
		{ MiB(1), MiB(1) },
		{ MiB(1) + 0x80000, MiB(1) },	/* overlaps the one above */
		{ MiB(5), 0xfff },		/* less than a frame */
		{ MiB(6) + 1, 0x1000 },		/* no whole frame inside */
		{ 1ull << 53, MiB(1) },		/* above FRAME_MAX_PHYS */
	};
	static const struct frame_region r[] = {
		{ MiB(2) + 0x10, 0 },		/* empty: ignored */
		{ 1ull << 60, MiB(1) },		/* far away: ignored */
	};
	struct frame_region huge = { 0x1000, UINT64_MAX };

	(void)state;
	init_map(u, 6, r, 2);
	/* [1, 2.5) and [3, 4) MiB: 384 + 256 frames; bitmap takes 1. */
	assert_int_equal(bitmap_pa, MiB(1));
	expect_stats(640, 1, 639);
	assert_int_equal(frame_bitmap_bytes(&huge, 1),
			 ((FRAME_MAX_PHYS >> FRAME_SHIFT) - 1 + 63) / 64 * 8);
	assert_int_equal(frame_bitmap_bytes(NULL, 0), 0);
}

/* Frame 0 is usable and not reserved here, yet never handed out. */
static void test_frame_zero_never_returned(void **state)
{
	static const struct frame_region u[] = { { 0, 16 * FRAME_SIZE } };
	static uint64_t words[1];
	uint64_t pa, n = 0;

	(void)state;
	assert_int_equal(frame_init(u, 1, NULL, 0, words, 1ull << 40, sizeof(words)), 0);
	expect_stats(16, 1, 15);
	while ((pa = frame_alloc()) != 0) {
		assert_true(pa >= FRAME_SIZE && pa < 16 * FRAME_SIZE);
		n++;
	}
	assert_int_equal(n, 15);
	assert_int_equal(frame_free(0), -EINVAL);
	assert_int_equal(frame_init(u, 1, NULL, 0, words, 1ull << 40, sizeof(words)), 0);
	assert_int_equal(frame_alloc_contig(16, 1), 0);
	assert_int_equal(frame_alloc_contig(4, 4), 4 * FRAME_SIZE);
}

static void test_bitmap_place(void **state)
{
	static const struct frame_region u[] = {
		{ 0, 0x9f000 }, { MiB(1), MiB(3) }, { MiB(8), MiB(8) },
	};
	static const struct frame_region r[] = {
		{ 0, MiB(1) }, { MiB(1), 0x1800 }, { MiB(2), 0x10 },
	};
	uint64_t pa;

	(void)state;
	/* One frame: right after the reservation at 1 MiB (0x1800 -> 2 frames). */
	assert_int_equal(frame_bitmap_place(u, 3, r, 3, 100, 0, &pa), 0);
	assert_int_equal(pa, MiB(1) + 0x2000);
	/* 1 MiB: does not fit below the 2 MiB reservation, goes after it. */
	assert_int_equal(frame_bitmap_place(u, 3, r, 3, MiB(1), 0, &pa), 0);
	assert_int_equal(pa, MiB(2) + 0x1000);
	/* 3 MiB: only the region at 8 MiB holds it. */
	assert_int_equal(frame_bitmap_place(u, 3, r, 3, MiB(3), 0, &pa), 0);
	assert_int_equal(pa, MiB(8));
	/* ... unless the caller can only map the first 10 MiB. */
	assert_int_equal(frame_bitmap_place(u, 3, r, 3, MiB(3), MiB(10), &pa), -ENOMEM);
	assert_int_equal(frame_bitmap_place(u, 3, r, 3, MiB(2), MiB(10), &pa), 0);
	assert_int_equal(pa, MiB(8));
	assert_int_equal(frame_bitmap_place(u, 3, r, 3, MiB(9), 0, &pa), -ENOMEM);
	/* With nothing reserved, frame 0 is still avoided. */
	assert_int_equal(frame_bitmap_place(u, 1, NULL, 0, 100, 0, &pa), 0);
	assert_int_equal(pa, FRAME_SIZE);
}

/* 4 GiB of RAM: a million next-fit allocations stay fast. */
static void test_large_map(void **state)
{
	static const struct frame_region u[] = { { MiB(1), (4ull << 30) - MiB(1) } };
	static const struct frame_region r[] = { { 0, MiB(2) } };
	uint64_t pa, n = 0, last = 0;

	(void)state;
	init_map(u, 1, r, 1);
	assert_int_equal(bitmap_len, (((4ull << 30) - MiB(1)) >> 12) / 8);
	while ((pa = frame_alloc()) != 0) {
		assert_true(pa > last);		/* one sweep, increasing */
		last = pa;
		n++;
	}
	expect_stats(1048320, 256 + 32, 0);
	assert_int_equal(n, 1048320 - 256 - 32);
}

#define THREADS		4
#define PER_THREAD	600

static uint64_t thread_got[THREADS][PER_THREAD];

static void *worker(void *arg)
{
	uint64_t *got = arg;
	int round, i;

	for (round = 0; round < 20; round++) {
		for (i = 0; i < PER_THREAD; i++)
			got[i] = frame_alloc();
		for (i = 0; i < PER_THREAD; i += 2)
			if (frame_free(got[i]) != 0)
				return (void *)1;
		for (i = 0; i < PER_THREAD; i += 2)
			got[i] = frame_alloc_contig(1, 1);
		if (round < 19)
			for (i = 0; i < PER_THREAD; i++)
				if (frame_free(got[i]) != 0)
					return (void *)1;
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void test_concurrent(void **state)
{
	pthread_t t[THREADS];
	uint64_t *all = &thread_got[0][0];
	void *ret;
	int i;

	(void)state;
	init_ref();
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker, thread_got[i]), 0);
	for (i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(t[i], &ret), 0);
		assert_null(ret);
	}
	qsort(all, THREADS * PER_THREAD, sizeof(uint64_t), cmp_u64);
	for (i = 0; i < THREADS * PER_THREAD; i++) {
		check_frame(all[i]);
		if (i)
			assert_true(all[i] != all[i - 1]);
	}
	expect_stats(2974, 290, 2684 - THREADS * PER_THREAD);
}

/* The heap grows with the host: guests' frame maps (8 bytes per 4 KiB
 * page) for twice the host's RAM fit beside its fixed part, so that on a
 * host of any size the guests can fill its RAM (a fixed 128 MiB stopped
 * them near 60 GiB together). */
static void test_heap_size(void **state)
{
	static const uint64_t gib = 1ull << 30;

	(void)state;
	assert_true(mem_heap_bytes(0) == MEM_HEAP_MIN);
	assert_true(mem_heap_bytes(256ull << 20) == MEM_HEAP_MIN);
	assert_true(mem_heap_bytes(gib) == 64ull << 20);		/* 1/16 */
	assert_true(mem_heap_bytes(2 * gib) == 128ull << 20);
	assert_true(mem_heap_bytes(4 * gib) == (128ull << 20) + 16ull * (1 << 20));
	for (uint64_t ram = 4 * gib; ram <= 4096 * gib; ram *= 2) {
		uint64_t h = mem_heap_bytes(ram);

		assert_true(h - MEM_HEAP_BASE >= 2 * (ram / 4096) * 8 - 4096);
		assert_true(h <= ram / 16 && !(h & 4095));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_counts),
		cmocka_unit_test(test_exhaust_and_free_all),
		cmocka_unit_test(test_alloc_free_counts_and_next_fit),
		cmocka_unit_test(test_double_free),
		cmocka_unit_test(test_bad_free),
		cmocka_unit_test(test_contig_aligned),
		cmocka_unit_test(test_contig_bad_args_and_partial_free),
		cmocka_unit_test(test_init_errors),
		cmocka_unit_test(test_overlapping_and_odd_regions),
		cmocka_unit_test(test_frame_zero_never_returned),
		cmocka_unit_test(test_bitmap_place),
		cmocka_unit_test(test_large_map),
		cmocka_unit_test(test_concurrent),
		cmocka_unit_test(test_heap_size),
	};
	int ret = cmocka_run_group_tests(tests, NULL, NULL);

	free(bitmap);
	return ret;
}
