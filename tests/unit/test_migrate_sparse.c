/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sparse pages (hv/migrate/sparse.c and the SPARSE kind of PAGES records):
 * encode/decode round trips over many page shapes, the size limit, the
 * receiver's checks against malformed encodings, and a sparse page through
 * the stream, honest and hostile.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "hv/migrate/sparse.h"
#include "hv/migrate/stream.h"
#include "tests/unit/mig_wire.h"

#define WORDS 512u
#define G_PAGES 256u		/* 1 MiB: the smallest guest */

static uint64_t page[WORDS], back[WORDS];
static uint8_t enc[MIG_SPARSE_MAX + 64];

/* Encode page, check the result decodes to the same page; the length. */
static int round_trip(void)
{
	int n = mig_sparse_encode(page, enc, MIG_SPARSE_MAX);

	if (n > 0) {
		assert_true(mig_sparse_valid(enc, (size_t)n));
		memset(back, 0xcc, sizeof(back));
		mig_sparse_decode(enc, (size_t)n, back);
		assert_memory_equal(back, page, sizeof(page));
	}
	return n;
}

static void test_shapes(void **st)
{
	(void)st;
	memset(page, 0, sizeof(page));
	assert_int_equal(round_trip(), 0);			/* all zero: a flag instead */
	assert_true(mig_sparse_likely(page));
	page[WORDS - 1] = 1ull << 63;				/* one bit, last byte */
	assert_int_equal(round_trip(), 4 + 8);
	page[WORDS - 1] = 0;

	page[0] = 1;
	assert_int_equal(round_trip(), 4 + 8);
	page[WORDS - 1] = ~0ull;				/* first and last word */
	assert_int_equal(round_trip(), 2 * (4 + 8));
	page[1] = 2;						/* joins the first segment */
	assert_int_equal(round_trip(), 4 + 16 + 4 + 8);

	memset(page, 0, sizeof(page));
	for (unsigned int i = WORDS - 64; i < WORDS; i++)	/* a stack's top */
		page[i] = 0x1000 + i;
	assert_int_equal(round_trip(), 4 + 64 * 8);
	assert_true(mig_sparse_likely(page));

	memset(page, 0, sizeof(page));
	for (unsigned int i = 0; i < WORDS; i += 2)		/* every other word */
		page[i] = i + 1;
	assert_int_equal(round_trip(), -1);			/* 256 x 12 > 2048 */
	for (unsigned int i = 0; i < WORDS; i++)
		page[i] = i | 1ull << 40;
	assert_int_equal(round_trip(), -1);			/* dense */
	assert_false(mig_sparse_likely(page));
}

/* The largest page that still fits, and one word more. */
static void test_limit(void **st)
{
	unsigned int fit = (MIG_SPARSE_MAX - 4) / 8;		/* one segment */

	(void)st;
	memset(page, 0, sizeof(page));
	for (unsigned int i = 0; i < fit; i++)
		page[i] = 7;
	assert_int_equal(round_trip(), 4 + fit * 8);
	assert_int_equal(mig_sparse_encode(page, enc, 100), -1);	/* caller's cap */
	page[fit] = 7;
	assert_int_equal(round_trip(), -1);
}

/* Random sparse pages: every encoding is valid and exact. */
static void test_random(void **st)
{
	(void)st;
	srand(7);
	for (int t = 0; t < 2000; t++) {
		unsigned int nz = (unsigned int)rand() % 200;

		memset(page, 0, sizeof(page));
		for (unsigned int k = 0; k < nz; k++)
			page[rand() % WORDS] = (uint64_t)rand() << 20 | 1;
		int n = round_trip();
		assert_true(n == -1 || (n >= (int)MIG_SPARSE_MIN && n <= (int)MIG_SPARSE_MAX) ||
			    (n == 0 && nz == 0));
	}
}

static size_t seg(uint8_t *p, uint16_t first, uint16_t n)
{
	memcpy(p, &first, 2);
	memcpy(p + 2, &n, 2);
	memset(p + 4, 0x5a, (size_t)n * 8);
	return 4 + (size_t)n * 8;
}

static void test_malformed(void **st)
{
	uint8_t b[MIG_SPARSE_MAX + 64];
	size_t n;

	(void)st;
	n = seg(b, 3, 1);
	assert_true(mig_sparse_valid(b, n));
	assert_false(mig_sparse_valid(b, n - 1));		/* truncated data */
	assert_false(mig_sparse_valid(b, 0));
	assert_false(mig_sparse_valid(b, 8));			/* below the minimum */
	n = seg(b, 3, 1);
	n += seg(b + n, 0, 1);					/* out of order */
	assert_false(mig_sparse_valid(b, n));
	n = seg(b, 3, 2);
	n += seg(b + n, 4, 1);					/* overlaps */
	assert_false(mig_sparse_valid(b, n));
	n = seg(b, 3, 2);
	n += seg(b + n, 5, 1);					/* touching is fine */
	assert_true(mig_sparse_valid(b, n));
	n = seg(b, 511, 1);
	assert_true(mig_sparse_valid(b, n));
	n = seg(b, 511, 2);					/* past the page */
	assert_false(mig_sparse_valid(b, n));
	n = seg(b, 600, 1);
	assert_false(mig_sparse_valid(b, n));
	n = seg(b, 3, 0);					/* empty segment */
	n += seg(b + n, 4, 1);
	assert_false(mig_sparse_valid(b, n));
	n = seg(b, 3, 1);
	b[n] = 0;						/* stray bytes after the last */
	assert_false(mig_sparse_valid(b, n + 2));
	n = seg(b, 0, 255);					/* too long */
	n += seg(b + n, 255, 1);
	assert_false(mig_sparse_valid(b, n));
}

/* ---- through the stream ---- */

static struct mig_stream S, D;
static uint8_t buf[1 << 16];

static void accepted(void)
{
	mig_accept_pair(&S, &D, G_PAGES, buf, sizeof(buf));
}

static void done(void)
{
	mig_stream_fini(&S);
	mig_stream_fini(&D);
}

static void test_stream_sparse(void **st)
{
	struct mig_page pg[2];
	struct mig_rec p = { .type = MIG_PAGES, .pages = { 2, pg } };
	const struct mig_rec *r;
	int len;
	long n;

	(void)st;
	accepted();
	memset(page, 0, sizeof(page));
	page[100] = 0xfeedull;
	page[101] = 0xbeefull;
	len = mig_sparse_encode(page, enc, MIG_SPARSE_MAX);
	assert_int_equal(len, 4 + 16);
	pg[0] = (struct mig_page){ .gfn = 9, .kind = MIG_PAGE_SPARSE, .data = enc,
				   .len = (uint16_t)len };
	pg[1] = (struct mig_page){ .gfn = 10, .kind = MIG_PAGE_ZERO };
	n = mig_stream_encode(&S, &p, buf, sizeof(buf));
	assert_int_equal(n, MIG_HDR_SIZE + 4 + 9 + 2 + len + 9);
	assert_int_equal(mig_feed_all(&D, buf, (size_t)n, &r), 1);
	assert_int_equal(r->pages.page[0].kind, MIG_PAGE_SPARSE);
	assert_int_equal(r->pages.page[0].len, len);
	mig_sparse_decode(r->pages.page[0].data, r->pages.page[0].len, back);
	assert_memory_equal(back, page, sizeof(page));
	assert_int_equal(D.seen_pages, 2);
	done();
}

/* A lying encoding: refused by our encoder, and by the receiver when a
 * peer sends it anyway with a valid CRC. */
static void hostile(uint16_t len_field, const uint8_t *blob, size_t blob_len, const char *why)
{
	struct mig_page pg = { .gfn = 1, .kind = MIG_PAGE_SPARSE, .data = blob, .len = len_field };
	struct mig_rec p = { .type = MIG_PAGES, .pages = { 1, &pg } };
	uint8_t tail[2 + MIG_SPARSE_MAX + 16];

	accepted();
	if (len_field == blob_len)
		assert_int_equal(mig_stream_encode(&S, &p, buf, sizeof(buf)), -EINVAL);
	memcpy(tail, &len_field, 2);
	memcpy(tail + 2, blob, blob_len);
	mig_refuse_one_page(&D, 1, MIG_PAGE_SPARSE, tail, 2 + blob_len, why);
	done();
}

static void test_stream_hostile(void **st)
{
	uint8_t b[MIG_SPARSE_MAX + 16];
	size_t n;

	(void)st;
	n = seg(b, 5, 1);
	n += seg(b + n, 2, 1);
	hostile((uint16_t)n, b, n, "malformed sparse");		/* out of order */
	n = seg(b, 510, 4);
	hostile((uint16_t)n, b, n, "malformed sparse");		/* past the page */
	n = seg(b, 1, 1);
	hostile(4, b, 4, "sparse");				/* too short */
	hostile(MIG_SPARSE_MAX + 8, b, n, "sparse");		/* too long */
	hostile((uint16_t)(n + 40), b, n, "");			/* beyond the record */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shapes),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_stream_sparse),
		cmocka_unit_test(test_stream_hostile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
