/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where a guest's RAM sits in guest-physical space, as on a PC: below a
 * hole at 3 GiB, and the rest from 4 GiB up.
 *   [0, min(RAM, 3 GiB))          RAM pages 0 .. GUEST_LOW_PAGES - 1
 *   [3 GiB, 4 GiB)                no RAM: PCI BARs (hv/vdev/vpci.c), the
 *                                 I/O APIC at 0xfec00000, the local APIC
 *                                 at 0xfee00000
 *   [4 GiB, 4 GiB + the rest)     RAM pages GUEST_LOW_PAGES ..
 * A RAM page's index in that order is what the dirty log's bits and
 * migration's page numbers count (dense, no hole).  The layout depends on
 * the RAM size alone, so two hosts agree on it.  Shared by the guest map
 * (hv/mm/gpmap.c), the memory maps the loaders write (hv/loader) and the
 * CMOS size bytes (hv/vdev/rtc.c through hv/vm_devices.c).
 */
#ifndef FERRY_HV_LIB_GUEST_LAYOUT_H
#define FERRY_HV_LIB_GUEST_LAYOUT_H

#include <stdint.h>

#define GUEST_HOLE_START	0xc0000000ull	/* RAM stops at 3 GiB ... */
#define GUEST_HOLE_END		0x100000000ull	/* ... and goes on at 4 GiB */
#define GUEST_LOW_PAGES		(GUEST_HOLE_START >> 12)
#define GUEST_HOLE_PAGES	((GUEST_HOLE_END - GUEST_HOLE_START) >> 12)

/* The GPA of RAM page `page` (pages past the hole sit above 4 GiB). */
static inline uint64_t guest_page_gpa(uint64_t page)
{
	return (page < GUEST_LOW_PAGES ? page : page + GUEST_HOLE_PAGES) << 12;
}

/* The RAM page index of gpa, or UINT64_MAX inside the hole (callers
 * compare the index with their page count). */
static inline uint64_t guest_gpa_page(uint64_t gpa)
{
	uint64_t gfn = gpa >> 12;

	if (gfn < GUEST_LOW_PAGES)
		return gfn;
	return gpa >= GUEST_HOLE_END ? gfn - GUEST_HOLE_PAGES : UINT64_MAX;
}

/* Bytes of RAM below the hole and from 4 GiB up, for mem_size bytes. */
static inline void guest_ram_split(uint64_t mem_size, uint64_t *below, uint64_t *above)
{
	*below = mem_size < GUEST_HOLE_START ? mem_size : GUEST_HOLE_START;
	*above = mem_size - *below;
}

#endif
