/* SPDX-License-Identifier: BSD-2-Clause */
/* Placeholder until the page-table engine lands: the early tables stay. */
#include "arch/x86/paging_host.h"
#include "arch/x86/mm.h"

int host_paging_init(const struct mem_region *ram, unsigned int n)
{
	(void)ram; (void)n;
	return 0;
}

void host_paging_load(void)
{
}

void *ioremap(uint64_t pa, uint64_t len)
{
	(void)len;
	return phys_to_virt(pa);
}
