/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ferry's page tables, built with the shared engine (arch/x86/paging.c):
 *   KERNEL_BASE + phys:     text R+X, rodata R, data/bss R+W (NX)
 *   DIRECT_MAP_BASE + phys: RAM R+W (NX); devices UC and firmware tables
 *                           WB when ioremap()/memremap() ask for them.
 * The boot code's identity map is not carried over: a NULL or low-address
 * access in ferry now faults instead of reading RAM.
 */
#include <errno.h>
#include "arch/x86/cpu.h"
#include "arch/x86/mm.h"
#include "arch/x86/paging_host.h"
#include "hv/lib/spinlock.h"

extern char __text_start[], __text_end[], __rodata_end[], __bss_end[];

static struct page_table host_pt;
static uint64_t host_cr3;
static spinlock_t remap_lock = SPINLOCK_INIT;

static int map_image(void)
{
	uint64_t t0 = (uint64_t)__text_start, t1 = (uint64_t)__text_end;
	uint64_t r1 = (uint64_t)__rodata_end, d1 = PAGE_ALIGN_UP((uint64_t)__bss_end);
	int err;

	err = pt_map(&host_pt, t0, t0 - KERNEL_BASE, t1 - t0, PT_R | PT_X | PT_GLOBAL, 0);
	if (err >= 0)
		err = pt_map(&host_pt, t1, t1 - KERNEL_BASE, r1 - t1, PT_R | PT_GLOBAL, 0);
	if (err >= 0)
		err = pt_map(&host_pt, r1, r1 - KERNEL_BASE, d1 - r1, PT_RW | PT_GLOBAL, 0);
	return err < 0 ? err : 0;
}

static int map_direct(uint64_t pa, uint64_t len, unsigned attr)
{
	uint64_t start = PAGE_ALIGN_DOWN(pa), end = PAGE_ALIGN_UP(pa + len);
	int err = pt_map(&host_pt, DIRECT_MAP_BASE + start, start, end - start,
			 attr | PT_GLOBAL, PT_MAP_REPLACE);

	return err < 0 ? err : 0;
}

int host_paging_init(const struct mem_region *ram, unsigned int n, const struct pt_ops *ops)
{
	int err = pt_init(&host_pt, &pt_host_format, ops, PT_SIZE_2M);

	if (!err)
		err = map_image();
	for (unsigned int i = 0; !err && i < n; i++)
		err = map_direct(ram[i].base, ram[i].len, PT_RW);
	if (!err)
		err = map_direct(0, 0x100000, PT_RW);	/* BIOS data, AP trampoline */
	if (err)
		return err;
	host_cr3 = host_pt.root_pa;
	host_paging_load();
	return 0;
}

void host_paging_load(void)
{
	if (host_cr3)
		write_cr3(host_cr3);
}

/* Changing mappings of the direct map: every CPU must drop stale entries. */
static void *remap(uint64_t pa, uint64_t len, unsigned attr)
{
	int err;

	if (!host_cr3)
		return pa + len <= EARLY_MAP_LIMIT ? phys_to_virt(pa) : NULL;
	if (!len || pa + len < pa || pa + len > (1ull << 46))
		return NULL;
	spin_lock(&remap_lock);
	err = map_direct(pa, len, attr);
	if (pt_needs_flush(&host_pt)) {
		write_cr3(host_cr3);	/* global pages survive: toggle PGE */
		write_cr4(read_cr4() & ~CR4_PGE);
		write_cr4(read_cr4() | CR4_PGE);
		pt_flush_done(&host_pt);
	}
	spin_unlock(&remap_lock);
	return err ? NULL : phys_to_virt(pa);
}

void *ioremap(uint64_t pa, uint64_t len)
{
	return remap(pa, len, PT_RW | PT_MT_UC);
}

void *memremap(uint64_t pa, uint64_t len)
{
	return remap(pa, len, PT_RW);
}
