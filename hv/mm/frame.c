/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Physical frame allocator: a bitmap over usable RAM plus the sorted list of
 * free ranges (usable minus reserved) used to validate frees.  See
 * hv/mm/frame.h for the contract.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "hv/lib/log.h"
#include "hv/mm/frame.h"
#include "hv/lib/spinlock.h"

#define MAX_PFN		(FRAME_MAX_PHYS >> FRAME_SHIFT)

/* Frame numbers [lo, hi). */
struct pfn_range {
	uint64_t lo;
	uint64_t hi;
};

/*
 * The allocator.  All fields are protected by `lock`; ranges[] and the
 * counts other than `free` are written only by frame_init().
 */
static struct {
	spinlock_t lock;
	uint64_t *bits;		/* caller's storage; bit i = frame base + i */
	uint64_t base;		/* first frame covered */
	uint64_t nr;		/* frames covered */
	uint64_t hint;		/* next-fit start index */
	uint64_t total, reserved, free;
	uint32_t nr_ranges;	/* sorted, disjoint, non-adjacent */
	struct pfn_range ranges[FRAME_MAX_RANGES];
} pool = { .lock = SPINLOCK_INIT };

/* ---- range arithmetic (saturating at MAX_PFN) ---- */

static uint64_t end_of(const struct frame_region *r)
{
	uint64_t end = r->len > UINT64_MAX - r->base ? UINT64_MAX : r->base + r->len;

	return end > FRAME_MAX_PHYS ? FRAME_MAX_PHYS : end;
}

/* Usable region, page-aligned inward.  False if it holds no whole frame. */
static bool usable_pfns(const struct frame_region *r, struct pfn_range *p)
{
	uint64_t end = end_of(r);

	if (r->base >= FRAME_MAX_PHYS)
		return false;
	p->lo = (r->base + FRAME_SIZE - 1) >> FRAME_SHIFT;
	p->hi = end >> FRAME_SHIFT;
	return p->lo < p->hi;
}

/* Reserved range, page-aligned outward.  False if empty or above the max. */
static bool reserved_pfns(const struct frame_region *r, struct pfn_range *p)
{
	uint64_t end = end_of(r);

	if (r->len == 0 || r->base >= FRAME_MAX_PHYS)
		return false;
	p->lo = r->base >> FRAME_SHIFT;
	p->hi = (end + FRAME_SIZE - 1) >> FRAME_SHIFT;
	return true;
}

static bool overlaps(const struct pfn_range *a, const struct pfn_range *b)
{
	return a->lo < b->hi && b->lo < a->hi;
}

/* ---- bitmap primitives; indexes are relative to pool.base ---- */

/* First index in [from, to) whose bit equals `set`, or `to`. */
static uint64_t next_bit(uint64_t from, uint64_t to, bool set)
{
	uint64_t w, i;

	while (from < to) {
		w = pool.bits[from / 64];
		if (!set)
			w = ~w;
		w &= ~0ull << (from % 64);
		if (w) {
			i = (from & ~63ull) + (uint64_t)__builtin_ctzll(w);
			return i < to ? i : to;
		}
		from = (from | 63) + 1;
	}
	return to;
}

/* Set or clear bits [from, to), a word at a time where possible. */
static void fill_bits(uint64_t from, uint64_t to, bool set)
{
	uint64_t mask;

	while (from < to) {
		if (from % 64 == 0 && to - from >= 64) {
			pool.bits[from / 64] = set ? ~0ull : 0;
			from += 64;
			continue;
		}
		mask = 1ull << (from % 64);
		if (set)
			pool.bits[from / 64] |= mask;
		else
			pool.bits[from / 64] &= ~mask;
		from++;
	}
}

/* ---- sizing and placement ---- */

/* Lowest and highest usable frame over the list; false if none. */
static bool usable_span(const struct frame_region *usable, size_t n,
			struct pfn_range *span)
{
	struct pfn_range p;
	bool any = false;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!usable_pfns(&usable[i], &p))
			continue;
		if (!any || p.lo < span->lo)
			span->lo = p.lo;
		if (!any || p.hi > span->hi)
			span->hi = p.hi;
		any = true;
	}
	return any;
}

size_t frame_bitmap_bytes(const struct frame_region *usable, size_t nr_usable)
{
	struct pfn_range span;

	if (!usable_span(usable, nr_usable, &span))
		return 0;
	return (size_t)((span.hi - span.lo + 63) / 64 * 8);
}

/* Does [c, c + n) frames fit one usable region and miss every reserved one? */
static bool place_fits(const struct frame_region *usable, size_t nr_usable,
		       const struct frame_region *reserved, size_t nr_reserved,
		       const struct pfn_range *want)
{
	struct pfn_range p;
	bool inside = false;
	size_t i;

	for (i = 0; i < nr_usable && !inside; i++)
		inside = usable_pfns(&usable[i], &p) && p.lo <= want->lo && want->hi <= p.hi;
	for (i = 0; i < nr_reserved && inside; i++)
		inside = !(reserved_pfns(&reserved[i], &p) && overlaps(&p, want));
	return inside;
}

/* Candidate start c: keep it if it fits and beats the best so far. */
static void place_try(const struct frame_region *usable, size_t nr_usable,
		      const struct frame_region *reserved, size_t nr_reserved,
		      uint64_t c, uint64_t frames, uint64_t limit_pfn, uint64_t *best)
{
	struct pfn_range want = { c, c + frames };

	if (c == 0 || c >= limit_pfn || frames > limit_pfn - c || c >= *best)
		return;
	if (place_fits(usable, nr_usable, reserved, nr_reserved, &want))
		*best = c;
}

int frame_bitmap_place(const struct frame_region *usable, size_t nr_usable,
		       const struct frame_region *reserved, size_t nr_reserved,
		       size_t bytes, uint64_t limit, uint64_t *pa)
{
	uint64_t frames = (bytes + FRAME_SIZE - 1) >> FRAME_SHIFT;
	uint64_t limit_pfn = (limit && limit < FRAME_MAX_PHYS ? limit : FRAME_MAX_PHYS) >> FRAME_SHIFT;
	uint64_t best = UINT64_MAX;
	struct pfn_range p;
	size_t i;

	/* The lowest fit starts a usable region or follows a reserved one. */
	for (i = 0; i < nr_usable; i++)
		if (usable_pfns(&usable[i], &p))
			place_try(usable, nr_usable, reserved, nr_reserved,
				  p.lo ? p.lo : 1, frames, limit_pfn, &best);
	for (i = 0; i < nr_reserved; i++)
		if (reserved_pfns(&reserved[i], &p))
			place_try(usable, nr_usable, reserved, nr_reserved,
				  p.hi, frames, limit_pfn, &best);
	if (best == UINT64_MAX)
		return -ENOMEM;
	*pa = best << FRAME_SHIFT;
	return 0;
}

/* ---- building the free-range list ---- */

static void sort_ranges(void)
{
	struct pfn_range t;
	uint32_t i, j;

	for (i = 1; i < pool.nr_ranges; i++) {
		t = pool.ranges[i];
		for (j = i; j > 0 && pool.ranges[j - 1].lo > t.lo; j--)
			pool.ranges[j] = pool.ranges[j - 1];
		pool.ranges[j] = t;
	}
}

/* Merge overlapping or adjacent ranges of the sorted list. */
static void merge_ranges(void)
{
	uint32_t i, out = 0;

	for (i = 0; i < pool.nr_ranges; i++) {
		if (out && pool.ranges[i].lo <= pool.ranges[out - 1].hi) {
			if (pool.ranges[i].hi > pool.ranges[out - 1].hi)
				pool.ranges[out - 1].hi = pool.ranges[i].hi;
			continue;
		}
		pool.ranges[out++] = pool.ranges[i];
	}
	pool.nr_ranges = out;
}

static int add_usable(const struct frame_region *usable, size_t n)
{
	struct pfn_range p;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!usable_pfns(&usable[i], &p))
			continue;
		if (pool.nr_ranges == FRAME_MAX_RANGES)
			return -E2BIG;
		pool.ranges[pool.nr_ranges++] = p;
	}
	sort_ranges();
	merge_ranges();
	return 0;
}

static void remove_range(uint32_t i)
{
	memmove(&pool.ranges[i], &pool.ranges[i + 1],
		(pool.nr_ranges - i - 1) * sizeof(pool.ranges[0]));
	pool.nr_ranges--;
}

/* Remove frames [cut->lo, cut->hi) from the free-range list. */
static int cut_range(const struct pfn_range *cut)
{
	struct pfn_range *r;
	uint32_t i;

	for (i = 0; i < pool.nr_ranges; i++) {
		r = &pool.ranges[i];
		if (!overlaps(r, cut))
			continue;
		if (r->lo < cut->lo && r->hi > cut->hi) {
			if (pool.nr_ranges == FRAME_MAX_RANGES)
				return -E2BIG;
			memmove(r + 1, r, (pool.nr_ranges - i) * sizeof(*r));
			pool.nr_ranges++;
			r[0].hi = cut->lo;
			r[1].lo = cut->hi;
			return 0;
		}
		if (r->lo < cut->lo) {
			r->hi = cut->lo;
		} else if (r->hi > cut->hi) {
			r->lo = cut->hi;
		} else {
			remove_range(i--);
		}
	}
	return 0;
}

static uint64_t count_ranges(void)
{
	uint64_t sum = 0;
	uint32_t i;

	for (i = 0; i < pool.nr_ranges; i++)
		sum += pool.ranges[i].hi - pool.ranges[i].lo;
	return sum;
}

static int cut_reserved(const struct frame_region *reserved, size_t n,
			const struct frame_region *bitmap_region)
{
	struct pfn_range p = { 0, 1 };	/* frame 0: 0 means "no frame" */
	size_t i;
	int ret = cut_range(&p);

	if (!ret && reserved_pfns(bitmap_region, &p))
		ret = cut_range(&p);
	for (i = 0; i < n && !ret; i++)
		if (reserved_pfns(&reserved[i], &p))
			ret = cut_range(&p);
	return ret;
}

static int build_ranges(const struct frame_region *usable, size_t nr_usable,
			const struct frame_region *reserved, size_t nr_reserved,
			const struct frame_region *bitmap_region)
{
	int ret;

	pool.nr_ranges = 0;
	ret = add_usable(usable, nr_usable);
	if (ret)
		return ret;
	pool.total = count_ranges();
	ret = cut_reserved(reserved, nr_reserved, bitmap_region);
	if (ret)
		return ret;
	pool.free = count_ranges();
	pool.reserved = pool.total - pool.free;
	return 0;
}

static void fill_bitmap(size_t words)
{
	uint32_t i;

	memset(pool.bits, 0xff, words * sizeof(uint64_t));
	for (i = 0; i < pool.nr_ranges; i++)
		fill_bits(pool.ranges[i].lo - pool.base, pool.ranges[i].hi - pool.base, false);
}

static int init_locked(const struct frame_region *usable, size_t nr_usable,
		       const struct frame_region *reserved, size_t nr_reserved,
		       uint64_t *bitmap, uint64_t bitmap_pa, size_t bitmap_bytes)
{
	struct frame_region bm = { bitmap_pa, bitmap_bytes };
	size_t need = frame_bitmap_bytes(usable, nr_usable);
	struct pfn_range span = { 0, 0 };
	int ret;

	pool.nr = 0;
	pool.nr_ranges = 0;
	pool.total = pool.reserved = pool.free = 0;
	if (!bitmap || (uintptr_t)bitmap % sizeof(uint64_t))
		return -EINVAL;
	if (bitmap_bytes < need)
		return -ENOSPC;
	usable_span(usable, nr_usable, &span);
	ret = build_ranges(usable, nr_usable, reserved, nr_reserved, &bm);
	if (ret) {
		pool.nr_ranges = 0;
		pool.total = pool.reserved = pool.free = 0;
		return ret;
	}
	pool.bits = bitmap;
	pool.base = span.lo;
	pool.nr = span.hi - span.lo;
	pool.hint = 0;
	fill_bitmap(need / sizeof(uint64_t));
	return 0;
}

int frame_init(const struct frame_region *usable, size_t nr_usable,
	       const struct frame_region *reserved, size_t nr_reserved,
	       uint64_t *bitmap, uint64_t bitmap_pa, size_t bitmap_bytes)
{
	int ret;

	spin_lock(&pool.lock);
	ret = init_locked(usable, nr_usable, reserved, nr_reserved,
			  bitmap, bitmap_pa, bitmap_bytes);
	spin_unlock(&pool.lock);
	if (ret)
		pr_err("frame: init failed (%d)\n", ret);
	return ret;
}

/* ---- allocation ---- */

uint64_t frame_alloc(void)
{
	uint64_t i, pa = 0;

	spin_lock(&pool.lock);
	i = next_bit(pool.hint, pool.nr, false);
	if (i == pool.nr) {
		i = next_bit(0, pool.hint, false);	/* wrap around */
		if (i == pool.hint)
			i = pool.nr;
	}
	if (i < pool.nr) {
		fill_bits(i, i + 1, true);
		pool.free--;
		pool.hint = i + 1 < pool.nr ? i + 1 : 0;
		pa = (pool.base + i) << FRAME_SHIFT;
	}
	spin_unlock(&pool.lock);
	return pa;
}

/* First index >= from whose frame number is a multiple of align. */
static uint64_t align_index(uint64_t from, uint64_t align)
{
	uint64_t pfn = pool.base + from;

	return ((pfn + align - 1) & ~(align - 1)) - pool.base;
}

static uint64_t find_contig(uint64_t n, uint64_t align)
{
	uint64_t start = 0, a, used;

	for (;;) {
		start = next_bit(start, pool.nr, false);
		if (start == pool.nr)
			return UINT64_MAX;
		a = align_index(start, align);
		if (a >= pool.nr || n > pool.nr - a)
			return UINT64_MAX;
		used = next_bit(a, a + n, true);
		if (used == a + n)
			return a;
		start = used + 1;
	}
}

uint64_t frame_alloc_contig(size_t n, size_t align_frames)
{
	uint64_t i, pa = 0;

	if (n == 0 || align_frames == 0 || align_frames > MAX_PFN ||
	    (align_frames & (align_frames - 1)))
		return 0;
	spin_lock(&pool.lock);
	i = find_contig(n, align_frames);
	if (i != UINT64_MAX) {
		fill_bits(i, i + n, true);
		pool.free -= n;
		pa = (pool.base + i) << FRAME_SHIFT;
	}
	spin_unlock(&pool.lock);
	return pa;
}

/* ---- freeing ---- */

/* Is [lo, hi) inside one free range (binary search over ranges[])? */
static bool managed(uint64_t lo, uint64_t hi)
{
	uint32_t a = 0, b = pool.nr_ranges, m;

	while (a < b) {
		m = a + (b - a) / 2;
		if (pool.ranges[m].hi <= lo)
			a = m + 1;
		else
			b = m;
	}
	return a < pool.nr_ranges && pool.ranges[a].lo <= lo && hi <= pool.ranges[a].hi;
}

static int check_free(uint64_t pa, uint64_t n)
{
	uint64_t pfn = pa >> FRAME_SHIFT;

	if (n == 0 || pa % FRAME_SIZE || pfn >= MAX_PFN || n > MAX_PFN - pfn ||
	    !managed(pfn, pfn + n))
		return -EINVAL;
	if (next_bit(pfn - pool.base, pfn - pool.base + n, false) != pfn - pool.base + n)
		return -EALREADY;
	return 0;
}

int frame_free_contig(uint64_t pa, size_t n)
{
	int ret;

	spin_lock(&pool.lock);
	ret = check_free(pa, n);
	if (ret == 0) {
		fill_bits((pa >> FRAME_SHIFT) - pool.base,
			  (pa >> FRAME_SHIFT) - pool.base + n, false);
		pool.free += n;
	}
	spin_unlock(&pool.lock);
	if (ret == -EALREADY)
		pr_warn("frame: double free in 0x%llx + %zu frames\n", (unsigned long long)pa, n);
	else if (ret)
		pr_warn("frame: free of 0x%llx + %zu frames: not allocatable RAM\n",
			(unsigned long long)pa, n);
	return ret;
}

int frame_free(uint64_t pa)
{
	return frame_free_contig(pa, 1);
}

void frame_get_stats(struct frame_stats *st)
{
	spin_lock(&pool.lock);
	st->total = pool.total;
	st->reserved = pool.reserved;
	st->free = pool.free;
	spin_unlock(&pool.lock);
}
