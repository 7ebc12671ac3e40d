/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One 4-level page-table engine for every x86 translation ferry builds:
 * the hypervisor's own (host) paging, Intel EPT and AMD NPT.  The engine
 * walks, allocates, splits and frees tables; a format descriptor
 * (struct pt_format, Jailhouse style) says how one entry is encoded.
 *
 *   host format  arch/x86/paging.c   pt_host_format   (SDM Vol 3A 4.5)
 *   NPT          arch/x86/svm/npt.c  npt_format       (APM Vol 2 15.25)
 *   EPT          arch/x86/vmx/ept.c  ept_format       (SDM Vol 3C 29.3)
 *
 * Locking: the caller serialises every call on one table (the VM's lock,
 * or boot-time single-threadedness for host tables).  The hardware may walk
 * the tables at any moment, so the engine changes a live entry only with a
 * single 64-bit store or locked compare-exchange, fills a new table
 * completely before linking it, and never frees a table page that a CPU
 * could still reach through its TLB or paging-structure caches (see
 * "TLB flushes" below).
 *
 * TLB flushes: a modifying call returns PT_FLUSH when it left translations
 * that CPUs may have cached and that no longer match the tables (mappings
 * removed or replaced, permissions reduced, memory type changed, a large
 * page split, a table unlinked).  It returns 0 when stale cached entries
 * can only be *more* restrictive than the tables (new mappings, added
 * R/W/X; adding PT_USER does flush, as with SMEP it takes supervisor
 * execute away): such an entry causes at worst one spurious fault, which
 * refreshes it (SDM Vol 3A 4.10.4.3 "Optional Invalidation"; an EPT
 * violation likewise drops the cached mappings it used, Vol 3C 29.4).
 * The same fact is also kept in the table (pt_needs_flush), which matters
 * when a call fails half way.  The protocol for callers:
 *
 *     if (pt_needs_flush(pt)) {
 *             flush: INVEPT / new ASID or TLB_CONTROL / INVLPG+shootdown;
 *             pt_flush_done(pt);     frees the unlinked table pages
 *     }
 *
 * Table pages unlinked by pt_unmap/pt_map are kept until pt_flush_done (or
 * pt_destroy), because a CPU may still be walking them.
 */
#ifndef FERRY_ARCH_X86_PAGING_H
#define FERRY_ARCH_X86_PAGING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PT_LEVELS	4		/* PML4, PDPT, PD, PT */
#define PT_ENTRIES	512
#define PT_SIZE_4K	(1ull << 12)
#define PT_SIZE_2M	(1ull << 21)
#define PT_SIZE_1G	(1ull << 30)
#define PT_VA_BITS	48		/* 4-level linear / guest-physical width */
#define PT_PA_LIMIT	(1ull << 52)	/* architectural MAXPHYADDR ceiling */

/*
 * Neutral attributes of a mapping: permissions plus memory type.  Each
 * format encodes them its own way; pt_format.check refuses what it cannot.
 */
#define PT_R		(1u << 0)	/* readable (host/NPT: implied by present) */
#define PT_W		(1u << 1)	/* writable */
#define PT_X		(1u << 2)	/* executable (host/NPT: NX clear) */
#define PT_USER		(1u << 3)	/* host: CPL 3 may access; NPT: always set */
#define PT_GLOBAL	(1u << 4)	/* host only: survives CR3 loads */
#define PT_MT_WB	0u		/* memory type write-back (RAM), default */
#define PT_MT_UC	(1u << 5)	/* memory type uncacheable (device/MMIO) */
#define PT_RW		(PT_R | PT_W)
#define PT_RWX		(PT_R | PT_W | PT_X)
#define PT_ATTR_ALL	(PT_RWX | PT_USER | PT_GLOBAL | PT_MT_UC)

/* Operation flags. */
#define PT_MAP_REPLACE	(1u << 0)	/* pt_map: overwrite existing mappings */
#define PT_SPLIT_4K	(1u << 1)	/* pt_protect: leave the range in 4 KiB pages */

/* Positive result of a modifying call: a TLB flush is needed (see above). */
#define PT_FLUSH	1

/* One level of the hierarchy; index 0 is the 4 KiB page table, 3 the PML4. */
struct pt_level {
	const char *name;	/* "PT", "PD", "PDPT", "PML4" */
	unsigned shift;		/* log2 of the bytes one entry maps */
	bool leaf_ok;		/* an entry at this level may map a page */
};

/* The x86 4-level geometry, shared by all three formats. */
extern const struct pt_level pt_x86_levels[PT_LEVELS];

/*
 * How one format encodes entries.  `level` is an index into `levels`.
 * Every callback is pure (entry in, entry out); the engine does the stores.
 * All constant after build time.  The engine relies on two properties of
 * every x86 format: a 4 KiB-aligned address read as an entry is "not
 * present" (it links unlinked tables through their entry 0), and the
 * frame address sits in bits 51:12 as is (a split adds page offsets to
 * the first child entry).
 */
struct pt_format {
	const char *name;
	const struct pt_level *levels;	/* PT_LEVELS descriptors */
	bool canonical;		/* addresses are sign-extended linear ones
				 * (host); else 0 .. 2^48-1 (guest-physical) */
	int (*check)(unsigned attr);	/* 0, or -EINVAL if not encodable */
	bool (*present)(uint64_t e);
	bool (*is_leaf)(uint64_t e, unsigned level);	/* of a present entry */
	uint64_t (*mk_leaf)(uint64_t pa, unsigned attr, unsigned level);
	uint64_t (*mk_table)(uint64_t table_pa);
	uint64_t (*addr)(uint64_t e, unsigned level);	/* frame or table PA */
	unsigned (*attr)(uint64_t e, unsigned level);	/* of a leaf */
	/* The leaf with new attributes; address, A/D and size bits kept. */
	uint64_t (*set_attr)(uint64_t e, unsigned attr, unsigned level);
	/* For a large leaf at `level`: the equivalent leaf one level down
	 * mapping its first part (every other bit, A/D included, kept). */
	uint64_t (*split)(uint64_t e, unsigned level);
};

/*
 * Where table pages come from.  In the hypervisor: the frame allocator and
 * the direct map; in unit tests: malloc'd pages with a fake physical
 * address.  alloc returns any 4 KiB-aligned page (the engine zeroes it).
 */
struct pt_ops {
	int (*alloc)(void *ctx, uint64_t *pa);	/* 0 or -ENOMEM */
	void (*free)(void *ctx, uint64_t pa);
	void *(*virt)(void *ctx, uint64_t pa);	/* usable pointer to a table */
	void *ctx;
};

/*
 * A page table.  All fields are owned by the engine and protected by the
 * caller's lock; read root_pa to load CR3/nCR3/EPTP.
 */
struct page_table {
	const struct pt_format *fmt;	/* set by pt_init */
	uint64_t root_pa;		/* PML4; set by pt_init, never changes */
	struct pt_ops ops;		/* copied by pt_init */
	uint64_t max_page;		/* largest leaf: 4 KiB, 2 MiB or 1 GiB */
	uint64_t deferred;		/* unlinked tables awaiting pt_flush_done
					 * that map nothing any more, chained
					 * through their entry 0 */
	uint64_t kept;			/* tables a merge unlinked, which must map
					 * as before until the flush: listed in
					 * pages of their own (entry 0 links the
					 * next, 1..kept_n - 1 the tables) */
	unsigned kept_n;		/* entries used in the first list page */
	unsigned long ndeferred;	/* pages awaiting the flush: both kinds
					 * and the list pages */
	unsigned long tables;		/* table pages held (root and deferred too) */
	bool flush_pending;		/* see "TLB flushes"; set by every change
					 * that needs one (also ept.c's) */
};

/* One leaf, as pt_for_each reports it (va sign-extended for host tables). */
struct pt_leaf {
	uint64_t va;		/* first address the leaf maps */
	uint64_t pa;		/* frame it maps to */
	uint64_t size;		/* 4 KiB, 2 MiB or 1 GiB */
	unsigned attr;		/* PT_* attributes */
	unsigned level;		/* 0: PT, 1: PD, 2: PDPT */
};

typedef int (*pt_leaf_fn)(void *ctx, const struct pt_leaf *leaf);

/*
 * Common preconditions: va, pa and size 4 KiB aligned, size > 0, the range
 * inside the format's address space (canonical and not crossing the hole
 * for host tables; below 2^48 for guest-physical ones), pa + size <= 2^52.
 * Violations return -EINVAL before anything changes.
 */

/* Allocate the root.  max_page: PT_SIZE_4K, _2M or _1G, what the CPU can
 * map (1 GiB: CPUID 8000_0001h EDX[26] for host/NPT, IA32_VMX_EPT_VPID_CAP
 * bit 17 for EPT; 2 MiB EPT pages: bit 16). */
int pt_init(struct page_table *pt, const struct pt_format *fmt,
	    const struct pt_ops *ops, uint64_t max_page);

/* Free every table page (mapped frames are the caller's).  No CPU may use
 * the table any more. */
void pt_destroy(struct page_table *pt);

/*
 * Map [va, va+size) to [pa, pa+size) with attr, using the largest pages
 * that alignment (of va and pa alike) and max_page allow.  Overlapping a
 * mapping fails with -EEXIST and changes nothing, unless flags has
 * PT_MAP_REPLACE; replacing splits large pages the range covers only in
 * part and keeps existing page tables (their pages are replaced one by
 * one, not merged into a large page).  -ENOMEM: without REPLACE the range
 * is left unmapped (pt_needs_flush says if a leaf existed meanwhile);
 * with REPLACE it may be partly updated.  Returns 0 or PT_FLUSH.
 */
int pt_map(struct page_table *pt, uint64_t va, uint64_t pa, uint64_t size,
	   unsigned attr, unsigned flags);

/* Remove every mapping in the range (holes are fine), splitting large
 * pages that straddle its ends and unlinking tables that become empty.
 * -ENOMEM only when a split needs a table: the range is then partly done. */
int pt_unmap(struct page_table *pt, uint64_t va, uint64_t size);

/*
 * Change the attributes of every mapped page in the range to
 * (old & ~clear) | set, skipping holes; large pages straddling the range
 * ends are split, and with PT_SPLIT_4K every page in the range is left
 * 4 KiB (dirty logging).  -EINVAL (nothing changed) if a result is not
 * encodable; -ENOMEM when a split fails (range partly done).
 */
int pt_protect(struct page_table *pt, uint64_t va, uint64_t size,
	       unsigned set, unsigned clear, unsigned flags);

/*
 * The reverse of a split: every table in the range whose entries map, with
 * one set of attributes, contiguous frames starting at a frame aligned to
 * the size of the entry above it becomes that one large leaf again, where
 * the whole entry lies in the range and max_page allows the size (smaller
 * tables first, so 4 KiB pages can become 2 MiB and those 1 GiB).  The
 * new leaf is made by mk_leaf: A/D clear, no other bits kept; dirty flags
 * set in the old entries are lost.  Tables go to pt_flush_done.  Never
 * allocates; 0 or PT_FLUSH (something merged), -EINVAL for a bad range.
 */
int pt_merge(struct page_table *pt, uint64_t va, uint64_t size);

/* Translate va: 0 and the outputs (each may be NULL), -ENOENT if unmapped,
 * -EINVAL if va is outside the address space. */
int pt_lookup(const struct page_table *pt, uint64_t va, uint64_t *pa,
	      unsigned *attr, uint64_t *page_size);

/* Call fn for each leaf intersecting [va, va+size), in address order.  fn
 * must not change the table; a non-zero return stops the walk and is
 * returned.  -EINVAL for a bad range. */
int pt_for_each(const struct page_table *pt, uint64_t va, uint64_t size,
		pt_leaf_fn fn, void *ctx);

/* True when some change since the last pt_flush_done needs a TLB flush. */
bool pt_needs_flush(const struct page_table *pt);

/* Call after flushing every CPU that may use pt: frees unlinked tables. */
void pt_flush_done(struct page_table *pt);

/* For format modules (EPT A/D): the present leaf entry that maps va, and
 * its level; NULL if unmapped or va is outside the address space. */
uint64_t *pt_find_leaf(const struct page_table *pt, uint64_t va,
		       unsigned *level);

/*
 * x86-64 long-mode entry format (SDM Vol 3A 4.5, Tables 4-15 to 4-20;
 * APM Vol 2 5.3).  Used for ferry's own tables; NPT reuses it.
 */
#define X86_PTE_P	(1ull << 0)
#define X86_PTE_RW	(1ull << 1)
#define X86_PTE_US	(1ull << 2)
#define X86_PTE_PWT	(1ull << 3)
#define X86_PTE_PCD	(1ull << 4)
#define X86_PTE_A	(1ull << 5)
#define X86_PTE_D	(1ull << 6)
#define X86_PTE_PS	(1ull << 7)	/* PDPTE/PDE: maps a 1 GiB/2 MiB page */
#define X86_PTE_PAT4K	(1ull << 7)	/* PTE: PAT index bit 2 */
#define X86_PTE_G	(1ull << 8)
#define X86_PTE_PATLG	(1ull << 12)	/* large leaf: PAT index bit 2 */
#define X86_PTE_NX	(1ull << 63)	/* needs EFER.NXE = 1 */
#define X86_PTE_ADDR	0x000ffffffffff000ull	/* bits 51:12 */

extern const struct pt_format pt_host_format;

/* Host-format callbacks, for formats built on it (NPT). */
int x86_pte_check(unsigned attr);
bool x86_pte_present(uint64_t e);
bool x86_pte_is_leaf(uint64_t e, unsigned level);
uint64_t x86_pte_mk_leaf(uint64_t pa, unsigned attr, unsigned level);
uint64_t x86_pte_mk_table(uint64_t table_pa);
uint64_t x86_pte_addr(uint64_t e, unsigned level);
unsigned x86_pte_attr(uint64_t e, unsigned level);
uint64_t x86_pte_set_attr(uint64_t e, unsigned attr, unsigned level);
uint64_t x86_pte_split(uint64_t e, unsigned level);

#endif
