/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the dirty-page log (hv/mm/dirty.c) on NPT- and EPT-format
 * tables built by the real engine from malloc'd table pages, with
 * write-protection and (EPT) with Intel PML as the source of dirt: one
 * suite, most tests run in all three set-ups.  The tests check the table
 * through their own 4-level walker (SDM Vol 3C 29.3.2, APM Vol 2 15.25:
 * write permission is bit 1 in both formats; the EPT dirty flag is bit 9),
 * and run a writer/collector race with pthreads that models vCPUs (their
 * faults, or their dirty-flag updates and PML logs), TLB shootdown and the
 * sender's page copy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86/paging.h"
#include "arch/x86/svm/npt.h"
#include "arch/x86/vmx/ept.h"
#include "arch/x86/vmx/pml.h"
#include "hv/mm/dirty.h"
#include "hv/lib/log.h"
#include "hv/lib/guest_layout.h"
#include "tests/unit/pt_pool.h"

#define K4		0x1000ull
#define M2		0x200000ull
#define RAM_PA		0x180000000ull	/* fake host frames of guest RAM */

/*
 * Guest-physical layout (gfns), chosen so the log's edges are exercised:
 *   [0, 1536)      three 2 MiB pages, RWX        tracked
 *   [1536, 2048)   one 2 MiB page, read-only      ("ROM": never tracked)
 *   [2048, 2064)   4 KiB pages, RWX               tracked
 *   [2064, 2080)   hole
 *   [2080, 2100)   4 KiB pages, RWX               tracked; 2100 = nr_pages
 *   [2100, 2112)   4 KiB pages, RWX, beyond the log (same bitmap word)
 *   10 MiB         one 2 MiB page, RWX, beyond the log
 */
#define NR_PAGES	2100
#define ROM_FIRST	1536
#define SMALL_FIRST	2048
#define HOLE_FIRST	2064
#define TAIL_FIRST	2080
#define BEYOND_END	2112
#define FAR_GPA		(10 * M2 / 2)
#define WORDS		((NR_PAGES + 63) / 64)

static bool tracked(uint64_t g)
{
	return g < ROM_FIRST || (g >= SMALL_FIRST && g < HOLE_FIRST) ||
	       (g >= TAIL_FIRST && g < NR_PAGES);
}

/* The log's messages: the last one is kept for the tests to read. */
static char last_msg[256];

void log_printf(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	(void)level;
	va_start(ap, fmt);
	vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
	va_end(ap);
}

/* ---- Per-test environment ---- */

enum kind { NPT, EPT, PML };	/* PML: EPT with the hardware tracker */

struct env {
	enum kind kind;
	struct pt_pool pool;
	struct page_table pt;
	struct dirty_log log;
	uint64_t out[WORDS + 1];	/* a collected set (+1: overrun canary) */
	bool split;			/* RAM's 2 MiB pages are split */
	bool pml;			/* the log uses vmx_pml_tracker */
	void *race;			/* the race test's state, freed by teardown */
};

static const enum kind npt_kind = NPT, ept_kind = EPT, pml_kind = PML;

static void map(struct env *env, uint64_t gfn, uint64_t size, unsigned attr)
{
	assert_int_equal(pt_map(&env->pt, gfn * K4, RAM_PA + gfn * K4, size, attr, 0), 0);
}

static void build_layout(struct env *env)
{
	for (uint64_t g = 0; g < ROM_FIRST; g += M2 / K4)
		map(env, g, M2, PT_RWX);
	map(env, ROM_FIRST, M2, PT_R | PT_X);
	map(env, SMALL_FIRST, (HOLE_FIRST - SMALL_FIRST) * K4, PT_RWX);
	map(env, TAIL_FIRST, (BEYOND_END - TAIL_FIRST) * K4, PT_RWX);
	map(env, FAR_GPA / K4, M2, PT_RWX);
}

static int setup(void **state)
{
	struct env *env = calloc(1, sizeof(*env));
	struct pt_ops ops;

	if (!env)
		return -1;
	env->kind = *(const enum kind *)*state;
	env->pml = env->kind == PML;
	dirty_hw_register(env->pml ? &vmx_pml_tracker : NULL);
	ops = pt_pool_ops(&env->pool);
	if (pt_init(&env->pt, env->kind == NPT ? &npt_format : &ept_format, &ops,
		    PT_SIZE_2M))
		return -1;
	build_layout(env);
	if (dirty_log_init(&env->log, NR_PAGES))
		return -1;
	*state = env;
	return 0;
}

/* Every table page must come back: no leak, no double free. */
static int teardown(void **state)
{
	struct env *env = *state;
	int bad;

	free(env->race);
	dirty_hw_register(NULL);
	dirty_hw_set_entries(0);
	dirty_log_destroy(&env->log);
	pt_destroy(&env->pt);
	bad = env->pool.live != 0;
	free(env);
	return bad ? -1 : 0;
}

/* ---- The tests' own walker ---- */

struct raw {
	int level;	/* of the leaf; -1: not mapped */
	uint64_t e;
};

static struct raw raw_walk(struct env *env, uint64_t gpa)
{
	uint64_t table = env->pt.root_pa;

	for (int l = PT_LEVELS - 1; l >= 0; l--) {
		const uint64_t *t = pt_pool_virt(&env->pool, table);
		uint64_t e = t[(gpa >> (12 + 9 * l)) & 511];
		bool present = env->kind == EPT ? (e & 7) : (e & 1);

		if (!present)
			return (struct raw){ -1, 0 };
		if (l == 0 || (e & (1ull << 7)))
			return (struct raw){ l, e };
		table = e & 0x000ffffffffff000ull;
	}
	return (struct raw){ -1, 0 };
}

static bool raw_writable(struct raw r)
{
	return r.e & 2;		/* EPT bit 1 "write", x86/NPT bit 1 "R/W" */
}

static void expect_page(struct env *env, uint64_t gfn, int level, bool w)
{
	struct raw r = raw_walk(env, gfn * K4);

	if (r.level != level || (level >= 0 && raw_writable(r) != w))
		fail_msg("gfn %#lx: level %d w %d, expected level %d w %d",
			 (unsigned long)gfn, r.level, raw_writable(r), level, w);
}

static bool raw_dirty(struct env *env, uint64_t gfn)
{
	return raw_walk(env, gfn * K4).e & EPT_D;
}

/*
 * Every page of the layout, want_w[g] meaning "written since the last
 * collection": tracked pages writable iff logging is off or want_w[g]
 * (with PML: always writable, and while logging dirty iff want_w[g]), and
 * 4 KiB once split; the rest exactly as built.
 */
static void check_table(struct env *env, bool logging, const bool *want_w)
{
	for (uint64_t g = 0; g < BEYOND_END; g++) {
		int level = (g < ROM_FIRST && !env->split) ? 1 : 0;
		bool written = tracked(g) && want_w && want_w[g];

		if (tracked(g) && env->pml && logging && raw_dirty(env, g) != written)
			fail_msg("gfn %#lx: dirty flag %d, expected %d", (unsigned long)g,
				 raw_dirty(env, g), written);
		if (tracked(g))
			expect_page(env, g, level, !logging || env->pml || written);
		else if (g >= ROM_FIRST && g < SMALL_FIRST)
			expect_page(env, g, 1, false);
		else if (g >= HOLE_FIRST && g < TAIL_FIRST)
			expect_page(env, g, -1, false);
		else
			expect_page(env, g, 0, true);	/* beyond the log */
	}
	for (uint64_t a = FAR_GPA; a < FAR_GPA + M2; a += K4)
		expect_page(env, a / K4, 1, true);
}

/* pt_for_each view of RAM: the leaves of [0, 6 MiB) are 4 KiB pages. */
struct leaf_count {
	unsigned leaves, writable, large;
};

static int count_leaf(void *ctx, const struct pt_leaf *leaf)
{
	struct leaf_count *c = ctx;

	c->leaves++;
	c->writable += (leaf->attr & PT_W) != 0;
	c->large += leaf->size != K4;
	return 0;
}

static struct leaf_count count_ram(struct env *env)
{
	struct leaf_count c = { 0, 0, 0 };

	assert_int_equal(pt_for_each(&env->pt, 0, ROM_FIRST * K4, count_leaf, &c), 0);
	return c;
}

/* ---- Helpers for the protocol ---- */

static void start(struct env *env)
{
	bool flush = false;

	assert_int_equal(dirty_log_start(&env->log, &env->pt, &flush), 0);
	assert_true(flush);		/* pages lost W and were split */
	env->split = true;
	dirty_log_flush_done(&env->log, &env->pt);
	assert_false(pt_needs_flush(&env->pt));
}

/* One collection (S6..S8); returns the page count, set in env->out. */
static int collect(struct env *env, bool expect_flush)
{
	bool flush = !expect_flush;
	int n;

	env->out[WORDS] = 0x5a5a5a5a5a5a5a5aull;
	n = dirty_log_collect_begin(&env->log, &env->pt, env->out, WORDS, &flush);
	assert_true(n >= 0);
	assert_int_equal(flush, expect_flush);
	assert_int_equal(env->out[WORDS], 0x5a5a5a5a5a5a5a5aull);
	dirty_log_flush_done(&env->log, &env->pt);
	return n;
}

static int fault(struct env *env, uint64_t gpa)
{
	return dirty_log_fault(&env->log, &env->pt, gpa);
}

static struct dirty_stats stats(struct env *env)
{
	struct dirty_stats s;

	dirty_log_get_stats(&env->log, &s);
	return s;
}

/* Pages the log was told of, by faults or by PML drains. */
static uint64_t logged_pages(struct env *env)
{
	struct dirty_stats s = stats(env);

	return s.faults + s.marks;
}

/*
 * The first guest write to a page since the log cleaned it: a write fault
 * (write-protection), or with PML the CPU setting the EPT dirty flag and
 * logging the GPA (low bits kept, as Bochs does), drained at the VM exit.
 */
static void guest_dirties(struct env *env, uint64_t gpa)
{
	uint64_t *e, log[PML_ENTRIES];

	if (!env->pml) {
		assert_int_equal(fault(env, gpa), DIRTY_LOGGED);
		return;
	}
	e = pt_find_leaf(&env->pt, gpa, NULL);
	assert_true(e && !(*e & EPT_D) && (*e & EPT_W));
	*e |= EPT_D;
	log[PML_INDEX_FIRST] = gpa;
	assert_int_equal(vmx_pml_drain(&env->log, log, PML_INDEX_FIRST - 1, PML_INDEX_FIRST, false), 1);
}

/* ---- Tests ---- */

static void test_start_protects_and_splits(void **state)
{
	struct env *env = *state;
	unsigned tables = env->pt.tables;
	struct leaf_count c;

	check_table(env, false, NULL);
	c = count_ram(env);
	assert_int_equal(c.leaves, 3);
	assert_int_equal(c.large, 3);
	start(env);
	check_table(env, true, NULL);
	c = count_ram(env);
	assert_int_equal(c.leaves, ROM_FIRST);
	assert_int_equal(c.writable, env->pml ? ROM_FIRST : 0);
	assert_int_equal(c.large, 0);
	assert_int_equal(env->pt.tables, tables + 3);	/* one PT per 2 MiB page */
	assert_int_equal(dirty_log_pending(&env->log), 0);
	assert_int_equal(stats(env).faults, 0);
}

static void test_fault_restores_one_page(void **state)
{
	struct env *env = *state;
	bool want[NR_PAGES] = { false };
	struct dirty_stats s;

	start(env);
	assert_int_equal(fault(env, 700 * K4 + 0x123), DIRTY_LOGGED);
	want[700] = true;
	check_table(env, true, want);
	assert_false(pt_needs_flush(&env->pt));	/* adding W needs none */
	assert_int_equal(dirty_log_pending(&env->log), 1);
	/* Another vCPU's stale read-only TLB entry: spurious, not logged twice. */
	assert_int_equal(fault(env, 700 * K4 + 8), DIRTY_SPURIOUS);
	assert_int_equal(fault(env, SMALL_FIRST * K4), DIRTY_LOGGED);
	want[SMALL_FIRST] = true;
	check_table(env, true, want);
	s = stats(env);
	assert_int_equal(s.faults, 2);
	assert_int_equal(s.spurious, 1);
	assert_int_equal(dirty_log_pending(&env->log), 2);
}

/* Pages at word edges, a whole word (one 64-page run), both ends of RAM. */
static const uint64_t written[] = {
	0, 1, 63, 64, 127, 200, 511, 512, 513, 1535,
	SMALL_FIRST, SMALL_FIRST + 15, TAIL_FIRST, NR_PAGES - 1,
};

static void test_collect_exact_set(void **state)
{
	struct env *env = *state;
	bool want[NR_PAGES] = { false };
	size_t g, n = 0;

	start(env);
	for (size_t i = 0; i < sizeof(written) / sizeof(written[0]); i++)
		want[written[i]] = true;
	for (g = 256; g < 320; g++)
		want[g] = true;
	for (g = 0; g < NR_PAGES; g++)
		if (want[g]) {
			guest_dirties(env, g * K4 + 0xfff);
			n++;
		}
	check_table(env, true, want);
	assert_int_equal(collect(env, true), n);
	assert_int_equal(dirty_bitmap_count(env->out, NR_PAGES), n);
	for (g = 0; g < NR_PAGES; g++)
		assert_int_equal(dirty_bitmap_test(env->out, NR_PAGES, g), want[g]);
	check_table(env, true, NULL);		/* all protected again */
	/* Nothing written since: an empty round needs no flush. */
	assert_int_equal(collect(env, false), 0);
	assert_int_equal(dirty_bitmap_count(env->out, NR_PAGES), 0);
	/* Written again after collection: logged again, next round has it. */
	guest_dirties(env, 513 * K4);
	assert_int_equal(collect(env, true), 1);
	assert_int_equal(dirty_bitmap_next(env->out, NR_PAGES, 0), 513);
	assert_int_equal(stats(env).rounds, 3);
	assert_int_equal(stats(env).collected, n + 1);
	assert_int_equal(logged_pages(env), n + 1);
}

/* The flush step is enforced: no second collection before flush_done. */
static void test_collect_needs_flush_done(void **state)
{
	struct env *env = *state;
	bool flush;

	start(env);
	guest_dirties(env, 5 * K4);
	assert_int_equal(dirty_log_collect_begin(&env->log, &env->pt, env->out, WORDS,
						 &flush), 1);
	assert_true(flush);
	assert_true(pt_needs_flush(&env->pt));
	assert_int_equal(dirty_log_collect_begin(&env->log, &env->pt, env->out, WORDS,
						 &flush), -EBUSY);
	assert_int_equal(dirty_log_start(&env->log, &env->pt, &flush), -EBUSY);
	assert_int_equal(stats(env).rounds, 0);
	dirty_log_flush_done(&env->log, &env->pt);
	assert_false(pt_needs_flush(&env->pt));
	assert_int_equal(stats(env).rounds, 1);
	assert_int_equal(collect(env, false), 0);
}

static void test_not_ours(void **state)
{
	struct env *env = *state;
	static const uint64_t gpas[] = {
		ROM_FIRST * K4, (SMALL_FIRST - 1) * K4 + 5,	/* read-only RAM */
		HOLE_FIRST * K4, (TAIL_FIRST - 1) * K4,		/* holes */
		NR_PAGES * K4, (BEYOND_END - 1) * K4,		/* beyond the log */
		FAR_GPA, 1ull << 48, ~0ull, ~0ull << 12,	/* far outside */
	};

	start(env);
	for (size_t i = 0; i < sizeof(gpas) / sizeof(gpas[0]); i++)
		assert_int_equal(fault(env, gpas[i]), DIRTY_NOT_OURS);
	check_table(env, true, NULL);
	assert_int_equal(dirty_log_pending(&env->log), 0);
	assert_int_equal(stats(env).faults, 0);
	assert_int_equal(stats(env).spurious, 0);
	assert_int_equal(collect(env, false), 0);
}

/* A log never started owns nothing; a writable page faults spuriously. */
static void test_fault_without_logging(void **state)
{
	struct env *env = *state;
	struct dirty_log none;
	bool flush;

	memset(&none, 0, sizeof(none));
	assert_int_equal(dirty_log_fault(&none, &env->pt, 0), DIRTY_NOT_OURS);
	assert_int_equal(dirty_log_collect_begin(&none, &env->pt, env->out, WORDS,
						 &flush), -EINVAL);
	assert_int_equal(dirty_log_start(&none, &env->pt, &flush), -EINVAL);
	assert_int_equal(fault(env, ROM_FIRST * K4), DIRTY_NOT_OURS);
	assert_int_equal(fault(env, 3 * K4), DIRTY_SPURIOUS);
	assert_int_equal(dirty_log_collect_begin(&env->log, &env->pt, env->out, WORDS,
						 &flush), -EINVAL);
	assert_int_equal(dirty_log_stop(&env->log, &env->pt, &flush), 0);
	assert_false(flush);
	check_table(env, false, NULL);
}

/* Stop, and the flush it asks for when it merged 2 MiB pages back. */
static void stop(struct env *env)
{
	bool flush = false;

	assert_int_equal(dirty_log_stop(&env->log, &env->pt, &flush), 0);
	assert_true(flush);			/* tables unlinked */
	assert_true(env->pt.ndeferred > 0);
	dirty_log_flush_done(&env->log, &env->pt);
	assert_int_equal(env->pt.ndeferred, 0);
	env->split = false;
}

/* A fault that a stale walk through a table the stop merged away can
 * raise before the flush: the page is mapped, so the guest retries;
 * unmapped pages and writes to read-only ones stay real faults. */
static void test_stale_walk_after_merge(void **state)
{
	struct env *env = *state;
	bool flush = false;

	start(env);
	assert_int_equal(dirty_log_stop(&env->log, &env->pt, &flush), 0);
	assert_true(flush);				/* not flushed yet */
	assert_int_equal(dirty_log_stale(&env->log, &env->pt, 0, false), DIRTY_SPURIOUS);
	assert_int_equal(dirty_log_stale(&env->log, &env->pt, 512 * K4 + 5, true),
			 DIRTY_SPURIOUS);
	assert_int_equal(dirty_log_stale(&env->log, &env->pt, ROM_FIRST * K4, true),
			 DIRTY_NOT_OURS);		/* read-only: a real fault */
	assert_int_equal(dirty_log_stale(&env->log, &env->pt, HOLE_FIRST * K4, false),
			 DIRTY_NOT_OURS);		/* nothing there */
	assert_int_equal(dirty_log_stale(&env->log, &env->pt, NR_PAGES * K4, false),
			 DIRTY_NOT_OURS);		/* past the log */
	dirty_log_flush_done(&env->log, &env->pt);
	env->split = false;
}

static void test_stop_restores(void **state)
{
	struct env *env = *state;
	unsigned live = env->pool.live;
	bool flush = true;

	start(env);
	guest_dirties(env, 10 * K4);
	assert_int_equal(collect(env, true), 1);
	guest_dirties(env, 11 * K4);		/* dropped by stop */
	stop(env);
	check_table(env, false, NULL);		/* RWX 2 MiB pages again */
	assert_int_equal(count_ram(env).leaves, 3);
	assert_int_equal(count_ram(env).large, 3);
	assert_int_equal(env->pool.live, live);	/* the three PTs freed */
	assert_int_equal(stats(env).large_split, 3);
	assert_int_equal(stats(env).large_merged, 3);
	assert_int_equal(dirty_log_pending(&env->log), 0);
	assert_int_equal(stats(env).rounds, 1);	/* kept for reporting */
	/* Stale read-only TLB entries after stop: spurious, guest resumes. */
	assert_int_equal(fault(env, 12 * K4), DIRTY_SPURIOUS);
	assert_int_equal(fault(env, ROM_FIRST * K4), DIRTY_NOT_OURS);
	assert_int_equal(dirty_log_collect_begin(&env->log, &env->pt, env->out, WORDS,
						 &flush), -EINVAL);
	assert_int_equal(dirty_log_stop(&env->log, &env->pt, &flush), 0);
	assert_false(flush);			/* stopped already */
	/* Again: same result, counters reset. */
	start(env);
	check_table(env, true, NULL);
	assert_int_equal(stats(env).rounds, 0);
	assert_int_equal(stats(env).spurious, 0);
	stop(env);
	check_table(env, false, NULL);
	assert_int_equal(env->pool.live, live);
}

/*
 * The log merges back exactly what it split, and only if it is still one
 * run with one set of rights.  Here, while logging (under the log's lock,
 * as dirty.h asks; the test is single-threaded): in RAM's second 2 MiB one
 * page is made read-only, in the third one page is moved to another frame
 * (both stay split); the first merges.  A 2 MiB of 4 KiB pages that the
 * guest's map made (contiguous, aligned frames) is never merged, nor a
 * read-only 2 MiB (ROM) or a mapping beyond the log.
 */
static void test_stop_merges_only_what_it_split(void **state)
{
	struct env *env = *state;
	const uint64_t small = 12 * M2;		/* gfn 6144, beyond FAR_GPA */
	struct dirty_log log;
	unsigned live;
	bool flush;

	for (uint64_t a = 0; a < M2; a += K4)
		assert_int_equal(pt_map(&env->pt, small + a, RAM_PA + small + a, K4, PT_RWX, 0), 0);
	assert_int_equal(dirty_log_init(&log, small / K4 + 512), 0);
	live = env->pool.live;
	assert_int_equal(dirty_log_start(&log, &env->pt, &flush), 0);
	dirty_log_flush_done(&log, &env->pt);
	spin_lock(&log.lock);
	assert_int_equal(pt_protect(&env->pt, M2 + 3 * K4, K4, 0, PT_X, 0), PT_FLUSH);
	assert_int_equal(pt_map(&env->pt, 2 * M2 + 8 * K4, RAM_PA + 64 * M2, K4, PT_R | PT_X,
				PT_MAP_REPLACE), PT_FLUSH);
	spin_unlock(&log.lock);
	assert_int_equal(dirty_log_stop(&log, &env->pt, &flush), 0);
	assert_true(flush);
	dirty_log_flush_done(&log, &env->pt);
	assert_int_equal(raw_walk(env, 0).level, 1);
	assert_int_equal(raw_walk(env, M2).level, 0);
	assert_int_equal(raw_walk(env, 2 * M2).level, 0);
	assert_true(raw_writable(raw_walk(env, 2 * M2 + 9 * K4)));
	expect_page(env, ROM_FIRST, 1, false);
	expect_page(env, FAR_GPA / K4, 1, true);
	expect_page(env, small / K4 + 100, 0, true);
	assert_int_equal(env->pool.live, live + 2);
	assert_int_equal(log.stats.large_split, 4);	/* three + FAR_GPA's */
	assert_int_equal(log.stats.large_merged, 2);
	dirty_log_destroy(&log);
}

/* Start and stop again and again: no table page leaks, none is lost. */
static void test_cycles_do_not_leak(void **state)
{
	struct env *env = *state;
	unsigned live = env->pool.live, tables = env->pt.tables;
	struct dirty_map_census c;

	assert_int_equal(dirty_log_map_census(&env->log, &env->pt, &c), 0);
	assert_int_equal(c.pages_2m, 4);	/* three RAM, one ROM */
	assert_int_equal(c.pages_4k, HOLE_FIRST - SMALL_FIRST + NR_PAGES - TAIL_FIRST);
	assert_int_equal(c.pages_1g, 0);
	assert_int_equal(c.tables, tables);
	for (int i = 0; i < 5; i++) {
		start(env);
		assert_int_equal(dirty_log_map_census(&env->log, &env->pt, &c), 0);
		assert_int_equal(c.pages_2m, 1);
		assert_int_equal(c.pages_4k, ROM_FIRST + HOLE_FIRST - SMALL_FIRST +
						 NR_PAGES - TAIL_FIRST);
		assert_int_equal(c.tables, tables + 3);
		guest_dirties(env, (uint64_t)(i * 300) * K4);
		if (i % 2)
			assert_int_equal(collect(env, true), 1);
		stop(env);
		check_table(env, false, NULL);
		assert_int_equal(env->pool.live, live);
		assert_int_equal(env->pt.tables, tables);
	}
	assert_int_equal(dirty_log_map_census(&env->log, &env->pt, &c), 0);
	assert_int_equal(c.pages_2m, 4);
	assert_int_equal(c.tables, tables);
}

/* The PML-shaped source: bits only, rights untouched. */
static void test_mark(void **state)
{
	struct env *env = *state;

	start(env);
	assert_int_equal(dirty_log_mark(&env->log, 42), 0);
	assert_int_equal(dirty_log_mark(&env->log, 42), 0);
	assert_int_equal(dirty_log_mark(&env->log, ROM_FIRST + 1), 0);
	assert_int_equal(dirty_log_mark(&env->log, NR_PAGES), -EINVAL);
	assert_int_equal(dirty_log_mark(&env->log, ~0ull), -EINVAL);
	assert_int_equal(dirty_log_mark(&env->log, 1ull << 36), -EINVAL);
	check_table(env, true, NULL);
	assert_int_equal(dirty_log_pending(&env->log), 2);
	/* Already protected pages: nothing to reduce, no flush. */
	assert_int_equal(collect(env, false), 2);
	assert_true(dirty_bitmap_test(env->out, NR_PAGES, 42));
	assert_true(dirty_bitmap_test(env->out, NR_PAGES, ROM_FIRST + 1));
	check_table(env, true, NULL);		/* the ROM page did not gain W */
	assert_int_equal(stats(env).marks, 3);
	assert_int_equal(stats(env).bad_marks, 3);
	assert_int_equal(stats(env).faults, 0);
}

static void test_bad_arguments(void **state)
{
	struct env *env = *state;
	struct dirty_log other;
	bool flush;

	assert_int_equal(dirty_log_init(&other, 0), -EINVAL);
	assert_int_equal(dirty_log_init(&other, DIRTY_MAX_PAGES + 1), -EINVAL);
	assert_int_equal(dirty_log_init(&other, (size_t)-1), -EINVAL);
	dirty_log_destroy(&other);
	start(env);
	assert_int_equal(dirty_log_start(&env->log, &env->pt, &flush), -EBUSY);
	assert_int_equal(dirty_log_collect_begin(&env->log, &env->pt, env->out,
						 WORDS - 1, &flush), -EINVAL);
	assert_int_equal(dirty_log_collect_begin(&env->log, &env->pt, env->out, 0,
						 &flush), -EINVAL);
	assert_int_equal(stats(env).rounds, 0);
}

/* A split fails half way: start undoes itself and the log stays off. */
static void test_start_out_of_memory(void **state)
{
	struct env *env = *state;
	bool flush = false;

	unsigned live = env->pool.live;

	env->pool.cap = env->pool.live + 2;	/* two of the three splits */
	assert_int_equal(dirty_log_start(&env->log, &env->pt, &flush), -ENOMEM);
	assert_true(flush);			/* the splits that were done */
	dirty_log_flush_done(&env->log, &env->pt);
	assert_int_equal(count_ram(env).large, 3);	/* and merged back */
	assert_int_equal(env->pool.live, live);
	for (uint64_t g = 0; g < NR_PAGES; g++)
		if (tracked(g))
			assert_true(raw_writable(raw_walk(env, g * K4)));
	assert_int_equal(fault(env, 0), DIRTY_SPURIOUS);
	assert_int_equal(dirty_log_collect_begin(&env->log, &env->pt, env->out, WORDS,
						 &flush), -EINVAL);
	env->pool.cap = 0;			/* no limit again */
	start(env);
	check_table(env, true, NULL);
}

static void test_bitmap_helpers(void **state)
{
	uint64_t bm[3] = { 0, 1ull << 63, ~0ull };	/* 150 bits: 64..149 */
	size_t g, n = 0;

	(void)state;
	assert_int_equal(dirty_bitmap_words(0), 0);
	assert_int_equal(dirty_bitmap_words(1), 1);
	assert_int_equal(dirty_bitmap_words(64), 1);
	assert_int_equal(dirty_bitmap_words(65), 2);
	assert_int_equal(dirty_bitmap_next(bm, 150, 0), 127);
	assert_int_equal(dirty_bitmap_next(bm, 150, 128), 128);
	assert_int_equal(dirty_bitmap_next(bm, 150, 149), 149);
	assert_int_equal(dirty_bitmap_next(bm, 150, 150), 150);
	assert_int_equal(dirty_bitmap_next(bm, 150, ~(size_t)0), 150);
	assert_int_equal(dirty_bitmap_next(bm, 127, 0), 127);	/* none below */
	assert_int_equal(dirty_bitmap_count(bm, 150), 1 + 22);	/* garbage above 149 */
	assert_int_equal(dirty_bitmap_count(bm, 128), 1);
	assert_false(dirty_bitmap_test(bm, 150, 150));
	assert_false(dirty_bitmap_test(bm, 150, 126));
	assert_true(dirty_bitmap_test(bm, 150, 127));
	dirty_bitmap_for_each(g, bm, 150) {
		assert_true(g == 127 || (g >= 128 && g < 150));
		n++;
	}
	assert_int_equal(n, 23);
}

/* ---- The race: vCPUs writing while the sender collects ---- */

#define WRITERS		2
#define ROUNDS		200	/* collections while the writers run */
#define BUDGET		10000	/* writes per writer per round, to bound the
				 * run time whatever the host's scheduling */
#define EXIT_EVERY	32	/* writes between a writer's VM exits */

/*
 * Model: a writer is a vCPU with its own TLB of writable translations.  A
 * guest write to a page cached writable just happens (it is counted);
 * otherwise the vCPU walks the table and caches the translation if it is
 * writable, or leaves the guest through a fault (dirty_log_fault) and
 * retries.  So a vCPU keeps writing through stale entries after the
 * collector re-protected a page, until its next VM exit: there (every
 * EXIT_EVERY writes, and at every fault) it drops its TLB if the flush
 * generation moved, as the back ends do before entry, and acknowledges
 * the generation; having written BUDGET times in one generation it waits
 * in the host for the next.  The sender collects when every writer is
 * half way through its budget, so that writes are in flight; it flushes
 * by bumping the generation and waiting for each writer's
 * acknowledgement, then "copies" each collected page by recording how
 * many writes the page has had.  No write is lost iff at the end every
 * page's copy reflects all its writes.  A lost write can hide behind a
 * later write to the same page, so after every round the sender also
 * checks, with log->lock held (no fault in progress), the log's two
 * invariants on every tracked page: writable => its bit is set;
 * write-protected => its last copy reflects all its writes.
 *
 * With PML a page is always writable: a write through no cached
 * translation sets the page's dirty flag, and if that was clear, logs the
 * GPA in the writer's 512-entry log (or, the log being full, exits
 * "PML full" first and retries); every VM exit drains the log
 * (vmx_pml_drain) before acknowledging.  The lock-held invariants do not
 * apply (writers take no lock); the end result must be the same.
 */
struct writer {
	pthread_t thread;
	struct race *race;
	uint64_t seed;
	uint64_t seen;		/* generation its TLB reflects */
	uint64_t ack;		/* (a) generation seen at its last VM exit */
	int finished;		/* (a) */
	bool tlb[NR_PAGES];	/* cached writable translations */
	unsigned budget;	/* (a) writes left in this generation */
	unsigned long writes, logged, spurious, errors;
	uint64_t pml[PML_ENTRIES];	/* PML: its log */
	uint16_t pml_index;		/* its PML index, top down, 0xffff: full */
	uint16_t pml_top;		/* where the index started */
	unsigned long pml_full;		/* "PML full" exits */
};

struct race {
	struct env *env;
	uint64_t gen;
	int stop;			/* the writers must finish */
	uint64_t writes[NR_PAGES];	/* guest writes done, per page */
	uint64_t copied[NR_PAGES];	/* writes[] when the sender last copied it */
	uint8_t faulted[NR_PAGES];	/* a fault logged the page */
	uint8_t collected[NR_PAGES];	/* some round returned it */
	unsigned long rounds, pages, errors;
	unsigned long overlapped;	/* rounds with every writer running */
	unsigned long w_no_bit;		/* writable pages with a clear bit */
	unsigned long stale_copy;	/* protected pages with writes not copied */
	struct writer w[WRITERS];
};

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Mostly a hot set of 200 pages, so faults and collections collide. */
static uint64_t pick_page(uint64_t *seed)
{
	uint64_t r = xorshift(seed);
	uint64_t g = (r >> 8) % ((r & 7) ? 200 : NR_PAGES);

	return tracked(g) ? g : g % ROM_FIRST;
}

static bool page_writable(struct env *env, uint64_t gfn)
{
	unsigned attr;

	return !pt_lookup(&env->pt, gfn * K4, NULL, &attr, NULL) && (attr & PT_W);
}

/* Out of guest mode: drain the PML log; flush before the next entry if
 * the tables changed. */
static void vm_exit(struct writer *w, bool pml_full)
{
	uint64_t gen;

	if (w->race->env->pml) {
		vmx_pml_drain(&w->race->env->log, w->pml, w->pml_index, w->pml_top, pml_full);
		w->pml_index = w->pml_top = vmx_pml_top();
	}
	gen = __atomic_load_n(&w->race->gen, __ATOMIC_SEQ_CST);

	if (gen != w->seen) {
		memset(w->tlb, 0, sizeof(w->tlb));
		w->seen = gen;
		__atomic_store_n(&w->budget, BUDGET, __ATOMIC_SEQ_CST);
	}
	__atomic_store_n(&w->ack, gen, __ATOMIC_SEQ_CST);
}

/* A write with PML: the CPU's part (SDM "Page-Modification Logging"). */
static void guest_write_pml(struct writer *w, uint64_t gfn)
{
	struct race *r = w->race;
	uint64_t *e = pt_find_leaf(&r->env->pt, gfn * K4, NULL);

	while (!w->tlb[gfn]) {
		if (!(__atomic_load_n(e, __ATOMIC_SEQ_CST) & EPT_D) &&
		    w->pml_index > w->pml_top) {
			w->pml_full++;
			vm_exit(w, true);	/* the write is not done: retry */
			continue;
		}
		if (!(__atomic_fetch_or(e, EPT_D, __ATOMIC_SEQ_CST) & EPT_D)) {
			w->pml[w->pml_index--] = gfn * K4 | (gfn & 0xff8);
			w->logged++;
			__atomic_store_n(&r->faulted[gfn], 1, __ATOMIC_RELAXED);
		}
		w->tlb[gfn] = true;
	}
	__atomic_fetch_add(&r->writes[gfn], 1, __ATOMIC_SEQ_CST);
}

static void guest_write(struct writer *w, uint64_t gfn)
{
	struct race *r = w->race;

	if (r->env->pml) {
		guest_write_pml(w, gfn);
		return;
	}
	for (;;) {
		int ret;

		if (w->tlb[gfn] || page_writable(r->env, gfn)) {
			w->tlb[gfn] = true;
			__atomic_fetch_add(&r->writes[gfn], 1, __ATOMIC_SEQ_CST);
			return;
		}
		vm_exit(w, false);
		ret = dirty_log_fault(&r->env->log, &r->env->pt, gfn * K4);
		if (ret == DIRTY_LOGGED) {
			w->logged++;
			__atomic_store_n(&r->faulted[gfn], 1, __ATOMIC_RELAXED);
		} else if (ret == DIRTY_SPURIOUS) {
			w->spurious++;
		} else {
			w->errors++;
			return;
		}
	}
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;

	w->pml_index = w->pml_top = vmx_pml_top();
	__atomic_store_n(&w->budget, BUDGET, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&w->race->stop, __ATOMIC_SEQ_CST)) {
		if (!__atomic_load_n(&w->budget, __ATOMIC_SEQ_CST)) {
			vm_exit(w, false);
			if (!__atomic_load_n(&w->budget, __ATOMIC_SEQ_CST))
				sched_yield();
			continue;
		}
		guest_write(w, pick_page(&w->seed));
		__atomic_sub_fetch(&w->budget, 1, __ATOMIC_SEQ_CST);
		if (++w->writes % EXIT_EVERY == 0)
			vm_exit(w, false);
	}
	vm_exit(w, false);		/* paused: out of the guest for good */
	__atomic_store_n(&w->finished, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* S7: the "shootdown": every writer still running has left the guest. */
static void flush_writers(struct race *r)
{
	uint64_t g = __atomic_add_fetch(&r->gen, 1, __ATOMIC_SEQ_CST);

	for (int i = 0; i < WRITERS; i++)
		while (__atomic_load_n(&r->w[i].ack, __ATOMIC_SEQ_CST) < g &&
		       !__atomic_load_n(&r->w[i].finished, __ATOMIC_SEQ_CST))
			sched_yield();		/* few host CPUs: let it run */
}

static void check_invariants(struct race *r)
{
	struct dirty_log *log = &r->env->log;

	spin_lock(&log->lock);
	for (uint64_t g = 0; g < NR_PAGES; g++) {
		bool w = raw_writable(raw_walk(r->env, g * K4));
		bool bit = __atomic_load_n(&log->dirty[g / 64], __ATOMIC_SEQ_CST) >> (g % 64) & 1;

		if (!tracked(g))
			continue;
		r->w_no_bit += w && !bit;
		r->stale_copy += !w && r->copied[g] != __atomic_load_n(&r->writes[g],
								      __ATOMIC_SEQ_CST);
	}
	spin_unlock(&log->lock);
}

static bool any_finished(struct race *r)
{
	for (int i = 0; i < WRITERS; i++)
		if (__atomic_load_n(&r->w[i].finished, __ATOMIC_SEQ_CST))
			return true;
	return false;
}

/* Until every writer is in the middle of this generation's writes. */
static void wait_busy(struct race *r)
{
	for (int i = 0; i < WRITERS; i++)
		while (__atomic_load_n(&r->w[i].budget, __ATOMIC_SEQ_CST) > BUDGET / 2 &&
		       !__atomic_load_n(&r->w[i].finished, __ATOMIC_SEQ_CST))
			sched_yield();
}

/* S6..S9. */
static void sender_round(struct race *r, uint64_t *set)
{
	bool flush;
	int n;
	size_t g;

	wait_busy(r);
	n = dirty_log_collect_begin(&r->env->log, &r->env->pt, set, WORDS, &flush);

	if (n < 0 || (n > 0 && !flush)) {
		r->errors++;
		return;
	}
	flush_writers(r);
	dirty_log_flush_done(&r->env->log, &r->env->pt);
	dirty_bitmap_for_each(g, set, NR_PAGES) {
		r->copied[g] = __atomic_load_n(&r->writes[g], __ATOMIC_SEQ_CST);
		r->collected[g] = 1;
	}
	r->rounds++;
	r->pages += (unsigned long)n;
	r->overlapped += !any_finished(r);
	if (!r->env->pml)
		check_invariants(r);
}

static void run_race(struct race *r)
{
	uint64_t set[WORDS];

	for (int i = 0; i < WRITERS; i++) {
		r->w[i].race = r;
		r->w[i].seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		assert_int_equal(pthread_create(&r->w[i].thread, NULL, writer_main,
						&r->w[i]), 0);
	}
	for (int i = 0; i < ROUNDS; i++)
		sender_round(r, set);
	__atomic_store_n(&r->stop, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < WRITERS; i++)
		assert_int_equal(pthread_join(r->w[i].thread, NULL), 0);
	sender_round(r, set);	/* the final round, guest stopped */
}

static void test_concurrent_no_write_lost(void **state)
{
	struct env *env = *state;
	struct race *r = env->race = calloc(1, sizeof(*r));
	unsigned long logged = 0, spurious = 0, total = 0, writes = 0, full = 0;
	struct dirty_stats s;

	assert_non_null(r);
	r->env = env;
	if (env->pml)
		dirty_hw_set_entries(16);	/* `debug dirtylog pml 16`: often full */
	start(env);
	run_race(r);
	assert_int_equal(r->errors, 0);
	assert_int_equal(r->w_no_bit, 0);
	assert_int_equal(r->stale_copy, 0);
	for (int i = 0; i < WRITERS; i++) {
		assert_int_equal(r->w[i].errors, 0);
		logged += r->w[i].logged;
		spurious += r->w[i].spurious;
		full += r->w[i].pml_full;
		writes += r->w[i].writes;
	}
	for (size_t g = 0; g < NR_PAGES; g++) {
		if (r->copied[g] != r->writes[g])
			fail_msg("gfn %zu: %lu writes, sender copied after %lu", g,
				 (unsigned long)r->writes[g], (unsigned long)r->copied[g]);
		assert_int_equal(r->collected[g], r->faulted[g]);
		assert_true(!r->faulted[g] || r->writes[g]);
		total += r->writes[g];
	}
	assert_int_equal(total, writes);
	s = stats(env);
	assert_int_equal(s.faults + s.marks, logged);
	assert_int_equal(s.spurious, spurious);
	assert_int_equal(s.bad_marks + s.hw_bad, 0);
	assert_int_equal(s.hw_full, full);
	assert_true(!env->pml || full > ROUNDS);
	assert_int_equal(s.collected, r->pages);
	assert_int_equal(s.rounds, r->rounds);
	assert_int_equal(r->rounds, ROUNDS + 1);
	assert_int_equal(r->overlapped, ROUNDS);
	assert_true(logged > 10 * ROUNDS);	/* faults and rounds interleaved */
	assert_int_equal(dirty_log_pending(&env->log), 0);
	check_table(env, true, NULL);		/* everything protected again */
}

/* ---- A 1 GiB page split all the way ---- */

static void test_1g_page_split(void **state)
{
	struct env *env = *state;
	struct pt_ops ops = env->pt.ops;
	const struct pt_format *fmt = env->pt.fmt;
	struct dirty_log log;
	struct leaf_count c = { 0, 0, 0 };
	bool flush;

	pt_destroy(&env->pt);
	assert_int_equal(pt_init(&env->pt, fmt, &ops, PT_SIZE_1G), 0);
	assert_int_equal(pt_map(&env->pt, 0, 1ull << 30, 1ull << 30, PT_RWX, 0), 0);
	assert_int_equal(dirty_log_init(&log, (1u << 30) / K4), 0);
	assert_int_equal(dirty_log_start(&log, &env->pt, &flush), 0);
	assert_true(flush);
	dirty_log_flush_done(&log, &env->pt);
	assert_int_equal(pt_for_each(&env->pt, 0, 1ull << 30, count_leaf, &c), 0);
	assert_int_equal(c.leaves, (1u << 30) / K4);
	assert_int_equal(c.writable, 0);
	assert_int_equal(c.large, 0);
	assert_int_equal(dirty_log_fault(&log, &env->pt, 0x3ffff000), DIRTY_LOGGED);
	expect_page(env, 0x3ffff, 0, true);
	expect_page(env, 0x3fffe, 0, false);
	assert_int_equal(dirty_log_stop(&log, &env->pt, &flush), 0);
	assert_true(flush);
	dirty_log_flush_done(&log, &env->pt);
	/* Merged back per 2 MiB (the log's unit), not up to 1 GiB. */
	expect_page(env, 0x12345, 1, true);
	memset(&c, 0, sizeof(c));
	assert_int_equal(pt_for_each(&env->pt, 0, 1ull << 30, count_leaf, &c), 0);
	assert_int_equal(c.large, 512);
	assert_int_equal(c.leaves, 512);
	assert_int_equal(env->pt.tables, 3);
	dirty_log_destroy(&log);
}

/* A guest bigger than 3 GiB: bits count RAM pages, and those past the hole
 * sit 1 GiB higher in GPA (hv/lib/guest_layout.h).  A mapping inside the
 * hole (as a device's would be) is never the log's. */
static void test_pages_past_the_hole(void **state)
{
	struct env *env = *state;
	struct dirty_log log;
	const uint64_t low = GUEST_LOW_PAGES, nr = low + 1024;
	size_t words = dirty_bitmap_words(nr);
	uint64_t *set = calloc(words, sizeof(*set)), size;
	unsigned attr;
	bool flush;

	assert_non_null(set);
	assert_int_equal(pt_map(&env->pt, GUEST_HOLE_START - M2, RAM_PA + 0x40000000, M2,
				PT_RWX, 0), 0);
	assert_int_equal(pt_map(&env->pt, GUEST_HOLE_START, RAM_PA + 0x40200000, M2, PT_RWX, 0), 0);
	assert_int_equal(pt_map(&env->pt, GUEST_HOLE_END, RAM_PA + 0x40400000, M2, PT_RWX, 0), 0);
	assert_int_equal(dirty_log_init(&log, nr), 0);
	assert_int_equal(dirty_log_start(&log, &env->pt, &flush), 0);
	dirty_log_flush_done(&log, &env->pt);

	assert_int_equal(pt_lookup(&env->pt, GUEST_HOLE_END + K4, NULL, &attr, &size), 0);
	assert_int_equal(attr & PT_W, 0);
	assert_int_equal(size, PT_SIZE_4K);
	assert_int_equal(pt_lookup(&env->pt, GUEST_HOLE_START + K4, NULL, &attr, &size), 0);
	assert_int_equal(attr & PT_W, PT_W);		/* the hole: left as it was */
	assert_int_equal(size, PT_SIZE_2M);

	assert_int_equal(dirty_log_fault(&log, &env->pt, GUEST_HOLE_END + 2 * K4 + 8), DIRTY_LOGGED);
	assert_int_equal(dirty_log_fault(&log, &env->pt, GUEST_HOLE_START - K4), DIRTY_LOGGED);
	assert_int_equal(dirty_log_fault(&log, &env->pt, GUEST_HOLE_START + K4), DIRTY_NOT_OURS);
	assert_int_equal(dirty_log_mark(&log, (GUEST_HOLE_END >> 12) + 5), 0);
	assert_int_equal(dirty_log_mark(&log, 0xfee00), -EINVAL);	/* local APIC page */
	assert_int_equal(dirty_log_mark(&log, (GUEST_HOLE_END >> 12) + 1024), -EINVAL);
	assert_int_equal(dirty_log_collect_begin(&log, &env->pt, set, words, &flush), 3);
	dirty_log_flush_done(&log, &env->pt);
	assert_true(dirty_bitmap_test(set, nr, low - 1));
	assert_true(dirty_bitmap_test(set, nr, low + 2));
	assert_true(dirty_bitmap_test(set, nr, low + 5));
	assert_int_equal(pt_lookup(&env->pt, GUEST_HOLE_END + 2 * K4, NULL, &attr, NULL), 0);
	assert_int_equal(attr & PT_W, 0);		/* protected again */

	assert_int_equal(dirty_log_stop(&log, &env->pt, &flush), 0);
	assert_int_equal(pt_lookup(&env->pt, GUEST_HOLE_END + 2 * K4, NULL, &attr, NULL), 0);
	assert_int_equal(attr & PT_W, PT_W);
	dirty_log_destroy(&log);
	free(set);
}

/* ---- PML only ---- */

/* Start cleans the dirty flags of the tracked pages only, and turns the
 * back ends' logging on; stop turns it off, W untouched, and merges the
 * split pages back into clean 2 MiB leaves. */
static void test_pml_start_cleans(void **state)
{
	struct env *env = *state;
	uint64_t *rom = pt_find_leaf(&env->pt, ROM_FIRST * K4, NULL);
	uint64_t *beyond = pt_find_leaf(&env->pt, NR_PAGES * K4, NULL);
	uint64_t *ram = pt_find_leaf(&env->pt, 700 * K4, NULL);
	bool flush;

	assert_true(rom && beyond && ram);
	*rom |= EPT_D;			/* a previous session's flags */
	*beyond |= EPT_D;
	*ram |= EPT_D;
	assert_string_equal(dirty_hw_method(), "pml");
	assert_false(dirty_log_hw_on(&env->log));
	assert_false(dirty_log_hw_on(NULL));
	start(env);
	assert_true(dirty_log_hw_on(&env->log));
	check_table(env, true, NULL);	/* RAM 4 KiB, writable, clean */
	assert_true(raw_dirty(env, ROM_FIRST));	/* not the log's pages */
	assert_true(raw_dirty(env, NR_PAGES));
	guest_dirties(env, 9 * K4);
	assert_int_equal(dirty_log_stop(&env->log, &env->pt, &flush), 0);
	assert_true(flush);			/* the merge */
	dirty_log_flush_done(&env->log, &env->pt);
	env->split = false;
	assert_false(dirty_log_hw_on(&env->log));
	assert_string_equal(last_msg, "dirty log: pml session over: 0 write faults, 1 pages "
			    "marked (1 hardware drains, 0 full), 0 collected in 0 rounds, "
			    "3 of 3 split 2 MiB pages merged back");
	assert_false(raw_dirty(env, 9));	/* merged: a clean leaf */
	assert_true(raw_dirty(env, ROM_FIRST));
	check_table(env, false, NULL);
}

/* A PML session on a guest mapped only with 4 KiB pages whose EPT dirty
 * flags are clean (A/D was off until now): start neither splits nor cleans
 * a flag, yet hw_on takes effect only at each vCPU's next entry, so S3 must
 * still make every vCPU leave guest mode once before round 0 reads pages;
 * a vCPU that has not would write with PML and A/D off, unlogged. */
static void test_pml_start_small_pages_needs_sync(void **state)
{
	struct env *env = *state;
	struct pt_pool pool = { 0 };
	struct pt_ops ops = pt_pool_ops(&pool);
	struct page_table pt;
	struct dirty_log log;
	bool flush = false;

	(void)env;
	assert_int_equal(pt_init(&pt, &ept_format, &ops, PT_SIZE_2M), 0);
	for (uint64_t g = 0; g < 64; g++)	/* scattered host frames: 4 KiB leaves */
		assert_int_equal(pt_map(&pt, g * K4, RAM_PA + (63 - g) * K4, K4, PT_RWX, 0), 0);
	assert_int_equal(dirty_log_init(&log, 64), 0);
	assert_int_equal(dirty_log_start(&log, &pt, &flush), 0);
	assert_true(dirty_log_hw_on(&log));
	assert_true(flush);	/* every vCPU must re-enter (pml_sync) before S5 */
	dirty_log_flush_done(&log, &pt);
	assert_int_equal(dirty_log_stop(&log, &pt, &flush), 0);
	dirty_log_flush_done(&log, &pt);
	dirty_log_destroy(&log);
	pt_destroy(&pt);
}

/* `debug dirtylog wp`: the next session write-protects, on the same
 * table; the method cannot be one the CPU lacks. */
static void test_pml_switch_to_wp(void **state)
{
	struct env *env = *state;
	bool flush;

	assert_int_equal(dirty_hw_select(false), 0);
	assert_string_equal(dirty_hw_method(), "write-protect");
	env->pml = false;
	start(env);
	assert_false(dirty_log_hw_on(&env->log));
	check_table(env, true, NULL);		/* write-protected */
	guest_dirties(env, 77 * K4);
	assert_int_equal(dirty_log_stop(&env->log, &env->pt, &flush), 0);
	assert_string_equal(last_msg, "dirty log: write-protect session over: 1 write faults, "
			    "0 pages marked (0 hardware drains, 0 full), 0 collected in 0 rounds, "
			    "3 of 3 split 2 MiB pages merged back");
	assert_int_equal(dirty_hw_select(true), 0);
	assert_string_equal(dirty_hw_available(), "pml");
	dirty_hw_register(NULL);
	assert_int_equal(dirty_hw_select(true), -ENODEV);
	assert_string_equal(dirty_hw_method(), "write-protect");
	assert_null(dirty_hw_available());
}

/*
 * Draining one log: entries index+1 .. 511 only; a full log (0xffff) all
 * 512; an index the CPU never writes counts as bad and all 512 are taken;
 * GPAs outside RAM (the hole, past the log, garbage) are counted, not
 * marked.
 */
static void test_pml_drain(void **state)
{
	struct env *env = *state;
	uint64_t log[PML_ENTRIES];
	struct dirty_stats s;

	start(env);
	for (unsigned i = 0; i < PML_ENTRIES; i++)
		log[i] = (uint64_t)(1000 + i) * K4 + i % 8;	/* Bochs: low bits kept */
	assert_int_equal(vmx_pml_drain(&env->log, log, PML_INDEX_FIRST, PML_INDEX_FIRST, false), 0);
	assert_int_equal(stats(env).hw_drains, 0);
	assert_int_equal(vmx_pml_drain(&env->log, log, 509, PML_INDEX_FIRST, false), 2);
	assert_int_equal(dirty_log_pending(&env->log), 2);
	assert_int_equal(collect(env, false), 2);	/* never written: clean */
	assert_true(dirty_bitmap_test(env->out, NR_PAGES, 1510));
	assert_true(dirty_bitmap_test(env->out, NR_PAGES, 1511));
	assert_int_equal(vmx_pml_drain(&env->log, log, PML_INDEX_FULL, PML_INDEX_FIRST, true), 512);
	assert_int_equal(dirty_log_pending(&env->log), 512);
	assert_int_equal(vmx_pml_drain(&env->log, log, 512, PML_INDEX_FIRST, false), 512);
	assert_int_equal(vmx_pml_drain(&env->log, log, 0xfffe, PML_INDEX_FIRST, false), 512);
	assert_int_equal(vmx_pml_drain(&env->log, log, 1ull << 40, PML_INDEX_FIRST, false), 512);
	assert_int_equal(vmx_pml_drain(&env->log, log, 0, PML_INDEX_FIRST, false), 511);
	log[PML_ENTRIES - 4] = GUEST_HOLE_START + 5 * K4;
	log[PML_ENTRIES - 3] = NR_PAGES * K4;
	log[PML_ENTRIES - 2] = ~0ull;
	log[PML_ENTRIES - 1] = 1ull << 52;
	assert_int_equal(vmx_pml_drain(&env->log, log, PML_ENTRIES - 5, PML_INDEX_FIRST, false), 4);
	s = stats(env);
	assert_int_equal(s.hw_drains, 7);
	assert_int_equal(s.hw_full, 1);
	assert_int_equal(s.hw_bad, 3);
	assert_int_equal(s.marks, 2 + 4 * 512 + 511);
	assert_int_equal(s.bad_marks, 4);
	assert_int_equal(dirty_log_pending(&env->log), 512);
	assert_int_equal(collect(env, false), 512);
	assert_int_equal(dirty_bitmap_next(env->out, NR_PAGES, 0), 1000);
	assert_int_equal(dirty_bitmap_next(env->out, NR_PAGES, 1512), NR_PAGES);
}

/* `debug dirtylog pml 16`: logs start at index 15; an index above it
 * (but not "full") is bad. */
static void test_pml_drain_short_log(void **state)
{
	struct env *env = *state;
	uint64_t log[PML_ENTRIES];

	dirty_hw_set_entries(16);
	assert_int_equal(vmx_pml_top(), 15);
	dirty_hw_set_entries(600);
	assert_int_equal(vmx_pml_top(), PML_INDEX_FIRST);
	start(env);
	for (unsigned i = 0; i < PML_ENTRIES; i++)
		log[i] = (uint64_t)i * K4;
	assert_int_equal(vmx_pml_drain(&env->log, log, 15, 15, false), 0);
	assert_int_equal(vmx_pml_drain(&env->log, log, 13, 15, false), 2);
	assert_int_equal(collect(env, false), 2);
	assert_true(dirty_bitmap_test(env->out, NR_PAGES, 14));
	assert_true(dirty_bitmap_test(env->out, NR_PAGES, 15));
	assert_int_equal(vmx_pml_drain(&env->log, log, PML_INDEX_FULL, 15, true), 16);
	assert_int_equal(collect(env, false), 16);
	assert_int_equal(dirty_bitmap_next(env->out, NR_PAGES, 16), NR_PAGES);
	assert_int_equal(vmx_pml_drain(&env->log, log, 16, 15, false), 512);
	assert_int_equal(vmx_pml_drain(&env->log, log, 3, 600, false), 512);
	assert_int_equal(stats(env).hw_bad, 2);
	assert_int_equal(stats(env).hw_full, 1);
}

#define BOTH(fn)							\
	cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown,	\
						 (void *)&npt_kind),	\
	cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown,	\
						 (void *)&ept_kind)
#define WITH_PML(fn)							\
	cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown,	\
						 (void *)&pml_kind)
#define ALL(fn)		BOTH(fn), WITH_PML(fn)

int main(void)
{
	const struct CMUnitTest tests[] = {
		ALL(test_start_protects_and_splits),
		BOTH(test_fault_restores_one_page),
		ALL(test_collect_exact_set),
		ALL(test_collect_needs_flush_done),
		ALL(test_not_ours),
		ALL(test_fault_without_logging),
		ALL(test_stop_restores),
		ALL(test_stale_walk_after_merge),
		ALL(test_stop_merges_only_what_it_split),
		ALL(test_cycles_do_not_leak),
		ALL(test_mark),
		ALL(test_bad_arguments),
		ALL(test_start_out_of_memory),
		ALL(test_concurrent_no_write_lost),
		BOTH(test_1g_page_split),
		BOTH(test_pages_past_the_hole),
		WITH_PML(test_pml_start_cleans),
		WITH_PML(test_pml_start_small_pages_needs_sync),
		WITH_PML(test_pml_switch_to_wp),
		WITH_PML(test_pml_drain),
		WITH_PML(test_pml_drain_short_log),
		cmocka_unit_test(test_bitmap_helpers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
