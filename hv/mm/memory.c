/* SPDX-License-Identifier: BSD-2-Clause */
/* Host memory set-up at boot and the accounting behind `mem`. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include "arch/x86/mm.h"
#include "arch/x86/paging_host.h"
#include "hv/lib/heap.h"
#include "hv/lib/log.h"
#include "hv/mm/frame.h"
#include "hv/mm/memory.h"

#define MAX_RESERVED (MB2_MAX_MODULES + 4 + MB2_MAX_MMAP)

extern char __image_start[], __image_end[];

static uint64_t guest_frames;		/* frames handed to guests now */

static size_t usable_regions(const struct mb2_info *info, struct frame_region *out)
{
	size_t n = 0;

	for (uint32_t i = 0; i < info->nr_mmap; i++)
		if (info->mmap[i].type == MB2_MEM_USABLE && info->mmap[i].len)
			out[n++] = (struct frame_region){ info->mmap[i].base, info->mmap[i].len };
	return n;
}

static size_t reserved_regions(const struct mb2_info *info, uint64_t info_pa,
			       struct frame_region *out)
{
	size_t n = 0;

	out[n++] = (struct frame_region){ 0, 0x100000 };	/* BIOS, trampoline */
	out[n++] = (struct frame_region){ (uint64_t)__image_start,
					  (uint64_t)__image_end - (uint64_t)__image_start };
	out[n++] = (struct frame_region){ info_pa, info->total_size };
	for (uint32_t i = 0; i < info->nr_modules; i++)
		out[n++] = (struct frame_region){ info->modules[i].start,
						  info->modules[i].end - info->modules[i].start };
	/* whatever the map says is not RAM wins where a firmware's entries
	 * overlap (ACPI tables, reserved ranges inside a usable one) */
	for (uint32_t i = 0; i < info->nr_mmap; i++)
		if (info->mmap[i].type != MB2_MEM_USABLE && info->mmap[i].len)
			out[n++] = (struct frame_region){ info->mmap[i].base, info->mmap[i].len };
	return n;
}

/* ferry's heap (guests' frame maps, network and migration buffers):
 * mem_heap_bytes, or the largest half, quarter, ... of it that a
 * contiguous range below the early map holds, down to the minimum. */
static int heap_setup(void)
{
	struct frame_stats st;
	uint64_t bytes, pa = 0;

	frame_get_stats(&st);
	for (bytes = mem_heap_bytes(st.free << FRAME_SHIFT); bytes >= MEM_HEAP_MIN; bytes /= 2) {
		pa = frame_alloc_contig(bytes >> FRAME_SHIFT, 1);
		if (pa && pa + bytes <= EARLY_MAP_LIMIT)
			break;
		if (pa)
			frame_free_contig(pa, bytes >> FRAME_SHIFT);
		pa = 0;
	}
	if (!pa)
		return -ENOMEM;
	heap_init(phys_to_virt(pa), bytes);
	return 0;
}

/* The page pool behind every page table ferry builds: its own, EPT, NPT. */
static int table_alloc(void *ctx, uint64_t *pa)
{
	(void)ctx;
	*pa = frame_alloc();
	return *pa ? 0 : -ENOMEM;
}

static void table_free(void *ctx, uint64_t pa)
{
	(void)ctx;
	mem_free_frame(pa);
}

static void *table_virt(void *ctx, uint64_t pa)
{
	(void)ctx;
	return phys_to_virt(pa);
}

const struct pt_ops mem_pt_ops = { .alloc = table_alloc, .free = table_free, .virt = table_virt };

/* ferry's final page tables: the direct map covers RAM and ACPI memory. */
static int host_tables(const struct mb2_info *info)
{
	struct mem_region ram[MB2_MAX_MMAP];
	unsigned int n = 0;

	for (uint32_t i = 0; i < info->nr_mmap; i++) {
		uint32_t t = info->mmap[i].type;
		if (t == MB2_MEM_USABLE || t == MB2_MEM_ACPI_RECLAIM || t == MB2_MEM_NVS)
			ram[n++] = (struct mem_region){ info->mmap[i].base, info->mmap[i].len };
	}
	return host_paging_init(ram, n, &mem_pt_ops);
}

int mem_init(const struct mb2_info *info, uint64_t info_pa)
{
	struct frame_region usable[MB2_MAX_MMAP], reserved[MAX_RESERVED];
	size_t nu, nr, bytes;
	uint64_t bitmap_pa;
	int err;

	if (!info->has_mmap)
		return -EINVAL;
	nu = usable_regions(info, usable);
	nr = reserved_regions(info, info_pa, reserved);
	bytes = frame_bitmap_bytes(usable, nu);
	err = frame_bitmap_place(usable, nu, reserved, nr, bytes, EARLY_MAP_LIMIT, &bitmap_pa);
	if (err)
		return err;
	memset(phys_to_virt(bitmap_pa), 0, bytes);
	err = frame_init(usable, nu, reserved, nr, phys_to_virt(bitmap_pa), bitmap_pa, bytes);
	if (err)
		return err;
	err = heap_setup();
	if (err)
		return err;
	return host_tables(info);
}

void mem_get_stats(struct mem_stats *s)
{
	struct frame_stats st;

	frame_get_stats(&st);
	s->total = st.total << FRAME_SHIFT;
	s->free = st.free << FRAME_SHIFT;
	s->reserved = st.reserved << FRAME_SHIFT;
	s->guests = __atomic_load_n(&guest_frames, __ATOMIC_RELAXED) << FRAME_SHIFT;
	s->ferry = s->total - s->free - s->reserved - s->guests;
	s->heap_used = heap_used();
	s->heap_size = heap_size();
}

uint64_t mem_alloc_frame(void)
{
	uint64_t pa = frame_alloc();

	if (pa)
		memset(phys_to_virt(pa), 0, FRAME_SIZE);
	return pa;
}

void mem_free_frame(uint64_t pa)
{
	if (frame_free(pa))
		pr_err("mem: bad free of frame %#lx", pa);
}

static uint64_t guest_contig(size_t n, size_t align_frames, bool zero)
{
	uint64_t pa = n == 1 ? frame_alloc() : frame_alloc_contig(n, align_frames);

	if (!pa)
		return 0;
	if (zero)
		memset(phys_to_virt(pa), 0, n << FRAME_SHIFT);
	__atomic_add_fetch(&guest_frames, n, __ATOMIC_RELAXED);
	return pa;
}

uint64_t mem_alloc_guest_frame(void)
{
	return guest_contig(1, 1, true);
}

uint64_t mem_alloc_guest_contig(size_t n, size_t align_frames)
{
	return guest_contig(n, align_frames, true);
}

uint64_t mem_alloc_guest_frame_unzeroed(void)
{
	return guest_contig(1, 1, false);
}

uint64_t mem_alloc_guest_contig_unzeroed(size_t n, size_t align_frames)
{
	return guest_contig(n, align_frames, false);
}

void mem_free_guest_frames(uint64_t pa, size_t n)
{
	if (frame_free_contig(pa, n)) {
		pr_err("mem: bad free of guest frames %#lx+%zu", pa, n);
		return;
	}
	__atomic_sub_fetch(&guest_frames, n, __ATOMIC_RELAXED);
}
