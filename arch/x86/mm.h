/* SPDX-License-Identifier: BSD-2-Clause */
/* Address translation between ferry's virtual layout and physical memory. */
#ifndef FERRY_ARCH_X86_MM_H
#define FERRY_ARCH_X86_MM_H

#include <stdint.h>
#include "boot/layout.h"

#define PAGE_SIZE	4096ul
#define PAGE_SHIFT	12
#define PAGE_ALIGN_UP(x)	(((x) + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1))
#define PAGE_ALIGN_DOWN(x)	((x) & ~(PAGE_SIZE - 1))

/* Physical memory is reachable through the direct map (all RAM once
 * mm_init() ran; the first 4 GiB from the first instruction). */
static inline void *phys_to_virt(uint64_t pa)
{
	return (void *)(pa + DIRECT_MAP_BASE);
}

static inline uint64_t virt_to_phys(const void *va)
{
	uint64_t v = (uint64_t)va;

	if (v >= KERNEL_BASE)
		return v - KERNEL_BASE;
	return v - DIRECT_MAP_BASE;
}

#endif
