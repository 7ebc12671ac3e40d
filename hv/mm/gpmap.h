/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A guest's RAM: nr_frames pages at the GPAs of hv/lib/guest_layout.h
 * (below the hole at 3 GiB, the rest from 4 GiB), indexed in that order,
 * backed by host frames that need not be contiguous.  Each naturally aligned 2 MiB of the guest is one
 * 2 MiB-aligned host run when the allocator has one, so that the EPT/NPT
 * maps it with a single 2 MiB page (fewer TLB misses and table pages);
 * otherwise, and for a tail shorter than 2 MiB, it is 4 KiB frames from
 * anywhere.
 *
 * Pure: host frames come from, and are reached through, the caller's
 * gpmap_mem (ferry's guest-frame allocator and direct map in hv/vm.c, a
 * fake in tests/unit/test_gpmap.c); the mapping goes into the caller's
 * table through the engine of arch/x86/paging.h.
 *
 * Locking: none.  A map is built and freed by one thread while no vCPU can
 * run; in between it never changes, so lookups and copies need no lock.
 */
#ifndef FERRY_HV_MM_GPMAP_H
#define FERRY_HV_MM_GPMAP_H

#include <stddef.h>
#include <stdint.h>
#include "arch/x86/paging.h"
#include "hv/lib/guest_layout.h"

#define GPMAP_RUN_FRAMES	512	/* 4 KiB frames in a 2 MiB run */

/* Where frames come from: the signatures of hv/mm/memory.h's guest calls. */
struct gpmap_mem {
	uint64_t (*alloc_contig)(size_t n, size_t align_frames);	/* 0: none */
	uint64_t (*alloc_frame)(void);					/* 0: none */
	void (*free)(uint64_t pa, size_t n);	/* exactly as one alloc returned it */
	void *(*virt)(uint64_t pa);		/* a pointer to the frame's bytes */
};

struct gpmap {
	uint64_t *frames;	/* host frame of each guest page (0: none yet) */
	uint8_t *runs;		/* per 2 MiB of the guest: 1 if one run backs it */
	size_t nr_frames;
	const struct gpmap_mem *mem;
};

/*
 * Take nr_frames frames for guest RAM.  0, or -ENOMEM (also -EINVAL for
 * nr_frames 0) with every frame taken so far returned and m's arrays NULL.
 */
int gpmap_alloc(struct gpmap *m, size_t nr_frames, const struct gpmap_mem *mem);

/* Return every frame and the arrays; also for a map that failed or was
 * never allocated (frames NULL). */
void gpmap_free(struct gpmap *m);

/* Map all of it RWX write-back into pt (empty there) at the GPAs above: a
 * 2 MiB page per run, 4 KiB pages otherwise (3 GiB is 2 MiB aligned, so no
 * run straddles the hole).  0 or pt_map's error; partial mappings are left
 * for pt_destroy. */
int gpmap_map(const struct gpmap *m, struct page_table *pt);

/* The host address of gpa, valid up to the end of its 4 KiB page; NULL
 * outside guest RAM (the hole included). */
void *gpmap_hva(const struct gpmap *m, uint64_t gpa);
/* The host address of RAM page `page` (index order); NULL past the end. */
void *gpmap_page_hva(const struct gpmap *m, uint64_t page);
/* Pages backed by host frames at or above 4 GiB of host physical memory. */
size_t gpmap_host_high_pages(const struct gpmap *m);

/* Copy across any number of frames; -EFAULT (nothing copied) unless
 * [gpa, gpa + len) is inside guest RAM (one side of the hole). */
int gpmap_read(const struct gpmap *m, uint64_t gpa, void *buf, size_t len);
int gpmap_write(const struct gpmap *m, uint64_t gpa, const void *buf, size_t len);

#endif
