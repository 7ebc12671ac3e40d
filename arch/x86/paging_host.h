/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ferry's own page tables: the image with text read-only and data
 * non-executable, and a non-executable direct map of all RAM.
 */
#ifndef FERRY_ARCH_X86_PAGING_HOST_H
#define FERRY_ARCH_X86_PAGING_HOST_H

#include <stdint.h>

struct mem_region { uint64_t base, len; };

/* Build the tables on the boot CPU; ram lists the usable RAM ranges. */
int host_paging_init(const struct mem_region *ram, unsigned int n);
/* Switch the calling CPU to them (no-op before host_paging_init()). */
void host_paging_load(void);
/* Map device memory (uncached) into the direct map; returns its address. */
void *ioremap(uint64_t pa, uint64_t len);

#endif
