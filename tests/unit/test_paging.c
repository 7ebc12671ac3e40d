/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the page-table engine (arch/x86/paging.c) and its three
 * formats: host x86-64, AMD NPT, Intel EPT.  Most tests run once per
 * format.  Table pages come from a fake physical memory pool (malloc'd
 * pages at made-up physical addresses); the tests read the raw entries
 * back with their own decoder, written from the manuals, not through the
 * formats' callbacks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86/paging.h"
#include "arch/x86/svm/npt.h"
#include "arch/x86/vmx/ept.h"

#define K4	0x1000ull
#define M2	0x200000ull
#define G1	0x40000000ull
#define VA_TOP	(1ull << 48)

/* ---- Fake physical memory for table pages ---- */

#define POOL_PAGES	8192
#define POOL_BASE	0x7a5000000ull	/* fake PA of slot 0, unlike any pointer */

struct pool {
	uint64_t *page[POOL_PAGES];	/* NULL: slot free */
	unsigned long allocs, frees, live;
	unsigned long limit;		/* most pages live at once */
	long fail_in;			/* fail the call this many calls ahead; <0 never */
	void (*hook)(void *arg);	/* run at each allocation, before it */
	void *hook_arg;
	unsigned next;			/* round robin: freed slots are not reused at once */
};

static uint64_t *pool_page(struct pool *p, uint64_t pa)
{
	uint64_t *t;

	assert_true(pa >= POOL_BASE && pa < POOL_BASE + POOL_PAGES * K4);
	assert_int_equal(pa & (K4 - 1), 0);
	t = p->page[(pa - POOL_BASE) / K4];
	assert_non_null(t);		/* the engine must not touch freed pages */
	return t;
}

static int pool_alloc(void *ctx, uint64_t *pa)
{
	struct pool *p = ctx;

	if (p->hook)
		p->hook(p->hook_arg);
	if (p->fail_in >= 0 && p->fail_in-- == 0)
		return -ENOMEM;
	if (p->live >= p->limit)
		return -ENOMEM;
	for (unsigned n = 0; n < POOL_PAGES; n++) {
		unsigned i = (p->next + n) % POOL_PAGES;

		if (p->page[i])
			continue;
		p->page[i] = aligned_alloc(K4, K4);
		assert_non_null(p->page[i]);
		memset(p->page[i], 0xa5, K4);	/* garbage: the engine must zero */
		p->next = i + 1;
		p->allocs++;
		p->live++;
		*pa = POOL_BASE + i * K4;
		return 0;
	}
	return -ENOMEM;
}

static void pool_free(void *ctx, uint64_t pa)
{
	struct pool *p = ctx;
	unsigned i = (pa - POOL_BASE) / K4;

	pool_page(p, pa);
	free(p->page[i]);
	p->page[i] = NULL;
	p->frees++;
	p->live--;
}

static void *pool_virt(void *ctx, uint64_t pa)
{
	return pool_page(ctx, pa);
}

/* ---- Per-test environment: one format, one table ---- */

enum kind { HOST, NPT, EPT };

struct fmt_case {
	enum kind kind;
	const struct pt_format *fmt;
};

static const struct fmt_case host_case = { HOST, &pt_host_format };
static const struct fmt_case npt_case = { NPT, &npt_format };
static const struct fmt_case ept_case = { EPT, &ept_format };

struct env {
	enum kind kind;
	const struct pt_format *fmt;
	struct pool pool;
	struct page_table pt;
};

static void env_init_pt(struct env *env, uint64_t max_page)
{
	struct pt_ops ops = { pool_alloc, pool_free, pool_virt, &env->pool };

	assert_int_equal(pt_init(&env->pt, env->fmt, &ops, max_page), 0);
	assert_int_equal(env->pt.tables, 1);
}

static void env_reinit(struct env *env, uint64_t max_page)
{
	pt_destroy(&env->pt);
	assert_int_equal(env->pool.live, 0);
	env_init_pt(env, max_page);
}

static int setup(void **state)
{
	const struct fmt_case *c = *state;
	struct env *env = calloc(1, sizeof(*env));

	if (!env)
		return -1;
	env->kind = c->kind;
	env->fmt = c->fmt;
	env->pool.limit = POOL_PAGES;
	env->pool.fail_in = -1;
	env_init_pt(env, PT_SIZE_1G);
	*state = env;
	return 0;
}

/* Destroy must free every table page: no leak, no double free. */
static int teardown(void **state)
{
	struct env *env = *state;
	int bad;

	env->pool.hook = NULL;
	env->pool.fail_in = -1;
	pt_destroy(&env->pt);
	bad = env->pool.live || env->pool.allocs != env->pool.frees || env->pt.tables;
	for (unsigned i = 0; i < POOL_PAGES; i++)
		free(env->pool.page[i]);
	free(env);
	return bad ? -1 : 0;
}

/* ---- The tests' own decoder (SDM Vol 3A 4.5, Vol 3C 29.3.2) ---- */

#define RAW_ADDR	0x000ffffffffff000ull
#define RAW_PS		(1ull << 7)
#define raw_shift(l)	(12 + 9 * (l))	/* address bits below a level */

struct raw {
	int level;			/* leaf level, -1 if not mapped */
	int miss;			/* not mapped: level of the empty entry */
	uint64_t e[PT_LEVELS];		/* entries read, by level */
	uint64_t *ptr[PT_LEVELS];	/* and where they are */
	uint64_t pa;			/* the translation */
};

static bool raw_present(const struct env *env, uint64_t e)
{
	return env->kind == EPT ? (e & 7) != 0 : (e & 1) != 0;
}

static void raw_walk(struct env *env, uint64_t va, struct raw *r)
{
	uint64_t table = env->pt.root_pa;

	memset(r, 0, sizeof(*r));
	r->level = -1;
	for (int l = PT_LEVELS - 1; l >= 0; l--) {
		uint64_t *p = &pool_page(&env->pool, table)[(va >> raw_shift(l)) & 511];
		uint64_t e = *p;

		r->e[l] = e;
		r->ptr[l] = p;
		if (!raw_present(env, e)) {
			r->miss = l;
			return;
		}
		if (l == 0 || (e & RAW_PS)) {
			uint64_t low = (1ull << raw_shift(l)) - 1;

			assert_true(l < 3);	/* PS is reserved in a PML4E */
			r->level = l;
			r->pa = (e & RAW_ADDR & ~low) | (va & low);
			return;
		}
		table = e & RAW_ADDR;
	}
}

/* What each format can encode, stated independently of the formats. */
static bool attr_valid(const struct env *env, unsigned a)
{
	if (a & ~PT_ATTR_ALL)
		return false;
	switch (env->kind) {
	case HOST:
		return a & PT_R;
	case NPT:
		return (a & PT_R) && !(a & PT_GLOBAL);
	case EPT:
		return !(a & (PT_USER | PT_GLOBAL)) && (a & PT_RWX) &&
		       !((a & PT_W) && !(a & PT_R));
	}
	return false;
}

/* Attributes as the table reports them: NPT leaves are always user. */
static unsigned norm(const struct env *env, unsigned a)
{
	return env->kind == NPT ? a | PT_USER : a;
}

static void check_table_entry(const struct env *env, uint64_t e)
{
	if (env->kind == EPT) {
		assert_int_equal(e & 0xff, 7);	/* RWX; bits 7:3 reserved */
	} else {
		/* P, RW, U/S (NPT needs U at every level); PS clear; NX clear */
		assert_int_equal(e & 0x87, 0x07);
		assert_int_equal(e >> 63, 0);
	}
	assert_int_equal((e >> 52) & 0x7ff, 0);
}

static void check_leaf_entry(const struct env *env, uint64_t e, int level,
			     unsigned attr)
{
	if (env->kind == EPT) {
		assert_int_equal(!!(e & 1), !!(attr & PT_R));
		assert_int_equal(!!(e & 2), !!(attr & PT_W));
		assert_int_equal(!!(e & 4), !!(attr & PT_X));
		assert_int_equal((e >> 3) & 7, (attr & PT_MT_UC) ? 0 : 6);
		assert_true(e & (1ull << 6));		/* ignore PAT */
		assert_int_equal(!!(e & RAW_PS), level > 0);
		assert_int_equal(e >> 52, 0);		/* suppress #VE clear */
		return;
	}
	assert_true(e & 1);
	assert_int_equal(!!(e & 2), !!(attr & PT_W));
	assert_int_equal(!!(e & 4), env->kind == NPT || (attr & PT_USER));
	assert_int_equal(!!(e & 0x100), !!(attr & PT_GLOBAL));
	assert_int_equal((e >> 3) & 3, (attr & PT_MT_UC) ? 3 : 0);  /* PCD|PWT */
	assert_int_equal(e >> 63, !(attr & PT_X));			/* NX */
	if (level > 0)
		assert_true(e & RAW_PS);
	assert_int_equal((e >> 52) & 0x7ff, 0);
}

#define ANY_LEVEL	(-1)
#define BEST_LEVEL	(-2)

/* The largest leaf alignment allows for the page at a. */
static int best_level(const struct env *env, uint64_t a, uint64_t va,
		      uint64_t size, uint64_t pa)
{
	for (int l = 2; l > 0; l--) {
		uint64_t s = 1ull << raw_shift(l), base = a & ~(s - 1);

		if (s <= env->pt.max_page && base >= va && base - va + s <= size &&
		    !((pa - va) & (s - 1)))
			return l;
	}
	return 0;
}

/* Every page of [va, va+size) maps pa+offset with attr, through valid
 * tables, with a leaf of `level` (or BEST_LEVEL / ANY_LEVEL).  Pages of
 * one leaf are checked once: the leaf maps them contiguously. */
static void check_pages(struct env *env, uint64_t va, uint64_t size, uint64_t pa,
			unsigned attr, int level)
{
	for (uint64_t off = 0; off < size;) {
		uint64_t a = va + off;
		struct raw r;
		int want;

		raw_walk(env, a, &r);
		if (r.level < 0)
			fail_msg("%#llx not mapped", (unsigned long long)a);
		if (r.pa != pa + off)
			fail_msg("%#llx maps %#llx, want %#llx", (unsigned long long)a,
				 (unsigned long long)r.pa, (unsigned long long)(pa + off));
		want = level == BEST_LEVEL ? best_level(env, a, va, size, pa) : level;
		if (want != ANY_LEVEL && r.level != want)
			fail_msg("%#llx: leaf level %d, want %d", (unsigned long long)a,
				 r.level, want);
		for (int l = PT_LEVELS - 1; l > r.level; l--)
			check_table_entry(env, r.e[l]);
		check_leaf_entry(env, r.e[r.level], r.level, norm(env, attr));
		off += (a | ((1ull << raw_shift(r.level)) - 1)) - a + 1;
	}
}

static void check_unmapped(struct env *env, uint64_t va, uint64_t size)
{
	for (uint64_t off = 0; off < size;) {
		uint64_t a = va + off;
		struct raw r;

		raw_walk(env, a, &r);
		if (r.level >= 0)
			fail_msg("%#llx is mapped", (unsigned long long)a);
		off += (a | ((1ull << raw_shift(r.miss)) - 1)) - a + 1;
	}
}

/* Tables reachable from pa; strict: none of them (but the root) empty. */
static unsigned long raw_tables(struct env *env, uint64_t pa, int level, bool strict)
{
	const uint64_t *t = pool_page(&env->pool, pa);
	unsigned long n = 1;
	bool any = false;

	for (unsigned i = 0; i < 512; i++) {
		uint64_t e = t[i];

		if (!raw_present(env, e))
			continue;
		any = true;
		if (level > 0 && !(e & RAW_PS))
			n += raw_tables(env, e & RAW_ADDR, level - 1, strict);
	}
	if (strict && level < PT_LEVELS - 1)
		assert_true(any);
	return n;
}

static void check_table_count(struct env *env, bool strict)
{
	unsigned long reach = raw_tables(env, env->pt.root_pa, PT_LEVELS - 1, strict);

	assert_int_equal(env->pt.tables, reach + env->pt.ndeferred);
	assert_int_equal(env->pool.live, env->pt.tables);
}

static void map_ok(struct env *env, uint64_t va, uint64_t pa, uint64_t size,
		   unsigned attr)
{
	assert_int_equal(pt_map(&env->pt, va, pa, size, attr, 0), 0);
}

/* ---- Mapping ---- */

struct range {
	uint64_t va, pa, size;
	unsigned attr;
};

static const struct range mixed[] = {
	/* pa - va not 2 MiB aligned: 4 KiB pages only */
	{ 0x1000, 0x100000, 0x5ff000, PT_RWX },
	/* 3 small pages, a 1 GiB page, a 2 MiB page, a small page */
	{ G1 - 3 * K4, 5 * G1 - 3 * K4, 3 * K4 + G1 + M2 + K4, PT_RWX },
	/* congruent modulo 2 MiB only: 2 MiB pages, no 1 GiB page */
	{ 6 * G1, 10 * G1 + M2, G1, PT_R | PT_X },
	/* device memory, small and large */
	{ 16 * G1, 0xfe000000, 16 * K4, PT_R | PT_MT_UC },
	{ 16 * G1 + M2, 0xfe800000, M2, PT_RW | PT_MT_UC },
	/* small pages around one 2 MiB page */
	{ 20 * G1 + 4 * K4, 0x300004000, 2 * M2, PT_RW },
	/* the top of the physical address space */
	{ 24 * G1, PT_PA_LIMIT - M2, M2, PT_RW },
};

/* Host only: the upper half, global and user pages. */
static const struct range host_extra[] = {
	{ 0xffff800000000000 + G1 - K4, 0x200000000 - K4, G1 + 2 * K4,
	  PT_RW | PT_GLOBAL },
	{ 0xffffffffc0000000, 0x80000000, G1, PT_R | PT_X | PT_GLOBAL },
	{ 0x00007fffffe00000, 0x1000000, M2, PT_RWX | PT_USER },
};

static void map_ranges(struct env *env, const struct range *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		map_ok(env, r[i].va, r[i].pa, r[i].size, r[i].attr);
	for (size_t i = 0; i < n; i++)
		check_pages(env, r[i].va, r[i].size, r[i].pa, r[i].attr, BEST_LEVEL);
}

static void test_map_mixed(void **state)
{
	struct env *env = *state;
	uint64_t pa, size;
	unsigned attr;

	map_ranges(env, mixed, sizeof(mixed) / sizeof(mixed[0]));
	if (env->kind == HOST)
		map_ranges(env, host_extra, sizeof(host_extra) / sizeof(host_extra[0]));
	assert_false(pt_needs_flush(&env->pt));
	check_table_count(env, true);

	/* The shape the policy implies for range 1. */
	check_pages(env, G1 - 3 * K4, 3 * K4, 5 * G1 - 3 * K4, PT_RWX, 0);
	check_pages(env, G1, G1, 5 * G1, PT_RWX, 2);
	check_pages(env, 2 * G1, M2, 6 * G1, PT_RWX, 1);
	check_pages(env, 2 * G1 + M2, K4, 6 * G1 + M2, PT_RWX, 0);
	check_unmapped(env, 0, 0x1000);
	check_unmapped(env, 0x600000, G1 - 0x603000);
	check_unmapped(env, 2 * G1 + M2 + K4, 4 * G1 - M2 - K4);

	/* pt_lookup agrees, with the offset inside the page. */
	assert_int_equal(pt_lookup(&env->pt, G1 + 0x12345, &pa, &attr, &size), 0);
	assert_int_equal(pa, 5 * G1 + 0x12345);
	assert_int_equal(size, PT_SIZE_1G);
	assert_int_equal(attr, norm(env, PT_RWX));
	assert_int_equal(pt_lookup(&env->pt, 16 * G1 + 0x1fff, &pa, &attr, &size), 0);
	assert_int_equal(pa, 0xfe001fff);
	assert_int_equal(attr, norm(env, PT_R | PT_MT_UC));
	assert_int_equal(size, PT_SIZE_4K);
	assert_int_equal(pt_lookup(&env->pt, 0x800, NULL, NULL, NULL), -ENOENT);
	if (env->kind == HOST) {
		assert_int_equal(pt_lookup(&env->pt, 0xffffffffc0000123, &pa, &attr,
					   &size), 0);
		assert_int_equal(pa, 0x80000123);
		assert_int_equal(attr, PT_R | PT_X | PT_GLOBAL);
	}
}

static void test_max_page(void **state)
{
	struct env *env = *state;

	env_reinit(env, PT_SIZE_2M);
	map_ok(env, 2 * G1, 4 * G1, 2 * G1, PT_RWX);
	check_pages(env, 2 * G1, 2 * G1, 4 * G1, PT_RWX, 1);

	env_reinit(env, PT_SIZE_4K);
	map_ok(env, 2 * G1, 4 * G1, 2 * M2, PT_RWX);
	check_pages(env, 2 * G1, 2 * M2, 4 * G1, PT_RWX, 0);
	check_table_count(env, true);
	assert_int_equal(env->pt.tables, 1 + 1 + 1 + 2);
}

/* Exhaustively: each attribute combination maps iff the format can encode
 * it, and encodes the way the manuals say. */
static void test_attr_encoding(void **state)
{
	struct env *env = *state;

	for (unsigned a = 0; a < 64; a++) {
		uint64_t va = 0x10000000 + a * K4;
		int want = attr_valid(env, a) ? 0 : -EINVAL;

		assert_int_equal(pt_map(&env->pt, va, 0x5000000 + a * K4, K4, a, 0), want);
		if (want == 0)
			check_pages(env, va, K4, 0x5000000 + a * K4, a, 0);
		else
			check_unmapped(env, va, K4);
	}
	assert_int_equal(pt_map(&env->pt, 0, 0, K4, PT_RW | (1u << 6), 0), -EINVAL);
	check_table_count(env, true);
}

/* ---- Protect, split ---- */

static void test_protect_split_2m(void **state)
{
	struct env *env = *state;
	uint64_t va = 3 * G1 + 4 * M2, pa = 7 * G1, page = va + M2 + 5 * K4;
	unsigned long t0;

	map_ok(env, va, pa, 2 * M2, PT_RWX);
	t0 = env->pt.tables;
	/* Nothing to change in a large page: no split, no flush. */
	assert_int_equal(pt_protect(&env->pt, page, K4, PT_W, 0, 0), 0);
	assert_int_equal(env->pt.tables, t0);
	assert_false(pt_needs_flush(&env->pt));

	assert_int_equal(pt_protect(&env->pt, page, K4, 0, PT_W, 0), PT_FLUSH);
	assert_true(pt_needs_flush(&env->pt));
	assert_int_equal(env->pt.tables, t0 + 1);
	check_pages(env, va, M2, pa, PT_RWX, 1);
	check_pages(env, va + M2, 5 * K4, pa + M2, PT_RWX, 0);
	check_pages(env, page, K4, pa + M2 + 5 * K4, PT_R | PT_X, 0);
	check_pages(env, page + K4, M2 - 6 * K4, pa + M2 + 6 * K4, PT_RWX, 0);
	pt_flush_done(&env->pt);

	/* Widening needs no flush (a stale entry only faults spuriously). */
	assert_int_equal(pt_protect(&env->pt, va, 2 * M2, PT_W, 0, 0), 0);
	assert_false(pt_needs_flush(&env->pt));
	check_pages(env, va + M2, M2, pa + M2, PT_RWX, 0);
	check_table_count(env, true);
}

static void test_protect_split_1g(void **state)
{
	struct env *env = *state;
	uint64_t va = 2 * G1, pa = 9 * G1, page = va + 300 * M2 + 77 * K4;

	map_ok(env, va, pa, G1, PT_RWX);
	assert_int_equal(env->pt.tables, 2);	/* root, PDPT */
	/* A memory-type change needs a flush even though rights stay. */
	assert_int_equal(pt_protect(&env->pt, page, 2 * K4, PT_MT_UC, 0, 0), PT_FLUSH);
	assert_int_equal(env->pt.tables, 4);	/* + PD, + PT */
	check_pages(env, va, 300 * M2, pa, PT_RWX, 1);
	check_pages(env, va + 300 * M2, 77 * K4, pa + 300 * M2, PT_RWX, 0);
	check_pages(env, page, 2 * K4, pa + (page - va), PT_RWX | PT_MT_UC, 0);
	check_pages(env, page + 2 * K4, M2 - 79 * K4, pa + (page - va) + 2 * K4,
		    PT_RWX, 0);
	check_pages(env, va + 301 * M2, G1 - 301 * M2, pa + 301 * M2, PT_RWX, 1);
	check_table_count(env, true);
}

static void test_force_split_4k(void **state)
{
	struct env *env = *state;
	uint64_t va = G1, pa = 3 * G1;

	map_ok(env, va, pa, G1, PT_RWX);
	/* Dirty logging: write-protect and split everything to 4 KiB. */
	assert_int_equal(pt_protect(&env->pt, va, G1, 0, PT_W, PT_SPLIT_4K), PT_FLUSH);
	check_pages(env, va, G1, pa, PT_R | PT_X, 0);
	assert_int_equal(env->pt.tables, 1 + 1 + 1 + 512);
	pt_flush_done(&env->pt);
	/* Restoring write access: widening, no flush, stays split. */
	assert_int_equal(pt_protect(&env->pt, va, G1, PT_W, 0, 0), 0);
	check_pages(env, va, G1, pa, PT_RWX, 0);

	/* Splitting alone (no attribute change) still asks for a flush. */
	map_ok(env, 8 * G1, 0, M2, PT_RW);
	assert_int_equal(pt_protect(&env->pt, 8 * G1, M2, 0, 0, PT_SPLIT_4K), PT_FLUSH);
	check_pages(env, 8 * G1, M2, 0, PT_RW, 0);
	check_table_count(env, true);
}

/* ---- pt_merge ---- */

/* A split 2 MiB page merged back: the very entry it was, tables freed. */
static void test_merge_2m(void **state)
{
	struct env *env = *state;
	uint64_t va = 3 * G1 + 6 * M2, pa = 5 * G1 + 8 * M2, before;
	unsigned long t0;
	struct raw r;

	map_ok(env, va, pa, 2 * M2, PT_RWX);
	raw_walk(env, va + M2, &r);
	before = r.e[1];
	t0 = env->pt.tables;
	assert_int_equal(pt_protect(&env->pt, va, 2 * M2, 0, PT_W, PT_SPLIT_4K), PT_FLUSH);
	pt_flush_done(&env->pt);
	assert_int_equal(pt_protect(&env->pt, va, 2 * M2, PT_W, 0, 0), 0);
	raw_walk(env, va + M2 + 9 * K4, &r);
	*r.ptr[0] |= env->kind == EPT ? (3ull << 8) : (3ull << 5);	/* A/D by the CPU */
	assert_int_equal(env->pt.tables, t0 + 2);
	/* Only [va + M2, va + 2 MiB) is whole in the range: one merge. */
	assert_int_equal(pt_merge(&env->pt, va + K4, 2 * M2 - K4), PT_FLUSH);
	assert_true(pt_needs_flush(&env->pt));
	/* kept until the flush, listed in a page of its own */
	assert_int_equal(env->pt.tables, t0 + 3);
	assert_int_equal(env->pt.ndeferred, 2);
	pt_flush_done(&env->pt);
	assert_int_equal(env->pt.tables, t0 + 1);
	raw_walk(env, va + M2, &r);
	assert_int_equal(r.level, 1);
	assert_int_equal(r.e[1], before);		/* A/D clean, as mapped */
	check_pages(env, va, M2, pa, PT_RWX, 0);
	check_pages(env, va + M2, M2, pa + M2, PT_RWX, 1);
	/* Nothing left to merge: no flush. */
	assert_int_equal(pt_merge(&env->pt, va + M2, M2), 0);
	assert_int_equal(pt_merge(&env->pt, va, M2), PT_FLUSH);
	pt_flush_done(&env->pt);
	assert_int_equal(env->pt.tables, t0);
	check_pages(env, va, 2 * M2, pa, PT_RWX, 1);
	check_table_count(env, true);
}

/* Tables that are not one large page's worth stay as they are. */
static void test_merge_refused(void **state)
{
	struct env *env = *state;
	uint64_t va = 2 * G1, pa = 4 * G1;
	unsigned long t0;

	/* 0: one page read-only; 1: one page elsewhere; 2: one page missing;
	 * 3: frames contiguous but not 2 MiB aligned; 4: one page UC. */
	map_ok(env, va, pa, 3 * M2, PT_RWX);
	map_ok(env, va + 3 * M2, pa + 3 * M2 + K4, M2, PT_RWX);
	map_ok(env, va + 4 * M2, pa + 4 * M2, M2, PT_RWX);
	assert_int_equal(pt_protect(&env->pt, va, 3 * M2, 0, 0, PT_SPLIT_4K), PT_FLUSH);
	assert_int_equal(pt_protect(&env->pt, va + 4 * M2, M2, 0, 0, PT_SPLIT_4K), PT_FLUSH);
	pt_flush_done(&env->pt);
	assert_int_equal(pt_protect(&env->pt, va + 77 * K4, K4, 0, PT_W, 0), PT_FLUSH);
	assert_int_equal(pt_map(&env->pt, va + M2 + 5 * K4, 9 * G1, K4, PT_RWX,
				PT_MAP_REPLACE), PT_FLUSH);
	assert_int_equal(pt_unmap(&env->pt, va + 2 * M2 + 511 * K4, K4), PT_FLUSH);
	assert_int_equal(pt_protect(&env->pt, va + 4 * M2, K4, PT_MT_UC, 0, 0), PT_FLUSH);
	pt_flush_done(&env->pt);
	t0 = env->pt.tables;
	assert_int_equal(pt_merge(&env->pt, va, 5 * M2), 0);
	assert_false(pt_needs_flush(&env->pt));
	assert_int_equal(env->pt.tables, t0);
	check_pages(env, va, 77 * K4, pa, PT_RWX, 0);
	check_pages(env, va + M2 + 5 * K4, K4, 9 * G1, PT_RWX, 0);
	check_pages(env, va + 3 * M2, M2, pa + 3 * M2 + K4, PT_RWX, 0);
	check_pages(env, va + 4 * M2 + K4, M2 - K4, pa + 4 * M2 + K4, PT_RWX, 0);
	/* Put right, each merges. */
	assert_int_equal(pt_protect(&env->pt, va + 77 * K4, K4, PT_W, 0, 0), 0);
	assert_int_equal(pt_protect(&env->pt, va + 4 * M2, K4, 0, PT_MT_UC, 0), PT_FLUSH);
	assert_int_equal(pt_merge(&env->pt, va, 5 * M2), PT_FLUSH);
	pt_flush_done(&env->pt);
	assert_int_equal(env->pt.tables, t0 - 2);
	check_pages(env, va, M2, pa, PT_RWX, 1);
	check_pages(env, va + 4 * M2, M2, pa + 4 * M2, PT_RWX, 1);
	check_table_count(env, true);
}

/* Bottom-up to the largest page max_page allows, and no further. */
static void test_merge_levels(void **state)
{
	struct env *env = *state;
	uint64_t va = G1, pa = 3 * G1;

	map_ok(env, va, pa, G1, PT_RW);
	assert_int_equal(pt_protect(&env->pt, va, G1, 0, 0, PT_SPLIT_4K), PT_FLUSH);
	pt_flush_done(&env->pt);
	assert_int_equal(env->pt.tables, 3 + 512);
	assert_int_equal(pt_merge(&env->pt, va, G1), PT_FLUSH);
	pt_flush_done(&env->pt);
	assert_int_equal(env->pt.tables, 2);		/* root, PDPT */
	check_pages(env, va, G1, pa, PT_RW, 2);

	env_reinit(env, PT_SIZE_2M);
	map_ok(env, va, pa, 4 * M2, PT_RW);
	assert_int_equal(pt_protect(&env->pt, va, 4 * M2, 0, 0, PT_SPLIT_4K), PT_FLUSH);
	assert_int_equal(pt_merge(&env->pt, va, G1), PT_FLUSH);
	check_pages(env, va, 4 * M2, pa, PT_RW, 1);
	pt_flush_done(&env->pt);
	check_table_count(env, true);

	env_reinit(env, PT_SIZE_4K);
	map_ok(env, va, pa, M2, PT_RW);
	assert_int_equal(pt_merge(&env->pt, va, M2), 0);
	check_pages(env, va, M2, pa, PT_RW, 0);
	assert_int_equal(pt_merge(&env->pt, va, 0), -EINVAL);
	assert_int_equal(pt_merge(&env->pt, va + 1, M2), -EINVAL);
	check_table_count(env, true);
}

/* Large pages keep A/D (and the host PAT bit) in every piece of a split. */
static void test_split_keeps_bits(void **state)
{
	struct env *env = *state;
	uint64_t va = G1, pa = 5 * G1, page = va + 3 * M2 + 7 * K4;
	uint64_t extra = env->kind == EPT ? (3ull << 8) : (1ull << 12) | (3ull << 5);
	uint64_t pa2;
	struct raw r;

	map_ok(env, va, pa, G1, PT_RWX);
	raw_walk(env, va, &r);
	assert_int_equal(r.level, 2);
	*r.ptr[2] |= extra;	/* as the CPU (A/D) or firmware (PAT) would */
	/* The host PAT bit (12) of a large leaf is not part of its address. */
	assert_int_equal(pt_lookup(&env->pt, va + 0x5123, &pa2, NULL, NULL), 0);
	assert_int_equal(pa2, pa + 0x5123);

	assert_int_equal(pt_protect(&env->pt, page, K4, 0, PT_W, 0), PT_FLUSH);
	for (unsigned i = 0; i < 512; i++) {
		raw_walk(env, va + i * M2, &r);
		assert_int_equal(r.pa, pa + i * M2);
		assert_int_equal(r.level, i == 3 ? 0 : 1);
		if (i != 3)
			assert_int_equal(r.e[1] & extra, extra);
	}
	for (unsigned i = 0; i < 512; i++) {
		uint64_t want = env->kind == EPT ? extra : RAW_PS | (3ull << 5);

		raw_walk(env, va + 3 * M2 + i * K4, &r);
		assert_int_equal(r.level, 0);
		assert_int_equal(r.pa, pa + 3 * M2 + i * K4);	/* bit 12 is address */
		assert_int_equal(r.e[0] & want, want);		/* PAT moved to bit 7 */
		assert_int_equal(!!(r.e[0] & 2), i != 7);
	}
}

/* ---- Unmap ---- */

static void test_unmap_partial(void **state)
{
	struct env *env = *state;
	uint64_t va = 4 * G1, pa = 2 * G1;
	unsigned long frees;

	map_ok(env, va, pa, 2 * M2, PT_RW);
	assert_int_equal(env->pt.tables, 3);
	assert_int_equal(pt_unmap(&env->pt, 5 * G1, G1), 0);	/* a hole */

	assert_int_equal(pt_unmap(&env->pt, va + K4, K4), PT_FLUSH);
	assert_int_equal(env->pt.tables, 4);
	assert_int_equal(pt_lookup(&env->pt, va + K4, NULL, NULL, NULL), -ENOENT);
	check_pages(env, va, K4, pa, PT_RW, 0);
	check_pages(env, va + 2 * K4, M2 - 2 * K4, pa + 2 * K4, PT_RW, 0);
	check_pages(env, va + M2, M2, pa + M2, PT_RW, 1);
	pt_flush_done(&env->pt);

	/* Emptying the page table unlinks it; it is freed after the flush. */
	frees = env->pool.frees;
	assert_int_equal(pt_unmap(&env->pt, va, M2), PT_FLUSH);
	check_unmapped(env, va, M2);
	assert_int_equal(env->pool.frees, frees);
	assert_int_equal(env->pt.ndeferred, 1);
	assert_true(pt_needs_flush(&env->pt));
	check_table_count(env, true);
	pt_flush_done(&env->pt);
	assert_int_equal(env->pool.frees, frees + 1);
	assert_int_equal(env->pt.tables, 3);

	/* The last page: the PD and the PDPT go too, the root stays. */
	assert_int_equal(pt_unmap(&env->pt, va + M2, M2), PT_FLUSH);
	pt_flush_done(&env->pt);
	assert_int_equal(env->pt.tables, 1);
	assert_false(pt_needs_flush(&env->pt));

	/* A 2 MiB hole in a 1 GiB page splits it once. */
	map_ok(env, G1, 0, G1, PT_RWX);
	assert_int_equal(pt_unmap(&env->pt, G1 + 10 * M2, M2), PT_FLUSH);
	check_pages(env, G1, 10 * M2, 0, PT_RWX, 1);
	check_unmapped(env, G1 + 10 * M2, M2);
	check_pages(env, G1 + 11 * M2, G1 - 11 * M2, 11 * M2, PT_RWX, 1);
	check_table_count(env, true);
	/* Unmapping a whole subtree at once defers all of it. */
	assert_int_equal(pt_unmap(&env->pt, 0, 4 * G1), PT_FLUSH);
	assert_int_equal(env->pt.ndeferred, 2);	/* PDPT and PD */
	pt_flush_done(&env->pt);
	assert_int_equal(env->pt.tables, 1);
}

/* ---- Overlap and replacement ---- */

static void test_overlap(void **state)
{
	struct env *env = *state;
	unsigned long t0;

	map_ok(env, 2 * M2, 0x10000000, 2 * M2, PT_RWX);
	t0 = env->pt.tables;
	assert_int_equal(pt_map(&env->pt, 3 * M2, 0, 2 * M2, PT_RW, 0), -EEXIST);
	assert_int_equal(pt_map(&env->pt, 3 * M2 + K4, 0, K4, PT_RW, 0), -EEXIST);
	assert_int_equal(pt_map(&env->pt, M2, 0, M2 + K4, PT_RW, 0), -EEXIST);
	check_unmapped(env, 4 * M2, 2 * M2);
	check_unmapped(env, M2, M2);
	check_pages(env, 2 * M2, 2 * M2, 0x10000000, PT_RWX, 1);
	assert_int_equal(env->pt.tables, t0);
	assert_false(pt_needs_flush(&env->pt));

	map_ok(env, 4 * M2, 0, M2, PT_RW);	/* adjacent is fine */

	/* Replacing the same mapping changes nothing. */
	assert_int_equal(pt_map(&env->pt, 2 * M2, 0x10000000, M2, PT_RWX,
				PT_MAP_REPLACE), 0);
	/* Replacing part of a large page splits it. */
	assert_int_equal(pt_map(&env->pt, 3 * M2 + 8 * K4, 0x77000000, 2 * K4,
				PT_R, PT_MAP_REPLACE), PT_FLUSH);
	check_pages(env, 3 * M2, 8 * K4, 0x10000000 + M2, PT_RWX, 0);
	check_pages(env, 3 * M2 + 8 * K4, 2 * K4, 0x77000000, PT_R, 0);
	check_pages(env, 3 * M2 + 10 * K4, M2 - 10 * K4, 0x10000000 + M2 + 10 * K4,
		    PT_RWX, 0);
	/* Replacing across mapped and unmapped space. */
	assert_int_equal(pt_map(&env->pt, 4 * M2, 0x40000000, 2 * M2, PT_RW,
				PT_MAP_REPLACE), PT_FLUSH);
	check_pages(env, 4 * M2, 2 * M2, 0x40000000, PT_RW, 1);
	check_table_count(env, true);
}

/* ---- Address limits and bad arguments ---- */

static void test_bad_args(void **state)
{
	struct env *env = *state;
	struct page_table *pt = &env->pt;

	assert_int_equal(pt_map(pt, 0x1001, 0x2000, K4, PT_RW, 0), -EINVAL);
	assert_int_equal(pt_map(pt, 0x1000, 0x2001, K4, PT_RW, 0), -EINVAL);
	assert_int_equal(pt_map(pt, 0x1000, 0x2000, 0, PT_RW, 0), -EINVAL);
	assert_int_equal(pt_map(pt, 0x1000, 0x2000, 0x1800, PT_RW, 0), -EINVAL);
	assert_int_equal(pt_map(pt, 0x1000, PT_PA_LIMIT, K4, PT_RW, 0), -EINVAL);
	assert_int_equal(pt_map(pt, 0x1000, PT_PA_LIMIT - K4, 2 * K4, PT_RW, 0), -EINVAL);
	assert_int_equal(pt_map(pt, 0x1000, ~0ull - K4 + 1, K4, PT_RW, 0), -EINVAL);
	assert_int_equal(pt_map(pt, 0x1000, 0, K4, PT_RW, PT_SPLIT_4K), -EINVAL);
	assert_int_equal(pt_map(pt, 0x1000, 0, K4, PT_RW, 0x100), -EINVAL);
	assert_int_equal(pt_map(pt, 0xfffffffffffff000, 0, 2 * K4, PT_RW, 0), -EINVAL);
	assert_int_equal(pt_unmap(pt, 0x1000, 0), -EINVAL);
	assert_int_equal(pt_unmap(pt, 0x1800, K4), -EINVAL);
	assert_int_equal(pt_protect(pt, 0x1000, K4, 1u << 9, 0, 0), -EINVAL);
	assert_int_equal(pt_protect(pt, 0x1000, K4, 0, 1u << 9, 0), -EINVAL);
	assert_int_equal(pt_protect(pt, 0x1000, K4, 0, 0, PT_MAP_REPLACE), -EINVAL);
	check_table_count(env, true);
	assert_int_equal(env->pt.tables, 1);	/* nothing was built */

	map_ok(env, 0x1000, PT_PA_LIMIT - K4, K4, PT_R | PT_X);
	map_ok(env, 0x2000, 0, K4, PT_RW);
	check_pages(env, 0x1000, K4, PT_PA_LIMIT - K4, PT_R | PT_X, 0);
	/*
	 * Clearing R: never encodable on host/NPT; on EPT fine for the first
	 * page (execute-only) but not the second (write-only).  Either way
	 * -EINVAL, and the first page must not have been changed on the way.
	 */
	assert_int_equal(pt_protect(pt, 0x1000, 2 * K4, 0, PT_R, 0), -EINVAL);
	check_pages(env, 0x1000, K4, PT_PA_LIMIT - K4, PT_R | PT_X, 0);
	check_pages(env, 0x2000, K4, 0, PT_RW, 0);
	assert_false(pt_needs_flush(pt));
}

struct collect {
	int n, stop_at;
	struct pt_leaf leaf[16];
};

static int collect_cb(void *ctx, const struct pt_leaf *leaf)
{
	struct collect *c = ctx;

	assert_true(c->n < 16);
	c->leaf[c->n++] = *leaf;
	return c->n == c->stop_at ? 42 : 0;
}

static void test_limits_host(void **state)
{
	struct env *env = *state;
	struct page_table *pt = &env->pt;
	struct collect c = { 0 };
	uint64_t pa;

	assert_int_equal(pt_map(pt, 0x0000800000000000, 0, K4, PT_RW, 0), -EINVAL);
	assert_int_equal(pt_map(pt, 0xffff7ffffffff000, 0, K4, PT_RW, 0), -EINVAL);
	assert_int_equal(pt_map(pt, 0x00007ffffffff000, 0, 2 * K4, PT_RW, 0), -EINVAL);
	/* Both ends canonical but the hole in between (calls without a pa,
	 * so that only the address check can refuse). */
	assert_int_equal(pt_unmap(pt, 0x00007ffffffff000,
				  0xffff800000000000 - 0x00007ffffffff000 + K4), -EINVAL);
	assert_int_equal(pt_protect(pt, 0x00007ffffffff000,
				    0xffff800000000000 - 0x00007ffffffff000 + K4, 0, 0, 0),
			 -EINVAL);
	assert_int_equal(pt_lookup(pt, 0x0000800000000000, NULL, NULL, NULL), -EINVAL);

	map_ok(env, 0x00007ffffffff000, 0x1000, K4, PT_RW);
	map_ok(env, 0xffff800000000000, 0x2000, K4, PT_RW);
	map_ok(env, 0xfffffffffffff000, 0x3000, K4, PT_RW);
	check_pages(env, 0x00007ffffffff000, K4, 0x1000, PT_RW, 0);
	check_pages(env, 0xffff800000000000, K4, 0x2000, PT_RW, 0);
	check_pages(env, 0xfffffffffffff000, K4, 0x3000, PT_RW, 0);
	/* The two halves use PML4 entries 255 and 256. */
	assert_true(pool_page(&env->pool, pt->root_pa)[255] & 1);
	assert_true(pool_page(&env->pool, pt->root_pa)[256] & 1);
	assert_int_equal(pool_page(&env->pool, pt->root_pa)[0] & 1, 0);
	assert_int_equal(pt_lookup(pt, 0xffffffffffffffff, &pa, NULL, NULL), 0);
	assert_int_equal(pa, 0x3fff);

	/* pt_for_each reports sign-extended addresses. */
	assert_int_equal(pt_for_each(pt, 0xffff800000000000, 0x0000800000000000,
				     collect_cb, &c), 0);
	assert_int_equal(c.n, 2);
	assert_int_equal(c.leaf[0].va, 0xffff800000000000);
	assert_int_equal(c.leaf[1].va, 0xfffffffffffff000);
	assert_int_equal(c.leaf[1].pa, 0x3000);
	assert_int_equal(pt_unmap(pt, 0xffff800000000000, 0x0000800000000000), PT_FLUSH);
	check_pages(env, 0x00007ffffffff000, K4, 0x1000, PT_RW, 0);
	pt_flush_done(pt);
	check_table_count(env, true);
}

static void test_limits_guest(void **state)
{
	struct env *env = *state;
	struct page_table *pt = &env->pt;
	uint64_t pa;

	assert_int_equal(pt_map(pt, VA_TOP, 0, K4, PT_RW, 0), -EINVAL);
	assert_int_equal(pt_map(pt, VA_TOP - K4, 0, 2 * K4, PT_RW, 0), -EINVAL);
	assert_int_equal(pt_map(pt, 0xffff800000000000, 0, K4, PT_RW, 0), -EINVAL);
	assert_int_equal(pt_lookup(pt, VA_TOP, NULL, NULL, NULL), -EINVAL);
	assert_int_equal(pt_unmap(pt, VA_TOP - K4, 2 * K4), -EINVAL);
	assert_int_equal(pt_protect(pt, VA_TOP, K4, 0, 0, 0), -EINVAL);
	assert_int_equal(pt_for_each(pt, 0, VA_TOP + K4, collect_cb, NULL), -EINVAL);

	map_ok(env, VA_TOP - G1, 0, G1, PT_RW);
	check_pages(env, VA_TOP - G1, G1, 0, PT_RW, 2);
	assert_int_equal(pt_lookup(pt, VA_TOP - 1, &pa, NULL, NULL), 0);
	assert_int_equal(pa, G1 - 1);
	assert_int_equal(pt_unmap(pt, 0, VA_TOP), PT_FLUSH);
	pt_flush_done(pt);
	assert_int_equal(pt->tables, 1);
}

static void test_init_args(void **state)
{
	struct env *env = *state;
	struct pt_ops ops = { pool_alloc, pool_free, pool_virt, &env->pool };
	struct pt_ops no_alloc = { NULL, pool_free, pool_virt, &env->pool };
	struct page_table pt2;

	assert_int_equal(pt_init(&pt2, env->fmt, NULL, PT_SIZE_1G), -EINVAL);
	assert_int_equal(pt_init(&pt2, NULL, &ops, PT_SIZE_1G), -EINVAL);
	assert_int_equal(pt_init(&pt2, env->fmt, &no_alloc, PT_SIZE_1G), -EINVAL);
	assert_int_equal(pt_init(&pt2, env->fmt, &ops, 1ull << 22), -EINVAL);
	assert_int_equal(pt_init(&pt2, env->fmt, &ops, 0), -EINVAL);
	env->pool.fail_in = 0;
	assert_int_equal(pt_init(&pt2, env->fmt, &ops, PT_SIZE_2M), -ENOMEM);
	pt_destroy(&pt2);	/* harmless after a failed init */
	assert_int_equal(env->pool.live, 1);
}

/* ---- Walker ---- */

static void test_for_each(void **state)
{
	struct env *env = *state;
	struct collect c = { 0 };

	map_ok(env, G1 - K4, 0x9000, K4, PT_RW);
	map_ok(env, G1, 3 * G1, G1, PT_RWX);
	map_ok(env, 2 * G1, 0x600000, M2 + K4, PT_R);
	assert_int_equal(pt_for_each(&env->pt, 0, 4 * G1, collect_cb, &c), 0);
	assert_int_equal(c.n, 4);
	assert_int_equal(c.leaf[0].va, G1 - K4);
	assert_int_equal(c.leaf[0].pa, 0x9000);
	assert_int_equal(c.leaf[0].size, K4);
	assert_int_equal(c.leaf[1].va, G1);
	assert_int_equal(c.leaf[1].size, G1);
	assert_int_equal(c.leaf[1].level, 2);
	assert_int_equal(c.leaf[1].attr, norm(env, PT_RWX));
	assert_int_equal(c.leaf[2].va, 2 * G1);
	assert_int_equal(c.leaf[2].pa, 0x600000);
	assert_int_equal(c.leaf[2].size, M2);
	assert_int_equal(c.leaf[3].va, 2 * G1 + M2);
	assert_int_equal(c.leaf[3].attr, norm(env, PT_R));

	/* A leaf straddling the range is reported whole. */
	memset(&c, 0, sizeof(c));
	assert_int_equal(pt_for_each(&env->pt, G1 + 5 * M2, K4, collect_cb, &c), 0);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.leaf[0].va, G1);
	/* A non-zero return stops the walk. */
	memset(&c, 0, sizeof(c));
	c.stop_at = 2;
	assert_int_equal(pt_for_each(&env->pt, 0, 4 * G1, collect_cb, &c), 42);
	assert_int_equal(c.n, 2);
	assert_int_equal(pt_for_each(&env->pt, 0x800, K4, collect_cb, &c), -EINVAL);
}

/* ---- Hardware may walk at any time: consistency at every allocation ---- */

struct watch {
	struct env *env;
	uint64_t va[8], pa[8];
	int n, calls;
};

static void watch_hook(void *arg)
{
	struct watch *w = arg;

	w->calls++;
	for (int i = 0; i < w->n; i++) {
		struct raw r;

		raw_walk(w->env, w->va[i], &r);
		assert_true(r.level >= 0);
		assert_int_equal(r.pa, w->pa[i]);
		check_leaf_entry(w->env, r.e[r.level], r.level, norm(w->env, PT_RWX));
	}
}

static void watch_around(struct watch *w, struct env *env, uint64_t va,
			 uint64_t pa, uint64_t page)
{
	const uint64_t at[] = { va, va + G1 - K4, page - K4, page, page + K4,
				page + M2, page - M2 };

	memset(w, 0, sizeof(*w));
	w->env = env;
	for (int i = 0; i < 7; i++) {
		w->va[i] = at[i];
		w->pa[i] = pa + (at[i] - va);
	}
	w->n = 7;
	env->pool.hook = watch_hook;
	env->pool.hook_arg = w;
}

static void test_consistent_during_split(void **state)
{
	struct env *env = *state;
	uint64_t page = G1 + 100 * M2 + 5 * K4;
	struct watch w;

	map_ok(env, G1, 3 * G1, G1, PT_RWX);
	watch_around(&w, env, G1, 3 * G1, page);
	assert_int_equal(pt_protect(&env->pt, page, K4, 0, PT_W, 0), PT_FLUSH);
	assert_int_equal(w.calls, 2);		/* PD and PT, each checked */

	map_ok(env, 4 * G1, 6 * G1, G1, PT_RWX);
	watch_around(&w, env, 4 * G1, 6 * G1, 4 * G1 + 200 * M2 + 9 * K4);
	assert_int_equal(pt_unmap(&env->pt, 4 * G1 + 200 * M2 + 11 * K4, K4), PT_FLUSH);
	assert_int_equal(w.calls, 2);
	env->pool.hook = NULL;
	watch_hook(&w);
	check_table_count(env, true);
}

/* ---- Allocation failures ---- */

static void test_alloc_failure(void **state)
{
	struct env *env = *state;
	uint64_t va = 5 * G1 - M2;

	/* PDPT, PD, a 2 MiB leaf, PD, then the PT fails: all undone. */
	env->pool.fail_in = 3;
	assert_int_equal(pt_map(&env->pt, va, 0, M2 + K4, PT_RW, 0), -ENOMEM);
	check_unmapped(env, va, M2 + K4);
	assert_true(pt_needs_flush(&env->pt));	/* the leaf existed briefly */
	pt_flush_done(&env->pt);
	assert_int_equal(env->pt.tables, 1);
	assert_int_equal(env->pool.live, 1);

	/* A split that cannot get a table leaves the large page alone. */
	map_ok(env, 8 * G1, 0, M2, PT_RW);
	env->pool.fail_in = 0;
	assert_int_equal(pt_unmap(&env->pt, 8 * G1 + K4, K4), -ENOMEM);
	env->pool.fail_in = 0;
	assert_int_equal(pt_protect(&env->pt, 8 * G1, K4, 0, PT_W, 0), -ENOMEM);
	env->pool.fail_in = 0;
	assert_int_equal(pt_map(&env->pt, 8 * G1, 0, K4, PT_R, PT_MAP_REPLACE), -ENOMEM);
	check_pages(env, 8 * G1, M2, 0, PT_RW, 1);
	assert_false(pt_needs_flush(&env->pt));
	check_table_count(env, true);

	/* A replacing map that fails leaves its new tables empty but linked;
	 * a later map that fits a large page there drops them and uses it. */
	env->pool.fail_in = 1;
	assert_int_equal(pt_map(&env->pt, 12 * G1, 0, K4, PT_R, PT_MAP_REPLACE),
			 -ENOMEM);
	check_table_count(env, false);
	assert_int_equal(env->pt.tables, 4);	/* root, PDPT, PD of 8G, empty PD */
	assert_int_equal(pt_map(&env->pt, 12 * G1, 0, G1, PT_RW, 0), PT_FLUSH);
	check_pages(env, 12 * G1, G1, 0, PT_RW, 2);
	pt_flush_done(&env->pt);
	check_table_count(env, true);
}

/* ---- EPT and NPT specifics ---- */

static void test_eptp(void **state)
{
	struct env *env = *state;
	uint64_t root = env->pt.root_pa;

	assert_int_equal(root & 0xfff, 0);
	/* WB (6), walk length 4 - 1 = 3 in bits 5:3, A/D enable bit 6 */
	assert_int_equal(ept_eptp(&env->pt, true), root | 6 | 3 << 3 | 1 << 6);
	assert_int_equal(ept_eptp(&env->pt, false), root | 0x1e);
}

static void test_ncr3(void **state)
{
	struct env *env = *state;

	assert_int_equal(npt_ncr3(&env->pt), env->pt.root_pa);
}

/* A dirty 2 MiB EPT page split for dirty logging: every 4 KiB piece keeps
 * its D flag (SDM Vol 3C 29.3.5), so none of the guest's writes is lost. */
static void test_ept_split_keeps_dirty(void **state)
{
	struct env *env = *state;
	uint64_t big = 4 * M2;
	struct raw r;

	map_ok(env, big, 0x1000000, M2, PT_RW);
	raw_walk(env, big, &r);
	*r.ptr[1] |= EPT_D;
	assert_int_equal(pt_protect(&env->pt, big, M2, 0, PT_W, PT_SPLIT_4K), PT_FLUSH);
	for (unsigned i = 0; i < 512; i++) {
		raw_walk(env, big + i * K4, &r);
		assert_int_equal(*r.ptr[0] & EPT_D, EPT_D);
	}
	check_pages(env, big, M2, 0x1000000, PT_R, 0);
}

/* ---- Random operations against a model ---- */

#define RND_PAGES	4096			/* 16 MiB ... */
#define RND_BASE	(G1 - 8 * 0x100000ull)	/* ... straddling 1 GiB */

struct mpage {
	bool mapped;
	uint64_t pa;
	unsigned attr;		/* normalised */
};

static uint64_t rnd_state;

#define rnd_below(n)	(rnd() % (n))

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static unsigned rnd_attr(const struct env *env)
{
	unsigned extra = env->kind == HOST ? PT_USER | PT_GLOBAL : 0;

	for (;;) {
		unsigned a = rnd() & (PT_RWX | PT_MT_UC | extra);

		if (attr_valid(env, a))
			return a;
	}
}

static void rnd_range(uint64_t *first, uint64_t *n)
{
	if (rnd() & 1) {
		*first = rnd_below(RND_PAGES / 512) * 512;
		*n = (1 + rnd_below(3)) * 512;
	} else {
		*first = rnd_below(RND_PAGES);
		*n = 1 + rnd_below((rnd() & 1) ? 16 : 1200);
	}
	if (*first + *n > RND_PAGES)
		*n = RND_PAGES - *first;
}

static bool reduces(unsigned from, unsigned to)
{
	return (from & ~to & PT_RWX) || ((from ^ to) & (PT_USER | PT_GLOBAL | PT_MT_UC));
}

static void rnd_map(struct env *env, struct mpage *m)
{
	uint64_t first, n, va, pa;
	unsigned attr = rnd_attr(env), flags = rnd_below(3) ? 0 : PT_MAP_REPLACE;
	bool any = false, changed = false;
	int ret;

	rnd_range(&first, &n);
	va = RND_BASE + first * K4;
	pa = (rnd() & 1) ? rnd_below(1 << 20) << 12 :
			   (rnd_below(1 << 10) << 21) + (va & (M2 - 1));
	for (uint64_t i = first; i < first + n; i++) {
		const struct mpage *p = &m[i];

		any |= p->mapped;
		changed |= p->mapped && (p->pa != pa + (i - first) * K4 ||
					 p->attr != norm(env, attr));
	}
	ret = pt_map(&env->pt, va, pa, n * K4, attr, flags);
	if (any && !flags) {
		assert_int_equal(ret, -EEXIST);
		return;
	}
	assert_true(ret == 0 || ret == PT_FLUSH);
	if (changed)
		assert_int_equal(ret, PT_FLUSH);
	for (uint64_t i = first; i < first + n; i++)
		m[i] = (struct mpage){ true, pa + (i - first) * K4, norm(env, attr) };
}

static void rnd_unmap(struct env *env, struct mpage *m)
{
	uint64_t first, n;
	bool any = false;

	rnd_range(&first, &n);
	for (uint64_t i = first; i < first + n; i++) {
		any |= m[i].mapped;
		m[i].mapped = false;
	}
	assert_int_equal(pt_unmap(&env->pt, RND_BASE + first * K4, n * K4),
			 any ? PT_FLUSH : 0);
}

static void rnd_protect(struct env *env, struct mpage *m)
{
	unsigned mask = PT_RWX | PT_MT_UC | (rnd_below(8) ? 0 : PT_USER | PT_GLOBAL);
	unsigned set = rnd() & mask, clear = rnd() & mask;
	unsigned flags = rnd_below(4) ? 0 : PT_SPLIT_4K;
	uint64_t first, n;
	bool valid = true, reduced = false;
	int ret;

	rnd_range(&first, &n);
	for (uint64_t i = first; i < first + n; i++) {
		unsigned to = (m[i].attr & ~clear) | set;

		if (m[i].mapped) {
			valid &= attr_valid(env, to);
			reduced |= reduces(m[i].attr, norm(env, to));
		}
	}
	ret = pt_protect(&env->pt, RND_BASE + first * K4, n * K4, set, clear, flags);
	if (!valid) {
		assert_int_equal(ret, -EINVAL);
		return;
	}
	assert_true(ret == 0 || ret == PT_FLUSH);
	if (reduced)
		assert_int_equal(ret, PT_FLUSH);
	for (uint64_t i = first; i < first + n; i++) {
		struct raw r;

		m[i].attr = norm(env, (m[i].attr & ~clear) | set);
		raw_walk(env, RND_BASE + i * K4, &r);
		if (flags && m[i].mapped)
			assert_int_equal(r.level, 0);
	}
}

static int sum_cb(void *ctx, const struct pt_leaf *leaf)
{
	*(uint64_t *)ctx += leaf->size;
	return 0;
}

static void check_model(struct env *env, const struct mpage *m)
{
	uint64_t mapped = 0, total = 0;

	for (unsigned i = 0; i < RND_PAGES; i++) {
		struct raw r;

		raw_walk(env, RND_BASE + i * K4, &r);
		if (!m[i].mapped) {
			assert_int_equal(r.level, -1);
			continue;
		}
		mapped += K4;
		assert_true(r.level >= 0);
		assert_int_equal(r.pa, m[i].pa);
		for (int l = PT_LEVELS - 1; l > r.level; l--)
			check_table_entry(env, r.e[l]);
		check_leaf_entry(env, r.e[r.level], r.level, m[i].attr);
	}
	assert_int_equal(pt_for_each(&env->pt, 0, VA_TOP >> 1, sum_cb, &total), 0);
	assert_int_equal(total, mapped);
	check_table_count(env, true);
}

static void test_random_model(void **state)
{
	struct env *env = *state;
	struct mpage *m = calloc(RND_PAGES, sizeof(*m));

	assert_non_null(m);
	rnd_state = 0x9e3779b97f4a7c15ull ^ env->kind;
	for (int op = 0; op < 400; op++) {
		switch (rnd_below(10)) {
		case 0: case 1: case 2: case 3:
			rnd_map(env, m);
			break;
		case 4: case 5: case 6:
			rnd_unmap(env, m);
			break;
		default:
			rnd_protect(env, m);
			break;
		}
		check_model(env, m);
		if (rnd_below(3) == 0)
			pt_flush_done(&env->pt);
	}
	free(m);
}

/* ---- Hostile arguments: random values never crash or corrupt ---- */

static uint64_t fuzz_addr(void)
{
	const uint64_t v[] = {
		rnd(), rnd() & ~(K4 - 1), rnd() & (VA_TOP * 2 - 1) & ~(K4 - 1),
		rnd_below(64) * M2 + rnd_below(4) * K4,
	};

	return v[rnd_below(4)];
}

static uint64_t fuzz_size(void)
{
	const uint64_t v[] = {
		rnd(), rnd() & ~(K4 - 1), rnd_below(1024) * K4,
		(1 + rnd_below(4)) * G1, 0,
	};

	return v[rnd_below(5)];
}

static void fuzz_one(struct env *env)
{
	uint64_t va = fuzz_addr(), size = fuzz_size(), pa = fuzz_addr(), total = 0;
	unsigned attr = rnd() & (rnd_below(4) ? 0x3f : 0xffff), flags = rnd() & 7;
	int ret;

	switch (rnd_below(5)) {
	case 0:
		ret = pt_map(&env->pt, va, pa, size, attr,
			     rnd_below(2) ? flags : flags & PT_MAP_REPLACE);
		assert_true(ret == 0 || ret == PT_FLUSH || ret == -EINVAL ||
			    ret == -EEXIST || ret == -ENOMEM);
		break;
	case 1:
		ret = pt_unmap(&env->pt, va, size);
		assert_true(ret == 0 || ret == PT_FLUSH || ret == -EINVAL || ret == -ENOMEM);
		break;
	case 2:
		ret = pt_protect(&env->pt, va, size, attr, rnd() & 0x3f, flags);
		assert_true(ret == 0 || ret == PT_FLUSH || ret == -EINVAL || ret == -ENOMEM);
		break;
	case 3:
		ret = pt_lookup(&env->pt, va, &pa, &attr, &size);
		assert_true(ret == 0 || ret == -ENOENT || ret == -EINVAL);
		break;
	default:
		ret = pt_for_each(&env->pt, va, size, sum_cb, &total);
		assert_true(ret == 0 || ret == -EINVAL);
		break;
	}
}

static void test_fuzz_args(void **state)
{
	struct env *env = *state;

	rnd_state = 0x2545f4914f6cdd1dull + env->kind;
	env->pool.limit = 64;	/* keep runaway mappings cheap */
	for (int i = 0; i < 4000; i++) {
		fuzz_one(env);
		if (rnd_below(4) == 0)
			pt_flush_done(&env->pt);
	}
	pt_flush_done(&env->pt);
	check_table_count(env, false);
}

/* Until pt_flush_done, a CPU may still walk a table that pt_merge unlinked
 * (its paging-structure caches hold the old PDE), so every entry of that
 * table must keep mapping what it mapped: entry 0 used as a list link
 * would read as "not present", a fault on RAM in the first 4 KiB. */
static void test_merge_keeps_unlinked_table(void **state)
{
	struct env *env = *state;
	uint64_t va = 4 * M2, pa = 0x1000000;
	uint64_t *old_pt;
	struct raw r;

	map_ok(env, va, pa, M2, PT_RWX);
	assert_int_equal(pt_protect(&env->pt, va, M2, 0, 0, PT_SPLIT_4K), PT_FLUSH);
	pt_flush_done(&env->pt);
	raw_walk(env, va, &r);
	assert_int_equal(r.level, 0);
	old_pt = r.ptr[0] - ((va >> 12) & 511);	/* the PT about to be unlinked */
	assert_int_equal(pt_merge(&env->pt, va, M2), PT_FLUSH);
	/* not flushed yet: a stale walk through the old PDE reads old_pt[0] */
	for (unsigned i = 0; i < 512; i++)
		if (!raw_present(env, old_pt[i]) || (old_pt[i] & RAW_ADDR) != pa + i * K4)
			fail_msg("unlinked table entry %u is %#llx before the flush", i,
				 (unsigned long long)old_pt[i]);
	pt_flush_done(&env->pt);
}

/* ---- Registration ---- */

#define T(t, c) \
	cmocka_unit_test_prestate_setup_teardown(t, setup, teardown, (void *)&c)
#define FOR_ALL(t) T(t, host_case), T(t, npt_case), T(t, ept_case)

int main(void)
{
	const struct CMUnitTest tests[] = {
		FOR_ALL(test_map_mixed),
		FOR_ALL(test_max_page),
		FOR_ALL(test_attr_encoding),
		FOR_ALL(test_protect_split_2m),
		FOR_ALL(test_protect_split_1g),
		FOR_ALL(test_force_split_4k),
		FOR_ALL(test_split_keeps_bits),
		FOR_ALL(test_merge_2m),
		T(test_merge_keeps_unlinked_table, npt_case),
		T(test_merge_keeps_unlinked_table, ept_case),
		FOR_ALL(test_merge_refused),
		FOR_ALL(test_merge_levels),
		FOR_ALL(test_unmap_partial),
		FOR_ALL(test_overlap),
		FOR_ALL(test_bad_args),
		T(test_limits_host, host_case),
		T(test_limits_guest, npt_case),
		T(test_limits_guest, ept_case),
		FOR_ALL(test_init_args),
		FOR_ALL(test_for_each),
		FOR_ALL(test_consistent_during_split),
		FOR_ALL(test_alloc_failure),
		T(test_eptp, ept_case),
		T(test_ncr3, npt_case),
		T(test_ept_split_keeps_dirty, ept_case),
		FOR_ALL(test_random_model),
		FOR_ALL(test_fuzz_args),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
