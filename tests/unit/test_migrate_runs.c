/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Zero runs in PAGES records (hv/migrate/stream.c): an idle guest's empty
 * memory travels as (gfn, count) entries.  Round trip with the page counts
 * ROUND_END checks, round 0 covered by runs, and hostile runs (too short,
 * beyond guest memory, wrapping, too many pages in one record).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "hv/migrate/stream.h"
#include "tests/unit/mig_wire.h"

#define G_PAGES 1024u		/* a 4 MiB guest */

static struct mig_stream S, D;
static uint8_t buf[1 << 20];
static uint8_t page[MIG_PAGE_SIZE];
static long pass_len;		/* bytes of the last record passed */

/* S to D: encode on S, decode on D; the decoded record. */
static const struct mig_rec *pass(const struct mig_rec *r)
{
	const struct mig_rec *out = NULL;
	long n = mig_stream_encode(&S, r, buf, sizeof(buf));

	assert_true(n > 0);
	pass_len = n;
	assert_int_equal(mig_feed_all(&D, buf, (size_t)n, &out), 1);
	return out;
}

static void accepted(void)
{
	mig_accept_pair(&S, &D, G_PAGES, buf, sizeof(buf));
}

static void done(void)
{
	mig_stream_fini(&S);
	mig_stream_fini(&D);
}

static void test_round0_by_runs(void **st)
{
	struct mig_page pg[3] = {
		{ .gfn = 0, .kind = MIG_PAGE_ZERO_RUN, .run = 500 },
		{ .gfn = 500, .kind = MIG_PAGE_DATA, .data = page },
		{ .gfn = 501, .kind = MIG_PAGE_ZERO_RUN, .run = G_PAGES - 501 },
	};
	struct mig_rec p = { .type = MIG_PAGES, .pages = { 3, pg } };
	struct mig_rec e = { .type = MIG_ROUND_END, .round = { 0, G_PAGES, 0 } };
	const struct mig_rec *r;

	(void)st;
	accepted();
	memset(page, 0xa5, sizeof(page));
	r = pass(&p);
	assert_int_equal(pass_len, MIG_HDR_SIZE + 4 + 13 + 9 + MIG_PAGE_SIZE + 13);
	assert_int_equal(r->pages.count, 3);
	assert_int_equal(r->pages.page[0].kind, MIG_PAGE_ZERO_RUN);
	assert_int_equal(r->pages.page[0].run, 500);
	assert_int_equal(mig_page_span(&r->pages.page[2]), G_PAGES - 501);
	assert_memory_equal(r->pages.page[1].data, page, MIG_PAGE_SIZE);
	assert_int_equal(D.seen_pages, G_PAGES);	/* every page covered */
	r = pass(&e);				/* so round 0 may end; counts agree */
	assert_int_equal(r->round.pages, G_PAGES);
	assert_int_equal(D.total_pages, G_PAGES);
	done();
}

/* Each hostile entry is refused by the sender's encoder and, re-encoded by
 * hand with a valid CRC, by the receiver. */
static void refused(struct mig_page pg, const char *why)
{
	struct mig_rec p = { .type = MIG_PAGES, .pages = { 1, &pg } };

	accepted();
	assert_int_equal(mig_stream_encode(&S, &p, buf, sizeof(buf)), -EINVAL);
	mig_refuse_one_page(&D, pg.gfn, MIG_PAGE_ZERO_RUN, &pg.run, 4, why);
	done();
}

static void test_hostile_runs(void **st)
{
	(void)st;
	refused((struct mig_page){ .gfn = 3, .kind = MIG_PAGE_ZERO_RUN, .run = 0 }, "zero run");
	refused((struct mig_page){ .gfn = 3, .kind = MIG_PAGE_ZERO_RUN, .run = 1 }, "zero run");
	refused((struct mig_page){ .gfn = 1000, .kind = MIG_PAGE_ZERO_RUN, .run = 25 },
		"zero run");
	refused((struct mig_page){ .gfn = G_PAGES - 1, .kind = MIG_PAGE_ZERO_RUN,
				   .run = 0xffffffffu }, "zero run");
	refused((struct mig_page){ .gfn = G_PAGES, .kind = MIG_PAGE_ZERO_RUN, .run = 2 },
		"beyond guest memory");
}

/* A record may not cover more than MIG_REC_SPAN_MAX pages, one zero run
 * over a whole big guest included: the destination's work per record
 * (zeroing the run) stays bounded, so its shell and network go on. */
static void test_span_per_record_bounded(void **st)
{
	static struct mig_page pg[MIG_PAGES_MAX];
	struct mig_rec p = { .type = MIG_PAGES, .pages = { 2, pg } };
	struct mig_rec one = { .type = MIG_PAGES, .pages = { 1, pg } };
	const uint64_t gib = 1u << 18;				/* a 1 GiB guest */

	(void)st;
	mig_accept_pair(&S, &D, gib, buf, sizeof(buf));
	pg[0] = (struct mig_page){ .gfn = 0, .kind = MIG_PAGE_ZERO_RUN, .run = gib };
	assert_int_equal(mig_stream_encode(&S, &one, buf, sizeof(buf)), -EINVAL);
	assert_non_null(strstr(S.tx_err.msg, "in one record"));
	pg[0].run = MIG_REC_SPAN_MAX;
	pg[1] = (struct mig_page){ .gfn = MIG_REC_SPAN_MAX, .kind = MIG_PAGE_ZERO };
	assert_int_equal(mig_stream_encode(&S, &p, buf, sizeof(buf)), -EINVAL);
	assert_non_null(strstr(S.tx_err.msg, "in one record"));
	done();
	mig_accept_pair(&S, &D, gib, buf, sizeof(buf));
	pass(&one);					/* the largest a record may be */
	done();
}

/* A round carries each page once at most: a record that would take the
 * round past the guest's size is refused (the check is the same both
 * ways, so a source that sends it is refused by the destination), and the
 * next round may carry the guest again. */
static void test_pages_per_round_bounded(void **st)
{
	struct mig_page all = { .gfn = 0, .kind = MIG_PAGE_ZERO_RUN, .run = G_PAGES };
	struct mig_page one = { .gfn = 7, .kind = MIG_PAGE_ZERO };
	struct mig_rec p = { .type = MIG_PAGES, .pages = { 1, &all } };
	struct mig_rec q = { .type = MIG_PAGES, .pages = { 1, &one } };
	struct mig_rec e = { .type = MIG_ROUND_END, .round = { 0, G_PAGES, 0 } };

	(void)st;
	accepted();
	pass(&p);
	assert_int_equal(mig_stream_encode(&S, &q, buf, sizeof(buf)), -EINVAL);
	assert_non_null(strstr(S.tx_err.msg, "more pages than the guest has"));
	done();
	accepted();
	pass(&p);
	pass(&e);
	pass(&p);				/* round 1: the whole guest again */
	assert_int_equal(D.round_pages, G_PAGES);
	done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round0_by_runs),
		cmocka_unit_test(test_hostile_runs),
		cmocka_unit_test(test_span_per_record_bounded),
		cmocka_unit_test(test_pages_per_round_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
