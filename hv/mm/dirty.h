/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The dirty-page log of one VM, for pre-copy migration: which guest pages
 * (4 KiB) were written since the last collection.  Pages are counted in
 * RAM order (hv/mm/gpmap.h): page g is at GPA g * 4 KiB below the hole at
 * 3 GiB and 1 GiB higher past it, so that "gfn" below means that index,
 * except where a GPA is given (dirty_log_fault, dirty_log_mark).  Vendor neutral and
 * free of struct vm: it works on a guest-physical page table (EPT or NPT,
 * arch/x86/paging.h) and a page count, so the host tests drive it with a
 * table built from malloc'd pages.  Modelled on Xen's paging log-dirty
 * (log_dirty_ops enable / disable / clean) and KVM's write-protect logging.
 *
 * How it works: dirty_log_start() takes W away from every writable page in
 * [0, nr_pages) and splits large pages to 4 KiB ("tracked" pages).  The
 * first write to a tracked page faults; dirty_log_fault() gives W back to
 * that one page and sets its bit.  dirty_log_collect_begin() takes the bits
 * (one atomic exchange per 64 pages) and write-protects exactly those pages
 * again.  Writes from another source (a device model) feed the same bits
 * through dirty_log_mark().  Pages that were read-only or unmapped at start
 * are never touched: faults on them are not the log's.
 *
 * ---- Hardware dirty tracking (Intel PML) ----
 *
 *  A back end whose CPU logs written pages itself registers a struct
 *  dirty_hw at boot (dirty_hw_register); `debug dirtylog` picks it or
 *  write-protection (dirty_hw_select), and each start takes the choice
 *  then in force for its whole session.  With hardware, start splits the
 *  tracked pages to 4 KiB and clears their dirty flags (hw->clean) instead
 *  of taking W away, then sets hw_on: from its next entry on, each vCPU
 *  logs (back end: PML and EPT A/D on) and drains its buffer into
 *  dirty_log_mark at every exit, before its run returns (so before a
 *  vCPU counts as out of guest mode for S3/S7, and before a paused vCPU is
 *  seen paused).  collect_begin clears the dirty flags of the pages it
 *  takes instead of protecting them; S7's flush (INVEPT) makes the next
 *  write to each set its flag, and log it, again.  The invariant becomes:
 *  a tracked page whose dirty flag is set has its bit set, or sits in
 *  the buffer of a vCPU that has not exited since; S7 makes every vCPU
 *  exit, so a write before S6 is in S6's set or in the next round's, and
 *  a write after S6 to a page in the set logs again (or went through a
 *  stale translation and is over by the end of S7, as with W).  stop
 *  clears hw_on (the back ends turn logging off at their next entry) and
 *  leaves W alone (its merge drops the flags of what it merges).  The
 *  protocol below is the same for both.
 *
 * ---- Protocol for the migration sender (steps S1..S9, one thread) ----
 *
 *  S1. dirty_log_init(log, nr_pages) once; dirty_log_destroy() at the end.
 *  S2. dirty_log_start(log, pt, &flush).
 *  S3. If flush: bump vm->gpa_gen (now, after S2 returned), kick every
 *      vCPU in guest mode, and wait until each vCPU that was in guest mode
 *      at the bump has left it once (its back end sees the new gpa_gen and
 *      flushes before the next entry, hv/vmm.h).  Until then such a vCPU
 *      may write through cached writable translations without faulting.
 *  S4. dirty_log_flush_done(log, pt): always, after the flush if there was
 *      one.  It calls pt_flush_done (clears the table's flush flag, frees
 *      tables unlinked meanwhile) and closes the step; start and
 *      collect_begin refuse to run (-EBUSY) until it is called.
 *  S5. Round 0: read and send every page.  Not before S4: a write through a
 *      stale writable TLB entry after the page was read would be lost.
 *  S6. n = dirty_log_collect_begin(log, pt, set, words, &flush): the pages
 *      written since the last collection (n of them, as a bitmap in set),
 *      already write-protected again in pt.
 *  S7. As S3, then S8. dirty_log_flush_done(log, pt).
 *  S9. Read and send the pages in set, only now (same reason as S5).  A
 *      write after S6 to a page in set either completed before S7 ended
 *      (then S9 reads it) or faults after S7 and is in the next round's set.
 *      Repeat S6..S9; the last round runs with the vCPUs paused (S7 still
 *      bumps gpa_gen, so a guest resumed after a failure flushes first).
 *  Then dirty_log_stop(log, pt, &flush), after success or failure: it
 *  gives W back, which needs no flush (a stale read-only TLB entry causes a
 *  spurious fault, handled below), and merges the 2 MiB pages start split,
 *  which does: the tables it unlinks may still be cached.  If flush, flush
 *  as in S3 and call dirty_log_flush_done(), which frees them.  The bits
 *  still in the log are dropped: collect the final set first.
 *
 * ---- Protocol for the vCPU exit handler ----
 *
 *  EXIT_GPA_FAULT with write set on a present page:
 *      r = dirty_log_fault(log, pt, gpa);
 *      r > 0  (DIRTY_LOGGED, DIRTY_SPURIOUS): resume the guest without
 *             advancing RIP; the write is retried and now succeeds.
 *      r == 0 (DIRTY_NOT_OURS): a real fault; handle it as without the log.
 *      r < 0: someone changed pt behind the log's back: stop the VM.
 *  dirty_log_fault never reduces permissions, so it never needs a flush.
 *  NPT note: the CPU's own writes of guest page-table A/D bits count as
 *  writes (arch/x86/svm/npt.h) and arrive here like any other.
 *
 * ---- Why collection is exchange, then protect, then flush ----
 *
 *  A fault gives W back, then sets the bit, under log->lock; the collector
 *  takes a word's bits, then re-protects those pages, under the same lock.
 *  So whenever log->lock is free, a tracked page that is writable in pt
 *  has its bit set (the unit test checks this after every round of a
 *  race): no write can land on a page whose bit is clear except through a
 *  translation cached before the re-protection, and those writes are done
 *  by the end of S7 and read in S9.  Protecting before taking would lose
 *  the writes of a fault that slipped in between (W restored, bit then
 *  taken); reading the pages before S7 ends would lose writes in flight.
 *  The W-then-bit order also keeps a lock-free marker safe.
 *
 * ---- Locking ----
 *
 *  log->lock serialises the log's own changes to pt (the engine wants one
 *  lock per table) and the log's state; it is held for at most 512 pages
 *  of work at a time, so faults interleave with start, stop and collection
 *  while the guest runs.  While logging is on, anyone else changing pt
 *  must hold log->lock too (nothing changes vm->gpt after vm_init today).
 *  Do not call the log with log->lock held.  dirty_log_mark and the bit
 *  updates are lock-free atomics; start, collect_begin, flush_done and stop
 *  come from one thread (the sender), dirty_log_fault from any vCPU.
 *  Readers of pt while vCPUs run (dirty_log_fault's lookup, the census)
 *  hold log->lock as well: stop's merge unlinks page tables, and a walker
 *  holding no lock could descend into one just queued for freeing (its
 *  entry 0 then links the queue).  vCPUs themselves need no lock: the CPU
 *  only sets A/D bits, which split keeps (compare-exchange) and merge
 *  drops, and finds the same frame and rights through either shape.
 */
#ifndef FERRY_HV_MM_DIRTY_H
#define FERRY_HV_MM_DIRTY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "arch/x86/paging.h"
#include "hv/lib/spinlock.h"

/* Most pages a log can cover: 4 TiB of guest RAM, so that a page count
 * fits the int that dirty_log_collect_begin returns. */
#define DIRTY_MAX_PAGES	(1ull << 30)

/* dirty_log_fault results (negative: errno). */
#define DIRTY_NOT_OURS	0	/* not a page the log protected: a real fault */
#define DIRTY_LOGGED	1	/* marked dirty, W restored: retry the write */
#define DIRTY_SPURIOUS	2	/* the page is writable already (stale TLB
				 * entry): retry the write */

/* Counters of one logging session, reset by dirty_log_start.  All (a). */
struct dirty_stats {
	uint64_t faults;	/* write faults that marked a page */
	uint64_t spurious;	/* write faults on pages already writable */
	uint64_t marks;		/* pages marked through dirty_log_mark */
	uint64_t bad_marks;	/* dirty_log_mark with a gfn outside the log */
	uint64_t collected;	/* pages returned by dirty_log_collect_begin */
	uint64_t rounds;	/* collections closed by dirty_log_flush_done */
	uint64_t hw_drains;	/* hardware buffers drained with entries */
	uint64_t hw_full;	/* of them, drained because full (PML exit) */
	uint64_t hw_bad;	/* drains whose buffer state made no sense */
	uint64_t large_split;	/* 2 MiB of RAM start split from a large leaf */
	uint64_t large_merged;	/* of them, 2 MiB leaves again after stop */
};

/*
 * A back end's hardware dirty tracking.  clean: clear the dirty flags of
 * the pages mapped 4 KiB in [gpa, gpa + size) of pt, and note a flush in pt
 * (pt_needs_flush) if any was set; called with log->lock held, while the
 * CPU may set flags concurrently (clear them atomically).  0 or -errno.
 */
struct dirty_hw {
	const char *name;	/* "pml" */
	int (*clean)(struct page_table *pt, uint64_t gpa, uint64_t size);
};

/*
 * One VM's log.  Legend: (c) set by dirty_log_init, then read-only;
 * (L) log->lock; (a) atomic.
 */
struct dirty_log {
	spinlock_t lock;
	size_t nr_pages;	/* (c) pages covered: gfns 0 .. nr_pages-1 */
	size_t nr_words;	/* (c) 64-bit words in each bitmap */
	uint64_t *dirty;	/* (a) written since the last collection: set
				 * under L by faults, lock-free by marks, taken
				 * under L by collection */
	uint64_t *track;	/* (L) pages start write-protected, which the
				 * log owns until stop */
	uint64_t *large;	/* (L) per 2 MiB chunk of RAM (512 gfns, bit
				 * c for gfns 512c..): start split a large
				 * leaf there, stop merges it back */
	bool enabled;		/* (L) between start and stop */
	bool sync_pending;	/* (L) start/collect_begin awaits flush_done */
	bool round_open;	/* (L) a collect_begin awaits flush_done */
	const struct dirty_hw *hw;	/* (L) this session's tracker, NULL:
					 * write-protection */
	bool hw_on;		/* (a) the back ends log into this log */
	struct dirty_stats stats;	/* (a) */
};

/*
 * Bitmaps: bit g of word g / 64 stands for gfn g.  The caller's bitmap for
 * dirty_log_collect_begin has dirty_bitmap_words(nr_pages) words.
 */
size_t dirty_bitmap_words(size_t nr_pages);
bool dirty_bitmap_test(const uint64_t *bm, size_t nbits, size_t bit);
/* The first set bit >= from, or nbits if none (bits >= nbits ignored). */
size_t dirty_bitmap_next(const uint64_t *bm, size_t nbits, size_t from);
size_t dirty_bitmap_count(const uint64_t *bm, size_t nbits);

#define dirty_bitmap_for_each(g, bm, nbits)				\
	for ((g) = dirty_bitmap_next((bm), (nbits), 0); (g) < (nbits);	\
	     (g) = dirty_bitmap_next((bm), (nbits), (g) + 1))

/* Allocate the bitmaps for gfns [0, nr_pages).  0, -EINVAL (0 pages or
 * more than DIRTY_MAX_PAGES), -ENOMEM. */
int dirty_log_init(struct dirty_log *log, size_t nr_pages);

/* Free the bitmaps.  Pre: stopped (or never started). */
void dirty_log_destroy(struct dirty_log *log);

/*
 * Start logging on pt (steps S2..S4): every page in [0, nr_pages) mapped
 * writable loses W and is left 4 KiB (large pages split).  Pages mapped
 * read-only keep their mapping; mappings above nr_pages keep their rights
 * (a large page straddling nr_pages is split).  All bits start clear:
 * round 0 sends all memory anyway.  Resets the counters.  *flush: whether
 * S3 is needed (pt_needs_flush: yes whenever a page was protected or
 * split, and always with a hardware tracker, which each vCPU turns on at
 * its next entry).  Errors: -EINVAL log not initialised; -EBUSY already started or
 * a flush_done is owed; -ENOMEM from a split, after which start undoes
 * its protection (logging is off), but *flush may still ask for S3 + S4.
 */
int dirty_log_start(struct dirty_log *log, struct page_table *pt, bool *flush);

/*
 * A write fault at gpa (any address in the page): see "Protocol for the
 * vCPU exit handler".  Gives W back to the one 4 KiB page and marks it
 * if the log protected it.  -EINVAL if such a page is no longer mapped
 * 4 KiB (pt changed behind the log).  Safe on a log that is initialised
 * (or all zero) but not started, or stopped: spurious faults after stop
 * still come back as DIRTY_SPURIOUS.
 */
int dirty_log_fault(struct dirty_log *log, struct page_table *pt, uint64_t gpa);

/*
 * A fault at a RAM gpa that is not a write to a present page: whether pt
 * maps the page now with the rights the access needs (write: W), so that
 * the fault came from a stale walk (a CPU's cached entry above a table a
 * merge has just unlinked, before the flush) and the guest may retry
 * (DIRTY_SPURIOUS); else DIRTY_NOT_OURS.
 */
int dirty_log_stale(struct dirty_log *log, struct page_table *pt, uint64_t gpa, bool write);

/*
 * Mark the page at GPA gfn * 4 KiB written, from a source other than faults
 * (a PML buffer drain, a device's writes): a guest frame number, not a RAM
 * page index.
 * The page's rights are not touched.  0, or -EINVAL (counted in
 * bad_marks) for a gfn outside the log or in the hole.  Lock-free, any CPU.
 */
int dirty_log_mark(struct dirty_log *log, uint64_t gfn);

/*
 * Step S6: take every bit and write-protect again the tracked pages among
 * them.  out (out_words >= dirty_bitmap_words(nr_pages); only that many
 * words are written) receives the pages taken.  Returns their number, or
 * -EINVAL (not started, out too small), -EBUSY (flush_done owed), or an
 * engine error, after which every bit taken is back in the log.  *flush:
 * whether S7 must flush; call dirty_log_flush_done either way.
 */
int dirty_log_collect_begin(struct dirty_log *log, struct page_table *pt,
			    uint64_t *out, size_t out_words, bool *flush);

/* Steps S4 and S8: every CPU that may use pt has been flushed (or no flush
 * was asked for).  Calls pt_flush_done and closes the round. */
void dirty_log_flush_done(struct dirty_log *log, struct page_table *pt);

/*
 * Give W back to every page start protected and turn the log off; bits
 * not collected are dropped.  Every 2 MiB that start split from a large
 * leaf becomes one 2 MiB leaf again (pt_merge: clean RWX as the guest's
 * map made it, the page table unlinked) if its pages still map one run
 * of frames with one set of rights; *flush is then true, and the tables
 * are freed by the dirty_log_flush_done after that flush.  No-op if not
 * started.  An engine error leaves the log on for the pages it could not
 * restore (their 2 MiB stays split): call stop again.
 */
int dirty_log_stop(struct dirty_log *log, struct page_table *pt, bool *flush);

/*
 * Hardware trackers.  dirty_hw_register: at boot, by the back end whose CPU
 * has one; it is then selected (the default).  dirty_hw_select(true|false):
 * use it, or write-protection, for sessions started from now on; -ENODEV
 * if there is none to select.  dirty_hw_method: "pml" or "write-protect",
 * what the next start uses; dirty_hw_available: the registered one's name
 * or NULL.
 */
void dirty_hw_register(const struct dirty_hw *hw);
int dirty_hw_select(bool use);
const char *dirty_hw_method(void);
const char *dirty_hw_available(void);

/* Debug (`debug dirtylog pml N`): a vCPU uses only the first n entries of
 * its hardware log from its next reset of it on, so that log-full exits
 * happen on purpose; 0: all of it (the default).  Back ends read it with
 * dirty_hw_entries(). */
void dirty_hw_set_entries(unsigned n);
unsigned dirty_hw_entries(void);

/* For the back ends, at every entry: log written pages into log (with
 * dirty_log_hw_drained) until this turns false.  log may be NULL. */
bool dirty_log_hw_on(const struct dirty_log *log);

/*
 * A back end drained one buffer: the GPAs in gpas[0..n) (low 12 bits
 * ignored) were written.  full: the drain was forced by a full buffer;
 * bad: the buffer's state was out of range (counted; the caller drained
 * what it could trust).  Marks them as dirty_log_mark does (a GPA outside
 * RAM is counted in bad_marks).  Lock-free, any CPU.
 */
void dirty_log_hw_drained(struct dirty_log *log, const uint64_t *gpas, size_t n,
			  bool full, bool bad);

/* How guest RAM is mapped in pt: its leaves of each size (each counted
 * once, RAM's pages [0, nr_pages) only) and the table pages pt holds. */
struct dirty_map_census {
	uint64_t pages_4k, pages_2m, pages_1g;
	unsigned long tables;
};

/* Walk pt under log->lock, 2 MiB at a time, so that a stop merging
 * meanwhile is never seen half done.  0, -ENODATA (log not initialised:
 * no RAM), or pt_for_each's error. */
int dirty_log_map_census(struct dirty_log *log, struct page_table *pt,
			 struct dirty_map_census *out);

/* A consistent-enough copy of the counters (each read atomically). */
void dirty_log_get_stats(struct dirty_log *log, struct dirty_stats *out);

/* Pages marked and not collected yet (for the sender's convergence test). */
size_t dirty_log_pending(struct dirty_log *log);

#endif
