/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Host memory at boot and its accounting: builds the frame allocator from
 * the multiboot2 memory map, carves out ferry's heap, and keeps the figures
 * the `mem` command shows.
 */
#ifndef FERRY_HV_MM_MEMORY_H
#define FERRY_HV_MM_MEMORY_H

#include <stdint.h>
#include "boot/mb2info.h"
#include "arch/x86/paging.h"

struct mem_stats {		/* bytes */
	uint64_t total;		/* usable RAM */
	uint64_t free;
	uint64_t ferry;		/* image, heap, page tables, ... */
	uint64_t guests;	/* frames owned by guests */
	uint64_t reserved;	/* usable RAM never handed out (low 1 MiB, modules, ...) */
	uint64_t heap_used, heap_size;
};

/*
 * The heap's size for a host with free_bytes of RAM: 1/16 of it, at least
 * 16 MiB, and at most 128 MiB plus 1/256 of the RAM.  Guests' frame maps
 * come from the heap (8 bytes per 4 KiB page: 1/512 of the RAM they map),
 * so the part that grows with the RAM leaves room for guests filling the
 * whole host twice over; a fixed 128 MiB held all guests together to about
 * 60 GiB on any host.  mem_init takes less where no contiguous range below
 * EARLY_MAP_LIMIT is that large.
 */
#define MEM_HEAP_MIN	(16ull << 20)
#define MEM_HEAP_BASE	(128ull << 20)
static inline uint64_t mem_heap_bytes(uint64_t free_bytes)
{
	uint64_t b = free_bytes / 16, max = MEM_HEAP_BASE + free_bytes / 256;

	b = b < MEM_HEAP_MIN ? MEM_HEAP_MIN : b > max ? max : b;
	return b & ~((1ull << 12) - 1);
}

/* Boot CPU, once: frames from info's map, minus what must stay; the heap. */
int mem_init(const struct mb2_info *info, uint64_t info_pa);
void mem_get_stats(struct mem_stats *s);

/* Frames for guests: counted apart so `mem` can show them (zeroed). */
uint64_t mem_alloc_guest_frame(void);
uint64_t mem_alloc_guest_contig(size_t n, size_t align_frames);
/* The same, not zeroed: they hold what their last owner left, so only for
 * RAM whose every page is written before any guest can read it (an
 * incoming migration: hv/migrate/recv.c zeroes what the stream skips). */
uint64_t mem_alloc_guest_frame_unzeroed(void);
uint64_t mem_alloc_guest_contig_unzeroed(size_t n, size_t align_frames);
void mem_free_guest_frames(uint64_t pa, size_t n);

/* A zeroed frame for ferry itself (page tables, VMCBs, ...); 0 if none. */
uint64_t mem_alloc_frame(void);
void mem_free_frame(uint64_t pa);
/* Frames for page tables (ferry's, EPT, NPT): the engine zeroes them. */
extern const struct pt_ops mem_pt_ops;

#endif
