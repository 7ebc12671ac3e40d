/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ferry's own page tables: the image with text read-only and everything
 * else non-executable, a non-executable direct map of RAM, and device or
 * firmware memory mapped into the direct map on demand.
 */
#ifndef FERRY_ARCH_X86_PAGING_HOST_H
#define FERRY_ARCH_X86_PAGING_HOST_H

#include <stdint.h>
#include "arch/x86/paging.h"

struct mem_region { uint64_t base, len; };

/*
 * Build the tables on the boot CPU and switch to them.  ram lists the RAM
 * to direct-map; table pages come from ops (zeroed, below 4 GiB).
 */
int host_paging_init(const struct mem_region *ram, unsigned int n,
		     const struct pt_ops *ops);
/* Switch the calling CPU to them (no-op before host_paging_init()). */
void host_paging_load(void);
/* Map device memory uncached, or firmware tables write-back, into the
 * direct map; returns its address, or NULL when it cannot be mapped. */
void *ioremap(uint64_t pa, uint64_t len);
void *memremap(uint64_t pa, uint64_t len);

#endif
