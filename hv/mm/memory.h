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
