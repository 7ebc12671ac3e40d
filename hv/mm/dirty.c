/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The dirty-page log: write-protect guest RAM, record the pages whose first
 * write faults, hand them to the migration sender round by round.  The
 * protocol, the ordering argument and the locking are in dirty.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "hv/mm/dirty.h"
#include "hv/mm/gpmap.h"
#include "hv/lib/log.h"

#define BITS		64
#define PAGE_SHIFT	12
#define CHUNK_WORDS	8	/* 512 pages (2 MiB) of work per lock hold */
#define CHUNK_PAGES	(CHUNK_WORDS * BITS)

/* Bits count RAM pages in gpmap's order (dirty.h); these convert.  The
 * hole's edges are multiples of a chunk (512 pages), so no word, chunk or
 * run of bits crosses it. */
static uint64_t gpa_of(uint64_t page)
{
	return guest_page_gpa(page);
}

static uint64_t page_of(uint64_t gpa)
{
	return guest_gpa_page(gpa);
}

_Static_assert(GUEST_LOW_PAGES % (CHUNK_WORDS * BITS) == 0, "the hole splits a chunk");

static uint64_t bit_of(uint64_t gfn)
{
	return 1ull << (gfn % BITS);
}

static void stat_add(uint64_t *counter, uint64_t n)
{
	__atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

/* ---- Hardware trackers ---- */

/* Set once at boot (before any log starts), then read-only. */
static const struct dirty_hw *hw_avail;
static bool hw_use;		/* atomic: the shell switches it */

void dirty_hw_register(const struct dirty_hw *hw)
{
	hw_avail = hw;
	__atomic_store_n(&hw_use, hw != NULL, __ATOMIC_RELEASE);
}

int dirty_hw_select(bool use)
{
	if (use && !hw_avail)
		return -ENODEV;
	__atomic_store_n(&hw_use, use, __ATOMIC_RELEASE);
	return 0;
}

const char *dirty_hw_method(void)
{
	return __atomic_load_n(&hw_use, __ATOMIC_ACQUIRE) && hw_avail ? hw_avail->name
								      : "write-protect";
}

static unsigned hw_entries;	/* atomic: the shell sets it */

void dirty_hw_set_entries(unsigned n)
{
	__atomic_store_n(&hw_entries, n, __ATOMIC_RELAXED);
}

unsigned dirty_hw_entries(void)
{
	return __atomic_load_n(&hw_entries, __ATOMIC_RELAXED);
}

const char *dirty_hw_available(void)
{
	return hw_avail ? hw_avail->name : NULL;
}

bool dirty_log_hw_on(const struct dirty_log *log)
{
	return log && __atomic_load_n(&log->hw_on, __ATOMIC_ACQUIRE);
}

/* ---- Bitmaps ---- */

size_t dirty_bitmap_words(size_t nr_pages)
{
	return nr_pages / BITS + (nr_pages % BITS != 0);
}

bool dirty_bitmap_test(const uint64_t *bm, size_t nbits, size_t bit)
{
	return bit < nbits && (bm[bit / BITS] & bit_of(bit));
}

size_t dirty_bitmap_next(const uint64_t *bm, size_t nbits, size_t from)
{
	size_t w, words = dirty_bitmap_words(nbits);
	uint64_t bits;

	if (from >= nbits)
		return nbits;
	w = from / BITS;
	bits = bm[w] & (~0ull << (from % BITS));
	while (!bits) {
		if (++w == words)
			return nbits;
		bits = bm[w];
	}
	from = w * BITS + (size_t)__builtin_ctzll(bits);
	return from < nbits ? from : nbits;
}

size_t dirty_bitmap_count(const uint64_t *bm, size_t nbits)
{
	size_t n = 0, words = dirty_bitmap_words(nbits);

	for (size_t w = 0; w < words; w++) {
		uint64_t bits = bm[w];

		if (w == nbits / BITS)		/* the partial last word */
			bits &= bit_of(nbits) - 1;
		n += (size_t)__builtin_popcountll(bits);
	}
	return n;
}

/* ---- Page-table changes (caller holds log->lock) ---- */

/*
 * What to do to a run of tracked pages: pt_protect(set, clear, flags), or
 * with a hardware tracker, split as flags say and clear the dirty flags.
 */
struct page_op {
	struct page_table *pt;
	const struct dirty_hw *hw;
	unsigned set, clear, flags;
};

static int run_apply(const struct page_op *op, uint64_t gpa, uint64_t size)
{
	int err = 0;

	if (!op->hw || op->flags)
		err = pt_protect(op->pt, gpa, size, op->set, op->clear, op->flags);
	if (op->hw && err >= 0)
		err = op->hw->clean(op->pt, gpa, size);
	return err;
}

/* op on each run of set bits of one bitmap word, whose bit 0 is page
 * `base`.  0 or the first error. */
static int word_apply(const struct page_op *op, uint64_t base, uint64_t bits)
{
	while (bits) {
		unsigned s = (unsigned)__builtin_ctzll(bits);
		uint64_t above = ~(bits >> s);	/* 0 only if all 64 are set */
		unsigned n = above ? (unsigned)__builtin_ctzll(above) : BITS;
		int err = run_apply(op, gpa_of(base + s), (uint64_t)n << PAGE_SHIFT);

		if (err < 0)
			return err;
		bits = s + n >= BITS ? 0 : bits & (~0ull << (s + n));
	}
	return 0;
}

/* Take W away from (or, with hardware, clean) the pages of bits. */
static int protect_word(struct dirty_log *log, struct page_table *pt,
			uint64_t base, uint64_t bits, unsigned flags)
{
	struct page_op op = { pt, log->hw, 0, log->hw ? 0 : PT_W, flags };

	return word_apply(&op, base, bits);
}

/* The pages [lo, hi) of one chunk, for the pt_for_each in start_chunk. */
struct chunk_walk {
	struct dirty_log *log;
	uint64_t lo, hi;
};

/* Chunk c's bit in log->large: one bit per chunk, 64 chunks a word. */
static bool large_test(const struct dirty_log *log, uint64_t c)
{
	return log->large[c / BITS] & bit_of(c);
}

/* Writable leaves become tracked (clipped to the chunk); a large one
 * (start splits it) is noted in log->large for stop to merge back. */
static int track_leaf(void *ctx, const struct pt_leaf *leaf)
{
	struct chunk_walk *c = ctx;
	uint64_t first = page_of(leaf->va);	/* inside the chunk's GPAs */
	uint64_t end = first + (leaf->size >> PAGE_SHIFT);
	uint64_t chunk = c->lo / CHUNK_PAGES;

	if (!(leaf->attr & PT_W) || first == UINT64_MAX)
		return 0;			/* read-only, or in the hole */
	if (leaf->size > PT_SIZE_4K && !large_test(c->log, chunk)) {
		c->log->large[chunk / BITS] |= bit_of(chunk);
		stat_add(&c->log->stats.large_split, 1);
	}
	for (uint64_t g = first < c->lo ? c->lo : first; g < end && g < c->hi; g++)
		c->log->track[g / BITS] |= bit_of(g);
	return 0;
}

typedef int (*chunk_fn)(struct dirty_log *log, struct page_table *pt,
			size_t w0, size_t w1);

/* Start: track the writable pages of words [w0, w1), then protect them. */
static int start_chunk(struct dirty_log *log, struct page_table *pt,
		       size_t w0, size_t w1)
{
	uint64_t hi = (uint64_t)w1 * BITS;
	struct chunk_walk c = { log, (uint64_t)w0 * BITS,
				hi < log->nr_pages ? hi : log->nr_pages };
	int err = pt_for_each(pt, gpa_of(c.lo), (c.hi - c.lo) << PAGE_SHIFT, track_leaf, &c);

	for (size_t w = w0; !err && w < w1; w++)
		err = protect_word(log, pt, (uint64_t)w * BITS, log->track[w], PT_SPLIT_4K);
	return err;
}

/*
 * The chunk's 2 MiB, which start split from a large leaf, as one 2 MiB
 * leaf again if its 512 pages still have one set of rights (all of them
 * given back) and contiguous frames: pt_merge checks, makes a clean leaf
 * with those rights (RWX, as the guest's map made it; no dirty flag) and
 * queues the table for the flush that stop reports.  Nothing else changes this
 * table while logging is on (the lock rule in dirty.h), so what start
 * split is what the guest's map made; a chunk changed meanwhile stays
 * split.  A CPU setting A/D in the small entries meanwhile is harmless:
 * the log is off, the flags are no longer read.
 */
static void merge_chunk(struct dirty_log *log, struct page_table *pt, uint64_t chunk)
{
	log->large[chunk / BITS] &= ~bit_of(chunk);
	if (pt_merge(pt, gpa_of(chunk * CHUNK_PAGES), PT_SIZE_2M) == PT_FLUSH)
		stat_add(&log->stats.large_merged, 1);
}

/* Stop: give W back; a word stays tracked until all of it is restored,
 * and the chunk is merged once all of it is.  With hardware, W was never
 * taken and the dirty flags do not matter. */
static int stop_chunk(struct dirty_log *log, struct page_table *pt,
		      size_t w0, size_t w1)
{
	struct page_op op = { pt, NULL, PT_W, 0, 0 };
	uint64_t chunk = w0 / CHUNK_WORDS;
	int first = 0;

	for (size_t w = w0; w < w1; w++) {
		int err = log->hw ? 0 : word_apply(&op, (uint64_t)w * BITS, log->track[w]);

		if (!err)
			log->track[w] = 0;
		else if (!first)
			first = err;
	}
	if (!first && large_test(log, chunk))
		merge_chunk(log, pt, chunk);
	return first;
}

/* fn on every chunk, each under the lock; the first error is returned, and
 * the walk goes on past errors only if keep_going. */
static int each_chunk(struct dirty_log *log, struct page_table *pt,
		      chunk_fn fn, bool keep_going)
{
	int first = 0;

	for (size_t w = 0; w < log->nr_words; w += CHUNK_WORDS) {
		size_t end = log->nr_words - w < CHUNK_WORDS ? log->nr_words
							       : w + CHUNK_WORDS;
		int err;

		spin_lock(&log->lock);
		err = fn(log, pt, w, end);
		spin_unlock(&log->lock);
		if (err && !first)
			first = err;
		if (err && !keep_going)
			break;
	}
	return first;
}

/* ---- Life cycle ---- */

/* Words of log->large: a bit for each chunk. */
static size_t large_words(const struct dirty_log *log)
{
	return dirty_bitmap_words((log->nr_words + CHUNK_WORDS - 1) / CHUNK_WORDS);
}

int dirty_log_init(struct dirty_log *log, size_t nr_pages)
{
	memset(log, 0, sizeof(*log));
	if (!nr_pages || nr_pages > DIRTY_MAX_PAGES)
		return -EINVAL;
	log->nr_words = dirty_bitmap_words(nr_pages);
	log->dirty = calloc(log->nr_words, sizeof(uint64_t));
	log->track = calloc(log->nr_words, sizeof(uint64_t));
	log->large = calloc(large_words(log), sizeof(uint64_t));
	if (!log->dirty || !log->track || !log->large) {
		dirty_log_destroy(log);
		return -ENOMEM;
	}
	log->nr_pages = nr_pages;
	return 0;
}

void dirty_log_destroy(struct dirty_log *log)
{
	free(log->dirty);
	free(log->track);
	free(log->large);
	memset(log, 0, sizeof(*log));
}

/* Under the lock: from off to on, with empty bitmaps and counters. */
static int start_prepare(struct dirty_log *log)
{
	int err = 0;

	spin_lock(&log->lock);
	if (!log->nr_pages)
		err = -EINVAL;
	else if (log->enabled || log->sync_pending)
		err = -EBUSY;
	if (!err) {
		memset(log->dirty, 0, log->nr_words * sizeof(uint64_t));
		memset(log->track, 0, log->nr_words * sizeof(uint64_t));
		memset(log->large, 0, large_words(log) * sizeof(uint64_t));
		memset(&log->stats, 0, sizeof(log->stats));
		log->hw = __atomic_load_n(&hw_use, __ATOMIC_ACQUIRE) ? hw_avail : NULL;
		log->enabled = true;	/* before any page loses W */
	}
	spin_unlock(&log->lock);
	return err;
}

/* Restore every tracked page; off only once all are restored. */
static int stop_all(struct dirty_log *log, struct page_table *pt)
{
	int err;

	__atomic_store_n(&log->hw_on, false, __ATOMIC_RELEASE);
	err = each_chunk(log, pt, stop_chunk, true);

	spin_lock(&log->lock);
	if (!err) {
		log->enabled = false;
		log->sync_pending = false;
		log->round_open = false;
		memset(log->dirty, 0, log->nr_words * sizeof(uint64_t));
	}
	spin_unlock(&log->lock);
	return err;
}

static void report_flush(struct dirty_log *log, struct page_table *pt,
			 bool *flush)
{
	spin_lock(&log->lock);
	*flush = pt_needs_flush(pt);
	spin_unlock(&log->lock);
}

int dirty_log_start(struct dirty_log *log, struct page_table *pt, bool *flush)
{
	int err = start_prepare(log);

	*flush = false;
	if (err)
		return err;
	err = each_chunk(log, pt, start_chunk, false);
	if (err)
		stop_all(log, pt);	/* if this fails too, the log stays on */
	spin_lock(&log->lock);
	log->sync_pending = !err;
	/* Last: a vCPU entering from now on logs, the flags being clean. */
	__atomic_store_n(&log->hw_on, !err && log->hw, __ATOMIC_RELEASE);
	/* and every vCPU must enter again before pages are read (S3), even
	 * with nothing split or cleaned: one in the guest still runs
	 * without PML and A/D until it does */
	if (!err && log->hw)
		pt->flush_pending = true;
	spin_unlock(&log->lock);
	report_flush(log, pt, flush);
	return err;
}

/* What a session did, for the log (and `debug dirtylog NAME` meanwhile). */
static void report_session(struct dirty_log *log)
{
	struct dirty_stats s;

	dirty_log_get_stats(log, &s);
	pr_info("dirty log: %s session over: %lu write faults, %lu pages marked "
		"(%lu hardware drains, %lu full), %lu collected in %lu rounds, "
		"%lu of %lu split 2 MiB pages merged back",
		log->hw ? log->hw->name : "write-protect", s.faults, s.marks, s.hw_drains,
		s.hw_full, s.collected, s.rounds, s.large_merged, s.large_split);
}

int dirty_log_stop(struct dirty_log *log, struct page_table *pt, bool *flush)
{
	bool on;
	int err = 0;

	spin_lock(&log->lock);
	on = log->enabled;
	spin_unlock(&log->lock);
	if (on)
		err = stop_all(log, pt);
	if (on && !err)
		report_session(log);
	report_flush(log, pt, flush);
	return err;
}

void dirty_log_flush_done(struct dirty_log *log, struct page_table *pt)
{
	spin_lock(&log->lock);
	pt_flush_done(pt);
	if (log->round_open)
		stat_add(&log->stats.rounds, 1);
	log->round_open = false;
	log->sync_pending = false;
	spin_unlock(&log->lock);
}

/* ---- Sources of dirt: faults and marks ---- */

/* A write fault on the page at gpa, under the lock. */
static int fault_locked(struct dirty_log *log, struct page_table *pt,
			uint64_t gpa)
{
	uint64_t gfn = page_of(gpa), size;
	unsigned attr;
	int err;

	if (pt_lookup(pt, gpa, NULL, &attr, &size))
		return DIRTY_NOT_OURS;		/* a hole: not a write-protection fault */
	if (attr & PT_W) {
		stat_add(&log->stats.spurious, 1);
		return DIRTY_SPURIOUS;
	}
	if (!(log->track[gfn / BITS] & bit_of(gfn)))
		return DIRTY_NOT_OURS;		/* read-only, but not by the log */
	if (size != PT_SIZE_4K)
		return -EINVAL;			/* remapped behind the log's back */
	err = pt_protect(pt, gpa, PT_SIZE_4K, PT_W, 0, 0);
	if (err < 0)
		return err;
	/* W first, then the bit ("Why collection is ..." in dirty.h). */
	__atomic_fetch_or(&log->dirty[gfn / BITS], bit_of(gfn), __ATOMIC_RELEASE);
	stat_add(&log->stats.faults, 1);
	return DIRTY_LOGGED;
}

int dirty_log_fault(struct dirty_log *log, struct page_table *pt, uint64_t gpa)
{
	int ret;

	if (page_of(gpa) >= log->nr_pages)
		return DIRTY_NOT_OURS;		/* outside RAM (the hole too), or no log */
	spin_lock(&log->lock);
	ret = fault_locked(log, pt, gpa & ~(PT_SIZE_4K - 1));
	spin_unlock(&log->lock);
	return ret;
}

int dirty_log_stale(struct dirty_log *log, struct page_table *pt, uint64_t gpa, bool write)
{
	unsigned attr;
	int ret = DIRTY_NOT_OURS;

	if (page_of(gpa) >= log->nr_pages)
		return DIRTY_NOT_OURS;
	spin_lock(&log->lock);
	if (!pt_lookup(pt, gpa & ~(PT_SIZE_4K - 1), NULL, &attr, NULL) &&
	    (attr & PT_R) && (!write || (attr & PT_W))) {
		stat_add(&log->stats.spurious, 1);
		ret = DIRTY_SPURIOUS;
	}
	spin_unlock(&log->lock);
	return ret;
}

int dirty_log_mark(struct dirty_log *log, uint64_t gfn)
{
	gfn = page_of(gfn << PAGE_SHIFT);
	if (gfn >= log->nr_pages) {
		stat_add(&log->stats.bad_marks, 1);
		return -EINVAL;
	}
	__atomic_fetch_or(&log->dirty[gfn / BITS], bit_of(gfn), __ATOMIC_RELEASE);
	stat_add(&log->stats.marks, 1);
	return 0;
}

void dirty_log_hw_drained(struct dirty_log *log, const uint64_t *gpas, size_t n,
			  bool full, bool bad)
{
	for (size_t i = 0; i < n; i++)
		dirty_log_mark(log, gpas[i] >> PAGE_SHIFT);
	if (n)
		stat_add(&log->stats.hw_drains, 1);
	if (full)
		stat_add(&log->stats.hw_full, 1);
	if (bad)
		stat_add(&log->stats.hw_bad, 1);
}

/* ---- Collection ---- */

/* Take word w's bits and re-protect their tracked pages, under the lock.
 * Returns the number of pages taken (in *out) or an error (none taken). */
static int collect_word(struct dirty_log *log, struct page_table *pt, size_t w,
			uint64_t *out)
{
	uint64_t bits;
	int err;

	*out = 0;
	if (!__atomic_load_n(&log->dirty[w], __ATOMIC_RELAXED))
		return 0;	/* a bit set from now on is the next round's */
	spin_lock(&log->lock);
	bits = __atomic_exchange_n(&log->dirty[w], 0, __ATOMIC_ACQ_REL);
	err = protect_word(log, pt, (uint64_t)w * BITS, bits & log->track[w], 0);
	if (err)
		__atomic_fetch_or(&log->dirty[w], bits, __ATOMIC_RELAXED);
	else
		*out = bits;
	spin_unlock(&log->lock);
	return err ? err : __builtin_popcountll(bits);
}

/* After a failed collection: every bit taken goes back into the log. */
static void give_back(struct dirty_log *log, const uint64_t *out, size_t words)
{
	for (size_t w = 0; w < words; w++)
		__atomic_fetch_or(&log->dirty[w], out[w], __ATOMIC_RELAXED);
}

static int collect_check(struct dirty_log *log, size_t out_words)
{
	int err = 0;

	spin_lock(&log->lock);
	if (!log->enabled || out_words < log->nr_words)
		err = -EINVAL;
	else if (log->sync_pending)
		err = -EBUSY;
	spin_unlock(&log->lock);
	return err;
}

int dirty_log_collect_begin(struct dirty_log *log, struct page_table *pt,
			    uint64_t *out, size_t out_words, bool *flush)
{
	int n = 0, err = collect_check(log, out_words);
	size_t w;

	*flush = false;
	if (err)
		return err;
	for (w = 0; w < log->nr_words && !err; w++) {
		err = collect_word(log, pt, w, &out[w]);
		n += err > 0 ? err : 0;
		err = err < 0 ? err : 0;
	}
	if (err) {
		give_back(log, out, w);
	} else {
		spin_lock(&log->lock);
		log->sync_pending = log->round_open = true;
		spin_unlock(&log->lock);
		stat_add(&log->stats.collected, (uint64_t)n);
	}
	report_flush(log, pt, flush);
	return err ? err : n;
}

/* ---- Counters ---- */

void dirty_log_get_stats(struct dirty_log *log, struct dirty_stats *out)
{
	const struct dirty_stats *s = &log->stats;

	out->faults = __atomic_load_n(&s->faults, __ATOMIC_RELAXED);
	out->spurious = __atomic_load_n(&s->spurious, __ATOMIC_RELAXED);
	out->marks = __atomic_load_n(&s->marks, __ATOMIC_RELAXED);
	out->bad_marks = __atomic_load_n(&s->bad_marks, __ATOMIC_RELAXED);
	out->collected = __atomic_load_n(&s->collected, __ATOMIC_RELAXED);
	out->rounds = __atomic_load_n(&s->rounds, __ATOMIC_RELAXED);
	out->hw_drains = __atomic_load_n(&s->hw_drains, __ATOMIC_RELAXED);
	out->hw_full = __atomic_load_n(&s->hw_full, __ATOMIC_RELAXED);
	out->hw_bad = __atomic_load_n(&s->hw_bad, __ATOMIC_RELAXED);
	out->large_split = __atomic_load_n(&s->large_split, __ATOMIC_RELAXED);
	out->large_merged = __atomic_load_n(&s->large_merged, __ATOMIC_RELAXED);
}

size_t dirty_log_pending(struct dirty_log *log)
{
	size_t n = 0;

	for (size_t w = 0; w < log->nr_words; w++)
		n += (size_t)__builtin_popcountll(__atomic_load_n(&log->dirty[w],
								  __ATOMIC_RELAXED));
	return n;
}

/* ---- The shape of the mapping ---- */

/* One chunk's walk for the census: its first GPA and the totals. */
struct census_walk {
	uint64_t gpa;
	struct dirty_map_census *out;
};

/* Count each leaf in the chunk holding its first page, so only once. */
static int census_leaf(void *ctx, const struct pt_leaf *leaf)
{
	struct census_walk *c = ctx;

	if (leaf->va < c->gpa)
		return 0;
	if (leaf->size == PT_SIZE_4K)
		c->out->pages_4k++;
	else if (leaf->size == PT_SIZE_2M)
		c->out->pages_2m++;
	else
		c->out->pages_1g++;
	return 0;
}

int dirty_log_map_census(struct dirty_log *log, struct page_table *pt,
			 struct dirty_map_census *out)
{
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (!log->nr_pages)
		return -ENODATA;
	for (uint64_t p = 0; p < log->nr_pages && !err; p += CHUNK_PAGES) {
		uint64_t n = log->nr_pages - p < CHUNK_PAGES ? log->nr_pages - p : CHUNK_PAGES;
		struct census_walk c = { gpa_of(p), out };

		spin_lock(&log->lock);
		err = pt_for_each(pt, c.gpa, n << PAGE_SHIFT, census_leaf, &c);
		spin_unlock(&log->lock);
	}
	spin_lock(&log->lock);
	out->tables = pt->tables;
	spin_unlock(&log->lock);
	return err;
}
