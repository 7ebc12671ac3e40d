/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * QUERY / QUERY_REPLY (hv/migrate/stream.c): how a source that is "in
 * doubt" asks the destination how migration mig_id ended.  Round trip,
 * the phase rules (QUERY only first, only the source; the reply only to a
 * query and about the same id), and hostile replies.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "hv/migrate/stream.h"
#include "tests/unit/mig_wire.h"

static uint8_t buf[256];

static void test_query_round_trip(void **st)
{
	struct mig_stream src, dst;
	struct mig_rec q = { .type = MIG_QUERY, .query = { MIG_PROTO_VERSION, 0x1122334455667788ull } };
	struct mig_rec a = { .type = MIG_QUERY_REPLY, .qreply = { 0x1122334455667788ull, MIG_Q_RAN } };
	const struct mig_rec *r;
	long n;

	(void)st;
	mig_stream_init(&src, MIG_SRC);
	mig_stream_init(&dst, MIG_DST);
	n = mig_stream_encode(&src, &q, buf, sizeof(buf));
	assert_int_equal(n, MIG_HDR_SIZE + 12);
	assert_int_equal(src.phase, MIG_PH_QUERY);
	assert_int_equal(mig_feed_all(&dst, buf, (size_t)n, &r), 1);
	assert_int_equal(r->type, MIG_QUERY);
	assert_true(r->query.mig_id == 0x1122334455667788ull);
	assert_int_equal(dst.phase, MIG_PH_QUERY);
	n = mig_stream_encode(&dst, &a, buf, sizeof(buf));
	assert_int_equal(n, MIG_HDR_SIZE + 12);
	assert_int_equal(mig_feed_all(&src, buf, (size_t)n, &r), 1);
	assert_int_equal(r->qreply.outcome, MIG_Q_RAN);
	assert_int_equal(src.phase, MIG_PH_ANSWERED);
	/* the conversation is over: nothing more either way */
	assert_int_equal(mig_stream_encode(&src, &q, buf, sizeof(buf)), -EPIPE);
	mig_stream_fini(&src);
	mig_stream_fini(&dst);
}

static void test_query_phase_rules(void **st)
{
	struct mig_stream s;
	struct mig_rec q = { .type = MIG_QUERY, .query = { MIG_PROTO_VERSION, 7 } };
	struct mig_rec a = { .type = MIG_QUERY_REPLY, .qreply = { 7, MIG_Q_DISCARDED } };

	(void)st;
	/* a destination does not ask, a source does not answer */
	mig_stream_init(&s, MIG_DST);
	assert_int_equal(mig_stream_encode(&s, &q, buf, sizeof(buf)), -EINVAL);
	mig_stream_fini(&s);
	mig_stream_init(&s, MIG_SRC);
	assert_int_equal(mig_stream_encode(&s, &a, buf, sizeof(buf)), -EINVAL);
	mig_stream_fini(&s);
	/* no answer without a question; no QUERY after a HELLO */
	assert_false(mig_phase_allows(MIG_PH_HELLO, MIG_QUERY_REPLY, MIG_DST));
	assert_false(mig_phase_allows(MIG_PH_ADMIT, MIG_QUERY, MIG_SRC));
	assert_false(mig_phase_allows(MIG_PH_MEMORY, MIG_QUERY, MIG_SRC));
	assert_true(mig_phase_allows(MIG_PH_QUERY, MIG_QUERY_REPLY, MIG_DST));
	assert_true(mig_phase_allows(MIG_PH_QUERY, MIG_ABORT, MIG_DST));
	assert_false(mig_phase_allows(MIG_PH_ANSWERED, MIG_ABORT, MIG_DST));
	assert_string_equal(mig_type_name(MIG_QUERY_REPLY), "QUERY_REPLY");
	assert_string_equal(mig_phase_name(MIG_PH_ANSWERED), "answered");
}

/* A destination that lies: another id, an unknown outcome, a bad version. */
static void test_query_hostile_replies(void **st)
{
	struct mig_stream src, dst;
	struct mig_rec q = { .type = MIG_QUERY, .query = { MIG_PROTO_VERSION, 42 } };
	const struct mig_rec *r;
	uint8_t qb[64];
	long qn, n;

	(void)st;
	for (int c = 0; c < 3; c++) {
		struct mig_rec a = { .type = MIG_QUERY_REPLY, .qreply = { 42, MIG_Q_RAN } };
		mig_stream_init(&src, MIG_SRC);
		mig_stream_init(&dst, MIG_DST);
		qn = mig_stream_encode(&src, &q, qb, sizeof(qb));
		assert_int_equal(mig_feed_all(&dst, qb, (size_t)qn, &r), 1);
		if (c == 0)
			dst.query_id = a.qreply.mig_id = 43;	/* about another migration */
		else if (c == 1)
			a.qreply.outcome = 3;	/* what could that mean? */
		if (c < 2) {
			/* the destination's encoder checks what it sends: bypass it
			 * by patching a valid reply's bytes (CRC fixed by re-encoding) */
			struct mig_stream fake;
			mig_stream_init(&fake, MIG_DST);
			fake.phase = MIG_PH_QUERY;
			fake.query_id = a.qreply.mig_id;
			if (c == 1)
				a.qreply.outcome = MIG_Q_RAN;
			n = mig_stream_encode(&fake, &a, buf, sizeof(buf));
			assert_true(n > 0);
			if (c == 1) {
				/* outcome is the last u32 of the payload: make it 3
				 * and fix the CRC, as a lying peer would */
				buf[n - 4] = 3;
				mig_fix_crc(buf, (size_t)n);
			}
			mig_stream_fini(&fake);
			assert_int_equal(mig_feed_all(&src, buf, (size_t)n, &r), -EPROTO);
			assert_int_equal(src.rx_err.code, MIG_E_PROTOCOL);
			assert_non_null(strstr(src.rx_err.msg, c == 0 ? "asked about" : "outcome"));
		} else {
			/* a QUERY of another protocol version is refused */
			struct mig_stream d2;
			uint8_t b2[64];
			memcpy(b2, qb, (size_t)qn);
			b2[MIG_HDR_SIZE] = MIG_PROTO_VERSION + 1;	/* proto_version's low byte */
			mig_fix_crc(b2, (size_t)qn);
			mig_stream_init(&d2, MIG_DST);
			assert_int_equal(mig_feed_all(&d2, b2, (size_t)qn, &r), -EPROTO);
			assert_int_equal(d2.rx_err.code, MIG_E_VERSION);
			mig_stream_fini(&d2);
		}
		mig_stream_fini(&src);
		mig_stream_fini(&dst);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query_round_trip),
		cmocka_unit_test(test_query_phase_rules),
		cmocka_unit_test(test_query_hostile_replies),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
