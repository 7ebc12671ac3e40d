/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The history of migrations (hv/migrate/history.c) as an in-doubt source's
 * QUERY is answered from it: refusals, which any peer can cause with a
 * connection (or a HELLO carrying any id), neither hide nor push out the
 * outcome of a migration that was admitted here.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "hv/migrate/migrate.h"

static const struct mig_entry *mig_history_find_in_any(uint64_t id)
{
	return mig_history_find_in(id, NULL);
}

static struct mig_entry *in(uint64_t id, enum mig_outcome o)
{
	struct mig_entry *e = mig_history_add(id, false, "g", "10.0.0.2", 1u << 20);

	e->outcome = o;
	return e;
}

static void test_refusals_neither_hide_nor_push_out_an_outcome(void **st)
{
	const struct mig_entry *e;

	(void)st;
	in(0x77, MIG_DONE);
	assert_null(mig_history_find_in_any(0x78));
	e = mig_history_find_in_any(0x77);
	assert_non_null(e);
	assert_int_equal(e->outcome, MIG_DONE);
	/* a refused HELLO that says the same id, then a stream of refused
	 * handshakes, three times what the history holds */
	in(0x77, MIG_REFUSED);
	for (int i = 0; i < 3 * MIG_HISTORY; i++)
		in(0, MIG_REFUSED);
	e = mig_history_find_in_any(0x77);
	assert_non_null(e);
	assert_int_equal(e->outcome, MIG_DONE);
	/* what was sent from here is not what came in */
	mig_history_add(0x99, true, "g", "10.0.0.3", 0)->outcome = MIG_DONE;
	assert_null(mig_history_find_in_any(0x99));
	/* the newest admitted one with an id answers; one still running is
	 * not evicted, and the list stays in order */
	in(0x55, MIG_FAILED);
	in(0x55, MIG_RUNNING);
	assert_int_equal(mig_history_find_in_any(0x55)->outcome, MIG_RUNNING);
	for (int i = 0; i < MIG_HISTORY; i++)
		in(0x1000 + (uint64_t)i, MIG_DONE);
	assert_int_equal(mig_history_find_in_any(0x55)->outcome, MIG_RUNNING);
	assert_null(mig_history_find_in_any(0x77));		/* admitted ones age out at last */
	e = mig_history_at(MIG_HISTORY - 1);
	assert_non_null(e);
	assert_true(e->id == 0x1000 + MIG_HISTORY - 1);
	assert_null(mig_history_at(MIG_HISTORY));
}

/* A QUERY hears only about what the asking peer sent: another trusted
 * host that reuses an id once its entry has aged out (and fails) cannot
 * make the source of the first hear "discarded" while the guest runs. */
static void test_outcomes_answer_only_their_peer(void **st)
{
	struct mig_entry *e;

	(void)st;
	e = in(0x4242, MIG_DONE);
	snprintf(e->key, sizeof(e->key), "src,SHA256:aaaa");
	assert_int_equal(mig_history_find_in(0x4242, "src,SHA256:aaaa")->outcome, MIG_DONE);
	assert_null(mig_history_find_in(0x4242, "other,SHA256:bbbb"));
	for (int i = 0; i < MIG_HISTORY; i++)		/* its entry ages out */
		in(0x2000 + (uint64_t)i, MIG_DONE);
	assert_null(mig_history_find_in(0x4242, NULL));
	e = in(0x4242, MIG_FAILED);			/* reused by another host */
	snprintf(e->key, sizeof(e->key), "other,SHA256:bbbb");
	assert_null(mig_history_find_in(0x4242, "src,SHA256:aaaa"));	/* "unknown" */
	assert_int_equal(mig_history_find_in(0x4242, NULL)->outcome, MIG_FAILED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals_neither_hide_nor_push_out_an_outcome),
		cmocka_unit_test(test_outcomes_answer_only_their_peer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
