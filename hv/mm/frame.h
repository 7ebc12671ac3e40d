/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Physical frame allocator: hands out 4 KiB host frames from all usable RAM.
 *
 * One bit per frame (1 = not free: allocated, reserved or a hole) over the
 * span from the lowest to the highest usable frame.  The caller supplies the
 * bitmap storage (sized by frame_bitmap_bytes(), placed by
 * frame_bitmap_place(), mapped by the caller).  The allocator never reads or
 * writes the frames it manages; callers zero pages through their own mapping.
 *
 * Physical address 0 is never handed out (0 means "no frame").  Reserved
 * ranges (ferry's image, boot modules, the boot information, the low 1 MiB,
 * the bitmap itself) are never handed out and cannot be freed.
 *
 * Every call is safe on any CPU (one spinlock); none may be made from an
 * interrupt handler.
 */
#ifndef FERRY_HV_MM_FRAME_H
#define FERRY_HV_MM_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_SHIFT		12
#define FRAME_SIZE		(1ull << FRAME_SHIFT)
#define FRAME_MAX_PHYS		(1ull << 52)	/* RAM above is ignored */
#define FRAME_MAX_RANGES	256		/* disjoint free ranges after init */

/* A physical byte range [base, base + len). */
struct frame_region {
	uint64_t base;
	uint64_t len;
};

/* Counts in frames.  allocated = total - reserved - free. */
struct frame_stats {
	uint64_t total;		/* usable RAM, page-aligned inward */
	uint64_t reserved;	/* usable frames excluded by reserved ranges */
	uint64_t free;		/* frames available right now */
};

/* Bytes of bitmap frame_init() needs for this usable list (multiple of 8). */
size_t frame_bitmap_bytes(const struct frame_region *usable, size_t nr_usable);

/*
 * Choose the lowest page-aligned address (>= FRAME_SIZE) where `bytes` fit
 * inside one usable region, overlap no reserved range, and end at or below
 * `limit` (what the caller can map; 0 = no limit).  Returns 0 and *pa, or
 * -ENOMEM if no place fits.
 */
int frame_bitmap_place(const struct frame_region *usable, size_t nr_usable,
		       const struct frame_region *reserved, size_t nr_reserved,
		       size_t bytes, uint64_t limit, uint64_t *pa);

/*
 * (Re)initialise the allocator.  Usable regions are page-aligned inward,
 * reserved ranges outward; [bitmap_pa, bitmap_pa + bitmap_bytes) is reserved
 * too.  `bitmap` is the caller's mapping of it, 8-byte aligned.  Overlapping
 * or unsorted regions are fine.
 * Returns 0, -EINVAL (NULL or misaligned bitmap), -ENOSPC (bitmap too
 * small) or -E2BIG (more than FRAME_MAX_RANGES free ranges).  After a
 * failed init every allocation returns 0.
 */
int frame_init(const struct frame_region *usable, size_t nr_usable,
	       const struct frame_region *reserved, size_t nr_reserved,
	       uint64_t *bitmap, uint64_t bitmap_pa, size_t bitmap_bytes);

/* One frame; its physical address, or 0 when none is free.  Next fit. */
uint64_t frame_alloc(void);

/*
 * n physically contiguous frames whose first frame number is a multiple of
 * align_frames (a power of two; 512 gives 2 MiB alignment).  Returns the
 * physical address, or 0 on exhaustion or bad arguments.  First fit.
 */
uint64_t frame_alloc_contig(size_t n, size_t align_frames);

/*
 * Return frames.  -EINVAL for a misaligned, out-of-range, reserved or hole
 * address, -EALREADY when a frame is already free; on error nothing changes
 * (frame_free_contig checks all n frames before freeing any).
 */
int frame_free(uint64_t pa);
int frame_free_contig(uint64_t pa, size_t n);

void frame_get_stats(struct frame_stats *st);

#endif
