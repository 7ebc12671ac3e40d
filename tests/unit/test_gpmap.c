/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of a guest's RAM map (hv/mm/gpmap.c) and the EPT/NPT it builds
 * through the real page-table engine.  Host frames come from a fake
 * allocator over a malloc'd arena at made-up physical addresses: 2 MiB runs
 * from one area (handed out top down, and only on the calls a pattern
 * allows), single frames scattered over another (never two neighbours), a
 * frame budget to run out part-way, and a record of every allocation so
 * that frees must match one exactly.  The tables are read back by the
 * tests' own walker, written from the manuals (APM Vol 2 15.25 and 5.3 for
 * NPT, SDM Vol 3C 29.3.2 for EPT), not through the formats' callbacks.
 * Last, the CMOS memory sizes computed from the map's RAM split are decoded
 * the way SeaBIOS reads them.
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
#include "hv/mm/gpmap.h"
#include "hv/vdev/rtc.h"
#include "tests/unit/pt_pool.h"

#define K4		0x1000ull
#define M2		0x200000ull
#define MiB(x)		((uint64_t)(x) << 20)
#define GiB(x)		((uint64_t)(x) << 30)
#define RUN		GPMAP_RUN_FRAMES

/* ---- Fake host frames ---- */

#define RAM_PA		0x3400000000ull	/* fake PA of arena frame 0, 2 MiB aligned */
#define RUN_BLOCKS	34		/* runs area: blocks [0, 34) */
#define SINGLE_FIRST	(RUN_BLOCKS * RUN)
#define SINGLE_FRAMES	(33 * RUN)	/* > 64 MiB + 4 KiB of single frames */
#define SINGLE_STRIDE	4099		/* prime: visits every single frame */
#define ARENA_FRAMES	(SINGLE_FIRST + SINGLE_FRAMES)
#define ALL_RUNS	0xffffffffu
#define NO_RUNS		0u
#define SOME_RUNS	0x9b5u		/* ...1001 1011 0101: mixed, both edges */

static struct fake {
	uint8_t *arena;			/* the frames' bytes */
	uint16_t unit[ARENA_FRAMES];	/* first frame of an allocation: its length */
	bool taken[ARENA_FRAMES];
	uint32_t pattern;		/* alloc_contig call c succeeds iff bit c % 32 */
	long budget;			/* frames still to hand out; < 0: no limit */
	unsigned contig_calls, next_run, next_single;
	size_t live;			/* frames out */
	unsigned allocs, frees;		/* allocation units */
} fk;

static size_t frame_index(uint64_t pa)
{
	assert_true(pa >= RAM_PA && pa < RAM_PA + ARENA_FRAMES * K4);
	assert_int_equal(pa % K4, 0);
	return (pa - RAM_PA) / K4;
}

static bool take(size_t idx, size_t n)
{
	if (fk.budget >= 0 && (size_t)fk.budget < n)
		return false;
	if (fk.budget >= 0)
		fk.budget -= n;
	for (size_t i = idx; i < idx + n; i++) {
		assert_false(fk.taken[i]);
		fk.taken[i] = true;
		/* a signature instead of zeroes: hva checks read it back */
		memcpy(fk.arena + i * K4, &(uint64_t){ RAM_PA + i * K4 }, 8);
	}
	fk.unit[idx] = n;
	fk.live += n;
	fk.allocs++;
	return true;
}

static uint64_t fake_alloc_contig(size_t n, size_t align_frames)
{
	unsigned call = fk.contig_calls++;
	size_t idx;

	assert_int_equal(n, RUN);
	assert_int_equal(align_frames, RUN);
	if (!(fk.pattern >> (call % 32) & 1) || fk.next_run == RUN_BLOCKS)
		return 0;
	idx = (RUN_BLOCKS - 1 - fk.next_run) * RUN;	/* top down: guest order != host */
	if (!take(idx, RUN))
		return 0;
	fk.next_run++;
	return RAM_PA + idx * K4;
}

static uint64_t fake_alloc_frame(void)
{
	size_t idx = SINGLE_FIRST + (size_t)fk.next_single * SINGLE_STRIDE % SINGLE_FRAMES;

	if (fk.next_single == SINGLE_FRAMES || !take(idx, 1))
		return 0;
	fk.next_single++;
	return RAM_PA + idx * K4;
}

static void fake_free(uint64_t pa, size_t n)
{
	size_t idx = frame_index(pa);

	assert_int_equal(fk.unit[idx], n);	/* exactly one allocation, whole */
	for (size_t i = idx; i < idx + n; i++) {
		assert_true(fk.taken[i]);
		fk.taken[i] = false;
	}
	fk.unit[idx] = 0;
	fk.live -= n;
	fk.frees++;
}

static void *fake_virt(uint64_t pa)
{
	size_t idx = frame_index(pa);

	assert_true(fk.taken[idx]);	/* never a frame the guest does not own */
	return fk.arena + idx * K4;
}

static const struct gpmap_mem fake_mem = {
	fake_alloc_contig, fake_alloc_frame, fake_free, fake_virt,
};

static void fake_reset(uint32_t pattern, long budget)
{
	uint8_t *arena = fk.arena;

	memset(&fk, 0, sizeof(fk));
	fk.arena = arena;
	fk.pattern = pattern;
	fk.budget = budget;
}

/* ---- Per-test environment: one format ---- */

enum kind { NPT, EPT };
static enum kind group_kind;	/* the format of the group being run */

struct env {
	enum kind kind;
	struct pt_pool pool;
	struct page_table pt;
	bool pt_live;
	struct gpmap m;
};

static void env_pt(struct env *env, uint64_t max_page)
{
	struct pt_ops ops = pt_pool_ops(&env->pool);

	assert_int_equal(pt_init(&env->pt, env->kind == EPT ? &ept_format : &npt_format, &ops,
				 max_page), 0);
	env->pt_live = true;
}

static void env_pt_destroy(struct env *env)
{
	if (env->pt_live)
		pt_destroy(&env->pt);
	env->pt_live = false;
	assert_int_equal(env->pool.live, 0);
}

static int setup(void **state)
{
	struct env *env = calloc(1, sizeof(*env));

	if (!env)
		return -1;
	env->kind = group_kind;
	*state = env;
	return 0;
}

static int teardown(void **state)
{
	struct env *env = *state;

	if (env->pt_live)
		pt_destroy(&env->pt);
	gpmap_free(&env->m);
	free(env);
	return 0;
}

static int group_setup(void **state)
{
	(void)state;
	fk.arena = calloc(ARENA_FRAMES, K4);
	return fk.arena ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	free(fk.arena);
	return 0;
}

/* ---- The tests' own walker ---- */

#define RAW_ADDR	0x000ffffffffff000ull
#define RAW_PS		(1ull << 7)

struct leaf {
	uint64_t gpa, pa, size, e;
};

struct walk {
	struct leaf *leaf;
	size_t n, cap;
};

/* Table entries must grant everything, since the rights of a walk are
 * those common to all its entries. */
static void check_table_entry(const struct env *env, uint64_t e)
{
	if (env->kind == EPT) {
		assert_int_equal(e & 7, 7);
		assert_int_equal(e & 0xf8, 0);		/* 7:3 reserved in tables */
	} else {
		assert_int_equal(e & 7, 7);		/* P, R/W, U/S */
		assert_int_equal(e >> 63, 0);		/* NX */
	}
}

static void walk_table(struct env *env, uint64_t table, int level, uint64_t base,
		       struct walk *w)
{
	const uint64_t *t = pt_pool_virt(&env->pool, table);

	for (unsigned i = 0; i < 512; i++) {
		uint64_t e = t[i], gpa = base + ((uint64_t)i << (12 + 9 * level));
		bool present = env->kind == EPT ? e & 7 : e & 1;

		if (!present)
			continue;
		if (level > 0 && !(e & RAW_PS)) {
			check_table_entry(env, e);
			walk_table(env, e & RAW_ADDR, level - 1, gpa, w);
			continue;
		}
		if (w->n == w->cap) {
			w->cap = w->cap ? 2 * w->cap : 256;
			w->leaf = realloc(w->leaf, w->cap * sizeof(*w->leaf));
			assert_non_null(w->leaf);
		}
		w->leaf[w->n++] = (struct leaf){
			gpa, e & RAW_ADDR & ~((1ull << (12 + 9 * level)) - 1),
			1ull << (12 + 9 * level), e };
	}
}

/* Guest RAM: readable, writable, executable, write-back, guest-owned. */
static void check_leaf_rights(const struct env *env, const struct leaf *l)
{
	uint64_t e = l->e;

	if (env->kind == EPT) {
		assert_int_equal(e & 7, 7);			/* R W X */
		assert_int_equal(e >> 3 & 7, EPT_MT_WB);	/* 5:3 memory type */
		assert_true(e & EPT_IPAT);
		assert_int_equal(!!(e & RAW_PS), l->size > K4);
		return;
	}
	assert_int_equal(e & 7, 7);				/* P R/W U/S */
	assert_int_equal(e & (X86_PTE_PWT | X86_PTE_PCD | X86_PTE_G), 0);	/* WB */
	assert_int_equal(e >> 63, 0);				/* executable */
	if (l->size > K4) {
		assert_true(e & X86_PTE_PS);
		assert_int_equal(e & X86_PTE_PATLG, 0);
	} else {
		assert_int_equal(e & X86_PTE_PAT4K, 0);
	}
}

static int count_leaf(void *ctx, const struct pt_leaf *leaf)
{
	(void)leaf;
	++*(size_t *)ctx;
	return 0;
}

/*
 * Every guest page maps to exactly its frame in m, with the right rights
 * and page size, the leaves cover [0, RAM end) and nothing else, each host
 * frame backs one guest page, and gpmap_hva lands on the same bytes.
 */
static void check_map(struct env *env, uint64_t max_page)
{
	const struct gpmap *m = &env->m;
	uint64_t end = m->nr_frames * K4, next = 0;
	struct walk w = { 0 };
	bool *seen = calloc(ARENA_FRAMES, 1);
	size_t engine_leaves = 0;

	assert_non_null(seen);
	walk_table(env, env->pt.root_pa, PT_LEVELS - 1, 0, &w);
	for (size_t i = 0; i < w.n; i++) {
		const struct leaf *l = &w.leaf[i];
		size_t g = l->gpa / K4;
		bool run = m->runs[g / RUN] && !(g % RUN);

		assert_int_equal(l->gpa, next);		/* no hole, no overlap */
		assert_true(l->gpa + l->size <= end);	/* nothing past RAM */
		check_leaf_rights(env, l);
		assert_int_equal(l->size, run && max_page >= M2 ? M2 : K4);
		if (l->size == M2) {
			assert_int_equal(l->pa % M2, 0);
			assert_int_equal(fk.unit[frame_index(l->pa)], RUN);
		}
		for (size_t j = 0; j < l->size / K4; j++) {
			uint64_t pa = l->pa + j * K4;
			size_t idx = frame_index(pa);
			uint8_t *hva = gpmap_hva(m, (g + j) * K4 + 123);

			assert_int_equal(m->frames[g + j], pa);
			assert_true(fk.taken[idx]);
			if (!m->runs[(g + j) / RUN])
				assert_int_equal(fk.unit[idx], 1);
			assert_false(seen[idx]);
			seen[idx] = true;
			assert_ptr_equal(hva, fk.arena + idx * K4 + 123);
			assert_int_equal(*(uint64_t *)(hva - 123), pa);	/* the signature */
		}
		next += l->size;
	}
	assert_int_equal(next, end);
	assert_int_equal(fk.live, m->nr_frames);	/* nothing taken but RAM */
	assert_null(gpmap_hva(m, end));
	assert_null(gpmap_hva(m, UINT64_MAX));
	assert_int_equal(pt_for_each(&env->pt, 0, 1ull << 48, count_leaf, &engine_leaves), 0);
	assert_int_equal(engine_leaves, w.n);
	assert_int_equal(pt_lookup(&env->pt, end, NULL, NULL, NULL), -ENOENT);
	free(w.leaf);
	free(seen);
}

/* A full 2 MiB of the guest is a run exactly when the allocator had one. */
static void check_runs(const struct gpmap *m, uint32_t pattern)
{
	for (size_t b = 0; b <= m->nr_frames / RUN; b++) {
		bool full = (b + 1) * RUN <= m->nr_frames;

		assert_int_equal(m->runs[b], full && (pattern >> (b % 32) & 1));
	}
}

static void build(struct env *env, size_t nr_frames, uint32_t pattern, uint64_t max_page)
{
	fake_reset(pattern, -1);
	assert_int_equal(gpmap_alloc(&env->m, nr_frames, &fake_mem), 0);
	check_runs(&env->m, pattern);
	env_pt(env, max_page);
	assert_int_equal(gpmap_map(&env->m, &env->pt), 0);
	check_map(env, max_page);
}

static void destroy(struct env *env)
{
	unsigned allocs = fk.allocs;

	env_pt_destroy(env);
	gpmap_free(&env->m);
	assert_null(env->m.frames);
	assert_null(env->m.runs);
	assert_int_equal(fk.live, 0);
	assert_int_equal(fk.frees, allocs);
}

/* ---- Tests ---- */

static void test_sizes(void **state)
{
	static const size_t sizes[] = {
		MiB(1) / K4, MiB(2) / K4, MiB(3) / K4 + 1, MiB(5) / K4 - 1, MiB(64) / K4,
		MiB(64) / K4 + 1,
	};
	static const uint32_t patterns[] = { ALL_RUNS, NO_RUNS, SOME_RUNS };
	struct env *env = *state;

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (size_t p = 0; p < sizeof(patterns) / sizeof(patterns[0]); p++) {
			build(env, sizes[s], patterns[p], PT_SIZE_2M);
			destroy(env);
		}
}

/* Without large pages (EPT may lack them) runs are mapped page by page. */
static void test_4k_only_tables(void **state)
{
	struct env *env = *state;

	build(env, MiB(6) / K4 + 7, SOME_RUNS, PT_SIZE_4K);
	destroy(env);
}

/* The 1 GiB pages the CPU may offer are never used: runs are 2 MiB. */
static void test_1g_tables(void **state)
{
	struct env *env = *state;

	build(env, MiB(64) / K4, ALL_RUNS, PT_SIZE_1G);
	destroy(env);
}

/* Running out anywhere: -ENOMEM and every frame taken so far is back. */
static void test_alloc_runs_out(void **state)
{
	const size_t nr = MiB(64) / K4 + 3;
	const long budgets[] = { 0, 1, RUN - 1, RUN, RUN + 1, 5000, (long)nr - 1 };
	struct env *env = *state;

	for (size_t b = 0; b < sizeof(budgets) / sizeof(budgets[0]); b++) {
		fake_reset(SOME_RUNS, budgets[b]);
		assert_int_equal(gpmap_alloc(&env->m, nr, &fake_mem), -ENOMEM);
		assert_null(env->m.frames);
		assert_null(env->m.runs);
		assert_int_equal(fk.live, 0);
		assert_int_equal(fk.frees, fk.allocs);
		assert_int_equal(fk.budget, 0);	/* it did take all it could */
	}
	fake_reset(SOME_RUNS, (long)nr);	/* exactly enough */
	assert_int_equal(gpmap_alloc(&env->m, nr, &fake_mem), 0);
	gpmap_free(&env->m);
	assert_int_equal(fk.live, 0);
	assert_int_equal(gpmap_alloc(&env->m, 0, &fake_mem), -EINVAL);
	assert_null(env->m.frames);
}

/* Table pages run out while mapping: tables and frames still all return. */
static void test_map_runs_out(void **state)
{
	struct env *env = *state;

	fake_reset(SOME_RUNS, -1);
	assert_int_equal(gpmap_alloc(&env->m, MiB(64) / K4, &fake_mem), 0);
	env->pool.cap = 5;	/* root, PDPT, PD, then two of the PTs needed */
	env_pt(env, PT_SIZE_2M);
	assert_int_equal(gpmap_map(&env->m, &env->pt), -ENOMEM);
	destroy(env);
}

static void fill(uint8_t *buf, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed + i * 7 + (i >> 9));
}

/* Each byte at gpa, found through the table rather than through gpmap. */
static uint8_t *byte_at(struct env *env, uint64_t gpa)
{
	uint64_t pa;

	assert_int_equal(pt_lookup(&env->pt, gpa, &pa, NULL, NULL), 0);
	return fk.arena + frame_index(pa & ~(K4 - 1)) * K4 + pa % K4;
}

static void test_copy(void **state)
{
	struct env *env = *state;
	const uint64_t end = MiB(4) + K4;
	/* from a run across its end into scattered frames, then frame to frame */
	const uint64_t gpa = M2 - 6000;
	const size_t len = 6000 + 3 * K4 + 77;
	uint8_t *out = malloc(len), *in = malloc(len), before[16], after[16];

	assert_non_null(out);
	assert_non_null(in);
	build(env, end / K4, 0x1, PT_SIZE_2M);	/* block 0 a run, the rest pages */
	fill(out, len, 0x31);
	assert_int_equal(gpmap_write(&env->m, gpa, out, len), 0);
	for (size_t i = 0; i < len; i++)
		assert_int_equal(*byte_at(env, gpa + i), out[i]);
	memset(in, 0, len);
	assert_int_equal(gpmap_read(&env->m, gpa, in, len), 0);
	assert_memory_equal(in, out, len);

	/* the last bytes of RAM, and nothing past them */
	assert_int_equal(gpmap_write(&env->m, end - 16, out, 16), 0);
	assert_int_equal(gpmap_read(&env->m, end - 16, before, 16), 0);
	assert_memory_equal(before, out, 16);
	assert_int_equal(gpmap_write(&env->m, end - 15, out + 100, 16), -EFAULT);
	assert_int_equal(gpmap_read(&env->m, end - 16, after, 16), 0);
	assert_memory_equal(after, before, 16);		/* a refused copy wrote nothing */
	assert_int_equal(gpmap_read(&env->m, end, in, 1), -EFAULT);
	assert_int_equal(gpmap_read(&env->m, end, in, 0), 0);
	assert_int_equal(gpmap_read(&env->m, UINT64_MAX - 8, in, 16), -EFAULT);	/* wraps */
	assert_int_equal(gpmap_write(&env->m, 0, out, end + 1), -EFAULT);
	destroy(env);
	free(out);
	free(in);
}

/* ---- CMOS memory sizes (hv/vm_devices.c feeds the split to the RTC) ---- */

/* What SeaBIOS's ram_probe() makes of the size bytes: RAM below 4 GiB
 * from 0x34/0x35 (or 0x30/0x31 when that is 0), plus RAM above it. */
static uint64_t cmos_ram(const struct rtc *r, uint64_t *above)
{
	uint64_t below = (uint64_t)(r->ram[0x34] | r->ram[0x35] << 8) << 16;

	if (below)
		below += MiB(16);
	else
		below = ((uint64_t)(r->ram[0x30] | r->ram[0x31] << 8) << 10) + MiB(1);
	*above = (uint64_t)(r->ram[0x5b] | r->ram[0x5c] << 8 | r->ram[0x5d] << 16) << 16;
	return below + *above;
}

static void test_ram_split(void **state)
{
	static const uint64_t sizes[] = {
		MiB(2), MiB(16), MiB(17), MiB(64), MiB(512), GiB(3) - MiB(1), GiB(3),
		GiB(3) + MiB(1), GiB(3) + MiB(512), GiB(4) - MiB(2), GiB(4), GiB(4) + MiB(2),
		GiB(6), GiB(64),
	};

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t mem = sizes[i], below, above, cmos_above;
		struct rtc r;

		guest_ram_split(mem, &below, &above);
		assert_int_equal(below + above, mem);
		assert_int_equal(below, mem < GiB(3) ? mem : GiB(3));
		rtc_init(&r, 0, 0, below, above);
		assert_int_equal(cmos_ram(&r, &cmos_above), mem);	/* each byte once */
		assert_int_equal(cmos_above, mem > GiB(3) ? mem - GiB(3) : 0);
	}
}

/* ---- The PC layout: RAM below 3 GiB, a hole, the rest from 4 GiB ---- */

/* Frames for a guest bigger than the arena: made-up PAs above 4 GiB of
 * host memory, never failing, whose bytes alias onto HOLE_SHADOW pages. */
#define HOLE_PA		0x1000000000ull
#define HOLE_SHADOW	64
static struct { uint64_t next; size_t live; uint8_t *shadow; } hk;

static uint64_t hole_alloc_contig(size_t n, size_t align)
{
	uint64_t pa = (hk.next + align * K4 - 1) & ~(align * K4 - 1);

	hk.next = pa + n * K4;
	hk.live += n;
	return pa;
}

static uint64_t hole_alloc_frame(void)
{
	return hole_alloc_contig(1, 1);
}

static void hole_free(uint64_t pa, size_t n)
{
	assert_true(pa >= HOLE_PA && pa < hk.next);
	hk.live -= n;
}

static void *hole_virt(uint64_t pa)
{
	return hk.shadow + (pa - HOLE_PA) / K4 % HOLE_SHADOW * K4;
}

static const struct gpmap_mem hole_mem = {
	hole_alloc_contig, hole_alloc_frame, hole_free, hole_virt,
};

static void test_page_index(void **state)
{
	(void)state;
	assert_int_equal(guest_page_gpa(0), 0);
	assert_int_equal(guest_page_gpa(GUEST_LOW_PAGES - 1), GiB(3) - K4);
	assert_int_equal(guest_page_gpa(GUEST_LOW_PAGES), GiB(4));
	assert_int_equal(guest_page_gpa(GUEST_LOW_PAGES + 5), GiB(4) + 5 * K4);
	assert_int_equal(guest_gpa_page(GiB(3) - 1), GUEST_LOW_PAGES - 1);
	assert_int_equal(guest_gpa_page(GiB(3)), UINT64_MAX);
	assert_int_equal(guest_gpa_page(0xfec00000ull), UINT64_MAX);	/* I/O APIC */
	assert_int_equal(guest_gpa_page(0xfee00000ull), UINT64_MAX);	/* local APIC */
	assert_int_equal(guest_gpa_page(GiB(4) - 1), UINT64_MAX);
	assert_int_equal(guest_gpa_page(GiB(4)), GUEST_LOW_PAGES);
	assert_int_equal(guest_gpa_page(GiB(4) + 5 * K4 + 7), GUEST_LOW_PAGES + 5);
}

/* 5 GiB + 8 KiB of guest: 3 GiB below the hole, 2 GiB + 2 pages above
 * (a tail of single frames), mapped and read back through the tables. */
static void test_hole_layout(void **state)
{
	struct env *env = *state;
	const size_t nr = (size_t)(GiB(5) / K4) + 2;
	const uint64_t top = GiB(6) + 2 * K4;	/* one past the last RAM byte */
	uint64_t pa, size;
	unsigned attr;
	uint8_t buf[32];

	hk.next = HOLE_PA;
	hk.live = 0;
	hk.shadow = calloc(HOLE_SHADOW, K4);
	assert_int_equal(gpmap_alloc(&env->m, nr, &hole_mem), 0);
	assert_int_equal(hk.live, nr);
	assert_int_equal(gpmap_host_high_pages(&env->m), nr);
	env_pt(env, PT_SIZE_2M);
	assert_int_equal(gpmap_map(&env->m, &env->pt), 0);

	/* RAM up to 3 GiB, nothing in 3-4 GiB, RAM again from 4 GiB to top */
	assert_int_equal(pt_lookup(&env->pt, GiB(3) - K4, &pa, &attr, &size), 0);
	assert_int_equal(pa, env->m.frames[GUEST_LOW_PAGES - 1]);
	assert_int_equal(size, PT_SIZE_2M);
	assert_int_not_equal(pt_lookup(&env->pt, GiB(3), &pa, &attr, &size), 0);
	assert_int_not_equal(pt_lookup(&env->pt, 0xfee00000ull, &pa, &attr, &size), 0);
	assert_int_not_equal(pt_lookup(&env->pt, GiB(4) - K4, &pa, &attr, &size), 0);
	assert_int_equal(pt_lookup(&env->pt, GiB(4), &pa, &attr, &size), 0);
	assert_int_equal(pa, env->m.frames[GUEST_LOW_PAGES]);
	assert_int_equal(pt_lookup(&env->pt, top - K4, &pa, &attr, &size), 0);
	assert_int_equal(pa, env->m.frames[nr - 1]);
	assert_int_equal(size, PT_SIZE_4K);
	assert_int_not_equal(pt_lookup(&env->pt, top, &pa, &attr, &size), 0);
	/* the GPA of RAM above the hole was not mapped a second time below it */
	assert_int_equal(pt_lookup(&env->pt, GiB(2), &pa, &attr, &size), 0);
	assert_int_equal(pa, env->m.frames[GiB(2) / K4]);

	/* host addresses and copies follow the same layout */
	assert_ptr_equal(gpmap_hva(&env->m, GiB(4) + 9), (uint8_t *)hole_virt(
		env->m.frames[GUEST_LOW_PAGES]) + 9);
	assert_null(gpmap_hva(&env->m, GiB(3)));
	assert_null(gpmap_hva(&env->m, GiB(4) - 1));
	assert_null(gpmap_hva(&env->m, top));
	assert_ptr_equal(gpmap_page_hva(&env->m, nr - 1), hole_virt(env->m.frames[nr - 1]));
	assert_null(gpmap_page_hva(&env->m, nr));
	fill(buf, sizeof(buf), 0x47);
	assert_int_equal(gpmap_write(&env->m, top - 16, buf, 16), 0);
	assert_memory_equal((uint8_t *)hole_virt(env->m.frames[nr - 1]) + K4 - 16, buf, 16);
	assert_int_equal(gpmap_write(&env->m, GiB(3) - 8, buf, 16), -EFAULT);	/* into the hole */
	assert_int_equal(gpmap_read(&env->m, GiB(4) - 8, buf, 16), -EFAULT);	/* out of it */
	assert_int_equal(gpmap_read(&env->m, GiB(3) + 4, buf, 4), -EFAULT);
	assert_int_equal(gpmap_read(&env->m, top - 8, buf, 16), -EFAULT);
	assert_int_equal(gpmap_read(&env->m, GiB(3) - 16, buf, 16), 0);

	env_pt_destroy(env);
	gpmap_free(&env->m);
	assert_int_equal(hk.live, 0);
	free(hk.shadow);
}

int main(void)
{
	const struct CMUnitTest per_format[] = {
		cmocka_unit_test_setup_teardown(test_sizes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_4k_only_tables, setup, teardown),
		cmocka_unit_test_setup_teardown(test_1g_tables, setup, teardown),
		cmocka_unit_test_setup_teardown(test_map_runs_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_copy, setup, teardown),
	};
	const struct CMUnitTest other[] = {
		cmocka_unit_test_setup_teardown(test_alloc_runs_out, setup, teardown),
		cmocka_unit_test(test_ram_split),
		cmocka_unit_test(test_page_index),
		cmocka_unit_test_setup_teardown(test_hole_layout, setup, teardown),
	};
	int failed;

	group_kind = NPT;
	failed = cmocka_run_group_tests_name("NPT", per_format, group_setup, group_teardown);
	group_kind = EPT;
	failed += cmocka_run_group_tests_name("EPT", per_format, group_setup, group_teardown);
	failed += cmocka_run_group_tests_name("frames, CMOS", other, group_setup, group_teardown);
	return failed;
}
