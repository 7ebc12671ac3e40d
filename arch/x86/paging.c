/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The page-table engine (interface and rules in paging.h) and the x86-64
 * long-mode entry format that ferry's own address space uses.
 *
 * The engine walks a range [lo, hi] (inclusive, 48-bit: host addresses
 * with their sign extension removed) level by level; each operation is an
 * entry function applied by each_entry() to every entry the range touches.
 */
#include <errno.h>
#include <string.h>
#include "arch/x86/paging.h"

/* ---- The x86-64 long-mode format (SDM Vol 3A 4.5) ---- */

const struct pt_level pt_x86_levels[PT_LEVELS] = {
	{ "PT", 12, true },	/* 4 KiB pages */
	{ "PD", 21, true },	/* 2 MiB pages with PS */
	{ "PDPT", 30, true },	/* 1 GiB pages with PS (CPU support varies) */
	{ "PML4", 39, false },	/* PS is reserved in a PML4E */
};

/* Bits that x86_attr_bits() owns in a leaf. */
#define X86_ATTR_BITS \
	(X86_PTE_RW | X86_PTE_US | X86_PTE_G | X86_PTE_PCD | X86_PTE_PWT | X86_PTE_NX)

int x86_pte_check(unsigned attr)
{
	if (attr & ~PT_ATTR_ALL)
		return -EINVAL;
	/* A present entry always allows reads (SDM Vol 3A 4.6). */
	return (attr & PT_R) ? 0 : -EINVAL;
}

bool x86_pte_present(uint64_t e)
{
	return e & X86_PTE_P;
}

bool x86_pte_is_leaf(uint64_t e, unsigned level)
{
	return level == 0 || (e & X86_PTE_PS);
}

/*
 * Access rights (SDM Vol 3A 4.6) and memory type: PCD|PWT with PAT clear
 * selects PAT entry 3, which is UC in the power-up PAT (SDM Vol 3A 4.9.2
 * and "Page Attribute Table (PAT)" in "Memory Cache Control"); PCD|PWT
 * clear selects entry 0, WB.  NX needs EFER.NXE = 1.
 */
static uint64_t x86_attr_bits(unsigned attr)
{
	uint64_t e = 0;

	if (attr & PT_W)
		e |= X86_PTE_RW;
	if (attr & PT_USER)
		e |= X86_PTE_US;
	if (attr & PT_GLOBAL)
		e |= X86_PTE_G;
	if (attr & PT_MT_UC)
		e |= X86_PTE_PCD | X86_PTE_PWT;
	if (!(attr & PT_X))
		e |= X86_PTE_NX;
	return e;
}

uint64_t x86_pte_mk_leaf(uint64_t pa, unsigned attr, unsigned level)
{
	return pa | X86_PTE_P | x86_attr_bits(attr) | (level ? X86_PTE_PS : 0);
}

/* Rights are ANDed over the walk, so tables grant everything and leaves
 * decide; U/S is set so that user (and NPT) leaves work below them. */
uint64_t x86_pte_mk_table(uint64_t table_pa)
{
	return table_pa | X86_PTE_P | X86_PTE_RW | X86_PTE_US;
}

/* A large leaf's frame starts above its PAT bit (bit 12). */
uint64_t x86_pte_addr(uint64_t e, unsigned level)
{
	uint64_t low = (1ull << pt_x86_levels[level].shift) - 1;

	if (x86_pte_is_leaf(e, level))
		return e & X86_PTE_ADDR & ~low;
	return e & X86_PTE_ADDR;
}

unsigned x86_pte_attr(uint64_t e, unsigned level)
{
	unsigned attr = PT_R;

	(void)level;
	if (e & X86_PTE_RW)
		attr |= PT_W;
	if (!(e & X86_PTE_NX))
		attr |= PT_X;
	if (e & X86_PTE_US)
		attr |= PT_USER;
	if (e & X86_PTE_G)
		attr |= PT_GLOBAL;
	if (e & X86_PTE_PCD)
		attr |= PT_MT_UC;
	return attr;
}

uint64_t x86_pte_set_attr(uint64_t e, unsigned attr, unsigned level)
{
	(void)level;
	return (e & ~X86_ATTR_BITS) | x86_attr_bits(attr);
}

/* 1 GiB -> 2 MiB keeps the layout; 2 MiB -> 4 KiB drops PS and moves the
 * PAT bit from 12 to 7 (SDM Vol 3A Tables 4-18 and 4-20). */
uint64_t x86_pte_split(uint64_t e, unsigned level)
{
	if (level != 1)
		return e;
	e &= ~X86_PTE_PS;
	if (e & X86_PTE_PATLG)
		e = (e & ~X86_PTE_PATLG) | X86_PTE_PAT4K;
	return e;
}

const struct pt_format pt_host_format = {
	.name = "x86-64",
	.levels = pt_x86_levels,
	.canonical = true,
	.check = x86_pte_check,
	.present = x86_pte_present,
	.is_leaf = x86_pte_is_leaf,
	.mk_leaf = x86_pte_mk_leaf,
	.mk_table = x86_pte_mk_table,
	.addr = x86_pte_addr,
	.attr = x86_pte_attr,
	.set_attr = x86_pte_set_attr,
	.split = x86_pte_split,
};

/* ---- Entries, levels and addresses ---- */

#define VA_MASK		((1ull << PT_VA_BITS) - 1)
#define PAGE_MASK_4K	(PT_SIZE_4K - 1)
#define TOP_LEVEL	(PT_LEVELS - 1)

/* The CPU may set A/D bits in live entries at any time: loads are atomic,
 * stores are single release stores (a new table's contents are visible
 * before the entry linking it), read-modify-writes are compare-exchanges. */
static uint64_t pte_read(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void pte_write(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static bool pte_cmpxchg(uint64_t *p, uint64_t *old, uint64_t v)
{
	return __atomic_compare_exchange_n(p, old, v, false, __ATOMIC_RELEASE,
					   __ATOMIC_RELAXED);
}

static uint64_t *table_of(const struct page_table *pt, uint64_t pa)
{
	return pt->ops.virt(pt->ops.ctx, pa);
}

static uint64_t size_of(const struct page_table *pt, unsigned level)
{
	return 1ull << pt->fmt->levels[level].shift;
}

static unsigned index_of(const struct page_table *pt, uint64_t a, unsigned level)
{
	return (a >> pt->fmt->levels[level].shift) & (PT_ENTRIES - 1);
}

static bool is_table(const struct page_table *pt, uint64_t e, unsigned level)
{
	return pt->fmt->present(e) && !pt->fmt->is_leaf(e, level);
}

/* Does [lo, hi] cover the whole region of one entry at this level? */
static bool covers(const struct page_table *pt, unsigned level, uint64_t lo,
		   uint64_t hi)
{
	uint64_t size = size_of(pt, level);

	return !(lo & (size - 1)) && hi - lo == size - 1;
}

/* Can [lo, hi] -> pa be one leaf at this level? */
static bool leaf_fits(const struct page_table *pt, unsigned level, uint64_t lo,
		      uint64_t hi, uint64_t pa)
{
	uint64_t size = size_of(pt, level);

	return pt->fmt->levels[level].leaf_ok && size <= pt->max_page &&
	       !(pa & (size - 1)) && covers(pt, level, lo, hi);
}

/* Canonical: bits 63:47 all equal (SDM Vol 1 3.3.7.1). */
static bool canonical(uint64_t va)
{
	uint64_t top = va >> (PT_VA_BITS - 1);

	return top == 0 || top == (1ull << (65 - PT_VA_BITS)) - 1;
}

static uint64_t sign_extend(const struct page_table *pt, uint64_t a)
{
	if (pt->fmt->canonical && (a >> (PT_VA_BITS - 1)) & 1)
		return a | ~VA_MASK;
	return a;
}

/* Validate [va, va+size) and give its inclusive 48-bit bounds. */
static int range_check(const struct page_table *pt, uint64_t va, uint64_t size,
		       uint64_t *lo, uint64_t *hi)
{
	uint64_t end = va + size - 1;

	if (!size || ((va | size) & PAGE_MASK_4K) || end < va)
		return -EINVAL;
	if (pt->fmt->canonical) {
		/* Both ends canonical and in the same half: no hole inside. */
		if (!canonical(va) || !canonical(end) || ((va ^ end) >> 63))
			return -EINVAL;
	} else if (end >> PT_VA_BITS) {
		return -EINVAL;
	}
	*lo = va & VA_MASK;
	*hi = end & VA_MASK;
	return 0;
}

static int pa_check(uint64_t pa, uint64_t size)
{
	if ((pa & PAGE_MASK_4K) || pa >= PT_PA_LIMIT || size > PT_PA_LIMIT - pa)
		return -EINVAL;
	return 0;
}

/* ---- Table pages ---- */

static int table_alloc(struct page_table *pt, uint64_t *pa)
{
	int err = pt->ops.alloc(pt->ops.ctx, pa);

	if (err)
		return err < 0 ? err : -ENOMEM;
	memset(table_of(pt, *pa), 0, PT_SIZE_4K);
	pt->tables++;
	return 0;
}

static void table_free(struct page_table *pt, uint64_t pa)
{
	pt->ops.free(pt->ops.ctx, pa);
	pt->tables--;
}

static bool table_empty(const struct page_table *pt, uint64_t pa)
{
	const uint64_t *t = table_of(pt, pa);

	for (unsigned i = 0; i < PT_ENTRIES; i++)
		if (pt->fmt->present(pte_read(&t[i])))
			return false;
	return true;
}

/*
 * Queue an unlinked table that maps nothing any more (unmapped, or found
 * empty), and the tables below it, for pt_flush_done: a CPU may still walk
 * them until the flush.  Entry 0 becomes the chain link; a 4 KiB-aligned
 * address reads as "not present" in every format, as everything there now
 * should.  A merge keeps its table intact instead (kept_add).
 */
static void defer_tree(struct page_table *pt, uint64_t pa, unsigned level)
{
	uint64_t *t = table_of(pt, pa);

	for (unsigned i = 0; level > 0 && i < PT_ENTRIES; i++) {
		uint64_t e = pte_read(&t[i]);

		if (is_table(pt, e, level))
			defer_tree(pt, pt->fmt->addr(e, level), level - 1);
	}
	pte_write(&t[0], pt->deferred);
	pt->deferred = pa;
	pt->ndeferred++;
	pt->flush_pending = true;
}

/*
 * A table that a merge unlinked still maps what it did: a CPU may walk it
 * through a cached entry above it until the flush, and its entries must
 * then give the same frames (a link in entry 0 would read as not present,
 * a fault on RAM).  It is listed in a page of its own; kept_reserve makes
 * room first (-ENOMEM when it cannot).
 */
static int kept_reserve(struct page_table *pt)
{
	uint64_t pa;
	int err;

	if (pt->kept && pt->kept_n < PT_ENTRIES)
		return 0;
	err = table_alloc(pt, &pa);
	if (err)
		return err;
	table_of(pt, pa)[0] = pt->kept;
	pt->kept = pa;
	pt->kept_n = 1;
	pt->ndeferred++;
	return 0;
}

static void kept_add(struct page_table *pt, uint64_t pa)
{
	table_of(pt, pt->kept)[pt->kept_n++] = pa;
	pt->ndeferred++;
	pt->flush_pending = true;
}

static void free_kept(struct page_table *pt)
{
	while (pt->kept) {
		uint64_t *list = table_of(pt, pt->kept), page = pt->kept;

		for (unsigned i = 1; i < pt->kept_n; i++)
			table_free(pt, list[i]);
		pt->ndeferred -= pt->kept_n;
		pt->kept = list[0];
		pt->kept_n = PT_ENTRIES;	/* the pages behind the first are full */
		table_free(pt, page);
	}
	pt->kept_n = 0;
}

/* Free a linked tree (pt_destroy only: no CPU uses the table any more). */
static void free_tree(struct page_table *pt, uint64_t pa, unsigned level)
{
	const uint64_t *t = table_of(pt, pa);

	for (unsigned i = 0; level > 0 && i < PT_ENTRIES; i++) {
		uint64_t e = pte_read(&t[i]);

		if (is_table(pt, e, level))
			free_tree(pt, pt->fmt->addr(e, level), level - 1);
	}
	table_free(pt, pa);
}

static void free_deferred(struct page_table *pt)
{
	free_kept(pt);
	while (pt->ndeferred) {
		uint64_t pa = pt->deferred;

		pt->deferred = pte_read(&table_of(pt, pa)[0]);
		pt->ndeferred--;
		table_free(pt, pa);
	}
	pt->deferred = 0;
}

/* ---- Walking a range ---- */

/* One pt_map / pt_unmap / pt_protect / pt_for_each call. */
struct op {
	struct page_table *pt;
	uint64_t lo;		/* first address of the whole range */
	uint64_t pa;		/* map: the frame lo maps to */
	unsigned attr;		/* map: attributes */
	unsigned set, clear;	/* protect: attribute change */
	unsigned flags;		/* PT_MAP_REPLACE, PT_SPLIT_4K */
	int flush;		/* PT_FLUSH once a change needs one */
	pt_leaf_fn fn;		/* for_each: callback and its context */
	void *ctx;
};

typedef int (*entry_fn)(struct op *op, uint64_t *p, unsigned level,
			uint64_t lo, uint64_t hi);

static void note_flush(struct op *op)
{
	op->flush = PT_FLUSH;
	op->pt->flush_pending = true;
}

/* Apply fn to each entry of the table at table_pa that [lo, hi] touches,
 * with the part of the range inside that entry; stop at a non-zero result. */
static int each_entry(struct op *op, uint64_t table_pa, unsigned level,
		      uint64_t lo, uint64_t hi, entry_fn fn)
{
	uint64_t *t = table_of(op->pt, table_pa);

	for (;;) {
		uint64_t end = lo | (size_of(op->pt, level) - 1);
		uint64_t sub_hi = end < hi ? end : hi;
		int ret = fn(op, &t[index_of(op->pt, lo, level)], level, lo, sub_hi);

		if (ret || sub_hi == hi)
			return ret;
		lo = sub_hi + 1;
	}
}

static int walk(struct op *op, uint64_t lo, uint64_t hi, entry_fn fn)
{
	return each_entry(op, op->pt->root_pa, TOP_LEVEL, lo, hi, fn);
}

/* Link a fresh (zeroed) table at the empty entry *p. */
static int link_new_table(struct op *op, uint64_t *p)
{
	uint64_t pa;
	int err = table_alloc(op->pt, &pa);

	if (!err)
		pte_write(p, op->pt->fmt->mk_table(pa));
	return err;
}

/*
 * Replace the large leaf *p by a table of equivalent leaves one level down:
 * the table is filled completely, then linked with one compare-exchange,
 * redone if the CPU set A/D in the large entry meanwhile (so the children
 * inherit them and no dirty bit is lost).
 */
static int split_leaf(struct op *op, uint64_t *p, unsigned level)
{
	struct page_table *pt = op->pt;
	uint64_t child_pa, old = pte_read(p), step = size_of(pt, level - 1);
	uint64_t *t;
	int err = table_alloc(pt, &child_pa);

	if (err)
		return err;
	t = table_of(pt, child_pa);
	do {
		uint64_t first = pt->fmt->split(old, level);

		for (unsigned i = 0; i < PT_ENTRIES; i++)
			t[i] = first + i * step;	/* frame is bits 51:12 */
	} while (!pte_cmpxchg(p, &old, pt->fmt->mk_table(child_pa)));
	note_flush(op);
	return 0;
}

/* Unlink the table below *p if it maps nothing. */
static void drop_if_empty(struct op *op, uint64_t *p, unsigned level)
{
	struct page_table *pt = op->pt;
	uint64_t e = pte_read(p);

	if (!is_table(pt, e, level) || !table_empty(pt, pt->fmt->addr(e, level)))
		return;
	pte_write(p, 0);
	defer_tree(pt, pt->fmt->addr(e, level), level - 1);
	note_flush(op);
}

/* ---- pt_for_each and lookups ---- */

static int visit_entry(struct op *op, uint64_t *p, unsigned level,
		       uint64_t lo, uint64_t hi)
{
	const struct pt_format *f = op->pt->fmt;
	uint64_t e = pte_read(p), size = size_of(op->pt, level);
	struct pt_leaf leaf;

	if (!f->present(e))
		return 0;
	if (!f->is_leaf(e, level))
		return each_entry(op, f->addr(e, level), level - 1, lo, hi, visit_entry);
	leaf.va = sign_extend(op->pt, lo & ~(size - 1));
	leaf.pa = f->addr(e, level);
	leaf.size = size;
	leaf.attr = f->attr(e, level);
	leaf.level = level;
	return op->fn(op->ctx, &leaf);
}

/* Read-only walks share struct op with the modifying ones. */
static int visit(const struct page_table *pt, uint64_t lo, uint64_t hi,
		 pt_leaf_fn fn, void *ctx)
{
	struct op op = { .pt = (struct page_table *)pt, .fn = fn, .ctx = ctx };

	return walk(&op, lo, hi, visit_entry);
}

int pt_for_each(const struct page_table *pt, uint64_t va, uint64_t size,
		pt_leaf_fn fn, void *ctx)
{
	uint64_t lo, hi;
	int err = range_check(pt, va, size, &lo, &hi);

	return err ? err : visit(pt, lo, hi, fn, ctx);
}

static int stop_at_leaf(void *ctx, const struct pt_leaf *leaf)
{
	(void)ctx;
	(void)leaf;
	return 1;
}

static bool range_mapped(const struct page_table *pt, uint64_t lo, uint64_t hi)
{
	return visit(pt, lo, hi, stop_at_leaf, NULL) != 0;
}

uint64_t *pt_find_leaf(const struct page_table *pt, uint64_t va, unsigned *level)
{
	uint64_t lo, hi, table = pt->root_pa;

	if (range_check(pt, va & ~PAGE_MASK_4K, PT_SIZE_4K, &lo, &hi))
		return NULL;
	for (unsigned l = PT_LEVELS; l-- > 0;) {
		uint64_t *p = &table_of(pt, table)[index_of(pt, lo, l)];
		uint64_t e = pte_read(p);

		if (!pt->fmt->present(e))
			return NULL;
		if (pt->fmt->is_leaf(e, l)) {
			if (level)
				*level = l;
			return p;
		}
		table = pt->fmt->addr(e, l);
	}
	return NULL;	/* not reached: level 0 entries are leaves */
}

int pt_lookup(const struct page_table *pt, uint64_t va, uint64_t *pa,
	      unsigned *attr, uint64_t *page_size)
{
	uint64_t lo, hi, e, size;
	unsigned level;
	const uint64_t *p;

	if (range_check(pt, va & ~PAGE_MASK_4K, PT_SIZE_4K, &lo, &hi))
		return -EINVAL;
	p = pt_find_leaf(pt, va, &level);
	if (!p)
		return -ENOENT;
	e = pte_read(p);
	size = size_of(pt, level);
	if (pa)
		*pa = pt->fmt->addr(e, level) + (va & (size - 1));
	if (attr)
		*attr = pt->fmt->attr(e, level);
	if (page_size)
		*page_size = size;
	return 0;
}

/* ---- pt_unmap ---- */

static int unmap_entry(struct op *op, uint64_t *p, unsigned level,
		       uint64_t lo, uint64_t hi)
{
	struct page_table *pt = op->pt;
	uint64_t e = pte_read(p);
	int err;

	if (!pt->fmt->present(e))
		return 0;
	if (covers(pt, level, lo, hi)) {
		pte_write(p, 0);
		if (!pt->fmt->is_leaf(e, level))
			defer_tree(pt, pt->fmt->addr(e, level), level - 1);
		note_flush(op);
		return 0;
	}
	if (pt->fmt->is_leaf(e, level)) {
		err = split_leaf(op, p, level);
		if (err)
			return err;
	}
	err = each_entry(op, pt->fmt->addr(pte_read(p), level), level - 1, lo, hi,
			 unmap_entry);
	drop_if_empty(op, p, level);
	return err;
}

/* An operation with nothing to check but its range: pt_unmap, pt_merge. */
static int walk_range(struct page_table *pt, uint64_t va, uint64_t size, entry_fn fn)
{
	struct op op = { .pt = pt };
	uint64_t hi;
	int err = range_check(pt, va, size, &op.lo, &hi);

	if (!err)
		err = walk(&op, op.lo, hi, fn);
	return err ? err : op.flush;
}

int pt_unmap(struct page_table *pt, uint64_t va, uint64_t size)
{
	return walk_range(pt, va, size, unmap_entry);
}

/* ---- pt_map ---- */

static int map_leaf(struct op *op, uint64_t *p, unsigned level, uint64_t pa)
{
	const struct pt_format *f = op->pt->fmt;
	uint64_t e = pte_read(p), n = f->mk_leaf(pa, op->attr, level);

	if (f->present(e)) {
		if (!(op->flags & PT_MAP_REPLACE))
			return -EEXIST;
		if (f->addr(e, level) == pa && f->attr(e, level) == f->attr(n, level))
			return 0;	/* same mapping: keep its A/D bits */
		note_flush(op);
	}
	pte_write(p, n);
	return 0;
}

/* Make *p a table to descend into: new, or split from a replaced leaf. */
static int need_table(struct op *op, uint64_t *p, unsigned level)
{
	const struct pt_format *f = op->pt->fmt;
	uint64_t e = pte_read(p);

	if (!f->present(e))
		return link_new_table(op, p);
	if (!f->is_leaf(e, level))
		return 0;
	if (!(op->flags & PT_MAP_REPLACE))
		return -EEXIST;
	return split_leaf(op, p, level);
}

/*
 * A leaf where the range covers the entry and the frame is aligned; else
 * descend.  With PT_MAP_REPLACE an existing non-empty table is descended
 * into rather than replaced, so its pages keep their granularity.
 */
static int map_entry(struct op *op, uint64_t *p, unsigned level,
		     uint64_t lo, uint64_t hi)
{
	struct page_table *pt = op->pt;
	uint64_t pa = op->pa + (lo - op->lo);
	bool fits = leaf_fits(pt, level, lo, hi, pa);
	int err;

	if (fits)
		drop_if_empty(op, p, level);
	if (fits && !is_table(pt, pte_read(p), level))
		return map_leaf(op, p, level, pa);
	err = need_table(op, p, level);
	if (err)
		return err;
	return each_entry(op, pt->fmt->addr(pte_read(p), level), level - 1, lo, hi,
			  map_entry);
}

int pt_map(struct page_table *pt, uint64_t va, uint64_t pa, uint64_t size,
	   unsigned attr, unsigned flags)
{
	struct op op = { .pt = pt, .pa = pa, .attr = attr, .flags = flags };
	uint64_t hi;
	int err = range_check(pt, va, size, &op.lo, &hi);

	if (!err)
		err = pa_check(pa, size);
	if (!err)
		err = (flags & ~PT_MAP_REPLACE) ? -EINVAL : pt->fmt->check(attr);
	if (err)
		return err;
	if (!(flags & PT_MAP_REPLACE) && range_mapped(pt, op.lo, hi))
		return -EEXIST;
	err = walk(&op, op.lo, hi, map_entry);
	if (err && !(flags & PT_MAP_REPLACE)) {
		/* The range was empty: remove what was built (no split needed). */
		struct op undo = { .pt = pt, .lo = op.lo };

		walk(&undo, op.lo, hi, unmap_entry);
	}
	return err ? err : op.flush;
}

/* ---- pt_protect ---- */

static unsigned new_attr(const struct op *op, unsigned old)
{
	return (old & ~op->clear) | op->set;
}

/* Changes a stale TLB entry could make wrong, not merely stricter. */
static bool attr_needs_flush(unsigned from, unsigned to)
{
	return (from & ~to & PT_RWX) ||
	       ((from ^ to) & (PT_USER | PT_GLOBAL | PT_MT_UC));
}

static int protect_leaf(struct op *op, uint64_t *p, unsigned level)
{
	const struct pt_format *f = op->pt->fmt;
	uint64_t old = pte_read(p), n;
	unsigned from = f->attr(old, level);
	unsigned to = f->attr(f->set_attr(old, new_attr(op, from), level), level);

	if (from == to)
		return 0;
	do
		n = f->set_attr(old, to, level);
	while (!pte_cmpxchg(p, &old, n));
	if (attr_needs_flush(from, to))
		note_flush(op);
	return 0;
}

static bool must_split(const struct op *op, uint64_t e, unsigned level,
		       uint64_t lo, uint64_t hi)
{
	const struct pt_format *f = op->pt->fmt;
	unsigned from = f->attr(e, level);

	if (level == 0)
		return false;
	if (op->flags & PT_SPLIT_4K)
		return true;
	return !covers(op->pt, level, lo, hi) &&
	       f->attr(f->set_attr(e, new_attr(op, from), level), level) != from;
}

static int protect_entry(struct op *op, uint64_t *p, unsigned level,
			 uint64_t lo, uint64_t hi)
{
	const struct pt_format *f = op->pt->fmt;
	uint64_t e = pte_read(p);
	int err;

	if (!f->present(e))
		return 0;
	if (f->is_leaf(e, level)) {
		if (!must_split(op, e, level, lo, hi))
			return protect_leaf(op, p, level);
		err = split_leaf(op, p, level);
		if (err)
			return err;
	}
	return each_entry(op, f->addr(pte_read(p), level), level - 1, lo, hi,
			  protect_entry);
}

/* for_each callback of the pre-check: is every result encodable? */
static int check_new_attr(void *ctx, const struct pt_leaf *leaf)
{
	const struct op *op = ctx;

	return op->pt->fmt->check(new_attr(op, leaf->attr)) ? -EINVAL : 0;
}

int pt_protect(struct page_table *pt, uint64_t va, uint64_t size,
	       unsigned set, unsigned clear, unsigned flags)
{
	struct op op = { .pt = pt, .set = set, .clear = clear, .flags = flags };
	uint64_t hi;
	int err = range_check(pt, va, size, &op.lo, &hi);

	if (!err && (((set | clear) & ~PT_ATTR_ALL) || (flags & ~PT_SPLIT_4K)))
		err = -EINVAL;
	if (!err)
		err = visit(pt, op.lo, hi, check_new_attr, &op);
	if (!err)
		err = walk(&op, op.lo, hi, protect_entry);
	return err ? err : op.flush;
}

/* ---- pt_merge ---- */

/*
 * The large leaf at `level` equivalent to the table at table_pa one level
 * down, or 0 if there is none: its entries all present leaves with the same
 * attributes, mapping contiguous frames from one aligned to the large page.
 * A/D bits are neither compared (a CPU may be setting them) nor kept.
 */
static uint64_t merged_leaf(const struct page_table *pt, uint64_t table_pa,
			    unsigned level)
{
	const struct pt_format *f = pt->fmt;
	const uint64_t *t = table_of(pt, table_pa);
	uint64_t e = pte_read(&t[0]), step = size_of(pt, level - 1);
	uint64_t base = f->addr(e, level - 1);
	unsigned attr = f->attr(e, level - 1);

	if (base & (size_of(pt, level) - 1))
		return 0;
	for (unsigned i = 0; i < PT_ENTRIES; i++) {
		e = pte_read(&t[i]);
		if (!f->present(e) || !f->is_leaf(e, level - 1) ||
		    f->addr(e, level - 1) != base + i * step ||
		    f->attr(e, level - 1) != attr)
			return 0;
	}
	return f->mk_leaf(base, attr, level);
}

/*
 * Bottom-up: merge the tables below first, then this one if the range
 * covers it and a leaf of its size is allowed.  The table is unlinked with
 * one store and queued for pt_flush_done, as a CPU may still hold it in its
 * paging-structure caches.  Until the flush a TLB may hold translations of
 * both page sizes and use either (SDM Vol 3A 4.10.2.3 "Details of TLB
 * Use"); both give the same frame and rights, so no access goes wrong.
 */
static int merge_entry(struct op *op, uint64_t *p, unsigned level,
		       uint64_t lo, uint64_t hi)
{
	struct page_table *pt = op->pt;
	uint64_t e = pte_read(p), child, leaf;
	int err;

	if (level == 0 || !is_table(pt, e, level))
		return 0;
	child = pt->fmt->addr(e, level);
	if (level > 1) {
		err = each_entry(op, child, level - 1, lo, hi, merge_entry);
		if (err)
			return err;
	}
	if (!leaf_fits(pt, level, lo, hi, 0))
		return 0;
	leaf = merged_leaf(pt, child, level);
	if (!leaf)
		return 0;
	if (kept_reserve(pt)) {
		/* no page to list it in (out of memory, as when a failed
		 * dirty-log start undoes its splits): chained through its
		 * entry 0 after all; a stale walk there faults, and
		 * do_gpa_fault resumes a fault on mapped RAM */
		pte_write(p, leaf);
		defer_tree(pt, child, level - 1);
	} else {
		pte_write(p, leaf);
		kept_add(pt, child);	/* only leaves below it: merged bottom-up */
	}
	note_flush(op);
	return 0;
}

int pt_merge(struct page_table *pt, uint64_t va, uint64_t size)
{
	return walk_range(pt, va, size, merge_entry);
}

/* ---- Life cycle and flushes ---- */

int pt_init(struct page_table *pt, const struct pt_format *fmt,
	    const struct pt_ops *ops, uint64_t max_page)
{
	int err;

	if (!fmt || !ops || !ops->alloc || !ops->free || !ops->virt)
		return -EINVAL;
	if (max_page != PT_SIZE_4K && max_page != PT_SIZE_2M && max_page != PT_SIZE_1G)
		return -EINVAL;
	memset(pt, 0, sizeof(*pt));
	pt->fmt = fmt;
	pt->ops = *ops;
	pt->max_page = max_page;
	err = table_alloc(pt, &pt->root_pa);
	if (err)
		pt->fmt = NULL;
	return err;
}

void pt_destroy(struct page_table *pt)
{
	if (!pt->fmt)
		return;
	free_tree(pt, pt->root_pa, TOP_LEVEL);
	free_deferred(pt);
	pt->fmt = NULL;
	pt->root_pa = 0;
	pt->flush_pending = false;
}

bool pt_needs_flush(const struct page_table *pt)
{
	return pt->flush_pending;
}

void pt_flush_done(struct page_table *pt)
{
	free_deferred(pt);
	pt->flush_pending = false;
}
